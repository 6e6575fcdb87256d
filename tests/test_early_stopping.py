"""Early stopping and validation during training (WARPFactorizer, warprec._validation)."""

import numpy as np
import pytest
import scipy.sparse as sp

from warprec import WARPFactorizer, _validation
from warprec._defaults import AUTO_EPOCHS, AUTO_EPOCHS_EARLY_STOPPING
from warprec._selection import agreed_epochs, refit_folds
from warprec._validation import (BestSnapshot, Monitor, check_interval, holdout, parse_metric,
                                 select)
from warprec.datasets import make_interactions
from warprec.metrics import evaluate_factors

PARAMS = ("user_factors_", "item_factors_", "item_biases_", "user_grad_sq_", "item_grad_sq_",
          "bias_grad_sq_")


@pytest.fixture(scope="module")
def data():
    X = make_interactions(300, 120, 6000, random_state=3)
    held = holdout(X, 0.2, 7)
    return select(X, ~held), select(X, held)


def test_holdout_shares_and_last_positive():
    X = make_interactions(2000, 300, 30000, random_state=1)
    held = holdout(X, 0.1, 5)
    counts = np.diff(X.indptr)
    per_user = np.add.reduceat(held.astype(np.int64), X.indptr[:-1])
    # stochastic rounding: floor or ceil of fraction * n_u, never the last positive
    assert np.all(per_user >= np.floor(0.1 * counts))
    assert np.all(per_user <= np.minimum(np.ceil(0.1 * counts), counts - 1))
    assert abs(held.sum() / X.nnz - 0.1) < 0.01
    assert np.array_equal(held, holdout(X, 0.1, 5))
    assert not np.array_equal(held, holdout(X, 0.1, 6))
    one = sp.csr_matrix(np.eye(3, dtype=np.float32))
    assert not holdout(one, 0.9, 0).any()


def test_holdout_folds_are_disjoint_and_keep_the_last_positive():
    X = make_interactions(2000, 300, 30000, random_state=1)
    counts = np.diff(X.indptr)
    folds = [holdout(X, 0.1, 5, fold=k) for k in range(3)]
    assert np.array_equal(folds[0], holdout(X, 0.1, 5))
    assert not (folds[0] & folds[1]).any() and not (folds[1] & folds[2]).any() \
        and not (folds[0] & folds[2]).any()
    per_user = [np.add.reduceat(f.astype(np.int64), X.indptr[:-1]) for f in folds]
    # the same share from each user while the user has positives to spare
    spare = counts >= 3 * np.ceil(0.1 * counts) + 1
    assert np.array_equal(per_user[0][spare], per_user[2][spare])
    assert np.all(sum(per_user) <= counts - 1)
    assert abs(folds[2].sum() / X.nnz - 0.1) < 0.01


def test_holdout_from_a_sample_of_users():
    """With max_users, only that many users (a seeded sample of those with 2+
    positives) give positives, each the share it gives without the cap; with at most
    max_users such users the split is the uncapped one."""
    X = make_interactions(2000, 300, 30000, random_state=1)
    X = sp.vstack([X, sp.csr_matrix(([1.0], ([0], [0])), shape=(50, 300))]).tocsr()
    counts = np.diff(X.indptr)
    rows = np.repeat(np.arange(X.shape[0]), counts)

    def per_user(held):
        return np.bincount(rows[held], minlength=X.shape[0])

    held = holdout(X, 0.2, 5, max_users=300)
    validated = np.flatnonzero(per_user(held))
    assert 250 <= validated.size <= 300 and np.all(counts[validated] >= 2)
    assert np.all(per_user(held) <= np.minimum(np.ceil(0.2 * counts), np.maximum(counts - 1, 0)))
    assert abs(held.sum() / counts[validated].sum() - 0.2) < 0.05
    assert np.array_equal(held, holdout(X, 0.2, 5, max_users=300))
    other = np.flatnonzero(per_user(holdout(X, 0.2, 6, max_users=300)))
    assert not np.array_equal(validated, other)
    eligible = int(np.count_nonzero(counts >= 2))
    assert np.array_equal(holdout(X, 0.2, 5, max_users=eligible), holdout(X, 0.2, 5))


