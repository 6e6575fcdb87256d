"""The factor state of a fit: its first allocation, growth by new users and items, and the
index space that raw ids map into.

These functions set the estimator's public fitted attributes (``user_factors_``,
``item_factors_``, ``item_biases_``, the Adagrad state ``*_grad_sq_``, ``user_ids_``,
``item_ids_``, ``seed_``, ``init_scale_``, ``epochs_done_``, ``history_``); every array is
float32 and cache-line aligned (:mod:`warprec._kernels.aligned`). Random rows come from
generators keyed by the model's seed (and, for growth, the epochs done), never a global
one.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._inputs import IdMap, as_interaction_matrix
from ._kernels.aligned import aligned_full
from ._loss_specs import loss_spec
from ._plan import resolve_init_scale
from ._trainer import unit_rows

__all__ = ["initialise", "grow", "extend_index_space", "extend_ids", "draw_seed", "snapshot",
           "restore", "fitted_attributes"]


def initialise(model, matrix, user_ids, item_ids, config):
    """A fresh fit's state: ``seed_`` and ``init_scale_``, random factor rows of
    ``init_scale_`` expected norm (unit rows for the cosine losses), zero biases, fresh
    Adagrad state, the id maps, no epochs done."""
    n_users, n_items = matrix.shape
    d = config.d
    rng = np.random.default_rng(model.random_state)
    model.seed_ = draw_seed(rng)
    model.init_scale_ = resolve_init_scale(model.init_scale, config.loss, matrix)
    scale = model.init_scale_ / np.sqrt(d)
    # cache-line-aligned parameters (see warprec._kernels.aligned)
    f32 = np.float32
    model.user_factors_ = aligned_full((n_users, d), rng.standard_normal((n_users, d)) * scale,
                                      f32)
    model.item_factors_ = aligned_full((n_items, d), rng.standard_normal((n_items, d)) * scale,
                                      f32)
    if config.loss.sphere:   # every row is kept at unit norm
        unit_rows(model.user_factors_)
        unit_rows(model.item_factors_)
    model.item_biases_ = aligned_full(n_items, 0.0, f32)
    model.user_grad_sq_ = aligned_full((n_users, d), 1.0, f32)
    model.item_grad_sq_ = aligned_full((n_items, d), 1.0, f32)
    model.bias_grad_sq_ = aligned_full(n_items, 1.0, f32)
    model.user_ids_ = user_ids
    model.item_ids_ = item_ids
    model.epochs_done_ = 0
    model.learning_rate_drops_ = []
    model.history_ = []


def grow(model, shape, user_ids, item_ids):
    """Add parameter rows for new users and items (initialised as in ``fit``, from a
    generator keyed by the seed and the epochs done)."""
    n_users, n_items = model.user_factors_.shape[0], model.item_factors_.shape[0]
    if shape == (n_users, n_items):
        return
    rng = np.random.default_rng([model.seed_, 4, model.epochs_done_])
    d = model.user_factors_.shape[1]
    scale = model.init_scale_ / np.sqrt(d)
    new_users, new_items = shape[0] - n_users, shape[1] - n_items
    f32 = np.float32
    for name, fresh in (
            ("user_factors_", rng.standard_normal((new_users, d)) * scale),
            ("item_factors_", rng.standard_normal((new_items, d)) * scale),
            ("item_biases_", np.zeros(new_items)),
            ("user_grad_sq_", np.ones((new_users, d))),
            ("item_grad_sq_", np.ones((new_items, d))),
            ("bias_grad_sq_", np.ones(new_items))):
        old = getattr(model, name)
        setattr(model, name, aligned_full((old.shape[0] + len(fresh),) + old.shape[1:],
                                         np.concatenate([old, fresh.astype(f32)]), f32))
    if loss_spec(model.loss).sphere:   # new rows on the sphere too
        unit_rows(model.user_factors_[n_users:])
        unit_rows(model.item_factors_[n_items:])
    model.user_ids_, model.item_ids_ = user_ids, item_ids


def extend_index_space(model, matrix, user_ids, item_ids):
    """``partial_fit``'s input in the model's index space, new users and items
    appended after the known ones."""
    n_users, n_items = model.user_factors_.shape[0], model.item_factors_.shape[0]
    if (user_ids is None) != (model.user_ids_ is None):
        known = "raw ids (a DataFrame)" if model.user_ids_ is not None else "a matrix"
        raise ValueError(f"partial_fit needs X in the form of the first fit, which was "
                         f"{known}; use fit() to start over.")
    if user_ids is None:
        if matrix.shape[0] < n_users or matrix.shape[1] < n_items:
            raise ValueError(
                f"partial_fit got X of shape {matrix.shape} but the model knows {n_users} "
                f"users x {n_items} items: X's rows and columns keep their meaning, so it "
                f"must cover them (more rows or columns add new users or items); use "
                f"fit() to start over.")
        return matrix, None, None
    users, user_map = extend_ids(model.user_ids_, user_ids, "user")
    items, item_map = extend_ids(model.item_ids_, item_ids, "item")
    coo = matrix.tocoo()
    matrix = as_interaction_matrix(sp.csr_matrix(
        (coo.data, (user_map[coo.row], item_map[coo.col])), shape=(len(users), len(items))))
    return matrix, users, items


def extend_ids(known, ids, kind):
    """The model's raw ``known`` ids followed by those of ``ids`` it does not know (in
    their order), and the index of every element of ``ids`` in that extended array."""
    if (known.dtype == object) != (ids.dtype == object):
        have = "strings" if known.dtype == object else "numbers"
        got = "strings" if ids.dtype == object else "numbers"
        raise TypeError(f"X's {kind} ids are {got} but the model's are {have}; pass the ids "
                        f"the model was fit with (warprec.data.Interactions maps them).")
    index = IdMap(known).indexer(ids)
    new = index < 0
    index[new] = len(known) + np.arange(int(new.sum()))
    return np.concatenate([known, ids[new]]), index


def draw_seed(rng):
    """A model's ``seed_`` (the key of its counter-based streams and of its validation
    split): the first draw of the Generator made from its ``random_state``."""
    return int(rng.integers(0, 2**63 - 1))


def fitted_attributes(model) -> dict:
    """The model's fitted attributes (names ending in ``_``), by name."""
    return {name: value for name, value in vars(model).items()
            if name.endswith("_") and not name.startswith("__")}


def snapshot(model) -> dict:
    """What :func:`restore` needs to bring the fitted state back exactly: the fitted
    attributes, with copies of the lists a fit appends to. The arrays are kept by
    reference: before its first epoch a fit replaces arrays, it never writes into them."""
    return {name: list(value) if isinstance(value, list) else value
            for name, value in fitted_attributes(model).items()}


def restore(model, saved: dict) -> None:
    """Make ``model``'s fitted attributes exactly those of ``saved`` (a :func:`snapshot`):
    attributes added since are removed."""
    for name in fitted_attributes(model):
        delattr(model, name)
    for name, value in saved.items():
        setattr(model, name, value)
