"""The user x item interaction matrix with two-way raw-id maps: :class:`Interactions`.

Built from a long DataFrame (:meth:`Interactions.from_frame`, e.g. a canonical frame of
:mod:`warprec.frames`) or from an existing matrix (:meth:`Interactions.from_matrix`).
Ids follow :mod:`warprec.data`'s rules (integer ids become int64, string ids stay
strings, a mix is rejected); the weights of duplicated (user, item) pairs are summed
into one matrix entry.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from ._columns import ids_kind, normalize_ids
from ._inputs import IdMap
from ._messages import describe_rows, show
from .exceptions import WarprecWarning

__all__ = ["Interactions"]


class Interactions:
    """A user x item interaction matrix with two-way raw-id maps.

    Attributes
    ----------
    matrix : scipy.sparse.csr_matrix
        ``float32`` of shape ``(n_users, n_items)`` with sorted column indices, one
        entry per (user, item) pair (the weights of duplicated pairs are **summed**) and
        no explicit zeros.
    user_ids, item_ids : numpy.ndarray
        Raw ids; ``user_ids[u]`` is the raw id of matrix row ``u``. ``int64`` when every
        id is an integer, ``object`` (Python ``str``) when every id is a string. Built
        from data, they are sorted, so the maps are deterministic.

    Use :meth:`from_frame` or :meth:`from_matrix` to build one; the constructor takes
    the already-validated pieces.
    """

    def __init__(self, matrix: sp.spmatrix | sp.sparray | ArrayLike, user_ids: ArrayLike,
                 item_ids: ArrayLike) -> None:
        matrix = _clean_csr(matrix)
        user_ids = _id_array(user_ids, "user_ids")
        item_ids = _id_array(item_ids, "item_ids")
        if matrix.shape != (len(user_ids), len(item_ids)):
            raise ValueError(f"matrix shape {matrix.shape} does not match "
                             f"{len(user_ids)} user ids and {len(item_ids)} item ids.")
        self.matrix: sp.csr_matrix = matrix
        self.user_ids: NDArray[Any] = user_ids
        self.item_ids: NDArray[Any] = item_ids
        self._user_index: IdMap | None = None
        self._item_index: IdMap | None = None

    # ---- constructors -----------------------------------------------------------
    @classmethod
    def from_frame(cls, df: pd.DataFrame, *, user_col: str = "user_id",
                   item_col: str = "item_id", weight_col: str | None = None,
                   user_ids: ArrayLike | None = None, item_ids: ArrayLike | None = None,
                   unknown: str = "error") -> Interactions:
        """Build the matrix from a long DataFrame.

        Parameters
        ----------
        df : pandas.DataFrame
            One row per event. Not modified.
        user_col, item_col : str, default "user_id", "item_id"
            Id columns.
        weight_col : str, optional
            Column of weights (finite and > 0). ``None`` gives every row weight 1.
        user_ids, item_ids : array-like, optional
            Fixed id maps (e.g. ``train.user_ids`` to build a test matrix aligned with
            a training matrix); position = index. By default the maps are the sorted
            unique ids of ``df``.
        unknown : {"error", "drop"}, default "error"
            What to do with rows whose id is not in a given map: raise a
            :class:`KeyError` naming some of them, or drop them with a
            :class:`~warprec.exceptions.WarprecWarning` giving the count.

        Returns
        -------
        Interactions

        Notes
        -----
        Duplicated (user, item) rows are combined by **summing their weights** (with
        ``weight_col=None`` a pair seen twice gets weight 2). Use
        :func:`~warprec.frames.deduplicate` first for another rule. Mixed integer/string id
        columns raise a :class:`TypeError` (see :mod:`warprec.data`).

        Raises
        ------
        KeyError
            Missing columns; unknown ids with ``unknown="error"``.
        ValueError
            Missing ids; non-finite or non-positive weights (the message names rows).
        TypeError
            Mixed integer/string ids.
        """
        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"from_frame expects a pandas DataFrame, got "
                            f"{type(df).__name__}.")
        if unknown not in ("error", "drop"):
            raise ValueError(f"unknown must be 'error' or 'drop', got {unknown!r}.")
        needed = [user_col, item_col] + ([weight_col] if weight_col is not None else [])
        missing = [c for c in needed if c not in df.columns]
        if missing:
            raise KeyError(
                f"Interactions.from_frame: column(s) {missing} not found; the frame has "
                f"{show(list(df.columns), 20)}. Pass user_col=, item_col=, weight_col= "
                f"or convert it with standardize_frame first.")
        users = normalize_ids(df[user_col], "user_id", "the DataFrame", None)
        items = normalize_ids(df[item_col], "item_id", "the DataFrame", None)
        if weight_col is None:
            weights = np.ones(len(df), dtype=np.float64)
        else:
            w = df[weight_col]
            if not pd.api.types.is_numeric_dtype(w.dtype) or \
                    pd.api.types.is_bool_dtype(w.dtype):
                raise ValueError(f"weight column {weight_col!r} must be numeric, got "
                                 f"dtype {w.dtype}.")
            weights = w.to_numpy(dtype=np.float64)
            bad = np.flatnonzero(~np.isfinite(weights) | (weights <= 0))
            if bad.size:
                raise ValueError(
                    f"Weights must be finite and > 0, but {bad.size} rows are not "
                    f"({show(weights[bad])} at {describe_rows(bad, None)}). Filter them out "
                    f"(e.g. positives(df, min_rating=...)) or transform the weights.")
        rows, uids = _map_ids(users, user_ids, "user_ids", "user")
        cols, iids = _map_ids(items, item_ids, "item_ids", "item")
        unmapped = (rows < 0) | (cols < 0)
        if unmapped.any():
            n_bad = int(unmapped.sum())
            if unknown == "error":
                parts = []
                if (rows < 0).any():
                    parts.append(f"user ids {show(pd.unique(users.to_numpy()[rows < 0]))}")
                if (cols < 0).any():
                    parts.append(f"item ids {show(pd.unique(items.to_numpy()[cols < 0]))}")
                raise KeyError(
                    f"{n_bad} rows have ids not in the given maps: {'; '.join(parts)}. "
                    f"They were not in the data the maps were built from; pass "
                    f"unknown='drop' to drop those rows.")
            warnings.warn(f"Interactions.from_frame dropped {n_bad} of {len(df)} rows "
                          f"whose user or item id is not in the given id maps.",
                          WarprecWarning, stacklevel=2)
            keep = ~unmapped
            rows, cols, weights = rows[keep], cols[keep], weights[keep]
        matrix = sp.csr_matrix((weights, (rows, cols)), shape=(len(uids), len(iids)),
                               dtype=np.float64)
        return cls(matrix, uids, iids)

    @classmethod
    def from_matrix(cls, X: sp.spmatrix | sp.sparray | ArrayLike,
                    user_ids: ArrayLike | None = None,
                    item_ids: ArrayLike | None = None) -> Interactions:
        """Wrap an existing user x item matrix.

        Parameters
        ----------
        X : scipy.sparse matrix/array or array-like
            Shape ``(n_users, n_items)``; entries are weights (finite, >= 0; zeros are
            treated as absent and removed). Not modified.
        user_ids, item_ids : array-like, optional
            Raw ids of the rows / columns (unique); default ``0..n-1``.

        Returns
        -------
        Interactions
            ``matrix`` is a CSR ``float32`` copy; duplicate COO entries are summed.

        Raises
        ------
        ValueError
            Negative or non-finite entries, non-2-D input, id maps of the wrong length.
        """
        matrix = _clean_csr(X)
        n_users, n_items = matrix.shape
        uids = np.arange(n_users, dtype=np.int64) if user_ids is None else user_ids
        iids = np.arange(n_items, dtype=np.int64) if item_ids is None else item_ids
        return cls(matrix, uids, iids)

    # ---- properties ------------------------------------------------------------
    @property
    def n_users(self) -> int:
        """Number of users (matrix rows)."""
        return self.matrix.shape[0]

    @property
    def n_items(self) -> int:
        """Number of items (matrix columns)."""
        return self.matrix.shape[1]

    @property
    def nnz(self) -> int:
        """Number of stored (user, item) entries."""
        return int(self.matrix.nnz)

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_users, n_items)``."""
        return self.matrix.shape

    def __repr__(self) -> str:
        return (f"Interactions(n_users={self.n_users}, n_items={self.n_items}, "
                f"nnz={self.nnz})")

    # ---- id lookups ---------------------------------------------------------------
    def user_index(self, raw_ids: ArrayLike) -> NDArray[np.int64]:
        """Row indices of raw user ids.

        Parameters
        ----------
        raw_ids : scalar or array-like
            Raw user ids.

        Returns
        -------
        numpy.ndarray of int64
            Same shape as ``np.asarray(raw_ids)`` (0-d for a scalar).

        Raises
        ------
        KeyError
            Some ids are unknown (up to 5 are listed).
        """
        if self._user_index is None:
            self._user_index = IdMap(self.user_ids)
        return _lookup(self._user_index, raw_ids, "user")

    def item_index(self, raw_ids: ArrayLike) -> NDArray[np.int64]:
        """Column indices of raw item ids; see :meth:`user_index`."""
        if self._item_index is None:
            self._item_index = IdMap(self.item_ids)
        return _lookup(self._item_index, raw_ids, "item")

    def to_frame(self) -> pd.DataFrame:
        """Long DataFrame of the stored entries.

        Returns
        -------
        pandas.DataFrame
            Columns ``user_id``, ``item_id`` (raw ids) and ``weight`` (``float32``), one
            row per stored entry in row-major order. ``Interactions.from_frame(df,
            weight_col="weight", user_ids=..., item_ids=...)`` rebuilds the same object.
        """
        coo = self.matrix.tocoo()
        return pd.DataFrame({"user_id": self.user_ids[coo.row],
                             "item_id": self.item_ids[coo.col],
                             "weight": coo.data.astype(np.float32)})


