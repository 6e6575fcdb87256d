"""Raw factor scores of a block of users computed on the Numba threads, and a bound on
all scores of a model.

Small scoring problems use :func:`dot_rows` instead of a BLAS matmul (see
``warprec.scoring._score_blocks`` for why).
"""

import numpy as np
from numba import njit, prange

from ._flags import JIT, PJIT

_ABS_BITS = np.int32(0x7FFFFFFF)   # all bits of a float32 but its sign


@njit(**JIT)
def _max_abs_bits(x):
    """The bit pattern of the largest ``|value|`` of the float32 values whose bits are
    the int32 array ``x`` (0 if empty): without their sign bits, float32 values order
    like their bit patterns, and every NaN lies above +inf. An integer maximum
    vectorises without fast-math flags that would let LLVM assume no NaN."""
    m = np.int32(0)
    for k in range(x.shape[0]):
        m = max(m, x[k] & _ABS_BITS)
    return m


@njit(**JIT)
def score_bound(U, V, b):
    """``d * max|U| * max|V| + max|b|`` in float64: a bound on ``|<U[u], V[i]> + b[i]|``.

    Parameters
    ----------
    U, V : float32 arrays (n_users, d), (n_items, d), C-contiguous
    b : float32 array (n_items,)

    Returns
    -------
    float
        The bound. NaN if any entry is NaN; otherwise inf, or NaN (``inf * 0``), if any
        entry is infinite: never below float32's maximum then. Empty arrays count as 0.
    """
    bits = np.empty(3, np.int32)
    bits[0] = _max_abs_bits(U.reshape(-1).view(np.int32))
    bits[1] = _max_abs_bits(V.reshape(-1).view(np.int32))
    bits[2] = _max_abs_bits(b.view(np.int32))
    top = bits.view(np.float32)  # a NaN's pattern is a NaN again: it propagates
    return U.shape[1] * np.float64(top[0]) * np.float64(top[1]) + np.float64(top[2])


@njit(**PJIT)
def dot_rows(user_rows, item_factors, out):
    """``out[r, j] = <user_rows[r], item_factors[j]>`` in float32, in parallel over rows.

    Parameters
    ----------
    user_rows : float32 (n_rows, d), C-contiguous
    item_factors : float32 (n_items, d), C-contiguous
    out : float32 (n_rows, n_items), C-contiguous
        Receives the scores (no biases).
    """
    d = item_factors.shape[1]
    for r in prange(user_rows.shape[0]):
        row = out[r]
        for j in range(item_factors.shape[0]):
            acc = np.float32(0.0)
            for f in range(d):
                acc += user_rows[r, f] * item_factors[j, f]
            row[j] = acc
    return out
