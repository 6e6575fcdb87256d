"""Tests of warprec.datasets (synthetic generators) and of the embedded demo data."""

from __future__ import annotations

import importlib.resources
import importlib.util
import time
from pathlib import Path

import numba
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import svds

from warprec.data import (
    Interactions,
    positives,
    read_item_titles,
    read_ratings,
    split_random,
)
from warprec.datasets import PlantedTruth, make_interactions, make_ratings
from warprec.exceptions import WarprecWarning

#: The generator script of the demo data (repository only) and the data shipped in the
#: package, where warprec finds it.
SCRIPT = Path(__file__).resolve().parents[1] / "data" / "make_synthetic.py"
DATA = Path(importlib.resources.files("warprec") / "demo_data")


# --------------------------------------------------------------------------------------
# helpers: a quick popularity vs low-rank comparison in plain numpy/scipy
# --------------------------------------------------------------------------------------
def holdout(X: sp.csr_matrix, fraction=0.2, seed=1):
    coo = X.tocoo()
    test = np.random.default_rng(seed).random(coo.nnz) < fraction

    def part(mask):
        return sp.csr_matrix((coo.data[mask], (coo.row[mask], coo.col[mask])), shape=X.shape)
    return part(~test), part(test)


def precision_at_10(train: sp.csr_matrix, test: sp.csr_matrix, scores: np.ndarray,
                    users: np.ndarray) -> float:
    scores = scores.copy()
    seen = train[users].nonzero()
    scores[seen] = -np.inf
    top = np.argpartition(-scores, 10, axis=1)[:, :10]
    hits = np.take_along_axis(test[users].toarray(), top, axis=1)
    return float(hits.sum(axis=1).mean() / 10)


def popularity_vs_low_rank(train, test, rank=16):
    """P@10 of the popularity ranking and of a truncated SVD of the column-normalised
    matrix (a PureSVD-like low-rank model)."""
    users = np.flatnonzero(np.diff(test.indptr) > 0)
    pop = np.asarray(train.sum(axis=0)).ravel()
    p_pop = precision_at_10(train, test, np.tile(pop, (users.size, 1)), users)
    scale = 1.0 / np.sqrt(np.maximum(pop, 1.0))
    u, s, vt = svds((train @ sp.diags(scale)).astype(np.float64), k=rank, random_state=0)
    p_svd = precision_at_10(train, test, (u[users] * s) @ vt / scale, users)
    return p_pop, p_svd


# --------------------------------------------------------------------------------------
# make_interactions
# --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small():
    return make_interactions(3000, 2000, 100_000, random_state=5, return_truth=True)


def test_shape_and_content(small):
    X, truth = small
    assert isinstance(X, sp.csr_matrix) and X.shape == (3000, 2000)
    assert X.dtype == np.float32 and np.all(X.data == 1.0)
    assert X.nnz == 100_000
    assert X.has_sorted_indices
    Y = X.copy()
    Y.sum_duplicates()
    assert Y.nnz == X.nnz                                     # no duplicated entries
    for u in range(0, 3000, 97):
        row = X.indices[X.indptr[u]:X.indptr[u + 1]]
        assert np.all(np.diff(row) > 0)
    assert np.diff(X.indptr).min() >= 5                       # min_per_user
    assert isinstance(truth, PlantedTruth)
    assert truth.user_taste.shape == (3000, 16) and truth.item_taste.shape == (2000, 16)


def test_deterministic(small):
    X, _ = small
    again = make_interactions(3000, 2000, 100_000, random_state=5)
    assert np.array_equal(X.indptr, again.indptr) and np.array_equal(X.indices, again.indices)
    other = make_interactions(3000, 2000, 100_000, random_state=6)
    assert not np.array_equal(X.indices[:1000], other.indices[:1000])


def test_independent_of_thread_count():
    reference = make_interactions(500, 300, 20_000, random_state=1)
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        single = make_interactions(500, 300, 20_000, random_state=1)
    finally:
        numba.set_num_threads(threads)
    assert np.array_equal(reference.indices, single.indices)


def test_power_laws(small):
    X, _ = small
    item_counts = np.sort(np.asarray(X.sum(axis=0)).ravel())[::-1]
    top_share = item_counts[:200].sum() / item_counts.sum()
    assert top_share > 0.3                     # top 10% of items: > 3x their share
    user_counts = np.diff(X.indptr)
    assert user_counts.max() > 8 * np.median(user_counts)       # heavy-tailed activity
    assert (item_counts > 0).mean() > 0.95


def test_low_rank_structure_beats_popularity(small):
    X, truth = small
    train, test = holdout(X)
    p_pop, p_svd = popularity_vs_low_rank(train, test)
    assert p_svd > 1.4 * p_pop, (p_pop, p_svd)
    # users' items lean towards their planted taste
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    chosen = truth.affinity(rows, X.indices).mean()
    random_items = np.random.default_rng(0).integers(0, X.shape[1], rows.size)
    assert chosen > truth.affinity(rows, random_items).mean() + 0.2


def test_no_taste_means_nothing_to_learn():
    X = make_interactions(2000, 1000, 60_000, taste_strength=0.0, random_state=2)
    p_pop, p_svd = popularity_vs_low_rank(*holdout(X))
    assert p_svd < 1.15 * p_pop


