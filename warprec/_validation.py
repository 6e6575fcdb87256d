"""Validation during training: the held-out split, the per-epoch metric, and the
best-epoch snapshot that early stopping restores.

Used by :class:`warprec.WARPFactorizer` (``early_stopping`` or ``validation_data``) and
by :func:`warprec.tune`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ._defaults import (EARLY_STOPPING_AUTO_USERS, VALIDATION_MAX_USERS,
                        VALIDATION_PAIRS_PER_POSITIVE)
from ._grouping import rank_within_user as _rank_within_user
from .evaluation import METRIC_NAMES, evaluate_factors

__all__ = ["VALIDATION_MAX_USERS", "BestSnapshot", "Monitor", "auto_early_stopping",
           "check_interval", "early_stopping_holdout", "holdout", "parse_metric"]


def parse_metric(text):
    """``"ndcg@10"`` -> ``("ndcg", 10)``; raises ValueError for anything else.

    The metric must be one of :data:`warprec.metrics.METRIC_NAMES` other than ``"auc"``
    and ``"ndcg_graded"`` (validation positives carry no grades), with a cut-off k >= 1.
    """
    allowed = [m for m in METRIC_NAMES if m not in ("auc", "ndcg_graded")]
    if isinstance(text, str) and text.count("@") == 1:
        name, _, k = text.partition("@")
        if name in allowed and k.isdigit() and int(k) >= 1:
            return name, int(k)
    raise ValueError(f"validation_metric must be '<metric>@<k>' with metric one of {allowed} "
                     f"and k >= 1, e.g. 'ndcg@10' (got {text!r}).")


def holdout(matrix, fraction, seed, max_users=None, fold=0):
    """Split a CSR matrix's positives into training and validation positives.

    Each validated user with ``n_u`` positives gives ``floor(fraction * n_u + U)`` of
    them, chosen uniformly at random, to validation (``U`` uniform in [0, 1): stochastic
    rounding, so that even users with a handful of positives are validated in proportion,
    and the expected held-out share is ``fraction`` for every validated user), but never
    the user's last positive.

    The validated users are all users, or, with ``max_users``, a seeded sample of
    ``max_users`` of the users with at least 2 positives (all of them when there are no
    more): a validation check scores at most that many users anyway, so holding out the
    positives of the others would only take them from training.

    ``fold`` k > 0 holds out, from the same users, the next ``n_held`` of each user's
    positives in the same random order (those of rank ``k * n_held`` to ``(k + 1) *
    n_held - 1``, again never the last one): the folds of one seed are disjoint, and fold
    0 is the split of ``fold=0``.

    Returns
    -------
    held : ndarray of bool, shape (nnz,)
        Which stored entries (row-major order) are validation positives.
    """
    rng = np.random.default_rng(seed)
    counts = np.diff(matrix.indptr).astype(np.int64)
    n_held = np.floor(fraction * counts + rng.random(counts.size)).astype(np.int64)
    n_held = np.minimum(n_held, np.maximum(counts - 1, 0))
    if max_users is not None:
        eligible = np.flatnonzero(counts >= 2)
        if eligible.size > max_users:
            chosen = np.zeros(counts.size, dtype=bool)
            chosen[rng.choice(eligible, max_users, replace=False)] = True
            n_held[~chosen] = 0
    rows = np.repeat(np.arange(counts.size), counts)
    rank, _ = _rank_within_user(rows, counts.size, rng.random(matrix.nnz))
    if fold == 0:
        return rank < n_held[rows]
    first = fold * n_held[rows]
    return (rank >= first) & (rank < first + n_held[rows]) & (rank < counts[rows] - 1)


def early_stopping_holdout(matrix, fraction, model_seed, fold=0):
    """The validation positives of early stopping without ``validation_data`` for a
    model whose ``seed_`` is ``model_seed``: :func:`holdout` of ``fraction`` of the
    positives of at most ``VALIDATION_MAX_USERS`` users (``warprec.tune``'s trials train
    on the same split); ``fold`` > 0 gives ``early_stopping="refit"``'s further passes
    disjoint validation positives of the same users."""
    return holdout(matrix, fraction, [model_seed, 1], max_users=VALIDATION_MAX_USERS,
                   fold=fold)


def auto_early_stopping(matrix):
    """Whether ``early_stopping="auto"`` validates on ``matrix``: when at least
    ``EARLY_STOPPING_AUTO_USERS`` users have 2 or more positives."""
    counts = np.diff(matrix.indptr)
    return int(np.count_nonzero(counts >= 2)) >= EARLY_STOPPING_AUTO_USERS


def check_interval(n_checked_users, n_items, n_positives):
    """Epochs between validation checks for ``validation_interval="auto"``: a check
    scores ``n_checked_users x n_items`` pairs, which costs about as much as training
    ``VALIDATION_PAIRS_PER_POSITIVE`` times fewer positives; checking every
    ``ceil(pairs / (VALIDATION_PAIRS_PER_POSITIVE x n_positives))`` epochs (at least 1)
    keeps the checks at about a quarter of the training time or less."""
    pairs = float(n_checked_users) * float(n_items)
    return max(1, math.ceil(pairs / (VALIDATION_PAIRS_PER_POSITIVE * max(n_positives, 1))))


def select(matrix, keep):
    """The CSR matrix of ``matrix``'s entries where ``keep`` (row-major mask) is true."""
    rows = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))
    out = sp.csr_matrix((matrix.data[keep], (rows[keep], matrix.indices[keep])),
                        shape=matrix.shape)
    out.sort_indices()
    return out


