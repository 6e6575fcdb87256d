"""warprec.tune: the time budget (final refit included), the trials table, the defaults
trial, the refit on all the data, reproducibility of the sampled configurations, input
forms, argument errors; and `warprec tune` / `warprec fit --early-stopping`."""

import json
import math
import time
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from warprec import WARPFactorizer, WarprecWarning, tune
from warprec._defaults import AUTO_EPOCHS
from warprec.datasets import make_interactions
from warprec.tuning import CCL_SEARCH_SPACE, SEARCH_SPACE, WARP_SEARCH_SPACE

#: The parameters of the default space: the WARP dict's, then the cosine loss's others.
DEFAULT_KEYS = ("learning_rate", "alpha", "max_sampled", "n_components", "rank_weighting",
                "max_violators", "loss", "negative_weight", "margin", "n_negatives", "dropout")
COLUMNS = ["trial", "bracket", "rung", *DEFAULT_KEYS, "max_epochs", "epochs_run", "epochs",
           "score", "metric", "seconds", "status"]


def _configs(trials, keys=DEFAULT_KEYS):
    """Each trial's configuration, in trial order ("-" for a parameter it lacks)."""
    first = trials.drop_duplicates("trial").sort_values("trial")
    return [tuple(r) for r in first[list(keys)].astype(object).fillna("-")
            .itertuples(index=False)]


@pytest.fixture(scope="module")
def X():
    """Small data, with every kernel tune uses compiled (or loaded) beforehand so that
    compilation does not eat the budgets below."""
    from warprec import tuning

    X = make_interactions(300, 150, 6000)
    for loss in ("warp", "ccl"):
        WARPFactorizer(loss=loss, epochs=2, early_stopping=True, n_threads=1).fit(X)
    # (what tune compiles first: the budgets below count it)
    tuning._compile_search(X, tuning._check_space(SEARCH_SPACE, X.shape[1]), 1, 0, "ndcg@10",
                           0.1, tuning._NoProgress())
    return X


@pytest.fixture(scope="module")
def result(X):
    """One search of 8 seconds of counted work (the work clock: the same search on any
    machine, loaded or not), and its wall time measured here."""
    tic = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("error", WarprecWarning)
        out = tune(X, time_budget=8, n_threads=1, random_state=0, clock="work")
    return out, time.perf_counter() - tic


def test_budget_is_respected_and_used(X, result):
    out, wall = result
    assert out.time_budget == 8.0 and out.clock == "work"
    assert out.elapsed_seconds <= wall
    # the search ends within about an epoch of its budget, and spends it on trials
    # rather than stopping early: past the defaults, through the zero-shot start's
    # configurations at least
    assert 0.7 * 8 <= out.budget_seconds <= 8 * 1.05, out.budget_seconds
    assert out.trials["trial"].nunique() >= 1 + len(_zero_shot(X))
    assert out.trials["seconds"].sum() <= out.budget_seconds


def test_wall_clock_budget_is_respected(X):
    """On the wall clock (the default) the call, compilation included, ends when it
    said it would; the margin allows for a loaded machine's slower epochs."""
    tic = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WarprecWarning)
        out = tune(X, time_budget=3, n_threads=1, random_state=0)
    wall = time.perf_counter() - tic
    assert out.clock == "wall" and out.elapsed_seconds <= wall
    assert out.budget_seconds == pytest.approx(out.elapsed_seconds, abs=0.05)
    assert out.compile_seconds + out.trials["seconds"].sum() <= out.elapsed_seconds
    assert wall <= 3 * 2 + 1, (wall, out.compile_seconds)


def _zero_shot(X):
    """The configurations tune starts its search with on X with the default space (the
    zero-shot start)."""
    from warprec import _portfolio, tuning

    space = tuning._check_space(SEARCH_SPACE, X.shape[1])
    defaults = WARPFactorizer().get_params()
    return [tuning._complete(p, space, defaults) for p in _portfolio.ranked(
        X, space, lambda p, sub: tuning._holds(p, sub, defaults["loss"]))]


def test_trials_table_and_defaults_first(X, result):
    out, _ = result
    trials = out.trials
    assert list(trials.columns) == COLUMNS
    first = trials.iloc[0]
    defaults = WARPFactorizer().get_params()
    assert first["trial"] == 0 and first["rung"] == 0 and first["bracket"] == 0
    assert all(first[k] == defaults[k] for k in DEFAULT_KEYS)
    assert (trials["metric"] == "ndcg@10").all() and out.metric == "ndcg@10"
    assert set(trials["status"]) <= {"stopped", "capped", "out-of-time", "diverged"}
    assert (trials["epochs"] <= trials["max_epochs"]).all()
    assert (trials["epochs_run"] >= 1).all()
    # successive halving: later rungs have fewer evaluations and higher epoch caps
    per_rung = trials.groupby("rung").agg(n=("trial", "size"), cap=("max_epochs", "max"))
    assert len(per_rung) >= 2
    assert per_rung["n"].is_monotonic_decreasing and per_rung["cap"].is_monotonic_increasing
    assert per_rung.loc[0, "cap"] == 12
    # a trial's score (its best so far) never decreases over its evaluations
    for _, rows in trials.groupby("trial"):
        assert rows["score"].is_monotonic_increasing
    # the zero-shot start comes first: the portfolio's configurations, complete
    first = _zero_shot(X)
    assert len(first) == 3
    assert _configs(trials)[1:4] == [tuple(config.get(k, "-") for k in DEFAULT_KEYS)
                                     for config in first]
    # both losses are searched (the zero-shot start has both); configurations sampled
    # from the default space stay in it: each from one of its dicts
    searched = trials[trials["trial"] > 0]
    assert 0 < (searched["loss"] == "ccl").sum() < len(searched)
    sampled = trials[trials["trial"] > len(first)]
    cosine = sampled["loss"] == "ccl"
    for rows, space in ((sampled[~cosine], WARP_SEARCH_SPACE),
                        (sampled[cosine], CCL_SEARCH_SPACE)):
        low, high = space["learning_rate"][1:]
        assert rows["learning_rate"].between(low, high).all()
        for name in DEFAULT_KEYS[1:]:
            if name in space:
                assert set(rows[name]) <= set(space[name])
            else:
                assert rows[name].isna().all()
    assert SEARCH_SPACE == (WARP_SEARCH_SPACE, CCL_SEARCH_SPACE)


