"""Thread safety of inference: concurrent calls on one fitted model answer exactly like
serial calls, leave Numba's thread count alone, and never crash the process (also with
Numba's non-thread-safe ``workqueue`` layer)."""

import os
import random
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numba
import pandas as pd
import pytest

from warprec import WARPFactorizer
from warprec._threads import run_in_threads
from warprec.datasets import make_interactions

MAX_THREADS = numba.config.NUMBA_NUM_THREADS


@pytest.fixture(scope="module")
def model():
    X = make_interactions(300, 150, 5000, rank=4, random_state=5).tocoo()
    frame = pd.DataFrame({"user_id": [f"u{u}" for u in X.row],
                          "item_id": [f"i{i}" for i in X.col]})
    return WARPFactorizer(n_components=16, epochs=3, random_state=1).fit(frame)


def _calls(model):
    """(name, thunk) pairs covering the inference API."""
    users = list(model.user_ids_)
    items = list(model.item_ids_)
    gen = random.Random(0)
    calls = []
    for n_threads in sorted({1, MAX_THREADS}):
        calls += [
            ("recommend batch", lambda t=n_threads: model.recommend(users, k=10, n_threads=t)),
            ("recommend one", lambda t=n_threads: model.recommend(users[7], k=25, n_threads=t)),
            ("recommend filtered", lambda t=n_threads: model.recommend(
                users[:50], k=5, filter_items=items[:20], items=items[10:90], n_threads=t)),
            ("recommend seen", lambda t=n_threads: model.recommend(
                users[::3], k=200, exclude_seen=False, n_threads=t)),
            ("similar_items", lambda t=n_threads: model.similar_items(items, k=8,
                                                                      n_threads=t)),
        ]
    pairs_u = [gen.choice(users) for _ in range(500)]
    pairs_i = [gen.choice(items) for _ in range(500)]
    calls += [("predict", lambda: model.predict(pairs_u, pairs_i)),
              ("predict one", lambda: model.predict(users[3], items))]
    return calls


def _same(a, b):
    if isinstance(a, tuple):
        return all(_same(x, y) for x, y in zip(a, b))
    return a.dtype == b.dtype and a.shape == b.shape and a.tolist() == b.tolist()


def test_concurrent_calls_answer_like_serial_calls(model):
    calls = _calls(model)
    serial = [call() for _, call in calls]
    jobs = [index for index in range(len(calls)) for _ in range(6)]
    random.Random(1).shuffle(jobs)
    before = numba.get_num_threads()
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda index: (index, calls[index][1]()), jobs))
    for index, result in results:
        assert _same(result, serial[index]), calls[index][0]
    assert numba.get_num_threads() == before


@pytest.mark.skipif(MAX_THREADS < 2, reason="needs 2 Numba threads")
def test_answers_do_not_depend_on_n_threads(model):
    users = list(model.user_ids_)
    one = model.recommend(users, k=10, n_threads=1)
    two = model.recommend(users, k=10, n_threads=2)
    assert _same(one, two)
    assert _same(model.similar_items(list(model.item_ids_), k=5, n_threads=1),
                 model.similar_items(list(model.item_ids_), k=5, n_threads=2))


def test_numba_thread_count_is_restored_per_thread(model):
    """recommend sets Numba's thread count (thread-local in Numba) for its own kernel call
    and restores the caller's value, in the main thread and in worker threads."""
    numba.set_num_threads(1)
    try:
        model.recommend(model.user_ids_[0], k=3, n_threads=MAX_THREADS)
        assert numba.get_num_threads() == 1
    finally:
        numba.set_num_threads(MAX_THREADS)

    def worker(n_threads):
        numba.set_num_threads(1)
        model.recommend(list(model.user_ids_[:20]), k=3, n_threads=n_threads)
        model.similar_items(model.item_ids_[0], k=3, n_threads=n_threads)
        return numba.get_num_threads()

    with ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(worker, [MAX_THREADS, 1] * 4)) == [1] * 8
    assert numba.get_num_threads() == MAX_THREADS


def test_concurrent_single_thread_fits_are_independent():
    """Several models trained at once from Python threads (n_threads=1 each) give the same
    bits as trained one after the other."""
    X = make_interactions(100, 60, 1500, rank=3, random_state=2)

    def fit(seed):
        return WARPFactorizer(n_components=8, epochs=3, n_threads=1,
                              random_state=seed).fit(X).item_factors_

    serial = [fit(seed) for seed in range(4)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        parallel = list(pool.map(fit, list(range(4)) * 2))
    for seed, factors in enumerate(parallel):
        assert factors.tobytes() == serial[seed % 4].tobytes()


def test_concurrent_multi_thread_fits_visit_every_positive():
    """Two-thread fits started at once from several Python threads share the pool of
    training threads: every epoch of each still visits all positives once."""
    X = make_interactions(200, 80, 4000, rank=3, random_state=4)

    def fit(seed):
        model = WARPFactorizer(n_components=8, epochs=4, n_threads=2, random_state=seed)
        model.fit(X)
        return [info["samples"] for info in model.history_], model._parameters_usable()

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(fit, range(8)))
    for samples, usable in results:
        assert samples == [X.nnz] * 4
        assert usable


