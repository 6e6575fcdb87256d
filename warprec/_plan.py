"""A fit's plan: the estimator's parameters checked once, as a frozen configuration, and the
rules that resolve their ``"auto"`` values from the data's shape.

:func:`check_params` runs the declarative checks (``_parameter_constraints``), then the
loss's own rules (:mod:`warprec._loss_specs`) and the cross-parameter rules, and returns a
:class:`TrainingConfig`. The trainer reads only that; later steps of a fit make new
configurations with :func:`dataclasses.replace`, never change one. The tuner checks a
configuration with the same function.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from numbers import Integral, Real
import warnings
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from . import _validation
from ._base import fit_input
from ._defaults import (AUTO_EPOCHS, AUTO_EPOCHS_EARLY_STOPPING, INIT_SCALE,
                        LONG_TAIL_INIT_SCALE, LONG_TAIL_MAX_PER_ITEM, LONG_TAIL_MAX_PER_USER)
from ._inputs import POSITIVE_INT, RANDOM_STATE, Interval, Options, validate_params
from ._loss_specs import LOSSES, LossSpec, loss_spec
from ._threads import resolve_threads
from .exceptions import WarprecWarning

__all__ = ["PARAMETER_CONSTRAINTS", "TrainingConfig", "check_params", "resolve_epochs",
           "long_tail", "resolve_init_scale", "training_input", "resolve_learning_rate",
           "resolve_alpha", "resolve_negative_weight", "resolve_dropout",
           "resolve_learning_rate_drop", "resolve_sample_order"]

EarlyStopping = bool | Literal["refit", "auto"]
SCHEDULES = ("adagrad", "sgd")
SAMPLING = ("uniform", "popularity")
ESTIMATORS = ("sampled", "exact")
ORDERS = ("auto", "positives", "users")
#: ``feature_normalization``'s values (the rules: ``warprec._hybrid.weigh``).
NORMALIZATIONS = ("none", "side", "row")

#: Each ``WARPFactorizer`` parameter's allowed values, checked before every fit (any one
#: constraint of a list may accept the value; see :func:`warprec._inputs.validate_param`).
#: ``k``, ``n``, ``top_fraction``, ``rank_weighting``, ``validation_metric`` and ``verbose``
#: depend on other parameters or have their own parsers, and are checked in code.
PARAMETER_CONSTRAINTS: dict[str, list[Any]] = {
    "n_components": [POSITIVE_INT],
    "epochs": [Interval(Integral, 0, None, closed="left"), Options(["auto"])],
    "learning_rate": [Interval(Real, 0, None, closed="neither"), Options(["auto"])],
    "max_sampled": [POSITIVE_INT],
    "max_violators": [POSITIVE_INT],
    "n_negatives": [POSITIVE_INT],
    "negative_sharing": [POSITIVE_INT],
    "margin": [Interval(Real, -1, 1, closed="both")],
    "negative_weight": [Interval(Real, 0, None, closed="neither"), Options(["auto"])],
    "dropout": [Interval(Real, 0, 1, closed="left"), Options(["auto"])],
    "temperature": [Interval(Real, 0, None, closed="neither")],
    "alpha": [Interval(Real, 0, None, closed="left"), Options(["auto"])],
    "init_scale": [Interval(Real, 0, None, closed="left"), Options(["auto"])],
    "loss": [Options(list(LOSSES))],
    "max_norm": [None, Interval(Real, 0, None, closed="neither")],
    "random_state": RANDOM_STATE,
    "learning_schedule": [Options(SCHEDULES)],
    "negative_sampling": [Options(SAMPLING)],
    "rank_estimator": [Options(ESTIMATORS)],
    "sample_order": [Options(ORDERS)],
    "early_stopping": ["boolean", Options(["refit", "auto"])],
    "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
    "n_iter_no_change": [POSITIVE_INT],
    "learning_rate_drop": [Interval(Real, 0, 1, closed="right"), Options(["auto"])],
    "validation_interval": [POSITIVE_INT, Options(["auto"])],
    "n_threads": [None, POSITIVE_INT],
    "identity_features": ["boolean"],
    "feature_weight": [Interval(Real, 0, None, closed="neither",
                                text="a finite number > 0")],
    "feature_normalization": [Options(NORMALIZATIONS)],
    "feature_negatives": [Interval(Real, 0, 1, closed="both")],
}


@dataclass(frozen=True)
class TrainingConfig:
    """The checked settings of one fit (or fold-in), as the trainer reads them.

    ``epochs``, ``early_stopping`` and ``validation_interval`` may still be ``"auto"``
    (they depend on the data; the trainer resolves them into a new configuration).
    """

    loss: LossSpec
    d: int
    epochs: int | Literal["auto"]
    early_stopping: EarlyStopping
    validation_interval: int | Literal["auto"]
    n_iter_no_change: int
    max_sampled: int
    max_violators: int
    n_negatives: int
    exact_rank: bool
    kos_k: int
    kos_n: int
    adagrad: bool
    n_threads: int
    max_norm: float     # 0: no norm bound
    margin: float
    temperature: float
    #: ``early_stopping="refit"``'s second pass: the learning-rate drops of the validated
    #: pass to replay, as ``(epoch, rate)`` pairs
    drop_epochs: tuple[tuple[int, float], ...] = field(default=())
    #: ``early_stopping="refit"``'s validated passes: which disjoint hold-out a pass
    #: validates on (``warprec._validation.holdout``'s ``fold``, of the split order of
    #: ``validation_seed``, the first pass's model seed; None: the model's own), whether
    #: its monitor keeps the per-user scores, and the epochs it trains at least
    validation_fold: int = 0
    validation_seed: int | None = None
    record_validation: bool = False
    min_epochs: int = 0
    #: the cosine losses: positives per shared set of ``n_negatives`` draws (1: per
    #: positive, ``_kernels.shared`` above 1)
    negative_sharing: int = 1
    #: the hybrid model: share of the positives whose negatives are drawn among the items
    #: that share one of the positive's item features (``_kernels.features``)
    feature_negatives: float = 0.0

    @property
    def violators(self) -> bool:
        """Whether several violators per positive are collected (``max_violators > 1``)."""
        return self.max_violators > 1

    @property
    def work_entries(self) -> int:
        """The entries of the kernel's per-thread lists (see ``LossSpec.work_entries``)."""
        return self.loss.work_entries(self.max_sampled, self.n_negatives,
                                      self.negative_sharing)