def _id_array(values: ArrayLike, what: str) -> NDArray[Any]:
    """Validate an id map: unique, all integers (-> int64) or all strings (-> object)."""
    arr = _as_id_array(values)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {arr.shape}.")
    if arr.dtype.kind in "iu":
        out = arr.astype(np.int64)
    elif arr.dtype.kind in "US":
        out = arr.astype(str).astype(object)
    else:
        try:
            kind = ids_kind(arr.astype(object))
        except TypeError as exc:
            raise TypeError(f"{what} {exc}; ids must be all integers or all strings.") \
                from None
        if kind == "int":
            out = arr.astype(np.int64)
        elif kind == "str":
            out = arr.astype(object)
        else:
            f = arr.astype(np.float64)
            if not np.all(np.isfinite(f) & (f == np.round(f))):
                raise TypeError(f"{what} holds non-integer numbers; ids must be integers "
                                f"or strings.")
            out = f.astype(np.int64)
    if len(pd.unique(out)) != len(out):
        dup = pd.Series(out)[pd.Series(out).duplicated()].unique()
        raise ValueError(f"{what} contains repeated ids ({show(dup)}); an id map must "
                         f"be unique.")
    return out


def _map_ids(values: pd.Series, given: ArrayLike | None, what: str,
             role: str) -> tuple[NDArray[np.int64], NDArray[Any]]:
    """Return (codes, id array); codes are -1 for values not in ``given``."""
    if given is None:
        codes, uniques = pd.factorize(values, sort=True)
        unique_ids = np.asarray(uniques)
        ids = unique_ids.astype(np.int64) if unique_ids.dtype.kind in "iu" \
            else unique_ids.astype(object)
        return codes.astype(np.int64), ids
    ids = _id_array(given, what)
    return IdMap(ids).indexer(values), ids


