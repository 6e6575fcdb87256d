"""The clocks a :func:`warprec.tune` budget is counted on: wall time, or counted work.

:class:`WallClock` reads ``time.perf_counter``. :class:`WorkClock` counts the work the
search does, from the training kernel's own counts, and turns it into seconds at a fixed
reference speed (``WORK_*_SECONDS`` in :mod:`warprec._defaults`, measured by
``benchmarks/work_clock.py``). Three kinds of work, each a count times the embedding
dimension ``d``:

* training (:func:`training_units`): per epoch, the samples (each reads its user's
  and its positive's rows, at random places in memory: a cost of its own whatever
  ``d``), and ``d x r x (scored negatives + updates)``, with ``r`` the mean number of
  feature rows per item (1 without side features);
* a validation check (:func:`check_units`): ``d x checked users x items``, the pairs it
  scores;
* a fit call's setup (:func:`setup_units`): the positives of X, which it copies, splits
  and indexes (not times ``d``).

Training and checks run on ``n_threads`` threads, the setup on one. A search counted on
the work clock depends on X, the search's arguments and the kernels' counts only, never
on the machine's speed or load: with one thread the same call makes the same choices on
any machine; with several, Hogwild's thread interleaving still varies the counts and
scores a little.
"""

from __future__ import annotations

import time
from typing import Any

from ._defaults import (WORK_CHECK_SECONDS, WORK_ROW_SECONDS, WORK_SAMPLE_SECONDS,
                        WORK_SETUP_SECONDS)

__all__ = ["WallClock", "WorkClock", "check_units", "feature_rows", "setup_units",
           "training_units"]


def training_units(info: dict[str, Any], d: int, rows_per_item: float = 1.0
                   ) -> tuple[float, float]:
    """The training work of one epoch whose ``history_`` entry is ``info``: its samples,
    and the rows it scored or updated (scored negatives and updates) times ``d`` and the
    feature rows per item."""
    samples = float(info["samples"])
    trials = float(info["mean_trials"]) * samples
    return samples, float(d) * float(rows_per_item) * (trials + float(info["updates"]))


def feature_rows(model: Any) -> float:
    """The mean number of feature rows per item of a fitted model (1 without side
    features): the rows a scored item's representation sums."""
    features = getattr(model, "item_features_", None)
    if features is None or features.shape[0] == 0:
        return 1.0
    return max(float(features.nnz) / float(features.shape[0]), 1.0)


def check_units(n_checked_users: int, n_items: int, d: int) -> float:
    """The work of one validation check."""
    return float(d) * float(n_checked_users) * float(n_items)


def setup_units(n_positives: int) -> float:
    """The work of a fit call's setup before its first epoch."""
    return float(n_positives)


class WallClock:
    """Wall time. ``now()`` is ``time.perf_counter()``; an epoch's training seconds are
    those the trainer measured."""

    counts_compilation = True

    def now(self) -> float:
        return time.perf_counter()

    def start_fit(self, n_positives: int) -> None:
        """A fit call begins (nothing to count: the wall clock runs)."""

    def epoch(self, info: dict[str, Any], d: int, rows_per_item: float,
              checked_pairs: float) -> float:
        """An epoch ended; returns its training seconds (validation excluded)."""
        return float(info["seconds"])


class WorkClock:
    """Counted work, in seconds at the reference speed; ``now()`` starts at 0 and moves
    only by what :meth:`start_fit` and :meth:`epoch` count.

    Parameters
    ----------
    n_threads : int
        The threads of every trial: training and checks are counted as spread over them.
    """

    counts_compilation = False

    def __init__(self, n_threads: int) -> None:
        self.threads = max(int(n_threads), 1)
        self.elapsed = 0.0

    def now(self) -> float:
        return self.elapsed

    def start_fit(self, n_positives: int) -> None:
        """A fit call begins: count its setup."""
        self.elapsed += WORK_SETUP_SECONDS * setup_units(n_positives)

    def epoch(self, info: dict[str, Any], d: int, rows_per_item: float,
              checked_pairs: float) -> float:
        """An epoch ended (with a check of ``checked_pairs`` pairs if ``info`` has a
        ``"validation"`` score): count it; returns its training seconds."""
        samples, rows = training_units(info, d, rows_per_item)
        train = (WORK_SAMPLE_SECONDS * samples + WORK_ROW_SECONDS * rows) / self.threads
        check = WORK_CHECK_SECONDS * float(d) * checked_pairs / self.threads \
            if "validation" in info else 0.0
        self.elapsed += train + check
        return train
