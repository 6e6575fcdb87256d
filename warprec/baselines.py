"""Non-learned baselines that share the factor models' inference and evaluation API."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._base import FactorRecommender, fit_input

if TYPE_CHECKING:
    from typing import Literal

    from typing_extensions import Self

    from ._typing import Float32Array, InteractionData, UserItems

__all__ = ["PopularityRecommender"]


class PopularityRecommender(FactorRecommender):
    """Recommend the items with the most positives, the same list for every user.

    The score of item i is its number of training positives (ties broken by lower item
    index, as everywhere in warprec). It has the interface of
    :class:`warprec.WARPFactorizer` (``fit``, ``recommend``, ``predict``, and
    :func:`warprec.metrics.evaluate` accepts it), with zero-dimensional factors.
    """

    def __init__(self, n_threads: int | None = None) -> None:
        self.n_threads = n_threads

    def fit(self, X: InteractionData, *, user_col: str | int | None = None,
            item_col: str | int | None = None) -> Self:
        """Count each item's positives in ``X`` (any input ``WARPFactorizer.fit`` takes;
        ``user_col`` and ``item_col`` as there)."""
        matrix, user_ids, item_ids = fit_input(X, user_col=user_col, item_col=item_col)
        if matrix.nnz == 0:
            raise ValueError("X holds no positive interaction; nothing to count.")
        counts = np.bincount(matrix.indices, minlength=matrix.shape[1])
        self.user_factors_ = np.zeros((matrix.shape[0], 1), dtype=np.float32)
        self.item_factors_ = np.zeros((matrix.shape[1], 1), dtype=np.float32)
        self.item_biases_ = counts.astype(np.float32)
        self.user_ids_, self.item_ids_ = user_ids, item_ids
        self.train_matrix_ = matrix
        return self

    def fold_in(self, user_items: UserItems, *, epochs: int | None = None,
                user_col: str | int | None = None, item_col: str | int | None = None,
                on_unknown: Literal["error", "skip"] = "error") -> Float32Array:
        """Factors of users described by their interactions: every user's factor is the
        zero vector here (the scores are the item counts), one row per user of
        ``user_items`` (any form :meth:`warprec.WARPFactorizer.fold_in` takes, checked the
        same way); ``epochs`` is accepted for that interface and ignored."""
        matrix = self.user_item_rows(user_items, user_col=user_col, item_col=item_col,
                                     on_unknown=on_unknown)
        return np.zeros((matrix.shape[0], 1), dtype=np.float32)
