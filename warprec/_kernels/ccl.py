"""Hogwild epoch kernel of the cosine losses: the cosine contrastive loss (``loss="ccl"``)
and the sampled softmax (``loss="softmax"``).

The loss of Mao, Zhu, Wang, Zheng, Wu, Tang & He 2021, "SimpleX: A Simple and Strong
Baseline for Collaborative Filtering" (CIKM 2021), sec. 3.2 ("Cosine Contrastive
Loss"): for a positive ``(u, i)`` and ``N`` negatives ``j`` drawn for it,

    L = max(0, 1 - cos(u, i)) + (w / N) * sum_j max(0, cos(u, j) - m)

with the margin ``m`` (``Settings.margin``) and the negatives' weight ``w``
(``Settings.negative_weight``; it multiplies their *mean*).

Here every factor row is kept at unit norm, so ``cos(u, i) = <U[u], V[i]>`` and the
model's scores (item biases stay 0) are the cosines without a division. A step descends
the cosines' gradient on the sphere (``d cos(x, y) / dx = y - cos(x, y) x`` at unit
norms, the component of ``y`` orthogonal to ``x``), Adagrad-scaled or plain, and
projects the row back onto the sphere (Riemannian SGD with the normalisation as its
retraction). Weight decay has no effect on rows of fixed norm, so there is none.
SimpleX's dropout on the user vector (``Settings.dropout``, the share of its coordinates
zeroed for each positive) is taken before the cosines (:func:`ccl_sample`).

The sampled softmax (:func:`softmax_terms`) takes the same ``N`` draws, unit rows and
sphere steps, with the loss ``-log p_i`` of the softmax of the cosines divided by the
temperature ``t`` over the positive and its draws, the draws' logits corrected by
``-log(N q_j)`` for their draw probability ``q_j`` (Bengio & Senecal 2008, "Adaptive
importance sampling to accelerate training of a neural probabilistic language model",
IEEE Trans. Neural Networks 19(4)), so that the draws estimate the sum over all of the
user's negatives. With uniform draws among the ``Y`` negatives the correction is
``log(Y / N)`` for every draw.

The draws are uniform over the user's negatives (or follow ``Positives.neg_cdf``), ``N``
of them with replacement from the sample's stream ``(seed, epoch, sample)``. The module
is plugged into the epoch skeleton of :mod:`.epoch` (its ``begin``, ``ahead`` and
``step``), compiled per mode like every loss (``train.epoch_kernel``).
"""

import numpy as np

from ._flags import inlined
from .config import FIXED_D, REDRAWS
from .epoch import LOSS_SOFTMAX, ids_ahead
from .negatives import ATTEMPT_STRIDE, draw_negative, filter_shift
from .rng import draw_unit
from .updates import dot

#: Stream position of coordinate 0's dropout draw (coordinate ``f`` takes this plus
#: ``f``): past every position the negatives' draws use (``counter + attempt *
#: ATTEMPT_STRIDE`` for ``attempt <= REDRAWS``).
DROPOUT_POSITION = (REDRAWS + 1) * ATTEMPT_STRIDE


@inlined
def cosine(U, V, u, j):
    """``<U[u], V[j]>``: the cosine of two unit rows (the unrolled dot product at the
    default dimension, as in WARP's negative trials)."""
    if U.shape[1] == FIXED_D:
        return dot(U, V, u, j, FIXED_D)
    return dot(U, V, u, j, U.shape[1])


@inlined
def sphere_step(P, G, r, buf, grad_row, lr, adagrad):
    """Step ``P[r]`` along ``-buf[grad_row]`` (divided per coordinate by the root of the
    Adagrad accumulator ``G[r] + g^2`` when ``adagrad``), then rescale it to unit norm.

    The new row is proposed in ``buf[1]`` (its accumulators in ``buf[2]``) and written
    only if its norm is finite and positive; returns whether it was written."""
    sq = np.float32(0.0)
    for f in range(P.shape[1]):
        g = buf[grad_row, f]
        if adagrad:
            a = G[r, f] + g * g
            buf[2, f] = a
            x = P[r, f] - lr * g / np.sqrt(a)
        else:
            x = P[r, f] - lr * g
        buf[1, f] = x
        sq += x * x
    if not (np.isfinite(sq) and sq > 0):
        return False
    inv = np.float32(1.0) / np.sqrt(sq)
    for f in range(P.shape[1]):
        P[r, f] = buf[1, f] * inv
        if adagrad:
            G[r, f] = buf[2, f]
    return True