def test_check_interval_rule():
    # a check scores users x items pairs; one positive's training costs about
    # VALIDATION_PAIRS_PER_POSITIVE of them
    per = _validation.VALIDATION_PAIRS_PER_POSITIVE
    assert check_interval(1000, 1000, 10**6) == 1
    assert check_interval(7_700, 24_915, 643_000) == 3       # amazon-book's shape
    assert check_interval(10_000, 10 * per, 25_000) == 4
    assert check_interval(10_000, 10 * per, 25_001) == 4
    assert check_interval(10_000, 10 * per, 24_999) == 5
    assert check_interval(5, 5, 0) >= 1


def test_auto_early_stopping_follows_the_number_of_users(data, monkeypatch):
    """early_stopping="auto": no validation on data with fewer than
    EARLY_STOPPING_AUTO_USERS users of 2+ positives (the same model as False); at or
    above it, early stopping on a hold-out of at most VALIDATION_MAX_USERS users."""
    X = data[0] + data[1]
    params = dict(n_components=8, epochs=12, learning_rate=0.2, n_threads=1, random_state=1)
    small = WARPFactorizer(**params).fit(X)
    assert small.early_stopping == "auto" and small.early_stopping_ is False
    assert small.validation_scores_ == [] and not hasattr(small, "best_epoch_")
    off = WARPFactorizer(**params, early_stopping=False).fit(X)
    for name in PARAMS:
        assert np.array_equal(getattr(small, name), getattr(off, name)), name
    users = int(np.count_nonzero(np.diff(X.indptr) >= 2))
    monkeypatch.setattr(_validation, "EARLY_STOPPING_AUTO_USERS", users)
    monkeypatch.setattr(_validation, "VALIDATION_MAX_USERS", 40)
    large = WARPFactorizer(**params, n_iter_no_change=2).fit(X)
    assert large.early_stopping_ is True and large.validation_interval_ == 1
    assert large.best_epoch_ == int(np.argmax(large.validation_scores_)) + 1
    assert (large.train_matrix_ != X).nnz == 0
    # the same as early_stopping=True, whose hold-out takes 40 users' positives
    same = WARPFactorizer(**params, n_iter_no_change=2, early_stopping=True).fit(X)
    assert same.validation_scores_ == large.validation_scores_
    held = holdout(X, 0.1, [large.seed_, 1], max_users=40)
    assert np.unique(np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))[held]).size <= 40
    monkeypatch.setattr(_validation, "EARLY_STOPPING_AUTO_USERS", users + 1)
    assert WARPFactorizer(**params).fit(X).early_stopping_ is False


def test_automatic_epochs(data):
    """epochs="auto": AUTO_EPOCHS without early stopping, at most
    AUTO_EPOCHS_EARLY_STOPPING with it (also with validation_data but no stopping: 50)."""
    train, valid = data
    params = dict(n_components=4, n_threads=1, random_state=1)
    assert WARPFactorizer().epochs == "auto"
    assert WARPFactorizer(**params).fit(train).epochs_done_ == AUTO_EPOCHS
    recorded = WARPFactorizer(**params, early_stopping=False).fit(train, validation_data=valid)
    assert recorded.epochs_done_ == AUTO_EPOCHS == len(recorded.validation_scores_)
    patient = WARPFactorizer(**params, early_stopping=True, n_iter_no_change=1000)
    patient.fit(train, validation_data=valid)
    assert len(patient.history_) == AUTO_EPOCHS_EARLY_STOPPING
    assert patient.epochs_done_ == patient.best_epoch_ <= AUTO_EPOCHS_EARLY_STOPPING


def test_validation_interval(data):
    """A check every validation_interval epochs and after the last; stopping happens at
    a check; the best checked epoch is restored bit for bit."""
    train, valid = data
    params = dict(n_components=8, learning_rate=0.2, n_threads=1, random_state=1)
    model = WARPFactorizer(**params, epochs=10, validation_interval=3,
                           early_stopping=False).fit(train, validation_data=valid)
    checked = [h["epoch"] + 1 for h in model.history_ if "validation" in h]
    assert checked == [3, 6, 9, 10] and len(model.validation_scores_) == 4
    assert model.validation_interval_ == 3
    every = WARPFactorizer(**params, epochs=10, validation_interval=1,
                           early_stopping=False).fit(train, validation_data=valid)
    assert [every.validation_scores_[e - 1] for e in checked] == model.validation_scores_
    stopped = WARPFactorizer(**params, epochs=60, validation_interval=3, early_stopping=True,
                             n_iter_no_change=4).fit(train, validation_data=valid)
    checks = [h["epoch"] + 1 for h in stopped.history_ if "validation" in h]
    assert all(e % 3 == 0 for e in checks[:-1]) and stopped.best_epoch_ in checks
    assert len(stopped.history_) == checks[-1]     # it stopped at a check ...
    assert checks[-1] < 60 and checks[-1] - stopped.best_epoch_ >= 4   # ... after patience
    assert checks[-1] - 3 - stopped.best_epoch_ < 4
    plain = WARPFactorizer(**params, epochs=stopped.best_epoch_).fit(train)
    for name in PARAMS:
        assert np.array_equal(getattr(stopped, name), getattr(plain, name)), name


