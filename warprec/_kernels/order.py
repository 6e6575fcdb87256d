"""Epoch orders: in which order a training epoch visits the positives.

The training kernel takes the order as an array of positions into the CSR ``indices``.
An epoch either shuffles all positives independently (:func:`shuffle`) or visits the
users in a random order and each user's positives consecutively, in a random order of
their own (:func:`user_grouped_order`). With the second, a user's factor and Adagrad
rows are read from memory once per epoch instead of once per positive, which matters
once the parameters no longer fit in cache (see ``WARPFactorizer``'s ``sample_order``).

Both shuffle by Fisher-Yates with counter-based streams (:mod:`.rng`): step ``t`` (from
the last slot down to slot 1) swaps slot ``t`` with slot ``draw_below(key, t, t + 1)``.
Their keys are ``stream_key(seed, epoch, s)`` with ``s >= 2**63``, positions the
training kernel's per-sample streams (keyed by positive positions) never take.
"""

import numpy as np
from numba import njit

from ._flags import JIT, inlined
from .rng import draw_below, stream_key

#: Stream of user ``u``'s shuffle: ``ORDER_STREAM + u``.
ORDER_STREAM = np.uint64(1 << 63)
#: Stream of the shuffle of a whole array (all positives, or the users' visiting order).
SHUFFLE_STREAM = np.uint64(2**64 - 1)


@inlined
def _fisher_yates(out, lo, length, key):
    """Shuffle ``out[lo:lo + length]`` in place with the stream ``key``."""
    for t in range(length - 1, 0, -1):
        r = draw_below(key, t, t + 1)
        tmp = out[lo + t]
        out[lo + t] = out[lo + r]
        out[lo + r] = tmp


@njit(**JIT)
def shuffle(seed, epoch, out):
    """Fill ``out`` (int64) with a uniformly random permutation of ``0 .. out.size - 1``:
    the identity shuffled with the stream ``stream_key(seed, epoch, SHUFFLE_STREAM)``."""
    for t in range(out.shape[0]):
        out[t] = t
    _fisher_yates(out, 0, out.shape[0], stream_key(seed, epoch, SHUFFLE_STREAM))


@njit(**JIT)
def user_grouped_order(indptr, users, seed, epoch, out):
    """Fill ``out`` with the positions of every positive, user by user.

    Parameters
    ----------
    indptr : int array (n_users + 1,)
        CSR row pointers of the positives.
    users : int64 array (n_users,)
        A permutation of the users: the order in which they are visited.
    seed, epoch : int
        Keys of the within-user shuffles.
    out : int64 array (nnz,)
        Receives the positions: the positives of ``users[0]`` first (positions
        ``indptr[u]`` to ``indptr[u + 1] - 1`` in a random order), then those of
        ``users[1]``, and so on. Users without positives take no room.

    Notes
    -----
    User ``u``'s positives are shuffled with the stream
    ``stream_key(seed, epoch, ORDER_STREAM + u)``.
    """
    n = users.shape[0]
    offsets = np.empty(n + 1, np.int64)
    offsets[0] = 0
    for k in range(n):
        u = users[k]
        offsets[k + 1] = offsets[k] + indptr[u + 1] - indptr[u]
    for k in range(n):
        u = users[k]
        start = indptr[u]
        o = offsets[k]
        length = offsets[k + 1] - o
        for t in range(length):
            out[o + t] = start + t
        _fisher_yates(out, o, length, stream_key(seed, epoch, ORDER_STREAM + np.uint64(u)))
