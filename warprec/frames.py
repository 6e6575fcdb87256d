"""Canonical interaction frames: making one, keeping the positives, resolving duplicates.

A canonical frame is a :class:`pandas.DataFrame` with one row per (user, item) event and
the columns of :data:`CANONICAL_COLUMNS` (``user_id``, ``item_id`` and optionally
``rating`` and ``timestamp``); :mod:`warprec.data` states its id rules and how each
function treats duplicated pairs. :func:`standardize_frame` makes one from any
interactions DataFrame (the readers of :mod:`warprec.readers` make one from files);
:func:`positives` and :func:`deduplicate` transform one. Every function returns a new
frame and never modifies its input.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ._columns import CANONICAL_COLUMNS, MIN_RATING_ATTR, require_columns, standardize
from ._grouping import order_key, pair_codes
from ._messages import show

__all__ = ["CANONICAL_COLUMNS", "deduplicate", "load_frame", "positives", "standardize_frame"]


def standardize_frame(df: pd.DataFrame, *, user_col: str | int | None = None,
                      item_col: str | int | None = None,
                      rating_col: str | int | bool | None = None,
                      timestamp_col: str | int | bool | None = None) -> pd.DataFrame:
    """Convert any interactions DataFrame to the canonical long format.

    Parameters
    ----------
    df : pandas.DataFrame
        One row per event. Not modified.
    user_col, item_col : str or int, optional
        Column name (exact, else case-insensitive) or 0-based position. By default the
        columns are found by name as in :func:`~warprec.readers.read_ratings`; a frame
        whose columns are the integers ``0..k-1`` (a headerless read) is taken as ``user,
        item[, rating[, timestamp]]``.
    rating_col, timestamp_col : str, int or False, optional
        Same for the optional columns; ``False`` ignores the column.

    Returns
    -------
    pandas.DataFrame
        New frame with columns ``user_id, item_id[, rating][, timestamp]`` and a fresh
        RangeIndex; other columns are dropped. Integer and string ids are kept as is
        (integral float ids become int64). Duplicated (user, item) rows are kept.

    Raises
    ------
    KeyError
        A column cannot be identified (message lists the columns and the arguments).
    ValueError
        Missing ids, missing or non-numeric ratings, missing timestamps.
    TypeError
        An id column mixes integers and strings, or has an unsupported type.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"standardize_frame expects a pandas DataFrame, got "
                        f"{type(df).__name__}; use read_ratings for files.")
    cols = {"user_col": user_col, "item_col": item_col, "rating_col": rating_col,
            "timestamp_col": timestamp_col}
    return standardize(df, cols, source="the DataFrame", header=None)


#: Alias of :func:`standardize_frame` (accepts a DataFrame, returns the canonical frame).
load_frame = standardize_frame


