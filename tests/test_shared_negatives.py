"""Negatives shared by groups of positives for the cosine losses (``negative_sharing > 1``,
``warprec._kernels.shared``): the kernel against the slow reference of
tests/naive_shared.py, the parameter's rules, and fits that learn, continue and fold in."""

import numpy as np
import pytest
import scipy.sparse as sp

import naive_shared
from kernel_calls import run_epoch
from test_ccl import _problem, _reference_pair
from warprec import WARPFactorizer
from warprec._kernels import train
from warprec.baselines import PopularityRecommender
from warprec.cli import main
from warprec.datasets import make_interactions
from warprec.metrics import evaluate


@pytest.mark.parametrize(
    "softmax,adagrad,freeze_items,group,d,dropout,popularity,n_negatives,density", [
        # 30 draws, about 5 positives per user: most users' masks are found through the
        # sorted draws, the others' through their filters
        (False, True, False, 4, 6, 0.0, False, 30, 0.08),
        # a margin below 0 (most draws pushed), dropout, plain steps, a group of 5 that
        # does not divide the epoch, popularity-drawn negatives
        (False, False, False, 5, 6, 0.3, True, 9, 0.25),
        (False, True, True, 4, 6, 0.2, False, 9, 0.25),
        (True, True, False, 4, 6, 0.0, False, 30, 0.08),
        (True, False, False, 7, 3, 0.5, False, 9, 0.25),
        (True, True, True, 3, 6, 0.0, False, 9, 0.25),
    ])
def test_epoch_matches_reference(softmax, adagrad, freeze_items, group, d, dropout,
                                 popularity, n_negatives, density):
    """One epoch follows the reference group for group: the same shared draws, the same
    masks, losses and gradients taken at the group's start, the rows stepped in the same
    order; its statistics are the reference's sums (with ``M`` unmasked draws per
    positive as its trials)."""
    X, U, V, gen = _problem(11, d=d, density=density)
    weights = gen.uniform(0.5, 2.0, X.nnz).astype(np.float32)
    order = gen.permutation(X.nnz)
    neg_cdf = None
    if popularity:
        counts = np.bincount(X.indices, minlength=X.shape[1]) + 1.0
        neg_cdf = np.cumsum(counts) / counts.sum()
    fast, slow = _reference_pair(X, U, V)
    margin = -0.2 if popularity else 0.3
    loss = train.LOSS_SOFTMAX if softmax else train.LOSS_CCL
    ok, work = run_epoch(fast, X, order, np.zeros(X.shape[1] + 1), loss=loss, adagrad=adagrad,
                         learning_rate=0.1, seed=7, epoch=3, sample_weight=weights,
                         n_negatives=n_negatives, margin=margin, negative_weight=3.0,
                         temperature=0.3,
                         freeze_items=freeze_items, dropout=dropout, neg_cdf=neg_cdf,
                         negative_sharing=group)
    assert ok
    want_loss, want_rank, want_trials = naive_shared.shared_epoch(
        *slow, X, weights, order, softmax=softmax, group=group, lr=0.1,
        n_negatives=n_negatives,
        margin=margin, negative_weight=3.0, temperature=0.3, adagrad=adagrad, seed=7,
        epoch=3, freeze_items=freeze_items, dropout=dropout, neg_cdf=neg_cdf)
    for got, want in zip([fast[0], fast[1], fast[3], fast[4]], slow):
        # (float32 sums in another order; gradients up to w / t = 7 in size)
        np.testing.assert_allclose(got, want, rtol=5e-5, atol=3e-5)
    np.testing.assert_allclose(np.linalg.norm(fast[0], axis=1), 1.0, rtol=1e-5)
    assert not fast[2].any()
    if freeze_items:
        np.testing.assert_array_equal(fast[1], V)
    else:
        assert not np.array_equal(fast[1], V)
    stats = work.stats[0]
    assert stats[train.STAT_SAMPLES] == X.nnz
    assert stats[train.STAT_TRIALS] == want_trials
    assert 0 < want_trials < n_negatives * X.nnz   # (some draws were masked)
    assert stats[train.STAT_LOSS] == pytest.approx(want_loss, rel=1e-4)
    assert stats[train.STAT_RANK_LOSS] == pytest.approx(want_rank, rel=1e-5)


