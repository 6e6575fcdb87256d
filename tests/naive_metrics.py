"""Slow, obviously-correct reference implementations for the metric and top-k tests.

Everything here is written straight from the definitions, with Python loops and a
full argsort of every score row, and shares no code with warprec's kernels.
"""

import math

import numpy as np

from warprec import metrics as wm


def naive_scores(user_factors, item_factors, item_biases):
    """The full float32 users x items score matrix U @ V.T + b."""
    user_factors = np.asarray(user_factors, dtype=np.float32)
    item_factors = np.asarray(item_factors, dtype=np.float32)
    return user_factors @ item_factors.T + np.asarray(item_biases, dtype=np.float32)


def naive_ranking(score_row, eligible):
    """Eligible item indices sorted by descending score, ties by lower index."""
    candidates = np.flatnonzero(eligible)
    order = sorted(candidates.tolist(), key=lambda item: (-float(score_row[item]), item))
    return np.array(order, dtype=np.int64)


def naive_eligible(n_items, user, exclude=None, allowed=None):
    """Boolean mask of the items ``user`` may be recommended: not in ``exclude[user]``
    and, if ``allowed`` is given, allowed."""
    eligible = np.ones(n_items, dtype=bool)
    if exclude is not None:
        eligible[exclude[user].indices] = False
    if allowed is not None:
        eligible &= allowed
    return eligible


def naive_topk(scores, users, k, exclude=None, allowed=None):
    """Top-k items and scores per user by sorting every eligible item."""
    n_items = scores.shape[1]
    k_eff = min(k, n_items)
    items = np.full((len(users), k_eff), -1, dtype=np.int64)
    values = np.full((len(users), k_eff), -np.inf, dtype=np.float32)
    for row, user in enumerate(users):
        eligible = naive_eligible(n_items, user, exclude, allowed)
        ranking = naive_ranking(scores[user], eligible)[:k_eff]
        items[row, : len(ranking)] = ranking
        values[row, : len(ranking)] = scores[user, ranking]
    return items, values


# --- metric definitions, one loop each -----------------------------------------

def naive_precision(ranked, relevant, k):
    return sum(1 for item in ranked[:k] if item in relevant) / k


def naive_recall(ranked, relevant, k):
    if not relevant:
        return 0.0
    return sum(1 for item in ranked[:k] if item in relevant) / len(relevant)


def naive_average_precision(ranked, relevant, k):
    if not relevant:
        return 0.0
    total = 0.0
    for position in range(1, min(k, len(ranked)) + 1):
        if ranked[position - 1] in relevant:
            total += naive_precision(ranked, relevant, position)
    return total / min(k, len(relevant))


def naive_reciprocal_rank(ranked, relevant, k):
    for position, item in enumerate(ranked[:k], start=1):
        if item in relevant:
            return 1.0 / position
    return 0.0


def naive_hit_rate(ranked, relevant, k):
    return 1.0 if any(item in relevant for item in ranked[:k]) else 0.0


def naive_dcg(gains, k, form):
    total = 0.0
    for position, gain in enumerate(gains[:k], start=1):
        if form == "classic":
            total += gain if position == 1 else gain / math.log2(position)
        elif form == "linear":
            total += gain / math.log2(position + 1)
        else:
            total += (2.0 ** gain - 1.0) / math.log2(position + 1)
    return total


def naive_ndcg(ranked, gain_of, k, form="exponential"):
    """gain_of: dict item -> gain."""
    ranked_gains = [gain_of.get(item, 0.0) for item in ranked]
    ideal = naive_dcg(sorted(gain_of.values(), reverse=True), k, form)
    return naive_dcg(ranked_gains, k, form) / ideal if ideal > 0 else 0.0


def naive_auc(score_row, relevant, eligible):
    """Pairwise AUC over eligible items; NaN when undefined."""
    positives = [score_row[i] for i in range(len(score_row)) if eligible[i] and i in relevant]
    negatives = [score_row[i] for i in range(len(score_row))
                 if eligible[i] and i not in relevant]
    if not positives or not negatives:
        return float("nan")
    total = 0.0
    for p in positives:
        for n in negatives:
            total += 1.0 if p > n else 0.5 if p == n else 0.0
    return total / (len(positives) * len(negatives))


def naive_kendall(first, second, weights=None):
    """sum w sgn sgn / sum w over u < v (tau-a)."""
    numerator = 0.0
    denominator = 0.0
    n = len(first)
    for u in range(n):
        for v in range(u + 1, n):
            w = 1.0 if weights is None else float(weights[u][v])
            numerator += w * np.sign(first[u] - first[v]) * np.sign(second[u] - second[v])
            denominator += w
    return numerator / denominator


def naive_eru(gains, d, alpha):
    return sum(max(g - d, 0.0) / 2.0 ** ((i - 1) / (alpha - 1))
               for i, g in enumerate(gains, start=1))


# --- full evaluation by argsort + the single-query functions --------------------

def naive_evaluate(user_factors, item_factors, item_biases, test, train, k,
                   n_relevant=None, graded=False):
    """Per-user metrics dict {user: {name: value}} via full argsort per user.

    Uses warprec's single-query functions (themselves checked against the loops
    above) on the full ranking of every eligible item.
    """
    scores = naive_scores(user_factors, item_factors, item_biases)
    n_items = scores.shape[1]
    results = {}
    for user in range(scores.shape[0]):
        row = test[user]
        relevant = {int(i) for i, g in zip(row.indices, row.data) if g != 0}
        count = len(relevant) if n_relevant is None else int(n_relevant[user])
        if count == 0:
            continue
        eligible = np.ones(n_items, dtype=bool)
        if train is not None:
            eligible[train[user].indices] = False
        ranked = naive_ranking(scores[user], eligible).tolist()
        # Unknown relevant items (n_relevant > stored) are padded with fake ids.
        padded = relevant | {("unknown", j) for j in range(count - len(relevant))}
        mask = np.zeros(n_items, dtype=bool)
        mask[list(relevant)] = True
        values = {
            "precision": wm.precision_at_k(ranked, padded, k),
            "recall": wm.recall_at_k(ranked, padded, k),
            "map": wm.average_precision_at_k(ranked, padded, k),
            "mrr": wm.reciprocal_rank_at_k(ranked, padded, k),
            "ndcg": wm.ndcg_at_k(ranked, padded, k),
            "hit_rate": wm.hit_rate_at_k(ranked, padded, k),
            "auc": wm.auc(scores[user], mask, ~eligible),
        }
        if graded:
            gains = {int(i): float(g) for i, g in zip(row.indices, row.data) if g != 0}
            values["ndcg_graded"] = wm.ndcg_at_k(ranked, gains, k)
        results[user] = values
    return results