def test_defaults_train_to_their_early_stopped_end_first(result):
    out, _ = result
    trials = out.trials
    first = trials[trials["trial"] == 0]
    assert list(first.index) == list(range(len(first)))      # before any other trial
    assert list(first["rung"]) == list(range(len(first)))
    assert first["status"].iloc[-1] == "stopped"
    assert (first["status"].iloc[:-1] == "capped").all()


def test_defaults_train_at_most_their_own_maximum(X):
    """The defaults trial stops at the defaults' own epoch maximum with early stopping
    (100), however long max_epochs and the patience are."""
    from warprec._defaults import AUTO_EPOCHS_EARLY_STOPPING

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WarprecWarning)
        out = tune(X, time_budget=3, n_threads=1, max_epochs=1000, n_iter_no_change=10**6,
                   clock="work")
    first = out.trials[out.trials["trial"] == 0]
    assert list(first["max_epochs"]) == [12, 36, AUTO_EPOCHS_EARLY_STOPPING]
    # each continuation starts from the best epoch so far (the patience never ends one)
    assert first["epochs"].iloc[1] + first["epochs_run"].iloc[2] == AUTO_EPOCHS_EARLY_STOPPING
    assert list(first["status"].iloc[:2]) == ["capped", "capped"]


def test_best_params_score_and_model(X, result):
    out, _ = result
    trials = out.trials
    chosen = trials[trials["trial"] == out.best_trial]
    assert out.best_score == chosen["score"].max()
    assert out.best_score >= trials.loc[trials["trial"] == 0, "score"].max()
    row = chosen.loc[chosen["score"].idxmax()]
    params = dict(out.best_params)
    if out.best_trial == 0:
        # the defaults, when kept, train as long as a plain fit of them does (or longer
        # if their validation still rose there), unless the budget ends the refit
        assert 1 <= params.pop("epochs") <= max(row["epochs"], AUTO_EPOCHS)
    else:
        assert params.pop("epochs") == row["epochs"]
    assert params == {**{k: row[k] for k in DEFAULT_KEYS if not pd.isna(row[k])},
                      "early_stopping": False}
    model = out.best_model
    assert model.train_matrix_.nnz == X.nnz and model.train_matrix_.shape == X.shape
    assert model.epochs == out.best_params["epochs"] == model.epochs_done_
    assert model.early_stopping is False and model.n_threads == 1 and model.random_state == 0
    assert all(model.get_params()[k] == v for k, v in out.best_params.items())
    assert not hasattr(model, "best_epoch_")


@pytest.fixture(scope="module")
def large():
    """Data on which WARPFactorizer early-stops by default (21,000 users with 2 or more
    positives), with a catalogue large for its positives: checks every 5 epochs."""
    from warprec import tuning

    X = make_interactions(21_000, 8_000, 110_000)
    # (what tune compiles first, for this shape: the budgets below count it)
    tuning._compile_search(X, tuning._check_space(SEARCH_SPACE, X.shape[1]), 1, 0, "ndcg@10",
                           0.1, tuning._NoProgress())
    return X


def test_large_data_keeps_the_chosen_trials_model(large, monkeypatch):
    """Where the estimator early-stops by default, the trials train as its early stopping
    does (its hold-out of at most VALIDATION_MAX_USERS users, its check interval), and
    the chosen trial's model at its best epoch is the result: no refit."""
    import numpy as np

    from warprec import _validation
    from warprec._state import draw_seed

    fits = []
    original = WARPFactorizer.fit

    def recording(self, *args, **kwargs):
        fits.append(self.early_stopping)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(WARPFactorizer, "fit", recording)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WarprecWarning)
        out = tune(large, time_budget=4, n_threads=1, random_state=0, clock="work")
    assert fits and all(stopping is True for stopping in fits)     # trials only
    model = out.best_model
    assert (model.train_matrix_ != large.tocsr()).nnz == 0
    assert model.early_stopping_ is True and model.validation_interval_ == 5
    assert model.epochs_done_ == out.best_params["epochs"] == model.epochs
    assert model.get_params() == WARPFactorizer(**out.best_params, n_threads=1,
                                                random_state=0).get_params()
    # the model is the best epoch's: it scores the best validation score on the split
    matrix = large.tocsr()
    held = _validation.early_stopping_holdout(matrix, 0.1, draw_seed(np.random.default_rng(0)))
    rows = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))
    assert 0 < np.unique(rows[held]).size <= 10_000
    monitor = _validation.Monitor(_validation.select(matrix, held),
                                  _validation.select(matrix, ~held), "ndcg@10",
                                  [model.seed_, 2], 1)
    assert monitor(model.user_factors_, model.item_factors_, model.item_biases_) \
        == out.best_score
    # first-rung epoch counts are check epochs: every 5, and the rung's last
    first = out.trials[out.trials["rung"] == 0]
    assert set(first["epochs"]) <= {5, 10, 12}


