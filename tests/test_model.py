"""WARPFactorizer: the estimator contract, inference, persistence and bad input."""

import pickle

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import warprec.model as model_module
from warprec import DivergenceError, NotFittedError, WARPFactorizer, WarprecWarning
from warprec.baselines import PopularityRecommender
from warprec.datasets import make_interactions
from warprec.metrics import evaluate


@pytest.fixture(scope="module")
def small():
    X = make_interactions(300, 200, 6000, rank=4, random_state=1)
    gen = np.random.default_rng(0)
    X = X.tocoo()
    test_mask = gen.random(X.nnz) < 0.2
    train = sp.csr_matrix((X.data[~test_mask], (X.row[~test_mask], X.col[~test_mask])), X.shape)
    test = sp.csr_matrix((X.data[test_mask], (X.row[test_mask], X.col[test_mask])), X.shape)
    return train, test


@pytest.fixture(scope="module")
def fitted(small):
    return WARPFactorizer(n_components=16, epochs=10, n_threads=1).fit(small[0])


def test_learns_better_than_popularity(small, fitted):
    train, test = small
    warp = evaluate(fitted, test, train=train, k=10)
    pop = evaluate(PopularityRecommender().fit(train), test, train=train, k=10)
    assert warp["ndcg@10"] > 1.2 * pop["ndcg@10"]


def test_sklearn_conventions():
    sklearn_base = pytest.importorskip("sklearn.base")
    model = WARPFactorizer(n_components=8, alpha=0.1, rank_weighting=[1.0, 0.5])
    clone = sklearn_base.clone(model)
    assert clone.get_params() == model.get_params()
    assert clone is not model
    assert model.set_params(epochs=3) is model and model.epochs == 3
    with pytest.raises(ValueError, match="Invalid parameter"):
        model.set_params(bogus=1)
    assert "n_components=8" in repr(model)


def test_fit_returns_self_and_sets_trailing_underscore_attributes(small):
    model = WARPFactorizer(n_components=4, epochs=1)
    assert not any(k.endswith("_") for k in vars(model))
    assert model.fit(small[0]) is model
    assert model.user_factors_.shape == (300, 4) and model.item_factors_.shape == (200, 4)
    assert model.user_factors_.dtype == np.float32
    assert model.epochs_done_ == 1 and len(model.history_) == 1


def test_zero_epochs_allocate_and_resolve_without_training(small):
    start = WARPFactorizer(n_components=4, epochs=0, n_threads=1, random_state=3).fit(small[0])
    assert start.epochs_done_ == 0 and start.history_ == []
    assert start.user_factors_.shape == (300, 4) and isinstance(start.learning_rate_, float)
    one = WARPFactorizer(n_components=4, epochs=1, n_threads=1, random_state=3).fit(small[0])
    start.set_params(epochs=1).partial_fit(small[0])   # the same first epoch
    np.testing.assert_array_equal(start.user_factors_, one.user_factors_)
    assert start.epochs_done_ == 1 and start.history_[0]["epoch"] == 0


def test_single_thread_is_bit_reproducible(small):
    a = WARPFactorizer(n_components=8, epochs=3, n_threads=1, random_state=5).fit(small[0])
    b = WARPFactorizer(n_components=8, epochs=3, n_threads=1, random_state=5).fit(small[0])
    c = WARPFactorizer(n_components=8, epochs=3, n_threads=1, random_state=6).fit(small[0])
    assert np.array_equal(a.user_factors_, b.user_factors_)
    assert np.array_equal(a.item_biases_, b.item_biases_)
    assert not np.array_equal(a.user_factors_, c.user_factors_)


def test_partial_fit_continues_like_one_long_fit(small):
    one = WARPFactorizer(n_components=8, epochs=4, n_threads=1).fit(small[0])
    two = WARPFactorizer(n_components=8, epochs=2, n_threads=1).fit(small[0])
    two.partial_fit(small[0])
    assert two.epochs_done_ == 4
    np.testing.assert_array_equal(one.item_factors_, two.item_factors_)


