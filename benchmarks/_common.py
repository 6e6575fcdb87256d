"""Shared helpers: timing, peak-memory sampling, scoring with warprec's evaluator."""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager

import numpy as np

N_COMPONENTS = 64

#: Seconds of idle time between the timed parts of different libraries (outside every
#: clock): longer than the spin of an OpenMP worker after a parallel region (libgomp's
#: default wait policy; about 10 ms here, longer on CPUs with a slower ``pause``), which
#: would otherwise share the cores with the next library's timed work (see _paired.py).
SETTLE_SECONDS = 0.05


def now():
    return time.perf_counter()


def cpu_now():
    """CPU seconds (user + system) used so far by all threads of this process. On a busy
    machine this is less distorted than wall time by threads waiting for a core."""
    return time.process_time()


def timed_epochs(step, epochs, eval_epochs, evaluate, mem, clock=0.0):
    """Run ``step()`` once per epoch (one epoch of a library that trains incrementally),
    timing each call; ``evaluate()`` (quality dict) runs after the epochs in
    ``eval_epochs`` with memory sampling paused and outside the clock.

    Returns ``(curve, epoch_wall, clock, cpu)``: the quality checkpoints with the training
    seconds so far (starting from ``clock``), each epoch's wall seconds, the final clock
    and the CPU seconds of the epochs.
    """
    eval_epochs = set(eval_epochs)
    curve, epoch_wall, cpu = [], [], 0.0
    for epoch in range(1, epochs + 1):
        c, tic = cpu_now(), now()
        step()
        dt = now() - tic
        cpu += cpu_now() - c
        epoch_wall.append(dt)
        clock += dt
        if epoch in eval_epochs:
            with mem.paused():
                quality = evaluate()
            curve.append(dict(epoch=epoch, seconds=clock, **quality))
    return curve, epoch_wall, clock, cpu


class PeakRSS:
    """Peak resident set size (psutil RSS) of this process while the block runs.

    A daemon thread samples ``psutil.Process().memory_info().rss`` every ``interval``
    seconds (the training and scoring kernels of all three libraries release the GIL, so
    it keeps sampling while they run). ``peak_mb`` is the highest sample, ``delta_mb`` the
    peak minus the RSS at entry: memory the block needed on top of what was already
    resident. Caveats: pages freed earlier and reused by the allocator are not counted
    again, so ``delta_mb`` can understate; spikes shorter than ``interval`` can be missed.
    Falls back to ``tracemalloc`` (numpy/Python allocations only) without psutil; the
    ``method`` attribute says which was used.
    """

    def __init__(self, interval=0.002):
        self.interval = interval
        self.peak_mb = self.delta_mb = self.start_mb = float("nan")
        self._paused = False

    def __enter__(self):
        try:
            import psutil
        except ImportError:
            import tracemalloc
            self.method = "tracemalloc (numpy and Python allocations only)"
            self._tm = tracemalloc
            tracemalloc.start()
            self.start_mb = 0.0
            return self
        self.method = "psutil RSS, sampled every 2 ms"
        self._tm = None
        proc = psutil.Process(os.getpid())
        self._rss = lambda: proc.memory_info().rss
        self._start = self._peak = self._rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.is_set():
            if not self._paused:
                self._peak = max(self._peak, self._rss())
            time.sleep(self.interval)

    @contextmanager
    def paused(self):
        """Do not count what happens inside (e.g. evaluation between epochs)."""
        if self._tm is None:
            self._peak = max(self._peak, self._rss())
        self._paused = True
        try:
            yield
        finally:
            self._paused = False

    def __exit__(self, *exc):
        mb = 1024.0 ** 2
        if self._tm is not None:
            _, peak = self._tm.get_traced_memory()
            self._tm.stop()
            self.peak_mb = self.delta_mb = peak / mb
            return False
        self._peak = max(self._peak, self._rss())
        self._stop.set()
        self._thread.join()
        self.start_mb = self._start / mb
        self.peak_mb = self._peak / mb
        self.delta_mb = (self._peak - self._start) / mb
        return False

    def as_dict(self):
        return dict(peak_rss_mb=round(self.peak_mb, 1), rss_increase_mb=round(self.delta_mb, 1),
                    memory_method=self.method)


class Scorer:
    """NDCG@10 and Recall@20 of any factor model, always with warprec.metrics.evaluate_factors.

    Scores ``U @ V.T + b`` for the dataset's evaluation users, excludes their train items
    and counts relevant items with the dataset's ``n_relevant`` (see ``_data.py``).
    """

    def __init__(self, dataset, n_threads):
        users = dataset.eval_users
        if users is None:
            users = np.flatnonzero(dataset.n_relevant > 0)
        self.users = users
        self.test = dataset.test[users]
        self.train = dataset.train[users]
        self.n_relevant = dataset.n_relevant[users]
        self.n_threads = n_threads

    def __call__(self, user_factors, item_factors, item_biases):
        from warprec.metrics import evaluate_factors

        U = np.ascontiguousarray(user_factors[self.users], dtype=np.float32)
        V = np.ascontiguousarray(item_factors, dtype=np.float32)
        b = None if item_biases is None else np.ascontiguousarray(item_biases, np.float32)
        out = {}
        # BLAS limited to one thread: after a multi-threaded call OpenBLAS's workers spin
        # for a while, and the training epochs that follow a checkpoint then share the
        # cores with them (measured: warprec's 60 ML-100K epochs with a checkpoint every
        # 5 took 1.35 s of kernel time instead of 0.76 s). Checkpoints are not timed.
        with blas_limit(1):
            for metric, k in (("ndcg", 10), ("recall", 20)):
                res = evaluate_factors(U, V, b, self.test, self.train, k=k, metrics=[metric],
                                       n_relevant=self.n_relevant, n_threads=self.n_threads)
                out[f"{metric}@{k}"] = float(res[f"{metric}@{k}"])
        return out


def blas_limit(n):
    """Context limiting BLAS to ``n`` threads (threadpoolctl, a bench extra)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=n, user_api="blas")


def eval_schedule(epochs, every):
    """Epochs after which quality is measured: 1, 2, then every ``every``, and the last."""
    marks = {e for e in (1, 2) if e <= epochs}
    marks.update(range(every, epochs + 1, every))
    marks.add(epochs)
    return sorted(marks)


def not_installed(package, exc):
    return dict(status="not installed", error=f"{package}: {exc.__class__.__name__}: {exc}")


def median(values):
    values = [v for v in values if v is not None and np.isfinite(v)]
    return float(np.median(values)) if values else None
