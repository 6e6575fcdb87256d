"""Side features (the hybrid model): encoding, growth, the kernel's view and persistence.

With side features a user's (item's) factors and bias are the weighted sums of its
features' embeddings (LightFM's convention), indicator features first (one per entity,
with ``identity_features``), then the given ones. These functions keep the estimator's
feature-side fitted attributes (``user_features_``, ``item_features_``, the feature names
and encoders, the feature embeddings, biases and Adagrad state) consistent with each other
and with ``user_factors_`` / ``item_factors_`` / ``item_biases_``, which :func:`represent`
recomputes from them after every change. They read and write those public fitted
attributes; the estimator calls them from ``fit``, ``partial_fit``, ``save`` and ``load``.
"""

from __future__ import annotations

import json
from typing import Any, Literal, cast

import numpy as np
import scipy.sparse as sp

from ._features import FeatureEncoder
from ._inputs import IdMap
from ._kernels.aligned import aligned, aligned_full
from ._kernels.epoch import Parameters
from ._kernels.features import FeatureParameters
from ._plan import NORMALIZATIONS

__all__ = ["FEATURE_ARRAYS", "is_hybrid", "n_indicators", "initialise", "grow", "update",
           "weigh", "embed", "arrays_to_save", "load_arrays", "indicators_only",
           "leading_indicators", "plain_kernel", "kernel_parameters", "represent",
           "decay_share"]

#: The arrays the hybrid model's kernel updates (with side features).
FEATURE_ARRAYS = ("user_feature_factors_", "item_feature_factors_", "item_feature_biases_",
                  "user_feature_grad_sq_", "item_feature_grad_sq_",
                  "item_feature_bias_grad_sq_")


def weigh(model, matrix, indicator):
    """``(given, indicators)``: the encoded given features ``matrix`` (one row per entity,
    the encoder's values) as the model stores them, and the value of each row's indicator
    feature (float64, 0 for rows without one).

    ``indicator`` (a bool, or one bool per row) says which rows have an indicator feature
    (entities of the fit, with indicators). With ``x`` a row, ``s = sum(|x|)`` (its L1
    norm), ``w = feature_weight_`` and ``feature_normalization_``:

    * ``"none"``: the given features ``w x``, the indicator 1;
    * ``"side"``: the given features ``w x / s``, the indicator 1 (the given features
      then weigh ``w`` in total, whatever their number);
    * ``"row"``: with an indicator, ``(1, w x) / (1 + w s)``; without one, ``x / s`` (the
      row sums to 1 either way, LightFM's ``Dataset(normalize=True)``; ``w`` is then the
      given features' weight against the indicator before the scaling).

    A row without given features (``s = 0``) keeps them empty (its indicator 1). Rows of
    entities the model did not train on (no indicator) are scaled by the same rule, so a
    new entity's row is what it would be had it no indicator at fit time."""
    n = matrix.shape[0]
    has = np.broadcast_to(np.asarray(indicator, dtype=bool), (n,))
    w = float(model.feature_weight_)
    mode = getattr(model, "feature_normalization_", "none")   # (pickled before it existed)
    if mode == "none":
        return matrix * np.float32(w), has.astype(np.float64)
    s = np.asarray(abs(matrix).sum(axis=1), dtype=np.float64).ravel()
    safe = np.where(s > 0, s, 1.0)
    if mode == "side":
        factor, ones = np.where(s > 0, w / safe, 0.0), has.astype(np.float64)
    else:
        factor = np.where(has, w / (1.0 + w * s), np.where(s > 0, 1.0 / safe, 0.0))
        ones = np.where(has, 1.0 / (1.0 + w * s), 0.0)
    given = sp.csr_matrix(sp.diags(factor) @ matrix.astype(np.float64), dtype=np.float32)
    given.eliminate_zeros()
    return given, ones


def is_hybrid(model: Any) -> bool:
    """Whether ``model`` was fitted with side features."""
    return hasattr(model, "user_feature_factors_")