def test_callback_sees_every_epoch_and_can_stop(small):
    seen = []
    model = WARPFactorizer(n_components=4, epochs=5, n_threads=1)
    model.fit(small[0], callback=lambda m, info: seen.append(info["epoch"]) or len(seen) < 3)
    assert seen == [0, 1, 2] and model.epochs_done_ == 3


def test_recommend_shapes_exclusion_and_filters(small, fitted):
    train = small[0]
    items, scores = fitted.recommend(0, k=5)
    assert items.shape == (5,) and scores.shape == (5,)
    assert np.all(np.diff(scores) <= 0)
    assert not set(items) & set(train[0].indices)
    batch, bscores = fitted.recommend([0, 1, 2], k=7)
    assert batch.shape == (3, 7)
    np.testing.assert_array_equal(batch[0, :5], items)
    # scores agree with predict
    np.testing.assert_allclose(bscores[1], fitted.predict(1, batch[1]), rtol=1e-5, atol=1e-6)
    seen_too, _ = fitted.recommend(0, k=200, exclude_seen=False)
    assert set(seen_too) == set(range(200))
    filtered, _ = fitted.recommend(0, k=5, filter_items=items[:2])
    assert not set(filtered) & set(items[:2])
    only, _ = fitted.recommend(0, k=3, items=[5, 6, 7, 8], exclude_seen=False)
    assert set(only) <= {5, 6, 7, 8}


def test_recommend_user_items_replaces_training_exclusion(fitted):
    user_items = sp.csr_matrix(([1.0], ([0], [3])), shape=(1, 200))
    items, _ = fitted.recommend([4], k=200, user_items=user_items)
    assert 3 not in items[0] and (items[0] >= 0).sum() == 199


def test_recommend_pads_when_k_exceeds_candidates(fitted, small):
    n_seen = small[0][0].nnz
    items, scores = fitted.recommend(0, k=500)
    assert items.shape == (200,)
    assert (items == -1).sum() == n_seen and np.isneginf(scores[items == -1]).all()


def test_similar_items_excludes_itself(fitted):
    items, sims = fitted.similar_items(3, k=5)
    assert 3 not in items and np.all(sims <= 1.0 + 1e-6) and np.all(np.diff(sims) <= 0)


def test_raw_ids_in_and_out():
    gen = np.random.default_rng(0)
    users = gen.choice([f"u{i}" for i in range(40)], 600)
    items = gen.choice([f"film-{i}" for i in range(30)], 600)
    frame = pd.DataFrame({"user_id": users, "item_id": items}).drop_duplicates()
    model = WARPFactorizer(n_components=4, epochs=2).fit(frame)
    recs, _ = model.recommend("u3", k=3)
    assert all(isinstance(r, str) and r.startswith("film-") for r in recs)
    assert model.predict(["u3", "u4"], "film-2").shape == (2,)
    with pytest.raises(KeyError, match="not seen at fit time"):
        model.recommend("nobody")
    with pytest.raises(KeyError, match="film-999"):
        model.predict("u3", "film-999")


def test_save_load_round_trip(tmp_path, fitted):
    path = tmp_path / "m.npz"
    fitted.save(path)
    loaded = WARPFactorizer.load(path)
    for name in ("user_factors_", "item_factors_", "item_biases_", "user_grad_sq_",
                 "item_grad_sq_", "bias_grad_sq_"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(fitted, name))
    assert loaded.get_params() == fitted.get_params()
    assert loaded.seed_ == fitted.seed_ and loaded.epochs_done_ == fitted.epochs_done_
    np.testing.assert_array_equal(loaded.recommend(1, k=5)[0], fitted.recommend(1, k=5)[0])
    with open(path, "rb") as fh:
        assert b"pickle" not in fh.read(200)


def test_save_load_string_ids(tmp_path):
    frame = pd.DataFrame({"user_id": ["a", "b", "a", "c"], "item_id": ["x", "y", "y", "z"]})
    model = WARPFactorizer(n_components=2, epochs=1).fit(frame)
    model.save(tmp_path / "s.npz")
    loaded = WARPFactorizer.load(tmp_path / "s.npz")
    assert list(loaded.user_ids_) == ["a", "b", "c"]
    assert loaded.recommend("a", k=1, exclude_seen=False)[0] in ("x", "y", "z")


