"""Divergence: too-large steps raise DivergenceError with the epoch and leave finite
parameters; the default settings stay stable on every awkward dataset shape."""

import numpy as np
import pytest
import scipy.sparse as sp
from clean_errors import assert_clean_error
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import naive
from warprec import DivergenceError, WARPFactorizer
from warprec._defaults import AUTO_EPOCHS
from warprec.datasets import make_interactions

F32_MAX = float(np.finfo(np.float32).max)


@pytest.fixture(scope="module")
def data():
    return make_interactions(60, 40, 600, rank=3, random_state=1)


# ------------------------------------------------------------------ too-large steps
@pytest.mark.parametrize("learning_rate", [0.5, 3.0, 1e3, 1e8])
@pytest.mark.parametrize("rank_weighting", ["auc", "harmonic"])
def test_large_sgd_steps_raise_divergence_error(data, learning_rate, rank_weighting):
    seen = []
    model = WARPFactorizer(n_components=8, epochs=40, learning_rate=learning_rate, alpha=0.0,
                           learning_schedule="sgd", rank_weighting=rank_weighting,
                           n_threads=1)
    with pytest.raises(DivergenceError) as info:
        model.fit(data, callback=lambda m, i: seen.append(i["epoch"]))
    err = info.value
    message = assert_clean_error(err, DivergenceError, "Lower learning_rate")
    assert f"epoch {err.epoch}" in message and str(learning_rate) in message
    assert "learning_schedule='adagrad'" in message
    # the failed epoch is not counted, the earlier ones are
    assert model.epochs_done_ == err.epoch == len(model.history_) == len(seen)
    assert seen == list(range(err.epoch))
    # the parameters (and Adagrad accumulators) are never left NaN/inf
    assert model._parameters_finite()
    for name in ("user_grad_sq_", "item_grad_sq_", "bias_grad_sq_"):
        assert np.isfinite(getattr(model, name)).all()


def test_divergence_after_some_epochs_reports_that_epoch(data):
    """A run that diverges late: earlier epochs are kept in history_, the model can be
    saved only if its scores still fit float32, and a fresh fit with a smaller step works."""
    model = WARPFactorizer(n_components=8, epochs=40, learning_rate=0.3, alpha=0.0,
                           learning_schedule="sgd", n_threads=1, random_state=0)
    with pytest.raises(DivergenceError) as info:
        model.fit(data)
    assert info.value.epoch > 0, "pick a rate that diverges after the first epoch"
    assert len(model.history_) == info.value.epoch
    assert all(np.isfinite(h["loss"]) for h in model.history_)
    model.set_params(learning_rate=0.01).fit(data)
    assert model._parameters_usable() and model.epochs_done_ == 40


def test_scores_overflowing_float32_count_as_divergence(data):
    """Finite parameters whose scores overflow float32 (inf / NaN predictions) are caught:
    before this check, SGD at lr=0.05 with auc weights ended with factors ~1e20."""
    model = WARPFactorizer(n_components=8, epochs=30, learning_rate=0.05, alpha=0.0,
                           learning_schedule="sgd", rank_weighting="auc", n_threads=1)
    with pytest.raises(DivergenceError, match="overflow float32"):
        model.fit(data)
    assert model._parameters_finite()


@pytest.mark.parametrize("learning_rate", [1.0, 1e3, 1e6])
def test_adagrad_bounds_the_steps(data, learning_rate):
    """With Adagrad each coordinate moves at most ~learning_rate per update, so large rates
    give large but finite models (never NaN); they are still checked every epoch."""
    model = WARPFactorizer(n_components=8, epochs=5, learning_rate=learning_rate,
                           alpha=0.0, n_threads=1)
    model.fit(data)
    assert model._parameters_usable()
    assert np.isfinite(model.predict(np.arange(60), np.arange(60) % 40)).all()


def test_huge_sample_weights_diverge_cleanly(data):
    model = WARPFactorizer(n_components=8, epochs=3, n_threads=1)
    with pytest.raises(DivergenceError) as info:
        model.fit(data, sample_weight=np.full(data.nnz, 1e30))
    assert "sample weights" in str(info.value)
    assert model._parameters_finite()


def test_weight_decay_beyond_one_warns(data):
    from warprec import WarprecWarning

    model = WARPFactorizer(n_components=4, epochs=1, alpha=100.0, n_threads=1)
    with pytest.warns(WarprecWarning, match="learning_rate \\* alpha"):
        model.fit(data)


