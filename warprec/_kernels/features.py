"""The hybrid model's epoch: users and items as weighted sums of feature embeddings.

A user's representation is ``sum_f x_uf E_U[f]`` over the nonzeros of its row of the
user feature matrix, an item's ``sum_f x_if E_I[f]`` and its bias ``sum_f x_if c[f]``
(LightFM's model, and the way WSABIE embeds its inputs: Weston, Bengio & Usunier 2010,
sec. 3). WARP (or BPR) is applied to the scores of these sums exactly as in
:mod:`.train`: the same counter-based draws, the same margin test and rank estimate,
Hogwild threads claiming chunks of the epoch order. An update moves every feature row
involved: the gradient with respect to a representation, times the feature's weight,
with Adagrad per feature row and the decoupled decay of the plain model, divided for a
feature by ``sqrt(m)``, ``m`` the number of entities that have it (``*_decay_share``). A
feature shared by ``m`` entities is touched about ``m`` times as often as an entity's
own row: with the full decay per update such embeddings shrank to nothing (movies ranked
from their genres alone on ml-latest-small: NDCG@10 0.027), without any they crowded
out the entities' own embeddings (warm NDCG@10 4.5% below the model without features);
``sqrt(m)`` keeps the warm model level and the cold one 0.043 (docs/design.md).

Supported: the WARP loss with the estimated rank and BPR, Adagrad or plain SGD; not
k-OS, exact ranks, max-norm, the ordinal loss or prefetching (the estimator refuses
those combinations).
"""

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ._flags import PJIT_NO_NRT, inlined
from .negatives import draw_negative, filter_shift
from .rng import stream_key
from .train import _close_slice, next_position, sample_at
from .updates import bpr_terms, rank_loss_weight

__all__ = ["FeatureParameters", "features_epoch"]


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


def features_epoch(bpr, adagrad):
    """The hybrid model's epoch kernel for one mode (compiled on its first call; the
    flags are closure constants, as in ``train._pairwise_epoch``). Called as
    ``kernel(fparams, positives, settings, work, order, epoch, chunk)``; scratch rows
    0-3 of ``work.scratch[thread]`` hold the user's, the positive's, the candidate's and
    the violator's representations."""

    @njit(**PJIT_NO_NRT)
    def features_variant(fparams, positives, settings, work, order, epoch, chunk):
        for thread in prange(work.stats.shape[0]):
            EU, EI, c = (fparams.user_feature_factors, fparams.item_feature_factors,
                         fparams.item_feature_biases)
            GU, GI, Gc = (fparams.user_feature_grad_sq, fparams.item_feature_grad_sq,
                          fparams.item_feature_bias_grad_sq)
            uptr, uind, uw = fparams.user_indptr, fparams.user_indices, fparams.user_weights
            iptr, iind, iw = fparams.item_indptr, fparams.item_indices, fparams.item_weights
            no_bias = c[:0]
            indptr, indices = positives.indptr, positives.indices
            sample_users, sample_weight = positives.users, positives.sample_weight
            neg_cdf, filt = positives.neg_cdf, positives.filt
            lr, alpha = settings.learning_rate, settings.alpha
            max_sampled, table = settings.max_sampled, settings.rank_table
            top_fraction, normalize = settings.top_fraction, settings.normalize
            seed = settings.seed
            lr_alpha = lr * alpha
            user_share, item_share = fparams.user_decay_share, fparams.item_decay_share
            stop = work.stop
            n_items = iptr.shape[0] - 1
            shift = filter_shift(filt.shape[1], n_items)
            buf = work.scratch[thread]
            rep_u, rep_i, rep_c, rep_j = buf[0], buf[1], buf[2], buf[3]
            ok = True
            n_samples = 0
            n_updates = 0
            n_trials = 0
            loss_sum = 0.0
            rank_loss_sum = 0.0
            cur = hi = 0
            while not stop[0]:
                s, cur, hi, _ = next_position(work.next_chunk, chunk, order.shape[0], cur, hi)
                if s < 0:
                    break
                p, u, start, end, n_neg = sample_at(order, s, sample_users, indptr, n_items)
                n_samples += 1
                if n_neg <= 0:
                    continue
                key = stream_key(seed, epoch, p)
                i = indices[p]
                w = sample_weight[p]
                represent(uptr, uind, uw, EU, no_bias, u, rep_u)
                b_i = represent(iptr, iind, iw, EI, c, i, rep_i)
                f_i = _dot_rows(rep_u, rep_i) + b_i
                j = -1
                g = 0.0
                if bpr:
                    j = draw_negative(indices, start, end, u, n_items, neg_cdf, filt, shift,
                                      key, 0)
                    b_j = represent(iptr, iind, iw, EI, c, j, rep_j)
                    g, loss = bpr_terms(f_i - (_dot_rows(rep_u, rep_j) + b_j))
                    loss_sum += w * loss
                    g = w * g
                    n_trials += 1
                else:
                    trial = 0
                    for t in range(1, max_sampled + 1):
                        trial = t
                        cand = draw_negative(indices, start, end, u, n_items, neg_cdf, filt,
                                             shift, key, t - 1)
                        b_c = represent(iptr, iind, iw, EI, c, cand, rep_c)
                        f_c = _dot_rows(rep_u, rep_c) + b_c
                        if f_c + np.float32(1.0) > f_i:
                            j = cand
                            for k in range(rep_c.shape[0]):
                                rep_j[k] = rep_c[k]
                            lw = rank_loss_weight(table, max((n_neg - 1) // t, 1), n_neg,
                                                  top_fraction, normalize)
                            loss_sum += w * lw * (1.0 + f_c - f_i)
                            rank_loss_sum += w * lw
                            g = w * lw
                            break
                    n_trials += trial
                if j < 0 or g == 0:
                    continue
                g32 = np.float32(g)
                # user features along rep_j - rep_i (rep_c is free once j is chosen)
                for k in range(rep_c.shape[0]):
                    rep_c[k] = rep_j[k] - rep_i[k]
                ok = feature_rows_step(uptr, uind, uw, EU, GU, no_bias, Gc[:0], u, rep_c,
                                       np.float32(1.0), g32, np.float32(0.0), lr, lr_alpha,
                                       user_share, adagrad)
                ok = feature_rows_step(iptr, iind, iw, EI, GI, c, Gc, i, rep_u,
                                       np.float32(-1.0), g32, -g32, lr, lr_alpha,
                                       item_share, adagrad) and ok
                ok = feature_rows_step(iptr, iind, iw, EI, GI, c, Gc, j, rep_u,
                                       np.float32(1.0), g32, g32, lr, lr_alpha, item_share,
                                       adagrad) and ok
                n_updates += 1
                if not ok:
                    break
            _close_slice(work.stats[thread], stop, ok, n_samples, n_updates, n_trials,
                         loss_sum, rank_loss_sum)
        return not work.stop[0]

    return features_variant