def test_large_data_dataframe_input_keeps_raw_ids(large):
    """The kept trial model (no refit) has the raw ids of a DataFrame input."""
    coo = large.tocoo()
    df = pd.DataFrame({"user_id": [f"u{r}" for r in coo.row],
                       "item_id": [f"i{c}" for c in coo.col]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WarprecWarning)
        out = tune(df, time_budget=2, n_threads=1, random_state=0, clock="work")
    model = out.best_model
    assert model.early_stopping_ is True and model.train_matrix_.nnz == len(df)
    assert set(model.user_ids_) == set(df["user_id"])
    items, _ = model.recommend("u0", k=5)
    assert len(items) == 5 and all(str(i).startswith("i") for i in items)
    assert not set(items) & set(df.loc[df["user_id"] == "u0", "item_id"])


def test_large_data_budget_before_the_first_check(large):
    with pytest.warns(WarprecWarning, match="first validation check"):
        out = tune(large, time_budget=0.05, n_threads=1, clock="work")
    model = out.best_model
    assert len(out.trials) == 1 and math.isnan(out.trials["score"].iloc[0])
    assert 1 <= model.epochs_done_ == out.best_params["epochs"] < 5
    assert model.train_matrix_.nnz == large.nnz


def test_same_seed_same_configurations(X):
    # both losses, the cosine loss's trials made cheap: with its default 100-500
    # negatives a winning cosine trial's refit reserve can end this budget after 2 trials;
    # (a given space: no zero-shot start, every configuration is drawn)
    space = [WARP_SEARCH_SPACE, dict(CCL_SEARCH_SPACE, n_negatives=[20])]

    def configs(seed):
        return _configs(tune(X, time_budget=1.5, n_threads=1, random_state=seed,
                             search_space=space, clock="work").trials)

    a, b, c = configs(3), configs(3), configs(4)
    assert len(a) >= 5
    assert a == b                       # (on the work clock: the whole search)
    assert a[0] == c[0]                 # the defaults
    assert a[1:] != c[1:len(a)]
    assert len(set(a)) == len(a)        # never the same configuration twice


def test_dataframe_input(X):
    coo = X.tocoo()
    frame = pd.DataFrame({"user_id": [f"u{u}" for u in coo.row], "item_id": coo.col + 1000})
    out = tune(frame, time_budget=1.5, n_threads=1, clock="work")
    model = out.best_model
    assert model.train_matrix_.nnz == len(frame)
    assert set(model.user_ids_) == set(frame["user_id"])
    items, _ = model.recommend("u0", k=5)
    assert len(items) == 5 and all(i >= 1000 for i in items)


def test_custom_space_is_exhausted_and_divergence_is_survived(X):
    """Two choices plus the defaults: the search stops early (no configuration twice);
    a diverging choice is recorded and never wins."""
    tic = time.perf_counter()
    out = tune(X, time_budget=30, n_threads=1, max_epochs=40,
               search_space={"learning_rate": [1e30, 0.02], "alpha": [0.0]})
    assert time.perf_counter() - tic < 10
    trials = out.trials
    assert list(trials.columns[3:5]) == ["learning_rate", "alpha"]
    assert trials["trial"].nunique() == 3
    diverged = trials[trials["status"] == "diverged"]
    assert list(diverged["learning_rate"]) == [1e30] and diverged["score"].isna().all()
    assert out.best_params["learning_rate"] != 1e30
    assert set(out.best_params) == {"learning_rate", "alpha", "epochs", "early_stopping"}
    assert trials["max_epochs"].max() <= 40


def test_space_with_several_violators(X):
    """``max_violators`` in a custom space, with the max_sampled choices that allow it."""
    out = tune(X, time_budget=30, n_threads=1, max_epochs=10,
               search_space={"max_violators": [1, 10], "max_sampled": [30]})
    trials = out.trials
    assert set(trials["max_violators"].dropna()) == {1, 10}
    assert (trials["status"] != "diverged").all()
    assert out.best_model.max_violators == out.best_params["max_violators"]


def test_cosine_loss_space(X, monkeypatch):
    """``CCL_SEARCH_SPACE``: its trials train the cosine loss and compete with the WARP
    defaults (trial 0), at one learning rate (no drop on a plateau, which the cosine loss
    makes by default when it early-stops)."""
    WARPFactorizer(loss="ccl", epochs=1, early_stopping=True, n_threads=1).fit(X)  # compile
    drops = []

    class Recording(WARPFactorizer):
        def fit(self, *args, **kwargs):
            super().fit(*args, **kwargs)
            drops.append((self.loss, self.early_stopping_, self.learning_rate_drop_))
            return self

    monkeypatch.setattr("warprec.model.WARPFactorizer", Recording)
    out = tune(X, time_budget=5, n_threads=1, max_epochs=6,
               search_space=dict(CCL_SEARCH_SPACE, n_negatives=[20]), clock="work")
    assert ("ccl", True, 1.0) in drops and all(drop == 1.0 for _, _, drop in drops)
    trials = out.trials
    assert (trials.loc[trials["trial"] > 0, "loss"] == "ccl").all()
    assert trials.loc[trials["trial"] == 0, "loss"].iloc[0] == "warp"
    assert (trials["status"] != "diverged").all()
    assert out.best_model.loss == out.best_params["loss"]


def test_list_of_spaces_draws_from_each(X):
    """A list of dicts: each configuration comes from one of them (scikit-learn's
    ParameterSampler convention); a sub-space's parameters are missing (NA) in the rows
    of the other's trials and keep the estimator's defaults there."""
    WARPFactorizer(loss="ccl", epochs=1, early_stopping=True, n_threads=1).fit(X)  # compile
    space = [{"max_sampled": [10, 30, 300]},
             {"loss": ["ccl"], "n_negatives": [20], "margin": [0.5, 0.7]}]
    out = tune(X, time_budget=30, n_threads=1, max_epochs=6, search_space=space)
    trials = out.trials.drop_duplicates("trial").set_index("trial")
    # 3 + 2 configurations (the defaults' max_sampled=100 is not in the first dict)
    assert len(trials) == 6
    assert trials.loc[0, "loss"] == "warp" and trials.loc[0, "max_sampled"] == 100
    warp = trials[trials["max_sampled"].notna()]
    assert sorted(warp["max_sampled"]) == [10, 30, 100, 300]
    assert trials["max_sampled"].dtype == "Int64"
    assert warp.loc[warp.index > 0, ["loss", "n_negatives", "margin"]].isna().all().all()
    cosine = trials[trials["loss"] == "ccl"]
    assert len(cosine) == 2 and cosine["max_sampled"].isna().all()
    assert sorted(cosine["margin"]) == [0.5, 0.7] and (cosine["n_negatives"] == 20).all()
    searched = set(out.best_params) - {"epochs", "early_stopping"}
    assert searched <= {"max_sampled", "loss", "n_negatives", "margin"}
    assert WARPFactorizer(**out.best_params).get_params()["epochs"] == out.best_params["epochs"]


def test_a_given_space_has_no_zero_shot_start(X):
    """The zero-shot start belongs to the default space: a space the user gives is
    searched by random draws from the first configuration on, even when it holds the
    portfolio's configurations."""
    out = tune(X, time_budget=2, n_threads=1, random_state=0,
               search_space=dict(WARP_SEARCH_SPACE), clock="work")
    first = [c for c in _zero_shot(X) if "loss" not in c]
    drawn = _configs(out.trials, keys=tuple(WARP_SEARCH_SPACE))[1:]
    assert drawn and not set(drawn) & {tuple(c[k] for k in WARP_SEARCH_SPACE) for c in first}
    assert all(isinstance(lr, float) for lr, *_ in drawn)   # drawn rates, never "auto"


def test_list_of_one_space_draws_as_the_dict(X):
    def configs(space):
        trials = tune(X, time_budget=1.5, n_threads=1, random_state=5,
                      search_space=space, clock="work").trials
        return _configs(trials, DEFAULT_KEYS[:6])

    a, b = configs(WARP_SEARCH_SPACE), configs([WARP_SEARCH_SPACE])
    assert len(a) >= 3 and a == b


def test_cli_tune_space_ccl(ratings_csv, capsys):
    WARPFactorizer(loss="ccl", epochs=1, early_stopping=True, n_threads=1).fit(
        make_interactions(300, 150, 6000))   # compiled before the budget starts
    code, out, err = _run(["tune", ratings_csv, "--time-budget", 3, "--threads", 1, "--clock",
                           "work", "--quiet", "--space", "ccl", "--json"], capsys)
    assert code == 0, err
    losses = {row["trial"]: row["loss"] for row in json.loads(out)["trials"]}
    assert losses[0] == "warp" and len(losses) > 1
    assert all(loss == "ccl" for trial, loss in losses.items() if trial > 0)


def test_cli_tune_spaces(ratings_csv, capsys):
    """The default space has configurations of both losses; a parameter a trial's dict
    lacks is null in the JSON and "-" in the table. ``--space warp`` has WARP's alone."""
    args = ["tune", ratings_csv, "--time-budget", 4, "--threads", 1, "--clock", "work", "--quiet"]
    code, out, err = _run(args + ["--json"], capsys)
    assert code == 0, err
    rows = json.loads(out)["trials"]
    losses = {row["trial"]: row["loss"] for row in rows}
    assert "ccl" in losses.values() and None in losses.values()
    for row in rows:
        if row["loss"] == "ccl":
            assert row["alpha"] is None and row["margin"] is not None
    code, out, err = _run(args, capsys)
    assert code == 0, err
    assert " - " in out
    code, out, err = _run(args + ["--space", "warp", "--json"], capsys)
    assert code == 0, err
    assert all("loss" not in row for row in json.loads(out)["trials"])


def test_tiny_budget_fits_the_defaults_and_warns(X):
    with pytest.warns(WarprecWarning, match="too small for the default parameters' "
                                            "validated fit"):
        out = tune(X, time_budget=0.01, n_threads=1)
    assert len(out.trials) == 1 and out.trials.iloc[0]["trial"] == 0
    assert out.best_params["learning_rate"] == WARPFactorizer().learning_rate
    assert out.best_params["epochs"] == out.best_model.epochs_done_ == 1
    assert out.best_model.train_matrix_.nnz == X.nnz
    assert out.elapsed_seconds < 2 and out.best_trial == 0


def _scaled(X, epoch_seconds):
    """X stacked on itself (its users repeated) until one training epoch of the defaults
    counts at least ``epoch_seconds`` on the work clock (one thread), so that the work
    budgets of the tests below end what they are meant to end."""
    from warprec._clock import WorkClock

    epochs = []
    WARPFactorizer(epochs=20, n_threads=1).fit(
        X, callback=lambda model, info: epochs.append(
            WorkClock(1).epoch(info, model.n_components, 1.0, 0.0)))
    # (WARP's epochs cost more as it learns: more draws before a violator)
    copies = math.ceil(epoch_seconds / float(np.max(epochs)))
    return sp.vstack([X] * copies, format="csr") if copies > 1 else X


def test_budget_short_of_the_defaults_validated_fit_goes_to_the_defaults():
    """A budget that affords some epochs on all of X but not the defaults' validated fit
    (their epochs with validation, then the refit): the defaults are fit on all of X until
    the budget ends, with a warning that names a budget for a search."""
    X = _scaled(make_interactions(2000, 1000, 60_000), 0.08)
    with pytest.warns(WarprecWarning, match=r"validated fit.*needs at least about") as record:
        out = tune(X, time_budget=1.0, n_threads=1, clock="work")
    assert len(out.trials) == 1 and out.trials.iloc[0]["status"] == "out-of-time"
    assert out.trials.iloc[0]["epochs_run"] <= 2
    model = out.best_model
    assert model.train_matrix_.nnz == X.nnz
    assert 1 <= out.best_params["epochs"] == model.epochs == model.epochs_done_
    assert model.epochs < AUTO_EPOCHS
    assert 0.6 <= out.budget_seconds <= 1.1, out.budget_seconds
    suggested = float(str(record[0].message).split("about ")[1].split(" s")[0])
    assert suggested > 1.0


def test_defaults_ended_by_the_budget_are_refit_for_the_rest_of_it(X, monkeypatch):
    """The budget, not early stopping, ends the defaults' trial (its validated fit is
    taken as affordable, patience is beyond the budget): their refit then trains until
    the budget ends, longer than the trial's best epoch count, which the refit reserve
    was sized for."""
    from warprec.tuning import _Search

    monkeypatch.setattr(_Search, "affords_defaults", lambda self, *args: True)
    budget = 1.5
    X = _scaled(X, 0.02)   # (the defaults' 100 epochs take more than the budget)
    with pytest.warns(WarprecWarning, match="too small for a search"):
        out = tune(X, time_budget=budget, n_threads=1, max_epochs=10**6,
                   n_iter_no_change=10**6, clock="work")
    trials = out.trials
    assert (trials["trial"] == 0).all() and trials["status"].iloc[-1] == "out-of-time"
    model = out.best_model
    assert out.best_params["epochs"] == model.epochs == model.epochs_done_
    assert model.epochs_done_ > trials["epochs"].max()
    assert 0.9 * budget <= out.budget_seconds <= budget * 1.05


def test_per_user_scores_average_to_the_trials_validation_score(X, monkeypatch):
    """The paired comparison uses the users and the best epoch that the trials' own
    validation scores are computed on."""
    import numpy as np

    from warprec.tuning import _Search

    seen = []
    original = _Search.per_user_scores

    def recording(self, model):
        values = original(self, model)
        seen.append((max(model.validation_scores_), float(np.mean(values))))
        return values

    monkeypatch.setattr(_Search, "per_user_scores", recording)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WarprecWarning)
        tune(X, time_budget=2.0, n_threads=1, clock="work")
    assert seen
    for score, mean in seen:
        assert mean == pytest.approx(score, rel=1e-9, abs=1e-12)


