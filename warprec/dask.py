"""warprec on Dask: training, batch recommendation and evaluation beyond one machine.

* :func:`fit` trains a :class:`~warprec.WARPFactorizer` on the workers of a cluster: one
  shard of users per worker, the item side combined after every epoch (the scheme, its
  costs and limits: docs/scaling.md; the code: ``warprec/_dask_fit.py``);
* :func:`recommend` returns the top-k items of every user of a partitioned user list
  as a lazy ``dask.dataframe.DataFrame`` (write it with ``.to_parquet(path)``);
* :func:`evaluate` computes the numbers :func:`warprec.metrics.evaluate` computes, from
  partitioned test (and train) interactions.

The model is not pickled: its arrays (item factors, biases and ids; user factors and
ids; the items to exclude) go to the workers once, in small containers (scattered to
every worker with ``client.scatter(..., broadcast=True)`` when a client is given, as
one graph key each otherwise), and every partition runs warprec's own batch top-k
(:meth:`warprec.WARPFactorizer.recommend`'s code path) and evaluation kernels.

Needs the optional dependencies: ``pip install 'warprec[dask]'``.
"""

from __future__ import annotations

import itertools
import math
import os
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import scipy.sparse as sp

try:
    import dask
    import dask.dataframe as dd
except ImportError as exc:  # pragma: no cover - exercised without the extra only
    raise ImportError(
        "warprec.dask needs Dask and pyarrow, which warprec does not install by default: "
        "pip install 'warprec[dask]'") from exc

from ._base import (FactorRecommender, UnknownUsers, raw_ids, report_unknown_test_users,
                    top_frame)
from ._dask_fit import fit
from ._inputs import ON_UNKNOWN, IdMap, check_k, validate_param
from ._kernels.config import NUMBA_SCORING_MACS
from ._scoring import as_csr, as_factor_arrays, check_finite
from .evaluation import (
    KERNEL_COLUMN,
    metric_key,
    metric_selection,
    per_user_values,
    relevance_matrix,
    relevant_counts,
    sparsity_pattern,
)
from .exceptions import WarprecWarning

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, TypeAlias

    from dask.delayed import Delayed
    from dask.typing import DaskCollection
    from distributed import Client, Future
    from numpy.typing import NDArray
    from typing_extensions import TypeIs

    from ._inputs import IdMap as _IdMap
    from ._typing import Float32Array, Int64Array, OnUnknown

    #: A shipped value (:func:`_ship`): scattered to the workers, or one graph key.
    Shipped: TypeAlias = Future[Any] | Delayed
    #: :func:`_known_rows` of one partition: user and item indices, gains, the number of
    #: rows of unknown users and their distinct ids.
    KnownRows: TypeAlias = tuple[Int64Array, Int64Array, NDArray[np.float32], int,
                                 NDArray[Any]]

__all__ = ["evaluate", "fit", "recommend"]

#: The gain column of graded test data, as the models' evaluation glue picks it.
_GAIN_COLUMNS = ("rating", "weight")

#: What the functions take as partitioned input: a dask or pandas frame, or a Parquet path.
FrameLike = dd.DataFrame | dd.Series | pd.DataFrame | pd.Series | str | os.PathLike


# ---------------------------------------------------------------------- the shipped arrays
class _Side:
    """One side of a fitted model (factors, biases, raw ids; for items their training
    positives, the ranking of ``on_unknown="popular"``): what the workers receive.

    A plain container of arrays (no estimator), built once on the client; its raw id ->
    index map is built once per worker, on first use.
    """

    __slots__ = ("factors", "biases", "ids", "popularity", "_map")

    def __init__(self, factors: Float32Array, biases: Float32Array | None,
                 ids: NDArray[Any] | None, popularity: NDArray[np.int64] | None = None,
                 ) -> None:
        self.factors, self.biases, self.ids = factors, biases, ids
        self.popularity = popularity
        self._map: _IdMap | None = None

    def id_map(self) -> _IdMap:
        if self._map is None:
            assert self.ids is not None, "a side without raw ids has no id map"
            self._map = IdMap(self.ids)
        return self._map

    def __getstate__(self) -> tuple[Float32Array, Float32Array | None, NDArray[Any] | None,
                                    NDArray[np.int64] | None]:
        # the map is rebuilt on the worker, not sent
        return self.factors, self.biases, self.ids, self.popularity

    def __setstate__(self, state: tuple[Float32Array, Float32Array | None,
                                        NDArray[Any] | None, NDArray[np.int64] | None],
                     ) -> None:
        self.factors, self.biases, self.ids, self.popularity = state
        self._map = None


