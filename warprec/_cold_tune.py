"""The cold-start validation of :func:`warprec.tune` (``cold_start="items"`` or
``"users"``).

:func:`split` holds out every positive of a seeded share of the items (users) that have
side features, as :func:`warprec.splitting.split_cold_items` (``split_cold_users``) does;
every trial trains on the rest (:attr:`ColdSplit.trial_input`), and
:meth:`ColdSplit.values` scores a trial's model on the held-out entities, each embedded
from its features alone, as :func:`warprec.evaluation.evaluate_cold_items`
(``evaluate_cold_users``) does. :class:`ColdStopping` wraps a trial's callback: it scores
the model after every ``interval``-th epoch, keeps a copy of the parameters of the best
check, stops the fit ``patience`` epochs after it, and :meth:`ColdStopping.finish`
restores them, as the estimator's own early stopping does with held-out positives of
known entities.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
import scipy.sparse as sp

from . import _hybrid, _validation
from ._defaults import VALIDATION_MAX_USERS
from ._features import FeatureEncoder
from ._inputs import IdMap
from .evaluation import evaluate_factors
from .exceptions import WarprecWarning

__all__ = ["ColdSplit", "ColdStopping", "split"]

#: ``cold_start`` -> the kind of entity held out.
KINDS: dict[str, Literal["user", "item"]] = {"items": "item", "users": "user"}


@dataclass
class ColdSplit:
    """The held-out entities of a cold-start validation and what scores them.

    Attributes
    ----------
    kind : {"item", "user"}
    cold : ndarray of int64
        The held-out entities' indices in X's index space (ascending).
    train, valid : scipy.sparse.csr_matrix
        X's positives (X's shape) without and with the held-out entities' positives.
    trial_input : warprec.data.Interactions
        What every trial fits on: ``train``'s positives with the users and items they
        name (raw ids, or X's indices for matrix input).
    trial_features : dict
        ``fit``'s side-feature arguments of a trial: the given tables' rows of the
        trial's users and items.
    held_features : DataFrame or sparse matrix
        The feature rows of the checked held-out entities (``users`` for
        ``kind="user"``, else every held-out item), in the order of ``relevant``'s rows
        (users) or columns (items).
    users : ndarray of int64
        ``kind="item"``: the checked users' indices in the trial's model. ``"user"``: the
        checked held-out users' positions in ``cold``.
    relevant : scipy.sparse.csr_matrix
        Checked users x candidates (held-out items; the trial's items for ``"user"``):
        the held-out positives.
    metric : str
    n_threads : int or None
    """

    kind: Literal["user", "item"]
    cold: np.ndarray
    train: sp.csr_matrix
    valid: sp.csr_matrix
    trial_input: Any
    trial_features: dict
    held_features: Any
    users: np.ndarray
    relevant: sp.csr_matrix
    metric: str
    n_threads: int | None

    @property
    def checked_pairs(self) -> float:
        """The (user, candidate) pairs a check scores."""
        return float(self.relevant.shape[0]) * float(self.relevant.shape[1])

    def interval(self) -> int:
        """Epochs between checks on large data, as ``validation_interval="auto"``
        (:func:`warprec._validation.check_interval`)."""
        return _validation.check_interval(self.relevant.shape[0], self.relevant.shape[1],
                                          self.train.nnz)

    def values(self, model: Any) -> np.ndarray:
        """The metric of every checked user (float64, in the order of ``relevant``'s
        rows) for ``model``, a trial's model: the held-out items ranked for each user
        from the items' features alone, or every item ranked for each held-out user
        from the user's features alone (nothing excluded either way)."""
        name, k = _validation.parse_metric(self.metric)
        with warnings.catch_warnings():
            # (feature values no trial entity has: said by evaluate_cold_*, not per check)
            warnings.simplefilter("ignore", WarprecWarning)
            if self.kind == "item":
                factors, biases = model.item_embeddings(item_features=self.held_features)
                users = model.user_factors_[self.users]
            else:
                users = model.user_embeddings(user_features=self.held_features)
                factors, biases = model.item_factors_, model.item_biases_
        frame = evaluate_factors(users, factors, biases, self.relevant, None, k,
                                 metrics=[name], n_threads=self.n_threads, per_user=True)
        assert isinstance(frame, pd.DataFrame)
        return frame[f"{name}@{k}"].to_numpy(np.float64)

    @staticmethod
    def mean(values: np.ndarray) -> float:
        """The users' mean (exactly rounded, as :func:`evaluate_factors`'s)."""
        defined = values[~np.isnan(values)]
        return math.fsum(defined.tolist()) / defined.size if defined.size else math.nan


class ColdStopping:
    """A trial's callback that validates on the held-out entities and early-stops.

    Checks after every ``interval``-th epoch of the call and after its last one
    (``epochs``); a check's score goes into ``info["validation"]`` (so the epoch's
    ``history_`` entry has it, and the clock counts the check) and
    ``model.validation_scores_``. Training stops at the first check at least
    ``patience`` epochs after the best one (or when ``callback`` returns False);
    :meth:`finish` then restores the best check's parameters and sets ``best_epoch_``
    and ``epochs_done_`` to its epoch count, as the estimator's early stopping does.
    """

    def __init__(self, split: ColdSplit, callback: Any, patience: int, interval: int,
                 epochs: int) -> None:
        self.split, self.callback = split, callback
        self.patience, self.interval, self.epochs = int(patience), int(interval), int(epochs)
        self.done = 0
        self.best = _validation.BestSnapshot()

    def __call__(self, model: Any, info: dict) -> bool:
        self.done += 1
        checked = self.done % self.interval == 0 or self.done == self.epochs
        if checked:
            score = ColdSplit.mean(self.split.values(model))
            info["validation"] = score
            model.validation_scores_.append(score)
            self.best.offer(score, int(model.epochs_done_), _arrays(model))
        if self.callback is not None and self.callback(model, info) is False:
            return False
        return not (checked and self.best.epochs is not None
                    and model.epochs_done_ - self.best.epochs >= self.patience)

    def finish(self, model: Any) -> None:
        """Back to the best check's parameters (if any check scored)."""
        if self.best.epochs is None:
            return
        self.best.restore(_arrays(model))
        _hybrid.represent(model)
        model.epochs_done_ = self.best.epochs
        model.best_epoch_ = self.best.epochs


def _arrays(model: Any) -> dict[str, np.ndarray]:
    """The arrays the hybrid model's training updates."""
    return {name: getattr(model, name) for name in _hybrid.FEATURE_ARRAYS}


def split(matrix: sp.csr_matrix, user_ids: np.ndarray | None, item_ids: np.ndarray | None,
          features: dict[str, Any], cold_start: str, fraction: float, seed: int,
          metric: str, n_threads: int | None) -> ColdSplit:
    """The cold-start split of X (``matrix`` with its raw ids, None for matrix input).

    The candidates are the entities of ``cold_start``'s kind with a feature row (a
    DataFrame row naming them, or a non-empty row of a matrix) and a positive; the
    held-out ones are ``round(fraction * n)`` of the ``n`` candidates: the candidates
    sorted by raw id (index for matrix input), the first of
    ``np.random.default_rng(seed).permutation(n)``, as
    :func:`warprec.splitting.split_cold_items` / ``split_cold_users`` draw them. The
    checked users are the trial's users with a held-out positive (``"items"``) or the
    held-out users with a positive on a trial's item (``"users"``), a seeded sample of
    ``VALIDATION_MAX_USERS`` if there are more. Raises ValueError when there is nothing
    to hold out, nothing left to train on, or no user to check."""
    from .data import Interactions

    kind = KINDS[cold_start]
    given = features[f"{kind}_features"]
    n_users, n_items = matrix.shape
    ids = {"user": user_ids if user_ids is not None else np.arange(n_users, dtype=np.int64),
           "item": item_ids if item_ids is not None else np.arange(n_items, dtype=np.int64)}
    raw = {"user": user_ids, "item": item_ids}
    n = n_items if kind == "item" else n_users
    counts = (np.bincount(matrix.indices, minlength=n_items) if kind == "item"
              else np.diff(matrix.indptr))
    featured = _featured(given, kind, raw[kind], n)
    candidates = np.flatnonzero(featured & (counts > 0))
    n_cold = int(round(fraction * candidates.size))
    what = f"{kind}s"
    if n_cold == 0:
        raise ValueError(f"cold_start={cold_start!r}: validation_fraction={fraction} of the "
                         f"{candidates.size} {what} with features and positives holds out "
                         f"none; raise validation_fraction or describe more {what} in "
                         f"{kind}_features.")
    if n_cold >= int(np.count_nonzero(counts > 0)):
        raise ValueError(f"cold_start={cold_start!r}: validation_fraction={fraction} holds "
                         f"out every {kind} of X; lower it so that some are left to train "
                         f"on.")
    order = np.argsort(ids[kind][candidates], kind="stable")
    chosen = order[np.random.default_rng(seed).permutation(candidates.size)[:n_cold]]
    cold = np.sort(candidates[chosen]).astype(np.int64)
    is_cold = np.zeros(n, dtype=bool)
    is_cold[cold] = True
    rows = np.repeat(np.arange(n_users), np.diff(matrix.indptr))
    held = is_cold[matrix.indices] if kind == "item" else is_cold[rows]
    train, valid = _validation.select(matrix, ~held), _validation.select(matrix, held)
    keep = {"user": np.flatnonzero(np.diff(train.indptr) > 0),
            "item": np.flatnonzero(np.bincount(train.indices, minlength=n_items) > 0)}
    trial_input = Interactions(train[keep["user"]][:, keep["item"]],
                               ids["user"][keep["user"]], ids["item"][keep["item"]])
    trial_features = {f"{k}_features": _rows(f, k, raw[k], keep[k], len(ids[k]))
                      for k, f in (("user", features.get("user_features")),
                                   ("item", features.get("item_features"))) if f is not None}
    rng = np.random.default_rng([seed, 7])
    if kind == "item":
        relevant = valid[keep["user"]][:, cold]
        users = np.flatnonzero(np.diff(relevant.indptr) > 0)
        users = _sample(users, rng)
        relevant, held_features = relevant[users], _rows(given, kind, raw[kind], cold, n)
        if users.size == 0:
            raise ValueError(f"cold_start={cold_start!r}: no user with positives on other "
                             f"items has a positive on the held-out items; tune on more "
                             f"data.")
    else:
        relevant = valid[cold][:, keep["item"]]
        users = _sample(np.flatnonzero(np.diff(relevant.indptr) > 0), rng)
        if users.size == 0:
            raise ValueError(f"cold_start={cold_start!r}: no held-out user has a positive on "
                             f"an item that other users have; tune on more data.")
        relevant, held_features = relevant[users], _rows(given, kind, raw[kind],
                                                         cold[users], n)
    relevant = sp.csr_matrix(relevant, dtype=np.float32)
    relevant.sort_indices()
    return ColdSplit(kind=kind, cold=cold, train=train, valid=valid, trial_input=trial_input,
                     trial_features=trial_features, held_features=held_features,
                     users=users.astype(np.int64), relevant=relevant, metric=metric,
                     n_threads=n_threads)


def _sample(users: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """At most ``VALIDATION_MAX_USERS`` of ``users`` (a seeded sample, in order)."""
    if users.size > VALIDATION_MAX_USERS:
        users = np.sort(rng.choice(users, VALIDATION_MAX_USERS, replace=False))
    return users


def _positions(frame: pd.DataFrame, kind: str, raw: np.ndarray | None,
               n: int) -> np.ndarray:
    """The index in X of each row of a feature DataFrame (-1: not an entity of X)."""
    column = f"{kind}_id"
    if column not in frame.columns:
        raise ValueError(f"{kind}_features needs a {column!r} column (it labels the rows).")
    values = frame[column].to_numpy()
    if frame[column].duplicated().any():
        first = frame[column][frame[column].duplicated()].iloc[0]
        raise ValueError(f"{kind}_features has several rows for {kind} {first!r}; give one "
                         f"row per {kind}.")
    if raw is not None:
        return IdMap(raw).indexer(values).astype(np.int64)
    numbers = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(np.float64)
    good = np.isfinite(numbers) & (numbers >= 0) & (numbers < n) & (numbers % 1 == 0)
    return np.where(good, np.nan_to_num(numbers), -1).astype(np.int64)


def _featured(given: Any, kind: str, raw: np.ndarray | None, n: int) -> np.ndarray:
    """Which of X's ``n`` entities of ``kind`` have a feature row."""
    featured = np.zeros(n, dtype=bool)
    if isinstance(given, pd.DataFrame):
        positions = _positions(given, kind, raw, n)
        featured[positions[positions >= 0]] = True
        return featured
    matrix = FeatureEncoder("user" if kind == "user" else "item").as_matrix(given)
    if matrix.shape[0] != n:
        raise ValueError(f"{kind}_features has {matrix.shape[0]} rows; it needs one per "
                         f"{kind} of X ({n}), in X's index space.")
    return np.diff(matrix.indptr) > 0


def _rows(given: Any, kind: str, raw: np.ndarray | None, chosen: np.ndarray, n: int) -> Any:
    """The feature rows of entities ``chosen`` (indices in X), in that order: a
    DataFrame's rows naming them (the rows of entities without one left out), or a
    matrix's rows."""
    if isinstance(given, pd.DataFrame):
        positions = _positions(given, kind, raw, n)
        row_of = np.full(n, -1, dtype=np.int64)
        row_of[positions[positions >= 0]] = np.flatnonzero(positions >= 0)
        picked = row_of[chosen]
        return given.iloc[picked[picked >= 0]].reset_index(drop=True)
    matrix = FeatureEncoder("user" if kind == "user" else "item").as_matrix(given)
    return matrix[chosen]
