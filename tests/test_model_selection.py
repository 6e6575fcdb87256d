"""PerUserHoldout, the models' ``score`` and the scikit-learn search integration."""

import math
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import warprec
from naive_metrics import naive_scores, naive_topk
from warprec import PopularityRecommender, WARPFactorizer, WarprecWarning
from warprec.data import split_random
from warprec.datasets import make_interactions
from warprec.exceptions import NotFittedError
from warprec.metrics import evaluate
from warprec.model_selection import PerUserHoldout


@pytest.fixture(scope="module")
def rows():
    """3000 interaction rows of 200 users (>= 6 rows each) over 100 items."""
    coo = sp.coo_matrix(make_interactions(200, 100, 3000))
    return pd.DataFrame({"user_id": coo.row.astype(np.int64),
                         "item_id": coo.col.astype(np.int64)})


@pytest.fixture(scope="module")
def holdout(rows):
    """A model fit on the training side of a per-user split, and that split."""
    train, test = split_random(rows, 0.25, random_state=3)
    model = WARPFactorizer(n_components=8, epochs=5, n_threads=1).fit(train)
    return model, train, test


def _user_counts(frame):
    return frame.groupby("user_id").size()


# ---------------------------------------------------------------- PerUserHoldout
def test_each_user_holds_out_floor_of_the_fraction(rows):
    cv = PerUserHoldout(n_splits=3, test_fraction=0.3, random_state=1)
    n_u = _user_counts(rows)
    splits = list(cv.split(rows))
    assert len(splits) == cv.get_n_splits() == 3
    for train, test in splits:
        held = _user_counts(rows.iloc[test]).reindex(n_u.index, fill_value=0)
        # exact integer arithmetic: floor(0.3 n) = (3 n) // 10
        assert (held == n_u * 3 // 10).all()
        assert held.sum() > 0


def test_splits_are_disjoint_sorted_and_cover_every_row(rows):
    for train, test in PerUserHoldout(n_splits=2, random_state=5).split(rows):
        assert train.dtype == test.dtype == np.int64
        assert np.intersect1d(train, test).size == 0
        assert np.array_equal(np.sort(np.concatenate([train, test])), np.arange(len(rows)))
        assert np.all(np.diff(train) > 0) and np.all(np.diff(test) > 0)


def test_users_without_a_test_row_keep_every_row_in_train():
    frame = pd.DataFrame({"user_id": [7] * 10 + [8] * 3,
                          "item_id": list(range(10)) + [0, 1, 2]})
    for train, test in PerUserHoldout(n_splits=4, test_fraction=0.3).split(frame):
        assert frame["user_id"].iloc[test].tolist() == [7, 7, 7]     # floor(0.3 * 3) = 0
        assert (frame["user_id"].iloc[train] == 8).sum() == 3


def test_same_seed_same_splits_and_folds_differ(rows):
    first = list(PerUserHoldout(n_splits=3, random_state=11).split(rows))
    again = list(PerUserHoldout(n_splits=3, random_state=11).split(rows))
    other = list(PerUserHoldout(n_splits=3, random_state=12).split(rows))
    for (tr1, te1), (tr2, te2) in zip(first, again):
        assert np.array_equal(tr1, tr2) and np.array_equal(te1, te2)
    tests = [te for _, te in first]
    assert not np.array_equal(tests[0], tests[1]) and not np.array_equal(tests[1], tests[2])
    assert not np.array_equal(tests[0], other[0][1])


def test_first_split_is_split_random_with_the_same_seed(rows):
    train_idx, test_idx = next(PerUserHoldout(test_fraction=0.2, random_state=42).split(rows))
    train, test = split_random(rows, 0.2, random_state=42)
    pd.testing.assert_frame_equal(rows.iloc[test_idx].reset_index(drop=True), test)
    pd.testing.assert_frame_equal(rows.iloc[train_idx].reset_index(drop=True), train)


def test_generator_seed_advances_and_global_state_is_untouched(rows):
    state = np.random.get_state()[1].copy()
    cv = PerUserHoldout(n_splits=1, random_state=np.random.default_rng(0))
    first = next(cv.split(rows))[1]
    second = next(cv.split(rows))[1]
    assert not np.array_equal(first, second)
    # a fresh Generator of the same seed reproduces the first call
    replay = next(PerUserHoldout(n_splits=1, random_state=np.random.default_rng(0))
                  .split(rows))[1]
    assert np.array_equal(first, replay)
    assert np.array_equal(np.random.get_state()[1], state)


def test_test_rows_are_drawn_uniformly_within_a_user():
    frame = pd.DataFrame({"user_id": ["a"] * 10, "item_id": [f"i{j}" for j in range(10)]})
    counts = np.zeros(10)
    for _, test in PerUserHoldout(n_splits=400, test_fraction=0.5).split(frame):
        assert test.size == 5
        counts[test] += 1
    # each row is a test row with probability 1/2: 200 +- 10 (sd); 5 sd bounds
    assert counts.min() > 150 and counts.max() < 250


def test_positions_ignore_the_frame_index(rows):
    shuffled = rows.set_axis(np.arange(len(rows))[::-1] * 7)
    for (a, b), (c, d) in zip(PerUserHoldout(random_state=2).split(rows),
                              PerUserHoldout(random_state=2).split(shuffled)):
        assert np.array_equal(a, c) and np.array_equal(b, d)


def test_duplicated_pairs_warn():
    frame = pd.DataFrame({"user_id": [1, 1, 1, 1, 1], "item_id": [1, 1, 2, 3, 4]})
    with pytest.warns(WarprecWarning, match="repeat an earlier"):
        list(PerUserHoldout(n_splits=1).split(frame))


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(n_splits=0), ValueError, "n_splits must be a positive integer"),
    (dict(n_splits=2.0), TypeError, "n_splits must be a positive integer"),
    (dict(n_splits=True), TypeError, "n_splits"),
    (dict(test_fraction=0), ValueError, "strictly between 0 and 1"),
    (dict(test_fraction=1.0), ValueError, "strictly between 0 and 1"),
    (dict(test_fraction=-0.2), ValueError, "strictly between 0 and 1"),
    (dict(test_fraction=float("nan")), ValueError, "strictly between 0 and 1"),
    (dict(test_fraction="0.2"), ValueError, "strictly between 0 and 1"),
    (dict(test_fraction=True), ValueError, "strictly between 0 and 1"),
])
def test_bad_parameters(kwargs, error, match):
    with pytest.raises(error, match=match):
        PerUserHoldout(**kwargs)


