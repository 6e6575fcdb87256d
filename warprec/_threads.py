"""Thread counts, safe launching of parallel Numba kernels, and the threads that train
(one place for all three)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import threading
import warnings
from typing import TYPE_CHECKING

import numba

from ._inputs import check_positive_int
from .exceptions import WarprecWarning

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import TypeVar

    T = TypeVar("T")

__all__ = ["resolve_threads", "kernel_threads", "run_in_threads"]

_KERNEL_LOCK = threading.RLock()
_LAYER_CHOSEN = False


def _choose_threading_layer() -> None:
    """Before warprec's first parallel kernel: ask Numba for a fork-safe threading layer
    (``"forksafe"``: TBB if installed, an OpenMP runtime other than GNU's, else
    ``workqueue``), unless the user chose one (``NUMBA_THREADING_LAYER`` or
    ``numba.config.THREADING_LAYER``) or a parallel kernel already chose it.

    Numba's own default prefers GNU OpenMP (the runtime of Linux wheels) to
    ``workqueue``; GNU OpenMP terminates the process on ``os.fork()`` after any parallel
    call, which ``multiprocessing``'s fork start method does. ``workqueue`` is fork-safe
    and :func:`kernel_threads` serialises its launches, which makes it thread-safe too.
    """
    global _LAYER_CHOSEN
    if _LAYER_CHOSEN:
        return
    _LAYER_CHOSEN = True
    if os.environ.get("NUMBA_THREADING_LAYER") or numba.config.THREADING_LAYER != "default":
        return
    try:
        numba.threading_layer()
    except ValueError:  # not chosen yet
        numba.config.THREADING_LAYER = "forksafe"


def resolve_threads(n_threads: int | None) -> int:
    """``n_threads`` as an int: None means all of Numba's threads; more is clipped (warning)."""
    limit = numba.config.NUMBA_NUM_THREADS
    if n_threads is None:
        return limit
    n = check_positive_int(n_threads, "n_threads")
    if n > limit:
        warnings.warn(f"n_threads={n} exceeds Numba's thread limit {limit}; using {limit}.",
                      WarprecWarning, stacklevel=3)
    return min(n, limit)


@contextlib.contextmanager
def kernel_threads(n_threads: int | None) -> Iterator[int]:
    """Run parallel kernels in the body with ``n_threads`` threads, safely.

    Sets Numba's (thread-local) thread count and restores it afterwards. Numba's
    ``workqueue`` threading layer (warprec's choice when TBB is not installed, see
    :func:`_choose_threading_layer`) aborts the process on concurrent launches from
    several Python threads, so unless the layer is ``omp`` or ``tbb`` the body runs under
    a re-entrant lock: concurrent calls then take turns, kernel by kernel.

    Yields
    ------
    int
        The resolved thread count.
    """
    n = resolve_threads(n_threads)
    _choose_threading_layer()
    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel kernel has run yet: the layer is not chosen
        layer = None
    lock = contextlib.nullcontext() if layer in ("omp", "tbb") else _KERNEL_LOCK
    with lock:
        previous = numba.get_num_threads()
        numba.set_num_threads(n)
        try:
            yield n
        finally:
            numba.set_num_threads(previous)


_POOL: concurrent.futures.ThreadPoolExecutor | None = None
_POOL_SIZE = 0
_POOL_LOCK = threading.Lock()


def _forget_pool() -> None:
    """In a forked child: the pool's threads were not copied (a task submitted to it would
    never run) and another thread may have held the lock, so start afresh."""
    global _POOL, _POOL_SIZE, _POOL_LOCK
    _POOL, _POOL_SIZE, _POOL_LOCK = None, 0, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _pool(n_workers: int) -> concurrent.futures.ThreadPoolExecutor:
    """The shared pool of worker threads, with room for at least ``n_workers``."""
    global _POOL, _POOL_SIZE
    with _POOL_LOCK:
        if _POOL_SIZE < n_workers:
            # not shut down: another thread may be submitting to it; its threads exit
            # once it is garbage collected and they are idle
            _POOL = concurrent.futures.ThreadPoolExecutor(n_workers, "warprec")
            _POOL_SIZE = n_workers
        return _POOL  # type: ignore[return-value]  # not None: _POOL_SIZE >= 1 here


def run_in_threads(task: Callable[[int], T], n: int) -> list[T]:
    """Run ``task(0), ..., task(n - 1)`` at the same time and return their results in order.

    ``task(0)`` runs in the calling thread and the others in a pool of worker threads that
    is kept for later calls, so a call starts no thread once the pool is large enough.
    Training runs its epoch slices this way: they are Numba functions compiled with
    ``nogil=True``, so they run in parallel.

    The tasks must not wait for each other: with calls from several Python threads at
    once, a task may start only when another call's task has finished. Every task has
    ended when the function returns, also when one raised; the first exception (in task
    order) is then raised again.

    Parameters
    ----------
    task : callable
        Called with the task index.
    n : int
        Number of tasks, >= 1.

    Returns
    -------
    list
        ``[task(0), ..., task(n - 1)]``.
    """
    if n == 1:
        return [task(0)]
    pool = _pool(n - 1)
    futures = [pool.submit(task, t) for t in range(1, n)]
    try:
        first = task(0)
    finally:
        concurrent.futures.wait(futures)
    return [first] + [future.result() for future in futures]