def test_validation_record_survives_save_and_load(data, tmp_path):
    train, valid = data
    model = WARPFactorizer(n_components=4, epochs=7, validation_interval=2, n_threads=1,
                           early_stopping=True, n_iter_no_change=50)
    model.fit(train, validation_data=valid)
    model.save(tmp_path / "m.npz")
    loaded = WARPFactorizer.load(tmp_path / "m.npz")
    for name in ("early_stopping_", "validation_interval_", "best_epoch_",
                 "validation_scores_"):
        assert getattr(loaded, name) == getattr(model, name), name
    assert loaded.validation_interval_ == 2 and len(loaded.validation_scores_) == 4
    plain = WARPFactorizer(n_components=4, epochs=2, n_threads=1).fit(train)
    plain.save(tmp_path / "p.npz")
    loaded = WARPFactorizer.load(tmp_path / "p.npz")
    assert loaded.early_stopping_ is False and not hasattr(loaded, "validation_interval_")


def test_select_partitions_the_matrix(data):
    train, valid = data
    assert train.multiply(valid).nnz == 0
    assert (train + valid).nnz == train.nnz + valid.nnz


@pytest.mark.parametrize("bad", ["ndcg", "ndcg@0", "auc@10", "foo@5", "ndcg@x", 10, None])
def test_parse_metric_rejects(bad):
    with pytest.raises(ValueError, match="validation_metric"):
        parse_metric(bad)


def test_parse_metric():
    assert parse_metric("recall@20") == ("recall", 20)


def test_monitor_equals_evaluate(data):
    train, valid = data
    rng = np.random.default_rng(0)
    U = rng.standard_normal((train.shape[0], 4)).astype(np.float32)
    V = rng.standard_normal((train.shape[1], 4)).astype(np.float32)
    b = rng.standard_normal(train.shape[1]).astype(np.float32)
    monitor = Monitor(valid, train, "ndcg@5", 0, 1)
    expected = evaluate_factors(U, V, b, valid, train, k=5, metrics=["ndcg"])["ndcg@5"]
    assert monitor(U, V, b) == pytest.approx(expected, abs=1e-12)
    small = Monitor(valid, train, "ndcg@5", 0, 1, max_users=50)
    assert small.users.size == 50


def test_best_snapshot_keeps_copies():
    snap = BestSnapshot()
    a = np.arange(3.0)
    assert snap.offer(0.5, 1, {"a": a})
    a += 10
    assert not snap.offer(0.4, 2, {"a": a})
    assert not snap.offer(0.5, 3, {"a": a})  # ties keep the earlier epoch
    snap.restore({"a": a})
    assert snap.epochs == 1 and np.array_equal(a, np.arange(3.0))


def test_restores_best_epoch_bit_for_bit(data):
    train, valid = data
    snapshots = {}

    def keep(model, info):
        snapshots[info["epoch"] + 1] = {n: getattr(model, n).copy() for n in PARAMS}

    model = WARPFactorizer(n_components=8, epochs=40, learning_rate=0.2, n_threads=1,
                           early_stopping=True, n_iter_no_change=2, random_state=1)
    model.fit(train, validation_data=valid, callback=keep)
    scores = model.validation_scores_
    best = int(np.argmax(scores)) + 1
    assert model.best_epoch_ == best == model.epochs_done_
    assert len(scores) == min(40, best + 2)
    for name in PARAMS:
        assert np.array_equal(getattr(model, name), snapshots[best][name]), name
    # the restored model is the model trained for exactly best_epoch_ epochs
    plain = WARPFactorizer(n_components=8, epochs=best, learning_rate=0.2, n_threads=1,
                           random_state=1).fit(train)
    for name in PARAMS:
        assert np.array_equal(getattr(model, name), getattr(plain, name)), name
    assert [h["validation"] for h in model.history_] == scores


