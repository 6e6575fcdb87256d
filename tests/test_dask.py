"""warprec.dask: batch recommendation and evaluation on Dask give the single-machine results
(model.recommend(..., as_frame=True) and warprec.metrics.evaluate) on partitioned input."""

import math
import os
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pytest.importorskip("pyarrow")

from warprec import WARPFactorizer, WarprecWarning  # noqa: E402
from warprec import dask as wd  # noqa: E402
from warprec._kernels.config import NUMBA_SCORING_MACS  # noqa: E402
from warprec.datasets import make_interactions  # noqa: E402
from warprec.metrics import evaluate as single_evaluate  # noqa: E402


@pytest.fixture(scope="module")
def client(dask_client):
    return dask_client


def _split(ids_of_user, ids_of_item):
    X = make_interactions(240, 90, 5000, rank=4, random_state=3).tocoo()
    df = pd.DataFrame({"user_id": ids_of_user(X.row), "item_id": ids_of_item(X.col)})
    held_out = np.random.default_rng(0).random(len(df)) < 0.2
    return df[~held_out].reset_index(drop=True), df[held_out].reset_index(drop=True)


@pytest.fixture(scope="module")
def data():
    """(model, train, test) with integer raw ids that are not the indices."""
    train, test = _split(lambda u: u * 7 + 3, lambda i: 1000 - i * 11)
    model = WARPFactorizer(n_components=8, epochs=3, n_threads=1, random_state=0).fit(train)
    return model, train, test


@pytest.fixture(scope="module")
def users(data):
    """Known users in shuffled order, some repeated."""
    model = data[0]
    rng = np.random.default_rng(1)
    ids = rng.choice(model.user_ids_, size=170, replace=True)
    return pd.Series(ids, name="user_id")


def _partitioned(frame, n):
    return dd.from_pandas(frame, npartitions=n, sort=False)


def _same(got, expected):
    """The computed dask result equals the single-machine frame exactly."""
    got = got.compute() if hasattr(got, "compute") else got
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected.reset_index(drop=True))


# ---------------------------------------------------------------------- recommend
@pytest.mark.parametrize("exclude_seen", [True, False])
@pytest.mark.parametrize("k", [1, 7])
def test_recommend_matches_the_model(client, data, users, exclude_seen, k):
    model = data[0]
    result = wd.recommend(model, _partitioned(users, 4), k=k, exclude_seen=exclude_seen,
                          client=client)
    assert result.npartitions == 4
    assert list(result.columns) == ["user_id", "item_id", "score", "rank"]
    _same(result, model.recommend(users, k=k, exclude_seen=exclude_seen, as_frame=True))


def test_recommend_without_a_client(data, users):
    model = data[0]
    frame = users.to_frame().assign(other=1)   # a DataFrame: its user_id column
    with dask.config.set(scheduler="threads"):   # not the module's client
        result = wd.recommend(model, _partitioned(frame, 3), k=5)
        assert result.npartitions == 3
        _same(result, model.recommend(users, k=5, as_frame=True))


@pytest.fixture(scope="module")
def large():
    """A model and users whose single recommend call is scored by BLAS (over
    NUMBA_SCORING_MACS multiply-adds) while each of 4 partitions alone would not be."""
    X = make_interactions(3000, 1500, 24000, rank=4, random_state=3).tocoo()
    df = pd.DataFrame({"user_id": X.row + 10, "item_id": X.col})
    held_out = np.random.default_rng(0).random(len(df)) < 0.2
    train, test = df[~held_out], df[held_out]
    model = WARPFactorizer(n_components=64, epochs=1, n_threads=1, random_state=0).fit(train)
    users = pd.Series(np.random.default_rng(1).permutation(model.user_ids_), name="user_id")
    per_user = model.n_items_ * model.user_factors_.shape[1]
    assert len(users) * per_user > NUMBA_SCORING_MACS >= len(users) // 4 * per_user
    return model, users, train, test.sample(frac=1, random_state=0)


def test_small_partitions_of_a_large_request(client, large):
    model, users, train, test = large
    _same(wd.recommend(model, _partitioned(users, 4), k=10, client=client),
          model.recommend(users, k=10, as_frame=True))
    metrics = ["ndcg", "auc", "map"]
    _same_metrics(wd.evaluate(model, _partitioned(test, 4), _partitioned(train, 2), k=10,
                              metrics=metrics, client=client),
                  single_evaluate(model, test, train=train, k=10, metrics=metrics))


