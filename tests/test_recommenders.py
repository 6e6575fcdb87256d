"""Every recommender class against the shared contract of tests/recommender_base.py."""

from recommender_base import RecommenderBaseTestMixin

from warprec import WARPFactorizer
from warprec.baselines import PopularityRecommender


class TestWARPFactorizer(RecommenderBaseTestMixin):
    supports_save = True

    def _make_model(self):
        return WARPFactorizer(n_components=4, epochs=3, n_threads=1, random_state=0)


class TestPopularityRecommender(RecommenderBaseTestMixin):
    no_save_reason = ("PopularityRecommender has no save/load: it learns nothing but item "
                      "counts, refit in milliseconds")

    def _make_model(self):
        return PopularityRecommender(n_threads=1)
