"""Rank weightings L(r) and the OWPC error err(f, z, y) computed by the training kernel."""

import numpy as np
import pytest
import scipy.sparse as sp

from kernel_calls import run_epoch
from warprec._kernels import train
from warprec.weights import resolve_rank_weighting


def test_named_tables():
    n = 6
    np.testing.assert_allclose(resolve_rank_weighting("harmonic", n).table,
                               [0, 1, 1.5, 11 / 6, 25 / 12, 137 / 60, 49 / 20])
    np.testing.assert_array_equal(resolve_rank_weighting("auc", n).table, np.arange(7))
    np.testing.assert_array_equal(resolve_rank_weighting("precision@1", n).table,
                                  [0, 1, 1, 1, 1, 1, 1])
    np.testing.assert_array_equal(resolve_rank_weighting("precision@k", n, k=3).table,
                                  [0, 1, 2, 3, 3, 3, 3])
    np.testing.assert_array_equal(resolve_rank_weighting("precision@3", n).table,
                                  resolve_rank_weighting("precision@k", n, k=3).table)
    np.testing.assert_allclose(resolve_rank_weighting("log", n).table,
                               np.log(np.maximum(np.arange(7), 1)))
    custom = resolve_rank_weighting([1.0, 0.5, 0.25], n).table
    np.testing.assert_allclose(custom, [0, 1, 1.5, 1.75, 1.75, 1.75, 1.75])


@pytest.mark.parametrize("name,extra", [("owpc-mean", {}), ("owpc-top", {}),
                                        ("owpc-harmonic", {}),
                                        ("owpc-top-p", {"top_fraction": 0.25})])
def test_owpc_weights_sum_to_one(name, extra):
    w = resolve_rank_weighting(name, 50, **extra)
    for n in (1, 7, 20, 50):
        assert w.loss(n, n) == pytest.approx(1.0)  # Phi_n(n) = sum_j alpha_j^n = 1
        phi = w.loss(np.arange(n + 1), n)
        alpha = np.diff(phi)
        assert np.all(alpha >= -1e-12) and np.all(np.diff(alpha) <= 1e-12)  # non-increasing


def test_owpc_special_cases():
    assert resolve_rank_weighting("owpc-mean", 10).loss(3, 8) == pytest.approx(3 / 8)
    assert resolve_rank_weighting("owpc-top", 10).loss(3, 8) == pytest.approx(1.0)
    assert resolve_rank_weighting("owpc-top", 10).loss(0, 8) == 0.0
    top = resolve_rank_weighting("owpc-top-p", 100, top_fraction=0.1)
    assert top.loss(2, 40) == pytest.approx(2 / 4)  # m = ceil(0.1 * 40) = 4
    assert top.loss(9, 40) == pytest.approx(1.0)


@pytest.mark.parametrize("bad,match", [("bogus", "Unknown"), ([0.5, 1.0], "non-increasing"),
                                       ([[1.0]], "1-D"), ([-1.0], "non-negative"),
                                       ("precision@0", "positive integer")])
def test_bad_weightings(bad, match):
    with pytest.raises(ValueError, match=match):
        resolve_rank_weighting(bad, 10)


def test_owpc_top_p_needs_fraction():
    with pytest.raises(ValueError, match="top_fraction"):
        resolve_rank_weighting("owpc-top-p", 10)


@pytest.mark.parametrize("name,extra", [("owpc-mean", {}), ("owpc-top", {}),
                                        ("owpc-harmonic", {}),
                                        ("owpc-top-p", {"top_fraction": 0.5}),
                                        ("harmonic", {})])
def test_kernel_rank_loss_equals_seed_error(name, extra):
    """err(f, z, y) = 1/|y| sum_{y in y} Phi_n(rank_y), rank_y = #{neg: f_neg >= f_y}
    (Usunier, Buffoni & Gallinari 2009), for a fixed score vector: the kernel's exact-rank
    mode with learning rate 0 leaves the scores untouched and reports sum w * Phi_n."""
    scores = np.array([2.0, 0.5, 1.5, -1.0, 0.7, 3.0, 0.1, 1.5], dtype=np.float32)
    relevant = np.array([0, 2, 6])  # scores 2.0, 1.5, 0.1
    n_items = scores.size
    negatives = np.setdiff1d(np.arange(n_items), relevant)
    # ranks by hand over the negatives {0.5, -1.0, 0.7, 3.0, 1.5}: 2.0 -> {3.0} = 1;
    # 1.5 -> {3.0, 1.5} = 2 (a tie with a negative counts); 0.1 -> {0.5, 0.7, 3.0, 1.5} = 4
    ranks = np.array([(scores[negatives] >= scores[i]).sum() for i in relevant])
    np.testing.assert_array_equal(ranks, [1, 2, 4])
    weighting = resolve_rank_weighting(name, n_items, **extra)
    n = negatives.size
    expected = np.mean([weighting.loss(r, n) for r in ranks])

    U = np.ones((1, 1), np.float32)
    V = np.zeros((n_items, 1), np.float32)
    b = scores.copy()  # f(0, i) = 0 + b_i = scores[i]
    X = sp.csr_matrix((np.ones(3, np.float32), (np.zeros(3, int), relevant)),
                      shape=(1, n_items))
    X.indices = X.indices.astype(np.int32)
    params = [U, V, b, np.ones_like(U), np.ones_like(V), np.ones_like(b)]
    _, work = run_epoch(params, X, np.arange(3), weighting.table, exact_rank=True,
                        max_sampled=10, learning_rate=0.0, words=1, seed=0,
                        users=np.zeros(3, np.int32),
                        sample_weight=np.full(3, 1 / 3, np.float32),
                        top_fraction=weighting.top_fraction, normalize=weighting.normalize)
    stats = work.stats
    assert stats[0, train.STAT_RANK_LOSS] == pytest.approx(expected, rel=1e-6)
    np.testing.assert_array_equal(b, scores)  # learning rate 0: scores unchanged


@pytest.mark.parametrize("bad", [["a"], [[1.0, 2.0], [1.0]], {"a": 1}])
def test_non_numeric_weightings_get_a_clear_message(bad):
    with pytest.raises(ValueError, match="rank_weighting must be a name"):
        resolve_rank_weighting(bad, 10)


@pytest.mark.parametrize("fraction", ["x", 0.0, 1.5, True, None])
def test_bad_top_fraction(fraction):
    with pytest.raises(ValueError, match="top_fraction"):
        resolve_rank_weighting("owpc-top-p", 10, top_fraction=fraction)
