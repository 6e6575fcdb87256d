"""Non-learned baselines that share the factor models' inference and evaluation API."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ._base import FactorRecommender, fit_input
from ._features import FeatureEncoder

if TYPE_CHECKING:
    from typing import Any, Literal, overload

    from numpy.typing import NDArray
    from typing_extensions import Self

    from ._typing import FeatureData, Float32Array, InteractionData, UserItems

__all__ = ["FeaturePopularityRecommender", "PopularityRecommender"]


class PopularityRecommender(FactorRecommender):
    """Recommend the items with the most positives, the same list for every user.

    The score of item i is its number of training positives (ties broken by lower item
    index, as everywhere in warprec). It has the interface of
    :class:`warprec.WARPFactorizer` (``fit``, ``recommend``, ``predict``, and
    :func:`warprec.metrics.evaluate` accepts it), with zero-dimensional factors.
    """

    feature_popularity_: NDArray[np.float64]
    item_feature_encoder_: FeatureEncoder | None

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
        self.item_feature_encoder_ = None
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

    if TYPE_CHECKING:  # items have biases, users none
        @overload
        def _embed_features(self, kind: Literal["user"], features: FeatureData,
                            ) -> tuple[Float32Array, None, NDArray[Any]]: ...

        @overload
        def _embed_features(self, kind: Literal["item"], features: FeatureData,
                            ) -> tuple[Float32Array, Float32Array, NDArray[Any]]: ...

    def _embed_features(self, kind: Literal["user", "item"], features: FeatureData,
                        ) -> tuple[Float32Array, Float32Array | None, NDArray[Any]]:
        """New users described by feature rows (any columns): the zero factor, since
        popularity gives every user the same ranking (``user_embeddings(user_features=
        ...)``, and the user cold start of :func:`warprec.evaluation.evaluate_cold_users`).
        Items described by feature rows (a :class:`FeaturePopularityRecommender` fit with
        ``item_features``): zero factors and their feature-popularity scores as biases."""
        if kind == "item":
            if self.item_feature_encoder_ is None:
                return super()._embed_features(kind, features)
            matrix, ids = self.item_feature_encoder_.transform(features)
            biases = np.asarray(matrix @ self.feature_popularity_, dtype=np.float32)
            return (np.zeros((matrix.shape[0], 1), dtype=np.float32), biases,
                    np.arange(matrix.shape[0]) if ids is None else ids)
        if isinstance(features, pd.DataFrame):
            labels = (features["user_id"].to_numpy() if "user_id" in features.columns
                      else np.arange(len(features)))
        else:
            labels = np.arange(np.shape(features)[0])
        return np.zeros((len(labels), 1), dtype=np.float32), None, labels


class FeaturePopularityRecommender(PopularityRecommender):
    """Rank items by the popularity of their side features: the cold-start baseline.

    Each feature's popularity is its share of the training positives: the positives of
    the items that have it, weighted by the feature's value, over all positives. An
    item's score is the sum of its features' popularities (weighted by its feature
    values), the same list for every user. Items the model was not fit on are scored
    from their feature rows (``recommend(..., item_features=...)``,
    ``item_embeddings(item_features=...)``), so that a catalogue's new items, which
    have no positives, are ranked by how popular items like them were. Fit without
    ``item_features`` it is :class:`PopularityRecommender` (each item its own feature).

    Attributes
    ----------
    feature_popularity_ : ndarray of float64, shape (n_features,)
        Each feature's share of the training positives.
    item_feature_encoder_ : FeatureEncoder or None
        The feature columns (as in :class:`warprec.WARPFactorizer`), None without
        features.
    """

    def fit(self, X: InteractionData, *, item_features: FeatureData | None = None,
            user_col: str | int | None = None, item_col: str | int | None = None) -> Self:
        """Count each item's positives in ``X`` and, with ``item_features`` (a DataFrame
        with an ``item_id`` column or a matrix with one row per item of ``X``, as
        :meth:`warprec.WARPFactorizer.fit` takes them), each feature's share of them."""
        super().fit(X, user_col=user_col, item_col=item_col)
        counts = self.item_biases_.astype(np.float64)
        if item_features is None:
            self.item_feature_encoder_ = None
            self.feature_popularity_ = counts / counts.sum()
            return self
        encoder = FeatureEncoder("item")
        features = encoder.fit(item_features, self.item_ids_, self.train_matrix_.shape[1])
        self.item_feature_encoder_ = encoder
        self.feature_popularity_ = np.asarray(features.T @ counts, dtype=np.float64) \
            / counts.sum()
        self.item_biases_ = np.asarray(features @ self.feature_popularity_, dtype=np.float32)
        return self
