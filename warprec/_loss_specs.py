"""One place per loss: what each of ``WARPFactorizer``'s losses reads, allows and produces.

Every loss is a small frozen :class:`LossSpec`: its kernel code, the estimator parameters it
reads, what it is compatible with (side features, popularity-drawn negatives, the exact
rank estimate, several violators per positive, the prefetching kernel, fold-in), its
``"auto"`` rules (learning rate, weight decay, dropout, learning-rate drop, initial scale)
and the kernel settings it produces (:meth:`LossSpec.list_settings`,
:meth:`LossSpec.work_entries`). The estimator, the trainer, the tuner and distributed
training ask the spec; none of them tests a loss's name.

The public surface stays flat, as scikit-learn's ``SGDClassifier`` is (one constructor
whose ``loss`` selects the spec), which is what ``GridSearchCV`` and ``set_params`` need.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._defaults import (AUTO_ALPHA, AUTO_ALPHA_LR_CAP, AUTO_ALPHA_MAX, AUTO_LR, AUTO_LR_ITEM,
                        AUTO_LR_MAX, AUTO_LR_MIN, CCL_AUTO_LR, CCL_DROPOUT,
                        CCL_LEARNING_RATE_DROP, CCL_LR_MAX, CCL_LR_MIN, CCL_NEGATIVE_WEIGHT)
from ._inputs import check_positive_int
from ._kernels import train as _train

__all__ = ["LossSpec", "LOSSES", "SPHERE_LOSSES", "loss_spec"]


@dataclass(frozen=True)
class LossSpec:
    """The rules of one loss.

    Attributes
    ----------
    name : str
        The value of ``WARPFactorizer(loss=...)``.
    code : int
        The kernel's loss code (``warprec._kernels.train.LOSS_*``).
    parameters : tuple of str
        The estimator parameters this loss reads (beyond the shared ones: rates, decay,
        epochs, threads, early stopping).
    sphere : bool
        Factor rows are kept at unit norm (scores are cosines): no weight decay, norm
        bound or rank estimate.
    rank_estimate : bool
        The geometric-trial rank estimate of WARP: ``rank_estimator="exact"`` and
        ``max_violators > 1`` apply.
    popularity : bool
        Negatives may be drawn by popularity (the rank estimates assume uniform draws).
    features : bool
        Side features are supported (the hybrid kernel).
    prefetch : bool
        The kernel has a prefetching variant for parameters beyond the caches.
    long_tail : bool
        The long-tail rule (LightFM's epoch order and initial scale) applies.
    order_statistic : bool
        The positive of a step is the ``k``-th best scored of ``n`` positives (k-OS).
    list_length : bool
        ``n`` is the length of a list of the user's positives (k-OS draws, ordinal list).
    fold_in : bool
        New users can be folded in.
    """

    name: str
    code: int
    parameters: tuple[str, ...]
    sphere: bool = False
    rank_estimate: bool = False
    popularity: bool = False
    features: bool = False
    prefetch: bool = False
    long_tail: bool = False
    order_statistic: bool = False
    list_length: bool = False
    fold_in: bool = True

    # ---------------------------------------------------------------- checks
    def check(self, params: dict[str, Any]) -> tuple[int, int]:
        """Raise ValueError on parameters this loss cannot take; returns the kernel's
        list settings ``(kos_k, kos_n)`` (see :meth:`list_settings`).

        ``params`` are the estimator's parameters (``get_params()``), each already
        checked on its own (``_parameter_constraints``).
        """
        if params["negative_sampling"] == "popularity" and not self.popularity:
            raise ValueError("negative_sampling='popularity' is only available with "
                             f"loss={_names(lambda s: s.popularity)}: the rank estimates of "
                             "the WARP and ordinal losses assume uniformly drawn negatives.")
        alpha, dropout = params["alpha"], params["dropout"]
        if params["negative_sharing"] != 1 and not self.sphere:
            raise ValueError(f"negative_sharing={params['negative_sharing']!r} applies to "
                             f"loss={_names(lambda s: s.sphere)} only (got loss="
                             f"{self.name!r}): the other losses draw their negatives per "
                             f"positive. Leave it at 1.")
        if self.sphere:
            for name, unused in (("rank_estimator", params["rank_estimator"] != "sampled"),
                                 ("max_norm", params["max_norm"] is not None),
                                 ("alpha", not isinstance(alpha, str) and alpha > 0)):
                if unused:
                    raise ValueError(
                        f"{name}={params[name]!r} does not apply to loss={self.name!r}: its "
                        f"rows are kept at unit norm (scores are cosines), so there is no "
                        f"rank estimate, norm bound or weight decay; leave {name} at its "
                        f"default.")
        elif not isinstance(dropout, str) and dropout > 0:
            raise ValueError(f"dropout={dropout!r} applies to loss="
                             f"{_names(lambda s: s.sphere)} only (got loss={self.name!r}); "
                             f"leave it at 0.")
        kos = self.list_settings(params["k"], params["n"])
        if params["rank_estimator"] == "exact" and not self.rank_estimate:
            raise ValueError("rank_estimator='exact' applies to the WARP losses, not to "
                             f"{self.name!r}.")
        if params["max_violators"] > 1:
            if not self.rank_estimate or params["rank_estimator"] != "sampled":
                raise ValueError(f"max_violators > 1 applies to the WARP losses with "
                                 f"rank_estimator='sampled' (got loss={self.name!r}, "
                                 f"rank_estimator={params['rank_estimator']!r}); set it to 1.")
            if params["max_violators"] > params["max_sampled"]:
                raise ValueError(f"max_violators ({params['max_violators']}) cannot exceed "
                                 f"max_sampled ({params['max_sampled']}): the violators are "
                                 f"found among the max_sampled draws.")
        return kos

    def check_features(self, kos_n: int, exact_rank: bool, max_norm: float | None) -> None:
        """Raise ValueError unless side features can train with these settings."""
        if not self.features or kos_n > 1 or exact_rank or max_norm:
            raise ValueError("side features are supported with loss="
                             f"{_names(lambda s: s.features and not s.order_statistic)} and "
                             "the sampled rank estimate, without max_norm.")

    # ---------------------------------------------------------------- kernel settings
    def list_settings(self, k: int | None, n: int) -> tuple[int, int]:
        """The kernel's ``(kos_k, kos_n)``: k-OS's order statistic and list length, the
        ordinal list's length, else ``(1, 1)``."""
        if not self.list_length:
            return 1, 1
        kos_n = check_positive_int(n, "n")
        if not self.order_statistic:
            return 1, kos_n
        kos_k = check_positive_int(5 if k is None else k, "k")
        if kos_k > kos_n:
            raise ValueError(f"k-OS needs k <= n (got k={kos_k}, n={kos_n}).")
        return kos_k, kos_n

    def work_entries(self, max_sampled: int, n_negatives: int,
                     negative_sharing: int = 1) -> int:
        """The entries of the kernel's per-thread lists: the softmax keeps a positive's
        ``n_negatives`` draws there, and so do both cosine losses for a group's shared
        draws (``negative_sharing > 1``); the others up to ``max_sampled`` draws."""
        if self.code == _train.LOSS_SOFTMAX or (self.sphere and negative_sharing > 1):
            return n_negatives
        return max_sampled

    # ---------------------------------------------------------------- "auto" rules
    def auto_learning_rate(self, per_user: float, per_item: float) -> float:
        """``learning_rate="auto"`` from the training positives per user and per item."""
        if self.sphere:
            return float(np.clip(CCL_AUTO_LR / per_user, CCL_LR_MIN, CCL_LR_MAX))
        rate = min(AUTO_LR / per_user, AUTO_LR_ITEM * np.sqrt(per_item))
        return float(np.clip(rate, AUTO_LR_MIN, AUTO_LR_MAX))

    def auto_alpha(self, learning_rate: float, n_items: int, nnz: int) -> float:
        """``alpha="auto"``: none on unit rows (the normalisation would undo it), else a
        decay that follows the learning rate and the positives per item."""
        if self.sphere:
            return 0.0
        rate = min(learning_rate, AUTO_ALPHA_LR_CAP)
        return min(AUTO_ALPHA * rate * n_items / max(nnz, 1), AUTO_ALPHA_MAX)

    @staticmethod
    def auto_negative_weight(density: float) -> float:
        """``negative_weight="auto"`` (the cosine losses) from the matrix's density."""
        return float(CCL_NEGATIVE_WEIGHT / np.sqrt(density))

    def auto_dropout(self) -> float:
        """``dropout="auto"``: the published rate for the cosine contrastive loss."""
        return CCL_DROPOUT if self.code == _train.LOSS_CCL else 0.0

    def auto_learning_rate_drop(self, early_stopping: bool) -> float:
        """``learning_rate_drop="auto"``: a drop on the plateau for the cosine losses when
        they early-stop, none otherwise."""
        return CCL_LEARNING_RATE_DROP if self.sphere and early_stopping else 1.0


def _names(which) -> str:
    """The losses a rule allows, for error messages ('bpr' or 'ccl')."""
    names = [repr(s.name) for s in LOSSES.values() if which(s)]
    return " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 2 else names)


_WARP_PARAMETERS = ("max_sampled", "rank_weighting", "k", "top_fraction", "rank_estimator",
                    "max_violators", "max_norm")
#: Every loss, by its ``loss=`` name.
LOSSES: dict[str, LossSpec] = {spec.name: spec for spec in (
    LossSpec("warp", _train.LOSS_WARP, _WARP_PARAMETERS, rank_estimate=True, features=True,
             prefetch=True, long_tail=True),
    LossSpec("warp-kos", _train.LOSS_WARP, _WARP_PARAMETERS + ("n",), rank_estimate=True,
             features=True, prefetch=True, long_tail=True, order_statistic=True,
             list_length=True),
    LossSpec("bpr", _train.LOSS_BPR, ("negative_sampling", "max_norm"), popularity=True,
             features=True, prefetch=True),
    LossSpec("ordinal", _train.LOSS_ORDINAL, ("n", "max_sampled", "max_norm"),
             list_length=True, fold_in=False),
    LossSpec("ccl", _train.LOSS_CCL, ("n_negatives", "margin", "negative_weight", "dropout",
                                      "negative_sampling", "negative_sharing"), sphere=True,
             popularity=True),
    LossSpec("softmax", _train.LOSS_SOFTMAX, ("n_negatives", "temperature", "dropout",
                                              "negative_sharing"), sphere=True),
)}
#: The losses whose factor rows are kept at unit norm (their scores are cosines).
SPHERE_LOSSES = tuple(name for name, spec in LOSSES.items() if spec.sphere)


def loss_spec(name: str) -> LossSpec:
    """The spec of ``loss=name`` (a ValueError naming the choices otherwise)."""
    try:
        return LOSSES[name]
    except (KeyError, TypeError):
        raise ValueError(f"loss must be one of {sorted(LOSSES)}, got {name!r}.") from None
