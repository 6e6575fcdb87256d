"""The hybrid model's epoch: users and items as weighted sums of feature embeddings.

A user's representation is ``sum_f x_uf E_U[f]`` over the nonzeros of its row of the
user feature matrix, an item's ``sum_f x_if E_I[f]`` and its bias ``sum_f x_if c[f]``
(LightFM's model, and the way WSABIE embeds its inputs: Weston, Bengio & Usunier 2010,
sec. 3). WARP (or BPR) is applied to the scores of these sums exactly as in
:mod:`.warp`, with its violator search and rank estimate (``first_violator``,
``sampled_rank``): the same counter-based draws and margin test, in the same epoch
skeleton (:mod:`.epoch`), into which the module is plugged. An update moves every
feature row involved: the gradient with respect to a representation, times the feature's
weight, with Adagrad per feature row and the decoupled decay of the plain model, divided
for a feature by ``sqrt(m)``, ``m`` the number of entities that have it
(``*_decay_share``). A feature shared by ``m`` entities is touched about ``m`` times as
often as an entity's own row: with the full decay per update such embeddings shrank to
nothing (movies ranked from their genres alone on ml-latest-small: NDCG@10 0.027),
without any they crowded out the entities' own embeddings (warm NDCG@10 4.5% below the
model without features); ``sqrt(m)`` keeps the warm model level and the cold one 0.043
(docs/design.md).

With ``Mode.prefetch`` the slice runs the plain model's pipeline where it applies
(:func:`prefetching_ahead`): a negative candidate's CSR bounds and, when every item's
first feature is its own indicator (``item_indicators``), that row and bias are asked
for as soon as the candidate is drawn (:func:`fetch_candidate`); the row is the one
likely out of cache, the shared feature rows are read by many samples. The first
candidates of the next sample are drawn one sample early (``warp.draw_early``) and their
feature lists asked for at the start of their sample.

With ``Settings.feature_negatives = p > 0`` a share ``p`` of the positives (a coin per
positive, drawn from the sample's stream) take their negatives among the items that share
a feature with the positive (:func:`pool_feature`, :func:`draw_pool_negative`): one of
the positive's item features shared with another item is chosen uniformly, and every
negative of the step is drawn uniformly among that feature's items (the column of the
item feature matrix, ``FeatureParameters.item_pool_*``), redrawn while it is one of the
user's positives. The step's features shared by ``i`` and ``j`` cancel in ``rep_j -
rep_i``, so such a step trains what tells items of one genre apart for the user, which
is all that ranks cold items of that genre against each other; uniform draws mostly
train what tells genres apart. WARP's rank estimate assumes uniform draws over the
user's negatives: from draws within a feature's ``m`` items it estimates the rank of
``i`` among them, ``floor((m - 2) / N)`` (``m - 1`` candidates; the user's other
positives among them are not counted), and the step descends ``L`` of that rank, a WARP
loss over the feature's items (Weston et al.'s estimate, honest for that loss; not the
rank among all items, which it underestimates). BPR takes its one negative there. The
draws lie past every position :func:`.negatives.draw_negative` uses
(``FEATURE_STREAM``), and with ``p = 0`` nothing is drawn: the uniform steps are
unchanged bit for bit. Such a step does not use the candidates drawn early
(``Mode.prefetch``).

Supported: the WARP loss with the estimated rank and BPR, Adagrad or plain SGD; not
k-OS, exact ranks, max-norm or the ordinal loss (the estimator refuses those
combinations).
"""

from typing import NamedTuple

import numpy as np

from ._flags import inlined
from .config import FIXED_D, REDRAWS, SAMPLES_AHEAD
from .epoch import LOSS_BPR, ids_ahead, prefetch_ids
from .negatives import ATTEMPT_STRIDE, draw_negative, filter_shift, is_positive
from .prefetch import prefetch, prefetch_row
from .rng import draw_below, draw_unit
from .updates import bpr_terms, rank_loss_weight
from .warp import draw_early, first_violator, prefetch_ahead, sampled_rank

__all__ = ["FeatureParameters", "FEATURE_STREAM"]

#: The stream position of a sample's feature-negatives coin; the chosen feature's draw is
#: at the next position, the pool draw ``t``'s attempt ``a`` at ``FEATURE_STREAM + 2 + t +
#: a * ATTEMPT_STRIDE``: past every position :func:`.negatives.draw_negative` uses.
FEATURE_STREAM = (REDRAWS + 1) * ATTEMPT_STRIDE
_NO_POOL_PTR = np.zeros(1, np.int64)
_NO_POOL_ITEMS = np.zeros(0, np.int32)