def test_recommend_excludes_the_given_interactions(client, data, users):
    model, train, test = data
    # seen: the test rows plus rows of an unknown user and an unknown item (ignored)
    seen = pd.concat([test, pd.DataFrame({"user_id": [-5, int(users[0])],
                                          "item_id": [int(model.item_ids_[0]), -9]})])
    rows = pd.Index(model.user_ids_).get_indexer(users)
    known = pd.Index(model.item_ids_).get_indexer(test.item_id)
    by_user = sp.csr_matrix((np.ones(len(test)), (pd.Index(model.user_ids_).get_indexer(
        test.user_id), known)), shape=(model.n_users_, model.n_items_))
    expected = model.recommend(users, k=6, user_items=by_user[rows], as_frame=True)
    result = wd.recommend(model, _partitioned(users, 3), k=6, client=client,
                          interactions=_partitioned(seen, 2))
    _same(result, expected)
    # not what excluding the training positives gives
    assert not expected.equals(model.recommend(users, k=6, as_frame=True))


def test_recommend_parquet_in_and_out(client, data, users, tmp_path):
    model, train, test = data
    _partitioned(users.to_frame(), 3).to_parquet(tmp_path / "users")
    _partitioned(test, 2).to_parquet(tmp_path / "seen.parquet")
    result = wd.recommend(model, tmp_path / "users", k=4, client=client)
    assert result.npartitions == 3
    result.to_parquet(tmp_path / "out")
    back = pd.read_parquet(tmp_path / "out")
    _same(back, model.recommend(users, k=4, as_frame=True))
    # interactions from a Parquet path too
    direct = wd.recommend(model, _partitioned(users, 3), k=4, client=client,
                          interactions=_partitioned(test, 2)).compute()
    from_path = wd.recommend(model, str(tmp_path / "users"), k=4, client=client,
                             interactions=str(tmp_path / "seen.parquet")).compute()
    _same(from_path, direct)


def test_recommend_string_ids():
    train, _ = _split(lambda u: np.char.add("u", u.astype(str)),
                      lambda i: np.char.add("item-", i.astype(str)))
    model = WARPFactorizer(n_components=4, epochs=2, n_threads=1, random_state=0).fit(train)
    users = pd.Series(model.user_ids_[::3], name="user_id")
    result = wd.recommend(model, _partitioned(users, 2), k=3)
    _same(result, model.recommend(users, k=3, as_frame=True))


def test_recommend_empty_partition(data, users):
    model = data[0]
    parts = _partitioned(users, 3)
    parts = parts[parts.index < 100]   # the last partition is empty
    result = wd.recommend(model, parts, k=3).compute()
    expected = model.recommend(users[:100], k=3, as_frame=True)
    _same(result, expected)


def test_unknown_users_raise(client, data, users):
    model = data[0]
    bad = pd.concat([users, pd.Series([123456789], name="user_id")], ignore_index=True)
    result = wd.recommend(model, _partitioned(bad, 3), k=3, client=client)   # lazy
    with pytest.raises(KeyError, match="123456789.*not seen at fit time|not seen at fit time"):
        result.compute()
    with pytest.raises(KeyError, match="not seen at fit time"):
        model.recommend(bad, k=3)


@pytest.mark.parametrize("on_unknown", ["skip", "popular"])
def test_unknown_users_skipped_or_served_popular_items(client, data, large, users,
                                                       on_unknown):
    """The rows of one model.recommend call for the same users, unknown ones included
    (also for the small partitions of a large request), and its warning, once."""
    for model, known in ((data[0], users), (large[0], large[1])):
        ids = pd.concat([pd.Series([-7], name="user_id"), known,
                         pd.Series([-8, -7], name="user_id")], ignore_index=True)
        with pytest.warns(WarprecWarning) as single:
            expected = model.recommend(ids, k=5, as_frame=True, on_unknown=on_unknown)
        with pytest.warns(WarprecWarning) as distributed_:
            result = wd.recommend(model, _partitioned(ids, 4), k=5, client=client,
                                  on_unknown=on_unknown)
        assert [str(w.message) for w in distributed_] == [str(w.message) for w in single]
        assert "3 requested user(s)" in str(single[0].message)
        _same(result, expected)
        if on_unknown == "popular":
            assert list(result.columns)[-1] == "fallback"
            assert expected["fallback"].sum() == 15
        else:
            assert not expected["user_id"].isin([-7, -8]).any()


