"""Tests of warprec.scoring.topk_items against a full-argsort reference."""

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from warprec.scoring import topk_items

try:  # works whether or not tests/ is a package
    from .naive_metrics import naive_eligible, naive_scores, naive_topk
except ImportError:
    from naive_metrics import naive_eligible, naive_scores, naive_topk

SCORE_TOL = 1e-5


def random_problem(rng, n_users, n_items, d, exact=False):
    """Factors; with exact=True, multiples of 1/4 so every score is exact in float32."""
    if exact:
        user_factors = rng.integers(-4, 5, size=(n_users, d)) / 4.0
        item_factors = rng.integers(-4, 5, size=(n_items, d)) / 4.0
        biases = rng.integers(-2, 3, size=n_items) / 4.0
    else:
        user_factors = rng.normal(size=(n_users, d))
        item_factors = rng.normal(size=(n_items, d))
        biases = rng.normal(size=n_items)
    return (user_factors.astype(np.float32), item_factors.astype(np.float32),
            biases.astype(np.float32))


def random_exclusion(rng, n_users, n_items, density):
    mask = rng.random((n_users, n_items)) < density
    return sp.csr_matrix(mask.astype(np.float32))


def check_against_scores(items, scores, full, users, k, exclude=None, allowed=None):
    """Tolerant check: returned items are eligible, distinct, correctly scored, sorted,
    and no eligible item left out scores clearly above the last one kept."""
    n_items = full.shape[1]
    assert items.shape == scores.shape == (len(users), min(k, n_items))
    for row, user in enumerate(users):
        eligible = naive_eligible(n_items, user, exclude, allowed)
        n_expected = min(k, int(eligible.sum()))
        kept = items[row, :n_expected]
        assert (items[row, n_expected:] == -1).all()
        assert np.isneginf(scores[row, n_expected:]).all()
        assert len(set(kept.tolist())) == n_expected
        assert eligible[kept].all()
        np.testing.assert_allclose(scores[row, :n_expected], full[user, kept],
                                   rtol=SCORE_TOL, atol=SCORE_TOL)
        assert (np.diff(scores[row, :n_expected]) <= 0).all()
        left_out = eligible.copy()
        left_out[kept] = False
        if n_expected and left_out.any():
            assert full[user, left_out].max() <= scores[row, n_expected - 1] + SCORE_TOL


@pytest.mark.parametrize("k", [1, 7, 40, 100])
@pytest.mark.parametrize("block_size", [None, 9])
def test_matches_reference_with_rounding_tolerance(k, block_size):
    rng = np.random.default_rng(k)
    user_factors, item_factors, biases = random_problem(rng, 50, 60, 16)
    exclude = random_exclusion(rng, 50, 60, 0.2)
    users = rng.integers(0, 50, size=30)
    items, scores = topk_items(user_factors, item_factors, biases, users, k,
                               exclude=exclude, block_size=block_size)
    assert items.dtype == np.int32 and scores.dtype == np.float32
    full = naive_scores(user_factors, item_factors, biases)
    check_against_scores(items, scores, full, users, k, exclude)


@pytest.mark.parametrize("k", [1, 5, 25, 31])
def test_exact_scores_and_ties_lower_index_first(k):
    rng = np.random.default_rng(100 + k)
    user_factors, item_factors, biases = random_problem(rng, 40, 30, 3, exact=True)
    exclude = random_exclusion(rng, 40, 30, 0.3)
    users = np.arange(40)
    items, scores = topk_items(user_factors, item_factors, biases, users, k,
                               exclude=exclude, block_size=16)
    full = naive_scores(user_factors, item_factors, biases)
    ref_items, ref_scores = naive_topk(full, users, k, exclude=exclude)
    np.testing.assert_array_equal(items, ref_items)
    np.testing.assert_array_equal(scores, ref_scores)


def test_all_scores_tied_gives_lowest_indices():
    user_factors = np.zeros((3, 4), np.float32)
    item_factors = np.ones((10, 4), np.float32)
    items, scores = topk_items(user_factors, item_factors, np.zeros(10), [0, 1, 2], 4)
    np.testing.assert_array_equal(items, np.tile(np.arange(4), (3, 1)))
    np.testing.assert_array_equal(scores, np.zeros((3, 4)))
    exclude = sp.csr_matrix(([1.0, 1.0], ([1, 1], [0, 2])), shape=(3, 10))
    items, _ = topk_items(user_factors, item_factors, None, [1], 4, exclude=exclude)
    np.testing.assert_array_equal(items, [[1, 3, 4, 5]])