class FeatureParameters(NamedTuple):
    """The hybrid model's parameters (updated in place) and the feature matrices (CSR)."""
    user_indptr: np.ndarray            # int64 (n_users + 1,)
    user_indices: np.ndarray           # int32: user feature columns
    user_weights: np.ndarray           # float32: their values
    item_indptr: np.ndarray            # int64 (n_items + 1,)
    item_indices: np.ndarray           # int32
    item_weights: np.ndarray           # float32
    user_feature_factors: np.ndarray   # float32 (n_user_features, d)
    item_feature_factors: np.ndarray   # float32 (n_item_features, d)
    item_feature_biases: np.ndarray    # float32 (n_item_features,)
    user_feature_grad_sq: np.ndarray   # Adagrad accumulators of the three above
    item_feature_grad_sq: np.ndarray
    item_feature_bias_grad_sq: np.ndarray
    user_decay_share: np.ndarray       # float32 (n_user_features,): 1 / sqrt(entities
    #                                    with the feature)
    item_decay_share: np.ndarray       # float32 (n_item_features,)
    user_indicators: bool              # every user's first feature is its own indicator
    #                                    (column u): row u of the factors is its own
    item_indicators: bool              # the same for the items
    user_unit_weights: bool            # every user feature weight is 1 (the weights are
    #                                    then not read)
    item_unit_weights: bool            # the same for the items
    item_pool_indptr: np.ndarray = _NO_POOL_PTR       # int64 (n_item_features + 1,): the
    #                                    item feature matrix in CSC form, for the draws of
    item_pool_items: np.ndarray = _NO_POOL_ITEMS      # Settings.feature_negatives: int32,
    #                                    the items of each feature column, sorted


@inlined
def represent(indptr, indices, weights, unit, E, c, row, out, d):
    """``out[:] = sum_f x_f E[f]`` over the features of ``row``; returns
    ``sum_f x_f c[f]`` (0 without biases: ``c`` empty). With ``unit`` every ``x_f`` is
    1 and ``weights`` is not read. ``d`` is ``E.shape[1]``, passed so that a caller can
    make it a constant (``FIXED_D``)."""
    for k in range(d):
        out[k] = 0.0
    bias = np.float32(0.0)
    for q in range(indptr[row], indptr[row + 1]):
        f = indices[q]
        x = np.float32(1.0) if unit else weights[q]
        for k in range(d):
            out[k] += x * E[f, k]
        if c.shape[0]:
            bias += x * c[f]
    return bias


@inlined
def _dot_rows(a, b, d):
    """``<a[:d], b[:d]>`` in float32."""
    acc = np.float32(0.0)
    for k in range(d):
        acc += a[k] * b[k]
    return acc


@inlined
def feature_rows_step(indptr, indices, weights, unit, E, G, c, Gc, row, direction, sign, g,
                      bias_g, lr, lr_alpha, share, adagrad):
    """Step every feature row of ``row`` along ``sign * g * x_f * direction`` (and its
    bias, if ``c`` is not empty, along ``bias_g * x_f``), with optional Adagrad (``x_f``
    is 1 with ``unit``); the row of feature ``f`` also decays by
    ``1 - lr_alpha * share[f]``. Returns ``False`` if a
    new value is not finite; the coordinates that became NaN/Inf are then reset (factors
    0, accumulators 1)."""
    d = E.shape[1]
    ok = True
    for q in range(indptr[row], indptr[row + 1]):
        f = indices[q]
        x = np.float32(1.0) if unit else weights[q]
        keep = np.float32(1.0) - lr_alpha * share[f]
        total = np.float32(0.0)
        for k in range(d):
            gr = sign * g * x * direction[k]
            if adagrad:
                G[f, k] += gr * gr
                E[f, k] = keep * E[f, k] - lr * gr / np.sqrt(G[f, k])
                total += E[f, k] + G[f, k]
            else:
                E[f, k] = keep * E[f, k] - lr * gr
                total += E[f, k]
        if c.shape[0]:
            gb = bias_g * x
            if adagrad:
                Gc[f] += gb * gb
                c[f] -= lr * gb / np.sqrt(Gc[f])
                total += c[f] + Gc[f]
            else:
                c[f] -= lr * gb
                total += c[f]
        if not np.isfinite(total):
            ok = False
            for k in range(d):
                if not np.isfinite(E[f, k]):
                    E[f, k] = 0.0
                if adagrad and not np.isfinite(G[f, k]):
                    G[f, k] = 1.0
            if c.shape[0]:
                if not np.isfinite(c[f]):
                    c[f] = 0.0
                if adagrad and not np.isfinite(Gc[f]):
                    Gc[f] = 1.0
    return ok


