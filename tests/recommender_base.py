"""The contract every recommender class passes (after implicit's
``tests/recommender_base_test.py``).

A test module subclasses :class:`RecommenderBaseTestMixin` once per recommender class,
implements :meth:`~RecommenderBaseTestMixin._make_model` and sets
``supports_save`` when the class has ``save`` / ``load``. The data is tiny (40 users,
25 items) and every model is fit once per test class.
"""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from warprec.exceptions import NotFittedError, WarprecWarning
from warprec.metrics import evaluate

N_USERS, N_ITEMS = 40, 25
METRICS = ["precision", "recall", "map", "mrr", "ndcg", "hit_rate"]


def _interactions(seed):
    """(train, test) users x items CSR matrices: every user has 3 to 8 training positives
    and 1 or 2 held-out ones; items of lower index are more popular."""
    gen = np.random.default_rng(seed)
    popularity = 1.0 / np.arange(1, N_ITEMS + 1) ** 0.8
    popularity /= popularity.sum()
    train_rows, test_rows = [], []
    for user in range(N_USERS):
        items = gen.choice(N_ITEMS, size=int(gen.integers(4, 11)), replace=False,
                           p=popularity)
        n_test = 1 + int(gen.random() < 0.5)
        train_rows += [(user, i) for i in items[n_test:]]
        test_rows += [(user, i) for i in items[:n_test]]

    def csr(rows):
        u, i = np.array(rows).T
        return sp.csr_matrix((np.ones(len(rows), np.float32), (u, i)),
                             shape=(N_USERS, N_ITEMS))

    return csr(train_rows), csr(test_rows)


def _frame(matrix):
    """The matrix's entries as raw-id rows: users "u0".."u39", items 100, 110, ..."""
    coo = matrix.tocoo()
    return pd.DataFrame({"user_id": [f"u{u}" for u in coo.row],
                         "item_id": 100 + 10 * coo.col.astype(np.int64)})