def test_run_in_threads_runs_the_tasks_at_once():
    n = 3
    barrier = threading.Barrier(n, timeout=60)   # times out unless all n tasks overlap

    def task(t):
        barrier.wait()
        return t, threading.get_ident()

    out = run_in_threads(task, n)
    assert [t for t, _ in out] == list(range(n))
    assert out[0][1] == threading.get_ident()        # task 0 runs in the calling thread
    assert len({ident for _, ident in out}) == n
    assert run_in_threads(lambda t: (t, threading.get_ident()), 1) == [
        (0, threading.get_ident())]


def test_run_in_threads_raises_only_after_every_task_ended():
    ended = []

    def task(t):
        try:
            if t == 0:
                raise KeyError("task 0")
            time.sleep(0.2)
            if t == 2:
                raise ValueError("task 2")
            return t
        finally:
            ended.append(t)

    with pytest.raises(KeyError, match="task 0"):   # the first failure in task order
        run_in_threads(task, 3)
    assert sorted(ended) == [0, 1, 2]
    ended.clear()
    with pytest.raises(ValueError, match="task 2"):
        run_in_threads(lambda t: task(t + 1), 2)
    assert sorted(ended) == [1, 2]


_FORK_SCRIPT = textwrap.dedent("""
    import multiprocessing
    from warprec import WARPFactorizer
    from warprec.datasets import make_interactions

    X = make_interactions(200, 80, 4000, rank=3, random_state=4)

    def fit(seed):
        model = WARPFactorizer(n_components=8, epochs=2, n_threads=2, random_state=seed)
        return model.fit(X)._parameters_usable()

    assert fit(0)          # the parent's pool of training threads exists now
    with multiprocessing.get_context("fork").Pool(2) as pool:
        print(pool.map_async(fit, range(2)).get(timeout=120))
""")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_multi_thread_fits_work_in_forked_children():
    """After a parallel fit the process can fork and the children can train: warprec asks
    Numba for a fork-safe threading layer (GNU OpenMP, Numba's default on Linux, would
    terminate the process at the fork), and a child's pool of worker threads starts
    afresh."""
    proc = subprocess.run([sys.executable, "-c", _FORK_SCRIPT], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[True, True]"


_WORKQUEUE_SCRIPT = textwrap.dedent("""
    from concurrent.futures import ThreadPoolExecutor
    import numba
    import numpy as np
    from warprec import WARPFactorizer
    from warprec.datasets import make_interactions

    X = make_interactions(200, 100, 3000, rank=3, random_state=1)
    model = WARPFactorizer(n_components=8, epochs=1).fit(X)
    expected = model.recommend(np.arange(200), k=5)

    def work(i):
        if i % 3 == 0:
            return np.array_equal(model.recommend(np.arange(200), k=5)[0], expected[0])
        if i % 3 == 1:
            return model.similar_items(np.arange(100), k=3)[0].shape == (100, 3)
        return WARPFactorizer(n_components=4, epochs=1).fit(X)._parameters_usable()

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(work, range(60)))
    print(numba.threading_layer())
""")


def test_workqueue_threading_layer_does_not_abort():
    """Numba's workqueue layer (used when neither TBB nor OpenMP is installed) aborts the
    process on concurrent kernel launches; warprec serialises its kernels then."""
    env = dict(os.environ, NUMBA_THREADING_LAYER="workqueue")
    proc = subprocess.run([sys.executable, "-c", _WORKQUEUE_SCRIPT], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "workqueue"


_LAYER_SCRIPT = textwrap.dedent("""
    import numba
    from warprec import WARPFactorizer
    from warprec.datasets import make_interactions

    WARPFactorizer(n_components=4, epochs=1).fit(make_interactions(50, 30, 300, rank=2))
    print(numba.threading_layer())
""")


@pytest.mark.parametrize("chosen", [None, "workqueue", "omp"])
def test_threading_layer_is_fork_safe_unless_the_user_chose_one(chosen):
    """Without a choice of the user's, warprec's first kernel asks Numba for a fork-safe
    layer (never GNU OpenMP); a layer set in NUMBA_THREADING_LAYER is used as it is."""
    env = dict(os.environ)
    env.pop("NUMBA_THREADING_LAYER", None)
    if chosen is not None:
        env["NUMBA_THREADING_LAYER"] = chosen
    proc = subprocess.run([sys.executable, "-c", _LAYER_SCRIPT], env=env,
                          capture_output=True, text=True, timeout=300)
    if chosen == "omp" and proc.returncode != 0 and "OpenMP" in proc.stderr:
        pytest.skip("no OpenMP threading layer in this Numba")
    assert proc.returncode == 0, proc.stderr[-2000:]
    layer = proc.stdout.strip()
    if chosen is None:
        assert layer in ("tbb", "omp", "workqueue")
        if layer == "omp":  # only a fork-safe OpenMP runtime, never GNU's
            from numba.np.ufunc import omppool
            assert omppool.openmp_vendor != "GNU"
    else:
        assert layer == chosen