def test_load_rejects_garbage(tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip file at all")
    with pytest.raises(ValueError, match="not a readable warprec model"):
        WARPFactorizer.load(bad)
    with pytest.raises(FileNotFoundError):
        WARPFactorizer.load(tmp_path / "missing.npz")


def test_not_fitted_errors():
    with pytest.raises(NotFittedError, match="fit"):
        WARPFactorizer().recommend(0)


def test_max_sampled_beyond_memory_is_a_clear_error():
    """The work arrays hold max_sampled entries per thread: a value they cannot hold is a
    ValueError that names the parameter, not a MemoryError from numpy."""
    X = sp.csr_matrix(np.array([[1.0, 0, 1], [0, 1, 0]]))
    with pytest.raises(ValueError, match=r"max_sampled=1000000000000 is too large"):
        WARPFactorizer(epochs=1, n_threads=1, max_sampled=10**12).fit(X)


@pytest.mark.parametrize("X,match", [
    (sp.csr_matrix((3, 4)), "no positive"),
    (sp.csr_matrix(np.array([[1.0, np.nan]])), "NaN"),
    (sp.csr_matrix(np.array([[1.0, -2.0]])), "negative"),
    (np.zeros((0, 3)), "at least one user"),
    ("ratings.csv", "scipy.sparse"),
])
def test_bad_fit_input(X, match):
    with pytest.raises((ValueError, TypeError), match=match):
        WARPFactorizer(epochs=1).fit(X)


@pytest.mark.parametrize("params,match", [
    (dict(n_components=0), "n_components"),
    (dict(learning_rate=-1.0), "learning_rate"),
    (dict(rank_weighting="nope"), "Unknown rank_weighting"),
    (dict(rank_weighting="precision@k"), "needs the cut-off"),
    (dict(rank_weighting=[0.1, 0.5]), "non-increasing"),
    (dict(loss="hinge"), "loss must be one of"),
    (dict(sample_order="random"), "sample_order must be one of"),
    (dict(sample_order=None), "sample_order must be one of"),
    (dict(loss="warp", negative_sampling="popularity"), "only available with loss='bpr'"),
    (dict(max_violators=0), "max_violators"),
    (dict(max_violators=4, loss="bpr"), "max_violators > 1 applies to the WARP losses"),
    (dict(max_violators=4, rank_estimator="exact"), "rank_estimator='sampled'"),
    (dict(max_violators=40, max_sampled=30), r"cannot exceed max_sampled \(30\)"),
])
def test_bad_parameters(small, params, match):
    with pytest.raises((ValueError, TypeError), match=match):
        WARPFactorizer(epochs=1, **params).fit(small[0])


def test_bad_k(fitted):
    for k in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="positive integer"):
            fitted.recommend(0, k=k)


def test_unseen_index(fitted):
    with pytest.raises(KeyError, match="out of range"):
        fitted.recommend(300)


def test_divergence_is_reported_and_parameters_stay_finite(small):
    model = WARPFactorizer(n_components=8, epochs=50, learning_rate=1e6, n_threads=1,
                           learning_schedule="sgd", rank_weighting="auc")
    with pytest.raises(DivergenceError, match="Lower learning_rate") as info, \
            pytest.warns(WarprecWarning, match="learning_rate \\* alpha"):
        model.fit(small[0])
    assert info.value.epoch >= 0
    assert model._parameters_finite()


def test_users_and_items_without_interactions_are_fine():
    X = sp.csr_matrix(np.array([[1, 0, 1, 0], [0, 0, 0, 0], [0, 1, 1, 0]], dtype=np.float32))
    model = WARPFactorizer(n_components=2, epochs=2).fit(X)
    items, scores = model.recommend(1, k=4)
    assert np.isfinite(scores).all() and sorted(items) == [0, 1, 2, 3]


