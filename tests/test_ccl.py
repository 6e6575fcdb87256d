"""The cosine losses (``loss="ccl"`` and ``loss="softmax"``): their kernel against the slow
references of tests/naive.py, and the estimator's rules for them."""

import numpy as np
import pytest
import scipy.sparse as sp

import naive
from kernel_calls import run_epoch
from test_train_kernel import _problem as kernel_problem
from warprec import WARPFactorizer
from warprec._kernels import train
from warprec._defaults import CCL_DROPOUT, UNIT_NORM_TOLERANCE
from warprec._trainer import unit_rows
from warprec.baselines import PopularityRecommender
from warprec.datasets import make_interactions
from warprec.metrics import evaluate


def _unit(a):
    return (a / np.linalg.norm(a, axis=1, keepdims=True)).astype(np.float32)


def _problem(seed, n_users=14, n_items=60, d=6, density=0.15):
    """The kernel tests' small problem (tests/test_train_kernel.py), its rows unit rows."""
    X, U, V, _, gen = kernel_problem(seed, n_users, n_items, d, density)
    return X, _unit(U), _unit(V), gen


def _reference_pair(X, U, V):
    """Copies of the starting rows for the kernel (U, V, zero biases and their unit
    accumulators) and for the reference (U, V and their accumulators)."""
    b = np.zeros(X.shape[1], np.float32)
    fast = [U.copy(), V.copy(), b, np.ones_like(U), np.ones_like(V), np.ones_like(b)]
    return fast, [U.copy(), V.copy(), np.ones_like(U), np.ones_like(V)]


@pytest.mark.parametrize("adagrad,freeze_items,d,margin,dropout", [
    (True, False, 6, 0.3, 0.0),
    # the fixed-width dot product of the default dimension (same compiled variant)
    (True, False, 64, 0.0, 0.0),
    (False, False, 6, -0.2, 0.0),
    (True, True, 6, 0.3, 0.0),
    # dropout on the user vector: the reference chains the gradient of the cosine of
    # free vectors through the mask; with d = 3 some masks drop every coordinate
    (True, False, 6, 0.3, 0.3),
    (True, False, 64, 0.0, 0.1),
    (False, False, 3, 0.0, 0.5),
    (True, True, 6, 0.3, 0.3),
])
def test_epoch_matches_reference(adagrad, freeze_items, d, margin, dropout):
    """One epoch follows the reference step for step: the same draws, the hinge of the
    positive and of every negative within the margin, sphere steps in the same order."""
    X, U, V, gen = _problem(5, d=d)
    weights = gen.uniform(0.5, 2.0, X.nnz).astype(np.float32)
    order = gen.permutation(X.nnz)
    fast, slow = _reference_pair(X, U, V)
    table = np.zeros(X.shape[1] + 1)
    ok, work = run_epoch(fast, X, order, table, loss=train.LOSS_CCL, adagrad=adagrad,
                         learning_rate=0.2, seed=99, epoch=4, sample_weight=weights,
                         n_negatives=7, margin=margin, negative_weight=3.0,
                         freeze_items=freeze_items, dropout=dropout)
    assert ok
    naive.ccl_epoch(*slow, X, weights, order, lr=0.2, n_negatives=7, margin=margin,
                    negative_weight=3.0, adagrad=adagrad, seed=99, epoch=4,
                    freeze_items=freeze_items, dropout=dropout)
    for got, want in zip([fast[0], fast[1], fast[3], fast[4]], slow):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(np.linalg.norm(fast[0], axis=1), 1.0, rtol=1e-6)
    assert not fast[2].any()   # no item biases
    if freeze_items:
        np.testing.assert_array_equal(fast[1], V)
    else:
        assert not np.array_equal(fast[1], V)
    stats = work.stats[0]
    assert stats[train.STAT_SAMPLES] == X.nnz
    if dropout == 0:
        assert stats[train.STAT_TRIALS] == 7 * X.nnz


