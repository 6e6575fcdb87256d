"""How many epochs ``early_stopping="refit"`` trains for: the count its validated passes
agree on, and the plain fit's count unless they clearly agree on a better one.

One hold-out of a few thousand users gives a noisy validation curve: its best epoch can
be anywhere on a long plateau, and a refit for that many epochs then lands anywhere in
the range of quality around it. The passes validate on disjoint hold-outs of the same
users (:func:`warprec._validation.holdout`'s ``fold``), as many as it takes for their
checked users to add up to about ``VALIDATION_MAX_USERS`` (:func:`refit_folds`), and each
trains at least the plain fit's epoch count (so that every pass scores it). The checked
users of all passes are split in two halves: the epoch count where the first half's mean
score peaks is taken if, on the second half, it beats the score at the plain fit's count
by more than ``REFIT_Z`` standard errors of the per-user paired differences (one-sided;
Breiman's one-standard-error rule in spirit, with the plain fit as the model preferred on
a tie); else the plain fit's count. Choosing the peak on one half and testing it on the
other keeps the test honest: the highest of many noisy means is biased upwards (the
winner's curse), and on the half that did not choose it, it is not. Where the defaults
themselves early-stop (20,000 users or more) there is no refit: the estimator keeps the
validated pass's model, as the defaults do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._defaults import AUTO_EPOCHS, REFIT_MAX_FOLDS, REFIT_Z, VALIDATION_MAX_USERS

__all__ = ["Agreement", "agreed_epochs", "plain_epochs", "refit_folds"]


def refit_folds(n_checked_users: int) -> int:
    """The validated passes of a refit whose first pass checked ``n_checked_users`` users:
    enough for about ``VALIDATION_MAX_USERS`` checked users in all, at most
    ``REFIT_MAX_FOLDS``."""
    wanted = math.ceil(VALIDATION_MAX_USERS / max(int(n_checked_users), 1))
    return int(min(REFIT_MAX_FOLDS, max(1, wanted)))


def plain_epochs(max_epochs: int) -> int:
    """The epoch count of the plain fit a refit must not lose to: ``epochs="auto"``'s
    count without early stopping, or the refit's maximum when that is lower."""
    return int(min(AUTO_EPOCHS, max_epochs))


@dataclass(frozen=True)
class Agreement:
    """What the validated passes agreed on."""

    #: the epochs to train for
    epochs: int
    #: the epochs checked in every pass, and the passes' mean score at each
    checked: tuple[int, ...]
    scores: tuple[float, ...]
    #: the epochs where the first half's mean score peaks, and the plain fit's (checked)
    #: count
    peak: int
    plain: int
    #: the peak's mean gain over the plain count on the second half, and its standard
    #: error
    gain: float
    standard_error: float


def agreed_epochs(recordings: list[dict[int, np.ndarray]], plain: int,
                  z: float = REFIT_Z) -> Agreement:
    """The epochs to refit for, from the per-user validation scores of the passes.

    Parameters
    ----------
    recordings : list of dict
        One per pass: epochs trained -> per-user scores at that check (the same users in
        every check of a pass; :class:`warprec._validation.Monitor`'s ``recorded``).
    plain : int
        The plain fit's epoch count; the largest epoch count checked in every pass that
        does not exceed it stands for it (the smallest checked one if none does).
    z : float
        Standard errors the peak must beat the plain count by (on the second half).
    """
    checked = sorted(set.intersection(*(set(r) for r in recordings)))
    if not checked:
        raise ValueError("the validated passes have no checked epoch in common")
    pooled = {e: np.concatenate([r[e] for r in recordings]) for e in checked}
    means = [float(np.nanmean(pooled[e])) for e in checked]
    # (alternate users: the pooled order is pass by pass, users in index order)
    chooser = [float(np.nanmean(pooled[e][0::2])) for e in checked]
    peak = checked[int(np.argmax(chooser))]   # (the first of equal maxima: fewer epochs)
    below = [e for e in checked if e <= plain]
    base = below[-1] if below else checked[0]
    diff = pooled[peak][1::2] - pooled[base][1::2]
    diff = diff[~np.isnan(diff)]
    gain = float(diff.mean()) if diff.size else 0.0
    error = float(diff.std(ddof=1) / math.sqrt(diff.size)) if diff.size > 1 else math.inf
    chosen = peak if peak != base and gain > z * error else base
    return Agreement(epochs=int(chosen), checked=tuple(checked), scores=tuple(means),
                     peak=int(peak), plain=int(base), gain=gain, standard_error=error)
