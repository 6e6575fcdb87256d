"""The tuner's zero-shot start (warprec._portfolio): nearest family set by shape, the
portfolio's order, and the configurations a search space can give."""

import numpy as np
import pytest
import scipy.sparse as sp

from warprec import WARPFactorizer, _portfolio, tuning
from warprec.tuning import CCL_SEARCH_SPACE, SEARCH_SPACE, WARP_SEARCH_SPACE

DEFAULT_LOSS = WARPFactorizer().get_params()["loss"]


def _matrix(users, items, per_user, seed=0):
    """A matrix of ``users`` x ``items`` with ``per_user`` positives in every row and
    every item used."""
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(users), per_user)
    cols = np.concatenate([rng.choice(items, per_user, replace=False) for _ in range(users)])
    cols[:items] = np.arange(items)   # every item has a positive
    return sp.csr_matrix((np.ones(rows.size, np.float32), (rows, cols)), shape=(users, items))


def _ranked(X, space=SEARCH_SPACE):
    space = tuning._check_space(space, X.shape[1])
    return _portfolio.ranked(X, space, lambda p, sub: tuning._holds(p, sub, DEFAULT_LOSS))


def test_shape_and_matrix_shape():
    assert np.allclose(_portfolio.shape(1000, 50, 20_000), np.log10([1000, 20, 400]))
    X = _matrix(200, 100, 10)
    X = sp.vstack([X, sp.csr_matrix((5, 100))], format="csr")   # users without positives
    assert np.allclose(_portfolio.matrix_shape(X), _portfolio.shape(200, 100, 2000))


@pytest.mark.parametrize("name", list(_portfolio.FAMILY))
def test_each_family_set_is_its_own_nearest(name):
    assert _portfolio.nearest(_portfolio.shape(*_portfolio.FAMILY[name][0])) == name


def test_family_ratios_name_portfolio_configurations():
    for _, ratios in _portfolio.FAMILY.values():
        assert set(ratios) <= set(_portfolio.PORTFOLIO)
        assert all(0 < r < 2 for r in ratios.values())
    # every configuration is valid (each value checked with its loss, as a search space)
    tuning._check_space([{name: [value] for name, value in params.items()}
                         for params in _portfolio.PORTFOLIO.values()], 100)


def test_order_follows_the_nearest_set():
    """Few positives per user on many users and items (amazon-book's shape): the cosine
    loss at d = 128 first; a MovieLens-like shape: the WARP options first (the sampled
    softmax, first there, is not in the default space)."""
    amazon_like = _matrix(30_000, 20_000, 9)
    first = _ranked(amazon_like)
    assert first[0] == dict(_portfolio.PORTFOLIO["ccl, d=128, dropout"])
    movielens_like = _matrix(900, 1_400, 48)
    order = _ranked(movielens_like)
    assert [p.get("loss", DEFAULT_LOSS) for p in order] == ["warp", "warp", "ccl"]
    assert order[0] == dict(_portfolio.PORTFOLIO["violators"])
    # with the sampled softmax in the space it comes first there
    softmax_space = [*SEARCH_SPACE, {"loss": ["softmax"]}]
    assert _ranked(movielens_like, softmax_space)[0] == {"loss": "softmax"}


def test_only_configurations_the_space_can_give():
    X = _matrix(30_000, 20_000, 9)
    assert all("loss" not in p for p in _ranked(X, WARP_SEARCH_SPACE))
    assert [p["loss"] for p in _ranked(X, CCL_SEARCH_SPACE)] == ["ccl"]
    # a space whose choices miss the portfolio's values gives none
    assert _ranked(X, {"n_components": [32, 64], "max_violators": [1]}) == []
    assert _ranked(X, {"learning_rate": ("log-uniform", 0.01, 0.1)}) == []


@pytest.mark.parametrize("params, sub, holds", [
    ({"max_violators": 10}, {"max_violators": ("choice", [1, 10])}, True),
    ({"max_violators": 10}, {"max_violators": ("choice", [1])}, False),
    ({"max_violators": 10}, {"alpha": ("choice", [0.0])}, False),
    ({"learning_rate": 0.05}, {"learning_rate": ("log-uniform", 0.01, 0.1)}, True),
    ({"learning_rate": 0.5}, {"learning_rate": ("log-uniform", 0.01, 0.1)}, False),
    ({"learning_rate": "auto"}, {"learning_rate": ("log-uniform", 0.01, 0.1)}, False),
    ({"loss": "ccl"}, {"loss": ("choice", ["ccl"])}, True),
    ({"loss": "ccl"}, {"margin": ("choice", [0.9])}, False),        # loss not in sub
    ({}, {"loss": ("choice", ["ccl"])}, False),                     # default loss
    ({}, {"loss": ("choice", [DEFAULT_LOSS, "ccl"])}, True),
])
def test_holds(params, sub, holds):
    assert tuning._holds(params, sub, DEFAULT_LOSS) is holds


def test_complete_fills_the_sub_space_with_the_defaults():
    space = tuning._check_space(SEARCH_SPACE, 100)
    defaults = WARPFactorizer().get_params()
    config = tuning._complete({"loss": "ccl", "n_components": 128, "dropout": 0.1}, space,
                              defaults)
    assert set(config) == set(CCL_SEARCH_SPACE)
    assert config["n_components"] == 128 and config["dropout"] == 0.1
    assert config["margin"] == defaults["margin"]
    assert config["learning_rate"] == defaults["learning_rate"]