@pytest.mark.parametrize("adagrad,freeze_items,d,temperature,dropout", [
    (True, False, 6, 0.2, 0.0),
    (True, False, 64, 0.1, 0.0),
    (False, False, 6, 0.5, 0.0),
    (True, True, 6, 0.2, 0.0),
    (True, False, 3, 0.2, 0.5),
    (True, False, 6, 0.3, 0.2),
])
def test_softmax_epoch_matches_reference(adagrad, freeze_items, d, temperature, dropout):
    """The sampled softmax follows its reference step for step: the same draws (a draw may
    repeat), the log-Q-corrected softmax over the positive and its draws, the rows
    stepped in the same order."""
    X, U, V, gen = _problem(6, d=d)
    weights = gen.uniform(0.5, 2.0, X.nnz).astype(np.float32)
    order = gen.permutation(X.nnz)
    fast, slow = _reference_pair(X, U, V)
    table = np.zeros(X.shape[1] + 1)
    ok, work = run_epoch(fast, X, order, table, loss=train.LOSS_SOFTMAX, adagrad=adagrad,
                         learning_rate=0.05, seed=98, epoch=2, sample_weight=weights,
                         n_negatives=9, temperature=temperature, freeze_items=freeze_items,
                         dropout=dropout)
    assert ok
    naive.softmax_epoch(*slow, X, weights, order, lr=0.05, n_negatives=9,
                        temperature=temperature, adagrad=adagrad, seed=98, epoch=2,
                        freeze_items=freeze_items, dropout=dropout)
    for got, want in zip([fast[0], fast[1], fast[3], fast[4]], slow):
        np.testing.assert_allclose(got, want, rtol=5e-5, atol=5e-6)
    np.testing.assert_allclose(np.linalg.norm(fast[1], axis=1), 1.0, rtol=1e-6)
    assert not np.array_equal(fast[0], U)
    if freeze_items:
        np.testing.assert_array_equal(fast[1], V)


def test_softmax_loss_statistic():
    """With lr = 0 the epoch's loss column is the sum over the positives of ``-w log p_i``
    at the starting rows."""
    X, U, V, gen = _problem(8)
    weights = gen.uniform(0.5, 2.0, X.nnz).astype(np.float32)
    params = [U.copy(), V.copy(), np.zeros(X.shape[1], np.float32), np.ones_like(U),
              np.ones_like(V), np.ones(X.shape[1], np.float32)]
    ok, work = run_epoch(params, X, np.arange(X.nnz), np.zeros(X.shape[1] + 1),
                         loss=train.LOSS_SOFTMAX, learning_rate=0.0, seed=3, n_negatives=5,
                         temperature=0.25, sample_weight=weights)
    assert ok
    want = 0.0
    for p in range(X.nnz):
        u = int(np.searchsorted(X.indptr, p, side="right") - 1)
        row = X.indices[X.indptr[u]:X.indptr[u + 1]]
        key = naive.stream_key(3, 0, p)
        n_neg = X.shape[1] - len(row)
        z = [U[u] @ V[X.indices[p]] / 0.25] + [
            U[u] @ V[naive.draw_negative(key, t, row, X.shape[1])] / 0.25
            + np.log(n_neg / 5) for t in range(5)]
        want += weights[p] * (np.log(np.sum(np.exp(z))) - z[0])
    assert work.stats[0, train.STAT_LOSS] == pytest.approx(want, rel=1e-5)


def test_loss_statistic_is_the_reference_loss():
    """The epoch's loss column sums ``w (1 - c_i) + w m/N sum_j relu(c_j - margin)`` with
    the cosines of the moment each is taken: with lr = 0 nothing moves, so it is the loss
    of the starting rows."""
    X, U, V, gen = _problem(8)
    weights = gen.uniform(0.5, 2.0, X.nnz).astype(np.float32)
    params = [U.copy(), V.copy(), np.zeros(X.shape[1], np.float32), np.ones_like(U),
              np.ones_like(V), np.ones(X.shape[1], np.float32)]
    ok, work = run_epoch(params, X, np.arange(X.nnz), np.zeros(X.shape[1] + 1),
                         loss=train.LOSS_CCL, learning_rate=0.0, seed=3, n_negatives=5,
                         margin=0.1, negative_weight=4.0, sample_weight=weights)
    assert ok
    want = 0.0
    rank = 0.0
    for p in range(X.nnz):
        u = int(np.searchsorted(X.indptr, p, side="right") - 1)
        row = X.indices[X.indptr[u]:X.indptr[u + 1]]
        key = naive.stream_key(3, 0, p)
        c_i = U[u] @ V[X.indices[p]]
        want += weights[p] * (1 - c_i)
        for t in range(5):
            c_j = U[u] @ V[naive.draw_negative(key, t, row, X.shape[1])]
            want += weights[p] * 4.0 / 5 * max(c_j - 0.1, 0.0)
            rank += weights[p] * (c_j >= c_i) / 5
    assert work.stats[0, train.STAT_LOSS] == pytest.approx(want, rel=1e-5)
    assert work.stats[0, train.STAT_RANK_LOSS] == pytest.approx(rank, rel=1e-6)