def _halving_search(available):
    """A search with rungs of 12 and 36 epochs, ``available()`` seconds left, and an
    ``evaluate`` that records its calls and lets early stopping end the trial."""
    from warprec.tuning import _Search

    search = _Search.__new__(_Search)
    search.rungs, search.setups, search.out_of_time, search.calls = [12, 36], [], False, []
    search.available = lambda extra_reserve=0.0: available

    def evaluate(trial, rung):
        search.calls.append((trial.index, rung))
        trial.done = True
    search.evaluate = evaluate
    return search


def test_a_promoted_trial_that_does_not_fit_uses_the_rest_of_the_budget():
    from warprec.tuning import _Trial

    def members():
        out = []
        for index, score in enumerate((0.3, 0.2, 0.1), start=1):
            trial = _Trial(index, 0, {})
            trial.score, trial.epochs_done, trial.seconds_per_epoch = score, 12, 1.0
            trial.model = object()
            out.append(trial)
        return out

    # 24 more epochs do not fit in 10 s, but a few do: the best promoted trial trains
    # until the reserve or early stopping ends it; when early stopping does, the search
    # is not out of time (the next bracket may still fit)
    search = _halving_search(10.0)
    search.halve(members())
    assert search.calls == [(1, 1)] and search.out_of_time is False
    # less than two epochs: skipped, out of time
    search = _halving_search(1.5)
    search.halve(members())
    assert search.calls == [] and search.out_of_time is True