def check_params(params: dict[str, Any]) -> TrainingConfig:
    """Check a ``WARPFactorizer``'s parameters (``get_params()``); returns the training
    configuration.

    The declarative pass (:data:`PARAMETER_CONSTRAINTS`) checks each parameter on its own;
    the loss's rules and the cross-parameter rules follow. Raises
    ``InvalidParameterError`` (a ValueError) naming the parameter at fault.
    """
    validate_params(params, PARAMETER_CONSTRAINTS)
    spec = loss_spec(params["loss"])
    kos_k, kos_n = spec.check(params)
    weighting = params["rank_weighting"]
    if isinstance(weighting, str) and weighting.strip().lower() == "precision@k" \
            and params["k"] is not None:
        warnings.warn(f"rank_weighting='precision@k' with k={params['k']!r} is deprecated and "
                      f"will stop working in warprec 0.3: write rank_weighting="
                      f"'precision@{params['k']}' (k is then only k-OS's order statistic).",
                      FutureWarning, stacklevel=4)
    _validation.parse_metric(params["validation_metric"])
    drop = params["learning_rate_drop"]
    if drop_needs_validation(drop) and params["early_stopping"] is False:
        raise ValueError(f"learning_rate_drop={drop!r} drops the rate when the validation "
                         f"score stops improving, which needs early stopping: set "
                         f"early_stopping=True, 'refit' or 'auto', or learning_rate_drop="
                         f"'auto' or 1.0.")
    return TrainingConfig(
        loss=spec, d=int(params["n_components"]), epochs=params["epochs"],
        early_stopping=params["early_stopping"],
        validation_interval=params["validation_interval"],
        n_iter_no_change=int(params["n_iter_no_change"]),
        max_sampled=int(params["max_sampled"]), max_violators=int(params["max_violators"]),
        n_negatives=int(params["n_negatives"]),
        exact_rank=params["rank_estimator"] == "exact", kos_k=kos_k, kos_n=kos_n,
        adagrad=params["learning_schedule"] == "adagrad",
        n_threads=resolve_threads(params["n_threads"]),
        max_norm=float(params["max_norm"] or 0.0), margin=float(params["margin"]),
        temperature=float(params["temperature"]),
        negative_sharing=int(params["negative_sharing"]),
        feature_negatives=float(params["feature_negatives"]))


def drop_needs_validation(learning_rate_drop: float | str) -> bool:
    """Whether ``learning_rate_drop`` is a number below 1 (which needs early stopping;
    ``"auto"`` follows it)."""
    return not isinstance(learning_rate_drop, str) and learning_rate_drop < 1


def resolve_epochs(epochs: int | str, early_stopping: bool) -> int:
    """The epoch count (with early stopping, the maximum) that ``epochs`` means for a fit
    with or without early stopping."""
    if epochs == "auto":
        return AUTO_EPOCHS_EARLY_STOPPING if early_stopping else AUTO_EPOCHS
    return int(epochs)