@inlined
def score_rows(rep, indptr, indices, weights, unit, E, c, row, d):
    """``sum_f x_f (<rep, E[f]> + c[f])`` over the features of ``row``: the score of an
    item (``row``) for a user whose representation is ``rep``, ``<rep, sum_f x_f E[f]> +
    sum_f x_f c[f]``, without writing the item's representation (a sum of ``d``
    products per feature row; ``d`` as in :func:`represent`)."""
    acc = np.float32(0.0)
    for q in range(indptr[row], indptr[row + 1]):
        f = indices[q]
        x = np.float32(1.0) if unit else weights[q]
        acc += x * (_dot_rows(rep, E[f], d) + c[f])
    return acc


@inlined
def feature_score(rows, j):
    """``f(u, j)`` for ``rows = (rep_u, item_indptr, item_indices, item_weights,
    item_unit_weights, E_I, c, item_indicators, item_decay_share)``: :func:`score_rows`
    of item ``j`` for the user's representation ``rep_u``."""
    rep_u, iptr, iind, iw, iunit, EI, c, _, _ = rows
    # (the negative trials are the innermost loop: the fixed dimension's code unrolled,
    # as the plain model's ``warp.factor_score``)
    if EI.shape[1] == FIXED_D:
        return score_rows(rep_u, iptr, iind, iw, iunit, EI, c, j, FIXED_D)
    return score_rows(rep_u, iptr, iind, iw, iunit, EI, c, j, EI.shape[1])


@inlined
def fetch_candidate(rows, j):
    """Prefetch what :func:`feature_score` reads first for item ``j``: its CSR bounds
    and, with ``item_indicators``, its indicator's row and bias (and decay share, which
    the update of a violator reads)."""
    _, iptr, _, _, _, EI, c, own, share = rows
    prefetch(iptr, j)
    if own:
        prefetch_row(EI, j)
        prefetch(c, j)
        prefetch(share, j)


# ------------------------------------------------------------ feature negatives
@inlined
def pool_feature(iptr, iind, pool_ptr, i, key):
    """A feature of item ``i`` that another item has, uniformly among them (stream
    position ``FEATURE_STREAM + 1``), or -1 if ``i`` has none."""
    n = 0
    for q in range(iptr[i], iptr[i + 1]):
        f = iind[q]
        if f + 1 < pool_ptr.shape[0] and pool_ptr[f + 1] - pool_ptr[f] > 1:
            n += 1
    if n == 0:
        return -1
    r = draw_below(key, FEATURE_STREAM + 1, n)
    for q in range(iptr[i], iptr[i + 1]):
        f = iind[q]
        if f + 1 < pool_ptr.shape[0] and pool_ptr[f + 1] - pool_ptr[f] > 1:
            if r == 0:
                return f
            r -= 1
    return -1


@inlined
def draw_pool_negative(pool_ptr, pool_items, f, indices, start, end, u, n_items, neg_cdf,
                       filt, shift, key, t):
    """Draw ``t`` of a feature-negatives step: an item of feature ``f``'s column, uniform,
    redrawn while it is one of user ``u``'s positives (attempt ``a`` at position
    ``FEATURE_STREAM + 2 + t + a * ATTEMPT_STRIDE``); after ``REDRAWS`` positives in a
    row, the uniform draw ``t`` of :func:`.negatives.draw_negative`."""
    lo = pool_ptr[f]
    m = pool_ptr[f + 1] - lo
    for attempt in range(REDRAWS):
        j = pool_items[lo + draw_below(key, FEATURE_STREAM + 2 + t + attempt * ATTEMPT_STRIDE,
                                       m)]
        if not is_positive(filt, shift, u, j, indices, start, end):
            return j
    return draw_negative(indices, start, end, u, n_items, neg_cdf, filt, shift, key, t)


@inlined
def pool_violator(rows, f_i, max_sampled, pool_ptr, pool_items, f, indices, start, end, u,
                  n_items, neg_cdf, filt, shift, key):
    """:func:`.warp.first_violator` with the draws of :func:`draw_pool_negative`:
    ``(j, f(u, j), N)``, or ``(-1, 0, max_sampled)``."""
    for trial in range(1, max_sampled + 1):
        j = draw_pool_negative(pool_ptr, pool_items, f, indices, start, end, u, n_items,
                               neg_cdf, filt, shift, key, trial - 1)
        f_j = feature_score(rows, j)
        if f_j + np.float32(1.0) > f_i:
            return j, f_j, trial
    return -1, np.float32(0.0), max_sampled