def _search_with(defaults, challenger):
    """A search whose trials are the defaults (trial 0) and one challenger, with the
    given per-user validation scores."""
    import numpy as np

    from warprec.tuning import _Search, _Trial

    search = _Search.__new__(_Search)
    search.trials = []
    for index, values in enumerate((defaults, challenger)):
        trial = _Trial(index, 0, {})
        trial.per_user = np.asarray(values, dtype=float)
        trial.score = float(trial.per_user.mean())
        search.trials.append(trial)
    return search


def test_switch_z_shares_the_level_among_the_configurations():
    from statistics import NormalDist

    from warprec._defaults import TUNE_SWITCH_Z
    from warprec.tuning import switch_z

    assert switch_z(1) == pytest.approx(TUNE_SWITCH_Z) and switch_z(0) == switch_z(1)
    zs = [switch_z(n) for n in (1, 2, 10, 30, 150)]
    assert zs == sorted(zs) and zs[-1] > 3.5
    # the chance that the best of 30 independent null configurations passes stays at
    # about the one-sided level of a single test at TUNE_SWITCH_Z
    single = 1 - NormalDist().cdf(TUNE_SWITCH_Z)
    assert 1 - NormalDist().cdf(switch_z(30)) ** 30 == pytest.approx(single, rel=0.02)