def test_speed_one_million():
    make_interactions(50, 50, 500)                       # compile / load the kernel
    start = time.perf_counter()
    X = make_interactions(20_000, 10_000, 1_000_000, random_state=3)
    elapsed = time.perf_counter() - start
    assert X.nnz == 1_000_000
    assert elapsed < 5.0, elapsed


@pytest.mark.parametrize("kwargs, error, match", [
    ({"n_interactions": 40}, ValueError, r"fewer than n_users \* min_per_user = 50"),
    ({"n_interactions": 10_000}, ValueError, "exceeds n_users"),
    ({"min_per_user": 20, "max_per_user": 10}, ValueError, r"min_per_user=20 is larger.*\(10\)"),
    ({"taste_strength": 1.5}, ValueError, "taste_strength"),
    ({"temperature": 0.0}, ValueError, "temperature"),
    ({"n_users": 2.5}, TypeError, "n_users must be an integer"),
])
def test_argument_errors(kwargs, error, match):
    args = {"n_users": 10, "n_items": 40, "n_interactions": 100} | kwargs
    with pytest.raises(error, match=match):
        make_interactions(**args)


# --------------------------------------------------------------------------------------
# make_ratings
# --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ratings():
    return make_ratings(400, 300, 20_000, random_state=4, return_truth=True)


def test_ratings_frame(ratings):
    df, _ = ratings
    assert list(df.columns) == ["user_id", "item_id", "rating", "timestamp"]
    assert len(df) == 20_000
    assert df.user_id.min() == 1 and df.user_id.max() == 400 and df.item_id.min() >= 1
    assert df.user_id.dtype == np.int64 and df.timestamp.dtype == np.int64
    assert set(np.unique(df.rating)) <= set(np.arange(1, 11) / 2)
    assert not df.duplicated(["user_id", "item_id"]).any()
    assert (df.groupby("user_id").size() >= 20).all()
    assert df.user_id.is_monotonic_increasing
    assert (df.groupby("user_id").timestamp.diff().dropna() > 0).all()
    assert df.timestamp.min() >= 946684800
    share = df.rating.value_counts(normalize=True)
    assert 0.2 < share[4.0] < 0.33 and share[0.5] < 0.03


def test_ratings_follow_affinity(ratings):
    df, truth = ratings
    aff = truth.affinity(df.user_id - 1, df.item_id - 1)
    assert aff[df.rating >= 4].mean() > aff[df.rating <= 2].mean() + 0.2
    assert np.corrcoef(aff, df.rating)[0, 1] > 0.3


def test_ratings_same_pairs_as_interactions(ratings):
    df, _ = ratings
    X = make_interactions(400, 300, 20_000, min_per_user=20, random_state=4)
    M = sp.csr_matrix((np.ones(len(df)), (df.user_id - 1, df.item_id - 1)), shape=X.shape)
    assert (M != X).nnz == 0


def test_ratings_deterministic_and_whole_stars(ratings):
    df, _ = ratings
    assert make_ratings(400, 300, 20_000, random_state=4).equals(df)
    whole = make_ratings(100, 100, 3000, half_stars=False, random_state=0)
    assert set(np.unique(whole.rating)) <= {1.0, 2.0, 3.0, 4.0, 5.0}


# --------------------------------------------------------------------------------------
# embedded demo data (warprec/demo_data/, made by data/make_synthetic.py)
# --------------------------------------------------------------------------------------
def _load_script():
    spec = importlib.util.spec_from_file_location("make_synthetic", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_demo_files_format():
    raw = (DATA / "ratings.csv").read_bytes()
    assert raw.startswith(b"userId,movieId,rating,timestamp\n")
    assert len(raw) < 3_000_000
    df = read_ratings(DATA / "ratings.csv")
    assert 95_000 <= len(df) <= 105_000
    assert df.user_id.nunique() == 1500 and df.item_id.max() <= 1500
    first = raw.split(b"\n")[1].split(b",")
    assert first[2] in {str(v).encode() for v in np.arange(1, 11) / 2}
    titles = read_item_titles(DATA / "movies.csv")
    assert len(titles) == 1500
    assert titles.str.fullmatch(r"Synthetic Film \d{4} \(\d{4}\)").all()
    movies = pd.read_csv(DATA / "movies.csv")
    assert list(movies.columns) == ["movieId", "title", "genres"]
    assert movies.genres.str.len().gt(0).all()


def test_demo_files_regenerate_bit_for_bit():
    script = _load_script()
    assert script.OUT.resolve() == DATA.resolve()  # the script writes where warprec reads
    files = script.render()
    for name, content in files.items():
        assert (DATA / name).read_bytes() == content, f"{name} is stale: rerun make_synthetic.py"


def test_demo_low_rank_beats_popularity():
    df = read_ratings(DATA / "ratings.csv")
    train_df, test_df = split_random(positives(df, min_rating=4), 0.2, random_state=42)
    train = Interactions.from_frame(train_df)
    with pytest.warns(WarprecWarning, match="dropped"):   # test-only items
        test = Interactions.from_frame(test_df, user_ids=train.user_ids,
                                       item_ids=train.item_ids, unknown="drop")
    p_pop, p_svd = popularity_vs_low_rank(train.matrix, test.matrix)
    assert p_pop > 0.05
    assert p_svd > 1.5 * p_pop, (p_pop, p_svd)