def test_allowed_items_and_exclusion_together():
    rng = np.random.default_rng(7)
    user_factors, item_factors, biases = random_problem(rng, 20, 35, 4, exact=True)
    exclude = random_exclusion(rng, 20, 35, 0.25)
    allowed = rng.random(35) < 0.5
    users = np.arange(20)
    for k in (1, 3, 35):
        items, scores = topk_items(user_factors, item_factors, biases, users, k,
                                   exclude=exclude, allowed_items=allowed, block_size=6)
        full = naive_scores(user_factors, item_factors, biases)
        ref_items, ref_scores = naive_topk(full, users, k, exclude=exclude, allowed=allowed)
        np.testing.assert_array_equal(items, ref_items)
        np.testing.assert_array_equal(scores, ref_scores)


def test_padding_when_fewer_eligible_than_k():
    rng = np.random.default_rng(3)
    user_factors, item_factors, biases = random_problem(rng, 2, 5, 3)
    exclude = sp.csr_matrix(np.array([[1, 1, 0, 1, 0], [1, 1, 1, 1, 1]], np.float32))
    items, scores = topk_items(user_factors, item_factors, biases, [0, 1], 4,
                               exclude=exclude)
    assert sorted(items[0, :2].tolist()) == [2, 4]
    np.testing.assert_array_equal(items[0, 2:], [-1, -1])
    np.testing.assert_array_equal(items[1], [-1, -1, -1, -1])
    assert np.isneginf(scores[1]).all() and np.isneginf(scores[0, 2:]).all()


def test_no_allowed_items_and_k_above_catalogue():
    rng = np.random.default_rng(4)
    user_factors, item_factors, biases = random_problem(rng, 3, 6, 2)
    items, scores = topk_items(user_factors, item_factors, biases, [0, 2], 50,
                               allowed_items=np.zeros(6, bool))
    assert items.shape == (2, 6)
    assert (items == -1).all() and np.isneginf(scores).all()
    items, _ = topk_items(user_factors, item_factors, biases, [0, 2], 50)
    assert items.shape == (2, 6)
    assert sorted(items[0].tolist()) == list(range(6))


def test_empty_users_and_repeated_users():
    rng = np.random.default_rng(5)
    user_factors, item_factors, biases = random_problem(rng, 4, 9, 3)
    items, scores = topk_items(user_factors, item_factors, biases, np.array([], int), 3)
    assert items.shape == (0, 3) and scores.shape == (0, 3)
    items, scores = topk_items(user_factors, item_factors, biases, [2, 2, 0], 3)
    np.testing.assert_array_equal(items[0], items[1])


def test_float64_inputs_are_cast_and_scores_match_float32_matmul():
    rng = np.random.default_rng(6)
    user_factors = rng.normal(size=(8, 5))
    item_factors = rng.normal(size=(12, 5))
    biases = rng.normal(size=12)
    items, scores = topk_items(user_factors, item_factors, biases, np.arange(8), 12)
    full = naive_scores(user_factors, item_factors, biases)
    np.testing.assert_allclose(scores, np.take_along_axis(full, items, 1),
                               rtol=SCORE_TOL, atol=SCORE_TOL)


def test_thread_count_is_respected_and_restored():
    rng = np.random.default_rng(8)
    user_factors, item_factors, biases = random_problem(rng, 30, 40, 4, exact=True)
    before = numba.get_num_threads()
    one = topk_items(user_factors, item_factors, biases, np.arange(30), 5, n_threads=1)
    assert numba.get_num_threads() == before
    every = topk_items(user_factors, item_factors, biases, np.arange(30), 5)
    assert numba.get_num_threads() == before
    np.testing.assert_array_equal(one[0], every[0])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_users=st.integers(1, 12),
       n_items=st.integers(1, 25), k=st.integers(1, 30), density=st.floats(0, 1),
       block_size=st.integers(1, 5))
