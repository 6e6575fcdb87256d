"""Tests of warprec.metrics: seed worked examples, ranx agreement, edge cases, and
evaluate_factors against a full-argsort reference (tests/naive_metrics.py)."""

import math
import warnings

import numba
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from warprec import WarprecWarning
from warprec import metrics as wm
from warprec.metrics import (
    auc,
    average_precision_at_k,
    dcg_at_k,
    evaluate,
    evaluate_factors,
    expected_rank_utility,
    hit_rate_at_k,
    kendall_tau,
    map_at_k,
    ndcg_at_k,
    normalized_expected_rank_utility,
    precision_at_k,
    recall_at_k,
    reciprocal_rank_at_k,
    weighted_kendall_tau,
)
from warprec.scoring import topk_items

try:  # works whether or not tests/ is a package
    from . import naive_metrics as naive
except ImportError:
    import naive_metrics as naive

EXACT = 1e-12


# ----------------------------------------------------------------------------
# Worked examples from the seed texts
# ----------------------------------------------------------------------------

def test_seed_average_precision_example():
    # relevance (1, 0, 1, 0, 1): AP = (1/1 + 2/3 + 3/5) / 3 ~= 0.76
    ranked = ["a", "b", "c", "d", "e"]
    relevant = {"a", "c", "e"}
    assert average_precision_at_k(ranked, relevant) == pytest.approx(34 / 45, abs=EXACT)
    assert average_precision_at_k(ranked, relevant) == pytest.approx(0.76, abs=5e-3)
    assert average_precision_at_k(ranked, relevant, 5) == pytest.approx(34 / 45, abs=EXACT)
    # AP@2: one hit at rank 1, divided by min(2, 3)
    assert average_precision_at_k(ranked, relevant, 2) == pytest.approx(0.5, abs=EXACT)
    assert map_at_k([ranked, ranked], [relevant, {"b"}], 5) == pytest.approx(
        (34 / 45 + 0.5) / 2, abs=EXACT)


TABLE_9_3 = (3, 2, 3, 0, 1, 2)


def test_seed_table_9_3_classic_dcg():
    exact_dcg = 3 + 2 + 3 / math.log2(3) + 0 + 1 / math.log2(5) + 2 / math.log2(6)
    dcg = dcg_at_k(TABLE_9_3, 6, form="classic")
    assert dcg == pytest.approx(exact_dcg, abs=EXACT)
    assert dcg == pytest.approx(8.09, abs=1e-2)  # the seed rounds log2 to 2 decimals
    # per-position terms r_i / log2(i) of the table: N/A, 2, 1.887, 0, 0.431, 0.772
    terms = [dcg_at_k(TABLE_9_3, i, form="classic") - dcg_at_k(TABLE_9_3, i - 1, form="classic")
             for i in range(2, 7)]
    assert terms == pytest.approx([2, 1.887, 0, 0.431, 0.772], abs=1e-2)
    ideal = dcg_at_k(sorted(TABLE_9_3, reverse=True), 6, form="classic")
    assert ideal == pytest.approx(8.693, abs=1e-3)
    items = list("abcdef")
    ndcg = ndcg_at_k(items, dict(zip(items, TABLE_9_3)), 6, form="classic")
    assert ndcg == pytest.approx(exact_dcg / ideal, abs=EXACT)
    assert ndcg == pytest.approx(0.9306, abs=1e-3)
    # the seed's own arithmetic on its rounded values
    assert 8.09 / 8.693 == pytest.approx(0.9306, abs=1e-4)


def test_dcg_forms():
    gains = [2, 0, 1]
    assert dcg_at_k(gains) == pytest.approx(3 + 0 + 1 / 2, abs=EXACT)
    assert dcg_at_k(gains, form="linear") == pytest.approx(2 + 1 / 2, abs=EXACT)
    assert dcg_at_k(gains, form="classic") == pytest.approx(2 + 1 / math.log2(3), abs=EXACT)
    assert dcg_at_k(gains, 1) == pytest.approx(3.0, abs=EXACT)
    assert dcg_at_k(gains, 10) == dcg_at_k(gains)
    assert dcg_at_k([]) == 0.0
    for form in ("exponential", "linear"):
        assert dcg_at_k([1, 0, 1], form=form) == pytest.approx(1.5, abs=EXACT)
    with pytest.raises(ValueError, match="form must be one of"):
        dcg_at_k(gains, form="log")
    with pytest.raises(ValueError, match="finite"):
        dcg_at_k([1, np.nan])


def test_ndcg_binary_and_graded():
    # binary: one hit at rank 2, two relevant, k=3 -> (1/log2 3) / (1 + 1/log2 3)
    value = ndcg_at_k([5, 7, 9], {7, 11}, 3)
    assert value == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)), abs=EXACT)
    # ideal truncated at k: k=1 with the hit at rank 2 -> 0; hit at rank 1 -> 1
    assert ndcg_at_k([5, 7], {7, 11}, 1) == 0.0
    assert ndcg_at_k([7, 5], {7, 11}, 1) == 1.0
    # graded, dict and pair-of-arrays forms agree
    gains = {"x": 3, "y": 1, "z": 2}
    as_pair = (np.array(["x", "y", "z"]), np.array([3, 1, 2]))
    ranked = ["y", "w", "x"]
    expected = ((2 ** 1 - 1) + (2 ** 3 - 1) / 2) / ((2 ** 3 - 1) + (2 ** 2 - 1) / math.log2(3)
                                                  + (2 ** 1 - 1) / 2)
    assert ndcg_at_k(ranked, gains) == pytest.approx(expected, abs=EXACT)
    assert ndcg_at_k(ranked, as_pair) == pytest.approx(expected, abs=EXACT)
    # a tuple of two scalars is a plain collection of relevant items
    assert ndcg_at_k([1, 2], (1, 2)) == pytest.approx(1.0, abs=EXACT)
    assert ndcg_at_k([1, 2], set()) == 0.0
    assert ndcg_at_k([1, 2], {3: 0.0}) == 0.0
    with pytest.raises(ValueError, match="gains must be finite and >= 0"):
        ndcg_at_k([1], {1: -1.0})