@inlined
def dropped_user(U, u, buf, key, dropout):
    """Dropout on the user vector: zero each coordinate of ``U[u]`` with probability
    ``dropout`` (draw ``DROPOUT_POSITION + f`` of the sample's stream ``key`` for
    coordinate ``f``) and rescale the kept ones to unit norm. Writes the 0/1 mask to
    ``buf[5]`` and the result ``h`` to ``buf[4]``; returns the norm ``n`` of the masked
    vector before the rescaling (0 when every kept coordinate is 0: then ``buf[4]`` is
    not written).

    Inverted dropout's ``1 / (1 - dropout)`` would cancel in a cosine, so there is none."""
    sq = np.float32(0.0)
    for f in range(U.shape[1]):
        keep = draw_unit(key, DROPOUT_POSITION + f) >= dropout
        x = U[u, f] if keep else np.float32(0.0)
        buf[5, f] = np.float32(1.0) if keep else np.float32(0.0)
        buf[4, f] = x
        sq += x * x
    if not (np.isfinite(sq) and sq > 0):
        return np.float32(0.0)
    norm = np.sqrt(sq)
    inv = np.float32(1.0) / norm
    for f in range(U.shape[1]):
        buf[4, f] *= inv
    return norm


@inlined
def cosine_term(H, h, V, GV, k, c_k, g, buf, lr, adagrad, freeze_items):
    """Add ``g`` times the sphere gradient of ``c_k = cos(H[h], V[k])`` at ``H[h]`` to the
    user's gradient in ``buf[0]`` and, unless ``freeze_items``, step ``V[k]`` by ``g``
    times its own (computed in ``buf[3]``); returns whether the step left a finite row."""
    for f in range(V.shape[1]):
        buf[0, f] += g * (V[k, f] - c_k * H[h, f])
    if freeze_items:
        return True
    for f in range(V.shape[1]):
        buf[3, f] = g * (H[h, f] - c_k * V[k, f])
    return sphere_step(V, GV, k, buf, 3, lr, adagrad)


@inlined
def ccl_terms(H, h, V, GV, u, i, w, indices, start, end, n_items, neg_cdf, filt, shift, key,
              n_negatives, margin, negative_weight, lr, buf, adagrad, freeze_items):
    """The loss of positive ``(u, i)`` with the user vector ``H[h]`` (unit norm): steps
    the item rows and leaves the user's gradient (the cosines' gradients at ``H[h]`` on
    the sphere) in ``buf[0]``; returns ``(ok, loss, above)`` as :func:`ccl_sample`."""
    buf[0, :] = 0
    c_i = cosine(H, V, h, i)
    pull = np.float32(w) if c_i < 1 else np.float32(0.0)   # (the hinge is flat at 1)
    loss = pull * (np.float32(1.0) - c_i)
    if pull != 0 and not cosine_term(H, h, V, GV, i, c_i, -pull, buf, lr, adagrad,
                                     freeze_items):
        return False, loss, 0
    push = np.float32(w * negative_weight / n_negatives)
    above = 0
    for t in range(n_negatives):
        j = draw_negative(indices, start, end, u, n_items, neg_cdf, filt, shift, key, t)
        c_j = cosine(H, V, h, j)
        above += c_j >= c_i
        if c_j > margin:
            loss += push * (c_j - margin)
            if not cosine_term(H, h, V, GV, j, c_j, push, buf, lr, adagrad, freeze_items):
                return False, loss, above
    return True, loss, above


@inlined
def softmax_terms(H, h, V, GV, u, i, w, indices, start, end, n_items, neg_cdf, filt, shift,
                  key, n_negatives, temperature, lr, buf, adagrad, freeze_items, drawn,
                  cosines):
    """The sampled softmax loss of positive ``(u, i)`` with the user vector ``H[h]``: as
    :func:`ccl_terms` (the items step, the user's gradient is left in ``buf[0]``), for the
    loss ``-w log p_i``, ``p = softmax(z)`` over the positive's logit ``z_i = c_i / t`` and
    the ``N`` draws' ``z_j = c_j / t + log(Y / N)``. A cosine's gradient is ``w (p_k -
    [k = i]) / t``. The draws and their cosines are kept in ``drawn`` and ``cosines``
    (at least ``N`` entries): all the cosines are taken before any row moves, then the
    positive's row steps, then each draw's, in the order drawn."""
    buf[0, :] = 0
    inv_t = 1.0 / np.float64(temperature)
    log_q = np.log(np.float64(n_items - (end - start)) / n_negatives)   # log(Y / N)
    c_i = cosine(H, V, h, i)
    top = c_i * inv_t
    above = 0
    for t in range(n_negatives):
        j = draw_negative(indices, start, end, u, n_items, neg_cdf, filt, shift, key, t)
        c_j = cosine(H, V, h, j)
        drawn[t] = j
        cosines[t] = c_j
        above += c_j >= c_i
        top = max(top, c_j * inv_t + log_q)
    total = np.exp(c_i * inv_t - top)
    for t in range(n_negatives):
        total += np.exp(cosines[t] * inv_t + log_q - top)
    p_i = np.exp(c_i * inv_t - top) / total
    loss = np.float32(w * (np.log(total) + top - c_i * inv_t))
    g = np.float32(w * (p_i - 1.0) * inv_t)
    if not cosine_term(H, h, V, GV, i, c_i, g, buf, lr, adagrad, freeze_items):
        return False, loss, above
    for t in range(n_negatives):
        g = np.float32(w * np.exp(cosines[t] * inv_t + log_q - top) / total * inv_t)
        if not cosine_term(H, h, V, GV, drawn[t], np.float32(cosines[t]), g, buf, lr, adagrad,
                           freeze_items):
            return False, loss, above
    return True, loss, above


