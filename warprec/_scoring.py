"""Blocked scoring: the machinery that top-k selection (:mod:`warprec.scoring`),
evaluation (:mod:`warprec.evaluation`) and :mod:`warprec.dask` share.

Scores are ``U[u] . V[i] + b[i]`` in float32; the users x items score matrix is never
materialised: :func:`score_blocks` yields the raw scores of consecutive blocks of users
(a Numba kernel for small problems, BLAS with two alternating buffers for large ones),
and the callers' kernels consume each block. The checks here turn the callers' inputs
into the arrays those kernels read.

Internal API: :func:`as_factor_arrays`, :func:`check_finite`, :func:`as_csr`,
:func:`csr_arrays`, :func:`empty_csr_arrays`, :func:`default_block_rows` and
:func:`score_blocks`. Not part of warprec's public API; may change without notice.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from ._inputs import as_interaction_matrix, check_positive_int
from ._kernels.config import BLOCK_BYTES, MAX_BLOCK_ROWS, MIN_BLOCK_ROWS, NUMBA_SCORING_MACS
from ._kernels.scores import dot_rows

__all__ = ["as_csr", "as_factor_arrays", "check_finite", "csr_arrays", "default_block_rows",
           "empty_csr_arrays", "score_blocks"]


def _as_float32_matrix(values: ArrayLike, name: str) -> NDArray[np.float32]:
    array = np.asarray(values)
    if array.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (got shape {array.shape})")
    if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
        raise TypeError(f"{name} must hold real numbers (got dtype {array.dtype})")
    return np.ascontiguousarray(array, dtype=np.float32)


def as_factor_arrays(user_factors: ArrayLike, item_factors: ArrayLike,
                     item_biases: ArrayLike | None
                     ) -> tuple[NDArray[np.float32], NDArray[np.float32], NDArray[np.float32]]:
    """Validate the factors and return them as C-contiguous float32 arrays.

    ``item_biases=None`` means all-zero biases.

    Raises
    ------
    ValueError
        On wrong dimensions or mismatched shapes.
    TypeError
        On non-numeric arrays.
    """
    users = _as_float32_matrix(user_factors, "user_factors")
    items = _as_float32_matrix(item_factors, "item_factors")
    if users.shape[1] != items.shape[1]:
        raise ValueError(
            "user_factors and item_factors must have the same number of columns "
            f"(got {users.shape[1]} and {items.shape[1]})")
    if item_biases is None:
        biases = np.zeros(items.shape[0], dtype=np.float32)
    else:
        biases = np.asarray(item_biases)
        if biases.shape != (items.shape[0],):
            raise ValueError(
                f"item_biases must have shape ({items.shape[0]},) to match item_factors "
                f"(got {biases.shape})")
        if not (np.issubdtype(biases.dtype, np.floating)
                or np.issubdtype(biases.dtype, np.integer)):
            raise TypeError(f"item_biases must hold real numbers (got dtype {biases.dtype})")
        biases = np.ascontiguousarray(biases, dtype=np.float32)
    return users, items, biases


def check_finite(array: ArrayLike, name: str) -> None:
    """Raise ValueError if ``array`` holds NaN or infinite values."""
    if not np.isfinite(array).all():
        raise ValueError(f"{name} contains NaN or infinite values")


def as_csr(matrix: sp.spmatrix | sp.sparray, shape: tuple[int, int],
           name: str) -> sp.csr_matrix:
    """Return ``matrix`` as canonical CSR (see :func:`warprec._inputs.as_interaction_matrix`:
    duplicates summed in float64, stored zeros dropped, NaN/negative values rejected).

    The input is never modified.
    """
    if not sp.issparse(matrix):
        raise TypeError(
            f"{name} must be a scipy sparse matrix (got {type(matrix).__name__})")
    given: Any = matrix   # (any sparse format: its shape and a COO view)
    if given.shape != tuple(shape):
        raise ValueError(
            f"{name} must have shape {tuple(shape)} (n_users x n_items) "
            f"(got {given.shape})")
    values = sp.coo_matrix(given).data
    if np.issubdtype(values.dtype, np.number) and np.any(values < 0):
        raise ValueError(f"{name} must hold non-negative gains (relevance values); it holds "
                         f"{int((values < 0).sum())} negative value(s).")
    return as_interaction_matrix(given, name)


def csr_arrays(csr: sp.csr_matrix) -> tuple[NDArray[np.int64], NDArray[np.int32]]:
    """(indptr int64, indices int32) of a CSR matrix, for the kernels."""
    return csr.indptr.astype(np.int64, copy=False), csr.indices.astype(np.int32, copy=False)


def empty_csr_arrays(n_rows: int) -> tuple[NDArray[np.int64], NDArray[np.int32]]:
    """(indptr, indices) of a CSR matrix with ``n_rows`` empty rows."""
    return np.zeros(n_rows + 1, dtype=np.int64), np.zeros(0, dtype=np.int32)


def default_block_rows(n_cols: int, block_size: int | None = None) -> int:
    """Number of users per block: ``block_size`` or about BLOCK_BYTES of scores."""
    if block_size is not None:
        return check_positive_int(block_size, "block_size")
    rows = BLOCK_BYTES // (4 * max(n_cols, 1))
    return int(min(MAX_BLOCK_ROWS, max(MIN_BLOCK_ROWS, rows)))


def score_blocks(user_factors: NDArray[np.float32], item_factors: NDArray[np.float32],
                 users: NDArray[np.int64], block_size: int | None = None
                 ) -> Iterator[tuple[int, int, NDArray[np.float32]]]:
    """Yield ``(start, stop, block)``: the raw scores ``U[users[start:stop]] @ V.T`` (no
    biases) of consecutive blocks of ``users``; a block is valid until the next one is
    requested.

    Small problems are scored by a Numba kernel on the Numba threads: after a
    multi-threaded call, BLAS's worker threads keep spinning for a while and slow down
    whatever runs next on the same cores (such as the training epochs between the
    evaluations of a callback); large problems use BLAS, which does more multiply-adds
    per second and whose matmul dominates their cost. There, the matmul of the next block
    runs in a background thread (BLAS releases the GIL) while the caller's kernel
    processes the current one, in two alternating buffers: the BLAS threads then work
    instead of spinning beside that kernel.
    """
    n_rows, (n_items, d) = users.shape[0], item_factors.shape
    block_rows = default_block_rows(n_items, block_size)
    starts = list(range(0, n_rows, block_rows))
    small = n_rows * n_items * d <= NUMBA_SCORING_MACS
    buffers = [np.empty((min(block_rows, n_rows), n_items), dtype=np.float32)
               for _ in range(1 if small else min(2, len(starts)))]

    def product(index: int) -> tuple[int, int, NDArray[np.float32]]:
        start = starts[index]
        stop = min(start + block_rows, n_rows)
        block = buffers[index % len(buffers)][: stop - start]
        if small:
            dot_rows(user_factors[users[start:stop]], item_factors, block)
        else:
            np.matmul(user_factors[users[start:stop]], item_factors.T, out=block)
        return start, stop, block

    if small:
        for index in range(len(starts)):
            yield product(index)
        return
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(product, 0)
        for index in range(len(starts)):
            current = pending.result()
            if index + 1 < len(starts):
                pending = pool.submit(product, index + 1)
            yield current