def test_internal_holdout_keeps_positives_in_train_matrix(data):
    X = data[0] + data[1]
    model = WARPFactorizer(n_components=8, epochs=6, n_threads=1, early_stopping=True,
                           validation_fraction=0.2, n_iter_no_change=10).fit(X)
    assert (model.train_matrix_ != X).nnz == 0
    assert len(model.validation_scores_) == 6
    assert model.best_epoch_ == int(np.argmax(model.validation_scores_)) + 1
    # seeded: the same split and the same result again
    again = WARPFactorizer(n_components=8, epochs=6, n_threads=1, early_stopping=True,
                           validation_fraction=0.2, n_iter_no_change=10).fit(X)
    assert again.validation_scores_ == model.validation_scores_


def test_validation_data_without_early_stopping_only_records(data):
    train, valid = data
    model = WARPFactorizer(n_components=8, epochs=4, n_threads=1).fit(
        train, validation_data=valid)
    assert len(model.validation_scores_) == 4 and model.epochs_done_ == 4
    assert not hasattr(model, "best_epoch_")
    model.partial_fit(train)
    assert model.validation_scores_ == [] and model.epochs_done_ == 8


def test_partial_fit_with_early_stopping(data):
    train, valid = data
    model = WARPFactorizer(n_components=8, epochs=3, n_threads=1, early_stopping=True,
                           n_iter_no_change=5).fit(train, validation_data=valid)
    first = model.epochs_done_
    model.partial_fit(train, validation_data=valid)
    assert first <= model.epochs_done_ <= first + 3
    assert model.best_epoch_ == model.epochs_done_


def test_raw_id_validation_frame():
    import pandas as pd

    X = make_interactions(100, 50, 1500, random_state=2).tocoo()
    df = pd.DataFrame({"user_id": [f"u{u}" for u in X.row], "item_id": X.col + 1000})
    valid = df.iloc[::5]
    train = df.drop(valid.index)
    model = WARPFactorizer(n_components=8, epochs=3, n_threads=1, early_stopping=True).fit(
        train, validation_data=valid)
    assert len(model.validation_scores_) >= 1


@pytest.mark.parametrize("params, match", [
    (dict(early_stopping="yes"), "early_stopping"),
    (dict(validation_fraction=0.0), "validation_fraction"),
    (dict(validation_fraction=1.0), "validation_fraction"),
    (dict(n_iter_no_change=0), "n_iter_no_change"),
    (dict(validation_metric="ndcg"), "validation_metric"),
])
def test_bad_parameters(data, params, match):
    with pytest.raises((TypeError, ValueError), match=match):
        WARPFactorizer(n_components=4, epochs=1, **params).fit(data[0])


def test_too_small_for_a_holdout():
    X = sp.csr_matrix(np.eye(4, dtype=np.float32))
    with pytest.raises(ValueError, match="validation positives"):
        WARPFactorizer(n_components=4, epochs=1, early_stopping=True).fit(X)


def test_progress_bar_shows_the_metric(data, capsys):
    train, valid = data
    WARPFactorizer(n_components=4, epochs=2, n_threads=1, verbose=True).fit(
        train, validation_data=valid)
    assert "ndcg@10" in capsys.readouterr().err


def test_refit_trains_all_positives_for_the_epochs_the_passes_agree_on(data):
    X, _ = data
    calls = []
    kw = dict(n_components=8, n_iter_no_change=3, n_threads=1, random_state=4)
    model = WARPFactorizer(epochs=40, early_stopping="refit", **kw)
    model.fit(X, callback=lambda m, info: calls.append(info["epoch"]))
    best = model.best_epoch_
    # 300 users: three validated passes (refit_folds), each to the plain count (40, the
    # maximum here) although n_iter_no_change would have stopped them earlier
    assert refit_folds(300) == 3
    assert calls == list(range(40)) * 3 + list(range(best))
    assert len(model.validation_scores_) == 40   # the passes' mean score per epoch
    peak = int(np.argmax(model.validation_scores_)) + 1
    assert best in (peak, 40)
    # the refit is a plain fit on all of X for the agreed epoch count, bit for bit
    plain = WARPFactorizer(epochs=best, **kw).fit(X)
    for name in PARAMS:
        np.testing.assert_array_equal(getattr(model, name), getattr(plain, name))
    assert model.epochs_done_ == len(model.history_) == best
    assert model.train_matrix_.nnz == X.nnz
    assert model.get_params()["epochs"] == 40 and model.early_stopping == "refit"
    assert model.refit_ is True