def test_sample_weight_forms(small):
    train = small[0]
    model = WARPFactorizer(n_components=4, epochs=1, n_threads=1)
    ones = model.fit(train, sample_weight=np.ones(train.nnz)).item_factors_.copy()
    same = model.fit(train).item_factors_
    np.testing.assert_array_equal(ones, same)
    model.fit(train, sample_weight="values")
    model.fit(train, sample_weight=train * 2.0)
    with pytest.raises(ValueError, match="one weight per positive"):
        model.fit(train, sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="finite and >= 0"):
        model.fit(train, sample_weight=-np.ones(train.nnz))


def test_model_pickles(fitted):
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(again.item_factors_, fitted.item_factors_)


@pytest.mark.parametrize("params", [
    dict(loss="warp-kos", k=2, n=5),
    dict(loss="bpr"),
    # the automatic rate is calibrated for WARP; ten epochs of popularity-sampled BPR
    # need a faster one to beat the popularity baseline on this small set
    dict(loss="bpr", negative_sampling="popularity", learning_rate=0.05),
    dict(rank_estimator="exact"),
    dict(rank_weighting="owpc-harmonic", learning_rate=0.5),
    dict(rank_weighting="precision@5"),
    dict(learning_schedule="sgd", learning_rate=0.01, max_norm=2.0),
    dict(sample_order="users"),
    dict(sample_order="users", loss="ordinal", n=3),
    dict(max_violators=5),
    dict(max_violators=5, loss="warp-kos", sample_order="users"),
])
def test_every_loss_option_learns(small, params):
    train, test = small
    model = WARPFactorizer(n_components=16, epochs=10, n_threads=1, **params).fit(train)
    pop = evaluate(PopularityRecommender().fit(train), test, train=train, k=10)["ndcg@10"]
    assert evaluate(model, test, train=train, k=10)["ndcg@10"] > pop


def test_ordinal_loss_learns_from_grades(small):
    train, test = small
    graded = train.copy()
    graded.data = (np.arange(graded.nnz) % 5 + 1).astype(np.float32)  # grades 1..5
    model = WARPFactorizer(n_components=16, epochs=10, n_threads=1, loss="ordinal", n=4)
    model.fit(graded)
    pop = evaluate(PopularityRecommender().fit(train), test, train=train, k=10)["ndcg@10"]
    assert evaluate(model, test, train=train, k=10)["ndcg@10"] > pop
    half = graded.copy()
    half.data = half.data / 2
    with pytest.raises(ValueError, match="whole numbers"):
        model.fit(half)


def test_sample_order_auto_depends_on_parameter_size(small, monkeypatch):
    train = small[0]
    model = WARPFactorizer(n_components=8, epochs=1, n_threads=1).fit(train)
    assert model.sample_order_ == "positives"  # 2 * (U + V) bytes far below 8 MiB
    assert WARPFactorizer(n_components=8, epochs=1, n_threads=1,
                          sample_order="users").fit(train).sample_order_ == "users"
    parameter_bytes = 2 * (model.user_factors_.nbytes + model.item_factors_.nbytes)
    monkeypatch.setattr(model_module, "PREFETCH_ABOVE_BYTES", parameter_bytes - 1)
    big = WARPFactorizer(n_components=8, epochs=1, n_threads=1).fit(train)
    assert big.sample_order_ == "users"
    same = WARPFactorizer(n_components=8, epochs=1, n_threads=1, sample_order="users")
    np.testing.assert_array_equal(same.fit(train).user_factors_, big.user_factors_)


@pytest.mark.parametrize("loss, shape, long_tail", [
    ("warp", (400, 300, 2_000), True),          # 5 positives per user, 6.7 per item
    ("warp-kos", (400, 300, 2_000), True),
    ("warp", (400, 300, 8_000), False),         # 20 per user: not short histories
    ("warp", (1_000, 100, 8_000), False),       # 80 per item: not a long tail
    ("bpr", (400, 300, 2_000), False),          # (measured for WARP only)
    ("ccl", (400, 300, 2_000), False),
])
def test_long_tail_takes_lightfms_order_and_start(monkeypatch, loss, shape, long_tail):
    """On a long tail of short histories the WARP losses start at LONG_TAIL_INIT_SCALE and
    visit the positives in random order even when the parameters outgrow the caches;
    elsewhere init_scale="auto" is INIT_SCALE and the order follows the size."""
    X = make_interactions(*shape, random_state=0)
    monkeypatch.setattr(model_module, "PREFETCH_ABOVE_BYTES", 0)   # "outgrows the caches"
    kw = dict(loss=loss, n_components=8, epochs=1, n_threads=1, n_negatives=5)
    model = WARPFactorizer(**kw).fit(X)
    assert model.init_scale_ == (0.036 if long_tail else 0.1)
    assert model.sample_order_ == ("positives" if long_tail else "users")
    rows = np.linalg.norm(WARPFactorizer(**dict(kw, epochs=0)).fit(X).user_factors_, axis=1)
    if loss != "ccl":   # (the cosine loss's rows start at unit norm)
        assert abs(rows.mean() - model.init_scale_) < 0.2 * model.init_scale_
    explicit = WARPFactorizer(**dict(kw, init_scale=0.5, sample_order="users")).fit(X)
    assert (explicit.init_scale_, explicit.sample_order_) == (0.5, "users")


