"""Rank weightings L(r) = sum_{j<=r} tau_j turning an (estimated) rank into a loss weight.

WARP (Weston, Bengio & Usunier 2010, "Large scale image annotation: learning to rank with
joint word-image embeddings", Machine Learning 81(1); after Usunier, Buffoni & Gallinari
2009) weights the hinge gradient of a violating pair by ``L(rank)`` where ``rank`` is the
number of negatives scored at least as high as the positive and
``tau_1 >= tau_2 >= ... >= 0``:

* ``tau_j = 1`` for all j: mean rank, i.e. AUC (``"auc"``);
* ``tau_1 = 1``, ``tau_j = 0`` for j > 1: precision at 1 (``"precision@1"``);
* ``tau_j = 1`` for j <= k, 0 after: precision at k (``"precision@k"`` / ``"precision@5"``);
* ``tau_j = 1/j``: a smooth weighting that favours the top of the list for many k at once
  (``"harmonic"``, the default);
* ``L(r) = log(r)`` (``"log"``): LightFM's weighting, for comparison (it is not of the
  non-increasing-tau form: tau_1 = 0).

Ordered Weighted Pairwise Classification (Usunier, Buffoni & Gallinari 2009, "Ranking with
ordered weighted pairwise classification", ICML) uses
normalised weights alpha_j^n that depend on the user's number of negatives n and sum to 1,
``Phi_n(k) = sum_{j<=k} alpha_j^n``. They are expressed here by two numbers besides the
table: ``top_fraction`` p restricts the weights to the first ``m = ceil(p * n)`` positions
and ``normalize`` divides by ``L(m)``, so that ``Phi_n(r) = L(min(r, m)) / L(m)``:

* ``"owpc-mean"``: alpha_j = 1/n (mean rank, normalised AUC);
* ``"owpc-top"``: alpha_1 = 1 (top rank);
* ``"owpc-top-p"``: alpha_j = 1/m for j <= m = ceil(p n) (mean rank over the top p percent);
* ``"owpc-harmonic"``: alpha_j proportional to 1/j (the weights of the paper's experiments).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from typing import Any, SupportsFloat, TypeGuard

    from numpy.typing import ArrayLike, NDArray

__all__ = ["RankWeighting", "resolve_rank_weighting", "WEIGHTING_NAMES"]

WEIGHTING_NAMES = ("harmonic", "auc", "precision@k", "precision@1", "log",
                   "owpc-mean", "owpc-top", "owpc-top-p", "owpc-harmonic")


@dataclass(frozen=True)
class RankWeighting:
    """A resolved rank weighting.

    Attributes
    ----------
    table : ndarray of float64, shape (n_max + 1,)
        ``table[r] = L(r) = sum_{j<=r} tau_j``; ``table[0] == 0``.
    top_fraction : float
        Fraction p of a user's negatives over which the weights are spread (1.0 = all).
    normalize : bool
        Divide by ``L(m)``, ``m = ceil(p * n)``, so the weights of a user sum to 1 (OWPC).
    """

    table: NDArray[np.float64]
    top_fraction: float = 1.0
    normalize: bool = False

    def loss(self, rank: ArrayLike, n_negatives: ArrayLike) -> float | NDArray[np.float64]:
        """Loss weight ``Phi_n(rank)`` for a rank among ``n_negatives`` negatives.

        Parameters
        ----------
        rank : int or array of int
            Number of negatives ranked above the positive (0 means top-ranked).
        n_negatives : int or array of int
            The user's number of negatives n (>= 1).

        Returns
        -------
        float or ndarray
            ``L(min(rank, m)) / (L(m) if normalize else 1)`` with ``m = ceil(p n)``;
            0 when the normaliser ``L(m)`` is 0.
        """
        rank = np.asarray(rank, dtype=np.int64)
        n = np.asarray(n_negatives, dtype=np.int64)
        m = np.minimum(_top_positions(n, self.top_fraction), len(self.table) - 1)
        value = self.table[np.minimum(rank, m)]
        if self.normalize:
            denom = self.table[m]
            value = np.divide(value, denom, out=np.zeros_like(value), where=denom > 0)
        return value[()] if value.ndim == 0 else value


def _top_positions(n: ArrayLike, top_fraction: float) -> NDArray[np.int64]:
    """m = ceil(p * n), at least 1 (vectorised)."""
    return np.maximum(np.ceil(np.asarray(n) * top_fraction - 1e-9).astype(np.int64), 1)


def _harmonic(n_max: int) -> NDArray[np.float64]:
    table = np.zeros(n_max + 1)
    table[1:] = np.cumsum(1.0 / np.arange(1, n_max + 1))
    return table


def _precision_at(k: int, n_max: int) -> NDArray[np.float64]:
    return np.minimum(np.arange(n_max + 1, dtype=np.float64), float(k))


def resolve_rank_weighting(rank_weighting: str | ArrayLike, n_max: int, *, k: int | None = None,
                           top_fraction: float | None = None) -> RankWeighting:
    """Turn the estimator's ``rank_weighting`` parameter into a :class:`RankWeighting`.

    Parameters
    ----------
    rank_weighting : str or array_like
        One of ``WEIGHTING_NAMES``, ``"precision@<int>"``, or a user-given 1-D array
        ``tau`` (finite, non-negative, non-increasing); positions beyond ``len(tau)`` get
        ``tau_j = 0``.
    n_max : int
        Largest rank that can occur (the number of items); the table has ``n_max + 1``
        entries.
    k : int, optional
        Cut-off of ``"precision@k"``.
    top_fraction : float, optional
        p of ``"owpc-top-p"`` (0 < p <= 1).

    Returns
    -------
    RankWeighting

    Raises
    ------
    ValueError
        Unknown name, missing/invalid ``k`` or ``top_fraction``, or an invalid ``tau``.
    """
    n_max = max(int(n_max), 1)
    if isinstance(rank_weighting, str):
        name = rank_weighting.strip().lower()
        match = re.fullmatch(r"precision@(\d+)", name)
        if match:
            return RankWeighting(_precision_at(_check_k(int(match.group(1))), n_max))
        if name == "precision@k":
            if k is None:
                raise ValueError("rank_weighting='precision@k' needs the cut-off: pass k=<int>, "
                                 "or write it in the name, e.g. 'precision@5'.")
            return RankWeighting(_precision_at(_check_k(k), n_max))
        if name == "harmonic":
            return RankWeighting(_harmonic(n_max))
        if name == "auc":
            return RankWeighting(np.arange(n_max + 1, dtype=np.float64))
        if name == "log":
            table = np.log(np.maximum(np.arange(n_max + 1, dtype=np.float64), 1.0))
            return RankWeighting(table)
        if name == "owpc-mean":
            return RankWeighting(np.arange(n_max + 1, dtype=np.float64), 1.0, True)
        if name == "owpc-top":
            return RankWeighting(_precision_at(1, n_max), 1.0, True)
        if name == "owpc-harmonic":
            return RankWeighting(_harmonic(n_max), 1.0, True)
        if name == "owpc-top-p":
            if not _is_fraction(top_fraction):
                raise ValueError("rank_weighting='owpc-top-p' needs top_fraction in (0, 1] "
                                 f"(got {top_fraction!r}), e.g. top_fraction=0.1 for the top 10%.")
            return RankWeighting(np.arange(n_max + 1, dtype=np.float64), float(top_fraction), True)
        raise ValueError(f"Unknown rank_weighting {rank_weighting!r}; choose one of "
                         f"{', '.join(WEIGHTING_NAMES)}, 'precision@<k>', or pass an array of "
                         "non-increasing non-negative tau_j.")
    try:
        tau = np.asarray(rank_weighting, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("rank_weighting must be a name (e.g. 'harmonic') or a flat 1-D array "
                         f"of numbers tau_j; got {type(rank_weighting).__name__} "
                         f"{str(rank_weighting)[:60]}.") from None
    if tau.ndim != 1 or tau.size == 0:
        raise ValueError(f"rank_weighting array must be 1-D and non-empty (got shape {tau.shape}).")
    if not np.all(np.isfinite(tau)) or np.any(tau < 0):
        raise ValueError("rank_weighting array must hold finite, non-negative tau_j.")
    if np.any(np.diff(tau) > 0):
        raise ValueError("rank_weighting array must be non-increasing (tau_1 >= tau_2 >= ...); "
                         f"first increase at position {int(np.argmax(np.diff(tau) > 0)) + 2}.")
    full = np.zeros(n_max)
    full[: min(n_max, tau.size)] = tau[:n_max]
    table = np.zeros(n_max + 1)
    table[1:] = np.cumsum(full)
    return RankWeighting(table)


def _is_fraction(value: Any) -> TypeGuard[SupportsFloat]:
    """Whether ``value`` is a real number in (0, 1]."""
    try:
        return not isinstance(value, (bool, str)) and 0.0 < float(value) <= 1.0
    except (TypeError, ValueError):
        return False


def _check_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"precision@k weighting needs a positive integer k (got {k!r}).")
    return int(k)