class _Seen:
    """Items to exclude: a users x items CSR matrix in the model's index space, with how
    many rows (and which distinct users) unknown to the model were left out of it."""

    __slots__ = ("matrix", "unknown_rows", "unknown_users")

    def __init__(self, matrix: sp.csr_matrix, unknown_rows: int = 0,
                 unknown_users: NDArray[Any] | None = None) -> None:
        self.matrix = matrix
        self.unknown_rows = unknown_rows
        self.unknown_users = (np.empty(0, dtype=object) if unknown_users is None
                              else unknown_users)


class _Arrays(FactorRecommender):
    """A model made of the shipped arrays only, so that every partition runs the fitted
    model's own inference (:meth:`FactorRecommender.recommend` and the evaluation glue).
    Its warnings about unknown users are given once, on the client."""

    reports_unknown_users = False

    def __init__(self, users: _Side, items: _Side, seen: sp.csr_matrix | None = None,
                 n_threads: int | None = None) -> None:
        assert items.biases is not None, "the item side has biases"
        self.user_factors_, self.user_ids_ = users.factors, users.ids
        self.item_factors_, self.item_biases_, self.item_ids_ = (items.factors, items.biases,
                                                                 items.ids)
        if seen is not None:   # (None: no items to exclude, and none read)
            self.train_matrix_ = seen
        self.n_threads = n_threads
        self._popularity = items.popularity
        # the id maps built once per worker (FactorRecommender._id_map's cache)
        for kind, side in (("user", users), ("item", items)):
            if side.ids is not None:
                self.__dict__[f"_{kind}_map"] = (side.ids, side.id_map())

    @property
    def item_popularity_(self) -> NDArray[np.int64]:
        """The shipped model's (``train_matrix_`` here may hold some users' rows only)."""
        assert self._popularity is not None, "the popularity of the items was not shipped"
        return self._popularity


def _sides(model: FactorRecommender) -> tuple[_Side, _Side]:
    """The user and item sides of a fitted model, as float32 arrays (no copies of the
    fitted arrays, which are float32 and contiguous already)."""
    if not isinstance(model, FactorRecommender):
        raise TypeError(f"model must be a fitted warprec model such as "
                        f"warprec.WARPFactorizer; got {type(model).__name__}.")
    model.n_users_   # (a NotFittedError for an unfitted model)
    user_factors, item_factors, item_biases = as_factor_arrays(
        model.user_factors_, model.item_factors_, model.item_biases_)
    return (_Side(user_factors, None, model.user_ids_),
            _Side(item_factors, item_biases, model.item_ids_, model.item_popularity_))


def _ship(value: object, client: Client | None) -> Shipped:
    """``value`` as something every task of the graph can take as an argument, sent once:
    scattered to every worker with a client, a single graph key otherwise."""
    if client is not None:
        return client.scatter(value, broadcast=True, hash=False)
    return dask.delayed(value, pure=False)


def _compute(value: DaskCollection, client: Client | None) -> Any:
    if client is not None:
        return client.compute(value).result()
    return dask.compute(value)[0]


# ---------------------------------------------------------------------- inputs
def _is_path(value: object) -> TypeIs[str | os.PathLike[str]]:
    return isinstance(value, (str, os.PathLike))


def _as_dask_frame(data: FrameLike, name: str, columns: Sequence[str],
                   optional: Iterable[str] = ()) -> dd.DataFrame:
    """``data`` (dask or pandas DataFrame, or a Parquet path) as a dask DataFrame of the
    required ``columns`` plus those of ``optional`` it has."""
    if _is_path(data):
        frame = dd.read_parquet(data)
    elif isinstance(data, dd.DataFrame):
        frame = data
    elif isinstance(data, pd.DataFrame):
        frame = dd.from_pandas(data, npartitions=1, sort=False)
    else:
        raise TypeError(f"{name} must be a dask or pandas DataFrame with columns "
                        f"{', '.join(columns)}, or the path of a Parquet file or directory "
                        f"holding them; got {type(data).__name__}.")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise KeyError(f"{name} needs columns {list(columns)}; it lacks {missing} (found "
                       f"{list(frame.columns)}). Rename the columns, e.g. "
                       f"frame.rename(columns={{'user': 'user_id', 'item': 'item_id'}}).")
    return frame[list(columns) + [c for c in optional if c in frame.columns]]


