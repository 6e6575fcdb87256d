"""Train/test splits of canonical interaction frames.

The functions :func:`split_random` (per-user random hold-out), :func:`split_leave_k_out`
(k rows per user, at random or the latest), :func:`split_temporal` (per-user latest
rows, or a global time cut), :func:`split_cold_items` and :func:`split_cold_users` (every
row of a random share of the items or users, for cold-start evaluation) return one
``(train, test)`` pair of frames;
:class:`PerUserHoldout` yields repeated per-user random hold-outs as row positions, the
cross-validator scikit-learn's searches take (also importable from
:mod:`warprec.model_selection`). :func:`split_random` and :class:`PerUserHoldout` hold
out the same rows for the same seed.

Duplicated (user, item) rows are split independently, with a
:class:`~warprec.exceptions.WarprecWarning`: call :func:`warprec.frames.deduplicate`
first. No function modifies its input or uses NumPy's global random state.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from numbers import Real
from typing import Any, TypeAlias

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ._columns import require_columns
from ._grouping import factorize_ids, order_key, pair_codes, rank_within_user
from ._inputs import POSITIVE_INT, Interval, check_positive_int, validate_params
from ._messages import show
from .exceptions import WarprecWarning

__all__ = ["PerUserHoldout", "split_cold_items", "split_cold_users", "split_leave_k_out",
           "split_random", "split_temporal"]

#: What a ``random_state`` argument takes: anything :func:`numpy.random.default_rng`
#: accepts (the global NumPy random state is never used).
SeedLike: TypeAlias = (int | np.integer[Any] | np.random.SeedSequence | np.random.BitGenerator
                       | np.random.Generator | None)


def split_random(df: pd.DataFrame, test_fraction: float = 0.2,
                 random_state: SeedLike = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-user random hold-out.

    For every user with ``n_u`` rows, ``floor(test_fraction * n_u)`` of them, chosen
    uniformly at random, go to the test set; users for whom that number is 0 keep all
    their rows in train. Concretely, one uniform key per row is drawn with
    ``np.random.default_rng(random_state).random(len(df))`` (in row order), each
    user's rows are ordered by their keys, and the first ``floor(...)`` are test rows.
    With ``random_state=42`` and ``test_fraction=0.2`` on the positives (rating >= 4)
    of ML-100K ``u.data`` this reproduces the shared ``ml-100k-split`` exactly.

    Parameters
    ----------
    df : pandas.DataFrame
        Canonical frame (needs ``user_id``). Not modified.
    test_fraction : float, default 0.2
        In ``[0, 1)``.
    random_state : int, numpy.random.Generator or None, default 0
        Anything :func:`numpy.random.default_rng` accepts. The global NumPy random state
        is never used.

    Returns
    -------
    (train, test) : tuple of pandas.DataFrame
        Disjoint sets of rows covering ``df``, each in the original row order with a
        fresh RangeIndex and the same columns as ``df``.

    Notes
    -----
    Duplicated (user, item) rows are treated as independent rows, so copies of a pair
    can land on both sides; a :class:`~warprec.exceptions.WarprecWarning` says so. Call
    :func:`~warprec.frames.deduplicate` first.
    """
    require_columns(df, ("user_id", "item_id"), "split_random")
    if not (0.0 <= float(test_fraction) < 1.0):
        raise ValueError(f"test_fraction must be in [0, 1), got {test_fraction!r}.")
    _warn_duplicates(df, "split_random")
    rng = np.random.default_rng(random_state)
    users, n_users = factorize_ids(df["user_id"])
    key = rng.random(len(df))
    rank, n_u = rank_within_user(users, n_users, key)
    return _split_by_mask(df, rank < _n_held_out(test_fraction, n_u))


