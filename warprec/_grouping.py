"""Integer codes of id columns and the rank of each row within its user.

The arithmetic that deduplication (:func:`warprec.frames.deduplicate`), the splitters
(:mod:`warprec.splitting`), the validation hold-out of training
(:mod:`warprec._validation`) and the evaluation glue (:mod:`warprec._base`) share.

Internal API: :func:`factorize_ids`, :func:`pair_codes`, :func:`order_key` and
:func:`rank_within_user`. Not part of warprec's public API; may change without notice.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

__all__ = ["factorize_ids", "order_key", "pair_codes", "rank_within_user"]


def factorize_ids(values: ArrayLike | pd.Series) -> tuple[NDArray[np.int64], int]:
    """``(codes, n_distinct)``: an int64 code per value, ``0..n_distinct-1`` in order of
    first appearance (missing values get -1, as in :func:`pandas.factorize`)."""
    codes, uniques = pd.factorize(np.asarray(values) if not isinstance(values, pd.Series)
                                  else values)
    return codes.astype(np.int64), len(uniques)


def pair_codes(df: pd.DataFrame) -> NDArray[np.int64]:
    """One int64 code per row that is equal for rows of the same (user_id, item_id)."""
    u, _ = factorize_ids(df["user_id"])
    i, n_i = factorize_ids(df["item_id"])
    return u * max(n_i, 1) + i


def order_key(values: pd.Series) -> NDArray[np.int64] | NDArray[np.floating[Any]]:
    """Integer codes that sort like ``values`` (works for numbers, datetimes, strings)."""
    arr = values.to_numpy()
    if arr.dtype.kind in "iub":
        return arr.astype(np.int64, copy=False)
    if arr.dtype.kind == "f":
        return arr
    codes, _ = pd.factorize(values, sort=True)
    return codes.astype(np.int64)


def rank_within_user(user_codes: NDArray[np.int64], n_users: int,
                     *keys: NDArray[Any]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """0-based rank of each row within its user when sorted by ``keys`` (last key is
    the primary sort key among the given ones, as in :func:`numpy.lexsort`; ties keep
    row order), plus the user's row count for every row.

    Parameters
    ----------
    user_codes : ndarray of int64
        The user of each row, in ``[0, n_users)``.
    n_users : int
        Number of users.
    *keys : ndarray
        Sort keys, one value per row.
    """
    n = len(user_codes)
    order = np.lexsort((np.arange(n),) + tuple(keys) + (user_codes,))
    counts = np.bincount(user_codes, minlength=n_users)
    starts = np.cumsum(counts) - counts
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - starts[user_codes[order]]
    return rank, counts[user_codes]