# ------------------------------------------------------------- the epoch's plug-ins
@inlined
def begin(fparams, positives, settings, work, thread):
    """The slice's state: ``(fparams, settings, work, thread, shift, buf, n_early)``, the
    filter's hash shift, the slice's scratch rows (rows 0-3 hold the user's, the
    positive's, the candidate's representation and the step's direction) and the counts
    of the candidates drawn early for this sample and the next (as ``warp.begin``)."""
    n_items = fparams.item_indptr.shape[0] - 1
    shift = filter_shift(positives.filt.shape[1], n_items)
    return n_items, (fparams, settings, work, thread, shift, work.scratch[thread],
                     work.ints[thread, 2, :2])


#: Without ``Mode.prefetch``, the ids of a later sample only.
ahead = ids_ahead


@inlined
def _fetch_list(indptr, indices, weights, unit, row):
    """Prefetch the first line of ``row``'s feature list (its bounds are in cache)."""
    q = indptr[row]
    prefetch(indices, q)
    if not unit:
        prefetch(weights, q)


@inlined
def prefetching_ahead(state, positives, order, s, hi, fresh, epoch, loss, exact_rank, adagrad,
                      clip, prefetching, freeze_items, violators):
    """With ``Mode.prefetch``: the plain pipeline (``warp.prefetch_ahead``) on the
    indicators' rows when both sides have them (else the ids of a later sample), the
    CSR bounds of sample ``s + SAMPLES_AHEAD``'s user and item (and their indicators'
    decay shares and bias accumulator, which an update reads) and the feature lists of
    sample ``s + 1``'s; the first candidates of sample ``s + 1``, drawn now
    (``warp.draw_early``, with :func:`fetch_candidate`), and the feature lists of those
    of sample ``s``, drawn one sample ago."""
    fparams, settings, work, thread, shift, buf, n_early = state
    if fresh:
        n_early[:] = 0
    uptr, uind, uw = fparams.user_indptr, fparams.user_indices, fparams.user_weights
    iptr, iind, iw = fparams.item_indptr, fparams.item_indices, fparams.item_weights
    iunit = fparams.item_unit_weights
    EI, c = fparams.item_feature_factors, fparams.item_feature_biases
    users, indices = positives.users, positives.indices
    if fparams.user_indicators and fparams.item_indicators:
        prefetch_ahead(fparams.user_feature_factors, EI, c, fparams.user_feature_grad_sq,
                       fparams.item_feature_grad_sq, positives.indptr, indices, users,
                       positives.sample_weight, positives.filt, order, s, hi, adagrad)
    else:
        prefetch_ids(users, indices, positives.sample_weight, order, s + 2 * SAMPLES_AHEAD,
                     hi)
    mid = s + SAMPLES_AHEAD
    if mid < hi:
        p = order[mid]
        prefetch(uptr, users[p])
        prefetch(iptr, indices[p])
        if fparams.user_indicators:
            prefetch(fparams.user_decay_share, users[p])
        if fparams.item_indicators:
            prefetch(fparams.item_decay_share, indices[p])
            prefetch(fparams.item_feature_bias_grad_sq, indices[p])
    if s + 1 < hi:
        p = order[s + 1]
        _fetch_list(uptr, uind, uw, fparams.user_unit_weights, users[p])
        _fetch_list(iptr, iind, iw, iunit, indices[p])
    if loss != LOSS_BPR:
        early = work.candidates[thread, s & 1]
        for t in range(n_early[s & 1]):
            _fetch_list(iptr, iind, iw, iunit, early[t])
        if s + 1 < hi:
            n_early[(s + 1) & 1] = draw_early(
                fetch_candidate, (buf[0], iptr, iind, iw, iunit, EI, c,
                                  fparams.item_indicators, fparams.item_decay_share),
                iptr.shape[0] - 1, positives.indptr, indices, users, order, s + 1,
                settings.max_sampled, 1, positives.neg_cdf, positives.filt, shift,
                settings.seed, epoch, work.candidates[thread, (s + 1) & 1])