def split_cold_items(df: pd.DataFrame, fraction: float = 0.2, random_state: SeedLike = 0, *,
                     items: Any = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Hold out every row of a random share of the items: the *cold* items of a
    cold-start evaluation, which the model then never trains on.

    ``round(fraction * n)`` of the ``n`` candidate items (the distinct items of ``df``
    that are also in ``items``, or all of them), chosen uniformly at random, lose every
    row to the test set. Concretely the candidates are sorted, and the first of
    ``np.random.default_rng(random_state).permutation(n)`` are held out.

    Parameters
    ----------
    df : pandas.DataFrame
        Canonical frame (needs ``user_id`` and ``item_id``). Not modified.
    fraction : float, default 0.2
        In ``(0, 1)``: the share of the candidate items held out.
    random_state : int, numpy.random.Generator or None, default 0
        Anything :func:`numpy.random.default_rng` accepts.
    items : array-like, optional
        The items that may be held out, e.g. those with side features (a cold item is
        ranked from its features, so one without any cannot be). Default: every item.

    Returns
    -------
    (train, test) : tuple of pandas.DataFrame
        Disjoint sets of rows covering ``df``, each in the original row order with a
        fresh RangeIndex; no item of ``test`` has a row in ``train``.

    Raises
    ------
    ValueError
        ``fraction`` outside ``(0, 1)``, or it holds out no item (or every item: then
        nothing is left to train on).
    """
    return _split_cold(df, "item", fraction, random_state, items, "split_cold_items")


def split_cold_users(df: pd.DataFrame, fraction: float = 0.2, random_state: SeedLike = 0, *,
                     users: Any = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Hold out every row of a random share of the users: the *cold* users of a
    cold-start evaluation (new users known by their features only).

    As :func:`split_cold_items`, with users: ``round(fraction * n)`` of the ``n``
    candidate users (the distinct users of ``df`` that are also in ``users``, or all of
    them) lose every row to the test set.
    """
    return _split_cold(df, "user", fraction, random_state, users, "split_cold_users")


def _split_cold(df: pd.DataFrame, kind: str, fraction: float, random_state: SeedLike,
                allowed: Any, what: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`split_cold_items` (``kind="item"``) or :func:`split_cold_users`."""
    require_columns(df, ("user_id", "item_id"), what)
    if not (0.0 < float(fraction) < 1.0):
        raise ValueError(f"fraction must be in (0, 1), got {fraction!r}.")
    column = df[f"{kind}_id"]
    present = pd.unique(column)
    candidates = present if allowed is None else present[
        pd.Index(pd.unique(np.asarray(allowed, dtype=object))).get_indexer(present) >= 0]
    candidates = np.sort(np.asarray(candidates))
    n_cold = int(round(float(fraction) * len(candidates)))
    if n_cold == 0:
        raise ValueError(f"{what}: fraction={fraction} of {len(candidates)} candidate "
                         f"{kind}s holds out none; raise fraction or pass more {kind}s.")
    if n_cold == len(present):
        raise ValueError(f"{what}: fraction={fraction} holds out every {kind}; lower it so "
                         f"that some {kind}s are left to train on.")
    rng = np.random.default_rng(random_state)
    cold = candidates[rng.permutation(len(candidates))[:n_cold]]
    return _split_by_mask(df, column.isin(cold).to_numpy())


def split_leave_k_out(df: pd.DataFrame, k: int = 1, random_state: SeedLike = 0,
                      by: str = "random") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Hold out ``k`` rows per user.

    Parameters
    ----------
    df : pandas.DataFrame
        Canonical frame. Not modified.
    k : int, default 1
        Rows per user moved to test (``k >= 1``). **Users with ``k`` rows or fewer stay
        entirely in train** (so every test user still has training data).
    random_state : int, numpy.random.Generator or None, default 0
        Seed for ``by="random"`` (same key scheme as :func:`split_random`); unused for
        ``by="time"``.
    by : {"random", "time"}, default "random"
        ``"random"``: ``k`` rows chosen uniformly at random. ``"time"``: the user's
        ``k`` latest rows by ``timestamp`` (ties: later rows in frame order count as
        later); needs a ``timestamp`` column.

    Returns
    -------
    (train, test) : tuple of pandas.DataFrame
        In the original row order, fresh RangeIndex.

    Notes
    -----
    Duplicated (user, item) rows are split independently (with a warning); call
    :func:`~warprec.frames.deduplicate` first.
    """
    require_columns(df, ("user_id", "item_id"), "split_leave_k_out")
    if by not in ("random", "time"):
        raise ValueError(f"by must be 'random' or 'time', got {by!r}.")
    check_positive_int(k, "k")
    if by == "time":
        require_columns(df, ("timestamp",), "split_leave_k_out(by='time')")
        return _last_n_split(df, int(k), "split_leave_k_out")
    _warn_duplicates(df, "split_leave_k_out")
    rng = np.random.default_rng(random_state)
    users, n_users = factorize_ids(df["user_id"])
    rank, n_u = rank_within_user(users, n_users, rng.random(len(df)))
    return _split_by_mask(df, (rank < k) & (n_u > k))


def split_temporal(df: pd.DataFrame, *, last_n: int | None = None,
                   time_cut: Any = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split by time: per-user latest rows, or a global time cut.

    Give exactly one of ``last_n`` and ``time_cut``.

    Parameters
    ----------
    df : pandas.DataFrame
        Canonical frame with a ``timestamp`` column. Not modified.
    last_n : int, optional
        Each user's ``last_n`` latest rows go to test (ties: later rows in frame order
        count as later). Users with ``last_n`` rows or fewer stay entirely in train.
    time_cut : scalar, optional
        Rows with ``timestamp >= time_cut`` go to test, the rest to train (users may
        end up in only one side).

    Returns
    -------
    (train, test) : tuple of pandas.DataFrame
        In the original row order, fresh RangeIndex.

    Raises
    ------
    KeyError
        No ``timestamp`` column.
    ValueError
        Neither or both of ``last_n``/``time_cut``; missing timestamps.

    Notes
    -----
    Duplicated (user, item) rows are split independently (with a warning); call
    :func:`~warprec.frames.deduplicate` first.
    """
    require_columns(df, ("user_id", "item_id"), "split_temporal")
    if "timestamp" not in df.columns:
        raise KeyError(f"split_temporal needs a 'timestamp' column, but the frame has "
                       f"{show(list(df.columns), 20)}. Use split_random or "
                       f"split_leave_k_out(by='random') for data without timestamps.")
    if (last_n is None) == (time_cut is None):
        raise ValueError("Give exactly one of last_n= (per-user latest rows) and "
                         "time_cut= (global cut).")
    if last_n is not None:
        check_positive_int(last_n, "last_n")
        return _last_n_split(df, int(last_n), "split_temporal")
    _warn_duplicates(df, "split_temporal")
    try:
        test = (df["timestamp"] >= time_cut).to_numpy(dtype=bool)
    except TypeError as exc:
        raise TypeError(f"split_temporal: cannot compare timestamps of dtype "
                        f"{df['timestamp'].dtype} with time_cut={time_cut!r} ({exc}).") \
            from None
    return _split_by_mask(df, test)


def _warn_duplicates(df: pd.DataFrame, what: str) -> None:
    dup = pd.Series(pair_codes(df)).duplicated()
    count = int(dup.sum())
    if count:
        warnings.warn(
            f"{what}: {count} rows repeat an earlier (user, item) pair; they are split "
            f"independently, so one pair can land in both train and test. Call "
            f"deduplicate(df) first to avoid this.", WarprecWarning, stacklevel=3)


def _n_held_out(fraction: float, counts: NDArray[np.int64]) -> NDArray[np.int64]:
    """``floor(fraction * n_u)`` rows held out per user; the tiny epsilon keeps e.g.
    ``0.29 * 100`` from flooring to 28."""
    return np.floor(float(fraction) * counts + 1e-9).astype(np.int64)


def _split_by_mask(df: pd.DataFrame,
                   test: NDArray[np.bool_]) -> tuple[pd.DataFrame, pd.DataFrame]:
    return (df.loc[~test].reset_index(drop=True), df.loc[test].reset_index(drop=True))


def _last_n_split(df: pd.DataFrame, n: int, what: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    ts = df["timestamp"]
    if ts.isna().any():
        raise ValueError(f"{what}: {int(ts.isna().sum())} rows have no timestamp; drop "
                         f"or fill them first.")
    _warn_duplicates(df, what)
    users, n_users = factorize_ids(df["user_id"])
    rank, n_u = rank_within_user(users, n_users, order_key(ts))
    return _split_by_mask(df, (rank >= n_u - n) & (n_u > n))


class PerUserHoldout:
    """Repeated per-user random hold-out of interaction rows.

    Each split holds out, for every user with ``n_u`` rows, ``floor(test_fraction *
    n_u)`` of them chosen uniformly at random (the product is floored with a 1e-9
    tolerance, so that ``0.29 * 100`` gives 29); the user's other rows are training
    rows. A user for whom that number is 0 keeps all rows in train. Since ``test_fraction <
    1``, every user keeps at least one training row, so a model fit on the training
    side knows every user of the test side (items seen only in test rows are unknown
    to it; :func:`warprec.metrics.evaluate` counts them as relevant items that cannot
    be hit). The splits are drawn independently of each other, so a row can be a test
    row of several splits (this is repeated hold-out, not k-fold).

    The per-user rule is that of :func:`warprec.data.split_random`: split ``s`` draws
    one uniform key per row (``rng.random(len(X))``, in row order, ``s``-th draw of
    ``rng = np.random.default_rng(random_state)``) and takes each user's rows with the
    smallest keys as test rows. The first split with an integer seed is therefore the
    split ``split_random(X, test_fraction, random_state)`` makes.

    Parameters
    ----------
    n_splits : int, default 3
        Number of (train, test) splits, >= 1.
    test_fraction : float, default 0.2
        Share of each user's rows held out, in the open interval (0, 1).
    random_state : int, numpy.random.Generator or None, default 0
        Seed of :func:`numpy.random.default_rng`, applied when :meth:`split` is called
        (the global NumPy random state is never used). An int gives the same splits at
        every call; a Generator is advanced, so each call gives new splits (as does
        None, which draws fresh entropy).

    Examples
    --------
    >>> import pandas as pd
    >>> rows = pd.DataFrame({"user_id": [1] * 5 + [2] * 2,
    ...                      "item_id": [10, 11, 12, 13, 14, 10, 11]})
    >>> cv = PerUserHoldout(n_splits=2, test_fraction=0.4, random_state=0)
    >>> [len(test) for train, test in cv.split(rows)]  # floor(0.4*5) + floor(0.4*2)
    [2, 2]

    With scikit-learn installed, ``GridSearchCV(WARPFactorizer(), {"learning_rate":
    [0.02, 0.05]}, cv=PerUserHoldout()).fit(rows)`` selects the parameters with the
    best mean NDCG@10 on the held-out rows.
    """

    _parameter_constraints = {
        "n_splits": [POSITIVE_INT],
        "test_fraction": [Interval(Real, 0, 1, closed="neither",
                                   text="a number strictly between 0 and 1 (the share of "
                                        "each user's rows held out)")],
    }

    def __init__(self, n_splits: int = 3, test_fraction: float = 0.2,
                 random_state: SeedLike = 0) -> None:
        validate_params(dict(n_splits=n_splits, test_fraction=test_fraction),
                        self._parameter_constraints)
        self.n_splits = int(n_splits)
        self.test_fraction = float(test_fraction)
        self.random_state = random_state

    def __repr__(self) -> str:
        return (f"PerUserHoldout(n_splits={self.n_splits}, test_fraction="
                f"{self.test_fraction!r}, random_state={self.random_state!r})")

    def get_n_splits(self, X: object = None, y: object = None, groups: object = None) -> int:
        """Number of splits, ``n_splits`` (the arguments are ignored).

        Parameters
        ----------
        X, y, groups : object, optional
            Ignored; present for scikit-learn compatibility.

        Returns
        -------
        int
        """
        return self.n_splits

    def split(self, X: pd.DataFrame, y: object = None,
              groups: object = None) -> Iterator[tuple[NDArray[np.int64], NDArray[np.int64]]]:
        """Yield ``(train_index, test_index)`` row positions, one pair per split.

        Parameters
        ----------
        X : pandas.DataFrame
            Interaction rows with columns ``user_id`` and ``item_id`` (other columns,
            such as ``rating``, are carried along by whoever indexes X). Not modified.
        y, groups : object, optional
            Ignored; present for scikit-learn compatibility.

        Yields
        ------
        train_index, test_index : ndarray of int64
            Sorted, disjoint positions (for ``X.iloc``) that together cover every row.

        Raises
        ------
        TypeError
            X is not a DataFrame.
        KeyError
            X lacks a ``user_id`` or ``item_id`` column.
        ValueError
            X has no rows, some rows have no ``user_id``, or no user has enough rows
            for one test row (``test_fraction * n_u < 1`` for every user), which would
            leave every test side empty.

        The errors are raised when iteration starts (``split`` is a generator).

        Notes
        -----
        Duplicated (user, item) rows are split independently (a
        :class:`~warprec.exceptions.WarprecWarning` says so), so one pair can be on both
        sides; call :func:`warprec.data.deduplicate` first to avoid this.
        """
        require_columns(X, ("user_id", "item_id"), "PerUserHoldout.split")
        if not len(X):
            raise ValueError("PerUserHoldout.split: X has no rows.")
        users, n_users = factorize_ids(X["user_id"])
        missing = int((users < 0).sum())
        if missing:
            raise ValueError(f"PerUserHoldout.split: {missing} row(s) of X have no user_id; "
                             "drop them first (e.g. X.dropna(subset=['user_id'])).")
        counts = np.bincount(users, minlength=n_users)
        n_test = _n_held_out(self.test_fraction, counts)  # split_random's rule
        if not n_test.any():
            raise ValueError(
                f"PerUserHoldout.split: with test_fraction={self.test_fraction} no user has "
                f"enough rows for a test row (the largest user has {int(counts.max())}); "
                f"raise test_fraction or keep only users with more rows.")
        _warn_duplicates(X, "PerUserHoldout.split")
        rng = np.random.default_rng(self.random_state)
        for _ in range(self.n_splits):
            rank, _ = rank_within_user(users, n_users, rng.random(len(X)))
            test = rank < n_test[users]
            yield np.flatnonzero(~test), np.flatnonzero(test)
