"""tune(..., cold_start="items" / "users"): trials validated on held-out entities ranked
from their features alone. Every search here counts its budget on the work clock
(``clock="work"``, one thread), so it does not depend on the machine's load."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from test_cold_items import _catalogue, _users

from warprec import WARPFactorizer, WarprecWarning, tune
from warprec import _cold_tune
from warprec.evaluation import evaluate_cold_items, evaluate_cold_users
from warprec.splitting import split_cold_items, split_cold_users

BUDGET = 0.5   # seconds of counted work: a few dozen trials on the catalogue


@pytest.fixture(scope="module")
def catalogue():
    df, items = _catalogue(n_users=120, n_items=60)
    return df, items, _users(df)


def _spy(monkeypatch):
    """Record every WARPFactorizer.fit of the search: (users, items, features, model)."""
    calls = []
    real = WARPFactorizer.fit

    def fit(self, X, *args, **kwargs):
        out = real(self, X, *args, **kwargs)
        if self.user_ids_ is not None:   # (not the compilation's tiny fit, on a matrix)
            calls.append((set(self.user_ids_), set(self.item_ids_), kwargs, self))
        return out

    monkeypatch.setattr(WARPFactorizer, "fit", fit)
    return calls


def _search(df, kind, features, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WarprecWarning)
        return tune(df, time_budget=BUDGET, n_threads=1, random_state=3, clock="work",
                    cold_start=kind + "s", **{f"{kind}_features": features}, **kwargs)


@pytest.mark.parametrize("kind", ["item", "user"])
def test_split_is_split_cold_of_the_featured_entities(catalogue, kind):
    """The held-out entities are those split_cold_items / split_cold_users hold out of
    the entities with a feature row (tune's seed, validation_fraction); every positive
    of theirs is held out, and only featured entities are."""
    from warprec._plan import training_input

    df, items, users = catalogue
    features = items if kind == "item" else users
    column = f"{kind}_id"
    described = features[features[column].isin(pd.unique(df[column])[::2])]   # half
    matrix, user_ids, item_ids = training_input(df)
    split = _cold_tune.split(matrix, user_ids, item_ids, {f"{kind}_features": described},
                             kind + "s", 0.3, 5, "ndcg@10", 1)
    splitter = split_cold_items if kind == "item" else split_cold_users
    _, test = splitter(df, 0.3, random_state=5, **{kind + "s": described[column]})
    ids = item_ids if kind == "item" else user_ids
    assert set(ids[split.cold]) == set(test[column])
    assert set(ids[split.cold]) <= set(described[column])
    # whole entities: every positive of a held-out entity, and only theirs
    assert split.valid.nnz == len(test) and split.train.nnz == len(df) - len(test)
    held = split.valid.tocoo()
    assert set((held.col if kind == "item" else held.row).tolist()) == set(split.cold.tolist())
    trained = split.trial_input.item_ids if kind == "item" else split.trial_input.user_ids
    assert not set(trained) & set(test[column])


@pytest.mark.parametrize("kind", ["item", "user"])
def test_every_trial_trains_on_the_same_split_and_the_refit_on_all(catalogue, monkeypatch,
                                                                    kind):
    df, items, users = catalogue
    features = items if kind == "item" else users
    calls = _spy(monkeypatch)
    out = _search(df, kind, features)
    assert out.cold_start == kind + "s" and out.trials["trial"].nunique() > 3
    *trials, refit = calls
    side = 1 if kind == "item" else 0
    seen = {frozenset(call[side]) for call in trials}
    assert len(seen) == 1                                 # the same split every trial
    everything = set(df[f"{kind}_id"])
    held = everything - next(iter(seen))
    assert 0 < len(held) == round(0.1 * len(everything))
    assert refit[side] == everything                       # the refit: all of X
    assert refit[3] is out.best_model
    # the trials' feature rows are those of their entities; the refit has all of them
    assert len(trials[0][2][f"{kind}_features"]) == len(everything) - len(held)
    assert len(refit[2][f"{kind}_features"]) == len(features)


@pytest.mark.parametrize("kind", ["item", "user"])
def test_trial_scores_are_the_cold_evaluation_of_the_trials_models(catalogue, monkeypatch,
                                                                   kind):
    """Each trial call's best check (the model it leaves) scores what
    evaluate_cold_items / evaluate_cold_users give that model on the held-out entities;
    its per-user scores average to it."""
    df, items, users = catalogue
    features = items if kind == "item" else users
    column = f"{kind}_id"
    splitter = split_cold_items if kind == "item" else split_cold_users
    _, test = splitter(df, 0.1, random_state=3, **{kind + "s": features[column]})
    cold = features[features[column].isin(test[column])]
    evaluate = evaluate_cold_items if kind == "item" else evaluate_cold_users
    finished = []
    real = _cold_tune.ColdStopping.finish

    def finish(self, model):
        real(self, model)
        if len(finished) % 5 == 0:   # (every fifth call: the reference is slow)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", WarprecWarning)   # (users with no training)
                reference = evaluate(model, test, cold, k=10, metrics=["ndcg"], n_threads=1)
            assert max(model.validation_scores_) == pytest.approx(
                reference["ndcg@10"], rel=1e-9, abs=1e-12)
            per_user = self.split.values(model)
            assert per_user.size == reference["n_users"]
            assert per_user.mean() == pytest.approx(reference["ndcg@10"], rel=1e-9)
        assert model.best_epoch_ == model.epochs_done_
        finished.append(max(model.validation_scores_))

    monkeypatch.setattr(_cold_tune.ColdStopping, "finish", finish)
    out = _search(df, kind, features)      # (random_state=3)
    assert out.random_state == 3 and len(finished) > 3
    # every trial's row is its best call's score
    assert out.trials["score"].max() == pytest.approx(max(finished))


def test_matrix_input_and_matrix_features():
    """X as a matrix and the features as a matrix: the held-out items are featured rows
    (non-empty), the refit has every item."""
    rng = np.random.default_rng(0)
    n_users, n_items = 100, 50
    rows = np.repeat(np.arange(n_users), 8)
    cols = np.concatenate([rng.choice(np.arange(u % 5, n_items, 5), 8, replace=False)
                           for u in range(n_users)])
    X = sp.csr_matrix((np.ones(rows.size, np.float32), (rows, cols)),
                      shape=(n_users, n_items))
    genre = np.arange(n_items) % 5
    genre[:10] = -1       # no features for the first ten items
    keep = genre >= 0
    F = sp.csr_matrix((np.ones(keep.sum(), np.float32), (np.flatnonzero(keep), genre[keep])),
                      shape=(n_items, 5))
    split = _cold_tune.split(X, None, None, {"item_features": F}, "items", 0.2, 0, "ndcg@10",
                             1)
    assert split.cold.size == round(0.2 * 40) and (split.cold >= 10).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error", WarprecWarning)
        out = tune(X, time_budget=BUDGET, n_threads=1, clock="work", item_features=F,
                   cold_start="items", validation_fraction=0.2)
    assert out.best_model.item_factors_.shape[0] == n_items
    assert np.isfinite(out.trials["score"]).all()


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(cold_start="items"), ValueError, r"no item_features were given: pass "
                                           r"item_features="),
    (dict(cold_start="users", item_features="items"), ValueError,
     r"no user_features were given"),
    (dict(cold_start="item", item_features="items"), ValueError,
     r"cold_start.*'items'.*'users'"),
    (dict(cold_start="items", item_features="few"), ValueError, r"holds out none"),
    (dict(cold_start="items", item_features="items", validation_fraction=0.999), ValueError,
     r"holds out every item"),
    (dict(cold_start="items", item_features="repeated"), ValueError, r"several rows"),
    (dict(cold_start="items", item_features="short"), ValueError, r"needs one per item"),
])
def test_bad_combinations(catalogue, kwargs, error, match):
    df, items, _ = catalogue
    frames = {"items": items, "few": items.head(3),
              "repeated": pd.concat([items, items.head(1)]),
              "short": sp.identity(5, format="csr")}
    if "item_features" in kwargs:
        kwargs = dict(kwargs, item_features=frames[kwargs["item_features"]])
    before = df.copy()
    with pytest.raises(error, match=match):
        tune(df, time_budget=1, n_threads=1, clock="work", **kwargs)
    pd.testing.assert_frame_equal(df, before)


def test_default_is_the_warm_validation(catalogue):
    """cold_start=None is the warm search: the same trials as without the argument."""
    df, items, _ = catalogue
    runs = [tune(df, time_budget=BUDGET, n_threads=1, clock="work", item_features=items,
                 **extra) for extra in ({}, dict(cold_start=None))]
    pd.testing.assert_frame_equal(runs[0].trials.drop(columns="seconds"),
                                  runs[1].trials.drop(columns="seconds"))
    assert runs[0].cold_start is None and runs[0].best_params == runs[1].best_params


def test_cold_tune_does_at_least_as_well_on_new_items_as_the_defaults():
    """On a catalogue whose items' genres carry the users' taste, the model the
    cold-validated search returns ranks items it never saw at least as well as the
    defaults' hybrid model, and better than the items' features' popularity."""
    from warprec.baselines import FeaturePopularityRecommender

    df, items = _catalogue(n_users=200, n_items=80)
    train, test = split_cold_items(df, 0.25, random_state=1)
    warm = items[items["item_id"].isin(train["item_id"])]
    cold = items[items["item_id"].isin(test["item_id"])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WarprecWarning)
        out = tune(train, time_budget=1, n_threads=1, random_state=0, clock="work",
                   item_features=warm, cold_start="items")

        def ndcg(model):
            return evaluate_cold_items(model, test, cold, metrics=["ndcg"])["ndcg@10"]

        defaults = ndcg(WARPFactorizer(n_threads=1, random_state=0).fit(
            train, item_features=warm))
        popular = ndcg(FeaturePopularityRecommender().fit(train, item_features=warm))
        tuned = ndcg(out.best_model)
    assert tuned >= defaults - 1e-9 and tuned > popular


@pytest.mark.parametrize("kind", ["item", "user"])
def test_cli_tune_cold_start(catalogue, tmp_path, capsys, kind):
    from warprec.cli import main

    df, items, users = catalogue
    ratings, path = tmp_path / "ratings.csv", tmp_path / "features.csv"
    df.to_csv(ratings, index=False)
    (items if kind == "item" else users).to_csv(path, index=False)
    capsys.readouterr()
    code = main(["tune", str(ratings), "--time-budget", "1", "--clock", "work", "--threads",
                 "1", "--quiet", "--json", f"--{kind}-features", str(path), "--cold-start",
                 kind + "s"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    record = json.loads(captured.out)
    assert record["cold_start"] == kind + "s" and record["trials"]
    # without the features: a clear error
    code = main(["tune", str(ratings), "--time-budget", "1", "--clock", "work", "--quiet",
                 "--cold-start", kind + "s"])
    assert code != 0 and f"--{kind}-features" in capsys.readouterr().err