def _as_id_array(values: ArrayLike) -> NDArray[Any]:
    """``np.asarray`` that keeps Python strings intact (no fixed-width unicode, which
    would drop trailing NUL characters)."""
    if isinstance(values, (pd.Series, pd.Index)):
        values = values.to_numpy()
    if isinstance(values, np.ndarray):
        return values.astype(object) if values.dtype.kind in "US" else values
    arr = np.asarray(values)
    if arr.dtype.kind in "US":
        arr = np.asarray(values, dtype=object)
    return arr


def _lookup(id_map: IdMap, raw_ids: ArrayLike, what: str) -> NDArray[np.int64]:
    arr = _as_id_array(raw_ids)
    flat = arr.reshape(-1)
    if flat.size == 0:
        return np.empty(arr.shape, dtype=np.int64)
    codes = id_map.indexer(flat)
    if (codes < 0).any():
        unknown = pd.unique(flat[codes < 0])
        raise KeyError(
            f"{len(unknown)} unknown {what} id(s): {show(unknown)}; they were not in "
            f"the data this {what} map was built from ({len(id_map)} {what}s, e.g. "
            f"{show(id_map.ids[:3].tolist(), 3)}).")
    return codes.reshape(arr.shape)


def _clean_csr(X: sp.spmatrix | sp.sparray | ArrayLike) -> sp.csr_matrix:
    """CSR float32 copy with summed duplicates, sorted indices and no explicit zeros."""
    m: sp.csr_matrix   # float64, then float32
    if sp.issparse(X):
        # values become float64 before duplicates are summed (int8 100 + 100 wraps)
        coo = sp.coo_matrix(X)
        m = sp.csr_matrix((coo.data.astype(np.float64), (coo.row, coo.col)), shape=coo.shape)
    else:
        try:
            arr = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"Expected a 2-D matrix of numbers (scipy.sparse or array-like), "
                            f"got {type(X).__name__} with non-numeric entries.") from None
        if arr.ndim != 2:
            raise ValueError(f"Expected a 2-D matrix, got shape {arr.shape}.")
        m = sp.csr_matrix(arr)
    m.sum_duplicates()
    data = m.data
    if data.size and (not np.all(np.isfinite(data)) or data.min() < 0):
        n_bad = int(np.sum(~np.isfinite(data) | (data < 0)))
        raise ValueError(f"Interaction weights must be finite and >= 0; {n_bad} entries "
                         f"are negative or not finite.")
    if data.size and data.max() > np.finfo(np.float32).max:
        raise ValueError(f"Interaction weights above {np.finfo(np.float32).max:.3g} overflow "
                         f"float32 to infinity; rescale them.")
    m = sp.csr_matrix(m, dtype=np.float32)
    m.eliminate_zeros()
    m.sort_indices()
    return m