def test_bad_input(rows):
    cv = PerUserHoldout()
    with pytest.raises(TypeError, match="expects a pandas DataFrame"):
        next(cv.split(rows.to_numpy()))
    with pytest.raises(KeyError, match=r"needs the column\(s\) \['item_id'\]"):
        next(cv.split(rows.rename(columns={"item_id": "item"})))
    with pytest.raises(ValueError, match="no rows"):
        next(cv.split(rows.iloc[:0]))
    with pytest.raises(ValueError, match="5 row\\(s\\) of X have no user_id"):
        next(cv.split(pd.DataFrame({"user_id": [1.0, np.nan] * 5, "item_id": range(10)})))
    with pytest.raises(ValueError, match="no user has enough rows.*largest user has 4"):
        next(PerUserHoldout(test_fraction=0.2).split(rows.groupby("user_id").head(4)))


def test_repr_and_lazy_export():
    assert repr(PerUserHoldout(2, 0.5, 3)) == \
        "PerUserHoldout(n_splits=2, test_fraction=0.5, random_state=3)"
    assert warprec.PerUserHoldout is PerUserHoldout
    assert "PerUserHoldout" in warprec.__all__


def test_works_without_scikit_learn():
    code = ("import sys; sys.modules['sklearn'] = None\n"
            "import pandas as pd, warprec\n"
            "frame = pd.DataFrame({'user_id': [1] * 5, 'item_id': range(5)})\n"
            "(train, test), = warprec.PerUserHoldout(1, 0.4).split(frame)\n"
            "assert len(test) == 2 and len(train) == 3\n"
            "assert not any(m.startswith('sklearn') and sys.modules[m] is not None\n"
            "               for m in sys.modules)\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# ---------------------------------------------------------------- score
def _naive_ndcg10(model, test_frame):
    """Mean binary NDCG@10 straight from the definition (train positives excluded)."""
    scores = naive_scores(model.user_factors_, model.item_factors_, model.item_biases_)
    values = []
    for user, items in test_frame.groupby("user_id")["item_id"]:
        u = int(model._user_index([user])[0])
        ranked = naive_topk(scores, [u], 10, exclude=model.train_matrix_)[0][0]
        relevant = set(items)
        ranked_ids = [model.item_ids_[i] for i in ranked]
        dcg = sum(1 / math.log2(r + 2) for r, i in enumerate(ranked_ids) if i in relevant)
        ideal = sum(1 / math.log2(r + 2) for r in range(min(10, len(relevant))))
        values.append(dcg / ideal)
    return float(np.mean(values))


def test_score_is_evaluate_ndcg_at_10_excluding_training_positives(holdout):
    model, train, test = holdout
    value = model.score(test)
    assert isinstance(value, float)
    assert value == evaluate(model, test, train=model.train_matrix_, k=10,
                             metrics=["ndcg"])["ndcg@10"]
    assert value == evaluate(model, test, train=train, k=10)["ndcg@10"]
    assert value == pytest.approx(_naive_ndcg10(model, test), rel=1e-6)
    # the exclusion matters: ranking the training positives too scores lower
    assert value > evaluate(model, test, k=10, metrics=["ndcg"])["ndcg@10"]
    assert 0.1 < value < 1
    assert model.score(test, None) == value


def test_score_of_the_popularity_baseline_and_of_a_matrix_fit(holdout):
    _, train, test = holdout
    pop = PopularityRecommender().fit(train)
    assert pop.score(test) == evaluate(pop, test, train=train, k=10)["ndcg@10"]
    matrix = sp.csr_matrix((np.ones(len(train)), (train["user_id"], train["item_id"])),
                           shape=(200, 100))
    held = sp.csr_matrix((np.ones(len(test)), (test["user_id"], test["item_id"])),
                         shape=(200, 100))
    model = WARPFactorizer(n_components=8, epochs=2, n_threads=1).fit(matrix)
    assert model.score(held) == evaluate(model, held, train=matrix, k=10)["ndcg@10"]


def test_score_drops_unseen_users_with_a_warning(holdout):
    model, _, test = holdout
    extra = pd.DataFrame({"user_id": [10_000, 10_000], "item_id": [1, 2]})
    with pytest.warns(WarprecWarning, match="unseen at fit time were left out"):
        value = model.score(pd.concat([test, extra], ignore_index=True))
    assert value == model.score(test)


def test_score_needs_a_fitted_model(holdout):
    with pytest.raises(NotFittedError, match="This PopularityRecommender is not fitted"):
        PopularityRecommender().score(holdout[2])


# ---------------------------------------------------------------- scikit-learn
def test_estimator_tags_and_clone(holdout):
    base = pytest.importorskip("sklearn.base")
    utils = pytest.importorskip("sklearn.utils")
    model = WARPFactorizer(n_components=8, epochs=3, learning_rate=0.03, n_threads=1)
    tags = utils.get_tags(model)
    assert tags.estimator_type is None and tags.target_tags.required is False
    assert tags.input_tags.two_d_array is False and tags.input_tags.string is True
    assert tags.non_deterministic is False
    assert utils.get_tags(WARPFactorizer()).non_deterministic is True
    assert not base.is_classifier(model) and not base.is_regressor(model)
    copy = base.clone(holdout[0])
    assert copy.get_params() == holdout[0].get_params() and not hasattr(copy, "user_factors_")


def test_fit_with_y_none_is_fit(rows):
    a = WARPFactorizer(n_components=8, epochs=2, n_threads=1).fit(rows, None)
    b = WARPFactorizer(n_components=8, epochs=2, n_threads=1).fit(rows)
    assert np.array_equal(a.user_factors_, b.user_factors_)


def test_grid_search_matches_a_manual_search(rows):
    ms = pytest.importorskip("sklearn.model_selection")
    base = pytest.importorskip("sklearn.base")
    estimator = WARPFactorizer(n_components=8, epochs=3, n_threads=1)
    grid = {"learning_rate": [0.02, 0.05]}
    cv = PerUserHoldout(n_splits=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        search = ms.GridSearchCV(estimator, grid, cv=cv, error_score="raise").fit(rows)
    manual = []
    for lr in grid["learning_rate"]:
        fold_scores = [base.clone(estimator).set_params(learning_rate=lr)
                       .fit(rows.iloc[train]).score(rows.iloc[test])
                       for train, test in cv.split(rows)]
        manual.append(np.mean(fold_scores))
    assert np.allclose(search.cv_results_["mean_test_score"], manual, rtol=0, atol=1e-12)
    best = int(np.argmax(manual))
    assert search.best_params_ == {"learning_rate": grid["learning_rate"][best]}
    assert search.best_score_ == pytest.approx(manual[best], abs=1e-12)
    assert search.best_estimator_.n_users_ == 200           # refit on every row
    scores = ms.cross_val_score(estimator.set_params(learning_rate=0.05), rows, cv=cv)
    assert np.allclose(scores.mean(), manual[1], rtol=0, atol=1e-12)


def test_randomized_search_runs(rows):
    ms = pytest.importorskip("sklearn.model_selection")
    space = {"learning_rate": [0.02, 0.05], "n_components": [4, 8]}
    search = ms.RandomizedSearchCV(
        WARPFactorizer(epochs=3, n_threads=1), space, n_iter=3, random_state=0,
        cv=PerUserHoldout(n_splits=2, random_state=4), error_score="raise").fit(rows)
    means = search.cv_results_["mean_test_score"]
    assert len(means) == 3 and np.all((means > 0) & (means < 1))
    assert search.best_score_ == means.max()
    assert search.best_params_ == search.cv_results_["params"][int(np.argmax(means))]
    assert set(search.best_params_) == set(space)
    assert search.best_estimator_.n_components == search.best_params_["n_components"]
