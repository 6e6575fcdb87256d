"""Side features: the hybrid model's kernel against the slow reference, and the
estimator's features API (fit, embeddings, predict and recommend for new users and
items, partial_fit, save/load)."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import naive
from kernel_calls import filter_of, run_epoch
from warprec import WARPFactorizer, WarprecWarning, _hybrid
from warprec._kernels import train
from warprec._kernels.config import FIXED_D
from warprec._kernels.features import FeatureParameters, represent, score_rows
from warprec.baselines import PopularityRecommender
from warprec.datasets import make_interactions
from warprec.metrics import evaluate_factors
from warprec._hybrid import decay_share, indicators_only, leading_indicators
from warprec.weights import resolve_rank_weighting


def _kernel_epoch(EU, EI, c, GU, GI, Gc, FU, FI, X, order, table, *, loss, adagrad, seed=3,
                  epoch=1, lr=0.1, alpha=0.01, max_sampled=5, prefetch=False,
                  feature_negatives=0.0):
    FU, FI = sp.csr_matrix(FU, dtype=np.float32), sp.csr_matrix(FI, dtype=np.float32)
    pool = sp.csc_matrix(FI)
    fparams = FeatureParameters(
        FU.indptr.astype(np.int64), FU.indices.astype(np.int32), FU.data,
        FI.indptr.astype(np.int64), FI.indices.astype(np.int32), FI.data,
        EU, EI, c, GU, GI, Gc, decay_share(FU), decay_share(FI), leading_indicators(FU),
        leading_indicators(FI), bool((FU.data == 1).all()), bool((FI.data == 1).all()),
        pool.indptr.astype(np.int64), pool.indices.astype(np.int32))
    users = np.repeat(np.arange(X.shape[0], dtype=np.int32), np.diff(X.indptr))
    positives = train.Positives(X.indptr.astype(np.int64), X.indices, users,
                                np.ones(X.nnz, np.float32), np.zeros(0, np.int64), np.zeros(0),
                                filter_of(X))
    settings = train.Settings(np.float32(lr), np.float32(alpha), np.float32(0.0), max_sampled,
                              1, 1, np.float32(0.5), np.float32(1.0), np.float32(0.0),
                              np.float32(0.2), 1, 1, table, 1.0, False, seed,
                              feature_negatives=feature_negatives)
    mode = train.Mode(loss, exact_rank=False, adagrad=adagrad, clip=False, prefetch=prefetch,
                      features=True)
    work = train.make_work(mode, 1, EU.shape[1], X.shape[1], max_sampled, 1)
    return train.train_epoch(mode, fparams, positives, settings, work, order, epoch,
                             train.run_serially)


# (WARP with Adagrad and prefetching: the prefetching pipeline must not change a draw;
# BPR with plain SGD covers the other loss and the other step; the estimator's tests and
# the golden digests compile WARP with Adagrad without prefetching)
@pytest.mark.parametrize("loss,adagrad,prefetch", [(train.LOSS_WARP, True, True),
                                                   (train.LOSS_BPR, False, False)])
@pytest.mark.parametrize("unit,feature_negatives", [(False, 0.0), (True, 0.0), (False, 0.6)])
def test_hybrid_epoch_matches_reference(loss, adagrad, prefetch, unit, feature_negatives):
    """Users and items with several features each (shared between entities), weighted
    or all of weight 1 (whose weights the kernel does not read): one kernel epoch
    follows the reference update by update, also with a share of the positives taking
    their negatives among the items that share a feature (``feature_negatives``)."""
    gen = np.random.default_rng(4)
    n_users, n_items, d = 15, 40, 6
    X = sp.random(n_users, n_items, density=0.15, format="csr", random_state=4,
                  dtype=np.float32)
    X.data[:] = 1.0
    X.indices = X.indices.astype(np.int32)
    FU = np.hstack([np.eye(n_users), gen.random((n_users, 3)) < 0.4]).astype(np.float32)
    FI = np.hstack([np.eye(n_items), (gen.random((n_items, 4)) < 0.5) * (1.0 if unit else 0.5)
                    ]).astype(np.float32)
    EU = (gen.standard_normal((FU.shape[1], d)) * 0.3).astype(np.float32)
    EI = (gen.standard_normal((FI.shape[1], d)) * 0.3).astype(np.float32)
    c = (gen.standard_normal(FI.shape[1]) * 0.1).astype(np.float32)
    fast = [EU.copy(), EI.copy(), c.copy(), np.ones_like(EU), np.ones_like(EI), np.ones_like(c)]
    slow = [a.copy() for a in fast]
    order = gen.permutation(X.nnz).astype(np.int64)
    table = resolve_rank_weighting("harmonic", n_items).table
    assert _kernel_epoch(*fast, FU, FI, X, order, table, loss=loss, adagrad=adagrad,
                         prefetch=prefetch, feature_negatives=feature_negatives)
    naive.features_epoch(*slow, FU, FI, X, order, table, lr=0.1, alpha=0.01, max_sampled=5,
                         adagrad=adagrad, seed=3, epoch=1,
                         loss="bpr" if loss == train.LOSS_BPR else "warp",
                         feature_negatives=feature_negatives)
    for got, want in zip(fast, slow):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
    assert not np.array_equal(fast[0], EU) and not np.array_equal(fast[2], c)
    if feature_negatives:   # (the steps among feature-sharing items did happen)
        uniform = [EU.copy(), EI.copy(), c.copy(), np.ones_like(EU), np.ones_like(EI),
                   np.ones_like(c)]
        assert _kernel_epoch(*uniform, FU, FI, X, order, table, loss=loss, adagrad=adagrad,
                             prefetch=prefetch)
        assert not np.array_equal(uniform[1], fast[1])


@pytest.mark.parametrize("d", [FIXED_D, 5])
@pytest.mark.parametrize("unit", [False, True])
def test_representations_sum_the_feature_rows(d, unit):
    """The kernel's representation of an entity (and an item's bias) is the weighted
    sum of its feature rows, and its score of an item the representations' product
    plus the bias (summed row by row, the item's representation never written), at the
    fixed dimension (unrolled code) and another; with ``unit`` the weights are all 1
    and not read."""
    gen = np.random.default_rng(d)
    F = sp.random(30, 12, density=0.25, format="csr", random_state=d, dtype=np.float32)
    F.data[:] = 1.0 if unit else gen.uniform(0.1, 2.0, F.nnz)
    dense = F.toarray()
    E = gen.standard_normal((12, d)).astype(np.float32)
    c = gen.standard_normal(12).astype(np.float32)
    out = np.full(d, np.nan, np.float32)
    user = gen.standard_normal(d).astype(np.float32)
    weights = np.full(F.nnz, np.nan, np.float32) if unit else F.data
    for row in range(30):
        bias = represent(F.indptr.astype(np.int64), F.indices, weights, unit, E, c, row, out,
                         d)
        np.testing.assert_allclose(out, naive.feature_representation(dense, E, row),
                                   rtol=1e-5, atol=1e-6)
        assert bias == pytest.approx(naive.feature_bias(dense, c, row), rel=1e-5, abs=1e-6)
        score = score_rows(user, F.indptr.astype(np.int64), F.indices, weights, unit, E, c,
                           row, d)
        want = user @ naive.feature_representation(dense, E, row) + naive.feature_bias(
            dense, c, row)
        assert score == pytest.approx(want, rel=1e-5, abs=1e-5)


def test_indicators_only():
    """Each row its own indicator, weight 1 (empty columns after them allowed)."""
    eye = sp.identity(5, dtype=np.float32, format="csr")
    assert indicators_only(eye)
    assert indicators_only(sp.hstack([eye, sp.csr_matrix((5, 3))], format="csr"))
    assert not indicators_only(eye * 2)
    assert not indicators_only(eye[[1, 0, 2, 3, 4]])
    assert not indicators_only(sp.hstack([eye, sp.csr_matrix(np.ones((5, 1)))], format="csr"))
    assert not indicators_only(eye[:, :4])
    explicit_zero = eye.copy()
    explicit_zero.data[2] = 0.0
    assert not indicators_only(explicit_zero)


def test_indicator_features_train_as_the_plain_model():
    """With indicator features only, a hybrid epoch and a plain epoch from the same
    state give the same model (up to rounding): what lets the estimator train such a
    hybrid model with the plain kernel."""
    gen = np.random.default_rng(7)
    n_users, n_items, d = 20, 50, 8
    X = sp.random(n_users, n_items, density=0.2, format="csr", random_state=7,
                  dtype=np.float32)
    X.data[:] = 1.0
    X.indices = X.indices.astype(np.int32)
    U = (gen.standard_normal((n_users, d)) * 0.3).astype(np.float32)
    V = (gen.standard_normal((n_items, d)) * 0.3).astype(np.float32)
    b = (gen.standard_normal(n_items) * 0.1).astype(np.float32)
    hybrid = [U.copy(), V.copy(), b.copy(), np.ones_like(U), np.ones_like(V), np.ones_like(b)]
    plain = [a.copy() for a in hybrid]
    order = gen.permutation(X.nnz).astype(np.int64)
    table = resolve_rank_weighting("harmonic", n_items).table
    assert _kernel_epoch(*hybrid, np.eye(n_users), np.eye(n_items), X, order, table,
                         loss=train.LOSS_WARP, adagrad=True)
    ok, work = run_epoch(plain, X, order, table, learning_rate=0.1, alpha=0.01, seed=3,
                         epoch=1)
    assert ok and work.stats[0, train.STAT_UPDATES] > X.nnz // 2
    for got, want in zip(hybrid, plain):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_estimator_trains_indicator_features_with_the_plain_kernel(monkeypatch):
    """Indicator features only, for users and items: the estimator picks the plain
    kernel, whose fit equals the hybrid kernel's up to rounding; the factors are the
    indicators' embeddings."""
    X = make_interactions(120, 80, 2400, rank=4, random_state=3).tocsr()
    features = dict(user_features=sp.identity(120, dtype=np.float32, format="csr"),
                    item_features=sp.identity(80, dtype=np.float32, format="csr"))
    params = dict(n_components=8, epochs=2, n_threads=1, early_stopping=False,
                  identity_features=False, random_state=2)
    fast = WARPFactorizer(**params).fit(X, **features)
    assert _hybrid.plain_kernel(fast)
    assert isinstance(_hybrid.kernel_parameters(fast), train.Parameters)
    np.testing.assert_array_equal(fast.user_factors_, fast.user_feature_factors_)
    np.testing.assert_array_equal(fast.item_biases_, fast.item_feature_biases_)
    monkeypatch.setattr(_hybrid, "plain_kernel", lambda model: False)
    slow = WARPFactorizer(**params).fit(X, **features)
    assert isinstance(_hybrid.kernel_parameters(slow), FeatureParameters)
    for name in ("user_factors_", "item_factors_", "item_biases_"):
        np.testing.assert_allclose(getattr(fast, name), getattr(slow, name), rtol=1e-4,
                                   atol=1e-5)


@pytest.fixture(scope="module")
def catalogue():
    """Interactions with planted item clusters; the cluster is the items' feature, and a
    fifth of the items (the "cold" ones) have no training interaction."""
    X, truth = make_interactions(600, 300, 18_000, rank=6, random_state=5, return_truth=True)
    X = X.tocsr()
    gen = np.random.default_rng(1)
    cold = np.zeros(X.shape[1], bool)
    cold[gen.choice(X.shape[1], X.shape[1] // 5, replace=False)] = True
    coo = X.tocoo()
    warm_rows = ~cold[coo.col]
    frame = pd.DataFrame({"user_id": coo.row[warm_rows], "item_id": coo.col[warm_rows]})
    test = pd.DataFrame({"user_id": coo.row[~warm_rows], "item_id": coo.col[~warm_rows]})
    items = pd.DataFrame({"item_id": np.arange(X.shape[1]),
                          "cluster": [f"c{g}" for g in truth.item_cluster]})
    return frame, test, items, cold


@pytest.fixture(scope="module")
def hybrid(catalogue):
    frame, _, items, cold = catalogue
    return WARPFactorizer(n_components=16, epochs=15, n_threads=1, random_state=0).fit(
        frame, item_features=items[~cold])


def test_cold_items_are_ranked_from_their_features(catalogue, hybrid):
    """Items without a single training interaction, described by their cluster only: the
    users' future interactions with them rank far above chance."""
    _, test, items, cold = catalogue
    cold_items = items[cold].reset_index(drop=True)
    factors, biases = hybrid.item_embeddings(item_features=cold_items)
    column = {item: k for k, item in enumerate(cold_items["item_id"])}
    users = np.sort(test["user_id"].unique())
    row = {u: k for k, u in enumerate(users)}
    relevant = sp.csr_matrix((np.ones(len(test), np.float32),
                              ([row[u] for u in test["user_id"]],
                               [column[i] for i in test["item_id"]])),
                             shape=(len(users), len(cold_items)))
    user_factors = hybrid.user_embeddings(users=users)
    ndcg = evaluate_factors(user_factors, factors, biases, relevant, k=10,
                            metrics=["ndcg"])["ndcg@10"]
    gen = np.random.default_rng(0)
    chance = np.mean([evaluate_factors(user_factors, gen.standard_normal(factors.shape)
                                       .astype(np.float32), np.zeros(len(cold_items),
                                                                     np.float32),
                                       relevant, k=10, metrics=["ndcg"])["ndcg@10"]
                      for _ in range(3)])
    assert ndcg > 2 * chance
    items_out, _ = hybrid.recommend(users[:3], k=5, item_features=cold_items)
    assert set(items_out.ravel().tolist()) <= set(cold_items["item_id"].tolist())


def test_known_items_through_their_features_score_as_the_model(catalogue, hybrid):
    """A feature row of a known item adds its indicator embedding: ranking the known
    items through item_features gives recommend's answer (training items excluded)."""
    _, _, items, cold = catalogue
    warm = items[~cold]
    for user in (3, 17):
        got, got_scores = hybrid.recommend(user, k=6, item_features=warm)
        want, want_scores = hybrid.recommend(user, k=6)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_allclose(got_scores, want_scores, rtol=1e-5, atol=1e-6)
    pairs = hybrid.predict(3, item_features=warm.iloc[:4])
    np.testing.assert_allclose(pairs, hybrid.predict(3, warm["item_id"].iloc[:4]), rtol=1e-5,
                               atol=1e-6)


def test_feature_names_encoding_and_new_values(catalogue):
    frame, _, items, cold = catalogue
    extra = items.assign(year=np.linspace(0, 1, len(items)), flag=items["item_id"] % 2 == 0)
    model = WARPFactorizer(n_components=4, epochs=1, n_threads=1, identity_features=False)
    model.fit(frame, item_features=extra[~cold])
    names = model.item_feature_names_.tolist()
    assert names[0] == "cluster=" + sorted(items["cluster"].unique())[0]
    assert "year" in names and "flag=False" in names and "flag=True" in names
    assert not any(n.startswith("item_id=") for n in names)       # identity_features=False
    assert model.user_feature_names_[0] == "user_id=0"            # users: indicators only
    assert model.item_features_.shape == (model.n_items_, len(names))
    with pytest.warns(WarprecWarning, match="not fit with.*cluster: zzz"):
        model.item_embeddings(item_features=pd.DataFrame(
            {"item_id": [9999], "cluster": ["zzz"], "year": [0.5], "flag": [True]}))
    with pytest.raises(ValueError, match="lacks the column 'year'"):
        model.item_embeddings(item_features=items.iloc[:2])


def test_list_values_and_rows_for_entities_without_interactions(catalogue):
    """MovieLens-style "a|b" cells are one feature per value; rows for items that X does
    not have are left out of the fit with a warning (they can be ranked later)."""
    frame, _, items, cold = catalogue
    genres = items.assign(genres=["x|y" if i % 3 == 0 else "y" for i in items["item_id"]])
    with pytest.warns(WarprecWarning, match=f"{int(cold.sum())} rows whose item_id is not an "
                                            "item of X"):
        model = WARPFactorizer(n_components=4, epochs=1, n_threads=1).fit(
            frame, item_features=genres[["item_id", "genres"]])
    names = model.item_feature_names_.tolist()
    assert names[-2:] == ["genres=x", "genres=y"]
    first = model.item_ids_.tolist().index(0)            # item 0: "x|y"
    assert model.item_features_[first, -2:].toarray().tolist() == [[1.0, 1.0]]


def test_new_users_from_features_and_input_errors():
    X = make_interactions(200, 60, 2500, rank=3, random_state=6).tocsr()
    gen = np.random.default_rng(2)
    U = sp.csr_matrix((gen.random((200, 5)) < 0.3).astype(np.float32))
    model = WARPFactorizer(n_components=8, epochs=3, n_threads=1).fit(X, user_features=U)
    assert model.user_features_.shape == (200, 205)
    new_users = sp.csr_matrix(np.eye(5, dtype=np.float32)[:2])
    emb = model.user_embeddings(user_features=new_users)
    np.testing.assert_allclose(emb, model.user_feature_factors_[200:202], rtol=1e-6)
    items, scores = model.recommend(["a", "b"], k=4, user_features=new_users)
    assert items.shape == (2, 4) and np.all(np.diff(scores, axis=1) <= 0)
    with pytest.raises(ValueError, match="has 4 columns"):
        model.user_embeddings(user_features=np.ones((1, 4)))
    with pytest.raises(ValueError, match="one per user of X"):
        WARPFactorizer(epochs=1).fit(X, user_features=U[:10])
    with pytest.raises(ValueError, match="loss='warp' or 'bpr'"):
        WARPFactorizer(epochs=1, max_norm=1.0).fit(X, user_features=U)
    with pytest.raises(ValueError, match="has no side features"):
        WARPFactorizer(n_components=4, epochs=1).fit(X).user_embeddings(user_features=U)
    # popularity ranks the same for any new user (the zero factor), items it cannot embed
    popular = PopularityRecommender().fit(X)
    np.testing.assert_array_equal(np.ravel(popular.recommend(0, user_features=U[:1])[0]),
                                  np.ravel(popular.recommend(0, exclude_seen=False)[0]))
    with pytest.raises(ValueError, match="has no side features"):
        popular.recommend(0, item_features=U[:1])


def test_hybrid_partial_fit_and_save_load(catalogue, hybrid, tmp_path):
    frame, _, items, cold = catalogue
    path = tmp_path / "hybrid.npz"
    hybrid.save(path)
    loaded = WARPFactorizer.load(path)
    cold_items = items[cold]
    for got, want in zip(loaded.recommend([1, 2], k=5, item_features=cold_items),
                         hybrid.recommend([1, 2], k=5, item_features=cold_items)):
        np.testing.assert_array_equal(got, want)
    assert loaded.item_feature_names_.tolist() == hybrid.item_feature_names_.tolist()
    before = loaded.item_feature_factors_.copy()
    loaded.set_params(epochs=1).partial_fit(frame)
    assert loaded.epochs_done_ == hybrid.epochs_done_ + 1
    assert not np.array_equal(loaded.item_feature_factors_, before)
    folded = loaded.fold_in(loaded.train_matrix_[:3])          # items held fixed
    assert folded.shape == (3, loaded.user_factors_.shape[1]) and np.isfinite(folded).all()
    # growing: a new user and a new item (with its features), the known rows kept
    known_items = loaded.item_ids_.tolist()
    grown = pd.concat([frame, pd.DataFrame({"user_id": [10_000, 10_000],
                                            "item_id": [known_items[0], 99_999]})])
    new_item = pd.DataFrame({"item_id": [99_999], "cluster": [items["cluster"].iloc[0]]})
    width = loaded.item_feature_factors_.shape[0]
    loaded.partial_fit(grown, item_features=new_item)
    assert loaded.user_ids_[-1] == 10_000 and loaded.item_ids_[-1] == 99_999
    assert loaded.item_feature_factors_.shape[0] == width + 1        # one more indicator
    assert loaded.item_feature_names_[len(known_items)] == "item_id=99999"
    cluster = loaded.item_feature_names_.tolist().index(f"cluster={items['cluster'].iloc[0]}")
    assert loaded.item_features_[len(known_items), cluster] == 1.0
    assert loaded.item_features_[len(known_items) - 1, len(known_items)] == 0.0
    # the known items keep their clusters
    n_given = loaded.item_feature_encoder_.n_features_
    np.testing.assert_array_equal(
        loaded.item_features_[:len(known_items), -n_given:].toarray(),
        hybrid.item_features_[:, -n_given:].toarray())
    assert loaded.recommend(10_000, k=3)[0].shape == (3,)


def test_read_features(tmp_path):
    from warprec.data import read_features

    path = tmp_path / "movies.csv"
    path.write_text("movieId,title,genres,year\n1,A,Drama|War,1990\n2,B,Comedy,2001\n")
    frame = read_features(path)
    assert list(frame.columns) == ["item_id", "genres", "year"]
    assert frame["item_id"].tolist() == [1, 2] and frame["year"].tolist() == [1990, 2001]
    assert list(read_features(path, columns=["genres"]).columns) == ["item_id", "genres"]
    (tmp_path / "users.csv").write_text("age,city\n30,x\n")
    with pytest.raises(KeyError, match="no user id column"):
        read_features(tmp_path / "users.csv", "user")
    with pytest.raises(KeyError, match="no column"):
        read_features(path, columns=["rating"])


def test_hybrid_early_stopping_restores_the_best_epoch(catalogue):
    """Early stopping snapshots the feature embeddings: after the restore the summed
    factors are those of the best epoch (the validation score recomputed from them)."""
    frame, _, items, cold = catalogue
    # a fast rate, so that the validation score peaks early
    model = WARPFactorizer(n_components=8, epochs=40, learning_rate=0.3, n_threads=1,
                           early_stopping=True, n_iter_no_change=3, random_state=1)
    seen = []
    model.fit(frame, item_features=items[~cold],
              callback=lambda m, info: seen.append(m.item_factors_.copy()))
    assert model.epochs_done_ == model.best_epoch_ < len(seen)
    assert model.item_factors_.tobytes() == seen[model.best_epoch_ - 1].tobytes()
    np.testing.assert_allclose(model.item_factors_,
                               model.item_features_ @ model.item_feature_factors_, rtol=1e-5,
                               atol=1e-6)
    assert max(model.validation_scores_) == model.validation_scores_[model.best_epoch_ - 1]


# ------------------------------------------------------------------ feature_weight
def test_feature_weight_scales_the_given_features_and_new_rows():
    """The given features' entries are ``feature_weight`` times their values, the
    indicators' stay 1; rows described later (embed, partial_fit) get the same weight;
    save/load keeps it."""
    import tempfile

    rng = np.random.default_rng(0)
    rows = [(f"u{u}", int(i)) for u in range(30) for i in rng.choice(20, 5, replace=False)]
    df = pd.DataFrame(rows, columns=["user_id", "item_id"])
    items = pd.DataFrame({"item_id": np.arange(20), "genre": [f"g{i % 3}" for i in range(20)],
                          "year": np.linspace(0.0, 1.0, 20)})
    plain = WARPFactorizer(n_components=4, epochs=2, n_threads=1, random_state=0).fit(
        df, item_features=items)
    model = WARPFactorizer(n_components=4, epochs=2, n_threads=1, random_state=0,
                           feature_weight=0.25).fit(df, item_features=items)
    assert model.feature_weight_ == 0.25 and plain.feature_weight_ == 1.0
    n = len(model.item_ids_)
    F, F1 = model.item_features_, plain.item_features_
    assert np.array_equal(F[:, :n].toarray(), F1[:, :n].toarray())          # indicators
    assert np.allclose(F[:, n:].toarray(), 0.25 * F1[:, n:].toarray())
    new = pd.DataFrame({"item_id": [99], "genre": ["g1"], "year": [0.5]})
    factors, biases = model.item_embeddings(item_features=new)
    names = list(model.item_feature_names_)
    E, b = model.item_feature_factors_, model.item_feature_biases_
    expected = 0.25 * (E[names.index("genre=g1")] + 0.5 * E[names.index("year")])
    assert np.allclose(factors[0], expected, atol=1e-6)
    assert np.isclose(biases[0], 0.25 * (b[names.index("genre=g1")]
                                         + 0.5 * b[names.index("year")]), atol=1e-6)
    with tempfile.TemporaryDirectory() as folder:
        path = model.save(f"{folder}/m.npz")
        loaded = WARPFactorizer.load(path)
    assert loaded.feature_weight_ == 0.25
    assert np.allclose(loaded.item_embeddings(item_features=new)[0], factors)
    # partial_fit's new feature rows take the fit's weight
    loaded.set_params(epochs=1)
    loaded.partial_fit(df, item_features=items.assign(year=1.0))
    year = names.index("year")
    assert np.allclose(loaded.item_features_[:, year].toarray(), 0.25)


@pytest.mark.parametrize("weight", [0, -1.0, float("inf"), "high"])
def test_feature_weight_is_checked(weight):
    with pytest.raises((ValueError, TypeError), match="feature_weight"):
        WARPFactorizer(feature_weight=weight).fit(sp.random(10, 8, 0.5, format="csr"))


# ------------------------------------------------------------------ feature_normalization
def _normalization_data():
    rng = np.random.default_rng(1)
    rows = [(f"u{u}", int(i)) for u in range(30) for i in rng.choice(20, 6, replace=False)]
    df = pd.DataFrame(rows, columns=["user_id", "item_id"])
    genres = ["a", "a|b", "a|b|c", "c"]
    items = pd.DataFrame({"item_id": np.arange(20), "genre": [genres[i % 4] for i in range(20)],
                          "year": np.where(np.arange(20) % 5 == 0, 2.0, 0.0)})
    return df, items


@pytest.mark.parametrize("norm, indicator, given", [
    # item 0: genre "a" and year 2 (s = 3); item 2: "a|b|c" (s = 3); w = 0.5
    ("none", [1.0, 1.0], [[0.5, 0, 0, 1.0], [0.5, 0.5, 0.5, 0]]),
    ("side", [1.0, 1.0], [[0.5 / 3, 0, 0, 1.0 / 3], [0.5 / 3, 0.5 / 3, 0.5 / 3, 0]]),
    ("row", [1 / 2.5, 1 / 2.5], [[0.5 / 2.5, 0, 0, 1.0 / 2.5], [0.2, 0.2, 0.2, 0]]),
])
def test_feature_normalization_by_hand(norm, indicator, given):
    """The feature rows of a fit, computed by hand: ``x`` a row's given features, ``s``
    their sum, ``w = 0.5``: "none" ``(1, w x)``, "side" ``(1, w x / s)``, "row"
    ``(1, w x) / (1 + w s)``; a row without given features keeps its indicator's 1."""
    df, items = _normalization_data()
    items = items.assign(genre=items["genre"].where(items["item_id"] != 3))   # item 3: none
    model = WARPFactorizer(n_components=4, epochs=1, n_threads=1, random_state=0,
                           feature_weight=0.5, feature_normalization=norm).fit(
        df, item_features=items)
    assert model.feature_normalization_ == norm
    n = len(model.item_ids_)
    names = list(model.item_feature_names_[n:])
    assert names == ["genre=a", "genre=b", "genre=c", "year"]
    F = model.item_features_.toarray()
    row = {i: list(model.item_ids_).index(i) for i in (0, 2, 3)}
    np.testing.assert_allclose([F[row[0], row[0]], F[row[2], row[2]]], indicator, rtol=1e-6)
    np.testing.assert_allclose(F[[row[0], row[2]], n:], given, rtol=1e-6)
    assert F[row[3], row[3]] == 1.0 and not F[row[3], n:].any()
    assert (np.count_nonzero(F[:, :n], axis=1) == 1).all()
    np.testing.assert_allclose(model.item_factors_, model.item_features_ @
                               model.item_feature_factors_, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("norm", ["side", "row"])
def test_feature_normalization_encodes_later_rows_as_the_fit(norm, tmp_path):
    """Rows given later follow the fit's rule: a known item's row embeds it as the fit
    does (its indicator included), a new item's row is scaled as one without indicator
    (under "row": its given features sum to 1), partial_fit's rows as the fit's; a saved
    and loaded model scores the same."""
    df, items = _normalization_data()
    model = WARPFactorizer(n_components=4, epochs=2, n_threads=1, random_state=0,
                           feature_weight=0.5, feature_normalization=norm).fit(
        df, item_features=items)
    factors, biases = model.item_embeddings(item_features=items)
    order = list(model.item_ids_)
    np.testing.assert_allclose(factors[[order.index(i) for i in range(20)]][:5],
                               model.item_factors_[[order.index(i) for i in range(5)]],
                               rtol=1e-5, atol=1e-6)
    new = pd.DataFrame({"item_id": [99], "genre": ["a|b"], "year": [2.0]})   # s = 4
    names = list(model.item_feature_names_)
    E, b = model.item_feature_factors_, model.item_feature_biases_
    scale = 0.5 / 4 if norm == "side" else 1 / 4
    parts = [names.index("genre=a"), names.index("genre=b")]
    expected = scale * (E[parts].sum(axis=0) + 2.0 * E[names.index("year")])
    got, got_bias = model.item_embeddings(item_features=new)
    np.testing.assert_allclose(got[0], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_bias[0], scale * (b[parts].sum() + 2 * b[names.index(
        "year")]), rtol=1e-5, atol=1e-6)
    path = model.save(tmp_path / "m.npz")
    loaded = WARPFactorizer.load(path)
    assert loaded.feature_normalization_ == norm
    users = df["user_id"].unique()[:5]
    for a, b_ in zip(loaded.item_embeddings(item_features=new),
                     model.item_embeddings(item_features=new)):
        assert np.array_equal(a, b_)
    for a, b_ in zip(loaded.recommend(users[0], k=5, item_features=new.assign(item_id=7)),
                     model.recommend(users[0], k=5, item_features=new.assign(item_id=7))):
        assert np.array_equal(a, b_)
    assert np.array_equal(loaded.item_factors_, model.item_factors_)
    # partial_fit's rows: item 1 described anew as "c" alone (s = 1)
    before = loaded.item_features_.copy()
    loaded.set_params(epochs=1)
    loaded.partial_fit(df, item_features=pd.DataFrame({"item_id": [1], "genre": ["c"],
                                                       "year": [0.0]}))
    F, r = loaded.item_features_.toarray(), order.index(1)
    expected_row = np.zeros(F.shape[1])
    expected_row[r], expected_row[names.index("genre=c")] = ((1.0, 0.5) if norm == "side"
                                                            else (1 / 1.5, 0.5 / 1.5))
    np.testing.assert_allclose(F[r], expected_row, rtol=1e-6)
    others = np.arange(F.shape[0]) != r
    assert np.array_equal(F[others], before.toarray()[others])


def test_feature_normalization_without_indicators():
    """identity_features=False: "row" and "side" at w = 1 both scale the given features
    to sum 1."""
    df, items = _normalization_data()
    fits = [WARPFactorizer(n_components=4, epochs=1, n_threads=1, random_state=0,
                           identity_features=False, feature_normalization=norm).fit(
        df, item_features=items) for norm in ("side", "row")]
    F = fits[0].item_features_
    np.testing.assert_allclose(np.asarray(F.sum(axis=1)).ravel(), 1.0, rtol=1e-6)
    assert np.array_equal(F.toarray(), fits[1].item_features_.toarray())


@pytest.mark.parametrize("value", ["l1", "None", None, 1, True])
def test_feature_normalization_is_checked(value):
    with pytest.raises((ValueError, TypeError),
                       match=r"feature_normalization must be one of \['none', 'row', 'side'\]"):
        WARPFactorizer(feature_normalization=value).fit(sp.random(10, 8, 0.5, format="csr"))


def test_feature_normalization_of_a_saved_model_is_checked(tmp_path):
    df, items = _normalization_data()
    model = WARPFactorizer(n_components=4, epochs=1, n_threads=1, random_state=0).fit(
        df, item_features=items)
    path = model.save(tmp_path / "m.npz")
    with np.load(path, allow_pickle=False) as f:
        data = dict(f)
    data["feature_normalization"] = np.array("l2")
    np.savez(tmp_path / "bad.npz", **data)
    with pytest.raises(ValueError, match="feature_normalization is 'l2'"):
        WARPFactorizer.load(tmp_path / "bad.npz")
    del data["feature_normalization"]                     # files from before: "none"
    np.savez(tmp_path / "old.npz", **data)
    assert WARPFactorizer.load(tmp_path / "old.npz").feature_normalization_ == "none"


@pytest.mark.parametrize("value", [-0.1, 1.5, float("nan")])
def test_feature_negatives_is_checked(value):
    X = make_interactions(30, 20, 150, random_state=0)
    with pytest.raises(ValueError, match="feature_negatives"):
        WARPFactorizer(epochs=1, feature_negatives=value).fit(X)


def test_feature_negatives_needs_item_features():
    """A share of feature negatives needs item features: a clear error without any
    features and with user features only; with item features, one-thread fits repeat
    bit for bit and differ from the uniform draws' fit."""
    X = make_interactions(40, 30, 300, random_state=0)
    users = sp.csr_matrix(np.eye(40, 3, dtype=np.float32))
    items = sp.csr_matrix((np.arange(30)[:, None] % 3 == np.arange(3)).astype(np.float32))
    params = dict(epochs=3, n_threads=1, random_state=0)
    with pytest.raises(ValueError, match="feature_negatives=0.5 .*item"):
        WARPFactorizer(feature_negatives=0.5, **params).fit(X)
    with pytest.raises(ValueError, match="feature_negatives=0.5 .*item_features"):
        WARPFactorizer(feature_negatives=0.5, **params).fit(X, user_features=users)
    fits = [WARPFactorizer(feature_negatives=p, **params).fit(X, item_features=items)
            for p in (0.5, 0.5, 0.0)]
    np.testing.assert_array_equal(fits[0].item_feature_factors_,
                                  fits[1].item_feature_factors_)
    assert not np.array_equal(fits[0].item_feature_factors_, fits[2].item_feature_factors_)