def n_indicators(model, kind):
    """How many leading feature columns of ``kind`` are indicator features (one per
    user / item, or none with ``identity_features=False``)."""
    encoder = getattr(model, f"{kind}_feature_encoder_")
    width = getattr(model, f"{kind}_features_").shape[1]
    return width - (0 if encoder is None else encoder.n_features_)


def initialise(model, features, config):
    """Encode the side features (indicator features first) and initialise one
    embedding (and item bias) per feature as ``fit`` initialises factors."""
    config.loss.check_features(config.kos_n, config.exact_rank, model.max_norm)
    if config.feature_negatives > 0 and features[1] is None:
        raise ValueError(f"feature_negatives={config.feature_negatives} draws negatives among "
                         f"items that share an item feature: pass item_features, or set "
                         f"feature_negatives=0.")
    model.feature_weight_ = float(model.feature_weight)
    model.feature_normalization_ = str(model.feature_normalization)
    matrices, names = [], []
    for kind, given, ids, n in (("user", features[0], model.user_ids_,
                                 model.user_factors_.shape[0]),
                                ("item", features[1], model.item_ids_,
                                 model.item_factors_.shape[0])):
        blocks, labels = [], []
        identity = given is None or model.identity_features
        if identity:
            blocks.append(sp.identity(n, dtype=np.float32, format="csr"))
            labels += [f"{kind}_id={x}" for x in (ids if ids is not None else range(n))]
        encoder = None
        if given is not None:
            encoder = FeatureEncoder(cast(Literal["user", "item"], kind))
            weighed, ones = weigh(model, encoder.fit(given, ids, n), identity)
            if identity and not (ones == 1).all():
                blocks[0] = sp.diags(ones.astype(np.float32), format="csr")
            blocks.append(weighed)
            labels += list(encoder.names_)
            if encoder.n_features_ == 0 and not model.identity_features:
                raise ValueError(f"{kind}_features has no feature column and "
                                 f"identity_features=False: every {kind} would get the zero "
                                 f"embedding, so every score would be 0. Pass {kind}_features "
                                 f"with at least one column, or set identity_features=True.")
        setattr(model, f"{kind}_feature_encoder_", encoder)
        matrices.append(sp.hstack(blocks, format="csr", dtype=np.float32))
        names.append(np.array(labels, dtype=object))
    model.user_features_, model.item_features_ = matrices
    model.user_feature_names_, model.item_feature_names_ = names
    rng = np.random.default_rng([model.seed_, 5])
    d = model.user_factors_.shape[1]
    scale = model.init_scale_ / np.sqrt(d)
    n_uf, n_if = matrices[0].shape[1], matrices[1].shape[1]
    f32 = np.float32
    model.user_feature_factors_ = aligned_full(
        (n_uf, d), rng.standard_normal((n_uf, d)) * scale, f32)
    model.item_feature_factors_ = aligned_full(
        (n_if, d), rng.standard_normal((n_if, d)) * scale, f32)
    model.item_feature_biases_ = aligned_full(n_if, 0.0, f32)
    model.user_feature_grad_sq_ = aligned_full((n_uf, d), 1.0, f32)
    model.item_feature_grad_sq_ = aligned_full((n_if, d), 1.0, f32)
    model.item_feature_bias_grad_sq_ = aligned_full(n_if, 1.0, f32)
    represent(model)


