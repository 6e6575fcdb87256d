"""Slow, readable reference of the cosine losses with negatives shared by groups of
positives (``warprec._kernels.shared``): one epoch on one thread, a group at a time."""

import numpy as np

from naive import (MASK, _cos_grads, _sphere_positives, _sphere_step, draw_below, draw_unit,
                   mix64, stream_key)

GROUP_SALT = 0xD1B54A32D192ED03


def group_key(seed, epoch, group):
    """Key of a group's stream of draws: ``mix64(stream_key(seed, epoch, group) ^ salt)``."""
    return mix64((stream_key(seed, epoch, group) ^ GROUP_SALT) & MASK)


def shared_draws(key, n_negatives, n_items, neg_cdf=None):
    """The group's draws: ``draw_below(key, t, n_items)``, or the first item whose
    cumulative probability exceeds ``draw_unit(key, t)``."""
    if neg_cdf is None:
        return [draw_below(key, t, n_items) for t in range(n_negatives)]
    return [min(int(np.searchsorted(neg_cdf, draw_unit(key, t), side="right")), n_items - 1)
            for t in range(n_negatives)]


def _summed_step(param, acc, r, grads, lr, adagrad):
    """A drawn row's step: along the sum of the positives' gradients ``grads``; with
    Adagrad its accumulator first grows by the sum of their squares (what the
    positives' separate steps would have added), then rescaled to unit norm."""
    total = np.sum(grads, axis=0)
    if adagrad:
        acc[r] = acc[r] + np.sum(np.square(grads), axis=0)
        value = param[r] - np.float32(lr) * total / np.sqrt(acc[r])
    else:
        value = param[r] - np.float32(lr) * total
    param[r] = value / np.linalg.norm(value)


def shared_epoch(U, V, GU, GV, X, weights, order, *, softmax, group, lr, n_negatives,
                 margin=0.5, negative_weight=1.0, temperature=0.2, adagrad, seed, epoch,
                 freeze_items=False, dropout=0.0, neg_cdf=None):
    """One epoch, in place; returns the sums ``(loss, rank_loss, trials)`` of its
    statistics.

    The positions of ``order`` are cut into groups of ``group``. For each group, from the
    rows as they are at its start: its positives (those :func:`naive._sphere_positives`
    keeps, with their dropout masks and user vectors ``a``), ``N = n_negatives`` draws
    over all items from the group's stream, and for every positive the cosines with its
    item and with the draws that are not among its user's positives (the ``M`` unmasked
    ones). The cosine loss: ``w (1 - c_i)`` (when ``c_i < 1``) plus ``w negative_weight /
    M`` times every unmasked ``c_j - margin > 0``; the softmax: ``-w log p_i`` over the
    logits ``c_i / t`` and ``c_j / t + log(n_items / N)`` of the unmasked draws. Every
    gradient is that of the cosine of free vectors (``naive._cos_grads``; the user's
    through the mask). Then the positives' item rows step in group order, the drawn rows
    with a non-zero gradient in draw order (by :func:`_summed_step`), and the users' rows
    in group order, each by the gradient taken at the start of the group.
    """
    n_items = V.shape[0]
    f32 = np.float32
    total_loss = total_rank = 0.0
    total_trials = 0
    for g0 in range(0, len(order), group):
        members = list(_sphere_positives(U, X, order[g0:g0 + group], seed, epoch, dropout))
        if not members:
            continue
        drawn = shared_draws(group_key(seed, epoch, g0 // group), n_negatives, n_items,
                             neg_cdf)
        item_steps, draw_grads, user_steps = [], {}, []
        for p, u, row, _, _, mask, a in members:
            i, w = int(X.indices[p]), np.float64(weights[p])
            taken = set(int(k) for k in row)
            valid = [t for t in range(n_negatives) if drawn[t] not in taken]

            def cos(k, a=a):
                return f32(a @ V[k] / (np.linalg.norm(a) * np.linalg.norm(V[k])))

            c_i = cos(i)
            c = {t: cos(drawn[t]) for t in valid}
            above = sum(c[t] >= c_i for t in valid)
            if valid:
                total_rank += w * above / len(valid)
            total_trials += len(valid)
            if softmax:
                inv_t = 1.0 / np.float64(f32(temperature))
                z = np.array([c_i * inv_t] + [c[t] * inv_t + np.log(n_items / n_negatives)
                                              for t in valid])
                probs = np.exp(z - z.max())
                probs /= probs.sum()
                total_loss += -w * np.log(probs[0])
                g_i = w * (probs[0] - 1.0) * inv_t
                g = {t: w * probs[n + 1] * inv_t for n, t in enumerate(valid)}
            else:
                pull = w if c_i < 1 else 0.0
                push = w * f32(negative_weight) / len(valid) if valid else 0.0
                over = [t for t in valid if c[t] > f32(margin)]
                total_loss += pull * (1 - c_i) + push * sum(c[t] - f32(margin) for t in over)
                g_i = -pull
                g = {t: push for t in over}
            du, dv = _cos_grads(a, V[i], c_i)
            user_grad = f32(g_i) * mask * du
            if g_i != 0:
                item_steps.append((i, f32(g_i) * dv))
            for t, g_t in g.items():
                du, dv = _cos_grads(a, V[drawn[t]], c[t])
                user_grad = user_grad + f32(g_t) * mask * du
                draw_grads.setdefault(t, []).append(f32(g_t) * dv)
            user_steps.append((u, user_grad))
        if not freeze_items:
            for i, grad in item_steps:
                _sphere_step(V, GV, i, grad, lr, adagrad)
            for t in sorted(draw_grads):
                _summed_step(V, GV, drawn[t], draw_grads[t], lr, adagrad)
        for u, grad in user_steps:
            _sphere_step(U, GU, u, grad, lr, adagrad)
    return total_loss, total_rank, total_trials