def test_best_keeps_the_defaults_unless_the_gain_exceeds_its_noise():
    import numpy as np

    rng = np.random.default_rng(0)
    defaults = rng.uniform(0, 1, 400)
    noise = rng.normal(0, 0.2, 400)
    # a mean gain of 0.01 with a paired standard error of 0.01: noise, the defaults stay
    small = _search_with(defaults, defaults + 0.01 + noise - noise.mean())
    assert small.trials[1].score > small.trials[0].score
    assert small.best().index == 0
    assert small.selection["switched"] is False
    assert small.selection["standard_error"] == pytest.approx(0.01, rel=0.1)
    # a mean gain of 0.05: five standard errors, the challenger wins
    large = _search_with(defaults, defaults + 0.05 + noise - noise.mean())
    assert large.best().index == 1 and large.selection["switched"] is True
    # a challenger below the defaults never wins
    assert _search_with(defaults, defaults - 0.05).best().index == 0


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(time_budget=0), ValueError, "time_budget"),
    (dict(time_budget=-3.0), ValueError, "time_budget"),
    (dict(time_budget=math.nan), ValueError, "time_budget"),
    (dict(time_budget="10"), TypeError, "time_budget"),
    (dict(time_budget=True), TypeError, "time_budget"),
    (dict(metric="auc"), ValueError, "metric must be"),
    (dict(metric="ndcg"), ValueError, "metric must be"),
    (dict(validation_fraction=1.0), ValueError, "validation_fraction"),
    (dict(max_epochs=0), ValueError, "max_epochs"),
    (dict(n_iter_no_change=0), ValueError, "n_iter_no_change"),
    (dict(n_threads=0), ValueError, "n_threads"),
    (dict(clock="cpu"), ValueError, r"clock.*'wall'.*'work'"),
    (dict(random_state=-1), ValueError, "random_state"),
    (dict(random_state=1.5), TypeError, "random_state"),
    (dict(search_space={"bogus": [1]}), ValueError, r"unknown parameter 'bogus'.*learning_rate"),
    (dict(search_space={"epochs": [5]}), ValueError, "cannot set 'epochs'"),
    (dict(search_space={"learning_rate_drop": [0.3]}), ValueError,
     "cannot set 'learning_rate_drop'"),
    (dict(search_space={}), ValueError, "empty"),
    (dict(search_space=[("learning_rate", [0.1])]), TypeError, "dict"),
    (dict(search_space=[]), TypeError, "non-empty list"),
    (dict(search_space=[WARP_SEARCH_SPACE, {"epochs": [5]}]), ValueError,
     r"search_space\[1\] cannot set 'epochs'"),
    (dict(search_space={"alpha": [0.0], "loss": ["warp", "bogus"]}), ValueError,
     r"search_space\['loss'\] holds an invalid value 'bogus'"),
    (dict(search_space=[{"loss": ["ccl"], "alpha": [0.0, 0.01]}]), ValueError,
     r"search_space\[0\]\['alpha'\] holds an invalid value 0.01.*loss='ccl'"),
    (dict(search_space={"learning_rate": []}), ValueError, "empty list"),
    (dict(search_space={"learning_rate": 0.1}), TypeError, "list of choices"),
    (dict(search_space={"learning_rate": ("uniform", 0.01, 0.1)}), ValueError, "log-uniform"),
    (dict(search_space={"learning_rate": ("log-uniform", 0.1, 0.01)}), ValueError,
     "low < high"),
    (dict(search_space={"learning_rate": [0.05, -1.0]}), ValueError,
     r"invalid value -1.0.*learning_rate"),
    (dict(search_space={"rank_weighting": ["harmonic", "bogus"]}), ValueError,
     "invalid value 'bogus'"),
])
def test_bad_arguments(X, kwargs, error, match):
    with pytest.raises(error, match=match):
        tune(X, **{"time_budget": 1.0, "n_threads": 1, **kwargs})


def test_data_too_small_to_validate():
    import scipy.sparse as sp

    with pytest.raises(ValueError, match="too small to tune"):
        tune(sp.identity(20, format="csr"), time_budget=1.0, n_threads=1)
    with pytest.raises(ValueError, match="no positive"):
        tune(sp.csr_matrix((5, 5)), time_budget=1.0)


def test_exported_lazily():
    import warprec

    assert "tune" in warprec.__all__ and warprec.tune is tune


