"""Raw factor scores of a block of users computed on the Numba threads.

Small scoring problems use :func:`dot_rows` instead of a BLAS matmul (see
``warprec.scoring._score_blocks`` for why).
"""

import numpy as np
from numba import njit, prange

from ._flags import PJIT


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
