"""Per-user ranking metrics computed straight from a block of scores.

:func:`evaluate_rows` handles a block of test users on several threads; for each
user :func:`evaluate_user` masks the train items, selects the top k (shared heap code
in :mod:`warprec._kernels.topk`) and fills one row of metric values in float64.
Column positions of that output are the module constants below.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._flags import JIT
from .config import AUC_CHUNK, LINEAR_WIDTH
from .atomic import fetch_add
from .search import count_at_most, count_below, sort_in_place
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
    kept = scores[:n_kept]
    sort_in_place(kept)
    return kept


@njit(**JIT)
def padded_thresholds(sorted_rel):
    """``sorted_rel`` padded with +inf to LINEAR_WIDTH entries when it fits, else to
    the smallest power of two strictly larger than its length."""
    n_rel = sorted_rel.shape[0]
    size = LINEAR_WIDTH
    if n_rel > LINEAR_WIDTH:
        size *= 2
        while size <= n_rel:
            size *= 2
    padded = np.empty(size, dtype=np.float32)
    for t in range(size):
        padded[t] = sorted_rel[t] if t < n_rel else np.inf
    return padded


@njit(**JIT)
def count_at_most_linear(padded, scores, n, counts):
    """counts[t] = #(padded <= scores[t]) for LINEAR_WIDTH thresholds (one SIMD compare)."""
    for t in range(n):
        score = scores[t]
        count = 0
        for u in range(LINEAR_WIDTH):
            count += np.int32(padded[u] <= score)
        counts[t] = count


@njit(**JIT)
def count_at_most_binary(padded, scores, n, counts):
    """counts[t] = #(padded <= scores[t]) by binary search, O(log len(padded)) each.

    ``len(padded)`` is a power of two whose last entry is +inf. The searches of the
    ``n`` scores advance in lockstep, one halving step at a time, with an arithmetic
    select instead of a branch: the steps of different scores are independent, so
    they overlap instead of stalling on mispredicted branches.
    """
    for t in range(n):
        counts[t] = 0
    half = padded.shape[0] // 2
    while half > 0:
        for t in range(n):
            base = counts[t]
            probe = np.uint32(base + half - 1)  # unsigned: no wraparound check
            counts[t] = base + half * np.int32(padded[probe] <= scores[t])
        half //= 2


@njit(**JIT)
def chunk_scores_eligible(row_chunk, bias_chunk, out):
    """out[:n] = row_chunk + bias_chunk; returns how many are eligible (> -inf)."""
    neg_inf = np.float32(-np.inf)
    n_eligible = np.int32(0)
    for t in range(row_chunk.shape[0]):
        score = row_chunk[t] + bias_chunk[t]
        out[t] = score
        n_eligible += np.int32(score > neg_inf)
    return n_eligible


@njit(**JIT)
def sum_counts(padded, scores, n, counts, n_rel):
    """(sum of counts[:n], number of scores equal to the largest threshold <= them).

    Counts are clipped to ``n_rel`` in place (a +inf score also passes the +inf
    padding).
    """
    total = 0
    tie_candidates = np.int32(0)
    for t in range(n):
        count = min(counts[t], n_rel)
        counts[t] = count
        total += count
        below = np.uint32(max(count - 1, 0))
        tie_candidates += np.int32((count > 0) & (padded[below] == scores[t]))
    return total, tie_candidates


@njit(**JIT)
def chunk_ties(sorted_rel, scores, n, counts):
    """Sum over the chunk of #(relevant == score): counts minus #(relevant < score)."""
    tied = 0
    for t in range(n):
        if counts[t] > 0 and sorted_rel[counts[t] - 1] == scores[t]:
            tied += counts[t] - count_below(sorted_rel, scores[t])
    return tied


@njit(**JIT)
def own_counts(sorted_rel):
    """(sum of #(rel <= r), sum of #(rel == r)) over the relevant scores r themselves."""
    at_most = 0
    tied = 0
    for t in range(sorted_rel.shape[0]):
        score = sorted_rel[t]
        upper = count_at_most(sorted_rel, score)
        at_most += upper
        tied += upper - count_below(sorted_rel, score)
    return at_most, tied


