"""Epoch orders: the shuffle kernels against the slow references in naive.py."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

import naive
from warprec._kernels.order import shuffle, user_grouped_order


def _random_csr(n_users, n_items, density, seed):
    X = sp.random(n_users, n_items, density=density, format="csr", random_state=seed)
    X.data[:] = 1
    X.sort_indices()
    return X


def _order(indptr, users, seed, epoch):
    out = np.full(indptr[-1], -1, np.int64)
    user_grouped_order(indptr, users, seed, epoch, out)
    return out


@pytest.mark.parametrize("seed, epoch", [(0, 0), (7, 3), (2**63 - 2, 12)])
def test_user_grouped_order_matches_reference(seed, epoch):
    X = _random_csr(60, 40, 0.15, seed % 1000)
    # three users without positives in the middle
    X = sp.vstack([X[:10], sp.csr_matrix((3, 40)), X[10:]], format="csr")
    assert (np.diff(X.indptr) == 0).sum() >= 3
    users = np.random.default_rng(seed % 1000).permutation(X.shape[0])
    got = _order(X.indptr, users, seed, epoch)
    np.testing.assert_array_equal(got, naive.user_grouped_order(X.indptr, users, seed, epoch))


def test_user_grouped_order_is_a_permutation_grouped_by_user():
    X = _random_csr(300, 200, 0.05, 1)
    users = np.random.default_rng(1).permutation(X.shape[0])
    order = _order(X.indptr, users, 5, 0)
    np.testing.assert_array_equal(np.sort(order), np.arange(X.nnz))
    row_of = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    visited = row_of[order]
    # each user's positives form one run, and the runs follow ``users``
    runs = visited[np.r_[True, visited[1:] != visited[:-1]]]
    np.testing.assert_array_equal(runs, users[np.diff(X.indptr)[users] > 0])


def test_user_grouped_order_changes_with_epoch_and_seed():
    X = _random_csr(200, 300, 0.05, 2)
    users = np.random.default_rng(2).permutation(X.shape[0])
    base = _order(X.indptr, users, 9, 4)
    np.testing.assert_array_equal(base, _order(X.indptr, users, 9, 4))
    assert not np.array_equal(base, _order(X.indptr, users, 9, 5))
    assert not np.array_equal(base, _order(X.indptr, users, 10, 4))


def test_user_grouped_order_shuffles_uniformly():
    # a user with 3 positives: each of the 6 orders should come up equally often
    indptr = np.array([0, 3], np.int64)
    users = np.array([0], np.int64)
    perms = {p: 0 for p in itertools.permutations(range(3))}
    draws = 6000
    for epoch in range(draws):
        perms[tuple(_order(indptr, users, 11, epoch))] += 1
    counts = np.array(list(perms.values()))
    expected = draws / 6
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 20.5, perms  # 99.9% quantile of chi-square with 5 degrees of freedom


@pytest.mark.parametrize("n, seed, epoch", [(0, 0, 0), (1, 3, 0), (2, 1, 1), (257, 7, 3),
                                            (1000, 2**63 - 2, 12)])
def test_shuffle_matches_reference(n, seed, epoch):
    out = np.full(n, -1, np.int64)
    shuffle(seed, epoch, out)
    np.testing.assert_array_equal(out, naive.shuffle(n, seed, epoch))
    np.testing.assert_array_equal(np.sort(out), np.arange(n))


def test_shuffle_is_uniform():
    perms = {p: 0 for p in itertools.permutations(range(3))}
    draws = 6000
    out = np.empty(3, np.int64)
    for epoch in range(draws):
        shuffle(5, epoch, out)
        perms[tuple(out)] += 1
    counts = np.array(list(perms.values()))
    expected = draws / 6
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 20.5, perms  # 99.9% quantile of chi-square with 5 degrees of freedom