def test_several_violators_reproducible_and_distinct(small):
    """``max_violators``: bit-reproducible with one thread, 1 is the classic single-violator
    step, and more change the model; fold-in (items frozen) takes the same step."""
    train = small[0]

    def fit(**params):
        return WARPFactorizer(n_components=8, epochs=3, n_threads=1, **params).fit(train)

    a, b = fit(max_violators=6), fit(max_violators=6)
    assert a.user_factors_.tobytes() == b.user_factors_.tobytes()
    assert a.item_factors_.tobytes() == b.item_factors_.tobytes()
    assert fit(max_violators=1).item_factors_.tobytes() == fit().item_factors_.tobytes()
    assert fit().item_factors_.tobytes() != a.item_factors_.tobytes()
    rows = a.fold_in(train[:5])
    assert rows.shape == (5, 8) and np.isfinite(rows).all()
    assert rows.tobytes() == b.fold_in(train[:5]).tobytes()
    assert not np.array_equal(rows, b.set_params(max_violators=1).fold_in(train[:5]))


def test_several_violators_need_the_plain_model(small):
    features = sp.identity(small[0].shape[1], format="csr")
    with pytest.raises(ValueError, match="not available with side features"):
        WARPFactorizer(epochs=1, max_violators=3).fit(small[0], item_features=features)


def test_exact_rank_estimator_rejects_bpr(small):
    with pytest.raises(ValueError, match="exact"):
        WARPFactorizer(loss="bpr", rank_estimator="exact", epochs=1).fit(small[0])


def test_refit_on_new_ids_replaces_the_id_maps():
    a = pd.DataFrame({"user_id": ["a", "b", "a"], "item_id": ["x", "y", "y"]})
    b = pd.DataFrame({"user_id": ["c", "d", "c"], "item_id": ["z", "w", "w"]})
    model = WARPFactorizer(epochs=1, n_components=2).fit(a)
    assert model.recommend("a", k=1, exclude_seen=False)[0][0] in ("x", "y")
    model.fit(b)
    assert model.recommend("c", k=1, exclude_seen=False)[0][0] in ("z", "w")
    with pytest.raises(KeyError, match="'a'"):
        model.recommend("a")


def test_auto_alpha_follows_the_learning_rate_and_the_positives_per_item():
    from warprec._defaults import AUTO_ALPHA, AUTO_ALPHA_MAX
    X = make_interactions(60, 40, 600, random_state=0)
    model = WARPFactorizer(n_components=4, epochs=1, learning_rate=0.04).fit(X)
    assert model.alpha == "auto"
    assert model.alpha_ == pytest.approx(min(AUTO_ALPHA * 0.04 * 40 / 600, AUTO_ALPHA_MAX))
    kept = model.alpha_
    fewer = X.tolil()
    fewer[:30] = 0
    model.partial_fit(fewer.tocsr())  # continuing keeps the first fit's value
    assert model.alpha_ == kept
    assert WARPFactorizer(n_components=4, epochs=1, alpha=0.02).fit(X).alpha_ == 0.02
    fast = WARPFactorizer(n_components=4, epochs=1, learning_rate=0.5).fit(X)
    assert fast.alpha_ == pytest.approx(min(AUTO_ALPHA * 0.05 * 40 / 600, AUTO_ALPHA_MAX))
    with pytest.raises(ValueError, match="'auto'"):
        WARPFactorizer(alpha="strong").fit(X)


