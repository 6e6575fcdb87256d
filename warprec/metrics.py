"""Ranking metrics of one query: reference definitions that need no model.

Each function takes the ranked list of one user (item ids, best first) and that user's
relevant items (or, for DCG, AUC, Kendall's tau and ERU, the gains or scores
themselves) and returns one number. The batch evaluator that scores every test user of
a factor model at once, :func:`~warprec.evaluation.evaluate_factors` and
:func:`~warprec.evaluation.evaluate`, lives in :mod:`warprec.evaluation`; it computes the
same definitions, and ``warprec.metrics.evaluate``, ``evaluate_factors``,
``METRIC_NAMES`` and ``DEFAULT_METRICS`` remain importable from here.

Conventions (the evaluation protocol of the ML-100K benchmark split): for a user
with test items ``R`` and cut-off ``k``,

* P@k = hits in the top k / k;
* R@k = hits / |R|;
* AP@k = (sum of P@i over the hit positions i <= k) / min(k, |R|);
* NDCG@k uses 1 / log2(rank + 1) discounts and the ideal DCG of min(k, |R|) hits;
* MRR@k = 1 / rank of the first hit in the top k (0 if none);

and means are taken over the users with at least one test item. The definitions
of MRR, MAP, DCG/NDCG and the weighted Kendall's tau follow Murphy 2012, "Machine
Learning: a Probabilistic Perspective", sec. 9.7.4 "Loss functions for ranking" (its
MAP worked example, eqs. 9.126-9.130 and Table 9.3); ERU/NERU follow the Expected Rank
Utility of Weimer, Karatzoglou, Le & Smola 2007, "COFI RANK - Maximum Margin Matrix
Factorization for Collaborative Ranking" (NIPS 20), appendix "Ranking losses",
sec. 1.4, which takes it from Breese, Heckerman & Kadie 1998, "Empirical analysis of
predictive algorithms for collaborative filtering" (UAI), where it is R_a.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, TypeAlias, TypeGuard

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from ._inputs import check_k
from .evaluation import DEFAULT_METRICS, METRIC_NAMES, evaluate, evaluate_factors
from .exceptions import WarprecWarning

__all__ = [
    "DEFAULT_METRICS",
    "METRIC_NAMES",
    "auc",
    "average_precision_at_k",
    "dcg_at_k",
    "evaluate",
    "evaluate_factors",
    "expected_rank_utility",
    "hit_rate_at_k",
    "kendall_tau",
    "map_at_k",
    "ndcg_at_k",
    "normalized_expected_rank_utility",
    "precision_at_k",
    "recall_at_k",
    "reciprocal_rank_at_k",
    "weighted_kendall_tau",
]

#: A ranked list: item ids, best first, without duplicates.
RankedItems: TypeAlias = Iterable[Hashable]
#: Relevant items: a collection of item ids (gain 1 each), a dict item id -> gain, or a
#: pair ``(item_ids, gains)`` of equal-length sequences. Gains are finite and >= 0.
RelevantItems: TypeAlias = (Iterable[Hashable] | Mapping[Hashable, float]
                            | tuple[Sequence[Hashable] | NDArray[Any],
                                    Sequence[float] | NDArray[Any]])
#: Pair weights of Kendall's tau: an (n, n) array (entries u < v used) or a callable
#: ``(u, v) -> weight``.
PairWeights: TypeAlias = ArrayLike | Callable[[int, int], float]

_DCG_FORMS = ("exponential", "linear", "classic")


# ----------------------------------------------------------------------------
# Argument handling for the single-query functions
# ----------------------------------------------------------------------------

def _cutoff(k: object) -> int | None:
    """``None`` (no cut-off) or a validated positive int."""
    return None if k is None else check_k(k)


def _item_list(values: object, name: str) -> list[Hashable]:
    """A collection of item ids as a Python list; rejects scalars, strings, mappings,
    non-1-D arrays and unhashable ids."""
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise ValueError(f"{name} must be 1-D (got an array of shape {values.shape})")
        items = values.tolist()
    elif isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        raise TypeError(
            f"{name} must be a sequence of item ids (got {type(values).__name__})")
    else:
        items = list(values)
    for item in items:
        if not isinstance(item, Hashable):
            raise TypeError(
                f"{name} must hold hashable item ids (got an item of type "
                f"{type(item).__name__})")
    return items


def _ranked_list(ranked: object) -> list[Hashable]:
    """The ranked item ids as a Python list; rejects bad input and duplicates."""
    items = _item_list(ranked, "ranked")
    if len(set(items)) != len(items):
        raise ValueError("ranked contains duplicate item ids; each item may appear once")
    return items


def _is_gain_pair(relevant: object) -> TypeGuard[tuple[Any, Any]]:
    """True for a pair (item_ids, gains) of equal-length sequences."""
    if not isinstance(relevant, tuple) or len(relevant) != 2:
        return False
    first, second = relevant
    return all(np.ndim(part) == 1 and not isinstance(part, (str, bytes))
               for part in (first, second)) and len(first) == len(second)


def _check_gain(gain: object, item: Hashable) -> float:
    if isinstance(gain, (bool, np.bool_)) or not isinstance(gain, numbers.Real):
        raise TypeError(f"the gain of item {item!r} must be a real number (got {gain!r})")
    if not math.isfinite(gain) or gain < 0:
        raise ValueError(f"gains must be finite and >= 0 (item {item!r} has gain {gain!r})")
    return float(gain)


def _gain_map(relevant: object) -> dict[Hashable, float]:
    """Relevant items as a dict item -> gain (1.0 for a plain collection)."""
    pairs: Iterable[tuple[Any, Any]]
    if isinstance(relevant, Mapping):
        pairs = relevant.items()
    elif _is_gain_pair(relevant):
        items = _item_list(relevant[0], "the relevant item ids")
        gains = relevant[1].tolist() if isinstance(relevant[1], np.ndarray) \
            else list(relevant[1])
        if len(set(items)) != len(items):
            raise ValueError("the relevant item ids contain duplicates")
        pairs = zip(items, gains)
    elif isinstance(relevant, (str, bytes)) or not isinstance(relevant, Iterable):
        raise TypeError(
            "relevant must be a collection of item ids, a dict item -> gain or a pair "
            f"(item_ids, gains) (got {type(relevant).__name__})")
    else:
        return {item: 1.0 for item in _item_list(relevant, "relevant")}
    return {item: _check_gain(gain, item) for item, gain in pairs}


def _relevant_set(relevant: object) -> set[Hashable]:
    """The set of relevant items (graded input: the items with a positive gain)."""
    return {item for item, gain in _gain_map(relevant).items() if gain > 0}


def _hit_flags(ranked: object, relevant: object, k: object) -> tuple[list[bool], int]:
    """Hit indicators (list of bool) of the first k ranked items, and |relevant|."""
    items = _ranked_list(ranked)
    relevant_items = _relevant_set(relevant)
    cutoff = _cutoff(k)
    head = items if cutoff is None else items[:cutoff]
    return [item in relevant_items for item in head], len(relevant_items)


# ----------------------------------------------------------------------------
# Single-query binary metrics
# ----------------------------------------------------------------------------

def precision_at_k(ranked: RankedItems, relevant: RelevantItems, k: int | None = None) -> float:
    """Precision at k of one ranked list.

    P@k = (number of relevant items among the first k ranked items) / k.

    Parameters
    ----------
    ranked : sequence of hashable
        Item ids in ranked order, best first, without duplicates.
    relevant : collection of hashable, dict item -> gain, or (items, gains) pair
        The relevant items. For graded input the items with a gain > 0 are relevant.
    k : int or None, default None
        Cut-off, >= 1. None means no cut-off: k = len(ranked).

    Returns
    -------
    float
        In [0, 1].

    Notes
    -----
    The denominator is ``k`` itself, not ``min(k, len(ranked))``: a list shorter
    than k is penalised for its missing slots (the protocol's P@k = hits / k). With
    ``k=None`` and an empty list the result is 0.0.

    Raises
    ------
    ValueError
        If k is not a positive integer or ``ranked`` has duplicates.
    """
    flags, _ = _hit_flags(ranked, relevant, k)
    denominator = len(flags) if k is None else check_k(k)
    return sum(flags) / denominator if denominator else 0.0


def recall_at_k(ranked: RankedItems, relevant: RelevantItems, k: int | None = None) -> float:
    """Recall at k of one ranked list.

    R@k = (number of relevant items among the first k ranked items) / |relevant|.

    Parameters
    ----------
    ranked : sequence of hashable
        Item ids in ranked order, best first, without duplicates.
    relevant : collection of hashable, dict item -> gain, or (items, gains) pair
        The relevant items (for graded input, those with a gain > 0).
    k : int or None, default None
        Cut-off, >= 1; None means the whole list.

    Returns
    -------
    float
        In [0, 1]; 0.0 when there are no relevant items.
    """
    flags, n_relevant = _hit_flags(ranked, relevant, k)
    return sum(flags) / n_relevant if n_relevant else 0.0


def average_precision_at_k(ranked: RankedItems, relevant: RelevantItems,
                           k: int | None = None) -> float:
    """Average precision at k (AP@k) of one ranked list.

    AP@k = (sum of P@i over the positions i <= k holding a relevant item)
    / min(k, |relevant|).

    The example of Murphy 2012, sec. 9.7.4: relevance (1, 0, 1, 0, 1) with three
    relevant items gives (1/1 + 2/3 + 3/5) / 3 = 0.7556.

    Parameters
    ----------
    ranked : sequence of hashable
        Item ids in ranked order, best first, without duplicates.
    relevant : collection of hashable, dict item -> gain, or (items, gains) pair
        The relevant items (for graded input, those with a gain > 0).
    k : int or None, default None
        Cut-off, >= 1. None means no cut-off; the denominator is then |relevant|
        (the uncut AP of Murphy 2012, eq. 9.127).

    Returns
    -------
    float
        In [0, 1]; 0.0 when there are no relevant items.
    """
    flags, n_relevant = _hit_flags(ranked, relevant, k)
    if n_relevant == 0:
        return 0.0
    hits = 0
    precision_sum = 0.0
    for position, is_hit in enumerate(flags, start=1):
        if is_hit:
            hits += 1
            precision_sum += hits / position
    denominator = n_relevant if k is None else min(check_k(k), n_relevant)
    return precision_sum / denominator


def map_at_k(rankings: Iterable[RankedItems], relevants: Iterable[RelevantItems],
             k: int | None = None) -> float:
    """Mean average precision at k over several queries.

    Parameters
    ----------
    rankings : sequence of sequences
        One ranked list per query.
    relevants : sequence of collections
        The relevant items of each query (same length as ``rankings``).
    k : int or None, default None
        Cut-off passed to :func:`average_precision_at_k`.

    Returns
    -------
    float
        The mean of AP@k over the queries; NaN (with a WarprecWarning) when there
        are no queries.
    """
    _cutoff(k)  # validate k even when there are no queries
    for name, value in (("rankings", rankings), ("relevants", relevants)):
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
            raise TypeError(
                f"{name} must be a sequence with one entry per query "
                f"(got {type(value).__name__})")
    rankings = list(rankings)
    relevants = list(relevants)
    if len(rankings) != len(relevants):
        raise ValueError(
            f"rankings and relevants must have the same length "
            f"(got {len(rankings)} and {len(relevants)})")
    if not rankings:
        warnings.warn("map_at_k got no queries; returning NaN", WarprecWarning, stacklevel=2)
        return float("nan")
    values = [average_precision_at_k(r, rel, k) for r, rel in zip(rankings, relevants)]
    return float(np.mean(values))


def reciprocal_rank_at_k(ranked: RankedItems, relevant: RelevantItems,
                         k: int | None = None) -> float:
    """Reciprocal rank at k (the per-query term of MRR@k).

    RR@k = 1 / (rank of the first relevant item), if that rank is <= k, else 0.

    Parameters
    ----------
    ranked : sequence of hashable
        Item ids in ranked order, best first, without duplicates.
    relevant : collection of hashable, dict item -> gain, or (items, gains) pair
        The relevant items (for graded input, those with a gain > 0).
    k : int or None, default None
        Cut-off, >= 1; None means the whole list.

    Returns
    -------
    float
        In [0, 1]; 0.0 when no relevant item is in the top k (including when there
        are no relevant items).
    """
    flags, _ = _hit_flags(ranked, relevant, k)
    for position, is_hit in enumerate(flags, start=1):
        if is_hit:
            return 1.0 / position
    return 0.0


def hit_rate_at_k(ranked: RankedItems, relevant: RelevantItems, k: int | None = None) -> float:
    """Hit rate at k of one ranked list: 1.0 if any of the first k items is relevant.

    Parameters
    ----------
    ranked : sequence of hashable
        Item ids in ranked order, best first, without duplicates.
    relevant : collection of hashable, dict item -> gain, or (items, gains) pair
        The relevant items (for graded input, those with a gain > 0).
    k : int or None, default None
        Cut-off, >= 1; None means the whole list.

    Returns
    -------
    float
        1.0 or 0.0 (0.0 when there are no relevant items).
    """
    flags, _ = _hit_flags(ranked, relevant, k)
    return 1.0 if any(flags) else 0.0


# ----------------------------------------------------------------------------
# DCG / NDCG
# ----------------------------------------------------------------------------

def _check_form(form: object) -> None:
    if form not in _DCG_FORMS:
        raise ValueError(f"form must be one of {_DCG_FORMS} (got {form!r})")


def _as_real_vector(values: object, name: str) -> NDArray[np.float64]:
    """A 1-D float64 array of real numbers (bools count as 0/1), or a clear error."""
    if values is None or isinstance(values, (str, bytes, Mapping)):
        raise TypeError(
            f"{name} must be a 1-D sequence of real numbers (got {type(values).__name__})")
    try:
        array = np.asarray(values)
    except ValueError:
        raise ValueError(
            f"{name} must be a 1-D sequence of real numbers (got a ragged nested "
            "sequence)") from None
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D (got shape {array.shape})")
    if not (array.dtype == np.bool_ or np.issubdtype(array.dtype, np.integer)
            or np.issubdtype(array.dtype, np.floating)):
        raise TypeError(f"{name} must hold real numbers (got dtype {array.dtype})")
    return array.astype(np.float64)


def _as_gain_vector(gains: object, name: str,
                    allow_negative: bool = True) -> NDArray[np.float64]:
    array = _as_real_vector(gains, name)
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite (got NaN or infinite gains)")
    if not allow_negative and (array < 0).any():
        raise ValueError(f"{name} must be >= 0 (got a negative gain)")
    return array


def _dcg(gains: NDArray[np.float64], form: str) -> float:
    """DCG of a gain vector (already truncated), float64."""
    positions = np.arange(1, gains.shape[0] + 1, dtype=np.float64)
    if form == "classic":
        discounts = np.ones_like(positions)
        discounts[1:] = 1.0 / np.log2(positions[1:])
        return float(np.sum(gains * discounts))
    if form == "exponential" and gains.size and gains.max() >= 1024:
        raise ValueError(f"gain {gains.max():g} is too large for the exponential DCG form: "
                         "2**gain overflows float64 for gains >= 1024; use form='linear' or "
                         "rescale the gains.")
    numerators = np.exp2(gains) - 1.0 if form == "exponential" else gains
    return float(np.sum(numerators / np.log2(positions + 1.0)))


def dcg_at_k(gains_in_rank_order: ArrayLike, k: int | None = None,
             form: str = "exponential") -> float:
    """Discounted cumulative gain of the first k gains of a ranking.

    With ``r_i`` the gain of the item at (1-based) position ``i``:

    * ``"exponential"`` (default): DCG@k = sum_{i<=k} (2^{r_i} - 1) / log2(i + 1)
      (Murphy 2012, eq. 9.129; for 0/1 gains it equals the protocol's binary DCG);
    * ``"linear"``: DCG@k = sum_{i<=k} r_i / log2(i + 1);
    * ``"classic"``: DCG@k = r_1 + sum_{2<=i<=k} r_i / log2(i) (Murphy 2012,
      eq. 9.128; Table 9.3's gains (3, 2, 3, 0, 1, 2) give 8.09).

    Parameters
    ----------
    gains_in_rank_order : array_like of float, shape (n,)
        Gain (relevance) of each ranked item, best-ranked first.
    k : int or None, default None
        Cut-off, >= 1; None means all n positions. Positions beyond n add nothing.
    form : {"exponential", "linear", "classic"}

    Returns
    -------
    float
        >= 0; 0.0 for an empty gain vector.

    Raises
    ------
    ValueError
        On a bad k or form, or gains that are negative or not finite (relevance
        grades are >= 0, as in :func:`ndcg_at_k`).
    TypeError
        On non-numeric gains.
    """
    _check_form(form)
    gains = _as_gain_vector(gains_in_rank_order, "gains_in_rank_order",
                            allow_negative=False)
    cutoff = _cutoff(k)
    return _dcg(gains if cutoff is None else gains[:cutoff], form)


def ndcg_at_k(ranked: RankedItems, relevant: RelevantItems, k: int | None = None,
              form: str = "exponential") -> float:
    """Normalised DCG at k of one ranked list.

    NDCG@k = DCG@k(ranking) / IDCG@k, where IDCG@k is the DCG@k of the best possible
    ordering of *all* the relevant gains (sorted descending, truncated at k), so
    for binary relevance it is the DCG of min(k, |relevant|) hits. See
    :func:`dcg_at_k` for the three forms.

    Parameters
    ----------
    ranked : sequence of hashable
        Item ids in ranked order, best first, without duplicates.
    relevant : collection of hashable, dict item -> gain, or (items, gains) pair
        A plain collection means gain 1 for each item (binary relevance). A dict or
        a pair of equal-length arrays gives graded gains (finite, >= 0). Items not
        listed have gain 0.
    k : int or None, default None
        Cut-off, >= 1; None means no cut-off (whole list and all relevant gains).
    form : {"exponential", "linear", "classic"}, default "exponential"

    Returns
    -------
    float
        In [0, 1]; 0.0 when the ideal DCG is 0 (no relevant item with a positive
        gain).

    Examples
    --------
    Table 9.3 of Murphy 2012 (classic form):

    >>> round(ndcg_at_k(list("abcdef"), dict(zip("abcdef", (3, 2, 3, 0, 1, 2))),
    ...                 6, form="classic"), 4)
    0.9315

    (the table's 0.9306 divides the rounded DCG 8.09 by the rounded ideal 8.693).
    """
    _check_form(form)
    items = _ranked_list(ranked)
    gain_of = _gain_map(relevant)
    cutoff = _cutoff(k)
    head = items if cutoff is None else items[:cutoff]
    ranked_gains = np.array([gain_of.get(item, 0.0) for item in head], dtype=np.float64)
    ideal = np.sort(np.array(list(gain_of.values()), dtype=np.float64))[::-1]
    ideal_dcg = _dcg(ideal if cutoff is None else ideal[:cutoff], form)
    if ideal_dcg == 0.0:
        return 0.0
    return _dcg(ranked_gains, form) / ideal_dcg


# ----------------------------------------------------------------------------
# AUC
# ----------------------------------------------------------------------------

def _as_mask(mask: object, n: int, name: str) -> NDArray[np.bool_]:
    if mask is None or isinstance(mask, (str, bytes, Mapping)):
        raise TypeError(f"{name} must be a boolean (or 0/1) mask (got {type(mask).__name__})")
    try:
        array = np.asarray(mask)
    except ValueError:
        raise ValueError(f"{name} must be a 1-D boolean mask (got a ragged sequence)") from None
    if array.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},) like scores (got {array.shape})")
    if array.dtype == np.bool_:
        return array
    if np.issubdtype(array.dtype, np.number) and np.isin(array, (0, 1)).all():
        return array.astype(bool)
    raise TypeError(f"{name} must be a boolean (or 0/1) mask")


def auc(scores: ArrayLike, relevant_mask: ArrayLike,
        exclude_mask: ArrayLike | None = None) -> float:
    """Area under the ROC curve of one user's scores.

    AUC = fraction of (relevant, non-relevant) item pairs in which the relevant item
    scores strictly higher; a tie counts 1/2. Excluded items take part in no pair.

    Parameters
    ----------
    scores : array_like of float, shape (n_items,)
        The user's scores (higher is better); must not contain NaN.
    relevant_mask : array_like of bool, shape (n_items,)
        True for the relevant items.
    exclude_mask : array_like of bool, shape (n_items,), optional
        True for items to leave out entirely (e.g. train items).

    Returns
    -------
    float
        In [0, 1]; ``np.nan`` when AUC is undefined, i.e. when no relevant or no
        non-relevant item remains after exclusion.

    Raises
    ------
    ValueError
        On NaN scores or mismatched shapes.
    """
    values = _as_real_vector(scores, "scores")
    if np.isnan(values).any():
        raise ValueError(
            f"scores contains NaN at position(s) {np.flatnonzero(np.isnan(values))[:5].tolist()}"
            "; AUC needs a comparable score for every item")
    relevant = _as_mask(relevant_mask, values.shape[0], "relevant_mask")
    if exclude_mask is not None:
        keep = ~_as_mask(exclude_mask, values.shape[0], "exclude_mask")
        values, relevant = values[keep], relevant[keep]
    n_relevant = int(relevant.sum())
    n_other = values.shape[0] - n_relevant
    if n_relevant == 0 or n_other == 0:
        return float("nan")
    # Mann-Whitney: average ranks give ties a half.
    ranks = stats.rankdata(values, method="average")
    rank_sum = float(ranks[relevant].sum())
    return (rank_sum - n_relevant * (n_relevant + 1) / 2.0) / (n_relevant * n_other)


# ----------------------------------------------------------------------------
# Kendall's tau
# ----------------------------------------------------------------------------

def _as_ranking_pair(ranking_a: object, ranking_b: object
                     ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    first = _as_real_vector(ranking_a, "the first ranking")
    second = _as_real_vector(ranking_b, "the second ranking")
    if first.shape != second.shape:
        raise ValueError(
            f"the two rankings must have the same length (got {first.shape[0]} and "
            f"{second.shape[0]})")
    if np.isnan(first).any() or np.isnan(second).any():
        raise ValueError("the rankings must not contain NaN (ties are allowed)")
    return first, second


def _pair_weights(weights: PairWeights, n: int) -> NDArray[np.float64]:
    """Weights w_uv for u < v as an (n, n) matrix whose upper triangle is used."""
    if callable(weights):
        matrix = np.zeros((n, n))
        for u in range(n):
            for v in range(u + 1, n):
                weight = weights(u, v)
                if isinstance(weight, (bool, np.bool_)) or not isinstance(weight, numbers.Real):
                    raise TypeError(
                        f"the weight callable must return real numbers (got {weight!r} "
                        f"for the pair ({u}, {v}))")
                matrix[u, v] = weight
    else:
        matrix = np.asarray(weights)
        if matrix.shape != (n, n):
            raise ValueError(f"weights must have shape ({n}, {n}) (got {matrix.shape})")
        if not (np.issubdtype(matrix.dtype, np.integer)
                or np.issubdtype(matrix.dtype, np.floating)):
            raise TypeError(f"weights must hold real numbers (got dtype {matrix.dtype})")
        matrix = matrix.astype(np.float64)
    upper = matrix[np.triu_indices(n, 1)]
    if not np.isfinite(upper).all() or (upper < 0).any():
        raise ValueError("pair weights must be finite and >= 0")
    return matrix


def _weighted_sign_agreement(first: NDArray[np.float64], second: NDArray[np.float64],
                             weights: PairWeights) -> tuple[float, float]:
    """(sum_{u<v} w_uv sgn(a_u-a_v) sgn(b_u-b_v), sum_{u<v} w_uv)."""
    n = first.shape[0]
    upper_u, upper_v = np.triu_indices(n, 1)
    w = _pair_weights(weights, n)[upper_u, upper_v]
    agreement = (np.sign(first[upper_u] - first[upper_v])
                 * np.sign(second[upper_u] - second[upper_v]))
    return float(np.sum(w * agreement)), float(np.sum(w))


def _tie_pairs(values: NDArray[np.float64]) -> int:
    """Number of unordered pairs with equal values."""
    _, counts = np.unique(values, return_counts=True)
    return int(np.sum(counts * (counts - 1) // 2))


def kendall_tau(ranking_a: ArrayLike, ranking_b: ArrayLike,
                weights: PairWeights | None = None) -> float:
    """Kendall's tau (tau-a) between two rankings of the same n objects.

    tau = sum_{u<v} w_uv sgn(a_u - a_v) sgn(b_u - b_v) / sum_{u<v} w_uv,

    with all w_uv = 1 by default, i.e. (concordant - discordant) / (n (n-1) / 2).

    Parameters
    ----------
    ranking_a, ranking_b : array_like of float, shape (n,)
        Entry u is the score (or the rank) of object u. Both vectors must be of the
        same kind: scores and ranks are oriented oppositely, and mixing them flips
        the sign.
    weights : array_like (n, n), callable (u, v) -> float, or None
        Optional non-negative pair weights; only u < v entries are used.

    Returns
    -------
    float
        In [-1, 1]; NaN when there are no pairs (n < 2) or all weights are 0.

    Notes
    -----
    This is tau-a: a pair tied in either ranking contributes 0 to the numerator
    but still counts in the denominator, so ties pull tau towards 0 (unlike tau-b).
    It relates to Murphy 2012, eq. 9.130, by
    ``weighted_kendall_tau = (kendall_tau + 1) / 2`` for the same weights.
    The unweighted case runs in O(n log n) (scipy's tau-b rescaled by the tie
    counts, with concordant - discordant rounded to its exact integer value); the
    weighted case in O(n^2) time and memory.
    """
    first, second = _as_ranking_pair(ranking_a, ranking_b)
    n = first.shape[0]
    if weights is not None:
        agreement, total = _weighted_sign_agreement(first, second, weights)
        return agreement / total if total > 0 else float("nan")
    n_pairs = n * (n - 1) // 2
    if n_pairs == 0:
        return float("nan")
    untied_a = n_pairs - _tie_pairs(first)
    untied_b = n_pairs - _tie_pairs(second)
    if untied_a == 0 or untied_b == 0:
        return 0.0
    tau_b = stats.kendalltau(first, second, variant="b").statistic
    # concordant - discordant is an integer: round away the float error of tau-b
    balance = round(tau_b * math.sqrt(untied_a) * math.sqrt(untied_b))
    return balance / n_pairs


def weighted_kendall_tau(pi: ArrayLike, pi_star: ArrayLike,
                         w: PairWeights | None = None) -> float:
    """Weighted Kendall's tau of Murphy 2012, eq. 9.130, in [0, 1].

    tau(pi, pi*) = sum_{u<v} w_uv [1 + sgn(pi_u - pi_v) sgn(pi*_u - pi*_v)]
    / (2 sum_{u<v} w_uv).

    Parameters
    ----------
    pi, pi_star : array_like of float, shape (n,)
        The ranked list and the relevance judgment, as per-object scores or ranks
        (both of the same kind).
    w : array_like (n, n), callable (u, v) -> float, or None
        Non-negative pair weights (only u < v is used); None means all ones.

    Returns
    -------
    float
        1 for identical orderings, 0 for reversed ones; a pair tied in either
        input contributes half its weight. NaN when there are no pairs (n < 2) or
        all weights are 0.

    Notes
    -----
    With ``w=None`` this is ``(kendall_tau(pi, pi_star) + 1) / 2``, computed in
    O(n log n); explicit weights cost O(n^2) time and memory.
    """
    if w is None:  # all-ones weights: the identity with tau-a, in O(n log n)
        return (kendall_tau(pi, pi_star) + 1.0) / 2.0
    first, second = _as_ranking_pair(pi, pi_star)
    agreement, total = _weighted_sign_agreement(first, second, w)
    return (total + agreement) / (2.0 * total) if total > 0 else float("nan")


# ----------------------------------------------------------------------------
# Expected rank utility
# ----------------------------------------------------------------------------

def _check_eru_params(d: object, alpha: object) -> None:
    if not isinstance(d, numbers.Real) or not math.isfinite(d):
        raise ValueError(f"d must be a finite number (got {d!r})")
    if not isinstance(alpha, numbers.Real) or not math.isfinite(alpha) or alpha <= 1:
        raise ValueError(f"alpha (the half-life) must be a finite number > 1 (got {alpha!r})")


def _eru(gains: NDArray[np.float64], d: float, alpha: float) -> float:
    positions = np.arange(gains.shape[0], dtype=np.float64)
    weights = np.exp2(-positions / (alpha - 1.0))
    return float(np.sum(weights * np.maximum(gains - d, 0.0)))


def expected_rank_utility(ranked_gains: ArrayLike, d: float = 0.0, alpha: float = 5.0,
                          k: int | None = None) -> float:
    """Expected rank utility (Breese, Heckerman & Kadie 1998's R_a) of one ranked list.

    As defined in Weimer, Karatzoglou, Le & Smola 2007, appendix "Ranking losses",
    sec. 1.4:

    ERU = sum_{i=1}^{k} 2^{-(i-1)/(alpha-1)} max(y_{pi_i} - d, 0),

    where y_{pi_i} is the gain (vote) of the item at position i, d is the neutral
    vote and alpha the viewing half-life: the item at position alpha is viewed with
    probability 1/2.

    Parameters
    ----------
    ranked_gains : array_like of float, shape (n,)
        Gains of the ranked items, best-ranked first.
    d : float, default 0.0
        Neutral vote; gains at or below d contribute nothing.
    alpha : float, default 5.0
        Half-life, > 1 (Breese et al. use 5).
    k : int or None, default None
        Cut-off, >= 1; None means all positions.

    Returns
    -------
    float
        >= 0; 0.0 for an empty list.
    """
    _check_eru_params(d, alpha)
    gains = _as_gain_vector(ranked_gains, "ranked_gains")
    cutoff = _cutoff(k)
    return _eru(gains if cutoff is None else gains[:cutoff], d, alpha)


def normalized_expected_rank_utility(ranked_gains: ArrayLike, d: float = 0.0,
                                     alpha: float = 5.0, k: int | None = None, *,
                                     ideal_gains: ArrayLike | None = None) -> float:
    """Normalised expected rank utility: ERU / ERU of the ideal ordering.

    NERU(pi, y) = ERU(pi, y) / ERU(argsort(y) descending, y); see
    :func:`expected_rank_utility`.

    Parameters
    ----------
    ranked_gains : array_like of float, shape (n,)
        Gains of the ranked items, best-ranked first.
    d, alpha, k
        As in :func:`expected_rank_utility`.
    ideal_gains : array_like of float, optional
        Gains of every candidate item, used for the ideal ordering (pass it when
        ``ranked_gains`` does not cover all the items with gain > d). Default:
        ``ranked_gains``.

    Returns
    -------
    float
        In [0, 1] when ``ideal_gains`` includes the ranked gains; 0.0 when the ideal
        ERU is 0 (no gain exceeds d).
    """
    _check_eru_params(d, alpha)
    gains = _as_gain_vector(ranked_gains, "ranked_gains")
    pool = gains if ideal_gains is None else _as_gain_vector(ideal_gains, "ideal_gains")
    cutoff = _cutoff(k)
    ideal = np.sort(pool)[::-1]
    if cutoff is not None:
        gains, ideal = gains[:cutoff], ideal[:cutoff]
    ideal_eru = _eru(ideal, d, alpha)
    return _eru(gains, d, alpha) / ideal_eru if ideal_eru > 0 else 0.0
