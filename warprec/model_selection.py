"""Cross-validation splitters for interaction data, usable with scikit-learn's searches.

:class:`PerUserHoldout` is a scikit-learn-style cross-validator (``split`` and
``get_n_splits``) over the rows of an interaction DataFrame. It needs no scikit-learn
to import or use; pass it as ``cv=`` to :class:`sklearn.model_selection.GridSearchCV`,
:class:`~sklearn.model_selection.RandomizedSearchCV` or
:func:`~sklearn.model_selection.cross_val_score` together with an estimator that has
a ``score`` method (every warprec model has one that returns NDCG@10, see
:meth:`warprec.WARPFactorizer.score`).
"""

from __future__ import annotations

from collections.abc import Iterator
from numbers import Real

import numpy as np
import pandas as pd

from ._inputs import POSITIVE_INT, Interval, validate_params
from .data import _codes, _n_held_out, _rank_within_user, _require, _warn_duplicates

__all__ = ["PerUserHoldout"]


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

    def __init__(self, n_splits: int = 3, test_fraction: float = 0.2, random_state=0):
        validate_params(dict(n_splits=n_splits, test_fraction=test_fraction),
                        self._parameter_constraints)
        self.n_splits = int(n_splits)
        self.test_fraction = float(test_fraction)
        self.random_state = random_state

    def __repr__(self) -> str:
        return (f"PerUserHoldout(n_splits={self.n_splits}, test_fraction="
                f"{self.test_fraction!r}, random_state={self.random_state!r})")

    def get_n_splits(self, X=None, y=None, groups=None) -> int:
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

    def split(self, X: pd.DataFrame, y=None,
              groups=None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
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
        _require(X, ("user_id", "item_id"), "PerUserHoldout.split")
        if not len(X):
            raise ValueError("PerUserHoldout.split: X has no rows.")
        users, n_users = _codes(X["user_id"])
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
            rank, _ = _rank_within_user(users, n_users, rng.random(len(X)))
            test = rank < n_test[users]
            yield np.flatnonzero(~test), np.flatnonzero(test)
