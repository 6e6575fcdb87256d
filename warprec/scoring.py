"""Blocked scoring and top-k selection for factor models.

Scores are ``f(u, i) = U[u] . V[i] + b[i]`` in float32. The users x items score
matrix is never materialised: users are processed in blocks, each block's raw
scores come from one float32 BLAS matmul (which releases the GIL; a Numba kernel
scores small problems), and a parallel Numba kernel then masks excluded items and keeps
the best k of every row with a size-k heap. The helpers in this module (argument checks,
blocked scoring, thread control) are shared with :mod:`warprec.metrics`.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ._inputs import as_interaction_matrix, check_k, check_positive_int
from ._kernels.scores import dot_rows
from ._kernels.config import BLOCK_BYTES, MAX_BLOCK_ROWS, MIN_BLOCK_ROWS, NUMBA_SCORING_MACS
from ._kernels.topk import topk_rows
from ._threads import kernel_threads

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from numpy.typing import ArrayLike, NDArray

    from ._typing import Float32Array, Int32Array, Int64Array, SparseMatrix

__all__ = ["topk_items"]



def _as_float32_matrix(values: ArrayLike, name: str) -> Float32Array:
    array = np.asarray(values)
    if array.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (got shape {array.shape})")
    if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
        raise TypeError(f"{name} must hold real numbers (got dtype {array.dtype})")
    return np.ascontiguousarray(array, dtype=np.float32)


def _as_factor_arrays(user_factors: ArrayLike, item_factors: ArrayLike,
                      item_biases: ArrayLike | None,
                      ) -> tuple[Float32Array, Float32Array, Float32Array]:
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


def _check_finite(array: NDArray[Any], name: str) -> None:
    """Raise ValueError if ``array`` holds NaN or infinite values."""
    if not np.isfinite(array).all():
        raise ValueError(f"{name} contains NaN or infinite values")


def _as_user_indices(users: ArrayLike, n_users: int) -> Int64Array:
    """Validate a 1-D array of user row indices in ``[0, n_users)`` (returns int64)."""
    array = np.asarray(users)
    if array.ndim != 1:
        raise ValueError(f"users must be a 1-D array of user indices (got shape {array.shape})")
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    if not np.issubdtype(array.dtype, np.integer) or array.dtype == np.bool_:
        raise TypeError(f"users must hold integer indices (got dtype {array.dtype})")
    if array.min() < 0 or array.max() >= n_users:
        raise ValueError(
            f"users must be indices in [0, {n_users}) (got values from {array.min()} "
            f"to {array.max()})")
    return array.astype(np.int64, copy=False)


def _as_item_mask(allowed_items: ArrayLike, n_items: int) -> NDArray[np.bool_]:
    """Validate a boolean item mask of length ``n_items``."""
    mask = np.asarray(allowed_items)
    if mask.dtype != np.bool_:
        raise TypeError(f"allowed_items must be a boolean mask (got dtype {mask.dtype})")
    if mask.shape != (n_items,):
        raise ValueError(
            f"allowed_items must have shape ({n_items},) (got {mask.shape})")
    return mask


def _as_csr(matrix: SparseMatrix, shape: tuple[int, int], name: str) -> sp.csr_matrix:
    """Return ``matrix`` as canonical CSR (see :func:`warprec._inputs.as_interaction_matrix`:
    duplicates summed in float64, stored zeros dropped, NaN/negative values rejected).

    The input is never modified.
    """
    if not sp.issparse(matrix):
        raise TypeError(
            f"{name} must be a scipy sparse matrix (got {type(matrix).__name__})")
    if matrix.shape != tuple(shape):
        raise ValueError(
            f"{name} must have shape {tuple(shape)} (n_users x n_items) "
            f"(got {matrix.shape})")
    values = sp.coo_matrix(matrix).data
    if np.issubdtype(values.dtype, np.number) and np.any(values < 0):
        raise ValueError(f"{name} must hold non-negative gains (relevance values); it holds "
                         f"{int((values < 0).sum())} negative value(s).")
    return as_interaction_matrix(matrix, name)


def _csr_arrays(csr: sp.csr_matrix) -> tuple[Int64Array, Int32Array]:
    """(indptr int64, indices int32) of a CSR matrix, for the kernels."""
    return csr.indptr.astype(np.int64, copy=False), csr.indices.astype(np.int32, copy=False)


def _empty_csr_arrays(n_rows: int) -> tuple[Int64Array, Int32Array]:
    """(indptr, indices) of a CSR matrix with ``n_rows`` empty rows."""
    return np.zeros(n_rows + 1, dtype=np.int64), np.zeros(0, dtype=np.int32)


def _default_block_rows(n_cols: int, block_size: int | None = None) -> int:
    """Number of users per block: ``block_size`` or about BLOCK_BYTES of scores."""
    if block_size is not None:
        return check_positive_int(block_size, "block_size")
    rows = BLOCK_BYTES // (4 * max(n_cols, 1))
    return int(min(MAX_BLOCK_ROWS, max(MIN_BLOCK_ROWS, rows)))




def _score_blocks(user_factors: Float32Array, item_factors: Float32Array, users: Int64Array,
                  block_size: int | None = None) -> Iterator[tuple[int, int, Float32Array]]:
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
    block_rows = _default_block_rows(n_items, block_size)
    starts = list(range(0, n_rows, block_rows))
    small = n_rows * n_items * d <= NUMBA_SCORING_MACS
    buffers = [np.empty((min(block_rows, n_rows), n_items), dtype=np.float32)
               for _ in range(1 if small else min(2, len(starts)))]

    def product(index: int) -> tuple[int, int, Float32Array]:
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


def _exclusion_for(exclude: SparseMatrix | None, users: Int64Array, n_users: int, n_items: int,
                   columns: Int32Array | None) -> tuple[Int64Array, Int32Array]:
    """CSR arrays of the excluded columns of each requested user, in column space."""
    if exclude is None:
        return _empty_csr_arrays(users.shape[0])
    rows = _as_csr(exclude, (n_users, n_items), "exclude")[users]
    if columns is not None:
        rows = rows[:, columns].tocsr()
    return _csr_arrays(rows)


def topk_items(user_factors: ArrayLike, item_factors: ArrayLike, item_biases: ArrayLike | None,
               users: ArrayLike, k: int, *, exclude: SparseMatrix | None = None,
               allowed_items: ArrayLike | None = None, block_size: int | None = None,
               n_threads: int | None = None) -> tuple[Int32Array, Float32Array]:
    """Best ``k`` items of each user under the factor model, without the full score matrix.

    The score of item ``i`` for user ``u`` is the float32 value
    ``U[u] @ V[i] + b[i]``. Users are scored in blocks of ``block_size`` rows with one
    float32 matmul per block; a parallel Numba kernel then keeps each row's best
    ``k`` eligible items with a size-k heap (O(n_items log k) per user).

    Parameters
    ----------
    user_factors : array_like, shape (n_users, d)
        User factor matrix ``U`` (cast to float32).
    item_factors : array_like, shape (n_items, d)
        Item factor matrix ``V`` (cast to float32).
    item_biases : array_like, shape (n_items,), or None
        Item biases ``b`` (cast to float32); None means zero.
    users : array_like of int, shape (n,)
        Row indices into ``user_factors`` of the users to recommend for (repeats
        allowed).
    k : int
        Number of items per user, >= 1.
    exclude : scipy sparse matrix, shape (n_users, n_items), optional
        Items stored in row ``u`` are never returned for user ``u`` (e.g. the
        training interactions). Explicit zeros count as stored.
    allowed_items : array_like of bool, shape (n_items,), optional
        Only items whose mask entry is True may be returned.
    block_size : int, optional
        Users scored per block. Default: enough users for about 256 MiB of float32
        scores, clipped to [256, 2048]. Problems over 2**28 multiply-adds hold two
        blocks (one is computed by BLAS while the other is selected from).
    n_threads : int, optional
        Numba threads for the selection kernel. Default: all the threads Numba was
        started with. The previous Numba thread count is restored on return.

    Returns
    -------
    items : ndarray of int32, shape (n, k_eff)
        Item indices, best first, with ``k_eff = min(k, n_items)``. Ties in score are
        broken by lower item index first. When a user has fewer than ``k_eff``
        eligible items the trailing slots hold -1.
    scores : ndarray of float32, shape (n, k_eff)
        The matching scores; -inf in unfilled slots.

    Raises
    ------
    ValueError
        If ``k``, ``block_size`` or ``n_threads`` is not a positive integer, if shapes
        do not match, if a user index is out of range, or if the factors of the
        requested users, the item factors or the biases contain NaN or infinity.
    TypeError
        On non-numeric factors, non-integer users, a non-boolean ``allowed_items`` or
        a non-sparse ``exclude``.

    Notes
    -----
    A score that evaluates to -inf or NaN (possible only through float32 overflow,
    since the factors are checked to be finite) is treated as ineligible.
    Rows are processed in parallel by Numba threads while BLAS computes the next
    block's matmul with its own threads (small problems are scored by a Numba kernel
    instead of BLAS, one block after the other).
    """
    user_factors, item_factors, item_biases = _as_factor_arrays(
        user_factors, item_factors, item_biases)
    n_users, n_items = user_factors.shape[0], item_factors.shape[0]
    users = _as_user_indices(users, n_users)
    k_eff = min(check_k(k), n_items)
    _default_block_rows(n_items, block_size)  # a bad block_size fails before other checks
    columns = None
    if allowed_items is not None:
        columns = np.flatnonzero(_as_item_mask(allowed_items, n_items)).astype(np.int32)
        item_factors, item_biases = item_factors[columns], item_biases[columns]
    excl_indptr, excl_indices = _exclusion_for(exclude, users, n_users, n_items, columns)
    _check_finite(user_factors[users], "user_factors")
    _check_finite(item_factors, "item_factors")
    _check_finite(item_biases, "item_biases")

    out_items = np.empty((users.shape[0], k_eff), dtype=np.int32)
    out_scores = np.empty((users.shape[0], k_eff), dtype=np.float32)
    with kernel_threads(n_threads):
        for start, stop, block in _score_blocks(user_factors, item_factors, users,
                                                block_size):
            topk_rows(block, item_biases, excl_indptr[start:stop + 1], excl_indices,
                      out_items[start:stop], out_scores[start:stop])
    if columns is not None:
        filled = out_items >= 0
        out_items[filled] = columns[out_items[filled]]
    return out_items, out_scores