def test_property_exact_agreement(seed, n_users, n_items, k, density, block_size):
    rng = np.random.default_rng(seed)
    user_factors, item_factors, biases = random_problem(rng, n_users, n_items, 2, exact=True)
    exclude = random_exclusion(rng, n_users, n_items, density)
    users = rng.integers(0, n_users, size=n_users)
    items, scores = topk_items(user_factors, item_factors, biases, users, k,
                               exclude=exclude, block_size=block_size)
    full = naive_scores(user_factors, item_factors, biases)
    ref_items, ref_scores = naive_topk(full, users, k, exclude=exclude)
    np.testing.assert_array_equal(items, ref_items)
    np.testing.assert_array_equal(scores, ref_scores)


@pytest.mark.parametrize("k", [0, -1, 1.5, True, "3", None])
def test_rejects_bad_k(k):
    factors = np.ones((2, 2), np.float32)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        topk_items(factors, factors, np.zeros(2), [0], k)


def test_k_error_message():
    factors = np.ones((2, 2), np.float32)
    with pytest.raises(ValueError, match=r"k must be a positive integer \(got 0\)"):
        topk_items(factors, factors, np.zeros(2), [0], 0)


def test_rejects_bad_shapes_and_values():
    users = np.ones((3, 2), np.float32)
    items = np.ones((4, 2), np.float32)
    biases = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="same number of columns"):
        topk_items(users, np.ones((4, 3)), biases, [0], 2)
    with pytest.raises(ValueError, match="item_biases must have shape"):
        topk_items(users, items, np.zeros(3), [0], 2)
    with pytest.raises(ValueError, match="2-D"):
        topk_items(np.ones(3), items, biases, [0], 2)
    with pytest.raises(ValueError, match=r"users must be indices in \[0, 3\)"):
        topk_items(users, items, biases, [3], 2)
    with pytest.raises(ValueError, match="users must be indices"):
        topk_items(users, items, biases, [-1], 2)
    with pytest.raises(TypeError, match="integer indices"):
        topk_items(users, items, biases, [0.5], 2)
    with pytest.raises(ValueError, match="exclude must have shape"):
        topk_items(users, items, biases, [0], 2, exclude=sp.csr_matrix((3, 5)))
    with pytest.raises(TypeError, match="exclude must be a scipy sparse"):
        topk_items(users, items, biases, [0], 2, exclude=np.zeros((3, 4)))
    with pytest.raises(TypeError, match="boolean mask"):
        topk_items(users, items, biases, [0], 2, allowed_items=np.ones(4))
    with pytest.raises(ValueError, match="allowed_items must have shape"):
        topk_items(users, items, biases, [0], 2, allowed_items=np.ones(3, bool))
    with pytest.raises(ValueError, match="n_threads must be a positive integer"):
        topk_items(users, items, biases, [0], 2, n_threads=0)
    with pytest.raises(ValueError, match="block_size must be a positive integer"):
        topk_items(users, items, biases, [0], 2, block_size=0)
    bad = items.copy()
    bad[1, 0] = np.nan
    with pytest.raises(ValueError, match="item_factors contains NaN"):
        topk_items(users, bad, biases, [0], 2)


@pytest.mark.parametrize("scoring_macs", [0, 2**40])
def test_blas_and_numba_scoring_give_the_same_top_k(monkeypatch, scoring_macs):
    """Small problems are scored by a Numba kernel, large ones by BLAS (forced here)."""
    import warprec._scoring
    from warprec.metrics import evaluate_factors

    monkeypatch.setattr(warprec._scoring, "NUMBA_SCORING_MACS", scoring_macs)
    rng = np.random.default_rng(7)
    user_factors, item_factors, biases = random_problem(rng, 50, 70, 8, exact=True)
    exclude = random_exclusion(rng, 50, 70, 0.2)
    users = np.arange(50)
    items, scores = topk_items(user_factors, item_factors, biases, users, 6,
                               exclude=exclude, block_size=16)
    full = naive_scores(user_factors, item_factors, biases)
    ref_items, ref_scores = naive_topk(full, users, 6, exclude=exclude)
    np.testing.assert_array_equal(items, ref_items)
    np.testing.assert_array_equal(scores, ref_scores)
    test = random_exclusion(rng, 50, 70, 0.1)
    test = test - test.multiply(exclude)
    test.eliminate_zeros()
    got = evaluate_factors(user_factors, item_factors, biases, test, exclude, k=6,
                           block_size=16)
    monkeypatch.setattr(warprec._scoring, "NUMBA_SCORING_MACS", 2**40 - scoring_macs)
    other = evaluate_factors(user_factors, item_factors, biases, test, exclude, k=6,
                             block_size=16)
    assert got == other
