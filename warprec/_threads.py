"""Thread counts and safe launching of parallel Numba kernels (one place for both)."""

from __future__ import annotations

import contextlib
import threading
import warnings

import numba

from ._inputs import check_positive_int
from .exceptions import WarprecWarning

__all__ = ["resolve_threads", "kernel_threads"]

_KERNEL_LOCK = threading.RLock()


def resolve_threads(n_threads):
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
def kernel_threads(n_threads):
    """Run parallel kernels in the body with ``n_threads`` threads, safely.

    Sets Numba's (thread-local) thread count and restores it afterwards. Numba's
    ``workqueue`` threading layer (its fallback when neither TBB nor OpenMP is installed)
    aborts the process on concurrent launches from several Python threads, so unless the
    layer is ``omp`` or ``tbb`` the body runs under a re-entrant lock.

    Yields
    ------
    int
        The resolved thread count.
    """
    n = resolve_threads(n_threads)
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
