"""New users and items for a trained model: folding users in (WARPFactorizer.fold_in,
recommend(..., recalculate_user=True)) and growing the model (partial_fit with new users
and items)."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from warprec import WARPFactorizer
from warprec.baselines import PopularityRecommender
from warprec.datasets import make_interactions
from warprec.metrics import evaluate_factors


@pytest.fixture(scope="module")
def split():
    """Training users, and new users' rows split into what they did (``seen``) and what
    they will do (``future``)."""
    X = make_interactions(700, 250, 14_000, rank=6, random_state=3).tocsr()
    gen = np.random.default_rng(0)
    old, new = X[:600], X[600:].tocoo()
    future = gen.random(new.nnz) < 0.25
    def part(mask):
        return sp.csr_matrix((np.ones(mask.sum(), np.float32), (new.row[mask], new.col[mask])),
                             shape=(100, X.shape[1]))
    return old, part(~future), part(future)


@pytest.fixture(scope="module")
def model(split):
    return WARPFactorizer(n_components=16, epochs=20, n_threads=1, random_state=0).fit(split[0])


def _ndcg(model, factors, seen, future):
    return evaluate_factors(factors, model.item_factors_, model.item_biases_, future, seen,
                            k=10, metrics=["ndcg"])["ndcg@10"]


def test_fold_in_ranks_new_users_as_well_as_training_them(split, model):
    """Folded-in users score close to the same users trained with the model (0.98 of
    their NDCG@10 here), and far above popularity (twice its NDCG@10)."""
    old, seen, future = split
    folded = _ndcg(model, model.fold_in(seen), seen, future)
    trained = WARPFactorizer(n_components=16, epochs=20, n_threads=1, random_state=0).fit(
        sp.vstack([old, seen]).tocsr())
    reference = evaluate_factors(trained.user_factors_[600:], trained.item_factors_,
                                 trained.item_biases_, future, seen, k=10,
                                 metrics=["ndcg"])["ndcg@10"]
    popular = PopularityRecommender().fit(old)
    popularity = _ndcg(popular, popular.fold_in(seen), seen, future)
    assert folded >= 0.9 * reference
    assert folded > 1.2 * popularity


def test_fold_in_is_reproducible_and_leaves_the_model_alone(split, model):
    seen = split[1]
    before = {name: getattr(model, name).copy() for name in
              ("user_factors_", "item_factors_", "item_biases_", "user_grad_sq_",
               "item_grad_sq_", "bias_grad_sq_")}
    first = model.fold_in(seen)
    assert first.dtype == np.float32 and first.shape == (100, 16)
    assert model.fold_in(seen).tobytes() == first.tobytes()
    for name, value in before.items():
        assert getattr(model, name).tobytes() == value.tobytes(), name
    alone = model.fold_in(seen[:1], epochs=40)   # one user, as a server would ask
    assert np.isfinite(alone).all() and np.abs(alone).sum() > 0


def test_rows_without_positives_get_zero_vectors(split, model):
    seen = split[1].tolil()
    seen[5, :] = 0
    factors = model.fold_in(seen.tocsr())
    assert not factors[5].any() and factors[4].any()
    items, _ = model.recommend([5], k=3, user_items=sp.csr_matrix((1, model.n_items_)),
                               recalculate_user=True)
    np.testing.assert_array_equal(items[0], np.argsort(-model.item_biases_, kind="stable")[:3])


def test_fold_in_epochs_and_input_checks(split, model):
    seen = split[1]
    short = model.fold_in(seen[:10], epochs=1)
    assert not np.array_equal(short, model.fold_in(seen[:10]))
    with pytest.raises(ValueError, match="one column per item"):
        model.fold_in(sp.csr_matrix((2, model.n_items_ + 1)))
    with pytest.raises(ValueError, match="epochs"):
        model.fold_in(seen, epochs=0)
    with pytest.raises(ValueError, match="negative"):
        model.fold_in(-seen)
    ordinal = WARPFactorizer(loss="ordinal", n_components=4, epochs=1, n_threads=1).fit(
        split[0])
    with pytest.raises(ValueError, match="ordinal"):
        ordinal.fold_in(seen)


# ----------------------------------------------------------------------- growing the model
def test_partial_fit_adds_users_and_items_of_a_larger_matrix():
    """Rows and columns beyond the model's are new users and items: they get parameters
    initialised as in fit; rows of users without positives in X keep every bit."""
    X = make_interactions(120, 50, 1500, rank=3, random_state=2).tocsr()
    model = WARPFactorizer(n_components=8, epochs=2, n_threads=1, random_state=0)
    model.fit(X[:100, :40])
    before = {name: getattr(model, name).copy() for name in ("user_factors_",
                                                             "user_grad_sq_")}
    only_new = sp.vstack([sp.csr_matrix((100, 50), dtype=np.float32), X[100:]]).tocsr()
    model.partial_fit(only_new)
    assert model.user_factors_.shape == (120, 8) and model.item_factors_.shape == (50, 8)
    assert model.item_biases_.shape == model.bias_grad_sq_.shape == (50,)
    assert model.train_matrix_.shape == (120, 50)
    for name, value in before.items():   # old users had nothing to train on
        assert getattr(model, name)[:100].tobytes() == value.tobytes()
    assert (model.user_grad_sq_[100:] > 1).any()   # new users trained from fresh state
    assert np.isfinite(model.item_factors_[40:]).all() and model.item_factors_[40:].any()
    items, _ = model.recommend(110, k=5)
    assert not set(items.tolist()) & set(X[110].indices.tolist())


def test_partial_fit_appends_unseen_raw_ids():
    X = make_interactions(60, 30, 700, rank=3, random_state=4).tocoo()
    frame = pd.DataFrame({"user_id": [f"u{r:02d}" for r in X.row], "item_id": X.col * 10})
    first = frame[(frame.user_id < "u50") & (frame.item_id < 200)]
    model = WARPFactorizer(n_components=4, epochs=2, n_threads=1).fit(first)
    users, items = model.user_ids_.copy(), model.item_ids_.copy()
    model.partial_fit(frame)
    np.testing.assert_array_equal(model.user_ids_[:len(users)], users)
    np.testing.assert_array_equal(model.item_ids_[:len(items)], items)
    assert model.user_ids_[len(users):].tolist() == sorted(set(frame.user_id) - set(users))
    assert model.item_ids_[len(items):].tolist() == sorted(set(frame.item_id) - set(items))
    assert model.user_factors_.shape[0] == len(model.user_ids_) == 60
    assert model.recommend("u55", k=3)[0].shape == (3,)


def test_partial_fit_refuses_what_it_cannot_align():
    X = make_interactions(40, 20, 300, rank=2, random_state=5).tocsr()
    model = WARPFactorizer(n_components=4, epochs=1, n_threads=1).fit(X)
    with pytest.raises(ValueError, match="must cover them"):
        model.partial_fit(X[:30])
    coo = X.tocoo()
    with pytest.raises(ValueError, match="form of the first fit"):
        model.partial_fit(pd.DataFrame({"user_id": coo.row, "item_id": coo.col}))
    named = WARPFactorizer(n_components=4, epochs=1, n_threads=1).fit(
        pd.DataFrame({"user_id": coo.row, "item_id": coo.col}))
    with pytest.raises(TypeError, match="ids are strings but the model's are numbers"):
        named.partial_fit(pd.DataFrame({"user_id": [f"u{r}" for r in coo.row],
                                        "item_id": coo.col}))
