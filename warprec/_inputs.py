"""Validation and conversion of user input into canonical arrays (no kernels here)."""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = ["IdMap", "as_interaction_matrix", "check_k", "check_positive_int", "lookup_ids"]


class IdMap:
    """The raw id -> index map of one id array, looked up in bulk (a :class:`pandas.Index`).

    The one raw-id map of warprec: :class:`warprec.data.Interactions`, the fitted models
    (:func:`lookup_ids`) and the evaluation glue all look ids up through it. Each caller
    raises its own error for unknown ids.

    Parameters
    ----------
    ids : ndarray
        Unique raw ids, ``int64`` or ``object`` (Python strings), as
        :class:`warprec.data.Interactions` and the models store them; ``ids[i]`` is the
        raw id of index ``i``.

    Notes
    -----
    Lookups follow Python equality, as a ``dict`` would: ``3``, ``np.int64(3)``,
    ``3.0`` and ``np.float32(3.0)`` find the integer id 3, and no number finds the
    string id ``"3"``. Booleans find the ids 0 and 1 as in a ``dict`` with
    ``bools_as_ints=True``; without it pandas' rule applies (an all-boolean array
    finds nothing, booleans among other values find 0 and 1), which is what
    :meth:`warprec.data.Interactions.user_index` has always done.
    """

    def __init__(self, ids):
        self.ids = ids
        self._index = pd.Index(ids)

    def __len__(self):
        return len(self.ids)

    def indexer(self, values, bools_as_ints=False):
        """Indices of ``values`` (1-D array or Series), -1 for ids not in the map.

        Parameters
        ----------
        values : ndarray or pandas.Series
            Raw ids, one dimension; any dtype.
        bools_as_ints : bool, default False
            Let ``True`` and ``False`` always find the integer ids 1 and 0 (Python's
            ``dict`` rule); otherwise an all-boolean ``values`` finds nothing.

        Returns
        -------
        ndarray of int64
        """
        if bools_as_ints:
            arr = np.asarray(values)
            if arr.dtype == bool or (arr.dtype == object and arr.size and
                                     pd.api.types.infer_dtype(arr, skipna=False) == "boolean"):
                values = arr.astype(np.int64)
        if len(values) == 0 or self._index.size == 0:
            return np.full(len(values), -1, dtype=np.int64)
        return np.asarray(self._index.get_indexer(values), dtype=np.int64)