@inlined
def step(state, positives, s, p, u, start, end, n_neg, key, loss, exact_rank, adagrad, clip,
         prefetching, freeze_items, violators):
    """The hybrid WARP or BPR step on positive ``p`` (the module docstring); see
    :mod:`.epoch` for the arguments and what it returns. A step whose gradient weight is
    0 moves nothing."""
    fparams, settings, work, thread, shift, buf, n_early = state
    EU, EI, c = (fparams.user_feature_factors, fparams.item_feature_factors,
                 fparams.item_feature_biases)
    GU, GI, Gc = (fparams.user_feature_grad_sq, fparams.item_feature_grad_sq,
                  fparams.item_feature_bias_grad_sq)
    uptr, uind, uw = fparams.user_indptr, fparams.user_indices, fparams.user_weights
    iptr, iind, iw = fparams.item_indptr, fparams.item_indices, fparams.item_weights
    uunit, iunit = fparams.user_unit_weights, fparams.item_unit_weights
    no_bias = c[:0]
    indices, neg_cdf, filt = positives.indices, positives.neg_cdf, positives.filt
    lr = settings.learning_rate
    lr_alpha = lr * settings.alpha
    n_items = iptr.shape[0] - 1
    rep_u, rep_i, rep_c, rep_j = buf[0], buf[1], buf[2], buf[3]
    i = indices[p]
    w = positives.sample_weight[p]
    d = EU.shape[1]
    represent(uptr, uind, uw, uunit, EU, no_bias, u, rep_u, d)
    b_i = represent(iptr, iind, iw, iunit, EI, c, i, rep_i, d)
    f_i = _dot_rows(rep_u, rep_i, d) + b_i
    rows = (rep_u, iptr, iind, iw, iunit, EI, c, fparams.item_indicators,
            fparams.item_decay_share)
    pool_ptr, pool_items = fparams.item_pool_indptr, fparams.item_pool_items
    f = -1
    if settings.feature_negatives > 0 and \
            draw_unit(key, FEATURE_STREAM) < settings.feature_negatives:
        f = pool_feature(iptr, iind, pool_ptr, i, key)
    if loss == LOSS_BPR:
        if f >= 0:
            j = draw_pool_negative(pool_ptr, pool_items, f, indices, start, end, u, n_items,
                                   neg_cdf, filt, shift, key, 0)
        else:
            j = draw_negative(indices, start, end, u, n_items, neg_cdf, filt, shift, key, 0)
        g, sample_loss = bpr_terms(f_i - feature_score(rows, j))
        sample_loss = w * sample_loss
        rank_loss = 0.0
        g = w * g
        trials = 1
    elif f >= 0:
        j, f_j, trials = pool_violator(rows, f_i, settings.max_sampled, pool_ptr, pool_items,
                                       f, indices, start, end, u, n_items, neg_cdf, filt,
                                       shift, key)
        if j < 0:
            return True, 0, trials, 0.0, 0.0
        m_neg = pool_ptr[f + 1] - pool_ptr[f] - 1
        lw = rank_loss_weight(settings.rank_table, sampled_rank(1, trials, m_neg), m_neg,
                              settings.top_fraction, settings.normalize)
        sample_loss = w * lw * (1.0 + f_j - f_i)
        rank_loss = w * lw
        g = w * lw
    else:
        j, f_j, trials = first_violator(feature_score, fetch_candidate, rows, f_i,
                                        settings.max_sampled, indices, start, end, u, n_items,
                                        neg_cdf, filt, shift, key, 0,
                                        work.candidates[thread, s & 1], n_early[s & 1],
                                        prefetching, 0)
        if j < 0:
            return True, 0, trials, 0.0, 0.0
        lw = rank_loss_weight(settings.rank_table, sampled_rank(1, trials, n_neg), n_neg,
                              settings.top_fraction, settings.normalize)
        sample_loss = w * lw * (1.0 + f_j - f_i)
        rank_loss = w * lw
        g = w * lw
    if g == 0:
        return True, 0, trials, sample_loss, rank_loss
    g32 = np.float32(g)
    # user features along rep_j - rep_i (the negative's representation: rep_c)
    represent(iptr, iind, iw, iunit, EI, c, j, rep_c, d)
    for k in range(rep_j.shape[0]):
        rep_j[k] = rep_c[k] - rep_i[k]
    ok = feature_rows_step(uptr, uind, uw, uunit, EU, GU, no_bias, Gc[:0], u, rep_j,
                           np.float32(1.0), g32, np.float32(0.0), lr, lr_alpha,
                           fparams.user_decay_share, adagrad)
    ok = feature_rows_step(iptr, iind, iw, iunit, EI, GI, c, Gc, i, rep_u, np.float32(-1.0),
                           g32, -g32, lr, lr_alpha, fparams.item_decay_share, adagrad) and ok
    ok = feature_rows_step(iptr, iind, iw, iunit, EI, GI, c, Gc, j, rep_u, np.float32(1.0),
                           g32, g32, lr, lr_alpha, fparams.item_decay_share, adagrad) and ok
    return ok, 1, trials, sample_loss, rank_loss
