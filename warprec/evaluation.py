"""Batch evaluation of factor models: every test user's top-k metrics at once.

:func:`evaluate_factors` takes factor arrays and sparse test (and train) matrices;
:func:`evaluate` takes a fitted model and whatever test data the model converts (raw-id
DataFrames, :class:`~warprec.interactions.Interactions`, sparse matrices). Both score the
test users in blocks (:mod:`warprec._scoring`: one float32 matmul per block), and one
parallel Numba kernel (:mod:`warprec._kernels.metrics`) excludes the train items, selects
the top k and computes every metric of a user; the means are exactly rounded sums over
the users. The definitions are those of the single-query reference functions of
:mod:`warprec.metrics` (which re-exports this module's public names).

Internal API (for :mod:`warprec.dask`, whose distributed evaluation repeats these steps
per partition): :data:`KERNEL_COLUMN`, :func:`metric_selection`, :func:`metric_key`,
:func:`relevance_matrix`, :func:`relevant_counts`, :func:`sparsity_pattern` and
:func:`per_user_values`. Not part of warprec's public API; may change without notice.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING, TypeAlias, cast

import numpy as np
import pandas as pd
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from ._inputs import ON_UNKNOWN, check_k, check_positive_int, validate_param
from ._kernels import metrics as _kmetrics
from ._scoring import (as_csr, as_factor_arrays, check_finite, csr_arrays, empty_csr_arrays,
                       score_blocks)
from ._threads import kernel_threads, run_in_threads
from .exceptions import WarprecWarning
from .interactions import Interactions

if TYPE_CHECKING:
    from typing import Any, Literal, overload

    from ._base import FactorRecommender
    from ._typing import OnUnknown

__all__ = ["DEFAULT_METRICS", "METRIC_NAMES", "evaluate", "evaluate_cold_items",
           "evaluate_cold_users", "evaluate_factors"]

#: What :func:`evaluate` takes as test and train interactions: whatever the model
#: converts into its index space.
InteractionData: TypeAlias = pd.DataFrame | Interactions | sp.spmatrix | sp.sparray | ArrayLike

#: Every metric base name accepted by ``metrics=`` in :func:`evaluate_factors`.
METRIC_NAMES = ("precision", "recall", "map", "mrr", "ndcg", "hit_rate", "auc",
                "ndcg_graded")


#: The metrics computed when ``metrics=None``: every top-k metric with binary gains.
#: The full AUC (every relevant item against every eligible item) is left out because it
#: needs a second pass over each user's scores; ask for it with ``"auc"``.
DEFAULT_METRICS = ("precision", "recall", "map", "mrr", "ndcg", "hit_rate")


#: The column of each metric in the per-user values of :func:`per_user_values`.
KERNEL_COLUMN = {
    "precision": _kmetrics.PRECISION,
    "recall": _kmetrics.RECALL,
    "map": _kmetrics.AVERAGE_PRECISION,
    "mrr": _kmetrics.RECIPROCAL_RANK,
    "ndcg": _kmetrics.NDCG,
    "hit_rate": _kmetrics.HIT_RATE,
    "auc": _kmetrics.AUC,
    "ndcg_graded": _kmetrics.NDCG_GRADED,
}


def metric_selection(metrics: str | Iterable[str] | None) -> list[str]:
    """The distinct metric names asked for, in order (``DEFAULT_METRICS`` for None);
    ValueError for an unknown name or an empty selection."""
    if metrics is None:
        return list(DEFAULT_METRICS)
    if isinstance(metrics, str):
        metrics = [metrics]
    chosen = []
    for name in metrics:
        if name not in METRIC_NAMES:
            raise ValueError(f"unknown metric {name!r}; choose among {METRIC_NAMES}")
        if name not in chosen:
            chosen.append(name)
    if not chosen:
        raise ValueError("metrics must name at least one metric")
    return chosen


def metric_key(name: str, k: int) -> str:
    """The result key of a metric: ``"<name>@<k>"``, or ``"auc"`` (no cut-off)."""
    return name if name == "auc" else f"{name}@{k}"


def relevance_matrix(test: sp.spmatrix | sp.sparray, shape: tuple[int, int],
                     graded: bool) -> sp.csr_matrix:
    """Canonical CSR of the relevant items (explicit zeros dropped)."""
    csr = as_csr(test, shape, "test")
    if csr.nnz and (csr.data == 0).any():
        csr = csr.copy()
        csr.eliminate_zeros()
    if graded and csr.nnz:
        data = csr.data
        if not np.issubdtype(data.dtype, np.number) or not np.isfinite(data).all() \
                or (data < 0).any():
            raise ValueError("ndcg_graded needs finite, non-negative gains in test")
    return csr


def relevant_counts(n_relevant: ArrayLike | None, test: sp.csr_matrix) -> NDArray[np.int64]:
    """Per-user number of relevant items: ``n_relevant`` (checked to have one integer per
    user, at least the stored test items) or the stored test items."""
    stored = np.diff(test.indptr).astype(np.int64)
    if n_relevant is None:
        return stored
    counts = np.asarray(n_relevant)
    if counts.shape != stored.shape:
        raise ValueError(
            f"n_relevant must have shape {stored.shape} (one count per user) "
            f"(got {counts.shape})")
    if not np.issubdtype(counts.dtype, np.integer):
        raise TypeError(f"n_relevant must hold integers (got dtype {counts.dtype})")
    counts = counts.astype(np.int64)
    if (counts < stored).any():
        raise ValueError(
            "n_relevant must be at least the number of stored test items of each user")
    return counts


def sparsity_pattern(csr: sp.csr_matrix) -> sp.csr_matrix:
    """The sparsity pattern of a canonical CSR matrix, with every stored value 1."""
    return sp.csr_matrix((np.ones(csr.nnz, dtype=np.int8), csr.indices, csr.indptr),
                         shape=csr.shape)


def _warn_on_overlap(test: sp.csr_matrix, train: sp.csr_matrix | None) -> None:
    if train is None or test.nnz == 0 or train.nnz == 0:
        return
    overlap = sparsity_pattern(test).multiply(sparsity_pattern(train)).count_nonzero()
    if overlap:
        warnings.warn(
            f"{overlap} test entries also appear in train; they are excluded from the "
            "ranking and can never be hit, but still count as relevant",
            WarprecWarning, stacklevel=3)


def _discount_table(k: int, n_items: int, counts: NDArray[np.int64]) -> NDArray[np.float64]:
    """1 / log2(pos + 2) for every position a ranking or an ideal ranking can use."""
    length = min(k, max(n_items, int(counts.max(initial=0))))
    return 1.0 / np.log2(np.arange(length, dtype=np.float64) + 2.0)


def _ideal_graded_dcg(test_rows: sp.csr_matrix, k: int,
                      discounts: NDArray[np.float64]) -> NDArray[np.float64]:
    """Per-row ideal exponential-gain DCG@k of the stored gains (vectorised)."""
    n_rows = test_rows.shape[0]
    row_of = np.repeat(np.arange(n_rows), np.diff(test_rows.indptr))
    order = np.lexsort((-test_rows.data.astype(np.float64), row_of))
    position = np.arange(order.shape[0]) - test_rows.indptr[row_of[order]]
    kept = position < min(k, discounts.shape[0])
    terms = (np.exp2(test_rows.data[order][kept].astype(np.float64)) - 1.0) \
        * discounts[position[kept]]
    # (numpy's stubs type every bincount as intp; with float64 weights it is float64)
    return np.asarray(np.bincount(row_of[order][kept], weights=terms, minlength=n_rows),
                      dtype=np.float64)


def per_user_values(user_factors: NDArray[np.float32], item_factors: NDArray[np.float32],
                    item_biases: NDArray[np.float32], test: sp.csr_matrix,
                    train: sp.csr_matrix | None, counts: NDArray[np.int64],
                    users: NDArray[np.int64], k: int, chosen: Iterable[str],
                    n_threads: int | None, block_size: int | None) -> NDArray[np.float64]:
    """(len(users), N_METRICS) float64 array of per-user metric values.

    The inputs are checked already (as :func:`evaluate_factors` checks them); ``counts``
    are the relevant counts of every user, ``users`` the rows to evaluate and
    :data:`KERNEL_COLUMN` says which column holds which metric (NaN where undefined).
    """
    test_rows = test[users]
    test_indptr, test_indices = csr_arrays(test_rows)
    test_gains = test_rows.data.astype(np.float64)
    if train is None:
        train_indptr, train_indices = empty_csr_arrays(users.shape[0])
    else:
        train_indptr, train_indices = csr_arrays(train[users])
    relevant = counts[users]
    discounts = _discount_table(k, item_factors.shape[0], relevant)
    if "ndcg_graded" in chosen:
        ideal_graded = _ideal_graded_dcg(test_rows, k, discounts)
    else:
        ideal_graded = np.full(users.shape[0], np.nan)
    values = np.empty((users.shape[0], _kmetrics.N_METRICS), dtype=np.float64)
    want_auc = "auc" in chosen
    next_row = np.zeros(1, dtype=np.int64)
    with kernel_threads(n_threads) as n:
        for start, stop, block in score_blocks(user_factors, item_factors, users,
                                                block_size):
            # every thread runs the kernel on the whole block, claiming rows from next_row
            args = (block, item_biases, train_indptr[start:stop + 1], train_indices,
                    test_indptr[start:stop + 1], test_indices, test_gains,
                    relevant[start:stop], k, discounts, ideal_graded[start:stop], want_auc,
                    values[start:stop], next_row)
            next_row[0] = 0
            def rows(_: int, args: tuple = args) -> None:
                _kmetrics.evaluate_rows(*args)

            run_in_threads(rows, min(n, stop - start))
    return values


def _summarise(values: NDArray[np.float64], users: NDArray[np.int64], chosen: Iterable[str],
               k: int, per_user: bool, user_ids: ArrayLike | None = None
               ) -> dict[str, float | int] | pd.DataFrame:
    columns = {metric_key(name, k): values[:, KERNEL_COLUMN[name]] for name in chosen}
    if per_user:
        index = users if user_ids is None else np.asarray(user_ids)[users]
        return pd.DataFrame(columns, index=pd.Index(index, name="user"))
    result = {}
    for key, column in columns.items():
        defined = column[~np.isnan(column)]
        result[key] = _mean(defined) if defined.size else float("nan")
    result["n_users"] = int(users.shape[0])
    return result


def _mean(values: NDArray[np.float64]) -> float:
    """The mean of float64 ``values``: their exactly rounded sum (:func:`math.fsum`) over
    their number. It does not depend on the order of the values or on how they are
    grouped, so :func:`warprec.dask.evaluate`, which adds up the exact partial sums of
    its partitions, gives the same number to the last bit."""
    return math.fsum(values.tolist()) / values.size


def evaluate_factors(user_factors: ArrayLike, item_factors: ArrayLike,
                     item_biases: ArrayLike | None, test: sp.spmatrix | sp.sparray,
                     train: sp.spmatrix | sp.sparray | None = None, k: int = 10, *,
                     metrics: str | Iterable[str] | None = None,
                     n_relevant: ArrayLike | None = None, n_threads: int | None = None,
                     block_size: int | None = None, per_user: bool = False,
                     user_ids: ArrayLike | None = None
                     ) -> dict[str, float | int] | pd.DataFrame:
    """Top-k ranking metrics of a factor model over all test users at once.

    Each test user's items are scored with ``U[u] @ V[i] + b[i]`` (float32), the
    user's train items are removed, the top k are selected (ties: lower item index
    first) and the metrics of :mod:`warprec.metrics` are computed against the user's
    test items. Users are processed in blocks: one float32 matmul per block (BLAS, or a
    Numba kernel for small problems), then one parallel Numba kernel for exclusion,
    top-k and all the metrics.

    Parameters
    ----------
    user_factors : array_like, shape (n_users, d)
    item_factors : array_like, shape (n_items, d)
    item_biases : array_like, shape (n_items,), or None
    test : scipy sparse matrix, shape (n_users, n_items)
        Stored non-zero entries are the relevant items; their values are the gains
        used by ``"ndcg_graded"`` (binary relevance for every other metric).
    train : scipy sparse matrix, shape (n_users, n_items), optional
        Stored entries are excluded from the ranking: they are never hits and never
        count as non-relevant items (also not for AUC).
    k : int, default 10
        Cut-off, >= 1; may exceed n_items (P@k still divides by k).
    metrics : str or sequence of str, optional
        Base names to compute, among ``METRIC_NAMES``: ``"precision"``,
        ``"recall"``, ``"map"`` (AP@k), ``"mrr"``, ``"ndcg"`` (binary gains),
        ``"hit_rate"``, ``"auc"``, ``"ndcg_graded"`` (exponential gains
        2^g - 1 from test's values). Default: ``DEFAULT_METRICS``, every metric but
        ``"auc"`` and ``"ndcg_graded"``. The AUC pass over each user's scores runs
        only when ``"auc"`` is named.
    n_relevant : array_like of int, shape (n_users,), optional
        Per-user count of relevant items used in the recall, AP and NDCG
        denominators, overriding the number of stored test items (it must not be
        smaller). Users with a count of 0 are not evaluated.
    n_threads : int, optional
        Threads for scoring and evaluation (default: all of Numba's threads). Numba's
        thread count is restored on return.
    block_size : int, optional
        Users per block (default: about 256 MiB of scores, within [256, 2048]; problems
        over 2**28 multiply-adds hold two blocks, one computed while the other is
        evaluated).
    per_user : bool, default False
        Return the per-user values instead of the means.
    user_ids : array_like, shape (n_users,), optional
        Labels for the per-user index (default: the user row indices).

    Returns
    -------
    dict or pandas.DataFrame
        With ``per_user=False``: a dict with one key per requested metric,
        ``"<name>@<k>"`` (by default ``"precision@10"``, ``"recall@10"``,
        ``"map@10"``, ``"mrr@10"``, ``"ndcg@10"``, ``"hit_rate@10"``; also
        ``"ndcg_graded@10"`` when asked) or ``"auc"`` (no cut-off; only when asked),
        each the mean over the test users (users with at least one relevant item),
        plus ``"n_users"`` (their number). AUC is averaged over the users where it is
        defined (at least one scoreable relevant item and one non-relevant eligible
        item); NaN when it is defined for no user. With ``per_user=True``: a
        DataFrame indexed by user with one column per requested metric (AUC NaN where
        undefined).

    Notes
    -----
    * Test items missing from the model (counted only through ``n_relevant``) can
      never be hit and are ignored by AUC.
    * Test entries that are also in train are excluded from the ranking but stay
      relevant in the denominators; a WarprecWarning reports them.
    * The ideal DCG of ``"ndcg_graded"`` uses the stored gains only.
    * Without test users the means are NaN, ``"n_users"`` is 0 and a
      WarprecWarning is emitted.
    * Cost: the matmul is O(n_test_users n_items d); top-k adds one pass over the
      scores (O(n_items log k) per user). AUC needs a second pass that locates every
      item's score among the user's sorted relevant scores (a SIMD compare for up
      to 16 relevant items, a branch-free binary search beyond), typically a few
      times the cost of the top-k pass, so it runs only when ``"auc"`` is in
      ``metrics``.

    Raises
    ------
    ValueError
        On a bad k, unknown metric names, mismatched shapes, non-finite factors, or
        an ``n_relevant`` smaller than the stored test items.
    TypeError
        On non-sparse test/train matrices.
    """
    user_factors, item_factors, item_biases = as_factor_arrays(
        user_factors, item_factors, item_biases)
    k = check_k(k)
    chosen = metric_selection(metrics)
    shape = (user_factors.shape[0], item_factors.shape[0])
    test = relevance_matrix(test, shape, "ndcg_graded" in chosen)
    train = None if train is None else as_csr(train, shape, "train")
    counts = relevant_counts(n_relevant, test)
    _warn_on_overlap(test, train)
    users = np.flatnonzero(counts > 0)
    if users.size == 0:
        warnings.warn("no user has a relevant test item; every metric is NaN",
                      WarprecWarning, stacklevel=2)
        values = np.empty((0, _kmetrics.N_METRICS))
        return _summarise(values, users, chosen, k, per_user, user_ids)
    check_finite(user_factors[users], "user_factors")
    check_finite(item_factors, "item_factors")
    check_finite(item_biases, "item_biases")
    values = per_user_values(user_factors, item_factors, item_biases, test, train,
                              counts, users, k, chosen, n_threads, block_size)
    return _summarise(values, users, chosen, k, per_user, user_ids)


if TYPE_CHECKING:  # the return type follows per_user
    @overload
    def evaluate(model: FactorRecommender, test: InteractionData,
                 train: InteractionData | None = None, k: int = 10, *,
                 metrics: str | Iterable[str] | None = None, n_threads: int | None = None,
                 per_user: Literal[False] = False, on_unknown: OnUnknown = "skip",
                 ) -> dict[str, float | int]: ...

    @overload
    def evaluate(model: FactorRecommender, test: InteractionData,
                 train: InteractionData | None = None, k: int = 10, *,
                 metrics: str | Iterable[str] | None = None, n_threads: int | None = None,
                 per_user: Literal[True], on_unknown: OnUnknown = "skip",
                 ) -> pd.DataFrame: ...

    @overload
    def evaluate(model: FactorRecommender, test: InteractionData,
                 train: InteractionData | None = None, k: int = 10, *,
                 metrics: str | Iterable[str] | None = None, n_threads: int | None = None,
                 per_user: bool = False, on_unknown: OnUnknown = "skip",
                 ) -> dict[str, float | int] | pd.DataFrame: ...


def evaluate(model: FactorRecommender, test: InteractionData,
             train: InteractionData | None = None, k: int = 10, *,
             metrics: str | Iterable[str] | None = None, n_threads: int | None = None,
             per_user: bool = False, on_unknown: OnUnknown = "skip",
             ) -> dict[str, float | int] | pd.DataFrame:
    """Top-k ranking metrics of a fitted model (see :func:`evaluate_factors`).

    The model converts ``test`` and ``train`` (raw-id DataFrames, interaction
    objects or sparse matrices, whatever it supports) into its index space through
    its ``_evaluation_inputs(test, train)`` method (``_evaluation_inputs(test, train,
    on_unknown)`` for an ``on_unknown`` other than ``"skip"``), which returns a dict with
    keys ``user_factors``, ``item_factors``, ``item_biases``, ``test``, ``train`` and
    ``n_relevant`` (and optionally ``user_ids``, labels for the per-user index, and
    ``fallback``, the unknown users of ``on_unknown="popular"``).

    Parameters
    ----------
    model : object
        A fitted model implementing ``_evaluation_inputs``.
    test, train
        Held-out and training interactions, in any form the model accepts.
    k : int, default 10
    metrics : str or sequence of str, optional
        Subset of ``METRIC_NAMES``; default ``DEFAULT_METRICS`` (no ``"auc"``, no
        ``"ndcg_graded"``).
    n_threads : int, optional
    per_user : bool, default False
        Return a DataFrame with one row per evaluated user instead of the means, indexed
        by the model's raw user ids when it was fit on raw ids (else by user index).
    on_unknown : {"skip", "error", "popular"}, default "skip"
        What to do with test rows of users the model was not fit on (raw-id test data).
        ``"skip"``: leave them out, with a :class:`~warprec.exceptions.WarprecWarning`
        that says how many. ``"error"``: a KeyError naming them. ``"popular"``:
        evaluate those users too, each with the ranking ``recommend(...,
        on_unknown="popular")`` gives them: the model's items by number of training
        positives (``model.item_popularity_``, ties by lower item index), nothing
        excluded (the model knows no history of theirs; their rows of ``train`` are
        left out as usual); a WarprecWarning says how many. The means and
        ``"n_users"`` then cover them, and the per-user frame is indexed by raw user
        id with a boolean ``fallback`` column marking them.

    Returns
    -------
    dict or pandas.DataFrame
        As :func:`evaluate_factors`.

    Raises
    ------
    TypeError
        If ``model`` has no ``_evaluation_inputs`` method.
    KeyError
        With ``on_unknown="error"``: a test user was not seen at fit time.
    """
    prepare = getattr(model, "_evaluation_inputs", None)
    if not callable(prepare):
        raise TypeError(
            f"evaluate needs a warprec model with an _evaluation_inputs method "
            f"(got {type(model).__name__})")
    k = check_k(k)  # fail on bad arguments before the model converts the data
    metric_selection(metrics)
    if n_threads is not None:
        check_positive_int(n_threads, "n_threads")
    validate_param("on_unknown", on_unknown, [ON_UNKNOWN])
    # (the hook's third argument only when it is not the default, which every model
    # implements without it)
    inputs = prepare(test, train) if on_unknown == "skip" else prepare(test, train,
                                                                       on_unknown)
    fallback = inputs.get("fallback")
    if fallback is not None:
        return _evaluate_with_fallback(inputs, fallback, k, metrics, n_threads, per_user)
    return evaluate_factors(
        inputs["user_factors"], inputs["item_factors"], inputs["item_biases"],
        inputs["test"], inputs.get("train"), k, metrics=metrics,
        n_relevant=inputs.get("n_relevant"), n_threads=n_threads, per_user=per_user,
        user_ids=inputs.get("user_ids"))


def evaluate_cold_items(model: FactorRecommender, test: pd.DataFrame,
                        item_features: pd.DataFrame, k: int = 10, *,
                        metrics: str | Iterable[str] | None = None,
                        n_threads: int | None = None) -> dict[str, float | int]:
    """Top-k ranking metrics on items the model was never trained on (item cold start).

    The candidates are the items of ``item_features``' rows, none of which the model
    knows: each is embedded from its features alone (``model.item_embeddings(
    item_features=...)``). Every test user the model knows ranks all the candidates
    (``U[u] @ V[i] + b[i]``; nothing to exclude: the user has no training positive on
    them), and the metrics are computed against the user's rows of ``test`` (see
    :func:`evaluate_factors`). Held-out items typically come from
    :func:`warprec.splitting.split_cold_items`.

    Parameters
    ----------
    model : FactorRecommender
        A fitted model fit on raw ids that embeds items from side features: a
        :class:`~warprec.WARPFactorizer` fit with ``item_features``, or
        :class:`~warprec.baselines.FeaturePopularityRecommender`.
    test : pandas.DataFrame
        ``user_id`` and ``item_id`` columns: the held-out positives, every item among
        ``item_features``' rows.
    item_features : pandas.DataFrame
        One row per candidate item: an ``item_id`` column and the model's feature
        columns.
    k : int, default 10
    metrics : str or sequence of str, optional
        As :func:`evaluate`.
    n_threads : int, optional

    Returns
    -------
    dict
        As :func:`evaluate_factors` (``"n_users"``: the test users evaluated), plus
        ``"n_items"``: the number of candidates. Test users the model does not know are
        left out, with a :class:`~warprec.exceptions.WarprecWarning` that says how many.

    Raises
    ------
    ValueError
        A candidate is an item the model was trained on, ``item_features`` repeats an
        item, a test item has no row in ``item_features``, or the model was fit on
        indices rather than raw ids.
    """
    k, user_ids, item_ids = _check_cold_arguments(model, test, item_features, "item_features",
                                                  k, metrics, n_threads)
    candidates, columns = _cold_index(item_features, "item", item_ids, test,
                                      "split_cold_items")
    rows = pd.Index(user_ids).get_indexer(test["user_id"])
    unknown = rows < 0
    if unknown.any():
        warnings.warn(f"evaluate_cold_items: {int(unknown.sum())} test rows of "
                      f"{pd.unique(test['user_id'][unknown]).size} users the model was not "
                      f"fit on are left out.", WarprecWarning, stacklevel=2)
    users, user_rows = np.unique(rows[~unknown], return_inverse=True)
    relevant = _relevance(user_rows, columns[~unknown], (users.size, len(candidates)))
    factors, biases = model.item_embeddings(item_features=item_features)
    user_factors = model.user_embeddings()[users]
    out = cast("dict[str, float | int]", evaluate_factors(
        user_factors, factors, biases, relevant, None, k, metrics=metrics, n_threads=n_threads))
    return {**out, "n_items": len(candidates)}


def evaluate_cold_users(model: FactorRecommender, test: pd.DataFrame,
                        user_features: pd.DataFrame, k: int = 10, *,
                        metrics: str | Iterable[str] | None = None,
                        n_threads: int | None = None) -> dict[str, float | int]:
    """Top-k ranking metrics for users the model was never trained on (user cold start).

    Each test user, none of whom the model knows, is embedded from its row of
    ``user_features`` alone (``model.user_embeddings(user_features=...)``) and ranks
    every item the model knows (nothing to exclude: the user has no training history);
    the metrics are computed against the user's rows of ``test`` (see
    :func:`evaluate_factors`). Held-out users typically come from
    :func:`warprec.splitting.split_cold_users`.

    Parameters
    ----------
    model : FactorRecommender
        A fitted model fit on raw ids that embeds users from side features (a
        :class:`~warprec.WARPFactorizer` fit with ``user_features``), or a popularity
        baseline (the same ranking for every user).
    test : pandas.DataFrame
        ``user_id`` and ``item_id`` columns: the cold users' held-out positives.
    user_features : pandas.DataFrame
        A ``user_id`` column and the model's feature columns, a row for every test user.
    k : int, default 10
    metrics : str or sequence of str, optional
        As :func:`evaluate`.
    n_threads : int, optional

    Returns
    -------
    dict
        As :func:`evaluate_factors` (``"n_users"``: the cold users evaluated). Test rows
        on items the model does not know cannot be ranked: they are left out, with a
        :class:`~warprec.exceptions.WarprecWarning` that says how many.

    Raises
    ------
    ValueError
        A test user is a user the model was trained on, has no row in
        ``user_features``, ``user_features`` repeats a user, or the model was fit on
        indices rather than raw ids.
    """
    k, user_ids, item_ids = _check_cold_arguments(model, test, user_features, "user_features",
                                                  k, metrics, n_threads)
    features = user_features[user_features["user_id"].isin(test["user_id"])]
    rows_of, rows = _cold_index(features, "user", user_ids, test, "split_cold_users")
    columns = pd.Index(item_ids).get_indexer(test["item_id"])
    unknown = columns < 0
    if unknown.any():
        warnings.warn(f"evaluate_cold_users: {int(unknown.sum())} test rows on items the "
                      f"model was not fit on are left out (it cannot rank them).",
                      WarprecWarning, stacklevel=2)
    relevant = _relevance(rows[~unknown], columns[~unknown], (len(rows_of), len(item_ids)))
    user_factors = model.user_embeddings(user_features=features)
    factors, biases = model.item_embeddings()
    return cast("dict[str, float | int]", evaluate_factors(
        user_factors, factors, biases, relevant, None, k, metrics=metrics, n_threads=n_threads))


def _check_cold_arguments(model: FactorRecommender, test: pd.DataFrame,
                          features: pd.DataFrame, name: str, k: int,
                          metrics: str | Iterable[str] | None,
                          n_threads: int | None) -> tuple[int, NDArray[Any], NDArray[Any]]:
    """The checks :func:`evaluate_cold_items` and :func:`evaluate_cold_users` share;
    returns the checked ``k`` and the model's raw user and item ids."""
    k = check_k(k)
    metric_selection(metrics)
    if n_threads is not None:
        check_positive_int(n_threads, "n_threads")
    id_column = "item_id" if name == "item_features" else "user_id"
    for frame, label, columns in ((test, "test", ("user_id", "item_id")),
                                  (features, name, (id_column,))):
        if not isinstance(frame, pd.DataFrame) or not set(columns) <= set(frame.columns):
            raise ValueError(f"{label} must be a DataFrame with {' and '.join(columns)} "
                             f"columns.")
    user_ids, item_ids = model.user_ids_, model.item_ids_
    if user_ids is None or item_ids is None:
        raise ValueError("cold-start evaluation needs a model fit on raw ids (a DataFrame), "
                         "so that test rows and feature rows can name users and items.")
    return k, user_ids, item_ids