def check_positive_int(value, name):
    """Return ``value`` as int if it is an integer >= 1, else raise ValueError/TypeError."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive integer (got {value!r} of type "
                        f"{type(value).__name__}).")
    if value < 1:
        raise ValueError(f"{name} must be a positive integer (got {value}).")
    return int(value)


def check_k(k):
    """Return a cut-off ``k`` as int; any value that is not an integer >= 1 (including
    booleans and floats such as 2.5) raises ValueError."""
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError(f"k must be a positive integer (got {k!r}).")
    return int(k)


def as_interaction_matrix(X, name="X"):
    """Canonical CSR (float32 values, sorted unique indices, no stored zeros).

    Accepts any scipy sparse matrix/array or a dense 2-D array of numbers or booleans.
    Duplicate ``(row, column)`` entries of COO input are summed (scipy's rule), stored
    zeros are removed (they mean "no interaction"). NaN, infinite or negative values raise
    ``ValueError``: negative feedback is not a positive, threshold it first
    (``warprec.data.positives(df, min_rating=...)``).
    """
    if isinstance(X, np.matrix):
        X = np.asarray(X)
    if sp.issparse(X):
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D (users x items); got {X.ndim}-D.")
        if X.dtype == object or not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
            raise TypeError(f"{name} must hold numbers or booleans, not {X.dtype}.")
        if np.issubdtype(X.dtype, np.complexfloating):
            raise TypeError(f"{name} must hold real numbers, not {X.dtype}.")
        # convert the values before any format change: scipy sums duplicate entries in
        # the input dtype, which wraps around for small integer types (int8 100 + 100)
        coo = sp.coo_matrix(X)
        csr = sp.csr_matrix((coo.data.astype(np.float64), (coo.row, coo.col)), shape=coo.shape)
    elif isinstance(X, np.ndarray):
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D (users x items); got shape {X.shape}.")
        if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool) or \
                np.issubdtype(X.dtype, np.complexfloating):
            raise TypeError(f"{name} must hold real numbers or booleans, not {X.dtype}.")
        csr = sp.csr_matrix(X.astype(np.float64))
    else:
        raise TypeError(f"{name} must be a scipy.sparse matrix, a dense 2-D numpy array, a "
                        "warprec.data.Interactions or a pandas DataFrame with user_id/item_id "
                        f"columns; got {type(X).__name__}.")
    csr.sum_duplicates()
    bad = ~np.isfinite(csr.data)
    if bad.any():
        raise ValueError(f"{name} holds {int(bad.sum())} NaN or infinite value(s); drop or "
                         "fill them first (e.g. X.data = np.nan_to_num(X.data)).")
    neg = csr.data < 0
    if neg.any():
        raise ValueError(f"{name} holds {int(neg.sum())} negative value(s); warprec learns from "
                         "positive interactions only. Keep the positives (e.g. "
                         "warprec.data.positives(df, min_rating=4)) or take abs/clip them.")
    huge = csr.data > np.finfo(np.float32).max
    if huge.any():
        raise ValueError(f"{name} holds {int(huge.sum())} value(s) above "
                         f"{np.finfo(np.float32).max:.3g}, which overflow warprec's float32 "
                         "storage to infinity; rescale them (e.g. X.data = np.log1p(X.data)).")
    csr.eliminate_zeros()
    csr.sort_indices()
    # a positive below float32's range stays a positive (it would round to a stored 0)
    data = np.maximum(csr.data, np.finfo(np.float32).smallest_subnormal).astype(np.float32)
    return sp.csr_matrix((data, csr.indices.astype(np.int32), csr.indptr.astype(np.int64)),
                         shape=csr.shape)


def lookup_ids(raw, index_of, kind, n):
    """Map raw ids (or indices when ``index_of`` is None) to int64 indices.

    Parameters
    ----------
    raw : scalar or array_like
        Raw ids, or integer indices when the model was fit on a matrix.
    index_of : IdMap or None
        Raw id -> index map; None means ``raw`` already holds indices.
    kind : str
        "user" or "item", for messages.
    n : int
        Number of known users/items.

    Returns
    -------
    ndarray of int64

    Raises
    ------
    KeyError
        Some ids were not seen at fit time (the message lists up to five).
    """
    if isinstance(raw, (set, frozenset, dict)) or (
            hasattr(raw, "keys") and not hasattr(raw, "__array__")):
        raise TypeError(f"{kind} ids must be a scalar or a 1-D sequence (list, array), not a "
                        f"{type(raw).__name__}; pass e.g. list(...) of the ids.")
    try:
        if index_of is not None and isinstance(raw, np.ndarray) and raw.dtype.kind in "biuf":
            values = np.atleast_1d(raw)   # numbers: looked up without Python objects
        else:
            values = np.atleast_1d(np.asarray(raw, dtype=object if index_of is not None
                                              else None))
    except (ValueError, TypeError):
        raise ValueError(f"{kind} ids must be a scalar or a flat 1-D sequence of ids; got a "
                         f"ragged or nested {type(raw).__name__}.") from None
    if values.ndim != 1:
        raise ValueError(f"{kind} ids must be a scalar or a 1-D sequence; got shape "
                         f"{values.shape}.")
    if index_of is None:
        if values.size and not np.issubdtype(values.dtype, np.integer):
            if values.dtype == bool or not all(
                    isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))
                    for v in values):
                raise TypeError(f"This model was fit on a matrix, so {kind}s are row/column "
                                f"indices: pass integers (got dtype {values.dtype}).")
        # indices beyond int64 (e.g. 2**70 or large uint64) are out of range, never
        # wrapped around: compare before converting
        if values.dtype == object:
            bad = np.fromiter((not 0 <= v < n for v in values.tolist()), dtype=bool,
                              count=values.size)
        else:
            bad = (values < 0) | (values >= n)
        idx = np.where(bad, 0, values).astype(np.int64)
        if bad.any():
            shown = ", ".join(str(v) for v in np.asarray(values)[bad][:5])
            raise KeyError(f"{int(bad.sum())} {kind} index(es) out of range [0, {n}): {shown}. "
                           f"The model was fit on a matrix with {n} {kind}s.")
        return idx
    if values.dtype == object:
        unhashable = [v for v in values if not _is_hashable(v)]
        if unhashable:
            raise TypeError(f"{kind} ids must be scalars (numbers or strings); got "
                            f"{type(unhashable[0]).__name__} {unhashable[0]!r}.")
    idx = index_of.indexer(values, bools_as_ints=True)
    bad = idx < 0
    if bad.any():
        shown = ", ".join(repr(v) for v in values[bad][:5].astype(object))
        raise KeyError(f"{int(bad.sum())} {kind} id(s) were not seen at fit time: {shown}. "
                       f"warprec has no embedding for unseen {kind}s; refit with data that "
                       f"includes them, or leave them out.")
    return idx


def _is_hashable(v):
    try:
        hash(v)
    except TypeError:
        return False
    return True