# ------------------------------------------------------------------ default stability
@st.composite
def awkward_datasets(draw):
    """Small interaction matrices of the shapes that break recommenders."""
    kind = draw(st.sampled_from(["tiny", "one user", "one item", "full rows", "skewed",
                                 "random", "counts", "duplicates", "two items"]))
    gen = np.random.default_rng(draw(st.integers(0, 10**6)))
    n_users, n_items = draw(st.integers(1, 30)), draw(st.integers(1, 25))
    weights = None
    if kind == "tiny":
        X = sp.csr_matrix(np.ones((draw(st.integers(1, 2)), draw(st.integers(1, 2)))))
    elif kind == "one user":
        X = sp.csr_matrix((gen.random((1, n_items)) < 0.5).astype(np.float32))
    elif kind == "one item":
        X = sp.csr_matrix((gen.random((n_users, 1)) < 0.7).astype(np.float32))
    elif kind == "two items":
        X = sp.csr_matrix((gen.random((n_users, 2)) < 0.5).astype(np.float32))
    elif kind == "full rows":  # some users have every item
        dense = gen.random((n_users, n_items)) < 0.3
        dense[: max(1, n_users // 2)] = True
        X = sp.csr_matrix(dense.astype(np.float32))
    elif kind == "skewed":  # one item in every list, power-law popularity for the rest
        popularity = 1.0 / np.arange(1, n_items + 1) ** 2
        dense = gen.random((n_users, n_items)) < np.minimum(1.0, 3 * popularity)
        dense[:, 0] = True
        X = sp.csr_matrix(dense.astype(np.float32))
    elif kind == "counts":  # play counts as weights, heavy-tailed
        dense = (gen.random((n_users, n_items)) < 0.3) * np.floor(gen.pareto(1.0, (
            n_users, n_items)) * 10 + 1)
        X = sp.csr_matrix(np.minimum(dense, 1e5).astype(np.float32))
        weights = "values"
    elif kind == "duplicates":  # COO with every pair repeated several times
        rows = gen.integers(0, n_users, 40)
        cols = gen.integers(0, n_items, 40)
        X = sp.coo_matrix((np.ones(120), (np.tile(rows, 3), np.tile(cols, 3))),
                          shape=(n_users, n_items))
        weights = "values"
    else:
        X = sp.csr_matrix((gen.random((n_users, n_items)) < 0.2).astype(np.float32))
    if X.nnz == 0:
        X = sp.csr_matrix(np.eye(X.shape[0], X.shape[1], dtype=np.float32)) \
            if min(X.shape) else sp.csr_matrix(np.ones((1, 1)))
    return kind, X, weights


@given(awkward_datasets(), st.sampled_from(["warp", "warp", "warp-kos", "bpr", "exact"]),
       st.sampled_from([1, 2]))
@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
def test_default_settings_are_stable(case, loss, n_threads):
    kind, X, weights = case
    note(f"{kind} {X.shape} nnz={X.nnz}")
    params = dict(loss="warp", rank_estimator="exact") if loss == "exact" else dict(loss=loss)
    model = WARPFactorizer(n_threads=n_threads, **params)  # default everything else
    model.fit(X, sample_weight=weights)  # no DivergenceError
    assert model.epochs_done_ == AUTO_EPOCHS and model._parameters_usable()
    scores = model.predict(np.repeat(np.arange(X.shape[0]), X.shape[1]),
                           np.tile(np.arange(X.shape[1]), X.shape[0]))
    assert np.isfinite(scores).all()
    # the default weight decay keeps the model at a sane scale, not merely finite
    assert np.abs(scores).max() < 1e3, np.abs(scores).max()
    assert all(np.isfinite(h["loss"]) for h in model.history_)


def test_default_settings_are_stable_on_a_larger_skewed_problem():
    gen = np.random.default_rng(4)
    popularity = 1.0 / np.arange(1, 301) ** 1.2
    rows = [gen.choice(300, size=gen.integers(1, 60), replace=False,
                       p=popularity / popularity.sum()) for _ in range(600)]
    X = sp.csr_matrix((np.ones(sum(map(len, rows))), np.concatenate(rows),
                       np.cumsum([0] + [len(r) for r in rows])), shape=(600, 300))
    X.sum_duplicates()
    counts = np.bincount(X.indices, minlength=300)
    assert counts.max() > 20 * np.median(counts)  # really skewed
    for n_threads in (1, 2):
        model = WARPFactorizer(n_threads=n_threads).fit(X)
        assert model._parameters_usable()
        assert max(h["loss"] for h in model.history_) < 1e3


# ------------------------------------------------------------------ the usability check
@pytest.mark.parametrize("name", ["user_factors_", "item_factors_", "item_biases_"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_any_non_finite_parameter_makes_the_model_unusable(data, name, bad):
    model = WARPFactorizer(n_components=4, epochs=1, n_threads=1).fit(data)
    assert model._parameters_usable()
    getattr(model, name).flat[3] = bad
    assert not model._parameters_usable()
    # also when the factors on the other side are all zero (the bound is then 0 * inf)
    other = "item_factors_" if name == "user_factors_" else "user_factors_"
    getattr(model, other)[:] = 0
    assert not model._parameters_usable()


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_score_bound_matches_numpy(draw):
    """The compiled bound (one pass per array on the float32 bit patterns) equals the
    numpy reductions it replaced (naive.score_bound), for any float32 values: signs,
    zeros, subnormals, float32's extremes, infinities and NaNs."""
    from warprec._kernels.scores import score_bound

    n_users = draw.draw(st.integers(0, 5))
    n_items = draw.draw(st.integers(0, 5))
    d = draw.draw(st.integers(1, 4))
    values = st.floats(width=32, allow_nan=True, allow_infinity=True)

    def array(shape):
        flat = draw.draw(st.lists(values, min_size=int(np.prod(shape)),
                                  max_size=int(np.prod(shape))))
        return np.array(flat, np.float32).reshape(shape)

    U, V, b = array((n_users, d)), array((n_items, d)), array((n_items,))
    got, want = score_bound(U, V, b), naive.score_bound(U, V, b)
    note(f"{got!r} vs {want!r}")
    if np.isnan(want):
        assert np.isnan(got)
    else:
        assert got == want
