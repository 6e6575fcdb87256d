"""How the machine's logical CPUs share work, measured at the start of a run.

Multi-threaded timings on a VM depend on what its vCPUs are: two physical cores, or two
SMT siblings of one core (their vector units, caches and load ports shared), and on what
the neighbours do; the placement can change within a run. Three loops with different
bottlenecks tell these apart:

- ``latency``: one dependent chain of scalar multiply-adds (float64). Each instruction
  waits for the previous one, so most of a core idles; SMT siblings run two such chains
  almost as fast as one.
- ``vector``: independent float32 multiply-adds over an array that fits in L1, as many
  vector instructions per cycle as a core issues; SMT siblings share that throughput.
- ``sgemm``: numpy's float32 matmul on 512 x 512 blocks, BLAS limited to one thread per
  caller.

Efficiency at ``n`` threads = (seconds of one thread doing ``W``) / (seconds of ``n``
threads each doing ``W`` at once): 1.0 means the threads ran as if alone, ``1 / n`` that
they shared one core's worth. Latency near 1.0 with vector near 0.5 means the two logical
CPUs share one core's vector units (SMT siblings, or a neighbour using them): vectorised
code cannot scale there, while scalar latency-bound code still can.
"""

from __future__ import annotations

import threading

import numpy as np

from _common import now

#: Work per thread: (chain length, vector sweeps, matmuls) of a full and of a quick run.
SIZES = dict(full=(150_000_000, 1_000_000, 60), quick=(5_000_000, 30_000, 1))


def _kernels():
    from numba import njit

    @njit(nogil=True, cache=False)
    def chain(n):
        x = 0.0
        for _ in range(n):
            x = x * 0.999999 + 1.0
        return x

    @njit(nogil=True, fastmath=True, cache=False)
    def sweep(a, n):
        for _ in range(n):
            for k in range(a.shape[0]):
                a[k] = a[k] * np.float32(0.9999) + np.float32(1.0)
        return a[0]

    return chain, sweep


def _together(tasks):
    """Wall seconds to run every task of ``tasks`` at once, one thread each."""
    threads = [threading.Thread(target=t) for t in tasks]
    tic = now()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return now() - tic


def measure(n_threads, *, quick=False, repeats=5):
    """Efficiency of the three loops at ``n_threads`` threads (see the module docstring).

    Returns a dict with ``efficiency`` (loop -> median over ``repeats``),
    ``efficiency_runs`` (every repeat), ``single_seconds`` (median time of one thread) and
    the thread count; one and ``n_threads`` threads alternate within each repeat.
    """
    from threadpoolctl import threadpool_limits

    chain, sweep = _kernels()
    n_chain, n_sweep, n_mm = SIZES["quick" if quick else "full"]
    arrays = [np.ones(2048, np.float32) for _ in range(n_threads)]
    blocks = [np.random.default_rng(k).random((512, 512), dtype=np.float32)
              for k in range(n_threads)]
    chain(10)
    sweep(arrays[0], 1)

    def matmuls(a):
        for _ in range(n_mm):
            a @ a

    loops = dict(latency=lambda k: chain(n_chain), vector=lambda k: sweep(arrays[k], n_sweep),
                 sgemm=lambda k: matmuls(blocks[k]))
    runs = {name: [] for name in loops}
    single = {name: [] for name in loops}
    with threadpool_limits(1):
        for _ in range(repeats):
            for name, loop in loops.items():
                one = _together([lambda: loop(0)])
                many = _together([lambda k=k: loop(k) for k in range(n_threads)])
                runs[name].append(one / many)
                single[name].append(one)
    return dict(status="ok", threads=n_threads, repeats=repeats,
                efficiency={k: float(np.median(v)) for k, v in runs.items()},
                efficiency_runs={k: [round(x, 3) for x in v] for k, v in runs.items()},
                single_seconds={k: float(np.median(v)) for k, v in single.items()})