@pytest.mark.parametrize("on_unknown", ["skip", "popular"])
def test_evaluate_on_unknown_matches_single_machine(client, data, on_unknown):
    model, train, test = data
    extra = pd.DataFrame({"user_id": [-1, -1, -2, -3],
                          "item_id": [*test.item_id[:3].tolist(), -99]})
    test2 = pd.concat([test, extra], ignore_index=True).sample(frac=1, random_state=0)
    metrics = ["ndcg", "auc", "recall", "map"]
    with pytest.warns(WarprecWarning, match="4 row.*3 user") as single:
        expected = single_evaluate(model, test2, train=train, k=5, metrics=metrics,
                                   on_unknown=on_unknown)
    with pytest.warns(WarprecWarning) as distributed_:
        got = wd.evaluate(model, _partitioned(test2, 3), train=_partitioned(train, 2), k=5,
                          metrics=metrics, client=client, on_unknown=on_unknown)
    assert [str(w.message) for w in distributed_] == [str(w.message) for w in single]
    _same_metrics(got, expected)
    assert got["n_users"] == test["user_id"].nunique() + (3 if on_unknown == "popular"
                                                          else 0)
    with pytest.raises(KeyError, match="unseen at fit time.*on_unknown="):
        wd.evaluate(model, _partitioned(test2, 3), k=5, client=client, on_unknown="error")


def test_bad_inputs(data, users):
    model = data[0]
    with pytest.raises(KeyError, match="user_id"):
        wd.recommend(model, pd.DataFrame({"user": users}))
    with pytest.raises(TypeError, match="Series"):
        wd.recommend(model, list(users))
    with pytest.raises(KeyError, match="item_id"):
        wd.recommend(model, users, interactions=pd.DataFrame({"user_id": users}))
    with pytest.raises(ValueError, match="k"):
        wd.recommend(model, users, k=0)
    with pytest.raises(ValueError, match="on_unknown"):
        wd.recommend(model, users, on_unknown="drop")
    with pytest.raises(ValueError, match="unknown metric"):
        wd.evaluate(model, data[2], metrics=["nope"])
    with pytest.raises(Exception, match="not fitted"):
        wd.recommend(WARPFactorizer(), users)


# ---------------------------------------------------------------------- evaluate
def _same_metrics(got, expected):
    """The same numbers to the last bit (both take means of exactly rounded sums)."""
    assert got.keys() == expected.keys()
    assert got["n_users"] == expected["n_users"]
    for key, value in expected.items():
        assert got[key] == value or (np.isnan(got[key]) and np.isnan(value)), key


@pytest.mark.parametrize("k, metrics", [(10, None), (3, ["ndcg", "auc", "recall"]),
                                        (25, "map")])
def test_evaluate_matches_single_machine(client, data, k, metrics):
    model, train, test = data
    test = test.sample(frac=1, random_state=0)   # a user's rows in several partitions
    expected = single_evaluate(model, test, train=train, k=k, metrics=metrics)
    got = wd.evaluate(model, _partitioned(test, 3), train=_partitioned(train, 2), k=k,
                      metrics=metrics, client=client)
    _same_metrics(got, expected)


def test_evaluate_without_train_or_client(data):
    model, train, test = data
    test = test.sample(frac=1, random_state=1)
    # the threaded scheduler, not the module's client (whose shuffle method is p2p)
    with dask.config.set({"scheduler": "threads", "dataframe.shuffle.method": "tasks"}):
        got = wd.evaluate(model, _partitioned(test, 2), k=5)
    _same_metrics(got, single_evaluate(model, test, k=5))


def test_evaluate_parquet_paths_and_graded_gains(client, data, tmp_path):
    model, train, test = data
    rng = np.random.default_rng(2)
    graded = test.assign(rating=rng.integers(1, 6, len(test)).astype(float))
    _partitioned(graded, 3).to_parquet(tmp_path / "test")
    _partitioned(train, 2).to_parquet(tmp_path / "train")
    metrics = ["ndcg_graded", "ndcg", "precision"]
    expected = single_evaluate(model, graded, train=train, k=10, metrics=metrics)
    got = wd.evaluate(model, tmp_path / "test", train=str(tmp_path / "train"), k=10,
                      metrics=metrics, client=client)
    _same_metrics(got, expected)


