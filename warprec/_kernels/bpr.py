"""BPR's step on one positive, plugged into the epoch skeleton of :mod:`.epoch`.

Bayesian personalised ranking (Rendle, Freudenthaler, Gantner & Schmidt-Thieme 2009,
"BPR: Bayesian Personalized Ranking from Implicit Feedback", UAI, sec. 4): for a
positive ``(u, i)`` and one negative ``j`` drawn for it (:mod:`.negatives`), descend
``-log sigmoid(f(u, i) - f(u, j))``. The model, the slice state and the prefetching are
WARP's (:mod:`.warp`), and so is the k-OS choice of the positive.
"""

import numpy as np

from ._flags import inlined
from .negatives import draw_negative
from .updates import bpr_terms, pair_update, score
from .warp import ahead, begin, positive_score, prefetching_ahead

__all__ = ["ahead", "begin", "prefetching_ahead", "step"]


@inlined
def step(state, positives, s, p, u, start, end, n_neg, key, loss, exact_rank, adagrad, clip,
         prefetching, freeze_items, violators):
    """The BPR step on positive ``p``; see :mod:`.epoch` for the arguments and what it
    returns (the rank loss is 0: BPR estimates no rank)."""
    params, settings, work, thread, shift, buf, n_early = state
    U, V, b = params.user_factors, params.item_factors, params.item_biases
    i, w, f_i, counter = positive_score(state, positives, p, u, start, end, key)
    j = draw_negative(positives.indices, start, end, u, V.shape[0], positives.neg_cdf,
                      positives.filt, shift, key, counter)
    g, sample_loss = bpr_terms(f_i - score(U, V, b, u, j))
    ok = pair_update(U, V, b, params.user_grad_sq, params.item_grad_sq, params.bias_grad_sq,
                     u, i, j, np.float32(w * g), settings.learning_rate, settings.alpha,
                     settings.max_norm, buf, adagrad, clip, freeze_items)
    return ok, int(ok), 1, w * sample_loss, 0.0