def grow(model, shape):
    """New users and items of a hybrid model (``partial_fit``): with indicator
    features, one more indicator each (its embedding initialised as in ``fit``); their
    given features are empty until ``user_features`` / ``item_features`` describe
    them."""
    rng = np.random.default_rng([model.seed_, 6, model.epochs_done_])
    d = model.user_factors_.shape[1]
    scale = model.init_scale_ / np.sqrt(d)
    f32 = np.float32
    for kind, n_new in (("user", shape[0]), ("item", shape[1])):
        F = getattr(model, f"{kind}_features_")
        n_old = F.shape[0]
        if n_new == n_old:
            continue
        n_identity, added = n_indicators(model, kind), n_new - n_old
        n_given = F.shape[1] - n_identity
        given = sp.vstack([F[:, n_identity:], sp.csr_matrix((added, n_given), dtype=f32)])
        names = list(getattr(model, f"{kind}_feature_names_")[n_identity:])
        if n_identity:
            given = sp.hstack([sp.identity(n_new, dtype=f32, format="csr"), given])
            ids = model.user_ids_ if kind == "user" else model.item_ids_
            names = [f"{kind}_id={x}" for x in (ids if ids is not None
                                                 else range(n_new))] + names
            arrays = [(f"{kind}_feature_factors_", rng.standard_normal((added, d)) * scale),
                      (f"{kind}_feature_grad_sq_", np.ones((added, d)))]
            if kind == "item":
                arrays += [("item_feature_biases_", np.zeros(added)),
                           ("item_feature_bias_grad_sq_", np.ones(added))]
            for name, fresh in arrays:
                old = getattr(model, name)
                grown = np.concatenate([old[:n_identity], fresh.astype(f32),
                                        old[n_identity:]])
                setattr(model, name, aligned_full(grown.shape, grown, f32))
        setattr(model, f"{kind}_features_", sp.csr_matrix(given, dtype=f32))
        setattr(model, f"{kind}_feature_names_", np.array(names, dtype=object))


def update(model, features):
    """``partial_fit``'s feature rows (same columns), if any were given: a matrix
    replaces every row, a DataFrame the rows of the ids it names."""
    for kind, given in zip(("user", "item"), features):
        if given is None:
            continue
        encoder = getattr(model, f"{kind}_feature_encoder_")
        if encoder is None:
            raise ValueError(f"this model was fit without {kind} features; pass none, or "
                             f"fit() a new model with them.")
        current = getattr(model, f"{kind}_features_")
        n, n_identity = current.shape[0], n_indicators(model, kind)
        ids = model.user_ids_ if kind == "user" else model.item_ids_
        matrix, row_ids = encoder.transform(given)
        matrix, ones = weigh(model, matrix, n_identity > 0)
        rows = None
        if row_ids is not None:
            rows = (IdMap(ids).indexer(row_ids) if ids is not None
                    else np.asarray(row_ids, dtype=np.int64))
            if (rows < 0).any() or (rows >= n).any():
                raise ValueError(f"{kind}_features has rows for {kind}s the model does "
                                 f"not know.")
            place = sp.csr_matrix((np.ones(len(rows), np.float32),
                                   (rows, np.arange(len(rows)))), shape=(n, len(rows)))
            untouched = np.ones(n, np.float32)
            untouched[rows] = 0.0
            matrix = (sp.diags(untouched) @ current[:, n_identity:] + place @ matrix)
        elif matrix.shape[0] != n:
            raise ValueError(f"{kind}_features has {matrix.shape[0]} rows; the model has "
                             f"{n} {kind}s.")
        indicators = current[:, :n_identity]
        if n_identity and not (ones == 1).all():   # ("row": the indicators' values too)
            values = indicators.diagonal().astype(np.float64)
            values[np.arange(n) if rows is None else rows] = ones
            indicators = sp.diags(values.astype(np.float32), format="csr")
        setattr(model, f"{kind}_features_", sp.hstack(
            [indicators, matrix], format="csr", dtype=np.float32))
    represent(model)