def _cold_index(features: pd.DataFrame, kind: str, known_ids: NDArray[Any],
                test: pd.DataFrame, split: str) -> tuple[pd.Index, NDArray[np.int64]]:
    """The cold entities (the rows of ``features``, of ``kind``) and each test row's
    position among them, after checking that none repeats, none is known to the model
    and every test row's entity has a row."""
    column = f"{kind}_id"
    index = pd.Index(features[column])
    if index.has_duplicates:
        raise ValueError(f"{kind}_features repeats {kind}s (first: "
                         f"{index[index.duplicated()][0]!r}); give one row each.")
    known = pd.Index(known_ids).get_indexer(index) >= 0
    if known.any():
        raise ValueError(f"{int(known.sum())} of the cold {kind}s are {kind}s the model was "
                         f"trained on (first: {index[known][0]!r}); cold {kind}s are {kind}s "
                         f"it never saw: hold them out with {split}.")
    positions = index.get_indexer(test[column])
    if (positions < 0).any():
        missing = test[column].to_numpy()[positions < 0]
        raise ValueError(f"{int((positions < 0).sum())} test rows name {kind}s without a row "
                         f"in {kind}_features (first: {missing[0]!r}); every cold {kind} "
                         f"needs its features.")
    return index, positions.astype(np.int64)