def test_draws_do_not_depend_on_the_threads():
    """A group's draws come from its own stream: with a learning rate of 0 (nothing
    moves) two slices give the statistics of one."""
    X, U, V, gen = _problem(12, n_users=40, n_items=50, density=0.3)
    order = gen.permutation(X.nnz)
    stats = []
    for threads in (1, 2):
        params = [U.copy(), V.copy(), np.zeros(X.shape[1], np.float32), np.ones_like(U),
                  np.ones_like(V), np.ones(X.shape[1], np.float32)]
        ok, work = run_epoch(params, X, order, np.zeros(X.shape[1] + 1),
                             loss=train.LOSS_SOFTMAX, learning_rate=0.0, n_negatives=6,
                             negative_sharing=8, slices=threads)
        assert ok
        stats.append(work.stats.sum(axis=0))
    np.testing.assert_allclose(stats[0], stats[1], rtol=1e-9)


@pytest.fixture(scope="module")
def data():
    return make_interactions(300, 120, 3000, random_state=0)


def _model(**params):
    return WARPFactorizer(**dict(dict(loss="ccl", n_components=8, epochs=4, n_threads=1,
                                      n_negatives=20, negative_sharing=8), **params))


@pytest.mark.parametrize("params,match", [
    (dict(negative_sharing=0), "negative_sharing"),
    (dict(negative_sharing=2.5), "negative_sharing"),
    (dict(loss="warp"), "negative_sharing=8 applies to loss='ccl' or 'softmax' only"),
    (dict(loss="bpr"), "negative_sharing=8 applies to loss='ccl' or 'softmax' only"),
])
def test_parameter_errors(data, params, match):
    with pytest.raises(ValueError, match=match):
        _model(**params).fit(data)


@pytest.mark.parametrize("loss", ["ccl", "softmax"])
def test_fit_learns_continues_and_folds_in(data, loss):
    """On planted structure a fit with shared draws ranks held-out positives well above
    popularity; one thread reproduces it bit for bit; partial_fit continues it and
    fold_in gives unit rows for new users."""
    coo = data.tocoo()
    held = np.random.default_rng(0).random(coo.nnz) < 0.2
    train_m, test_m = (sp.csr_matrix((coo.data[m], (coo.row[m], coo.col[m])), shape=data.shape)
                       for m in (~held, held))
    params = dict(loss=loss, epochs=20, n_components=16)
    if loss == "ccl":
        params.update(learning_rate=0.1, margin=0.6, negative_weight=5.0)
    model = _model(**params).fit(train_m)
    pop = PopularityRecommender(n_threads=1).fit(train_m)
    ours = evaluate(model, test_m, train=train_m, k=10)["ndcg@10"]
    theirs = evaluate(pop, test_m, train=train_m, k=10)["ndcg@10"]
    assert ours > 1.2 * theirs, (ours, theirs)
    assert model.history_[-1]["mean_trials"] < 20   # (draws masked for some positives)
    again = _model(**params).fit(train_m)
    np.testing.assert_array_equal(model.user_factors_, again.user_factors_)
    model.set_params(epochs=1).partial_fit(train_m)
    assert model.epochs_done_ == 21
    for rows in (model.user_factors_, model.item_factors_):
        np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, rtol=1e-5)
    folded = model.fold_in(train_m[:4])
    np.testing.assert_allclose(np.linalg.norm(folded, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(folded, model.fold_in(train_m[:4]))


def test_cli_option(tmp_path, capsys):
    ratings = tmp_path / "ratings.csv"
    rows = ["user_id,item_id,rating"] + [f"{u},{(u * 7 + k) % 40},5" for u in range(30)
                                         for k in range(6)]
    ratings.write_text("\n".join(rows) + "\n")
    out = tmp_path / "m.npz"
    assert main(["fit", str(ratings), "-o", str(out), "--epochs", "1", "--quiet", "--factors",
                 "8", "--threads", "1", "--loss", "softmax", "--n-negatives", "10",
                 "--negative-sharing", "4"]) == 0
    assert WARPFactorizer.load(out).negative_sharing == 4