def embed(model, kind, features, known_index):
    """``(factors, biases, labels)`` of the entities described by feature rows: the
    weighted sums of the given features' embeddings, plus an entity's own indicator
    embedding when a DataFrame row names a user / item the model knows
    (``known_index(kind, labels)``: their indices, -1 for unknown ones). ``biases`` is
    None for users; ``labels`` the DataFrame's id column (row indices for a matrix)."""
    encoder = getattr(model, f"{kind}_feature_encoder_")
    matrix, labels = encoder.transform(features)
    n_identity = n_indicators(model, kind)
    known = np.full(matrix.shape[0], -1, dtype=np.int64)
    if labels is not None and n_identity:
        known = np.asarray(known_index(kind, labels), dtype=np.int64)
    hit = known >= 0
    matrix, ones = weigh(model, matrix, hit)
    E = getattr(model, f"{kind}_feature_factors_")
    factors = np.asarray(matrix @ E[n_identity:], dtype=np.float32)
    biases = None
    if kind == "item":
        biases = np.asarray(matrix @ model.item_feature_biases_[n_identity:],
                            dtype=np.float32)
    if labels is None:
        return factors, biases, np.arange(matrix.shape[0])
    if hit.any():
        scaled = not (ones[hit] == 1).all()   # ("row": the indicator's value below 1)
        own = ones[hit].astype(np.float32)
        factors[hit] += own[:, None] * E[known[hit]] if scaled else E[known[hit]]
        if biases is not None:
            b = model.item_feature_biases_[known[hit]]
            biases[hit] += own * b if scaled else b
    return factors, biases, labels


def arrays_to_save(model):
    """The side features' parameters, matrices, names and encoders for ``save``."""
    out = {name.rstrip("_"): getattr(model, name) for name in FEATURE_ARRAYS}
    out["feature_weight"] = np.array(model.feature_weight_)
    out["feature_normalization"] = np.array(model.feature_normalization_)
    for kind in ("user", "item"):
        matrix = getattr(model, f"{kind}_features_")
        out[f"{kind}_features_data"] = matrix.data
        out[f"{kind}_features_indices"] = matrix.indices
        out[f"{kind}_features_indptr"] = matrix.indptr
        out[f"{kind}_feature_names"] = np.array(json.dumps(
            [str(n) for n in getattr(model, f"{kind}_feature_names_")]))
        encoder = getattr(model, f"{kind}_feature_encoder_")
        out[f"{kind}_feature_encoder"] = np.array(
            "null" if encoder is None else encoder.to_json())
    return out


def load_arrays(model, data):
    """The inverse of :meth:`_feature_arrays`, for ``load``."""
    for name in FEATURE_ARRAYS:
        setattr(model, name, data[name.rstrip("_")])
    # (files written before feature_weight existed had the weight 1)
    weight = float(data["feature_weight"]) if "feature_weight" in data else 1.0
    if not (np.isfinite(weight) and weight > 0):
        raise ValueError(f"feature_weight is {weight}; a saved model's is a finite number > 0")
    model.feature_weight_ = weight
    # (and no normalisation before feature_normalization existed)
    mode = str(data["feature_normalization"]) if "feature_normalization" in data else "none"
    if mode not in NORMALIZATIONS:
        raise ValueError(f"feature_normalization is {mode!r}; a saved model's is one of "
                         f"{list(NORMALIZATIONS)}")
    model.feature_normalization_ = mode
    for kind, n in (("user", model.user_factors_.shape[0]),
                    ("item", model.item_factors_.shape[0])):
        width = getattr(model, f"{kind}_feature_factors_").shape[0]
        setattr(model, f"{kind}_features_", sp.csr_matrix(
            (data[f"{kind}_features_data"], data[f"{kind}_features_indices"],
             data[f"{kind}_features_indptr"]), shape=(n, width)))
        setattr(model, f"{kind}_feature_names_", np.array(
            json.loads(str(data[f"{kind}_feature_names"])), dtype=object))
        text = str(data[f"{kind}_feature_encoder"])
        setattr(model, f"{kind}_feature_encoder_",
                None if text == "null" else FeatureEncoder.from_json(text))


def indicators_only(features: sp.csr_matrix) -> bool:
    """Whether row ``r`` of ``features`` (CSR) is its indicator alone, for every ``r``:
    the single stored value ``features[r, r] == 1`` (the columns past the rows' count,
    if any, are then empty)."""
    n = features.shape[0]
    return bool(features.shape[1] >= n and features.nnz == n
                and np.array_equal(features.indptr, np.arange(n + 1))
                and np.array_equal(features.indices, np.arange(n))
                and (features.data == 1).all())