def _user_series(users: FrameLike) -> dd.Series:
    """The requested users as a dask Series (a DataFrame gives its ``user_id`` column)."""
    if isinstance(users, pd.Series):
        return dd.from_pandas(users, npartitions=1, sort=False)
    if isinstance(users, dd.Series):
        return users
    if _is_path(users) or isinstance(users, (dd.DataFrame, pd.DataFrame)):
        return _as_dask_frame(users, "users", ["user_id"])["user_id"]
    raise TypeError(f"users must be a dask or pandas Series of user ids, a DataFrame with a "
                    f"user_id column, or the path of a Parquet file or directory with one; got "
                    f"{type(users).__name__}. For a list or array, pass "
                    f"dask.dataframe.from_pandas(pandas.Series(ids), npartitions=...).")


def _check_raw_ids(model: FactorRecommender, name: str) -> None:
    if model.user_ids_ is None:
        raise TypeError(f"{name} has raw ids (user_id, item_id) but the model was fit on a "
                        "matrix, so it knows users and items by index only; fit it on a "
                        "DataFrame of raw ids.")


def _known_rows(frame: pd.DataFrame, users: _Side, items: _Side,
                gain_column: str | None) -> KnownRows:
    """The rows of ``frame`` whose user and item the model knows, in its index space:
    ``(user index, item index, gain)``, plus the number of rows of unknown users and
    their distinct ids. Ids are looked up as the models' evaluation glue looks them up."""
    u = users.id_map().indexer(frame["user_id"], bools_as_ints=True)
    i = items.id_map().indexer(frame["item_id"], bools_as_ints=True)
    unknown = u < 0
    unknown_users = pd.unique(frame["user_id"][unknown].to_numpy(dtype=object))
    keep = ~unknown & (i >= 0)
    gains = (np.ones(int(keep.sum()), np.float32) if gain_column is None
             else frame[gain_column].to_numpy(dtype=np.float32)[keep])
    return u[keep], i[keep], gains, int(unknown.sum()), unknown_users


def _seen_matrix(parts: Sequence[KnownRows], n_users: int, n_items: int) -> _Seen:
    """One :class:`_Seen` from the :func:`_known_rows` of every partition: a duplicated
    (user, item) pair keeps its largest gain, as in the models' evaluation glue."""
    uu = np.concatenate([p[0] for p in parts] or [np.empty(0, np.int64)])
    ii = np.concatenate([p[1] for p in parts] or [np.empty(0, np.int64)])
    gg = np.concatenate([p[2] for p in parts] or [np.empty(0, np.float32)])
    order = np.lexsort((-gg, ii, uu))
    uu, ii, gg = uu[order], ii[order], gg[order]
    first = np.ones(uu.size, bool)
    first[1:] = (uu[1:] != uu[:-1]) | (ii[1:] != ii[:-1])
    matrix = sp.csr_matrix((gg[first], (uu[first], ii[first])), shape=(n_users, n_items))
    ids = [p[4] for p in parts if len(p[4])]
    return _Seen(matrix, sum(p[3] for p in parts),
                 pd.unique(np.concatenate(ids)) if ids else None)