def test_expected_rank_utility_worked_examples():
    # d=1, alpha=2: weights 1, 1/2, 1/4; gains above d: 2, 0, 1 -> 2 + 0 + 1/4
    assert expected_rank_utility([3, 0, 2], d=1, alpha=2) == pytest.approx(2.25, abs=EXACT)
    # ideal order (3, 2, 0): 2 + 1/2 -> NERU = 2.25 / 2.5
    assert normalized_expected_rank_utility([3, 0, 2], d=1, alpha=2) == pytest.approx(
        0.9, abs=EXACT)
    # half-life: the item at position alpha gets weight 1/2
    assert expected_rank_utility([0, 0, 0, 0, 1], alpha=5) == pytest.approx(0.5, abs=EXACT)
    assert expected_rank_utility([1, 1], d=0, alpha=5) == pytest.approx(1 + 2 ** -0.25,
                                                                         abs=EXACT)
    # cut-off
    assert expected_rank_utility([3, 0, 2], d=1, alpha=2, k=1) == pytest.approx(2.0)
    assert normalized_expected_rank_utility([3, 0, 2], d=1, alpha=2, k=1) == 1.0
    # ideal over a larger pool: ERU 0 + 1/2, ideal 1 + 1/2
    assert normalized_expected_rank_utility([0, 1], alpha=2, ideal_gains=[1, 1, 0]) == \
        pytest.approx(1 / 3, abs=EXACT)
    # nothing above the neutral vote
    assert normalized_expected_rank_utility([1, 0.5], d=1) == 0.0
    assert expected_rank_utility([]) == 0.0
    with pytest.raises(ValueError, match="alpha"):
        expected_rank_utility([1], alpha=1)


@settings(max_examples=50, deadline=None)
@given(gains=st.lists(st.integers(0, 5), max_size=12), d=st.integers(0, 3),
       alpha=st.floats(1.5, 10))
def test_eru_matches_loop(gains, d, alpha):
    assert expected_rank_utility(gains, d=d, alpha=alpha) == pytest.approx(
        naive.naive_eru(gains, d, alpha), abs=1e-9)
    neru = normalized_expected_rank_utility(gains, d=d, alpha=alpha)
    assert 0.0 <= neru <= 1.0 + 1e-12