def test_two_threads_keep_unit_rows():
    """Hogwild slices racing on shared rows: every row stays finite and about unit norm
    (two threads writing one row at once interleave the elements of two unit rows); the
    trainer's pass after the epoch puts such rows back at unit norm and leaves the
    others bit for bit."""
    X, U, V, gen = _problem(9, n_users=60, n_items=40, density=0.3)
    params = [U.copy(), V.copy(), np.zeros(X.shape[1], np.float32), np.ones_like(U),
              np.ones_like(V), np.ones(X.shape[1], np.float32)]
    ok, _ = run_epoch(params, X, gen.permutation(X.nnz), np.zeros(X.shape[1] + 1),
                      loss=train.LOSS_CCL, n_threads=2, n_negatives=6)
    assert ok
    for a in params[:2]:
        assert np.isfinite(a).all()
        np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, rtol=0.05)
        before = a.copy()
        unit_rows(a, UNIT_NORM_TOLERANCE)
        np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, rtol=1e-5)
        kept = np.abs(np.linalg.norm(before, axis=1) - 1.0) <= UNIT_NORM_TOLERANCE
        assert np.array_equal(a[kept], before[kept])
    assert not np.array_equal(params[1], V)


def test_two_thread_cosine_fits_have_unit_rows(data):
    model = _model(n_threads=2, epochs=3).fit(data)
    for a in (model.user_factors_, model.item_factors_):
        np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, rtol=1e-5)


@pytest.fixture(scope="module")
def data():
    return make_interactions(300, 120, 3000, random_state=0)


def _model(**params):
    return WARPFactorizer(**dict(dict(loss="ccl", n_components=8, epochs=4, n_threads=1,
                                      n_negatives=20), **params))


def test_scores_are_cosines_and_fits_reproduce(data):
    model = _model().fit(data)
    np.testing.assert_allclose(np.linalg.norm(model.user_factors_, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(model.item_factors_, axis=1), 1.0, rtol=1e-5)
    assert not model.item_biases_.any()
    assert model.alpha_ == 0.0
    scores = model.predict(np.array([0, 1]), np.array([3, 4]))
    np.testing.assert_allclose(scores, np.sum(model.user_factors_[[0, 1]]
                                              * model.item_factors_[[3, 4]], axis=1), rtol=1e-6)
    again = _model().fit(data)
    np.testing.assert_array_equal(model.user_factors_, again.user_factors_)
    np.testing.assert_array_equal(model.item_factors_, again.item_factors_)
    assert model.history_[-1]["mean_trials"] == 20


def test_partial_fit_with_new_users_and_items_keeps_unit_rows(data):
    model = _model(epochs=2).fit(data[:200, :100])
    model.set_params(epochs=0).partial_fit(data)   # (the new rows as _grow makes them)
    assert model.user_factors_.shape[0] == data.shape[0]
    for rows in (model.user_factors_, model.item_factors_):
        np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, rtol=1e-5)


def test_learns_more_than_popularity(data):
    """On data with structure, the cosine model ranks held-out positives above the
    popularity ranking."""
    coo = data.tocoo()
    held = np.random.default_rng(0).random(coo.nnz) < 0.2
    train_m, test_m = (sp.csr_matrix((coo.data[m], (coo.row[m], coo.col[m])), shape=data.shape)
                       for m in (~held, held))
    model = _model(epochs=20, n_components=16, learning_rate=0.1, margin=0.6,
                   negative_weight=5.0).fit(train_m)
    pop = PopularityRecommender(n_threads=1).fit(train_m)
    ours = evaluate(model, test_m, train=train_m, k=10)["ndcg@10"]
    theirs = evaluate(pop, test_m, train=train_m, k=10)["ndcg@10"]
    assert ours > 1.2 * theirs, (ours, theirs)


def test_fold_in_starts_from_the_items_direction(data):
    """New users' rows are unit rows (from the direction of their items' sum), the same
    on every call; a row without positives stays zero."""
    model = _model().fit(data)
    rows = data[:5].toarray()
    rows[4] = 0
    folded = model.fold_in(rows)
    np.testing.assert_allclose(np.linalg.norm(folded[:4], axis=1), 1.0, rtol=1e-5)
    assert not folded[4].any()
    np.testing.assert_array_equal(folded, model.fold_in(rows))
    # the epochs move the rows from the direction of the sum of the user's items
    start = _unit(rows[:4] @ model.item_factors_)
    cosines = np.sum(folded[:4] * start, axis=1)
    assert (cosines < 1 - 1e-4).all() and (cosines > 0.5).all(), cosines


