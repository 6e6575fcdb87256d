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

Supported: the WARP loss with the estimated rank and BPR, Adagrad or plain SGD; not
k-OS, exact ranks, max-norm, the ordinal loss or prefetching (the estimator refuses
those combinations).
"""

from typing import NamedTuple

import numpy as np

from ._flags import inlined
from .epoch import LOSS_BPR, nothing_ahead
from .negatives import draw_negative, filter_shift
from .updates import bpr_terms, rank_loss_weight
from .warp import first_violator, sampled_rank

__all__ = ["FeatureParameters"]


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


@inlined
def represent(indptr, indices, weights, E, c, row, out):
    """``out[:] = sum_f x_f E[f]`` over the features of ``row``; returns
    ``sum_f x_f c[f]`` (0 without biases: ``c`` empty)."""
    d = E.shape[1]
    for k in range(d):
        out[k] = 0.0
    bias = np.float32(0.0)
    for q in range(indptr[row], indptr[row + 1]):
        f = indices[q]
        x = weights[q]
        for k in range(d):
            out[k] += x * E[f, k]
        if c.shape[0]:
            bias += x * c[f]
    return bias


@inlined
def _dot_rows(a, b):
    acc = np.float32(0.0)
    for k in range(a.shape[0]):
        acc += a[k] * b[k]
    return acc


@inlined
def feature_rows_step(indptr, indices, weights, E, G, c, Gc, row, direction, sign, g, bias_g,
                      lr, lr_alpha, share, adagrad):
    """Step every feature row of ``row`` along ``sign * g * x_f * direction`` (and its
    bias, if ``c`` is not empty, along ``bias_g * x_f``), with optional Adagrad; the row
    of feature ``f`` also decays by ``1 - lr_alpha * share[f]``. Returns ``False`` if a
    new value is not finite; the coordinates that became NaN/Inf are then reset (factors
    0, accumulators 1)."""
    d = E.shape[1]
    ok = True
    for q in range(indptr[row], indptr[row + 1]):
        f = indices[q]
        x = weights[q]
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
def feature_score(rows, j):
    """``f(u, j)`` for ``rows = (rep_u, item_indptr, item_indices, item_weights, E_I, c,
    out)``: the user's representation ``rep_u`` dotted with item ``j``'s, which is left in
    ``out``, plus the item's bias."""
    rep_u, iptr, iind, iw, EI, c, out = rows
    b_j = represent(iptr, iind, iw, EI, c, j, out)
    return _dot_rows(rep_u, out) + b_j


@inlined
def fetch_nothing(rows, j):
    """The hybrid model prefetches nothing (``Mode.prefetch`` is off)."""


# ------------------------------------------------------------- the epoch's plug-ins
@inlined
def begin(fparams, positives, settings, work, thread):
    """The slice's state: ``(fparams, settings, work, thread, shift, buf)``, the filter's
    hash shift and the slice's scratch rows; rows 0-3 of ``buf`` hold the user's, the
    positive's, the candidate's representation and the step's direction."""
    n_items = fparams.item_indptr.shape[0] - 1
    shift = filter_shift(positives.filt.shape[1], n_items)
    return n_items, (fparams, settings, work, thread, shift, work.scratch[thread])


#: The hybrid epoch prefetches nothing.
ahead = nothing_ahead


@inlined
def step(state, positives, s, p, u, start, end, n_neg, key, loss, exact_rank, adagrad, clip,
         prefetching, freeze_items, violators):
    """The hybrid WARP or BPR step on positive ``p`` (the module docstring); see
    :mod:`.epoch` for the arguments and what it returns. A step whose gradient weight is
    0 moves nothing."""
    fparams, settings, work, thread, shift, buf = state
    EU, EI, c = (fparams.user_feature_factors, fparams.item_feature_factors,
                 fparams.item_feature_biases)
    GU, GI, Gc = (fparams.user_feature_grad_sq, fparams.item_feature_grad_sq,
                  fparams.item_feature_bias_grad_sq)
    uptr, uind, uw = fparams.user_indptr, fparams.user_indices, fparams.user_weights
    iptr, iind, iw = fparams.item_indptr, fparams.item_indices, fparams.item_weights
    no_bias = c[:0]
    indices, neg_cdf, filt = positives.indices, positives.neg_cdf, positives.filt
    lr = settings.learning_rate
    lr_alpha = lr * settings.alpha
    n_items = iptr.shape[0] - 1
    rep_u, rep_i, rep_c, rep_j = buf[0], buf[1], buf[2], buf[3]
    i = indices[p]
    w = positives.sample_weight[p]
    represent(uptr, uind, uw, EU, no_bias, u, rep_u)
    b_i = represent(iptr, iind, iw, EI, c, i, rep_i)
    f_i = _dot_rows(rep_u, rep_i) + b_i
    rows = (rep_u, iptr, iind, iw, EI, c, rep_c)   # the candidate's representation: rep_c
    if loss == LOSS_BPR:
        j = draw_negative(indices, start, end, u, n_items, neg_cdf, filt, shift, key, 0)
        g, sample_loss = bpr_terms(f_i - feature_score(rows, j))
        sample_loss = w * sample_loss
        rank_loss = 0.0
        g = w * g
        trials = 1
    else:
        j, f_j, trials = first_violator(feature_score, fetch_nothing, rows, f_i,
                                        settings.max_sampled, indices, start, end, u, n_items,
                                        neg_cdf, filt, shift, key, 0,
                                        work.candidates[thread, 0], 0, False, 0)
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
    # user features along rep_j - rep_i
    for k in range(rep_j.shape[0]):
        rep_j[k] = rep_c[k] - rep_i[k]
    ok = feature_rows_step(uptr, uind, uw, EU, GU, no_bias, Gc[:0], u, rep_j, np.float32(1.0),
                           g32, np.float32(0.0), lr, lr_alpha, fparams.user_decay_share,
                           adagrad)
    ok = feature_rows_step(iptr, iind, iw, EI, GI, c, Gc, i, rep_u, np.float32(-1.0), g32,
                           -g32, lr, lr_alpha, fparams.item_decay_share, adagrad) and ok
    ok = feature_rows_step(iptr, iind, iw, EI, GI, c, Gc, j, rep_u, np.float32(1.0), g32, g32,
                           lr, lr_alpha, fparams.item_decay_share, adagrad) and ok
    return ok, 1, trials, sample_loss, rank_loss
