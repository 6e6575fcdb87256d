"""Epoch orders: in which order a training epoch visits the positives.

The training kernel takes the order as an array of positions into the CSR ``indices``.
Besides an independent shuffle of all positives (a permutation, made in Python), an
epoch can visit the users in a random order and each user's positives consecutively,
in a random order of their own (:func:`user_grouped_order`). Then a user's factor and
Adagrad rows are read from memory once per epoch instead of once per positive, which
matters once the parameters no longer fit in cache (see ``WARPFactorizer``'s
``sample_order``).
"""

import numpy as np
from numba import njit

from ._flags import JIT
from .rng import draw_below, stream_key

#: Added to a user index to key its shuffle stream, so that these streams never
#: coincide with the training kernel's per-sample streams (keyed by positions < 2**63).
ORDER_STREAM = np.uint64(1 << 63)


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
    User ``u``'s positives are shuffled by Fisher-Yates with the counter-based stream
    ``stream_key(seed, epoch, ORDER_STREAM + u)``: step ``t`` (from the last slot down to
    slot 1) swaps slot ``t`` with slot ``draw_below(key, t, t + 1)``. The result depends
    only on the arguments, not on the number of threads.
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
        key = stream_key(seed, epoch, ORDER_STREAM + np.uint64(u))
        for t in range(length - 1, 0, -1):
            r = draw_below(key, t, t + 1)
            tmp = out[o + t]
            out[o + t] = out[o + r]
            out[o + r] = tmp
