"""Binary searches and an in-place sort for sorted arrays in the kernels, written out.

Numba's generic ``np.searchsorted`` and ``np.sort`` compile slowly: every
specialisation of ``np.searchsorted`` is typed and compiled anew, and ``np.sort`` brings
its quicksort and comparison helpers, where these loops are a few lines each. They give
the same answers as numpy on arrays without NaN (the kernels' inputs have none).
"""

import numpy as np
from numba import njit

from ._flags import JIT, inlined
from .topk import sift_down, sort_heap_best_first


@inlined
def bisect(values, lo, hi, x, right):
    """The first position ``p`` in ``[lo, hi)`` of the non-decreasing ``values[lo:hi]``
    whose entry is > x (``right``) or >= x (not ``right``); ``hi`` if there is none."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if values[mid] < x or (right and values[mid] == x):
            lo = mid + 1
        else:
            hi = mid
    return lo


@inlined
def count_below(values, x):
    """How many entries of the non-decreasing ``values`` are < x:
    ``np.searchsorted(values, x, side="left")``."""
    return np.int64(bisect(values, 0, values.shape[0], x, False))


@inlined
def count_at_most(values, x):
    """How many entries of the non-decreasing ``values`` are <= x:
    ``np.searchsorted(values, x, side="right")``."""
    return np.int64(bisect(values, 0, values.shape[0], x, True))


@njit(**JIT)
def sort_in_place(values):
    """Sort ``values`` (1-D, no NaN) ascending in place: heapsort, O(n log n) whatever
    the input. The result equals ``np.sort(values)`` up to the order of ``-0.0`` and
    ``0.0``, which compare equal.

    It uses the top-k kernels' heap (:mod:`.topk`) with equal int32 tie keys, so that on
    float32 values it runs the specialisations :func:`.topk.select_topk` compiles
    anyway: a worst-at-root heap sorts best (largest) first, and one reversal makes the
    order ascending.
    """
    n = values.shape[0]
    ties = np.zeros(n, dtype=np.int32)
    for root in range(n // 2 - 1, -1, -1):
        sift_down(values, ties, root, n)
    sort_heap_best_first(values, ties, n)
    lo = 0
    hi = n - 1
    while lo < hi:
        top = values[lo]
        values[lo] = values[hi]
        values[hi] = top
        lo += 1
        hi -= 1