def _rows_only(matrix: sp.csr_matrix, rows: NDArray[np.integer[Any]]) -> sp.csr_matrix:
    """``matrix`` with only the given rows kept (the others empty): what top-k reads of
    the exclusion matrix for these users, without copying every other user's items."""
    keep = np.zeros(matrix.shape[0], dtype=bool)
    keep[rows] = True
    counts = np.where(keep, np.diff(matrix.indptr), 0)
    indptr = np.zeros(matrix.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    take = (np.arange(indptr[-1], dtype=np.int64)
            + np.repeat(matrix.indptr[:-1][keep] - indptr[:-1][keep], counts[keep]))
    return sp.csr_matrix((matrix.data[take], matrix.indices[take], indptr),
                         shape=matrix.shape)


def _rows_to_score(n_rows: int, n_total: int, n_items: int, d: int) -> int:
    """How many user rows a partition of ``n_rows`` users must score to take the scoring
    path of one call for all ``n_total`` users.

    :func:`warprec.scoring.topk_items` (and the evaluation kernel) score a small problem,
    up to ``NUMBA_SCORING_MACS`` multiply-adds over *all* the requested users, with a
    Numba kernel and a larger one with BLAS; the two float32 sums can differ in the last
    bit. A partition of a large request whose own problem is small is therefore scored
    with enough extra rows (repeats of its first user, dropped afterwards) to take the
    BLAS path, as the single call does.
    """
    per_row = n_items * d
    if n_total * per_row <= NUMBA_SCORING_MACS or n_rows * per_row > NUMBA_SCORING_MACS:
        return n_rows
    return NUMBA_SCORING_MACS // per_row + 1


def _padded(values: NDArray[Any], n_rows: int) -> NDArray[Any]:
    """``values`` followed by repeats of its first entry, ``n_rows`` in all."""
    return np.concatenate([values, np.repeat(values[:1], n_rows - len(values))])


# ---------------------------------------------------------------------- recommend
def _recommend_partition(part: pd.Series, users: _Side, items: _Side, seen: _Seen | None,
                         k: int, exclude_seen: bool, n_threads: int | None,
                         dtypes: dict[Any, Any], n_total: int,
                         on_unknown: OnUnknown) -> pd.DataFrame:
    """The top-k frame of one partition of user ids, by the model's own recommend."""
    if len(part) == 0:
        return pd.DataFrame({c: pd.Series([], dtype=d) for c, d in dtypes.items()})
    values = part.to_numpy()
    matrix = None if seen is None else seen.matrix
    model = _Arrays(users, items, matrix, n_threads)
    rows = None
    try:   # the same lookup recommend makes (which raises for unknown ids by default)
        rows = model.requested_users(values, on_unknown)
    except (KeyError, TypeError, ValueError):
        pass
    else:
        if matrix is not None:
            model.train_matrix_ = _rows_only(matrix, rows[rows >= 0])
    n_rows = _rows_to_score(len(values), int(n_total), model.n_items_,
                            users.factors.shape[1])
    if n_rows == len(values):
        frame = model.recommend(values, k=k, exclude_seen=exclude_seen, as_frame=True,
                                on_unknown=on_unknown)
    else:
        top, scores = model.recommend(_padded(values, n_rows), k=k,
                                      exclude_seen=exclude_seen, on_unknown=on_unknown)
        top, scores = top[:len(values)], scores[:len(values)]
        # recommend's frame of these users: unfilled slots are those scored -inf
        fallback = None if rows is None or on_unknown != "popular" else rows < 0
        frame = top_frame(values, False, np.where(np.isneginf(scores), -1, 0), top,
                          scores, fallback)
    if dict(frame.dtypes) != dtypes:
        frame = frame.astype(dtypes)
    return frame


def _output_meta(model: FactorRecommender, user_dtype: Any,
                 on_unknown: OnUnknown) -> pd.DataFrame:
    """The (empty) output frame with the dtypes the model's recommend gives ids of
    ``user_dtype``: made by the code of ``recommend(..., as_frame=True)`` from a sample."""
    from dask.dataframe.utils import meta_nonempty

    labels = meta_nonempty(pd.Series([], dtype=user_dtype)).to_numpy()[:1]
    index = np.zeros((1, 1), dtype=np.int32)
    frame = top_frame(labels, False, index, raw_ids(index, model.item_ids_),
                      np.zeros((1, 1), dtype=np.float32),
                      np.zeros(1, dtype=bool) if on_unknown == "popular" else None)
    return frame.iloc[:0]


def _count_unknown(part: pd.Series, users: _Side) -> pd.Series:
    """``[rows, distinct ids]`` of the user ids of one partition the model does not know."""
    values = part.to_numpy()
    model = _Arrays(users, _Side(np.zeros((0, users.factors.shape[1]), np.float32),
                                 np.zeros(0, np.float32), None))
    unknown = model.requested_users(values, "skip") < 0
    return pd.Series([values[unknown]], dtype=object)


def recommend(model: FactorRecommender, users: FrameLike, k: int = 10,
              exclude_seen: bool = True, client: Client | None = None,
              interactions: FrameLike | None = None,
              on_unknown: OnUnknown = "error") -> dd.DataFrame:
    """Top-k items of every user of a partitioned user list, as a Dask DataFrame.

    Every partition runs ``model.recommend(ids, k=k, exclude_seen=exclude_seen,
    as_frame=True)``'s code path on the model's arrays (the model itself is not
    pickled), so the rows are those of a single call for the same users: same items,
    same order, same scores.

    Parameters
    ----------
    model : warprec.WARPFactorizer
        A fitted model (any fitted warprec factor model).
    users : dask or pandas Series or DataFrame, str or os.PathLike
        Raw user ids (indices for a model fit on a matrix): a Series, a DataFrame's
        ``user_id`` column, or the ``user_id`` column of a Parquet file or directory.
        Repeated ids are recommended for again. A pandas object is one partition: split
        it with ``dask.dataframe.from_pandas(users, npartitions=...)``.
    k : int, default 10
        Items per user (clipped to the number of items).
    exclude_seen : bool, default True
        Leave out each user's seen items: those of ``interactions`` if given, else the
        positives the model was fit on.
    client : distributed.Client, optional
        Scatter the model's arrays to every worker of this client once. Without one, they
        are one key of the task graph each. Compute the result on the same scheduler.
    interactions : dask or pandas DataFrame, str or os.PathLike, optional
        Seen items (columns ``user_id``, ``item_id``; a DataFrame or a Parquet path) to
        exclude instead of the training positives. Rows of users or items the model does
        not know are ignored (they cannot be recommended or requested).
    on_unknown : {"error", "skip", "popular"}, default "error"
        Requested users the model was not fit on, as in ``model.recommend``:
        ``"error"`` fails the computation with a KeyError; ``"skip"`` gives them no
        rows; ``"popular"`` gives them the most popular items and adds the boolean
        column ``fallback`` (True on their rows). With ``"skip"`` or ``"popular"`` the
        user ids are read once more, at once, to count the unknown ones for the
        :class:`~warprec.exceptions.WarprecWarning` that says how many.

    Returns
    -------
    dask.dataframe.DataFrame
        Columns ``user_id, item_id, score, rank`` (and ``fallback`` with
        ``on_unknown="popular"``; rank 1 = best; one row per filled
        slot), one output partition per input partition, in the input's order. Each
        partition has its own ``0..n-1`` index (as ``model.recommend`` gives for that
        partition's users). Lazy: ``.compute()`` it, or write it with
        ``.to_parquet(path)``.

    Raises
    ------
    TypeError, KeyError
        At once: on inputs of the wrong type or without the needed columns, or an
        unfitted model.
    warprec.exceptions.InvalidParameterError
        At once: on a bad ``k``.
    KeyError
        When the result is computed, with ``on_unknown="error"``: a partition holds user
        ids the model was not fit on (the error of ``model.recommend``, listing them).
        Nothing is dropped silently.

    Notes
    -----
    The workers receive the item factors, biases and ids, the user factors and ids and
    the matrix of seen items (users x items, built once from ``interactions`` if given),
    each once; a partition reads only its users' rows. Scoring uses the model's
    ``n_threads`` within each task.

    Why the rows are identical: the scores are float32 sums whose last bit depends on how
    they are computed, and warprec's top-k scores a request of at most
    ``NUMBA_SCORING_MACS`` multiply-adds (users x items x factors) with a Numba kernel,
    a larger one with BLAS. The number of users is therefore counted first (one pass over
    the input's partitions, inside the same task graph), and a partition that is small
    but belongs to a large request is scored together with repeats of its first user
    (dropped afterwards) so that it takes the BLAS path of the single call.
    """
    user_side, item_side = _sides(model)
    k = check_k(k)
    validate_param("on_unknown", on_unknown, [ON_UNKNOWN])
    series = _user_series(users)
    seen = None
    if exclude_seen:
        if interactions is None:
            seen = _ship(_Seen(model.train_matrix_), client)
        else:
            _check_raw_ids(model, "interactions")
    meta = _output_meta(model, series.dtype, on_unknown)
    shipped_users, shipped_items = _ship(user_side, client), _ship(item_side, client)
    if on_unknown != "error":
        _warn_unknown_requested(series, shipped_users, on_unknown, client)
    if exclude_seen and interactions is not None:
        frame = _as_dask_frame(interactions, "interactions", ["user_id", "item_id"])
        parts = [dask.delayed(_known_rows, pure=True)(part, shipped_users, shipped_items, None)
                 for part in frame.to_delayed()]
        seen = dask.delayed(_seen_matrix, pure=True)(parts, model.n_users_, model.n_items_)
    return series.map_partitions(
        _recommend_partition, shipped_users, shipped_items, seen, k, exclude_seen,
        model.n_threads, dict(meta.dtypes), series.map_partitions(len).sum(), on_unknown,
        meta=meta, clear_divisions=True, align_dataframes=False)


def _warn_unknown_requested(series: dd.Series, users: Shipped, on_unknown: OnUnknown,
                            client: Client | None) -> None:
    """The warning ``model.recommend`` gives about requested users it does not know, from
    a pass over every partition of the user ids."""
    parts = series.map_partitions(_count_unknown, users, meta=(None, object))
    found = [ids for ids in _compute(parts, client).tolist() if len(ids)]
    if not found:
        return
    values = np.concatenate(found)
    shown = ", ".join(repr(v) for v in values[:5].tolist())
    what = ("got no recommendations" if on_unknown == "skip" else
            "got the most popular items instead of personal recommendations")
    warnings.warn(f"{values.size} requested user(s) unseen at fit time {what} "
                  f"(on_unknown={on_unknown!r}): {shown}.", WarprecWarning, stacklevel=3)


# ---------------------------------------------------------------------- evaluate
def _prepare_partition(part: pd.DataFrame, users: _Side, items: _Side, train: _Seen | None,
                       chosen: Sequence[str], on_unknown: OnUnknown) -> dict[str, Any]:
    """One partition of test rows (each test user in one partition) in the model's index
    space, as :func:`warprec.metrics.evaluate` prepares the whole test set: the rows and
    relevant counts of the users it evaluates, plus the counts behind its warnings (and,
    with ``on_unknown="popular"``, the rows and counts of its unknown users)."""
    model = _Arrays(users, items)
    # the models' evaluation glue, then evaluate_factors' steps (their warnings are
    # raised once, on the client, from the counts of every partition); rows of unknown
    # users are left out of the matrix, counted, and reported on the client
    test, extra, unknown = model.index_space(part, "test", True,
                                             fallback=on_unknown == "popular")
    if on_unknown == "error":
        report_unknown_test_users(unknown, on_unknown)   # (raises if there are any)
    n_relevant = np.diff(test.indptr).astype(np.int64) + extra
    shape = (model.n_users_, model.n_items_)
    graded = "ndcg_graded" in chosen
    test = relevance_matrix(test, shape, graded)
    fallback = None
    if unknown.test is not None:
        fallback = (relevance_matrix(unknown.test, (len(unknown.users), shape[1]), graded),
                    unknown.n_relevant)
    counts = relevant_counts(n_relevant, test)
    overlap = 0
    if train is not None and test.nnz and train.matrix.nnz:
        both = sparsity_pattern(test).multiply(sparsity_pattern(train.matrix))
        overlap = int(both.count_nonzero())
    evaluated = np.flatnonzero(counts > 0)
    return dict(evaluated=evaluated, test=test[evaluated], counts=counts[evaluated],
                overlap=overlap, unknown_rows=unknown.n_rows, unknown_users=unknown.users,
                fallback=fallback)


def _exact_sum(values: Sequence[float]) -> list[float]:
    """Floats whose exact sum is the exact sum of ``values`` (a list of finite floats):
    the exactly rounded sum, then the exactly rounded remainders until nothing is left
    (usually one to three floats). Adding such lists of every partition with
    :func:`math.fsum` gives the exactly rounded sum of all the values, whatever the
    partitioning: what :func:`warprec.metrics.evaluate` divides by the number of users."""
    parts: list[float] = []
    while True:   # ends: each remainder is below half an ulp of the previous one
        rest = math.fsum(itertools.chain(values, [-p for p in parts]))
        if rest == 0.0:
            return parts
        parts.append(rest)


def _evaluate_partition(prepared: dict[str, Any], users: _Side, items: _Side,
                        train: _Seen | None, k: int, chosen: Sequence[str],
                        n_total: int) -> dict[str, Any]:
    """Per metric, the exact sum of the per-user values of one partition's users (as
    :func:`_exact_sum` floats) and the number of users where the metric is defined (AUC
    is not for every user)."""
    evaluated = prepared["evaluated"]
    item_biases = items.biases
    assert item_biases is not None, "the item side has biases"
    sums: dict[str, list[float]] = {name: [] for name in chosen}
    defined = dict.fromkeys(chosen, 0)
    if evaluated.size:
        # evaluate_factors' checks and kernel, on this partition's users only
        user_factors = users.factors[evaluated]
        check_finite(user_factors, "user_factors")
        check_finite(items.factors, "item_factors")
        check_finite(item_biases, "item_biases")
        n_rows = _rows_to_score(evaluated.size, n_total, items.factors.shape[0],
                                user_factors.shape[1])
        rows = _padded(np.arange(evaluated.size), n_rows)
        values = per_user_values(user_factors, items.factors, item_biases,

                                  prepared["test"],
                                  None if train is None else train.matrix[evaluated],
                                  prepared["counts"], rows, k, chosen, None,
                                  None)[:evaluated.size]
        for name in chosen:
            column = values[:, KERNEL_COLUMN[name]]
            column = column[~np.isnan(column)]
            sums[name], defined[name] = _exact_sum(column.tolist()), int(column.size)
    n_users = int(evaluated.size)
    if prepared["fallback"] is not None:
        # the unknown users, ranked by popularity (zero user factors, the counts as
        # biases, nothing excluded): evaluate's fallback, the counts as float32 biases
        # as evaluate_factors converts them (counts above 2**24 tie there as here)
        test, counts = prepared["fallback"]
        n_unknown, n_items = test.shape
        values = per_user_values(np.zeros((n_unknown, 1), np.float32),
                                 np.zeros((n_items, 1), np.float32),
                                 np.asarray(items.popularity, dtype=np.float32),
                                 test, None, counts, np.arange(n_unknown), k, chosen, None,
                                 None)
        for name in chosen:
            column = values[:, KERNEL_COLUMN[name]]
            column = column[~np.isnan(column)]
            sums[name] = _exact_sum(sums[name] + column.tolist())
            defined[name] += int(column.size)
        n_users += n_unknown
    return dict(sums=sums, defined=defined, n_users=n_users,
                overlap=prepared["overlap"], unknown_rows=prepared["unknown_rows"],
                unknown_users=prepared["unknown_users"])


def _combine(parts: Sequence[dict[str, Any]], train: _Seen | None) -> dict[str, Any]:
    """The partial sums of every partition, added up: per metric, the exactly rounded sum
    (:func:`math.fsum`) of all the per-user values."""
    names = list(parts[0]["sums"]) if parts else []
    ids = [p["unknown_users"] for p in parts if len(p["unknown_users"])]
    return dict(
        sums={n: math.fsum(x for p in parts for x in p["sums"][n]) for n in names},
        defined={n: sum(p["defined"][n] for p in parts) for n in names},
        n_users=sum(p["n_users"] for p in parts),
        overlap=sum(p["overlap"] for p in parts),
        unknown_rows=sum(p["unknown_rows"] for p in parts),
        unknown_users=pd.unique(np.concatenate(ids)) if ids else np.empty(0, object),
        train_unknown_rows=0 if train is None else train.unknown_rows,
        train_n_unknown_users=0 if train is None else len(train.unknown_users))


def _train_matrix(seen: _Seen, shape: tuple[int, int]) -> _Seen:
    """The train matrix as evaluate_factors reads it (canonical CSR, checked)."""
    return _Seen(as_csr(seen.matrix, shape, "train"), seen.unknown_rows, seen.unknown_users)


def _warn_unknown(name: str, rows: int, n_users: int) -> None:

    if rows:
        warnings.warn(f"{name}: {rows} row(s) of {n_users} user(s) unseen at fit time were "
                      "left out (the model cannot score them).", WarprecWarning, stacklevel=3)


def evaluate(model: FactorRecommender, test: FrameLike, train: FrameLike | None = None,
             k: int = 10, metrics: str | Sequence[str] | None = None,
             client: Client | None = None,
             on_unknown: OnUnknown = "skip") -> dict[str, float | int]:
    """Ranking metrics of a fitted model on partitioned test data, computed on Dask.

    The same numbers as ``warprec.metrics.evaluate(model, test, train=train, k=k,
    metrics=metrics)`` on the same rows (to the last bit), from partitioned data.

    Parameters
    ----------
    model : warprec.WARPFactorizer
        A fitted model, fit on raw ids (a DataFrame).
    test : dask or pandas DataFrame, str or os.PathLike
        Held-out positives: columns ``user_id``, ``item_id`` (and ``rating`` or
        ``weight``, the gains of ``"ndcg_graded"``), or the path of a Parquet file or
        directory holding them.
    train : dask or pandas DataFrame, str or os.PathLike, optional
        Items excluded from each user's ranking (typically the training positives), in
        the same forms.
    k : int, default 10
        Cut-off.
    metrics : str or sequence of str, optional
        Among :data:`warprec.metrics.METRIC_NAMES`; default
        :data:`warprec.metrics.DEFAULT_METRICS`.
    client : distributed.Client, optional
        Scatter the model's arrays to every worker of this client once and compute there;
        default: Dask's default scheduler (the current client, if any).
    on_unknown : {"skip", "error", "popular"}, default "skip"
        Test rows of users the model was not fit on, as in
        :func:`warprec.metrics.evaluate`: left out with a warning, a KeyError (when
        computing), or those users evaluated on the popularity ranking.

    Returns
    -------
    dict
        As :func:`warprec.metrics.evaluate`: ``"<metric>@<k>"`` (``"auc"``) -> mean over
        the test users, and ``"n_users"``.

    Raises
    ------
    TypeError, KeyError
        On inputs of the wrong type or without the needed columns, or a model fit on a
        matrix.
    ValueError
        On unknown metric names (at once), or when computing: on bad gains or non-finite
        factors, as :func:`warprec.metrics.evaluate`.

    Notes
    -----
    The test rows are shuffled by ``user_id`` (keeping the number of partitions) so that
    each user's rows are in one partition. Each partition computes the per-user values
    of its users with warprec's evaluation kernel, exactly as the single-machine
    evaluation does, and returns, per metric, the exact sum of the values (as a few
    floats) and the number of users where the metric is defined (AUC is undefined for
    some users). The means are the exactly rounded sums of all partitions
    (:func:`math.fsum`) divided by the summed user counts, which is how
    :func:`warprec.metrics.evaluate` takes its means: the same numbers, whatever the
    partitioning. As in :func:`recommend`, the users of a partition are scored on the path
    (Numba kernel or BLAS) of the single-machine evaluation of all the test users. The
    train matrix (items to exclude) is built once from every partition of
    ``train`` and shared. Warnings (test or train rows of unknown users, test rows that
    are also in train, no test user) are raised here, once, as the single-machine
    evaluation raises them.
    """
    user_side, item_side = _sides(model)
    _check_raw_ids(model, "test")
    k = check_k(k)
    chosen = metric_selection(metrics)
    validate_param("on_unknown", on_unknown, [ON_UNKNOWN])
    test_frame = _as_dask_frame(test, "test", ["user_id", "item_id"], _GAIN_COLUMNS)
    gain_column = next((c for c in _GAIN_COLUMNS if c in test_frame.columns), None)
    if gain_column is not None:
        test_frame = test_frame[["user_id", "item_id", gain_column]]
    if test_frame.npartitions > 1:
        test_frame = test_frame.shuffle(on="user_id", npartitions=test_frame.npartitions)
    shipped_users, shipped_items = _ship(user_side, client), _ship(item_side, client)
    shape = (model.n_users_, model.n_items_)
    seen = None
    if train is not None:
        frame = _as_dask_frame(train, "train", ["user_id", "item_id"], _GAIN_COLUMNS)
        train_gain = next((c for c in _GAIN_COLUMNS if c in frame.columns), None)
        parts = [dask.delayed(_known_rows, pure=True)(part, shipped_users, shipped_items,
                                                      train_gain)
                 for part in frame.to_delayed()]
        seen = dask.delayed(_train_matrix, pure=True)(
            dask.delayed(_seen_matrix, pure=True)(parts, *shape), shape)
    prepared = [dask.delayed(_prepare_partition, pure=True)(
        part, shipped_users, shipped_items, seen, chosen, on_unknown)
        for part in test_frame.to_delayed()]
    n_total = dask.delayed(sum, pure=True)([p["evaluated"].size for p in prepared])
    partials = [dask.delayed(_evaluate_partition, pure=True)(
        p, shipped_users, shipped_items, seen, k, chosen, n_total) for p in prepared]
    total = _compute(dask.delayed(_combine, pure=True)(partials, seen), client)

    report_unknown_test_users(UnknownUsers(total["unknown_rows"], total["unknown_users"]),
                              on_unknown, stacklevel=2)
    _warn_unknown("train", total["train_unknown_rows"], total["train_n_unknown_users"])
    if total["overlap"]:
        warnings.warn(f"{total['overlap']} test entries also appear in train; they are "
                      "excluded from the ranking and can never be hit, but still count as "
                      "relevant", WarprecWarning, stacklevel=2)
    if total["n_users"] == 0:
        warnings.warn("no user has a relevant test item; every metric is NaN",
                      WarprecWarning, stacklevel=2)
    result: dict[str, float | int] = {}
    for name in chosen:
        count = total["defined"].get(name, 0)
        result[metric_key(name, k)] = (total["sums"][name] / count if count
                                        else float("nan"))
    result["n_users"] = int(total["n_users"])
    return result
