"""Approximate top-k (``approximate=True``): recall against exact scoring, exact scores,
exclusions, persistence of the index, its invalidation, unknown users, the CLI flag."""

import json
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("usearch")

from warprec import WARPFactorizer  # noqa: E402
from warprec.datasets import make_interactions  # noqa: E402
from warprec.exceptions import WarprecWarning  # noqa: E402


def _fitted():
    X = make_interactions(300, 3000, 15000, random_state=0)
    model = WARPFactorizer(n_components=16, epochs=3, n_threads=1, random_state=0).fit(X)
    # WARP leaves the biases at zero: give the items popularity-skewed ones, which the
    # index must count exactly
    counts = np.bincount(X.indices, minlength=X.shape[1])
    model.item_biases_ = (0.3 * np.log1p(counts) - 0.3).astype(np.float32)
    return model


@pytest.fixture(scope="module")
def model():
    return _fitted()


def _recall(approx, exact):
    return np.mean([len(set(a) & set(e)) / len(e) for a, e in zip(approx, exact)])


def test_recall_against_exact_and_exact_scores_bias_included(model):
    users = np.arange(model.n_users_)
    exact, _ = model.recommend(users, k=10)
    items, scores = model.recommend(users, k=10, approximate=True)
    assert _recall(items, exact) >= 0.95
    np.testing.assert_allclose(
        scores, model.predict(np.repeat(users, 10), items.ravel()).reshape(scores.shape),
        rtol=1e-5, atol=1e-6)
    assert (np.diff(scores, axis=1) <= 0).all()


def test_seen_and_filtered_items_never_returned_and_items_respected(model):
    users = np.arange(model.n_users_)
    items, _ = model.recommend(users, k=10, approximate=True)
    seen = model.train_matrix_
    assert not any(seen[u, i] for u in users for i in items[u])
    banned = model.recommend(users[:20], k=3)[0].ravel()
    items, _ = model.recommend(users, k=10, filter_items=np.unique(banned),
                               approximate=True)
    assert not np.isin(items, banned).any()
    allowed = np.arange(0, model.n_items_, 7)
    items, scores = model.recommend(users[:30], k=5, items=allowed, approximate=True)
    exact, exact_scores = model.recommend(users[:30], k=5, items=allowed)
    assert np.isin(items, allowed).all()
    np.testing.assert_allclose(scores, exact_scores, rtol=1e-5)


def test_k_beyond_the_candidates_falls_back_to_exact(model):
    users = np.arange(5)
    k = model.n_items_ + 10
    items, scores = model.recommend(users, k=k, approximate=True)
    exact, exact_scores = model.recommend(users, k=k)
    np.testing.assert_array_equal(items, exact)
    np.testing.assert_allclose(scores, exact_scores, rtol=1e-5)
    assert (items[:, -1] == -1).all()   # seen items leave slots unfilled


def test_similar_items(model):
    query = np.arange(50)
    exact, exact_scores = model.similar_items(query, k=5)
    items, scores = model.similar_items(query, k=5, approximate=True)
    assert _recall(items, exact) >= 0.95
    assert not (items == query[:, None]).any()
    hit = items == exact
    np.testing.assert_allclose(scores[hit], exact_scores[hit], rtol=1e-5, atol=1e-6)


def test_save_load_round_trip_keeps_the_index(model, tmp_path):
    path = tmp_path / "model.npz"
    fresh = _fitted()
    fresh.save(path)
    assert not any(name.startswith("ann_") for name in np.load(path).files)
    model.build_index()
    model.build_index("similar_items")
    model.save(path)
    with np.load(path) as f:
        assert {"ann_recommend_bytes", "ann_similar_items_bytes"} <= set(f.files)
        assert json.loads(str(f["ann_recommend_meta"]))["n_items"] == model.n_items_
    loaded = WARPFactorizer.load(path)
    for method in ("recommend", "similar_items"):
        a = getattr(model, method)(np.arange(40), k=7, approximate=True)
        b = getattr(loaded, method)(np.arange(40), k=7, approximate=True)
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
    # saved again without having been used, the index is kept as it was read
    loaded.save(tmp_path / "again.npz")
    with np.load(path) as f, np.load(tmp_path / "again.npz") as g:
        np.testing.assert_array_equal(f["ann_recommend_bytes"], g["ann_recommend_bytes"])


def test_partial_fit_invalidates_the_index(tmp_path):
    model = _fitted()
    model.build_index()
    assert "ann_recommend_meta" in model.index_arrays()
    X = make_interactions(300, 3200, 15000, random_state=1)   # 200 new items
    model.partial_fit(X)
    assert model.index_arrays() == {}   # stale: dropped
    items, _ = model.recommend(np.arange(model.n_users_), k=10, approximate=True)
    meta = json.loads(str(model.index_arrays()["ann_recommend_meta"]))
    assert meta["n_items"] == model.n_items_ == 3200
    exact, _ = model.recommend(np.arange(model.n_users_), k=10)
    assert _recall(items, exact) >= 0.95


def test_unknown_users_follow_on_unknown(model):
    users = [0, model.n_users_ + 5]
    with pytest.raises(KeyError, match="on_unknown"):
        model.recommend(users, k=3, approximate=True)
    with pytest.warns(WarprecWarning, match="got no recommendations"):
        items, _ = model.recommend(users, k=3, approximate=True, on_unknown="skip")
    assert (items[1] == -1).all() and (items[0] >= 0).all()
    with pytest.warns(WarprecWarning, match="most popular"):
        frame = model.recommend(users, k=3, approximate=True, on_unknown="popular",
                                as_frame=True)
    popular = np.argsort(-model.item_popularity_, kind="stable")[:3]
    assert frame[frame.fallback]["item_id"].tolist() == popular.tolist()


def test_refusals_and_missing_library(model, monkeypatch):
    with pytest.raises(ValueError, match="item_features"):
        model.recommend(0, approximate=True, item_features=np.eye(3))
    with pytest.raises(ValueError, match="kind"):
        model.build_index("users")
    fresh = _fitted()
    monkeypatch.setitem(sys.modules, "usearch", None)
    with pytest.raises(ImportError, match=r"pip install 'warprec\[ann\]'"):
        fresh.recommend(0, approximate=True)


def test_cli_approximate(tmp_path):
    gen = np.random.default_rng(0)
    frame = pd.DataFrame({"user_id": gen.integers(0, 40, 800) + 1,
                          "item_id": gen.integers(0, 300, 800) + 1000}).drop_duplicates()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WarprecWarning)
        model = WARPFactorizer(n_components=8, epochs=2, n_threads=1).fit(frame)
    model.save(tmp_path / "model.npz")
    out = tmp_path / "recs.csv"
    proc = subprocess.run([sys.executable, "-m", "warprec", "recommend", tmp_path / "model.npz",
                           "1", "2", "-k", "3", "--approximate", "-o", out],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    got = pd.read_csv(out)
    exact = model.recommend([1, 2], k=3, as_frame=True)
    assert got[["user_id", "rank"]].values.tolist() == exact[["user_id", "rank"]].values.tolist()
    assert _recall(got["item_id"].to_numpy().reshape(2, 3),
                   exact["item_id"].to_numpy().reshape(2, 3)) >= 0.5
