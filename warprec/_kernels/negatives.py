"""Drawing a user's negatives: redraws checked against a per-user filter of positives.

A negative candidate is drawn over all items and redrawn while it is one of the user's
positives (the accepted draw is uniform over the user's negatives, or follows the item
distribution of ``neg_cdf`` restricted to them). Draw ``c`` of a sample's stream uses
stream position ``c + a * 2**40`` for its attempt ``a``; after ``REDRAWS`` positives in a
row (users who rated most of the catalogue) it falls back to an exact uniform draw among
the negatives at position ``c + REDRAWS * 2**40``.

Membership is answered by a per-user bit filter (:func:`positive_filter`), one row of
``n_words`` 64-bit words per user, which the training kernel keeps cache-resident:

* exact (``64 * n_words >= n_items``): bit ``j`` is set iff item ``j`` is a positive, so a
  test is one load (ML-100K: 943 users x 27 words, 204 KB);
* hashed (a memory budget allows fewer words): bit ``hash(j)`` is set for every positive,
  so a clear bit proves ``j`` is a negative and a set bit is confirmed by binary search in
  the user's sorted positives.

Both give the same answers, hence the same draws, as a binary search alone; the filter
only makes them cheaper (a binary search takes ``log2`` of the user's positives dependent
loads, an exact filter test one).
"""

import numpy as np
from numba import njit

from ._flags import JIT, inlined
from .config import FILTER_MAX_BYTES, REDRAWS
from .rng import draw_below, draw_unit
from .search import bisect, count_at_most

#: Stream positions of a draw's successive attempts are this far apart.
ATTEMPT_STRIDE = 1 << 40

_HASH = np.uint64(0x9E3779B97F4A7C15)
_ONE = np.uint64(1)
_LOW6 = np.uint64(63)
_SIX = np.uint64(6)


def filter_words(n_users, n_items, max_bytes=FILTER_MAX_BYTES):
    """Words per user of the positive filter: exact if all users' rows fit in
    ``max_bytes``, else the largest power of two that fits (at least 1)."""
    exact = max((n_items + 63) // 64, 1)
    if n_users * exact * 8 <= max_bytes:
        return exact
    words = 1
    while words * 2 < exact and n_users * words * 16 <= max_bytes:
        words *= 2
    return words


@inlined
def filter_shift(n_words, n_items):
    """0 for an exact filter; else ``64 - log2(64 * n_words)``, the right shift that
    turns a 64-bit multiplicative hash into a bit index (``n_words`` a power of two)."""
    if n_words * 64 >= n_items:
        return 0
    bits = 6
    while (1 << bits) < n_words * 64:
        bits += 1
    return 64 - bits


@inlined
def _filter_bit(j, shift):
    if shift == 0:
        return np.uint64(j)
    return (np.uint64(j) * _HASH) >> np.uint64(shift)


@njit(**JIT)
def positive_filter(indptr, indices, n_items, n_words):
    """The per-user filter of positives (n_users, n_words) uint64 for the CSR rows
    ``indptr, indices`` (see the module docstring)."""
    n_users = indptr.shape[0] - 1
    filt = np.zeros((n_users, n_words), np.uint64)
    shift = filter_shift(n_words, n_items)
    for u in range(n_users):
        for q in range(indptr[u], indptr[u + 1]):
            h = _filter_bit(indices[q], shift)
            filt[u, h >> _SIX] |= _ONE << (h & _LOW6)
    return filt


@inlined
def is_member(indices, start, end, j):
    """Whether ``j`` is in the sorted ``indices[start:end]``."""
    lo = bisect(indices, start, end, j, False)
    return lo < end and indices[lo] == j


@inlined
def is_positive(filt, shift, u, j, indices, start, end):
    """Whether item ``j`` is among user ``u``'s positives ``indices[start:end]``."""
    h = _filter_bit(j, shift)
    if (filt[u, h >> _SIX] >> (h & _LOW6)) & _ONE == 0:
        return False
    return shift == 0 or is_member(indices, start, end, j)


@inlined
def nth_negative(indices, start, end, r):
    """The ``r``-th (0-based) column absent from the sorted ``indices[start:end]``.

    Below the k-th positive ``q_k`` lie ``q_k - k`` negatives, a non-decreasing sequence,
    so the answer is ``r + #{k : q_k - k <= r}``, found by binary search.
    """
    # branch-free lower bound: count = #{k < n : q_k - k <= r}
    n = end - start
    base = 0
    while n > 1:
        half = n >> 1
        probe = base + half
        base = probe if indices[start + probe - 1] - (probe - 1) <= r else base
        n -= half
    if n == 1 and indices[start + base] - base <= r:
        base += 1
    return r + base


@inlined
def draw_negative(indices, start, end, u, n_items, neg_cdf, filt, shift, key, counter):
    """Draw ``counter`` of stream ``key``: a negative of user ``u`` (positives
    ``indices[start:end]``, at least one negative).

    Uniform over the user's negatives when ``neg_cdf`` is empty, otherwise drawn from the
    item distribution whose cumulative sums are ``neg_cdf``, restricted to the negatives.
    ``filt, shift``: the user filter and :func:`filter_shift` of its width.
    """
    weighted = neg_cdf.shape[0] > 0
    for attempt in range(REDRAWS):
        position = counter + attempt * ATTEMPT_STRIDE
        if weighted:
            j = count_at_most(neg_cdf, draw_unit(key, position))
            if j >= n_items:
                j = n_items - 1
        else:
            j = draw_below(key, position, n_items)
        if not is_positive(filt, shift, u, j, indices, start, end):
            return j
    n_neg = n_items - (end - start)
    return nth_negative(indices, start, end,
                        draw_below(key, counter + REDRAWS * ATTEMPT_STRIDE, n_neg))