def test_evaluate_warns_as_single_machine(client, data):
    model, train, test = data
    # unknown users in test and train, test rows that are also in train
    extra = pd.DataFrame({"user_id": [-1, -1, -2], "item_id": test.item_id[:3]})
    test2 = pd.concat([test, extra, train[:4]], ignore_index=True)
    train2 = pd.concat([train, extra[:2]], ignore_index=True)
    with warnings.catch_warnings(record=True) as single:
        warnings.simplefilter("always")
        expected = single_evaluate(model, test2, train=train2, k=5)
    with warnings.catch_warnings(record=True) as distributed_:
        warnings.simplefilter("always")
        got = wd.evaluate(model, _partitioned(test2, 3), train=_partitioned(train2, 2), k=5,
                          client=client)
    _same_metrics(got, expected)
    messages = [str(w.message) for w in single if issubclass(w.category, WarprecWarning)]
    assert len(messages) == 3
    assert [str(w.message) for w in distributed_
            if issubclass(w.category, WarprecWarning)] == messages


def test_evaluate_no_test_user(data):
    model, train, test = data
    unknown = pd.DataFrame({"user_id": [-1, -2], "item_id": test.item_id[:2]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = wd.evaluate(model, _partitioned(unknown, 2), k=5, metrics=["ndcg"])
    assert [str(w.message) for w in caught] == [
        "test: 2 row(s) of 2 user(s) unseen at fit time were left out (the model cannot "
        "score them; on_unknown='popular' ranks the most popular items for them).",
        "no user has a relevant test item; every metric is NaN"]
    assert np.isnan(got["ndcg@5"]) and got["n_users"] == 0


def test_matrix_fit_model(data):
    X = make_interactions(60, 30, 600, rank=3, random_state=1)
    model = WARPFactorizer(n_components=4, epochs=2, n_threads=1, random_state=0).fit(X)
    users = pd.Series([5, 0, 59, 5], name="user_id")
    _same(wd.recommend(model, _partitioned(users, 2), k=4),
          model.recommend(users, k=4, as_frame=True))
    with pytest.raises(TypeError, match="fit on a matrix"):
        wd.evaluate(model, pd.DataFrame({"user_id": [1], "item_id": [2]}))


# ---------------------------------------------------------------------- packaging
def _run(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"}, timeout=120)


def test_import_warprec_does_not_import_dask():
    done = _run("import sys, warprec; from warprec import WARPFactorizer, evaluate; "
                "import warprec.model, warprec.metrics; "
                "assert 'dask' not in sys.modules, 'dask imported'")
    assert done.returncode == 0, done.stderr


def test_clear_error_without_dask():
    done = _run("import sys; sys.modules['dask'] = None\n"
                "try:\n    import warprec.dask\n"
                "except ImportError as e:\n    print(e)\n")
    assert done.returncode == 0, done.stderr
    assert "pip install 'warprec[dask]'" in done.stdout


def test_popular_fallback_ranks_by_float32_counts_as_single_machine():
    """The unknown users' popularity ranking scores the counts as float32 biases, as
    evaluate_factors (behind warprec.metrics.evaluate) converts them: counts above 2**24
    tie there, and the partition's values must tie the same way."""
    from warprec.evaluation import evaluate_factors

    popularity = np.array([2**24, 2**24 + 1], dtype=np.int64)   # equal as float32
    test = sp.csr_matrix(np.array([[0.0, 1.0]]))
    items = wd._Side(np.zeros((2, 1), np.float32), np.zeros(2, np.float32), None, popularity)
    users = wd._Side(np.zeros((0, 1), np.float32), None, None)
    prepared = dict(evaluated=np.empty(0, np.int64), overlap=0, unknown_rows=1,
                    unknown_users=np.array(["u"], dtype=object),
                    fallback=(test, np.array([1], dtype=np.int64)))
    part = wd._evaluate_partition(prepared, users, items, None, 1, ["hit_rate"], 0)
    want = evaluate_factors(np.zeros((1, 1), np.float32), np.zeros((2, 1), np.float32),
                            popularity, test, None, 1, metrics=["hit_rate"])
    assert part["n_users"] == 1
    assert math.fsum(part["sums"]["hit_rate"]) == want["hit_rate@1"]