# ---------------------------------------------------------------------- command line
@pytest.fixture(scope="module")
def ratings_csv(X, tmp_path_factory):
    coo = X.tocoo()
    path = tmp_path_factory.mktemp("tune") / "ratings.csv"
    lines = ["userId,movieId,rating"] + [f"{u + 1},{i + 1},{4 + (u + i) % 2}"
                                         for u, i in zip(coo.row, coo.col)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(argv, capsys):
    from warprec.cli import main

    capsys.readouterr()
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_tune_table_and_model(ratings_csv, tmp_path, capsys):
    model_path = tmp_path / "best.npz"
    code, out, err = _run(["tune", ratings_csv, "--time-budget", 2, "--threads", 1, "--clock",
                           "work", "--quiet", "-o", model_path], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert "trial evaluations of" in lines[0] and "budget 2 s" in lines[0]
    header = lines[1].split()
    assert header[:2] == ["trial", "rung"] and "ndcg@10" in header
    chosen_line = next(ln for ln in lines if ln.startswith("chosen: trial "))
    table = lines[2:lines.index(chosen_line)]
    assert 1 <= len(table) <= 11
    marked = [row for row in table if row.split()[0].startswith("*")]
    assert len(marked) == 1                     # the chosen trial, listed and marked
    assert marked[0].split()[0] == "*" + chosen_line.split()[2].rstrip(",")
    # the best ten by score, then the chosen trial if it is not among them
    scores = [float(row.split()[header.index("ndcg@10")]) for row in table[:10]]
    assert scores == sorted(scores, reverse=True)
    assert len({row.split()[0].lstrip("*") for row in table}) == len(table)  # one per trial
    assert "  epochs = " in out and f"saved model to {model_path}" in out
    model = WARPFactorizer.load(model_path)
    assert model.train_matrix_.nnz == 6000 and model.early_stopping is False


def test_cli_tune_json(ratings_csv, capsys):
    code, out, err = _run(["tune", ratings_csv, "--time-budget", 1.5, "--threads", 1,
                           "--quiet", "--json", "--metric", "recall@5", "--min-rating", 5,
                           "--clock", "work"], capsys)
    assert code == 0, err
    record = json.loads(out)
    assert set(record) >= {"best_params", "best_score", "best_trial", "metric", "trials",
                           "elapsed_seconds", "clock", "budget_seconds"}
    assert record["metric"] == "recall@5" and record["clock"] == "work"
    # the best trial's score (not always the highest: the defaults are kept unless a
    # configuration beats them by more than its noise)
    assert record["best_score"] in {t["score"] for t in record["trials"]
                                    if t["trial"] == record["best_trial"]}
    assert record["trials"][0]["trial"] == 0 and set(record["trials"][0]) == set(COLUMNS)
    assert record["best_params"]["epochs"] >= 1
    assert record["budget_seconds"] <= 1.5 * 1.05


@pytest.mark.parametrize("argv, match", [
    (["--time-budget", 0], "--time-budget must be"),
    (["--time-budget", "nan"], "--time-budget must be"),
    (["--metric", "auc"], "metric must be"),
    (["--threads", 0], "n_threads"),
    (["--min-rating", 9], "no rows left"),
])
def test_cli_tune_bad_input(ratings_csv, capsys, argv, match):
    code, out, err = _run(["tune", ratings_csv, "--quiet", *argv], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("warprec tune: error: ")
    assert match in lines[0]


def test_cli_tune_clock_is_wall_or_work(ratings_csv, capsys):
    from warprec.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["tune", str(ratings_csv), "--quiet", "--clock", "cpu"])
    assert exit_.value.code == 2 and "invalid choice: 'cpu'" in capsys.readouterr().err


def test_cli_help_names_tune(capsys):
    from warprec.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    assert "tune" in capsys.readouterr().out
    for command in ("tune", "fit"):
        with pytest.raises(SystemExit):
            build_parser().parse_args([command, "--help"])
        text = capsys.readouterr().out
        assert ("--time-budget" in text) if command == "tune" else ("--early-stopping" in text)


def test_cli_fit_early_stopping(ratings_csv, tmp_path, capsys):
    path = tmp_path / "m.npz"
    code, out, err = _run(["fit", ratings_csv, "-o", path, "--early-stopping", "--epochs", 200,
                           "--threads", 1, "--quiet"], capsys)
    assert code == 0, err
    assert "early stopping kept epoch" in out
    model = WARPFactorizer.load(path)
    assert model.early_stopping is True
    assert 1 <= model.epochs_done_ < 200
    code, out, err = _run(["fit", ratings_csv, "-o", path, "--epochs", 3, "--threads", 1,
                           "--quiet"], capsys)
    assert code == 0 and "early stopping" not in out
    # (the library's default: on this small file, no early stopping)
    model = WARPFactorizer.load(path)
    assert model.early_stopping == "auto" and model.early_stopping_ is False
    code, out, err = _run(["fit", ratings_csv, "-o", path, "--epochs", 3, "--threads", 1,
                           "--quiet", "--no-early-stopping"], capsys)
    assert code == 0 and WARPFactorizer.load(path).early_stopping is False
    code, out, err = _run(["fit", ratings_csv, "-o", path, "--early-stopping",
                           "--no-early-stopping"], capsys)
    assert code != 0 and "contradict" in err
    code, out, err = _run(["fit", "--early-stopping", "--refit", ratings_csv, "-o", path,
                           "--epochs", 200, "--threads", 1, "--quiet"], capsys)
    assert code == 0, err
    assert "epochs, refit on all the positives" in out
    model = WARPFactorizer.load(path)
    assert model.early_stopping == "refit" and model.epochs_done_ == model.best_epoch_ < 200
    code, out, err = _run(["fit", ratings_csv, "-o", path, "--refit"], capsys)
    assert code != 0 and "--refit needs --early-stopping" in err


def test_kernel_configurations_cover_the_search_space():
    """The tuner compiles one kernel variant per mode the space's configurations (and the
    defaults) can run on X's shape: WARP with one and with several violators, and the
    cosine loss; larger factors than the caches hold prefetch."""
    from warprec.tuning import _check_space, _kernel_configurations

    space = _check_space(SEARCH_SPACE, 150)
    found = {(config.loss.name, config.violators, prefetch)
             for config, d, prefetch in _kernel_configurations(space, 300, 150)}
    assert found == {("warp", False, False), ("warp", True, False), ("ccl", False, False)}
    big = _kernel_configurations(_check_space(WARP_SEARCH_SPACE, 50_000), 100_000, 50_000)
    # d = 32 x 150,000 rows is 38 MB of factors and Adagrad state: every d prefetches
    assert {(config.violators, prefetch) for config, d, prefetch in big} == {
        (False, True), (True, True)}
    only_ccl = _kernel_configurations(_check_space(CCL_SEARCH_SPACE, 150), 300, 150)
    assert {config.loss.name for config, d, prefetch in only_ccl} == {"warp", "ccl"}


def test_compilation_counts_in_the_budget_and_in_no_trial(X, monkeypatch):
    """Compilation runs first, before any trial, and counts in the budget (the call ends
    when it said it would); no trial's time includes it, so it decides none."""
    from warprec import tuning

    compiled = []
    real = tuning.compile_configuration

    def slow(config, d, **kwargs):
        compiled.append((config.loss.name, config.violators))
        time.sleep(0.5)
        return real(config, d, **kwargs)

    monkeypatch.setattr(tuning, "compile_configuration", slow)
    with warnings.catch_warnings():
        warnings.simplefilter("error", WarprecWarning)   # (no "budget too small")
        out = tune(X, time_budget=6, n_threads=1, random_state=0)
    assert sorted(compiled) == [("ccl", False), ("warp", False), ("warp", True)]
    assert out.compile_seconds >= 1.5
    assert out.compile_seconds + out.trials["seconds"].sum() <= out.elapsed_seconds
    # the budget's clock ran from the call's start: the compilation is in what it used
    assert out.budget_seconds == pytest.approx(out.elapsed_seconds, abs=0.05)
    # the defaults trial ran to its end and configurations were tried after it
    assert out.trials["trial"].nunique() > 1
    # (a loaded machine's slower epochs can overrun a little more than a quiet one's)
    assert out.elapsed_seconds <= 6 * 1.5 + 1


# ------------------------------------------------------------------ side features
def test_tune_with_item_features_searches_their_weight(X):
    """With side features every trial and the refit fit the hybrid model, the default
    space is FEATURE_SEARCH_SPACE (feature_weight searched, no several violators, no
    zero-shot start)."""
    from warprec import tuning
    from warprec.tuning import FEATURE_SEARCH_SPACE

    rows = np.arange(X.shape[1])
    genres = sp.csr_matrix((np.ones(rows.size, np.float32), (rows, rows % 5)),
                           shape=(X.shape[1], 5))
    # (what tune compiles first, so that a cold cache does not eat the budget below)
    tuning._compile_search(X, tuning._check_space(FEATURE_SEARCH_SPACE, X.shape[1]), 1, 0,
                           "ndcg@10", 0.1, tuning._NoProgress(), hybrid=True)
    out = tune(X, time_budget=4, n_threads=1, random_state=0, item_features=genres, clock="work")
    trials = out.trials
    assert "feature_weight" in trials.columns and "max_violators" not in trials.columns
    drawn = trials[trials["trial"] > 0]
    assert len(drawn) and set(drawn["feature_weight"]) <= set(
        FEATURE_SEARCH_SPACE[0]["feature_weight"])
    model = out.best_model
    assert model.item_features_.shape == (X.shape[1], X.shape[1] + 5)
    assert model.feature_weight_ == out.best_params["feature_weight"]


@pytest.mark.parametrize("space, match", [
    (CCL_SEARCH_SPACE, "loss 'ccl'"),
    (dict(WARP_SEARCH_SPACE), "max_violators=10"),
])
def test_tune_with_features_refuses_what_the_hybrid_model_does_not_train(X, space, match):
    genres = sp.identity(X.shape[1], dtype=np.float32, format="csr")
    with pytest.raises(ValueError, match=match):
        tune(X, time_budget=1, search_space=space, item_features=genres)


def test_cli_tune_with_item_features(ratings_csv, tmp_path, capsys):
    frame = pd.read_csv(ratings_csv)
    items = tmp_path / "items.csv"
    ids = sorted(frame["movieId"].unique())
    pd.DataFrame({"movieId": ids, "genre": [f"g{i % 4}" for i in range(len(ids))]}).to_csv(
        items, index=False)
    code, out, err = _run(["tune", ratings_csv, "--time-budget", 3, "--threads", 1, "--clock",
                           "work", "--quiet", "--json", "--item-features", items], capsys)
    assert code == 0, err
    rows = json.loads(out)["trials"]
    assert all("feature_weight" in row for row in rows)


def test_hybrid_kernels_compile_before_the_trials():
    """compile_configuration(features=True) compiles the very kernel a hybrid fit runs:
    the fit adds no signature to it."""
    from warprec._kernels import train
    from warprec._plan import check_params
    from warprec._trainer import compile_configuration, kernel_mode

    config = check_params(WARPFactorizer().get_params())
    compile_configuration(config, 8, features=True)
    kernel = train.epoch_kernel(kernel_mode(config, features=True))
    before = len(kernel.signatures)
    assert before >= 1
    X = make_interactions(50, 40, 600, random_state=0)
    genres = sp.csr_matrix((np.ones(40, np.float32), (np.arange(40), np.arange(40) % 3)))
    WARPFactorizer(n_components=8, epochs=1, n_threads=1).fit(X, item_features=genres)
    assert len(kernel.signatures) == before
