"""The work clock of ``tune(..., clock="work")`` (warprec._clock): its arithmetic, and a
search that does not depend on the machine's speed or load."""

import time
import warnings

import numpy as np
import pytest

from warprec import WARPFactorizer, WarprecWarning, tune
from warprec._clock import (WallClock, WorkClock, check_units, feature_rows, setup_units,
                            training_units)
from warprec._defaults import (WORK_CHECK_SECONDS, WORK_ROW_SECONDS, WORK_SAMPLE_SECONDS,
                               WORK_SETUP_SECONDS)
from warprec.datasets import make_interactions


def test_units_count_samples_negatives_updates_pairs_and_positives():
    info = dict(samples=1000, mean_trials=2.5, updates=400, seconds=9.0)
    # the samples, and d x feature rows x (scored negatives + updates)
    assert training_units(info, 64) == (1000, 64 * (2500 + 400))
    assert training_units(info, 64, 3.0) == (1000, 3 * 64 * (2500 + 400))
    assert check_units(200, 50, 8) == 8 * 200 * 50
    assert setup_units(12345) == 12345


def test_work_clock_moves_only_by_what_it_counts():
    clock = WorkClock(2)
    assert clock.now() == 0.0
    time.sleep(0.01)
    assert clock.now() == 0.0                    # the wall does not move it
    clock.start_fit(1000)
    assert clock.now() == pytest.approx(1000 * WORK_SETUP_SECONDS)
    info = dict(samples=1000, mean_trials=2.5, updates=400, seconds=9.0)
    train = clock.epoch(info, 64, 1.0, checked_pairs=5000.0)   # no check: no validation
    assert train == pytest.approx((WORK_SAMPLE_SECONDS * 1000
                                   + WORK_ROW_SECONDS * 64 * 2900) / 2)
    assert clock.now() == pytest.approx(1000 * WORK_SETUP_SECONDS + train)
    before = clock.now()
    train = clock.epoch(dict(info, validation=0.3), 64, 1.0, checked_pairs=5000.0)
    assert clock.now() - before == pytest.approx(train + WORK_CHECK_SECONDS * 64 * 5000 / 2)
    # the wall clock reports the trainer's seconds and reads perf_counter
    assert WallClock().epoch(info, 64, 1.0, 0.0) == 9.0
    assert abs(WallClock().now() - time.perf_counter()) < 1.0


def test_feature_rows_of_plain_and_hybrid_models():
    X = make_interactions(60, 40, 600)
    assert feature_rows(WARPFactorizer(n_components=4, epochs=1, n_threads=1).fit(X)) == 1.0
    import scipy.sparse as sp
    two = sp.csr_matrix((np.ones(80, np.float32), (np.repeat(np.arange(40), 2),
                                                   np.tile([0, 1], 40))), shape=(40, 2))
    hybrid = WARPFactorizer(n_components=4, epochs=1, n_threads=1).fit(X, item_features=two)
    # the identity feature and the two given ones
    assert feature_rows(hybrid) == 3.0


@pytest.fixture(scope="module")
def X():
    X = make_interactions(300, 150, 6000)
    WARPFactorizer(epochs=2, early_stopping=True, n_threads=1).fit(X)   # (compiled)
    return X


#: an unbounded space (a log-uniform rate), with cheap configurations
SPACE = {"learning_rate": ("log-uniform", 0.01, 0.1), "max_sampled": [10, 30],
         "n_components": [16, 32]}


def _search(X, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WarprecWarning)
        return tune(X, time_budget=1.0, n_threads=1, random_state=1,
                    search_space=SPACE, clock="work", **kw)


def test_a_loaded_machine_makes_the_same_search(X, monkeypatch):
    """Every epoch made much slower (as on a loaded machine) changes nothing on the
    work clock: the same trials, epochs, scores, counted seconds and choice."""
    from warprec._kernels import train as kernels

    quiet = _search(X)
    real = kernels.train_epoch

    def slow(*args, **kwargs):
        time.sleep(0.002)
        return real(*args, **kwargs)

    monkeypatch.setattr(kernels, "train_epoch", slow)
    loaded = _search(X)
    assert loaded.elapsed_seconds > quiet.elapsed_seconds
    columns = [c for c in quiet.trials.columns]
    assert quiet.trials[columns].equals(loaded.trials[columns])
    assert quiet.best_params == loaded.best_params
    assert quiet.budget_seconds == loaded.budget_seconds
    for name in ("user_factors_", "item_factors_", "item_biases_"):
        np.testing.assert_array_equal(getattr(quiet.best_model, name),
                                      getattr(loaded.best_model, name))


def test_work_budget_ends_the_search_and_counts_the_final_fit(X):
    """A larger work budget runs more of the search; each ends within about an epoch of
    its budget, the final fit on all of X counted."""
    small = _search(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WarprecWarning)
        large = tune(X, time_budget=3.0, n_threads=1, random_state=1, search_space=SPACE,
                     clock="work")
    assert len(large.trials) > len(small.trials)
    for out, budget in ((small, 1.0), (large, 3.0)):
        assert out.budget_seconds <= budget * 1.05
        assert out.trials["seconds"].sum() < out.budget_seconds   # + the final fit