def test_refit_on_data_without_signal_trains_the_plain_count():
    """Random positives: no epoch count validates better than another beyond the noise,
    so the refit is the plain fit (epochs="auto": 50), whatever the noisy peak."""
    gen = np.random.default_rng(0)
    X = sp.csr_matrix((gen.random((400, 150)) < 0.08).astype(np.float32))
    model = WARPFactorizer(n_components=8, early_stopping="refit", n_threads=1,
                           random_state=0).fit(X)
    assert model.best_epoch_ == AUTO_EPOCHS == model.epochs_done_
    assert int(np.argmax(model.validation_scores_)) + 1 != AUTO_EPOCHS   # a noisy peak


def test_refit_folds_add_up_to_the_validation_users():
    assert [refit_folds(n) for n in (1, 300, 3_334, 3_333, 5_000, 9_999, 10_000, 70_000)] \
        == [3, 3, 3, 3, 2, 2, 1, 1]


def _recording(curve, user_noise, epoch_noise, n_users, seed):
    """Per-user scores at epochs 1..: ``curve[e]``, plus a user's own level (the same at
    every epoch, as a user's score mostly is) and noise of its own at every check."""
    gen = np.random.default_rng(seed)
    level = user_noise * gen.standard_normal(n_users)
    return {e + 1: value + level + epoch_noise * gen.standard_normal(n_users)
            for e, value in enumerate(curve)}


def test_agreed_epochs_take_a_clear_peak_and_keep_the_plain_count_on_noise():
    # better up to 60 epochs (by 0.008 from 50 to 60), then flat
    curve = 0.25 + 0.05 * np.minimum(np.arange(1, 81), 60) / 60
    clear = [_recording(curve, 0.2, 0.01, 2_000, seed) for seed in range(3)]
    agreement = agreed_epochs(clear, plain=50)
    assert agreement.peak >= 59 and agreement.epochs == agreement.peak
    assert agreement.plain == 50 and agreement.gain > 2 * agreement.standard_error
    assert agreement.checked == tuple(range(1, 81)) and len(agreement.scores) == 80
    # a gain of 0.0005 in checks ten times noisier than that: the highest of 80 noisy
    # means beats the plain count, but not on the half that did not choose it
    small = 0.3 + 0.0005 * (np.arange(1, 81) >= 60)
    for seed in range(5):
        noisy = [_recording(small, 0.2, 0.05, 2_000, 10 * seed + k) for k in range(3)]
        agreement = agreed_epochs(noisy, plain=50)
        assert agreement.epochs == 50, agreement
    # a flat curve: the peak is noise, the plain count stays
    flat = [_recording(np.full(80, 0.3), 0.2, 0.01, 2_000, seed) for seed in range(3)]
    assert agreed_epochs(flat, plain=50).epochs == 50


def test_agreed_epochs_on_sparse_and_different_checks():
    # checks every 3 epochs, one pass stopped earlier: only the epochs every pass checked
    a = {e: np.full(10, e / 100.0) for e in range(3, 61, 3)}
    b = {e: np.full(10, e / 100.0) for e in range(3, 46, 3)}
    agreement = agreed_epochs([a, b], plain=50)
    assert agreement.checked == tuple(range(3, 46, 3))
    assert agreement.plain == 45 and agreement.peak == 45 and agreement.epochs == 45
    # no checked count at or below the plain one: the smallest stands for it
    c = {e: np.full(10, 0.5) for e in (60, 70)}
    assert agreed_epochs([c], plain=50).plain == 60
    with pytest.raises(ValueError, match="in common"):
        agreed_epochs([{1: np.zeros(2)}, {2: np.zeros(2)}], plain=50)


def test_refit_with_validation_data_is_early_stopping(data):
    X, valid = data
    kw = dict(n_components=8, epochs=30, n_iter_no_change=3, n_threads=1, random_state=2)
    refit = WARPFactorizer(early_stopping="refit", **kw).fit(X, validation_data=valid)
    stopped = WARPFactorizer(early_stopping=True, **kw).fit(X, validation_data=valid)
    assert refit.best_epoch_ == stopped.best_epoch_
    for name in PARAMS:
        np.testing.assert_array_equal(getattr(refit, name), getattr(stopped, name))