@njit(**JIT)
def user_auc(row, biases, rel_items):
    """AUC of one masked score row; NaN when undefined.

    With m relevant eligible scores sorted ascending, every eligible column j gets
    c_j = #(relevant <= s_j) (and, for the rare exact ties, the tie count t_j) in
    O(log m). Summed over the non-relevant columns N, the pairs won by the relevant
    item plus half the ties are sum_{j in N} (m - c_j + t_j / 2); the relevant
    columns' own terms are computed the same way and subtracted. Masked (-inf)
    columns have c_j = 0 and are not counted as eligible.
    """
    sorted_rel = relevant_eligible_scores(row, biases, rel_items)
    n_rel = sorted_rel.shape[0]
    if n_rel == 0:
        return np.nan
    padded = padded_thresholds(sorted_rel)
    linear = padded.shape[0] == LINEAR_WIDTH
    chunk_scores = np.empty(AUC_CHUNK, dtype=np.float32)
    chunk_counts = np.empty(AUC_CHUNK, dtype=np.int32)
    n_cols = row.shape[0]
    n_eligible = 0
    at_most = 0
    tied = 0
    for start in range(0, n_cols, AUC_CHUNK):
        n = min(AUC_CHUNK, n_cols - start)
        n_eligible += chunk_scores_eligible(row[start:start + n], biases[start:start + n],
                                            chunk_scores)
        if linear:
            count_at_most_linear(padded, chunk_scores, n, chunk_counts)
        else:
            count_at_most_binary(padded, chunk_scores, n, chunk_counts)
        chunk_at_most, tie_candidates = sum_counts(padded, chunk_scores, n, chunk_counts,
                                                   n_rel)
        at_most += chunk_at_most
        if tie_candidates:
            tied += chunk_ties(sorted_rel, chunk_scores, n, chunk_counts)
    own_at_most, own_tied = own_counts(sorted_rel)
    n_nonrel = n_eligible - n_rel
    if n_nonrel == 0:
        return np.nan
    won = n_rel * n_nonrel - (at_most - own_at_most) + 0.5 * (tied - own_tied)
    return won / (float(n_rel) * float(n_nonrel))


@njit(**JIT)
def ranking_metrics(top_items, n_filled, rel_items, rel_gains, n_relevant, k,
                    discounts, ideal_graded, out):
    """Fill precision, recall, AP, RR, NDCG, hit rate and graded NDCG in ``out``.

    ``rel_items`` must be sorted ascending; ``n_relevant`` >= 1 is the
    denominator count of relevant items (it may exceed ``len(rel_items)``).
    ``ideal_graded`` is the ideal exponential-gain DCG@k of ``rel_gains`` (NaN
    when graded NDCG is not wanted).
    """
    want_graded = not np.isnan(ideal_graded)
    n_rel_items = rel_items.shape[0]
    hits = 0
    precision_sum = 0.0
    reciprocal_rank = 0.0
    dcg = 0.0
    graded_dcg = 0.0
    for pos in range(n_filled):
        item = top_items[pos]
        at = count_below(rel_items, item)
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
        out[NDCG_GRADED] = graded_dcg / ideal_graded if ideal_graded > 0.0 else 0.0


@njit(**JIT)
def evaluate_user(row, biases, train_items, rel_items, rel_gains, n_relevant, k,
                  discounts, ideal_graded, want_auc, out):
    """All the metrics of one user from its raw score row (masked in place)."""
    mask_columns(row, train_items, 0, train_items.shape[0])
    capacity = min(k, row.shape[0])
    top_items = np.empty(capacity, dtype=np.int32)
    top_scores = np.empty(capacity, dtype=np.float32)
    n_filled = select_topk(row, biases, top_items, top_scores)
    ranking_metrics(top_items, n_filled, rel_items, rel_gains, n_relevant, k, discounts,
                    ideal_graded, out)
    out[AUC] = user_auc(row, biases, rel_items) if want_auc else np.nan


@njit(**JIT)
def evaluate_rows(scores, biases, train_indptr, train_indices, test_indptr,
                  test_indices, test_gains, n_relevant, k, discounts, ideal_graded,
                  want_auc, out, next_row):
    """Per-user metrics for a block of test users: this thread's share.

    Every thread evaluating the block runs this function with the same arguments
    (``warprec._threads.run_in_threads``; it releases the GIL); each claims the next row
    from the shared counter ``next_row[0]`` until none is left, so a thread slowed down
    by another process leaves its rows to the others. Each row's work is
    :func:`evaluate_user`. Threads in Python instead of a ``prange`` loop, whose parallel
    lowering would add to the first call's compilation.

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
    ideal_graded : float64 (n_rows,)
        Ideal exponential-gain DCG@k of each row's gains; NaN disables graded NDCG.
    want_auc : bool
        Run :func:`user_auc`, a second pass over each row. False skips it and leaves
        the AUC column NaN (the default metrics of ``evaluate_factors``).
    out : float64 (n_rows, N_METRICS)
        Receives the metric values (NaN for metrics not requested or undefined).
    next_row : int64 (1,)
        Shared row counter, 0 before the first thread starts.
    """
    n_rows = scores.shape[0]
    while True:
        r = fetch_add(next_row, 0, 1)
        if r >= n_rows:
            break
        train_start, train_stop = train_indptr[r], train_indptr[r + 1]
        test_start, test_stop = test_indptr[r], test_indptr[r + 1]
        evaluate_user(scores[r], biases, train_indices[train_start:train_stop],
                      test_indices[test_start:test_stop], test_gains[test_start:test_stop],
                      n_relevant[r], k, discounts, ideal_graded[r], want_auc, out[r])