def test_auto_alpha_survives_save_and_load(tmp_path):
    X = make_interactions(60, 40, 600, random_state=1)
    model = WARPFactorizer(n_components=4, epochs=1).fit(X)
    model.save(tmp_path / "m.npz")
    loaded = WARPFactorizer.load(tmp_path / "m.npz")
    assert loaded.alpha == "auto" and loaded.alpha_ == model.alpha_


def test_auto_learning_rate_follows_the_positives_per_user_and_item():
    from warprec._defaults import AUTO_ALPHA, AUTO_LR, AUTO_LR_ITEM, AUTO_LR_MAX, AUTO_LR_MIN
    users = np.arange(300)
    # 20 positives per user, 300 per item: the per-user term applies
    twenty = sp.csr_matrix((np.ones(6000, np.float32), (np.repeat(users, 20),
                                                        np.tile(np.arange(20), 300))),
                           shape=(300, 21))
    assert AUTO_LR_MIN < AUTO_LR / 20 < AUTO_LR_MAX
    model = WARPFactorizer(n_components=4, epochs=1).fit(twenty)
    assert model.learning_rate == "auto"
    assert model.learning_rate_ == pytest.approx(AUTO_LR / 20)
    fewer = twenty.tolil()
    fewer[:100] = 0
    model.partial_fit(fewer.tocsr())  # continuing keeps the first fit's value
    assert model.learning_rate_ == pytest.approx(AUTO_LR / 20)
    # 5 positives per user: the per-user term is above the ceiling
    five = sp.csr_matrix((np.ones(1500, np.float32), (np.repeat(users, 5),
                                                      np.tile(np.arange(5), 300))),
                         shape=(300, 6))
    assert WARPFactorizer(n_components=4, epochs=1).fit(five).learning_rate_ == AUTO_LR_MAX
    # 1 positive per user, 150 per item: both terms exceed the upper clip
    few = sp.csr_matrix((np.ones(300, np.float32), (users, users % 2)), shape=(300, 2))
    assert WARPFactorizer(n_components=4, epochs=1).fit(few).learning_rate_ == AUTO_LR_MAX
    # 1 positive per user and per item: the item term, then the floor
    one = sp.csr_matrix(np.eye(30, dtype=np.float32))
    single = WARPFactorizer(n_components=4, epochs=1).fit(one)
    assert AUTO_LR_ITEM < AUTO_LR_MIN and single.learning_rate_ == AUTO_LR_MIN
    assert single.alpha_ == pytest.approx(min(AUTO_ALPHA * AUTO_LR_MIN, 0.03))
    # 10 positives per user, 4 per item: the item term
    X = make_interactions(60, 150, 600, random_state=0)
    expected = np.clip(min(AUTO_LR / 10, AUTO_LR_ITEM * 2), AUTO_LR_MIN, AUTO_LR_MAX)
    assert WARPFactorizer(n_components=4, epochs=1).fit(X).learning_rate_ == \
        pytest.approx(expected)
    assert WARPFactorizer(n_components=4, epochs=1, learning_rate=0.07).fit(
        X).learning_rate_ == 0.07
    with pytest.raises(ValueError, match="learning_rate must be a number > 0 or 'auto'"):
        WARPFactorizer(learning_rate="fast").fit(X)


def test_precision_at_k_with_k_is_deprecated_for_the_cut_off_in_the_name():
    """``k`` is k-OS's order statistic; the precision cut-off moves into the name (one name
    per concept), with a FutureWarning for one minor version and the same weights."""
    X = make_interactions(60, 40, 600, random_state=0)
    kw = dict(n_components=4, epochs=1, n_threads=1)
    with pytest.warns(FutureWarning, match="'precision@3'"):
        old = WARPFactorizer(rank_weighting="precision@k", k=3, **kw).fit(X)
    new = WARPFactorizer(rank_weighting="precision@3", **kw).fit(X)
    np.testing.assert_array_equal(old.user_factors_, new.user_factors_)
