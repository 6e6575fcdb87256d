"""Folding new users into a trained model: WARPFactorizer.fold_in and
recommend(..., recalculate_user=True)."""

import numpy as np
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