def test_refit_and_partial_fit(data):
    X, _ = data
    model = WARPFactorizer(n_components=8, epochs=20, early_stopping="refit",
                           n_iter_no_change=3, n_threads=1, random_state=1)
    first = WARPFactorizer(**model.get_params()).partial_fit(X)   # unfitted: fit
    model.fit(X)
    np.testing.assert_array_equal(first.user_factors_, model.user_factors_)
    with pytest.raises(ValueError, match="partial_fit"):
        model.partial_fit(X)


# ------------------------------------------------------------------ learning-rate drop
def _continued_at(X, epochs, rate_factor, more, learning_rate, **kw):
    """A plain fit of ``epochs`` epochs, continued by partial_fit for ``more`` epochs at
    ``learning_rate`` times ``rate_factor`` (what one drop of the rate does)."""
    plain = WARPFactorizer(epochs=epochs, early_stopping=False, learning_rate=learning_rate,
                           **kw).fit(X)
    return plain.set_params(epochs=more, learning_rate=learning_rate * rate_factor
                            ).partial_fit(X)


def test_learning_rate_drop_goes_on_from_the_best_epoch(data):
    """At the first plateau the best epoch's parameters come back and training goes on at
    the rate times learning_rate_drop until the next plateau: bit for bit a plain fit to
    the drop's epoch continued at the lower rate."""
    train, valid = data
    kw = dict(n_components=8, learning_rate=0.1, n_threads=1, random_state=1)
    model = WARPFactorizer(epochs=40, early_stopping=True, n_iter_no_change=2,
                           learning_rate_drop=0.3, **kw).fit(train, validation_data=valid)
    ((drop, rate),) = model.learning_rate_drops_
    best = model.best_epoch_
    assert drop < best == model.epochs_done_ and rate == 0.1 * 0.3
    # the epochs run: to the plateau, then again from the drop's epoch at the lower rate
    n_first = drop + 2
    epochs = [h["epoch"] for h in model.history_]
    assert epochs == list(range(n_first)) + list(range(drop, drop + len(epochs) - n_first))
    rates = [h["learning_rate"] for h in model.history_]
    assert rates == [float(np.float32(0.1))] * n_first + \
        [float(np.float32(rate))] * (len(epochs) - n_first)
    assert len(epochs) == best + 2 + n_first - drop   # stopped at the second plateau
    plain = _continued_at(train, drop, 0.3, best - drop, **kw)
    for name in PARAMS:
        assert np.array_equal(getattr(model, name), getattr(plain, name)), name
    # partial_fit goes on at the dropped rate
    model.set_params(early_stopping=False, learning_rate_drop=1.0, epochs=1).partial_fit(train)
    assert model.history_[-1]["learning_rate"] == float(np.float32(rate))


def test_refit_replays_the_learning_rate_drops(data):
    X, _ = data
    kw = dict(n_components=8, learning_rate=0.1, n_threads=1, random_state=4)
    model = WARPFactorizer(epochs=40, early_stopping="refit", n_iter_no_change=2,
                           learning_rate_drop=0.3, **kw).fit(X)
    ((drop, rate),) = model.learning_rate_drops_
    assert drop < model.best_epoch_ == model.epochs_done_
    plain = _continued_at(X, drop, 0.3, model.best_epoch_ - drop, **kw)
    for name in PARAMS:
        assert np.array_equal(getattr(model, name), getattr(plain, name)), name


def test_a_drop_without_a_better_epoch_is_undone(data):
    """When no epoch after a drop scores better, the restore returns the parameters of
    before the drop, and the drop is not recorded (partial_fit continues at the rate
    those parameters were trained with)."""
    train, valid = data
    model = WARPFactorizer(n_components=8, epochs=40, learning_rate=0.2, n_threads=1,
                           early_stopping=True, n_iter_no_change=2, random_state=3,
                           learning_rate_drop=0.3).fit(train, validation_data=valid)
    rates = {h["learning_rate"] for h in model.history_}
    assert len(rates) == 2 and model.learning_rate_drops_ == []
    assert model.best_epoch_ == int(np.argmax(model.validation_scores_)) + 1


@pytest.mark.parametrize("loss, stopping, drop", [
    ("ccl", True, 0.1), ("softmax", "refit", 0.1), ("ccl", False, 1.0), ("ccl", "auto", 1.0),
    ("warp", True, 1.0), ("bpr", True, 1.0)])