def _relevance(rows: NDArray[np.int64], columns: NDArray[np.int64],
               shape: tuple[int, int]) -> sp.csr_matrix:
    """The binary test matrix of (row, column) pairs (repeated pairs count once)."""
    relevant = sp.csr_matrix((np.ones(rows.size, np.float32), (rows, columns)), shape=shape)
    relevant.sum_duplicates()
    relevant.data[:] = 1.0
    return relevant


def _evaluate_with_fallback(inputs: dict[str, Any], fallback: dict[str, Any], k: int,
                            metrics: str | Iterable[str] | None, n_threads: int | None,
                            per_user: bool) -> dict[str, float | int] | pd.DataFrame:
    """:func:`evaluate` with ``on_unknown="popular"`` and unknown test users: the known
    users' values as usual, the unknown users' from the popularity ranking (zero user
    factors, the counts as item biases, nothing excluded), averaged together."""
    chosen = metric_selection(metrics)
    test = inputs["test"]
    counts = relevant_counts(inputs.get("n_relevant"), test)
    parts = []
    if (counts > 0).any():
        parts.append(evaluate_factors(
            inputs["user_factors"], inputs["item_factors"], inputs["item_biases"], test,
            inputs.get("train"), k, metrics=chosen, n_relevant=counts, n_threads=n_threads,
            per_user=True, user_ids=inputs.get("user_ids")))
    n_items = np.shape(inputs["item_factors"])[0]
    n_unknown = len(fallback["users"])
    popular = evaluate_factors(
        np.zeros((n_unknown, 1), np.float32), np.zeros((n_items, 1), np.float32),
        fallback["popularity"], fallback["test"], None, k, metrics=chosen,
        n_relevant=fallback["n_relevant"], n_threads=n_threads, per_user=True,
        user_ids=fallback["users"])
    frames = [cast(pd.DataFrame, p) for p in parts + [popular]]   # (per_user=True)
    frame = pd.concat([p.assign(fallback=flag) for p, flag in
                       zip(frames, [False] * len(parts) + [True])])
    if per_user:
        return frame
    result: dict[str, float | int] = {}
    for name in chosen:
        column = frame[metric_key(name, k)].to_numpy(dtype=np.float64)
        defined = column[~np.isnan(column)]
        result[metric_key(name, k)] = _mean(defined) if defined.size else float("nan")
    result["n_users"] = len(frame)
    return result