def test_kendall_tau_worked_examples():
    a, b = [1, 2, 3], [1, 3, 2]
    # pairs (0,1): +1, (0,2): +1, (1,2): -1
    assert kendall_tau(a, b) == pytest.approx(1 / 3, abs=EXACT)
    assert weighted_kendall_tau(a, b) == pytest.approx(2 / 3, abs=EXACT)
    w = np.array([[0, 1, 2], [0, 0, 3], [0, 0, 0]], dtype=float)
    # sum w (1 + s) = 1*2 + 2*2 + 3*0 = 6, over 2 * (1 + 2 + 3)
    assert weighted_kendall_tau(a, b, w) == pytest.approx(0.5, abs=EXACT)
    assert weighted_kendall_tau(a, b, lambda u, v: w[u, v]) == pytest.approx(0.5, abs=EXACT)
    assert kendall_tau(a, b, weights=w) == pytest.approx((1 + 2 - 3) / 6, abs=EXACT)
    assert kendall_tau(a, a) == 1.0 and kendall_tau(a, a[::-1]) == -1.0
    assert weighted_kendall_tau(a, a) == 1.0 and weighted_kendall_tau(a, a[::-1]) == 0.0
    # ties: pair (0,1) tied in a counts 0 in tau-a and 1/2 in eq. 9.130
    assert kendall_tau([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / 3, abs=EXACT)
    assert weighted_kendall_tau([1, 1, 2], [1, 2, 3]) == pytest.approx(5 / 6, abs=EXACT)
    assert kendall_tau([1, 1, 1], [1, 2, 3]) == 0.0
    assert math.isnan(kendall_tau([1], [2]))
    assert math.isnan(weighted_kendall_tau([1], [2]))
    with pytest.raises(ValueError, match="same length"):
        kendall_tau([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="NaN"):
        kendall_tau([1, np.nan], [1, 2])
    with pytest.raises(ValueError, match=">= 0"):
        weighted_kendall_tau(a, b, -w)


def test_kendall_tau_random_against_loops():
    rng = np.random.default_rng(11)
    for n in (2, 3, 10, 40):
        for _ in range(5):
            first = rng.integers(0, 6, size=n).astype(float)
            second = rng.integers(0, 6, size=n).astype(float)
            weights = rng.random((n, n))
            assert kendall_tau(first, second) == pytest.approx(
                naive.naive_kendall(first, second), abs=1e-12)
            assert kendall_tau(first, second, weights) == pytest.approx(
                naive.naive_kendall(first, second, weights), abs=1e-12)
            # eq. 9.130 = (tau-a + 1) / 2 for any (even tied) rankings, same weights
            assert weighted_kendall_tau(first, second, weights) == pytest.approx(
                (kendall_tau(first, second, weights) + 1) / 2, abs=1e-12)
            untied_a, untied_b = rng.permutation(n), rng.permutation(n)
            assert weighted_kendall_tau(untied_a, untied_b) == pytest.approx(
                (kendall_tau(untied_a, untied_b) + 1) / 2, abs=1e-12)


# ----------------------------------------------------------------------------
# Single-query functions: definitions and edge cases
# ----------------------------------------------------------------------------

def test_binary_metric_definitions():
    ranked = [4, 1, 9, 3]
    relevant = {1, 3, 8}
    assert precision_at_k(ranked, relevant, 2) == 0.5
    assert precision_at_k(ranked, relevant, 10) == 0.2  # divides by k, not len(ranked)
    assert precision_at_k(ranked, relevant) == 0.5  # k=None: whole list
    assert recall_at_k(ranked, relevant, 2) == pytest.approx(1 / 3)
    assert recall_at_k(ranked, relevant) == pytest.approx(2 / 3)
    assert reciprocal_rank_at_k(ranked, relevant) == 0.5
    assert reciprocal_rank_at_k(ranked, relevant, 1) == 0.0
    assert hit_rate_at_k(ranked, relevant, 1) == 0.0
    assert hit_rate_at_k(ranked, relevant, 2) == 1.0
    # AP@4: hits at 2 and 4 -> (1/2 + 2/4) / min(4, 3)
    assert average_precision_at_k(ranked, relevant, 4) == pytest.approx(1 / 3)
    # AP without cut-off divides by |relevant|; AP@2 by min(2, 3)
    assert average_precision_at_k(ranked, relevant) == pytest.approx(1 / 3)
    assert average_precision_at_k(ranked, relevant, 2) == pytest.approx(0.25)


def test_no_relevant_items_and_empty_rankings():
    for function in (precision_at_k, recall_at_k, average_precision_at_k,
                     reciprocal_rank_at_k, hit_rate_at_k, ndcg_at_k):
        assert function([1, 2, 3], set(), 2) == 0.0
        assert function([], {1}, 2) == 0.0
        assert function([], set()) == 0.0


def test_graded_relevance_for_binary_metrics():
    # items with gain 0 are not relevant
    assert recall_at_k([1, 2], {1: 2.0, 2: 0.0, 3: 1.0}) == 0.5
    assert precision_at_k([1, 2], (np.array([1, 2]), np.array([0, 1])), 2) == 0.5


def test_numpy_inputs():
    ranked = np.array([3, 1, 2], dtype=np.int32)
    assert precision_at_k(ranked, np.array([1, 2]), 2) == 0.5
    assert ndcg_at_k(ranked, np.array([3]), np.int64(1)) == 1.0


@pytest.mark.parametrize("function", [precision_at_k, recall_at_k, average_precision_at_k,
                                      reciprocal_rank_at_k, hit_rate_at_k, ndcg_at_k])
def test_single_query_validation(function):
    with pytest.raises(ValueError, match=r"k must be a positive integer \(got 0\)"):
        function([1, 2], {1}, 0)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        function([1, 2], {1}, 2.5)
    with pytest.raises(ValueError, match="duplicate"):
        function([1, 1], {1}, 2)
    with pytest.raises(TypeError):
        function("abc", {"a"}, 2)
    with pytest.raises(ValueError, match="1-D"):
        function(np.zeros((2, 2)), {1}, 2)


def test_clear_errors_for_malformed_inputs():
    cases = [
        (lambda: precision_at_k(None, {1}, 1), TypeError, "ranked must be a sequence"),
        (lambda: precision_at_k(3, {1}, 1), TypeError, "ranked must be a sequence"),
        (lambda: precision_at_k([[1], [2]], {1}, 1), TypeError, "hashable"),
        (lambda: recall_at_k([1], None, 1), TypeError, "relevant must be a collection"),
        (lambda: recall_at_k([1], 5, 1), TypeError, "relevant must be a collection"),
        (lambda: ndcg_at_k([1], {1: "x"}, 1), TypeError, "must be a real number"),
        (lambda: ndcg_at_k([1], {1: True}, 1), TypeError, "must be a real number"),
        (lambda: ndcg_at_k([1], {1: math.nan}, 1), ValueError, "finite and >= 0"),
        (lambda: dcg_at_k(["a"]), TypeError, "real numbers"),
        (lambda: dcg_at_k([[1], [2, 3]]), ValueError, "ragged"),
        (lambda: dcg_at_k([-1.0]), ValueError, ">= 0"),
        (lambda: expected_rank_utility([1], d=math.nan), ValueError, "d must be"),
        (lambda: expected_rank_utility([math.inf]), ValueError, "finite"),
        (lambda: auc(["a", "b"], [1, 0]), TypeError, "real numbers"),
        (lambda: auc([1.0, 2.0], None), TypeError, "mask"),
        (lambda: auc([1.0, 2.0], [2, 0]), TypeError, "mask"),
        (lambda: kendall_tau(["a"], ["b"]), TypeError, "real numbers"),
        (lambda: kendall_tau([1.0, 2.0], [1.0, 2.0], np.ones((3, 2))), ValueError, "shape"),
        (lambda: weighted_kendall_tau([1.0, 2.0], [1.0, 2.0], lambda u, v: "w"), TypeError,
         "real numbers"),
        (lambda: map_at_k([], [], 0), ValueError, r"k must be a positive integer \(got 0\)"),
        (lambda: map_at_k([[1]], [], 1), ValueError, "same length"),
        (lambda: map_at_k(None, [], 1), TypeError, "one entry per query"),
    ]
    for call, error, match in cases:
        with pytest.raises(error, match=match):
            call()
    with pytest.warns(WarprecWarning, match="no queries"):
        assert math.isnan(map_at_k([], [], 3))


ranked_lists = st.lists(st.integers(0, 30), unique=True, max_size=25)
relevant_sets = st.sets(st.integers(0, 40), max_size=15)
cutoffs = st.integers(1, 35)


@settings(max_examples=150, deadline=None)
@given(ranked=ranked_lists, relevant=relevant_sets, k=cutoffs)
def test_single_query_functions_match_loops(ranked, relevant, k):
    assert precision_at_k(ranked, relevant, k) == pytest.approx(
        naive.naive_precision(ranked, relevant, k), abs=EXACT)
    assert recall_at_k(ranked, relevant, k) == pytest.approx(
        naive.naive_recall(ranked, relevant, k), abs=EXACT)
    assert average_precision_at_k(ranked, relevant, k) == pytest.approx(
        naive.naive_average_precision(ranked, relevant, k), abs=EXACT)
    assert reciprocal_rank_at_k(ranked, relevant, k) == pytest.approx(
        naive.naive_reciprocal_rank(ranked, relevant, k), abs=EXACT)
    assert hit_rate_at_k(ranked, relevant, k) == naive.naive_hit_rate(ranked, relevant, k)
    gains = {item: 1.0 for item in relevant}
    assert ndcg_at_k(ranked, relevant, k) == pytest.approx(
        naive.naive_ndcg(ranked, gains, k), abs=EXACT)


@settings(max_examples=100, deadline=None)
@given(ranked=ranked_lists, graded=st.dictionaries(st.integers(0, 40), st.integers(0, 4),
                                                    max_size=15),
       k=cutoffs, form=st.sampled_from(["exponential", "linear", "classic"]))
def test_graded_ndcg_matches_loop(ranked, graded, k, form):
    gains = {item: float(g) for item, g in graded.items()}
    value = ndcg_at_k(ranked, graded, k, form=form)
    assert value == pytest.approx(naive.naive_ndcg(ranked, gains, k, form), abs=EXACT)
    assert 0.0 <= value <= 1.0 + 1e-12


# ----------------------------------------------------------------------------
# AUC
# ----------------------------------------------------------------------------

def test_auc_worked_examples():
    # relevant scores 3 and 1 against 2 and 0: wins 3>2, 3>0, 1>0; loss 1<2
    assert auc([3, 2, 1, 0], [True, False, True, False]) == 0.75
    # a tie counts one half
    assert auc([1, 1, 0], [True, False, False]) == 0.75
    # excluded items take part in no pair
    assert auc([3, 2, 1, 0], [True, False, True, False], [False, True, False, False]) == 1.0
    assert auc([3, 2, 1, 0], [1, 0, 1, 0]) == 0.75
    assert math.isnan(auc([1, 2], [False, False]))
    assert math.isnan(auc([1, 2], [True, True]))
    assert math.isnan(auc([1, 2], [True, False], [False, True]))
    with pytest.raises(ValueError, match="NaN"):
        auc([1, np.nan], [True, False])
    with pytest.raises(ValueError, match="shape"):
        auc([1, 2], [True])
    with pytest.raises(TypeError, match="boolean"):
        auc([1, 2], [0.5, 1])


def test_auc_random_against_pairs():
    rng = np.random.default_rng(12)
    for _ in range(30):
        n = int(rng.integers(2, 40))
        scores = rng.integers(0, 8, size=n).astype(float)
        relevant = rng.random(n) < 0.3
        excluded = rng.random(n) < 0.2
        expected = naive.naive_auc(scores, set(np.flatnonzero(relevant).tolist()), ~excluded)
        got = auc(scores, relevant, excluded)
        assert (math.isnan(got) and math.isnan(expected)) or got == pytest.approx(expected)


# ----------------------------------------------------------------------------
# Agreement with ranx
# ----------------------------------------------------------------------------

def random_queries(rng, n_queries, graded=False):
    """Ranked lists (with strictly decreasing run scores) and relevant sets; some
    relevant items are never retrieved, some queries retrieve nothing relevant."""
    queries = []
    for q in range(n_queries):
        n_docs = int(rng.integers(1, 40))
        ranked = [f"d{i}" for i in rng.choice(80, size=n_docs, replace=False)]
        n_rel = int(rng.integers(1, 12))
        relevant = [f"d{i}" for i in rng.choice(80, size=n_rel, replace=False)]
        gains = rng.integers(1, 4, size=n_rel) if graded else np.ones(n_rel, dtype=int)
        queries.append((f"q{q}", ranked, dict(zip(relevant, gains.tolist()))))
    return queries


def ranx_inputs(queries):
    ranx = pytest.importorskip("ranx")
    qrels = ranx.Qrels({q: dict(rel) for q, _, rel in queries})
    run = ranx.Run({q: {doc: float(len(ranked) - i) for i, doc in enumerate(ranked)}
                    for q, ranked, _ in queries})
    return qrels, run


def ranx_per_query(ranx, qrels, run, names, queries):
    """ranx's per-query values, in the order of ``queries`` (ranx sorts query ids)."""
    ranx.evaluate(qrels, run, names, return_mean=False, save_results_in_run=True)
    return {name: [run.scores[name][q] for q, _, _ in queries] for name in names}


def test_agreement_with_ranx_binary():
    ranx = pytest.importorskip("ranx")
    rng = np.random.default_rng(21)
    queries = random_queries(rng, 300)
    qrels, run = ranx_inputs(queries)
    for k in (1, 3, 10, 25, 60):
        names = [f"precision@{k}", f"recall@{k}", f"ndcg@{k}", f"mrr@{k}",
                 f"hit_rate@{k}", f"map@{k}"]
        theirs = ranx_per_query(ranx, qrels, run, names, queries)
        ours = {
            f"precision@{k}": [precision_at_k(r, rel, k) for _, r, rel in queries],
            f"recall@{k}": [recall_at_k(r, rel, k) for _, r, rel in queries],
            f"ndcg@{k}": [ndcg_at_k(r, set(rel), k) for _, r, rel in queries],
            f"mrr@{k}": [reciprocal_rank_at_k(r, rel, k) for _, r, rel in queries],
            f"hit_rate@{k}": [hit_rate_at_k(r, rel, k) for _, r, rel in queries],
        }
        for name, values in ours.items():
            np.testing.assert_allclose(values, theirs[name], rtol=0, atol=1e-9, err_msg=name)
        # ranx's AP@k divides by |relevant|, ours by min(k, |relevant|)
        rescaled = [average_precision_at_k(r, rel, k) * min(k, len(rel)) / len(rel)
                    for _, r, rel in queries]
        np.testing.assert_allclose(rescaled, theirs[f"map@{k}"], rtol=0, atol=1e-9)


def test_agreement_with_ranx_graded_ndcg():
    ranx = pytest.importorskip("ranx")
    rng = np.random.default_rng(22)
    queries = random_queries(rng, 200, graded=True)
    qrels, run = ranx_inputs(queries)
    for k in (2, 10, 50):
        theirs = ranx_per_query(ranx, qrels, run, [f"ndcg@{k}", f"ndcg_burges@{k}"],
                                queries)
        linear = [ndcg_at_k(r, rel, k, form="linear") for _, r, rel in queries]
        exponential = [ndcg_at_k(r, rel, k, form="exponential") for _, r, rel in queries]
        np.testing.assert_allclose(linear, theirs[f"ndcg@{k}"], rtol=0, atol=1e-9)
        np.testing.assert_allclose(exponential, theirs[f"ndcg_burges@{k}"], rtol=0, atol=1e-9)


# ----------------------------------------------------------------------------
# evaluate_factors against the full-argsort reference
# ----------------------------------------------------------------------------

def exact_factors(rng, n_users, n_items, d, scale=4):
    """Factors on a 1/scale grid, so every float32 score is exact whatever the BLAS."""
    return ((rng.integers(-scale, scale + 1, size=(n_users, d)) / scale).astype(np.float32),
            (rng.integers(-scale, scale + 1, size=(n_items, d)) / scale).astype(np.float32),
            (rng.integers(-2, 3, size=n_items) / scale).astype(np.float32))


def random_split(rng, n_users, n_items, train_density, test_density, graded=True):
    """Disjoint random train and test matrices; test values are gains 1..3."""
    draw = rng.random((n_users, n_items))
    train = sp.csr_matrix((draw < train_density).astype(np.float32))
    in_test = (draw >= train_density) & (draw < train_density + test_density)
    gains = rng.integers(1, 4, size=(n_users, n_items)) if graded else 1
    test = sp.csr_matrix((in_test * gains).astype(np.float32))
    return train, test


def reference_frame(reference, k, names):
    frame = pd.DataFrame(reference).T.sort_index()
    frame.columns = [name if name == "auc" else f"{name}@{k}" for name in frame.columns]
    return frame[[name if name == "auc" else f"{name}@{k}" for name in names]]


def assert_frames_match(ours, reference):
    assert list(ours.index) == list(reference.index)
    np.testing.assert_allclose(ours.to_numpy(), reference.to_numpy(), rtol=0, atol=1e-12)


@pytest.mark.parametrize("k", [1, 4, 10, 200])
@pytest.mark.parametrize("block_size", [None, 7])
def test_evaluate_factors_matches_naive(k, block_size):
    rng = np.random.default_rng(k + (block_size or 0))
    n_users, n_items = 45, 60
    user_factors, item_factors, biases = exact_factors(rng, n_users, n_items, 3)
    train, test = random_split(rng, n_users, n_items, 0.2, 0.12)
    names = list(wm.METRIC_NAMES)
    ours = evaluate_factors(user_factors, item_factors, biases, test, train, k,
                            metrics=names, block_size=block_size, per_user=True)
    reference = naive.naive_evaluate(user_factors, item_factors, biases, test, train, k,
                                     graded=True)
    assert_frames_match(ours, reference_frame(reference, k, names))
    means = evaluate_factors(user_factors, item_factors, biases, test, train, k,
                             metrics=names, block_size=block_size)
    assert means["n_users"] == len(reference)
    for column in ours.columns:
        assert means[column] == pytest.approx(ours[column].mean(skipna=True), abs=1e-12)


def test_evaluate_factors_many_relevant_items_and_ties():
    # > 16 relevant items per user exercises the binary-search AUC path; the coarse
    # grid (d=2, steps of 1/2) makes many exact ties.
    rng = np.random.default_rng(31)
    n_users, n_items = 30, 300
    user_factors, item_factors, biases = exact_factors(rng, n_users, n_items, 2, scale=2)
    train, test = random_split(rng, n_users, n_items, 0.15, 0.3)
    names = list(wm.METRIC_NAMES)
    for k in (5, 40):
        ours = evaluate_factors(user_factors, item_factors, biases, test, train, k,
                                metrics=names, per_user=True, block_size=8)
        reference = naive.naive_evaluate(user_factors, item_factors, biases, test, train,
                                         k, graded=True)
        assert_frames_match(ours, reference_frame(reference, k, names))


def test_evaluate_factors_with_unknown_relevant_items():
    rng = np.random.default_rng(32)
    n_users, n_items = 25, 30
    user_factors, item_factors, biases = exact_factors(rng, n_users, n_items, 3)
    train, test = random_split(rng, n_users, n_items, 0.2, 0.15, graded=False)
    extra = rng.integers(0, 3, size=n_users)
    n_relevant = np.diff(test.indptr) + extra
    names = [*wm.DEFAULT_METRICS, "auc"]
    ours = evaluate_factors(user_factors, item_factors, biases, test, train, 5,
                            metrics=names, n_relevant=n_relevant, per_user=True)
    reference = naive.naive_evaluate(user_factors, item_factors, biases, test, train, 5,
                                     n_relevant=n_relevant)
    assert_frames_match(ours, reference_frame(reference, 5, names))
    # users with only unknown items are evaluated (all zeros, AUC undefined)
    assert set(ours.index) == set(np.flatnonzero(n_relevant > 0).tolist())


def test_evaluate_factors_against_ranx_on_topk_run():
    ranx = pytest.importorskip("ranx")
    rng = np.random.default_rng(33)
    n_users, n_items, k = 80, 120, 10
    user_factors = rng.normal(size=(n_users, 8)).astype(np.float32)
    item_factors = rng.normal(size=(n_items, 8)).astype(np.float32)
    biases = rng.normal(size=n_items).astype(np.float32)
    train, test = random_split(rng, n_users, n_items, 0.2, 0.08, graded=False)
    users = np.flatnonzero(np.diff(test.indptr) > 0)
    items, _ = topk_items(user_factors, item_factors, biases, users, k, exclude=train)
    # ids as wide as those of random_queries (4-character queries, 3-character documents):
    # ranx compiles its Numba functions for each width, once per test run
    run = ranx.Run({f"u{u:03d}": {f"{i:03d}": float(k - pos) for pos, i in enumerate(row)
                                  if i >= 0} for u, row in zip(users, items)})
    qrels = ranx.Qrels({f"u{u:03d}": {f"{i:03d}": 1 for i in test[u].indices} for u in users})
    names = ["precision", "recall", "ndcg", "mrr", "hit_rate"]
    theirs = ranx.evaluate(qrels, run, [f"{name}@{k}" for name in names])
    ours = evaluate_factors(user_factors, item_factors, biases, test, train, k,
                            metrics=names)
    for name in names:
        assert ours[f"{name}@{k}"] == pytest.approx(theirs[f"{name}@{k}"], abs=1e-9)


# ----------------------------------------------------------------------------
# evaluate_factors: edge cases
# ----------------------------------------------------------------------------

def small_problem(seed=0, n_users=6, n_items=8):
    rng = np.random.default_rng(seed)
    return exact_factors(rng, n_users, n_items, 2)


def test_empty_test_warns_and_returns_nan():
    user_factors, item_factors, biases = small_problem()
    empty = sp.csr_matrix((6, 8), dtype=np.float32)
    with pytest.warns(WarprecWarning, match="no user has a relevant test item"):
        result = evaluate_factors(user_factors, item_factors, biases, empty, None, 5)
    assert result["n_users"] == 0
    assert all(math.isnan(value) for key, value in result.items() if key != "n_users")
    assert set(result) == {"precision@5", "recall@5", "map@5", "mrr@5", "ndcg@5",
                           "hit_rate@5", "n_users"}
    with pytest.warns(WarprecWarning):
        frame = evaluate_factors(user_factors, item_factors, biases, empty, None, 5,
                                 per_user=True)
    assert frame.empty


def test_k_larger_than_catalogue():
    user_factors, item_factors, biases = small_problem()
    test = sp.csr_matrix(([1.0, 1.0], ([0, 0], [1, 5])), shape=(6, 8))
    result = evaluate_factors(user_factors, item_factors, biases, test, None, 100)
    assert result["precision@100"] == pytest.approx(2 / 100)  # still divided by k
    assert result["recall@100"] == 1.0
    assert result["hit_rate@100"] == 1.0
    scores = naive.naive_scores(user_factors, item_factors, biases)
    ranked = naive.naive_ranking(scores[0], np.ones(8, bool)).tolist()
    first, second = sorted(ranked.index(item) + 1 for item in (1, 5))
    assert result["mrr@100"] == pytest.approx(1 / first)
    assert result["map@100"] == pytest.approx((1 / first + 2 / second) / 2)
    expected_ndcg = (1 / math.log2(first + 1) + 1 / math.log2(second + 1)) / (1 + 1 / math.log2(3))
    assert result["ndcg@100"] == pytest.approx(expected_ndcg)
    assert result["n_users"] == 1


def test_ties_are_broken_by_lower_item_index():
    user_factors = np.zeros((2, 3), np.float32)
    item_factors = np.ones((10, 3), np.float32)
    test = sp.csr_matrix(([1.0, 1.0], ([0, 1], [3, 9])), shape=(2, 10))
    train = sp.csr_matrix(([1.0], ([0], [0])), shape=(2, 10))
    frame = evaluate_factors(user_factors, item_factors, None, test, train, 3,
                             metrics=["mrr", "hit_rate", "auc"], per_user=True)
    # user 0 ranks items 1, 2, 3 (item 0 excluded): hit at rank 3
    assert frame.loc[0, "mrr@3"] == pytest.approx(1 / 3)
    # user 1 ranks 0, 1, 2: no hit; AUC is 1/2 with every score tied
    assert frame.loc[1, "hit_rate@3"] == 0.0
    assert frame.loc[0, "auc"] == 0.5 and frame.loc[1, "auc"] == 0.5


def test_all_items_excluded_for_a_user():
    user_factors, item_factors, biases = small_problem(1)
    test = sp.csr_matrix(([1.0, 1.0], ([0, 1], [2, 3])), shape=(6, 8))
    train_dense = np.zeros((6, 8), np.float32)
    train_dense[0] = 1.0
    train_dense[0, 2] = 0.0  # user 0 can only be shown its test item
    train_dense[1, :] = 1.0
    train_dense[1, 3] = 0.0
    train_dense[1, :3] = 0.0
    train = sp.csr_matrix(train_dense)
    with_auc = [*wm.DEFAULT_METRICS, "auc"]
    frame = evaluate_factors(user_factors, item_factors, biases, test, train, 2,
                             metrics=with_auc, per_user=True)
    assert frame.loc[0, "precision@2"] == 0.5 and frame.loc[0, "recall@2"] == 1.0
    assert math.isnan(frame.loc[0, "auc"])  # no eligible non-relevant item
    full_train = sp.csr_matrix(np.ones((6, 8), np.float32))
    with pytest.warns(WarprecWarning, match="also appear in train"):
        result = evaluate_factors(user_factors, item_factors, biases, test, full_train, 2,
                                  metrics=with_auc)
    assert result["precision@2"] == 0.0 and result["ndcg@2"] == 0.0
    assert math.isnan(result["auc"]) and result["n_users"] == 2


def test_auc_mean_skips_undefined_users():
    user_factors, item_factors, biases = small_problem(2)
    test = sp.csr_matrix(np.array([[1] * 8, [1, 0, 0, 0, 0, 0, 0, 0]] + [[0] * 8] * 4,
                                  dtype=np.float32))
    frame = evaluate_factors(user_factors, item_factors, biases, test, None, 3,
                             metrics="auc", per_user=True)
    assert math.isnan(frame.loc[0, "auc"])
    result = evaluate_factors(user_factors, item_factors, biases, test, None, 3,
                              metrics="auc")
    assert result["auc"] == pytest.approx(frame.loc[1, "auc"])
    assert result["n_users"] == 2


def test_metric_selection_and_keys():
    user_factors, item_factors, biases = small_problem()
    test = sp.csr_matrix(([2.0], ([0], [1])), shape=(6, 8))
    result = evaluate_factors(user_factors, item_factors, biases, test, k=3,
                              metrics=["ndcg", "auc", "ndcg_graded"])
    assert set(result) == {"ndcg@3", "auc", "ndcg_graded@3", "n_users"}
    # one relevant item: graded and binary NDCG coincide
    assert result["ndcg_graded@3"] == pytest.approx(result["ndcg@3"])
    assert set(evaluate_factors(user_factors, item_factors, biases, test, k=3,
                                metrics="mrr")) == {"mrr@3", "n_users"}
    with pytest.raises(ValueError, match="unknown metric"):
        evaluate_factors(user_factors, item_factors, biases, test, metrics=["rmse"])
    with pytest.raises(ValueError, match=r"k must be a positive integer \(got 0\)"):
        evaluate_factors(user_factors, item_factors, biases, test, k=0)


def test_default_metrics_skip_the_auc_pass():
    """AUC is opt-in: the default keys have no "auc", and the kernel never runs the AUC
    pass for them (its column stays NaN) while the other values are unchanged."""
    from warprec._kernels import metrics as kernel_metrics
    from warprec.evaluation import per_user_values

    rng = np.random.default_rng(36)
    user_factors, item_factors, biases = exact_factors(rng, 20, 30, 3)
    train, test = random_split(rng, 20, 30, 0.2, 0.15, graded=False)
    assert "auc" not in wm.DEFAULT_METRICS
    assert set(wm.DEFAULT_METRICS) == set(wm.METRIC_NAMES) - {"auc", "ndcg_graded"}
    default = evaluate_factors(user_factors, item_factors, biases, test, train, 5)
    assert set(default) == {f"{name}@5" for name in wm.DEFAULT_METRICS} | {"n_users"}
    with_auc = evaluate_factors(user_factors, item_factors, biases, test, train, 5,
                                metrics=[*wm.DEFAULT_METRICS, "auc"])
    assert {key: value for key, value in with_auc.items() if key != "auc"} == default
    assert 0.0 <= with_auc["auc"] <= 1.0
    counts = np.diff(test.indptr).astype(np.int64)
    users = np.flatnonzero(counts > 0)
    for chosen, computed in ((list(wm.DEFAULT_METRICS), False), (["auc"], True)):
        values = per_user_values(user_factors, item_factors, biases, test, train,
                                 counts, users, 5, chosen, 1, None)
        assert np.isfinite(values[:, kernel_metrics.AUC]).any() == computed


def test_evaluate_factors_validation():
    user_factors, item_factors, biases = small_problem()
    test = sp.csr_matrix(([1.0], ([0], [1])), shape=(6, 8))
    with pytest.raises(ValueError, match="test must have shape"):
        evaluate_factors(user_factors, item_factors, biases, sp.csr_matrix((5, 8)))
    with pytest.raises(TypeError, match="test must be a scipy sparse"):
        evaluate_factors(user_factors, item_factors, biases, test.toarray())
    with pytest.raises(ValueError, match="train must have shape"):
        evaluate_factors(user_factors, item_factors, biases, test, sp.csr_matrix((6, 9)))
    with pytest.raises(ValueError, match="n_relevant must be at least"):
        evaluate_factors(user_factors, item_factors, biases, test,
                         n_relevant=np.zeros(6, int))
    with pytest.raises(ValueError, match="n_relevant must have shape"):
        evaluate_factors(user_factors, item_factors, biases, test,
                         n_relevant=np.ones(5, int))
    negative = sp.csr_matrix(([-1.0], ([0], [1])), shape=(6, 8))
    with pytest.raises(ValueError, match="non-negative gains"):
        evaluate_factors(user_factors, item_factors, biases, negative,
                         metrics=["ndcg_graded"])
    bad = user_factors.copy()
    bad[0, 0] = np.inf
    with pytest.raises(ValueError, match="user_factors contains NaN or infinite"):
        evaluate_factors(bad, item_factors, biases, test)


def test_explicit_zeros_in_test_are_not_relevant():
    user_factors, item_factors, biases = small_problem()
    test = sp.csr_matrix((np.array([1.0, 0.0]), np.array([1, 2]), np.array([0, 2] + [2] * 5)),
                         shape=(6, 8))
    assert test.nnz == 2
    result = evaluate_factors(user_factors, item_factors, biases, test, k=8)
    assert result["recall@8"] == 1.0 and result["n_users"] == 1


def test_thread_count_and_blocking_do_not_change_results():
    rng = np.random.default_rng(34)
    user_factors, item_factors, biases = exact_factors(rng, 40, 50, 3)
    train, test = random_split(rng, 40, 50, 0.2, 0.1)
    before = numba.get_num_threads()
    one = evaluate_factors(user_factors, item_factors, biases, test, train, 5, n_threads=1,
                           block_size=3)
    assert numba.get_num_threads() == before
    every = evaluate_factors(user_factors, item_factors, biases, test, train, 5)
    assert one == every


# ----------------------------------------------------------------------------
# evaluate(model, ...)
# ----------------------------------------------------------------------------

class FakeModel:
    """Implements only the evaluation hook of a fitted warprec model."""

    def __init__(self, user_factors, item_factors, item_biases, user_ids=None):
        self.factors = (user_factors, item_factors, item_biases)
        self.user_ids = user_ids
        self.calls = []

    def _evaluation_inputs(self, test, train):
        self.calls.append((test, train))
        inputs = {"user_factors": self.factors[0], "item_factors": self.factors[1],
                  "item_biases": self.factors[2], "test": test, "train": train,
                  "n_relevant": np.diff(test.indptr) + 1}
        if self.user_ids is not None:
            inputs["user_ids"] = self.user_ids
        return inputs


def test_evaluate_wraps_evaluate_factors():
    rng = np.random.default_rng(35)
    user_factors, item_factors, biases = exact_factors(rng, 12, 20, 3)
    train, test = random_split(rng, 12, 20, 0.2, 0.2)
    model = FakeModel(user_factors, item_factors, biases)
    result = evaluate(model, test, train, k=4, metrics=["precision", "recall"])
    assert model.calls == [(test, train)]
    expected = evaluate_factors(user_factors, item_factors, biases, test, train, 4,
                                metrics=["precision", "recall"],
                                n_relevant=np.diff(test.indptr) + 1)
    assert result == expected
    labelled = FakeModel(user_factors, item_factors, biases,
                         user_ids=np.array([f"user{u}" for u in range(12)]))
    frame = evaluate(labelled, test, train, k=4, per_user=True)
    assert frame.index.name == "user"
    assert list(frame.index) == [f"user{u}" for u in range(12)]
    assert list(frame.columns) == ["precision@4", "recall@4", "map@4", "mrr@4", "ndcg@4",
                                   "hit_rate@4"]


def test_evaluate_rejects_objects_without_the_hook():
    with pytest.raises(TypeError, match="_evaluation_inputs"):
        evaluate(object(), sp.csr_matrix((1, 1)))


def test_no_print_or_global_random_in_library():
    import inspect

    import warprec._scoring
    import warprec.evaluation
    import warprec.metrics
    import warprec.scoring
    from warprec._kernels import metrics as kernel_metrics
    from warprec._kernels import topk

    for module in (warprec.metrics, warprec.evaluation, warprec.scoring, warprec._scoring,
                   kernel_metrics, topk):
        source = inspect.getsource(module)
        assert "print(" not in source
        assert "np.random." not in source
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        precision_at_k([1], {1}, 1)
