"""Top-k items of factor models, without the full score matrix: :func:`topk_items`.

Scores are ``f(u, i) = U[u] . V[i] + b[i]`` in float32. The users x items score
matrix is never materialised: users are processed in blocks, each block's raw
scores come from one float32 BLAS matmul (which releases the GIL; a Numba kernel
scores small problems), and a parallel Numba kernel then masks excluded items and keeps
the best k of every row with a size-k heap. The blocked scoring and the argument checks
live in :mod:`warprec._scoring`, shared with :mod:`warprec.evaluation`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._inputs import check_k
from ._kernels.topk import topk_rows
from ._scoring import (as_csr, as_factor_arrays, check_finite, csr_arrays, default_block_rows,
                       empty_csr_arrays, score_blocks)
from ._threads import kernel_threads

if TYPE_CHECKING:

    from numpy.typing import ArrayLike, NDArray

    from ._typing import Float32Array, Int32Array, Int64Array, SparseMatrix

__all__ = ["topk_items"]


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


def _exclusion_for(exclude: SparseMatrix | None, users: Int64Array, n_users: int, n_items: int,
                   columns: Int32Array | None) -> tuple[Int64Array, Int32Array]:
    """CSR arrays of the excluded columns of each requested user, in column space."""
    if exclude is None:
        return empty_csr_arrays(users.shape[0])
    rows = as_csr(exclude, (n_users, n_items), "exclude")[users]
    if columns is not None:
        rows = rows[:, columns].tocsr()
    return csr_arrays(rows)


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
    user_factors, item_factors, item_biases = as_factor_arrays(
        user_factors, item_factors, item_biases)
    n_users, n_items = user_factors.shape[0], item_factors.shape[0]
    users = _as_user_indices(users, n_users)
    k_eff = min(check_k(k), n_items)
    default_block_rows(n_items, block_size)  # a bad block_size fails before other checks
    columns = None
    if allowed_items is not None:
        columns = np.flatnonzero(_as_item_mask(allowed_items, n_items)).astype(np.int32)
        item_factors, item_biases = item_factors[columns], item_biases[columns]
    excl_indptr, excl_indices = _exclusion_for(exclude, users, n_users, n_items, columns)
    check_finite(user_factors[users], "user_factors")
    check_finite(item_factors, "item_factors")
    check_finite(item_biases, "item_biases")

    out_items = np.empty((users.shape[0], k_eff), dtype=np.int32)
    out_scores = np.empty((users.shape[0], k_eff), dtype=np.float32)
    with kernel_threads(n_threads):
        for start, stop, block in score_blocks(user_factors, item_factors, users,
                                                block_size):
            topk_rows(block, item_biases, excl_indptr[start:stop + 1], excl_indices,
                      out_items[start:stop], out_scores[start:stop])
    if columns is not None:
        filled = out_items >= 0
        out_items[filled] = columns[out_items[filled]]
    return out_items, out_scores