@inlined
def sphere_terms(H, h, V, GV, u, i, w, indices, start, end, n_items, neg_cdf, filt, shift,
                 key, settings, buf, adagrad, freeze_items, softmax, drawn, cosines):
    """:func:`softmax_terms` or :func:`ccl_terms` with the settings they take."""
    if softmax:
        return softmax_terms(H, h, V, GV, u, i, w, indices, start, end, n_items, neg_cdf, filt,
                             shift, key, settings.n_negatives, settings.temperature,
                             settings.learning_rate, buf, adagrad, freeze_items, drawn,
                             cosines)
    return ccl_terms(H, h, V, GV, u, i, w, indices, start, end, n_items, neg_cdf, filt, shift,
                     key, settings.n_negatives, settings.margin, settings.negative_weight,
                     settings.learning_rate, buf, adagrad, freeze_items)


@inlined
def ccl_sample(U, V, GU, GV, u, i, w, indices, start, end, n_items, neg_cdf, filt, shift, key,
               settings, buf, adagrad, freeze_items, softmax, drawn, cosines):
    """One step on the loss of positive ``(u, i)`` with sample weight ``w`` (see the module
    docstring; the sampled softmax's when ``softmax``), its ``settings.n_negatives`` draws
    at positions ``0 .. n_negatives - 1`` of stream ``key``.

    The user's gradient is summed in ``buf[0]`` from the item rows as they are before
    each moves; the positive's row, then each negative's row with a gradient, step
    (Hogwild-style, as WARP's list step), and the user row steps last. ``buf[3]`` holds
    an item row's gradient. With ``settings.dropout > 0`` the cosines are taken
    with the user vector after dropout, ``h = m * U[u] / |m * U[u]|`` (mask ``m`` from
    :func:`dropped_user`), the items step towards or away from ``h``, and the user's
    gradient goes back through the mask and the rescaling: ``m * g_h / |m * U[u]|``
    (tangent to the sphere at ``U[u]`` already). A sample whose mask leaves a zero vector
    makes no step. Returns ``(ok, loss, above)``: whether every write was finite, the
    sample's weighted loss, and how many of the draws score at least the positive (an
    estimate of its rank among the negatives, reported in the epoch statistics), both
    with the cosines the step used.
    """
    lr = settings.learning_rate
    if settings.dropout > 0:
        norm = dropped_user(U, u, buf, key, settings.dropout)
        if norm == 0:
            return True, np.float32(0.0), 0
        ok, loss, above = sphere_terms(buf, 4, V, GV, u, i, w, indices, start, end, n_items,
                                       neg_cdf, filt, shift, key, settings, buf, adagrad,
                                       freeze_items, softmax, drawn, cosines)
        inv = np.float32(1.0) / norm
        for f in range(U.shape[1]):
            buf[0, f] *= buf[5, f] * inv
    else:
        ok, loss, above = sphere_terms(U, u, V, GV, u, i, w, indices, start, end, n_items,
                                       neg_cdf, filt, shift, key, settings, buf, adagrad,
                                       freeze_items, softmax, drawn, cosines)
    if not ok:
        return False, loss, above
    return sphere_step(U, GU, u, buf, 0, lr, adagrad), loss, above


# ------------------------------------------------------------- the epoch's plug-ins
@inlined
def begin(params, positives, settings, work, thread):
    """The slice's state: ``(params, settings, work, thread, shift, buf)``, the filter's
    hash shift and the slice's scratch rows."""
    n_items = params.item_factors.shape[0]
    shift = filter_shift(positives.filt.shape[1], n_items)
    return n_items, (params, settings, work, thread, shift, work.scratch[thread])


#: The cosine losses prefetch the ids of later samples only.
ahead = ids_ahead


@inlined
def step(state, positives, s, p, u, start, end, n_neg, key, loss, exact_rank, adagrad, clip,
         prefetching, freeze_items, violators):
    """:func:`ccl_sample` on positive ``p`` (the sampled softmax's with ``loss ==
    LOSS_SOFTMAX``); see :mod:`.epoch` for the arguments. The softmax keeps the sample's
    draws in ``work.ints[thread, 0]`` and their cosines in ``work.reals[thread, 0]``
    (``Work`` made for ``n_negatives`` entries). Its statistics: one update,
    ``n_negatives`` trials, the weighted loss, and ``w * (draws scoring at least the
    positive) / n_negatives`` as the rank loss (the rank of the positive as a share of
    the negatives)."""
    params, settings, work, thread, shift, buf = state
    V = params.item_factors
    indices, n_negatives = positives.indices, settings.n_negatives
    w = positives.sample_weight[p]
    ok, sample_loss, above = ccl_sample(
        params.user_factors, V, params.user_grad_sq, params.item_grad_sq, u, indices[p], w,
        indices, start, end, V.shape[0], positives.neg_cdf, positives.filt, shift, key,
        settings, buf, adagrad, freeze_items, loss == LOSS_SOFTMAX, work.ints[thread, 0],
        work.reals[thread, 0])
    return ok, 1, n_negatives, sample_loss, w * above / n_negatives
