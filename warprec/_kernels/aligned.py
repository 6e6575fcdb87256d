"""Arrays whose data starts on a cache-line boundary.

numpy aligns array data to 16 bytes only. A float32 factor row of ``d = 64`` is 256 bytes,
exactly four 64-byte cache lines when the array starts on a line boundary; otherwise every
row touches five lines and each of its 64-byte vector loads is split across two lines.
The training kernel reads such rows at random (one per negative trial), so the parameter
arrays are aligned: each row read then touches four lines and splits no vector load.
"""

from __future__ import annotations

import numpy as np

from .config import CACHE_LINE

__all__ = ["aligned_empty", "aligned_full", "aligned"]


def aligned_empty(shape, dtype):
    """An uninitialised C-contiguous array whose data starts on a ``CACHE_LINE`` boundary.

    Parameters
    ----------
    shape : int or tuple of int
    dtype : numpy dtype

    Returns
    -------
    numpy.ndarray
        A view into a slightly larger byte buffer (its ``base``); it owns no data of its
        own but behaves like any other writeable array (pickling or ``np.save`` and
        loading it back give an ordinary, possibly unaligned, array).
    """
    dtype = np.dtype(dtype)
    shape = (shape,) if np.ndim(shape) == 0 else tuple(shape)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + CACHE_LINE, np.uint8)
    start = -raw.ctypes.data % CACHE_LINE
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def aligned_full(shape, value, dtype):
    """:func:`aligned_empty` filled with ``value`` (a scalar, or an array broadcast to
    ``shape`` and cast to ``dtype`` as ``astype`` would)."""
    out = aligned_empty(shape, dtype)
    out[...] = value
    return out


def aligned(array):
    """``array`` itself if it is C-contiguous and starts on a cache-line boundary, else
    an aligned C-contiguous copy (see :func:`aligned_empty`)."""
    if array.flags.c_contiguous and array.ctypes.data % CACHE_LINE == 0:
        return array
    out = aligned_empty(array.shape, array.dtype)
    out[...] = array
    return out
