"""WARP with several violators per positive, plugged into the epoch skeleton of
:mod:`.epoch` (``Mode.violators``).

The draws go on after the first margin violator until ``Settings.max_violators`` are
found or ``max_sampled`` draws pass (:func:`collect_violators`); the rank is estimated
from the violators' share of the draws (``warp.sampled_rank``), and one list step
descends the hinges of all of them with the rank weight shared (:func:`violators_step`).
With one violator found the step is WARP's. The model, the slice state and the
prefetching are WARP's (:mod:`.warp`).
"""

import numpy as np
from numba import njit

from ._flags import JIT_NO_NRT, inlined
from .updates import list_step, pair_update, rank_loss_weight
from .warp import (ahead, begin, factor_score, fetch_factors, first_violator, positive_score,
                   prefetching_ahead, sampled_rank)

__all__ = ["ahead", "begin", "prefetching_ahead", "step"]


@inlined
def collect_violators(U, V, b, indices, start, end, u, f_i, max_sampled, max_violators, neg_cdf,
                      filt, shift, key, counter, candidates, drawn, prefetching, found, f_found):
    """Draw negatives until ``max_violators`` margin violators are found or ``max_sampled``
    draws pass (:func:`first_violator`, resumed after each violator).

    The violators go to ``found[1:]`` (``found[0]`` is left for the positive, see
    :func:`violators_step`) and their scores to ``f_found``. Returns ``(c, N)``: how many
    were found and after how many draws (``max_sampled`` when fewer than
    ``max_violators`` were found).
    """
    c = 0
    trial = 0
    while c < max_violators and trial < max_sampled:
        j, f_j, trial = first_violator(factor_score, fetch_factors, (U, V, b, u), f_i,
                                       max_sampled, indices, start, end, u, V.shape[0],
                                       neg_cdf, filt, shift, key, counter, candidates,
                                       max(drawn, trial), prefetching, trial)
        if j < 0:
            break
        found[c + 1] = j
        f_found[c] = f_j
        c += 1
    return c, trial


@njit(**JIT_NO_NRT)
def violators_step(U, V, b, GU, GV, Gb, u, i, f_i, w, lw, n_found, ints, reals, scratch, thread,
                   lr, alpha, max_norm, adagrad, freeze_items):
    """One step on the hinges of the ``n_found`` violators that :func:`collect_violators`
    put in ``ints[thread, 1, 1:]`` (their scores in ``reals[thread, 1]``), the rank weight
    ``lw`` shared among them: ``w * lw / c * sum_j (1 - f(u, i) + f(u, j))``, descended as
    one list step (:func:`list_step`: the user row and the positive decay once, as in a
    single-violator step). Returns ``(ok, weighted hinge loss)``.

    Compiled on its own without reference counting (it takes the whole work arrays and
    the thread's index, not row views): inlined into the parallel epoch kernel (Numba
    0.68), the list step crashed there with a segmentation fault, while the serial
    variant ran correctly."""
    share = lw / n_found
    items = ints[thread, 1]
    grads = reals[thread, 0]
    items[0] = i
    grads[0] = -lw
    loss = 0.0
    for q in range(n_found):
        loss += w * share * (1.0 + reals[thread, 1, q] - f_i)
        grads[q + 1] = share
    if lw <= 0:
        return True, loss
    return list_step(U, V, b, GU, GV, Gb, u, items, grads, n_found + 1, w, lr, alpha, adagrad,
                     max_norm, scratch[thread], freeze_items), loss


@inlined
def step(state, positives, s, p, u, start, end, n_neg, key, loss, exact_rank, adagrad, clip,
         prefetching, freeze_items, violators):
    """The step on positive ``p`` with up to ``Settings.max_violators`` violators; see
    :mod:`.epoch` for the arguments and what it returns."""
    params, settings, work, thread, shift, buf, n_early = state
    U, V, b = params.user_factors, params.item_factors, params.item_biases
    GU, GV, Gb = params.user_grad_sq, params.item_grad_sq, params.bias_grad_sq
    lr, alpha, max_norm = settings.learning_rate, settings.alpha, settings.max_norm
    i, w, f_i, counter = positive_score(state, positives, p, u, start, end, key)
    # up to max_violators violators, each after the draws of the one before
    n_found, trials = collect_violators(
        U, V, b, positives.indices, start, end, u, f_i, settings.max_sampled,
        settings.max_violators, positives.neg_cdf, positives.filt, shift, key, counter,
        work.candidates[thread, s & 1], n_early[s & 1], prefetching, work.ints[thread, 1],
        work.reals[thread, 1])
    if n_found == 0:
        return True, 0, trials, 0.0, 0.0
    lw = rank_loss_weight(settings.rank_table, sampled_rank(n_found, trials, n_neg), n_neg,
                          settings.top_fraction, settings.normalize)
    if n_found > 1:
        ok, sample_loss = violators_step(U, V, b, GU, GV, Gb, u, i, f_i, w, lw, n_found,
                                         work.ints, work.reals, work.scratch, thread, lr,
                                         alpha, max_norm, adagrad, freeze_items)
        return ok, int(lw > 0), trials, sample_loss, w * lw
    j = work.ints[thread, 1, 1]  # (found[1:], see collect_violators)
    f_j = np.float32(work.reals[thread, 1, 0])
    ok = True
    if lw > 0:
        ok = pair_update(U, V, b, GU, GV, Gb, u, i, j, np.float32(w * lw), lr, alpha, max_norm,
                         buf, adagrad, clip, freeze_items)
    return ok, int(lw > 0), trials, w * lw * (1.0 + f_j - f_i), w * lw
