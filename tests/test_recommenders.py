"""Every recommender class against the shared contract of tests/recommender_base.py."""

from recommender_base import RecommenderBaseTestMixin

from warprec import WARPFactorizer
from warprec.baselines import FeaturePopularityRecommender, PopularityRecommender


class TestWARPFactorizer(RecommenderBaseTestMixin):
    model_class = WARPFactorizer
    model_params = dict(n_components=4, epochs=3, n_threads=1, random_state=0)
    supports_save = True


class TestPopularityRecommender(RecommenderBaseTestMixin):
    model_class = PopularityRecommender
    model_params = dict(n_threads=1)
    no_save_reason = ("PopularityRecommender has no save/load: it learns nothing but item "
                      "counts, refit in milliseconds")


class TestCosineContrastiveFactorizer(RecommenderBaseTestMixin):
    """``loss="ccl"``: unit rows and cosine scores through the same API (its new users
    start from their items' direction in ``fold_in``)."""
    model_class = WARPFactorizer
    model_params = dict(n_components=4, epochs=3, n_threads=1, random_state=0, loss="ccl",
                        n_negatives=10)
    supports_save = True


class TestFeaturePopularityRecommender(RecommenderBaseTestMixin):
    """Fit without side features it ranks by popularity, through the same API."""
    model_class = FeaturePopularityRecommender
    model_params = dict(n_threads=1)
    no_save_reason = ("FeaturePopularityRecommender has no save/load: it learns nothing but "
                      "item and feature counts, refit in milliseconds")