def leading_indicators(features: sp.csr_matrix) -> bool:
    """Whether the first stored feature of every row ``r`` of ``features`` (CSR, sorted
    indices) is column ``r``: the entities' indicators, which come first with
    ``identity_features`` (the kernel then knows an entity's own row without reading its
    feature list, and prefetches it)."""
    n = features.shape[0]
    starts = features.indptr[:-1]
    return bool(features.shape[1] >= n and (features.indptr[1:] > starts).all()
                and np.array_equal(features.indices[starts], np.arange(n)))


def plain_kernel(model) -> bool:
    """Whether the plain model's kernel trains this hybrid model: every user's and every
    item's features are its indicator alone (:func:`indicators_only`). A user's
    representation is then its indicator's embedding, an item's factors and bias its
    indicator's, and a feature is shared by one entity (decay share 1): the hybrid step
    is the plain step on those rows, which the plain kernel takes at its own cost (with
    its prefetching and fixed-dimension scoring). The arithmetic is the same up to the
    rounding of the bias step (the plain kernel's is in float64), not bit for bit."""
    return indicators_only(model.user_features_) and indicators_only(model.item_features_)


def kernel_parameters(model):
    """The kernel's view of the hybrid model: ``features.FeatureParameters``, or with
    :func:`plain_kernel` the plain ``Parameters`` of the indicators' rows (views of the
    feature arrays, updated in place)."""
    U, V = model.user_features_, model.item_features_
    if plain_kernel(model):
        n_users, n_items = U.shape[0], V.shape[0]
        return Parameters(
            model.user_feature_factors_[:n_users], model.item_feature_factors_[:n_items],
            model.item_feature_biases_[:n_items], model.user_feature_grad_sq_[:n_users],
            model.item_feature_grad_sq_[:n_items],
            model.item_feature_bias_grad_sq_[:n_items])
    pool = sp.csc_matrix(V)
    pool.sort_indices()
    return FeatureParameters(
        U.indptr.astype(np.int64), U.indices.astype(np.int32), U.data.astype(np.float32),
        V.indptr.astype(np.int64), V.indices.astype(np.int32), V.data.astype(np.float32),
        model.user_feature_factors_, model.item_feature_factors_, model.item_feature_biases_,
        model.user_feature_grad_sq_, model.item_feature_grad_sq_,
        model.item_feature_bias_grad_sq_, decay_share(U), decay_share(V),
        leading_indicators(U), leading_indicators(V), bool((U.data == 1).all()),
        bool((V.data == 1).all()), pool.indptr.astype(np.int64),
        pool.indices.astype(np.int32))


def represent(model):
    """``user_factors_``, ``item_factors_``, ``item_biases_`` as the weighted sums of
    the entities' feature embeddings (with indicators only, a copy of the indicators'
    rows, into the arrays in place when their shapes have not changed)."""
    f32 = np.float32
    for name, matrix, source in (
            ("user_factors_", model.user_features_, model.user_feature_factors_),
            ("item_factors_", model.item_features_, model.item_feature_factors_),
            ("item_biases_", model.item_features_, model.item_feature_biases_)):
        current = getattr(model, name, None)
        if indicators_only(matrix):
            rows = source[:matrix.shape[0]]
            if current is not None and current.shape == rows.shape:
                np.copyto(current, rows)
                continue
            rows = rows.copy()   # (never a view of the feature arrays)
        else:
            rows = matrix @ source
        setattr(model, name, aligned(np.ascontiguousarray(rows, dtype=f32)))


def decay_share(features: sp.csr_matrix) -> np.ndarray:
    """Per feature column: ``1 / sqrt(m)`` with ``m`` the number of rows that have it (1
    for indicator and unused columns); see ``_kernels/features.py``."""
    counts = np.bincount(features.indices, minlength=features.shape[1])
    return (1.0 / np.sqrt(np.maximum(counts, 1))).astype(np.float32)