def positives(df: pd.DataFrame, min_rating: float | None = None) -> pd.DataFrame:
    """Keep the positive interactions: rows with ``rating >= min_rating``.

    Parameters
    ----------
    df : pandas.DataFrame
        Canonical frame. Not modified.
    min_rating : float, optional
        Threshold (inclusive). ``None`` keeps every row (implicit data where every event
        is a positive).

    Returns
    -------
    pandas.DataFrame
        A new frame with the kept rows in their original order and a fresh RangeIndex.
        Duplicated (user, item) rows are kept as they are (see :func:`deduplicate`).
        With a ``min_rating``, its ``attrs`` record it, so that ``fit`` does not warn
        that the ratings look explicit.

    Raises
    ------
    KeyError
        ``min_rating`` is given but the frame has no ``rating`` column.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"positives expects a pandas DataFrame, got {type(df).__name__}.")
    if min_rating is None:
        return df.reset_index(drop=True).copy()
    if "rating" not in df.columns:
        raise KeyError(f"positives(min_rating={min_rating}) needs a 'rating' column, but "
                       f"the frame has {show(list(df.columns), 20)}. Pass "
                       f"min_rating=None to keep every row, or name the rating column "
                       f"with standardize_frame(df, rating_col=...).")
    keep = (df["rating"] >= min_rating).to_numpy(dtype=bool)
    out = df.loc[keep].reset_index(drop=True)
    out.attrs[MIN_RATING_ATTR] = min_rating
    return out


def deduplicate(df: pd.DataFrame, how: str = "last") -> pd.DataFrame:
    """Resolve duplicated (user, item) pairs explicitly.

    Parameters
    ----------
    df : pandas.DataFrame
        Canonical frame. Not modified.
    how : {"last", "first", "max", "sum", "error"}, default "last"
        * ``"last"`` keeps, per pair, the row with the latest ``timestamp`` (ties and
          frames without timestamps: the last such row in frame order);
        * ``"first"`` keeps the earliest (ties / no timestamp: the first row);
        * ``"max"`` keeps the row with the highest ``rating`` (ties: latest timestamp,
          then last row); needs a ``rating`` column;
        * ``"sum"`` keeps one row per pair whose ``rating`` is the sum of the pair's
          ratings and whose ``timestamp`` (if any) is the latest; other columns come
          from the pair's first row; needs a ``rating`` column;
        * ``"error"`` raises a :class:`ValueError` if any pair is duplicated.

    Returns
    -------
    pandas.DataFrame
        One row per (user, item) pair, in the order of the kept rows (for ``"sum"``: of
        each pair's first row), with a fresh RangeIndex.

    Raises
    ------
    ValueError
        Unknown ``how``, or duplicates with ``how="error"`` (the message shows some).
    KeyError
        ``how`` needs a ``rating`` column that is absent.
    """
    require_columns(df, ("user_id", "item_id"), "deduplicate")
    options = ("last", "first", "max", "sum", "error")
    if how not in options:
        raise ValueError(f"how={how!r} is not one of {options}.")
    if how in ("max", "sum") and "rating" not in df.columns:
        raise KeyError(f"deduplicate(how={how!r}) needs a 'rating' column; the frame has "
                       f"{show(list(df.columns), 20)}. Use how='last' or 'first'.")
    n = len(df)
    pair = pair_codes(df)
    dup = pd.Series(pair).duplicated(keep=False).to_numpy()
    if not dup.any():
        return df.reset_index(drop=True).copy()
    if how == "error":
        rows = np.flatnonzero(dup)
        _, first = np.unique(pair[rows], return_index=True)
        shown = rows[np.sort(first)]
        pairs = list(zip(df["user_id"].to_numpy()[shown].tolist(),
                         df["item_id"].to_numpy()[shown].tolist()))
        n_pairs = len(first)
        raise ValueError(
            f"{n_pairs} (user, item) pairs occur more than once ({rows.size} rows), e.g. "
            f"{show(pairs)}. Choose how to combine them: deduplicate(df, how='last' | "
            f"'first' | 'max' | 'sum').")
    pos = np.arange(n)
    has_ts = "timestamp" in df.columns
    ts = order_key(df["timestamp"]) if has_ts else None
    if how == "sum":
        first = ~pd.Series(pair).duplicated(keep="first").to_numpy()
        keep_pos = pos[first]
        groups = pd.Series(df["rating"].to_numpy()).groupby(pair, sort=False).sum()
        out = df.iloc[keep_pos].reset_index(drop=True)
        out["rating"] = groups.loc[pair[keep_pos]].to_numpy()
        if has_ts:
            latest = pd.Series(df["timestamp"].to_numpy()).groupby(pair, sort=False).max()
            out["timestamp"] = latest.loc[pair[keep_pos]].to_numpy()
        return out
    # sort so that the row to keep comes last (or first) within each pair, stably
    keys: list[NDArray[Any]] = [pos]
    if ts is not None:  # (has_ts)
        keys.append(ts)
    if how == "max":
        keys.append(df["rating"].to_numpy())
    order = np.lexsort(keys) if len(keys) > 1 else pos
    keep_rule = "first" if how == "first" else "last"
    kept = ~pd.Series(pair[order]).duplicated(keep=keep_rule).to_numpy()
    keep_pos = np.sort(order[kept])
    return df.iloc[keep_pos].reset_index(drop=True)