@pytest.mark.parametrize("params,match", [
    (dict(alpha=0.01), "alpha=0.01 does not apply to loss='ccl'"),
    (dict(max_norm=1.0), "max_norm=1.0 does not apply"),
    (dict(rank_estimator="exact"), "rank_estimator='exact' does not apply"),
    (dict(max_violators=3), "max_violators > 1 applies to the WARP losses"),
    (dict(margin=1.5), "margin"),
    (dict(negative_weight=0.0), "negative_weight"),
    (dict(n_negatives=0), "n_negatives"),
    (dict(dropout=1.0), "dropout"),
    (dict(dropout=-0.1), "dropout"),
    (dict(loss="warp", dropout=0.1), "dropout=0.1 applies to loss='ccl' or 'softmax' only"),
])
def test_parameters_that_do_not_apply_are_errors(data, params, match):
    with pytest.raises(ValueError, match=match):
        _model(**params).fit(data)


def test_side_features_are_an_error(data):
    features = sp.identity(data.shape[1], format="csr", dtype=np.float32)
    with pytest.raises(ValueError, match="side features are supported with"):
        _model().fit(data, item_features=features)


def test_popularity_negatives(data):
    model = _model(negative_sampling="popularity").fit(data)
    assert np.isfinite(model.user_factors_).all()
    assert not np.array_equal(model.item_factors_, _model().fit(data).item_factors_)


def test_dropout_reproduces_and_changes_the_fit(data):
    """Dropout's masks come from the positives' counter-based streams: one thread gives
    the same factors on every run, and different ones from the fit without dropout."""
    model = _model(dropout=0.2).fit(data)
    again = _model(dropout=0.2).fit(data)
    assert model.dropout_ == 0.2
    np.testing.assert_array_equal(model.user_factors_, again.user_factors_)
    np.testing.assert_array_equal(model.item_factors_, again.item_factors_)
    np.testing.assert_allclose(np.linalg.norm(model.user_factors_, axis=1), 1.0, rtol=1e-5)
    assert not np.array_equal(model.user_factors_,
                              _model(dropout=0.0).fit(data).user_factors_)


def test_automatic_dropout(data, tmp_path):
    """``dropout="auto"`` is ``CCL_DROPOUT`` with the cosine loss and 0 with WARP (the default
    is 0); a loaded model keeps it (its fold-in trains with it)."""
    assert _model().fit(data).dropout_ == 0.0
    model = _model(dropout="auto").fit(data)
    assert model.dropout_ == CCL_DROPOUT == 0.1
    np.testing.assert_array_equal(model.user_factors_,
                                  _model(dropout=CCL_DROPOUT).fit(data).user_factors_)
    model.save(tmp_path / "m.npz")
    loaded = WARPFactorizer.load(tmp_path / "m.npz")
    assert loaded.dropout_ == CCL_DROPOUT
    np.testing.assert_array_equal(loaded.fold_in(data[:3]), model.fold_in(data[:3]))
    warp = WARPFactorizer(n_components=8, epochs=1, n_threads=1, dropout="auto").fit(data)
    assert warp.dropout_ == 0.0


def test_softmax_fits_on_the_sphere_and_learns(data):
    """``loss="softmax"``: unit rows, no biases or decay, bit-identical with one thread,
    and it ranks held-out positives above the popularity ranking."""
    model = _model(loss="softmax").fit(data)
    np.testing.assert_allclose(np.linalg.norm(model.item_factors_, axis=1), 1.0, rtol=1e-5)
    assert not model.item_biases_.any() and model.alpha_ == 0.0 and model.dropout_ == 0.0
    again = _model(loss="softmax").fit(data)
    np.testing.assert_array_equal(model.user_factors_, again.user_factors_)
    coo = data.tocoo()
    held = np.random.default_rng(0).random(coo.nnz) < 0.2
    train_m, test_m = (sp.csr_matrix((coo.data[m], (coo.row[m], coo.col[m])), shape=data.shape)
                       for m in (~held, held))
    fitted = _model(loss="softmax", epochs=20, n_components=16).fit(train_m)
    pop = PopularityRecommender(n_threads=1).fit(train_m)
    ours = evaluate(fitted, test_m, train=train_m, k=10)["ndcg@10"]
    theirs = evaluate(pop, test_m, train=train_m, k=10)["ndcg@10"]
    assert ours > 1.2 * theirs, (ours, theirs)
    folded = fitted.fold_in(train_m[:3])
    np.testing.assert_allclose(np.linalg.norm(folded, axis=1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("params,match", [
    (dict(alpha=0.01), "alpha=0.01 does not apply to loss='softmax'"),
    (dict(temperature=0.0), "temperature"),
    (dict(negative_sampling="popularity"), "negative_sampling='popularity'"),
])
def test_softmax_parameters_that_do_not_apply_are_errors(data, params, match):
    with pytest.raises(ValueError, match=match):
        _model(loss="softmax", **params).fit(data)