def test_automatic_learning_rate_drop(data, loss, stopping, drop):
    """"auto": the cosine losses drop the rate x0.1 when they early-stop (and then do, at
    a plateau), other losses never; "auto" does not turn early stopping on."""
    X, _ = data
    model = WARPFactorizer(loss=loss, n_components=8, n_negatives=20, epochs=30,
                           early_stopping=stopping, n_iter_no_change=2, n_threads=1,
                           random_state=0).fit(X)
    assert model.learning_rate_drop_ == drop
    assert model.early_stopping_ == (stopping is not False and stopping != "auto")
    rates = [h["learning_rate"] for h in model.history_]
    if drop < 1 and stopping is True:
        assert len(set(rates)) == 2 and rates[-1] == float(np.float32(
            model.learning_rate_ * drop))
    elif drop == 1:
        assert len(set(rates)) == 1


def test_learning_rate_drop_needs_validation(data):
    X, _ = data
    with pytest.raises(ValueError, match="needs early stopping"):
        WARPFactorizer(early_stopping=False, learning_rate_drop=0.5).fit(X)
    # "auto" validates when the rate is to drop, whatever the data's size
    model = WARPFactorizer(n_components=4, epochs=3, learning_rate_drop=0.5).fit(X)
    assert model.early_stopping_ and len(model.validation_scores_) == 3
    with pytest.raises(ValueError, match="learning_rate_drop"):
        WARPFactorizer(learning_rate_drop=0.0).fit(X)


def test_refit_passes_share_the_first_passs_split_order(data, monkeypatch):
    """With random_state=None every fit draws its own seed; the further validated passes
    still hold out of the first pass's split order, so their hold-outs are disjoint."""
    X, _ = data
    calls = []
    original = _validation.early_stopping_holdout

    def recording(matrix, fraction, seed, fold=0):
        calls.append((seed, fold))
        return original(matrix, fraction, seed, fold)

    monkeypatch.setattr(_validation, "early_stopping_holdout", recording)
    model = WARPFactorizer(n_components=4, epochs=3, early_stopping="refit", n_threads=1,
                           random_state=None).fit(X)
    assert sorted({fold for _, fold in calls}) == [0, 1, 2]
    assert len({seed for seed, _ in calls}) == 1
    assert model.epochs_done_ == model.best_epoch_


def test_refit_on_users_with_two_positives_validates_once():
    """A user's last positive is never held out: with two positives each, only the first
    hold-out has validation positives, and the refit validates in that one pass."""
    rows = np.repeat(np.arange(200), 2)
    cols = (rows * 7 + np.tile([0, 3], 200)) % 50
    X = sp.csr_matrix((np.ones(400, np.float32), (rows, cols)), shape=(200, 50))
    calls = []
    model = WARPFactorizer(n_components=4, epochs=3, early_stopping="refit", n_threads=1,
                           validation_fraction=0.5, random_state=0)
    model.fit(X, callback=lambda m, info: calls.append(info["epoch"]))
    assert calls == [0, 1, 2] + list(range(model.best_epoch_))


def test_refit_where_the_defaults_early_stop_keeps_the_validated_model(data, monkeypatch,
                                                                       caplog):
    """On data where early_stopping="auto" validates (20,000 users or more; patched here)
    there is no refit: the model is the validated pass's at its best epoch, bit for bit
    the model of early_stopping=True (the same hold-out and checks; a patience that lets
    both train every epoch), and nothing trains again."""
    X, _ = data
    monkeypatch.setattr(_validation, "auto_early_stopping", lambda matrix: True)
    kw = dict(n_components=8, epochs=40, n_iter_no_change=100, n_threads=1, random_state=4)
    calls = []
    with caplog.at_level("INFO", logger="warprec.model"):
        model = WARPFactorizer(early_stopping="refit", **kw).fit(
            X, callback=lambda m, info: calls.append(info["epoch"]))
    assert calls == list(range(40))              # one pass
    assert "is kept, not trained again" in caplog.text
    assert model.best_epoch_ == model.epochs_done_
    assert model.best_epoch_ == int(np.argmax(model.validation_scores_)) + 1
    kept = WARPFactorizer(early_stopping=True, **kw).fit(X)
    assert kept.best_epoch_ == model.best_epoch_
    for name in PARAMS:
        np.testing.assert_array_equal(getattr(model, name), getattr(kept, name))
    assert model.train_matrix_.nnz == X.nnz and model.early_stopping_ is True
    assert model.refit_ is False
