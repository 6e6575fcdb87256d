"""Raw ids everywhere: fit finds a frame's id columns as read_ratings does, warns about
ratings that look explicit, and fold_in takes new users' items as raw ids."""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from warprec import PopularityRecommender, WARPFactorizer, WarprecWarning
from warprec.data import positives


def _ratings(seed=0, n=600):
    """MovieLens-style columns: userId, movieId, rating (1 to 5), timestamp."""
    gen = np.random.default_rng(seed)
    frame = pd.DataFrame({"userId": gen.integers(1, 41, n), "movieId": gen.integers(1, 61, n) * 3,
                          "rating": gen.integers(1, 6, n).astype(float),
                          "timestamp": np.arange(n)})
    return frame.drop_duplicates(["userId", "movieId"]).reset_index(drop=True)


def _model():
    return WARPFactorizer(n_components=8, epochs=3, n_threads=1, random_state=0)


@pytest.fixture(scope="module")
def fitted():
    frame = _ratings().rename(columns={"userId": "user_id", "movieId": "item_id"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WarprecWarning)   # (explicit-looking ratings)
        return _model().fit(frame[["user_id", "item_id"]])


# ---------------------------------------------------------------------- fit's columns
def test_fit_finds_the_id_columns_as_read_ratings_does():
    frame = positives(_ratings().rename(columns={"userId": "user_id", "movieId": "item_id"}),
                      min_rating=1)
    canonical = _model().fit(frame)
    movielens = _model().fit(positives(_ratings(), min_rating=1))   # userId, movieId
    np.testing.assert_array_equal(movielens.user_factors_, canonical.user_factors_)
    np.testing.assert_array_equal(movielens.item_ids_, canonical.item_ids_)
    named = frame.rename(columns={"user_id": "member", "item_id": "sku"})
    explicit = _model().fit(named, user_col="member", item_col="sku")
    np.testing.assert_array_equal(explicit.item_factors_, canonical.item_factors_)
    popular = PopularityRecommender().fit(named, user_col=0, item_col=1)   # positions
    np.testing.assert_array_equal(popular.item_popularity_, canonical.item_popularity_)


def test_fit_column_errors_name_options_that_exist():
    frame = _ratings()[["userId", "movieId"]].rename(columns={"userId": "member"})
    model = _model()
    with pytest.raises(KeyError, match="No user_id column in X.*user_col="):
        model.fit(frame)
    assert "user_col" in model.fit.__code__.co_varnames   # the option the hint names
    with pytest.raises(KeyError, match="user_col='nobody' is not a column"):
        model.fit(frame, user_col="nobody")
    with pytest.raises(KeyError, match="both the user and the item column"):
        model.fit(frame, user_col="movieId")
    with pytest.raises(TypeError, match="name the columns of a DataFrame"):
        model.fit(sp.eye(4, format="csr"), user_col="a")
    assert not hasattr(model, "user_factors_")


# ---------------------------------------------------------------------- explicit ratings
def test_explicit_looking_ratings_warn_unless_thresholded_or_binary():
    frame = _ratings()
    with pytest.warns(WarprecWarning, match=r"'rating' of X holds 5 distinct values.*"
                                            r"--min-rating.*positives\(frame, min_rating="):
        _model().fit(frame)
    with pytest.warns(WarprecWarning, match="look like explicit ratings"):
        PopularityRecommender().fit(frame)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _model().fit(positives(frame.rename(columns={"userId": "user", "movieId": "item"}),
                               min_rating=3.5))            # thresholded (4 and 5 are left)
        _model().fit(frame.assign(rating=1.0))            # implicit: one value
        _model().fit(frame.assign(rating=frame["rating"] > 3))   # binary
        PopularityRecommender().fit(frame.drop(columns="rating"))
        n = len(frame)
        _model().fit(frame, sample_weight=np.ones(n))      # weighting was chosen


# ---------------------------------------------------------------------- fold_in
def test_fold_in_from_raw_item_ids(fitted):
    """A list of raw item-id lists, a DataFrame of (user, item) rows and the matrix in
    the model's index space give the same users."""
    items = fitted.item_ids_
    lists = [[items[3], items[10], items[3]], [items[0]], []]
    matrix = sp.csr_matrix((np.ones(3, np.float32), ([0, 0, 1], [3, 10, 0])),
                           shape=(3, fitted.n_items_))
    want = fitted.fold_in(matrix)
    np.testing.assert_array_equal(fitted.fold_in(lists), want)
    frame = pd.DataFrame({"userId": ["b", "a", "b"],
                          "movieId": [items[0], items[3], items[10]]})
    got = fitted.fold_in(frame)   # users in order of first appearance: b, then a
    np.testing.assert_array_equal(got, fitted.fold_in([[items[0], items[10]], [items[3]]]))
    named = frame.rename(columns={"userId": "who", "movieId": "what"})
    np.testing.assert_array_equal(fitted.fold_in(named, user_col="who", item_col="what"), got)
    # recommend for new users from their raw items, seen items excluded
    recs, _ = fitted.recommend(["n1", "n2", "n3"], k=5, user_items=lists,
                               recalculate_user=True)
    np.testing.assert_array_equal(recs, fitted.recommend(["n1", "n2", "n3"], k=5,
                                                         user_items=matrix,
                                                         recalculate_user=True)[0])
    assert not {items[3], items[10]} & set(recs[0].tolist())
    np.testing.assert_array_equal(PopularityRecommender().fit(
        pd.DataFrame({"user_id": [1, 2], "item_id": items[:2]})).fold_in([[items[0]], []]),
        np.zeros((2, 1), np.float32))


def test_fold_in_unknown_items_raise_or_are_skipped(fitted):
    known = fitted.item_ids_[5]
    with pytest.raises(KeyError, match="1 item id.*not seen at fit time: -4.*"
                                       "on_unknown='skip'"):
        fitted.fold_in([[known, -4]])
    with pytest.warns(WarprecWarning, match="1 item id.*left out"):
        skipped = fitted.fold_in([[known, -4]], on_unknown="skip")
    np.testing.assert_array_equal(skipped, fitted.fold_in([[known]]))
    with pytest.raises(ValueError, match="on_unknown must be one of"):
        fitted.fold_in([[known]], on_unknown="popular")


def test_fold_in_type_errors_say_what_is_accepted(fitted):
    with pytest.raises(TypeError, match="one list of item ids per user; entry 0 is str"):
        fitted.fold_in(["abc"])
    with pytest.raises(TypeError) as caught:
        fitted.fold_in({1, 2})
    message = str(caught.value)
    assert "got set" in message and "DataFrame" not in message
    with pytest.raises(ValueError, match="one column per item.*list of raw item ids"):
        fitted.fold_in(np.ones((1, 3)))
    with pytest.raises(TypeError, match="user_items must be a scipy.sparse matrix or a dense "
                                        r"2-D numpy array; got set"):
        fitted.recommend(["n"], user_items={1}, recalculate_user=True)


def test_per_user_evaluation_is_indexed_by_raw_user_ids(fitted):
    from warprec import evaluate

    model = fitted
    test = pd.DataFrame({"user_id": model.user_ids_[[4, 1, 4]],
                         "item_id": model.item_ids_[[0, 2, 5]]})
    per_user = evaluate(model, test, k=5, metrics=["recall"], per_user=True)
    assert per_user.index.name == "user"
    assert sorted(per_user.index) == sorted(model.user_ids_[[1, 4]])