def long_tail(spec: LossSpec, matrix: sp.csr_matrix) -> bool:
    """Whether a loss with the long-tail rule trains on a long tail of short histories
    (fewer than ``LONG_TAIL_MAX_PER_ITEM`` positives per item and ``LONG_TAIL_MAX_PER_USER``
    per user), where it takes LightFM's order and initial scale."""
    n_users, n_items = matrix.shape
    return (spec.long_tail and matrix.nnz < LONG_TAIL_MAX_PER_ITEM * n_items
            and matrix.nnz < LONG_TAIL_MAX_PER_USER * n_users)


def resolve_init_scale(init_scale: float | str, spec: LossSpec,
                       matrix: sp.csr_matrix) -> float:
    """``init_scale``, or its ``"auto"`` value for the first fit's ``matrix``."""
    if not isinstance(init_scale, str):
        return float(init_scale)
    return LONG_TAIL_INIT_SCALE if long_tail(spec, matrix) else INIT_SCALE


def training_input(X: Any) -> tuple[sp.csr_matrix, np.ndarray | None, np.ndarray | None]:
    """Training data as canonical CSR plus raw id arrays (None for matrix input), or a
    ValueError when it cannot be trained on (no user, no item, no positive, too many
    items)."""
    matrix, user_ids, item_ids = fit_input(X)
    if matrix.shape[0] == 0 or matrix.shape[1] == 0:
        raise ValueError(f"X has shape {matrix.shape}: it needs at least one user and one "
                         "item.")
    if matrix.nnz == 0:
        raise ValueError("X holds no positive interaction (all entries are zero); "
                         "nothing to learn from.")
    if matrix.shape[1] >= 2**31 - 1:
        raise ValueError("warprec supports fewer than 2**31 - 1 items.")
    return matrix, user_ids, item_ids


def resolve_learning_rate(value: float | str, spec: LossSpec, matrix: sp.csr_matrix,
                          kept: float | None = None) -> float:
    """The learning rate to train with: ``value``, or its ``"auto"`` value from the
    positives per user and per item (``kept``, the first fit's, when training
    continues)."""
    if not isinstance(value, str):
        return float(value)
    if kept is not None:
        return kept
    per_user = matrix.nnz / max(matrix.shape[0], 1)
    per_item = matrix.nnz / max(matrix.shape[1], 1)
    return spec.auto_learning_rate(per_user, per_item)


def resolve_alpha(value: float | str, spec: LossSpec, learning_rate: float,
                  matrix: sp.csr_matrix, kept: float | None = None) -> float:
    """The weight decay to train with: ``value``, or its ``"auto"`` value (``kept``, the
    first fit's, when training continues, so that partial_fit does not change it). Warns
    when ``learning_rate * alpha >= 1``, where the decay flips signs."""
    if isinstance(value, str):
        if kept is not None:
            return kept
        alpha = spec.auto_alpha(learning_rate, matrix.shape[1], matrix.nnz)
    else:
        alpha = float(value)
    if learning_rate * alpha >= 1.0:
        warnings.warn(f"learning_rate * alpha = {learning_rate * alpha:.3g} >= 1: every "
                      "update multiplies the touched factor rows by 1 - learning_rate * "
                      "alpha <= 0, which flips their sign instead of shrinking them. Lower "
                      "alpha or learning_rate.", WarprecWarning, stacklevel=4)
    return alpha


def resolve_negative_weight(value: float | str, spec: LossSpec, matrix: sp.csr_matrix,
                            kept: float | None = None) -> float:
    """The cosine contrastive loss's negative weight: ``value``, or its ``"auto"`` value
    from the density of the first fit's matrix (``kept`` when training continues)."""
    if not isinstance(value, str):
        return float(value)
    if kept is not None:
        return kept
    density = matrix.nnz / (float(matrix.shape[0]) * matrix.shape[1])
    return spec.auto_negative_weight(density)


def resolve_dropout(value: float | str, spec: LossSpec) -> float:
    """The dropout on the user vector: ``value``, or its ``"auto"`` value."""
    return float(value) if not isinstance(value, str) else spec.auto_dropout()


def resolve_learning_rate_drop(value: float | str, spec: LossSpec,
                               early_stopping: bool) -> float:
    """The factor of a drop of the learning rate: ``value``, or its ``"auto"`` value for a
    fit with or without early stopping."""
    if not isinstance(value, str):
        return float(value)
    return spec.auto_learning_rate_drop(early_stopping)


def resolve_sample_order(value: str, spec: LossSpec, matrix: sp.csr_matrix,
                         outgrows_cache: bool, negative_sharing: int = 1) -> str:
    """``sample_order``, or its ``"auto"`` value: the users order when the parameters
    outgrow the caches, except on a long tail of short histories and with negatives
    shared by groups of positives (a group of one user's positives would take all its
    steps from one snapshot of the user's row)."""
    if value != "auto":
        return value
    if spec.sphere and negative_sharing > 1:
        return "positives"
    if outgrows_cache and not long_tail(spec, matrix):
        return "users"
    return "positives"