class Monitor:
    """Scores factors on validation positives: ``metric@k`` over (a sample of) the users
    with validation positives, their training positives excluded.

    Parameters
    ----------
    valid, train : scipy.sparse.csr_matrix
        Validation and training positives in the model's index space.
    metric : str
        ``"<name>@<k>"``, see :func:`parse_metric`.
    seed : int
        Seeds the user sample when more than ``max_users`` users have validation positives.
    n_threads : int
    n_relevant : ndarray of int, optional
        Validation positives per user, counting those on items the model cannot score.
    record : bool, default False
        Keep every check's per-user values in ``recorded`` (epochs trained -> float64
        values of ``users``; a later check after the same number of epochs, as after a
        learning-rate drop's restore, replaces the earlier one).
    """

    def __init__(self, valid, train, metric, seed, n_threads, n_relevant=None,
                 max_users=VALIDATION_MAX_USERS, record=False):
        self.name, self.k = parse_metric(metric)
        self.key = f"{self.name}@{self.k}"
        counts = np.diff(valid.indptr) if n_relevant is None else np.asarray(n_relevant)
        users = np.flatnonzero(counts > 0)
        if users.size == 0:
            raise ValueError("No user has validation positives: the data is too small for "
                             "early stopping (each user needs at least 2 positives). Pass "
                             "validation_data=, raise validation_fraction, or set "
                             "early_stopping=False.")
        if users.size > max_users:
            users = np.sort(np.random.default_rng(seed).choice(users, max_users, replace=False))
        self.users = users
        self.valid = valid[users]
        self.train = train[users]
        self.n_relevant = counts[users].astype(np.int64)
        self.n_threads = n_threads
        self.recorded: dict[int, np.ndarray] | None = {} if record else None

    def values(self, user_factors, item_factors, item_biases):
        """The metric of every checked user (float64, in the order of ``users``)."""
        frame = evaluate_factors(user_factors[self.users], item_factors, item_biases,
                                 self.valid, self.train, k=self.k, metrics=[self.name],
                                 n_relevant=self.n_relevant, n_threads=self.n_threads,
                                 per_user=True)
        assert isinstance(frame, pd.DataFrame)
        return frame[self.key].to_numpy(np.float64)

    def __call__(self, user_factors, item_factors, item_biases, epochs=None):
        """The metric's mean over the checked users (their values recorded under
        ``epochs`` when the monitor records)."""
        values = self.values(user_factors, item_factors, item_biases)
        if self.recorded is not None and epochs is not None:
            self.recorded[int(epochs)] = values
        defined = values[~np.isnan(values)]
        # (the same exactly rounded mean as evaluate_factors's)
        return math.fsum(defined.tolist()) / defined.size if defined.size else math.nan


class BestSnapshot:
    """A copy of named arrays taken at the best score so far, restored in place."""

    def __init__(self):
        self.score = -np.inf
        self.epochs = None
        self.arrays = {}

    def offer(self, score, epochs, arrays):
        """Keep a copy of ``arrays`` if ``score`` beats the best; returns whether it did."""
        if not score > self.score:
            return False
        self.score, self.epochs = score, epochs
        for name, array in arrays.items():
            if name in self.arrays:
                np.copyto(self.arrays[name], array)
            else:
                self.arrays[name] = array.copy()
        return True

    def restore(self, arrays):
        """Copy the kept arrays back into ``arrays`` (same names, in place)."""
        for name, array in arrays.items():
            np.copyto(array, self.arrays[name])
