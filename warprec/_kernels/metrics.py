"""Per-user ranking metrics computed straight from a block of scores.

One ``prange`` kernel, :func:`evaluate_rows`, handles a block of test users: it
masks the user's train items, selects the top k (shared heap code in
:mod:`warprec._kernels.topk`) and fills one row of metric values per user in
float64. Column positions of that output are the module constants below.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._flags import JIT, PJIT
from .topk import mask_columns, select_topk

PRECISION = 0
RECALL = 1
AVERAGE_PRECISION = 2
RECIPROCAL_RANK = 3
NDCG = 4
HIT_RATE = 5
AUC = 6
NDCG_GRADED = 7
N_METRICS = 8


@njit(**JIT)
def count_at_most(sorted_scores, score):
    """Number of entries of the ascending ``sorted_scores`` that are <= ``score``.

    Branch-free binary search: the loop trip count depends only on the length.
    """
    n = sorted_scores.shape[0]
    if n == 0:
        return 0
    base = 0
    while n > 1:
        half = n // 2
        if sorted_scores[base + half] <= score:
            base += half
        n -= half
    return base + (1 if sorted_scores[base] <= score else 0)


@njit(**JIT)
def count_below(sorted_scores, score):
    """Number of entries of the ascending ``sorted_scores`` that are < ``score``."""
    return np.searchsorted(sorted_scores, score, side="left")


@njit(**JIT)
def relevant_eligible_scores(row, biases, rel_items):
    """Ascending scores of the relevant columns that are not masked."""
    neg_inf = np.float32(-np.inf)
    scores = np.empty(rel_items.shape[0], dtype=np.float32)
    n_kept = 0
    for t in range(rel_items.shape[0]):
        col = rel_items[t]
        score = row[col] + biases[col]
        if score > neg_inf:
            scores[n_kept] = score
            n_kept += 1
    return np.sort(scores[:n_kept])


@njit(**JIT)
def pairs_above_and_tied(sorted_rel, score):
    """(relevant scores > score, relevant scores == score) for one score."""
    n_at_most = count_at_most(sorted_rel, score)
    above = sorted_rel.shape[0] - n_at_most
    tied = 0
    if n_at_most > 0 and sorted_rel[n_at_most - 1] == score:
        tied = n_at_most - count_below(sorted_rel, score)
    return above, tied


@njit(**JIT)
def user_auc(row, biases, rel_items):
    """AUC of one masked score row; NaN when undefined.

    For every eligible column, count the relevant scores above it and tied with
    it (binary search in the sorted relevant scores: O(n_cols log n_rel)); then
    subtract the relevant-vs-relevant counts, computed the same way.
    """
    sorted_rel = relevant_eligible_scores(row, biases, rel_items)
    n_rel = sorted_rel.shape[0]
    if n_rel == 0:
        return np.nan
    neg_inf = np.float32(-np.inf)
    lowest = sorted_rel[0]
    highest = sorted_rel[n_rel - 1]
    above = 0
    tied = 0
    n_eligible = 0
    for col in range(row.shape[0]):
        score = row[col] + biases[col]
        if not score > neg_inf:
            continue
        n_eligible += 1
        if score < lowest:
            above += n_rel
        elif score <= highest:
            col_above, col_tied = pairs_above_and_tied(sorted_rel, score)
            above += col_above
            tied += col_tied
    for t in range(n_rel):
        rel_above, rel_tied = pairs_above_and_tied(sorted_rel, sorted_rel[t])
        above -= rel_above
        tied -= rel_tied
    n_nonrel = n_eligible - n_rel
    if n_nonrel == 0:
        return np.nan
    return (above + 0.5 * tied) / (float(n_rel) * float(n_nonrel))


@njit(**JIT)
def ideal_graded_dcg(rel_gains, cutoff, discounts):
    """Exponential-gain DCG of the best ordering of ``rel_gains`` truncated at cutoff."""
    ordered = np.sort(rel_gains.astype(np.float64))[::-1]
    total = 0.0
    for pos in range(min(cutoff, ordered.shape[0])):
        total += (np.exp2(ordered[pos]) - 1.0) * discounts[pos]
    return total


@njit(**JIT)
def ranking_metrics(top_items, n_filled, rel_items, rel_gains, n_relevant, k,
                    discounts, want_graded, out):
    """Fill precision, recall, AP, RR, NDCG, hit rate (and graded NDCG) in ``out``.

    ``rel_items`` must be sorted ascending; ``n_relevant`` >= 1 is the
    denominator count of relevant items (it may exceed ``len(rel_items)``).
    """
    n_rel_items = rel_items.shape[0]
    hits = 0
    precision_sum = 0.0
    reciprocal_rank = 0.0
    dcg = 0.0
    graded_dcg = 0.0
    for pos in range(n_filled):
        item = top_items[pos]
        at = np.searchsorted(rel_items, item)
        if at < n_rel_items and rel_items[at] == item:
            hits += 1
            precision_sum += hits / (pos + 1.0)
            if hits == 1:
                reciprocal_rank = 1.0 / (pos + 1.0)
            dcg += discounts[pos]
            if want_graded:
                graded_dcg += (np.exp2(np.float64(rel_gains[at])) - 1.0) * discounts[pos]
    cutoff = min(k, n_relevant)
    ideal_dcg = 0.0
    for pos in range(cutoff):
        ideal_dcg += discounts[pos]
    out[PRECISION] = hits / float(k)
    out[RECALL] = hits / float(n_relevant)
    out[AVERAGE_PRECISION] = precision_sum / cutoff
    out[RECIPROCAL_RANK] = reciprocal_rank
    out[NDCG] = dcg / ideal_dcg
    out[HIT_RATE] = 1.0 if hits > 0 else 0.0
    out[NDCG_GRADED] = np.nan
    if want_graded:
        ideal = ideal_graded_dcg(rel_gains, k, discounts)
        out[NDCG_GRADED] = graded_dcg / ideal if ideal > 0.0 else 0.0


@njit(**PJIT)
def evaluate_rows(scores, biases, train_indptr, train_indices, test_indptr,
                  test_indices, test_gains, n_relevant, k, discounts, want_auc,
                  want_graded, out):
    """Per-user metrics for a block of test users, in parallel over rows.

    Parameters
    ----------
    scores : float32 (n_rows, n_items), C-contiguous, overwritten (masked columns)
        ``U_block @ V.T`` without biases.
    biases : float32 (n_items,)
    train_indptr, train_indices : int64 (n_rows + 1,), int32
        CSR (absolute offsets) of the items to exclude for each row.
    test_indptr, test_indices, test_gains : int64 (n_rows + 1,), int32, float64
        CSR (absolute offsets, sorted indices) of the relevant items and gains.
    n_relevant : int64 (n_rows,)
        Relevant-item counts used as denominators, each >= 1.
    k : int
        Cut-off (may exceed n_items).
    discounts : float64 (>= min(k, max(n_items, max n_relevant)),)
        ``1 / log2(pos + 2)`` for 0-based position ``pos``.
    want_auc, want_graded : bool
    out : float64 (n_rows, N_METRICS)
        Receives the metric values (NaN for metrics not requested or undefined).
    """
    n_cols = scores.shape[1]
    capacity = min(k, n_cols)
    for r in prange(scores.shape[0]):
        row = scores[r]
        mask_columns(row, train_indices, train_indptr[r], train_indptr[r + 1])
        top_items = np.empty(capacity, dtype=np.int32)
        top_scores = np.empty(capacity, dtype=np.float32)
        n_filled = select_topk(row, biases, top_items, top_scores)
        start = test_indptr[r]
        stop = test_indptr[r + 1]
        rel_items = test_indices[start:stop]
        ranking_metrics(top_items, n_filled, rel_items, test_gains[start:stop],
                        n_relevant[r], k, discounts, want_graded, out[r])
        out[r, AUC] = user_auc(row, biases, rel_items) if want_auc else np.nan