class RecommenderBaseTestMixin:
    """Tests of the interface every recommender shares: fit, recommend, predict,
    evaluate, score, save/load and the errors of unfitted models and unseen users."""

    #: The recommender class under test and the parameters of a small, fast instance
    #: (one thread, few epochs); every test class sets both.
    model_class = None
    model_params = {}
    #: Whether the class has ``save(path)`` and a ``load(path)`` class method.
    supports_save = False
    #: The reason shown when the save/load test is skipped.
    no_save_reason = "this recommender has no save/load"

    def _make_model(self):
        """A new, unfitted recommender."""
        return self.model_class(**self.model_params)

    # ------------------------------------------------------------------ fixtures
    @pytest.fixture(scope="class")
    @classmethod
    def data(cls):
        return _interactions(seed=7)

    @pytest.fixture(scope="class")
    @classmethod
    def fitted(cls, data):
        return cls()._make_model().fit(data[0])

    @pytest.fixture(scope="class")
    @classmethod
    def fitted_on_frame(cls, data):
        return cls()._make_model().fit(_frame(data[0]))

    # ------------------------------------------------------------------ fit
    def test_fit_returns_self(self, data):
        model = self._make_model()
        assert model.fit(data[0]) is model
        assert (model.n_users_, model.n_items_) == (N_USERS, N_ITEMS)

    # ------------------------------------------------------------------ recommend
    def test_recommend_shapes_sorted_scores_and_exclude_seen(self, data, fitted):
        train = data[0]
        users = np.arange(N_USERS)
        items, scores = fitted.recommend(users, k=5)
        assert items.shape == scores.shape == (N_USERS, 5)
        assert scores.dtype == np.float32
        assert np.all(np.diff(scores, axis=1) <= 0), "scores are not best first"
        for user in users:
            assert not set(items[user].tolist()) & set(train[user].indices.tolist()), \
                f"user {user} was recommended a training positive"
        one_items, one_scores = fitted.recommend(3, k=5)
        assert one_items.shape == one_scores.shape == (5,)
        np.testing.assert_array_equal(one_items, items[3])
        every, _ = fitted.recommend(users, k=5, exclude_seen=False)
        seen = np.array([set(every[u].tolist()) & set(train[u].indices.tolist())
                         for u in users], dtype=object)
        assert any(seen), "exclude_seen=False never returned a training positive"

    def test_recommend_with_raw_ids_from_a_frame(self, data, fitted_on_frame):
        model = fitted_on_frame
        frame = _frame(data[0])
        items, scores = model.recommend("u3", k=4)
        assert items.shape == scores.shape == (4,)
        assert set(items.tolist()) <= set(model.item_ids_.tolist())
        seen = set(frame.loc[frame["user_id"] == "u3", "item_id"].tolist())
        assert not set(items.tolist()) & seen
        batch, _ = model.recommend(["u3", "u10"], k=4)
        assert batch.shape == (2, 4)
        np.testing.assert_array_equal(batch[0], items)

    def test_recommend_for_new_users_from_their_interactions(self, data, fitted_on_frame):
        """``recalculate_user=True``: unseen ids, embeddings from ``user_items`` (fold_in),
        their items excluded; the same answer as recommending from the folded-in
        factors directly."""
        model = fitted_on_frame
        rows = data[0][[3, 10]]
        items, scores = model.recommend(["new1", "new2"], k=4, user_items=rows,
                                        recalculate_user=True)
        assert items.shape == scores.shape == (2, 4)
        assert np.all(np.diff(scores, axis=1) <= 0)
        for r in range(2):
            seen = set((100 + 10 * rows[r].indices).tolist())
            assert not set(items[r].tolist()) & seen
        factors = model.fold_in(rows)
        assert factors.shape == (2, model.user_factors_.shape[1])
        expected = factors @ model.item_factors_.T + model.item_biases_
        np.testing.assert_allclose(scores[0], np.sort(
            np.delete(expected[0], rows[0].indices))[::-1][:4], rtol=1e-5, atol=1e-6)
        one, _ = model.recommend("new1", k=4, user_items=rows[:1], recalculate_user=True)
        np.testing.assert_array_equal(one, items[0])
        with pytest.raises(ValueError, match="needs|pass them as user_items"):
            model.recommend("new1", recalculate_user=True)
        with pytest.raises(ValueError, match="one row per requested user"):
            model.recommend(["new1", "new2"], user_items=rows[:1], recalculate_user=True)

    def test_recommend_as_frame(self, fitted_on_frame):
        model = fitted_on_frame
        frame = model.recommend(["u3", "u10"], k=3, as_frame=True)
        items, scores = model.recommend(["u3", "u10"], k=3)
        assert list(frame.columns) == ["user_id", "item_id", "score", "rank"]
        assert frame["user_id"].tolist() == ["u3"] * 3 + ["u10"] * 3
        assert frame["rank"].tolist() == [1, 2, 3] * 2
        np.testing.assert_array_equal(frame["item_id"].to_numpy(), items.ravel())
        np.testing.assert_array_equal(frame["score"].to_numpy(), scores.ravel())
        # slots a user cannot fill (every item seen or filtered) give no rows
        few = model.recommend("u3", k=5, items=model.item_ids_[:2], exclude_seen=False,
                              as_frame=True)
        assert len(few) == 2 and few["rank"].tolist() == [1, 2]

    def test_similar_users_leave_the_query_out(self, fitted, fitted_on_frame):
        users, sims = fitted.similar_users(np.arange(5), k=4)
        assert users.shape == sims.shape == (5, 4)
        for q in range(5):
            assert q not in users[q].tolist()
            assert np.all(np.diff(sims[q]) <= 1e-6)
        one, _ = fitted_on_frame.similar_users("u3", k=2)
        assert one.shape == (2,) and "u3" not in one.tolist()
        assert set(one.tolist()) <= set(fitted_on_frame.user_ids_.tolist())

    # ------------------------------------------------------------------ predict
    def test_predict_matches_recommend_scores(self, fitted):
        items, scores = fitted.recommend(5, k=6, exclude_seen=False)
        np.testing.assert_allclose(fitted.predict(5, items), scores, rtol=1e-5, atol=1e-6)
        pairs = fitted.predict([1, 2, 3], [0, 1, 2])
        assert pairs.shape == (3,) and pairs.dtype == np.float32

    # ------------------------------------------------------------------ evaluation
    def test_evaluate_gives_values_in_the_unit_interval(self, data, fitted):
        train, test = data
        result = evaluate(fitted, test, train=train, k=5, metrics=METRICS)
        assert result.pop("n_users") == N_USERS
        assert sorted(result) == sorted(f"{m}@5" for m in METRICS)
        for name, value in result.items():
            assert math.isfinite(value) and 0.0 <= value <= 1.0, (name, value)

    def test_score_is_evaluate_ndcg_at_10(self, data, fitted):
        train, test = data
        expected = evaluate(fitted, test, train=train, k=10, metrics=["ndcg"])["ndcg@10"]
        assert fitted.score(test) == pytest.approx(expected)

    # ------------------------------------------------------------------ persistence
    def test_save_load_round_trip(self, fitted_on_frame, tmp_path):
        if not self.supports_save:
            pytest.skip(self.no_save_reason)
        path = tmp_path / "model.npz"
        fitted_on_frame.save(path)
        loaded = type(fitted_on_frame).load(path)
        for got, want in zip(loaded.recommend(["u1", "u2"], k=5),
                             fitted_on_frame.recommend(["u1", "u2"], k=5)):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(loaded.item_ids_, fitted_on_frame.item_ids_)
        # the popularity of on_unknown="popular" comes from the saved training matrix
        # (files of every format version hold it)
        np.testing.assert_array_equal(loaded.item_popularity_,
                                      fitted_on_frame.item_popularity_)

    # ------------------------------------------------------------------ errors
    def test_not_fitted_error(self):
        model = self._make_model()
        with pytest.raises(NotFittedError, match="not fitted"):
            model.recommend(0)
        with pytest.raises(NotFittedError, match="not fitted"):
            model.predict(0, 0)

    def test_unseen_user_error(self, fitted, fitted_on_frame):
        with pytest.raises(KeyError, match="not seen at fit time: 'u999'"):
            fitted_on_frame.recommend("u999")
        with pytest.raises(KeyError, match="out of range"):
            fitted.recommend(N_USERS)

    # ------------------------------------------------------------------ unknown users
    def test_unknown_users_raise_by_default_naming_the_option(self, fitted, fitted_on_frame):
        with pytest.raises(KeyError, match="on_unknown='skip'.*on_unknown='popular'"):
            fitted_on_frame.recommend(["u1", "u999"])
        with pytest.raises(KeyError, match="out of range.*on_unknown="):
            fitted.recommend([1, N_USERS])
        with pytest.raises(ValueError, match="on_unknown must be one of"):
            fitted_on_frame.recommend("u1", on_unknown="ignore")

    def test_on_unknown_skip_leaves_unknown_users_out_and_says_how_many(self,
                                                                        fitted_on_frame):
        model = fitted_on_frame
        want_items, want_scores = model.recommend(["u1", "u2"], k=4)
        with pytest.warns(WarprecWarning, match="2 requested user.*unseen.*'u998', 'u999'"):
            items, scores = model.recommend(["u998", "u1", "u999", "u2"], k=4,
                                            on_unknown="skip")
        np.testing.assert_array_equal(items[[1, 3]], want_items)
        np.testing.assert_array_equal(scores[[1, 3]], want_scores)
        assert items[0].tolist() == items[2].tolist() == [-1] * 4   # (numeric item ids)
        assert np.isneginf(scores[[0, 2]]).all()
        with pytest.warns(WarprecWarning, match="1 requested user"):
            frame = model.recommend(["u1", "u999"], k=4, as_frame=True, on_unknown="skip")
        assert frame["user_id"].tolist() == ["u1"] * 4
        assert "fallback" not in frame.columns
        with warnings.catch_warnings():   # every user known: no warning, no change
            warnings.simplefilter("error")
            items, _ = model.recommend(["u1", "u2"], k=4, on_unknown="skip")
        np.testing.assert_array_equal(items, want_items)

    def test_on_unknown_popular_serves_the_most_popular_items(self, data, fitted,
                                                              fitted_on_frame):
        """Unknown users get the items with the most training positives (ties: lower
        index), training positives of nobody excluded; the frame marks their rows."""
        model = fitted_on_frame
        counts = np.bincount(data[0].indices, minlength=N_ITEMS)
        np.testing.assert_array_equal(model.item_popularity_, counts)
        best = np.lexsort((np.arange(N_ITEMS), -counts))[:5]
        with pytest.warns(WarprecWarning, match="1 requested user.*most popular.*'new'"):
            items, scores = model.recommend(["u1", "new"], k=5, on_unknown="popular")
        np.testing.assert_array_equal(items[1], 100 + 10 * best)
        np.testing.assert_array_equal(scores[1], counts[best].astype(np.float32))
        np.testing.assert_array_equal(items[0], model.recommend("u1", k=5)[0])
        with pytest.warns(WarprecWarning):
            frame = model.recommend(["new", "u1"], k=5, as_frame=True, on_unknown="popular")
        assert list(frame.columns) == ["user_id", "item_id", "score", "rank", "fallback"]
        assert frame["fallback"].tolist() == [True] * 5 + [False] * 5
        assert frame["item_id"].tolist()[:5] == (100 + 10 * best).tolist()
        # the candidates' restrictions apply; a single unknown user gives 1-D arrays
        with pytest.warns(WarprecWarning):
            one, _ = model.recommend("new", k=2, on_unknown="popular",
                                     filter_items=[100 + 10 * best[0]])
        np.testing.assert_array_equal(one, 100 + 10 * best[1:3])
        with pytest.warns(WarprecWarning):   # a model fit on a matrix: indices
            index, _ = fitted.recommend([N_USERS + 3], k=5, on_unknown="popular")
        np.testing.assert_array_equal(index[0], best)

    def test_evaluate_on_unknown(self, data, fitted_on_frame):
        """evaluate skips test users unseen at fit by default, raises with "error" and,
        with "popular", evaluates them on the popularity ranking (nothing excluded)."""
        from warprec.baselines import PopularityRecommender

        model = fitted_on_frame
        train, test = _frame(data[0]), _frame(data[1])
        u3 = test[test["user_id"] == "u3"]
        new = u3.assign(user_id="new")
        with_new = pd.concat([test, new], ignore_index=True)
        base = evaluate(model, test, train=train, k=5, metrics=METRICS)
        with pytest.warns(WarprecWarning, match="1 row|user.*unseen.*left out"):
            skipped = evaluate(model, with_new, train=train, k=5, metrics=METRICS)
        assert skipped == base
        with pytest.raises(KeyError, match="unseen at fit time.*'new'.*on_unknown="):
            evaluate(model, with_new, train=train, k=5, on_unknown="error")
        with pytest.warns(WarprecWarning, match="ranked by item popularity"):
            per_user = evaluate(model, with_new, train=train, k=5, metrics=METRICS,
                                per_user=True, on_unknown="popular")
        assert per_user["fallback"].tolist() == [False] * N_USERS + [True]
        popular = PopularityRecommender().fit(train)
        want = evaluate(popular, u3, k=5, metrics=METRICS, per_user=True)
        np.testing.assert_allclose(per_user.loc["new", want.columns].to_numpy(dtype=float),
                                   want.iloc[0].to_numpy(dtype=float))
        with pytest.warns(WarprecWarning):
            means = evaluate(model, with_new, train=train, k=5, metrics=METRICS,
                             on_unknown="popular")
        assert means["n_users"] == N_USERS + 1
        for key in want.columns:
            assert means[key] == pytest.approx(per_user[key].mean())
