"""Top-k selection kernels over rows of a score block.

A score block is the float32 matrix ``U_block @ V.T`` (from BLAS, or from
:func:`.scores.dot_rows` for small problems); the item
biases are added here, item by item, so a returned score is exactly the float32
value ``(U_block @ V.T)[r, j] + b[j]``.

Ordering rule used everywhere: item ``a`` ranks before item ``b`` when its score is
higher, or when the scores are equal and ``a`` has the lower column index. A
column is *ineligible* when its score is ``-inf`` (the masking kernels write
``-inf`` into the block for excluded columns) or NaN.

The selection keeps a size-k binary heap whose root is the *worst* kept item, so
one pass over a row costs O(n_items log k); once the heap is full the row is read
in chunks of ``SCAN_CHUNK`` columns, each tested against the heap's root with a
vectorised count, so most chunks cost a few SIMD instructions.

This heap (``ranks_below``, ``sift_down``, ``sift_up``, ``sort_heap_best_first``) is
the only one in the kernels: :func:`.search.sort_in_place` heapsorts with it too.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._flags import JIT, PJIT
from .config import SCAN_CHUNK



@njit(**JIT)
def ranks_below(score_a, item_a, score_b, item_b):
    """True when (score_a, item_a) ranks after (score_b, item_b)."""
    return score_a < score_b or (score_a == score_b and item_a > item_b)


@njit(**JIT)
def sift_down(heap_scores, heap_items, pos, size):
    """Restore the worst-at-root heap property below ``pos`` in ``heap[:size]``."""
    score = heap_scores[pos]
    item = heap_items[pos]
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        right = child + 1
        if right < size and ranks_below(heap_scores[right], heap_items[right],
                                        heap_scores[child], heap_items[child]):
            child = right
        if not ranks_below(heap_scores[child], heap_items[child], score, item):
            break
        heap_scores[pos] = heap_scores[child]
        heap_items[pos] = heap_items[child]
        pos = child
    heap_scores[pos] = score
    heap_items[pos] = item


@njit(**JIT)
def sift_up(heap_scores, heap_items, pos):
    """Move the entry at ``pos`` up until its parent ranks below it."""
    score = heap_scores[pos]
    item = heap_items[pos]
    while pos > 0:
        parent = (pos - 1) // 2
        if not ranks_below(score, item, heap_scores[parent], heap_items[parent]):
            break
        heap_scores[pos] = heap_scores[parent]
        heap_items[pos] = heap_items[parent]
        pos = parent
    heap_scores[pos] = score
    heap_items[pos] = item


@njit(**JIT)
def sort_heap_best_first(heap_scores, heap_items, size):
    """In-place heapsort of ``heap[:size]`` into best-first order."""
    for end in range(size - 1, 0, -1):
        worst_score = heap_scores[0]
        worst_item = heap_items[0]
        heap_scores[0] = heap_scores[end]
        heap_items[0] = heap_items[end]
        heap_scores[end] = worst_score
        heap_items[end] = worst_item
        sift_down(heap_scores, heap_items, np.int64(0), end)


@njit(**JIT)
def chunk_beats(row_chunk, bias_chunk, threshold):
    """Whether some ``row_chunk + bias_chunk`` (SCAN_CHUNK entries) exceeds ``threshold``.

    Counted as an integer sum, which LLVM vectorises (a float max reduction it does
    not, without the no-NaN flag we leave out); indexing views by a plain ``range``
    variable (never negative) lets Numba skip the negative-index wraparound. NaN and
    -inf never exceed.
    """
    hits = np.int32(0)
    for offset in range(SCAN_CHUNK):
        hits += np.int32(row_chunk[offset] + bias_chunk[offset] > threshold)
    return hits > 0


@njit(**JIT)
def offer_columns(row, biases, start, stop, heap_items, heap_scores):
    """Push columns ``start:stop`` into a full heap when they beat its root.

    Columns come in increasing index order, so a column tied with the root (which
    has a lower index) never enters.
    """
    capacity = heap_items.shape[0]
    threshold = heap_scores[0]
    for col in range(start, stop):
        score = row[col] + biases[col]
        if score > threshold:
            heap_scores[0] = score
            heap_items[0] = col
            sift_down(heap_scores, heap_items, np.int64(0), capacity)
            threshold = heap_scores[0]


@njit(**JIT)
def select_topk(row, biases, out_items, out_scores):
    """Best ``len(out_items)`` eligible columns of ``row + biases``, best first.

    Writes column indices into ``out_items`` and their scores into ``out_scores``;
    slots left over when fewer columns are eligible get item -1 and score -inf.
    Returns the number of filled slots.
    """
    capacity = out_items.shape[0]
    n_cols = row.shape[0]
    neg_inf = np.float32(-np.inf)
    size = np.int64(0)  # not the literal 0: Numba would compile sift_up for it too
    col = 0
    while col < n_cols and size < capacity:
        score = row[col] + biases[col]
        if score > neg_inf:
            out_scores[size] = score
            out_items[size] = col
            sift_up(out_scores, out_items, size)
            size += 1
        col += 1
    if size == capacity and capacity > 0:
        # Skip whole chunks in which no score can enter the heap (a vectorised test).
        while col + SCAN_CHUNK <= n_cols:
            if chunk_beats(row[col:col + SCAN_CHUNK], biases[col:col + SCAN_CHUNK],
                           out_scores[0]):
                offer_columns(row, biases, col, col + SCAN_CHUNK, out_items, out_scores)
            col += SCAN_CHUNK
        offer_columns(row, biases, col, n_cols, out_items, out_scores)
    sort_heap_best_first(out_scores, out_items, size)
    for slot in range(size, capacity):
        out_items[slot] = -1
        out_scores[slot] = neg_inf
    return size


@njit(**JIT)
def mask_columns(row, indices, start, stop):
    """Make the columns ``indices[start:stop]`` of ``row`` ineligible (-inf)."""
    neg_inf = np.float32(-np.inf)
    for pos in range(start, stop):
        row[indices[pos]] = neg_inf


@njit(**PJIT)
def topk_rows(scores, biases, excl_indptr, excl_indices, out_items, out_scores):
    """Top-k of every row of a score block, in parallel over rows.

    Parameters
    ----------
    scores : float32 (n_rows, n_cols), C-contiguous, overwritten (masked columns)
        ``U_block @ V.T`` without biases.
    biases : float32 (n_cols,)
    excl_indptr : int64 (n_rows + 1,)
        CSR row pointers (absolute offsets into ``excl_indices``) of the columns
        to exclude for each row.
    excl_indices : int32
    out_items : int32 (n_rows, k)
        Receives column indices, -1 for unfilled slots.
    out_scores : float32 (n_rows, k)
        Receives scores, -inf for unfilled slots.
    """
    for r in prange(scores.shape[0]):
        row = scores[r]
        mask_columns(row, excl_indices, excl_indptr[r], excl_indptr[r + 1])
        select_topk(row, biases, out_items[r], out_scores[r])
