"""The parameter updates of the training kernel: scores, rank weights, and the pairwise
and list steps with decoupled weight decay, optional Adagrad and optional max-norm.

Notation: ``U, V, b`` are the user factors, item factors and item biases
(``WARPFactorizer.user_factors_``, ``item_factors_``, ``item_biases_``) and ``GU, GV,
Gb`` their Adagrad accumulators of squared gradients (``user_grad_sq_``,
``item_grad_sq_``, ``bias_grad_sq_``); ``lr`` is the learning rate and ``alpha`` the
decay. No update leaves a parameter NaN or infinite.
"""

import numpy as np
from numba import njit

from ._flags import JIT, inlined


@njit(**JIT)
def score(U, V, b, u, i):
    """``<U[u], V[i]> + b[i]`` in float32."""
    return dot(U, V, u, i, U.shape[1]) + b[i]


@njit(**JIT)
def dot(U, V, u, i, d):
    """``<U[u, :d], V[i, :d]>`` in float32."""
    acc = np.float32(0.0)
    for f in range(d):
        acc += U[u, f] * V[i, f]
    return acc


@njit(**JIT)
def rank_loss_weight(table, rank, n_neg, top_fraction, normalize):
    """``L(min(rank, m)) [/ L(m)]`` with ``m = ceil(top_fraction * n_neg)`` (see weights.py)."""
    m = n_neg
    if top_fraction < 1.0:
        m = max(np.int64(np.ceil(top_fraction * n_neg - 1e-9)), 1)
    if m > table.shape[0] - 1:
        m = table.shape[0] - 1
    w = table[min(rank, m)]
    if normalize:
        w = w / table[m] if table[m] > 0 else 0.0
    return w


@inlined
def bpr_terms(x):
    """BPR's ``(dL/df_j, L)`` for the score margin ``x = f(u, i) - f(u, j)``, with
    ``L = -log(sigmoid(x))``: ``dL/df_j = sigmoid(-x)``, both computed without
    overflow."""
    if x >= 0:
        e = np.exp(-x)
        return e / (1.0 + e), np.log1p(e)
    e = np.exp(x)
    return 1.0 / (1.0 + e), np.log1p(e) - x


@inlined
def pair_update(U, V, b, GU, GV, Gb, u, i, j, g, lr, alpha, max_norm, buf, adagrad, clip,
                freeze_items):
    """One step on ``g * (f(u, j) - f(u, i))`` for the rows U[u], V[i], V[j], b[i], b[j]
    (``i != j``).

    The factor rows also decay by ``1 - lr * alpha`` (decoupled weight decay, applied
    only to the rows an update touches, so frequent users/items are shrunk more often);
    biases are not decayed. With ``adagrad`` the gradient step is divided per coordinate
    by the root of the squared gradients accumulated in ``GU, GV, Gb``; without it they
    are not touched (plain SGD).

    Returns ``False`` if a new value is non-finite; no parameter is left NaN or infinite
    (the buffered step then writes nothing, the in-place step resets the non-finite
    coordinates). Without ``clip`` the rows are updated in place in one pass
    (:func:`_step_in_place`); with it they are computed into ``buf`` first, rescaled to
    norm ``max_norm`` at most (:func:`_step_buffered`; ``buf`` has at least 6 rows of
    length ``d``).

    With ``freeze_items`` only the user row (and its accumulators) moves: the item side
    is fixed, as when new users are folded into a trained model (:func:`user_update`).

    ``adagrad``, ``clip`` and ``freeze_items`` are compile-time constants of the calling
    kernel's variant (see ``train.epoch_kernel``): this function is inlined into it and
    Numba prunes the branches they rule out.
    """
    if freeze_items:
        return user_update(U, V, GU, u, i, j, g, lr, alpha, max_norm, buf, adagrad)
    if clip:
        return _step_buffered(U, V, b, GU, GV, Gb, u, i, j, g, lr, alpha, max_norm, buf,
                              adagrad)
    return _step_in_place(U, V, b, GU, GV, Gb, u, i, j, g, lr, alpha, adagrad)


@njit(**JIT)
def _bias_steps(b, Gb, i, j, g, lr, adagrad):
    """New ``b[i], b[j]`` (and their Adagrad accumulators, 0 without ``adagrad``) of a
    pairwise step. In float64 (g * g and lr * g are exact there), so that whether LLVM fuses or
    pairs them up cannot change a bit of the float32 result."""
    step = np.float64(lr) * np.float64(g)
    if adagrad:
        gg = np.float64(g) * np.float64(g)
        abi = np.float32(Gb[i] + gg)
        abj = np.float32(Gb[j] + gg)
        return (np.float32(b[i] + step / np.sqrt(np.float64(abi))),
                np.float32(b[j] - step / np.sqrt(np.float64(abj))), abi, abj)
    return np.float32(b[i] + step), np.float32(b[j] - step), np.float32(0.0), np.float32(0.0)


@njit(**JIT)
def _adagrad_coordinate(uf, vi, vj, au, ai, aj, g, lr, decay):
    """One coordinate of an Adagrad pair step: the new ``U[u, f], V[i, f], V[j, f]`` and
    their new accumulators, from the old values ``uf, vi, vj, au, ai, aj``."""
    gu = g * (vj - vi)
    gv = g * uf  # the gradient of V[j]; V[i]'s is its opposite
    au = au + gu * gu
    ai = ai + gv * gv
    aj = aj + gv * gv
    return (decay * uf - lr * gu / np.sqrt(au), decay * vi + lr * gv / np.sqrt(ai),
            decay * vj - lr * gv / np.sqrt(aj), au, ai, aj)


@njit(**JIT)
def _sgd_coordinate(uf, vi, vj, g, lr, decay):
    """One coordinate of a plain SGD pair step: the new ``U[u, f], V[i, f], V[j, f]``."""
    gu = g * (vj - vi)
    gv = g * uf
    return decay * uf - lr * gu, decay * vi + lr * gv, decay * vj - lr * gv


@inlined
def _step_in_place(U, V, b, GU, GV, Gb, u, i, j, g, lr, alpha, adagrad):
    """:func:`pair_update` without max-norm: each coordinate of the rows (and of their
    Adagrad accumulators) is read, stepped and written back in one pass, and the sum of
    the new values is checked afterwards. If it is not finite, :func:`_reset_non_finite`
    puts the coordinates that became NaN/Inf back to finite values (factors 0,
    accumulators 1), the biases are not written, and ``False`` is returned.

    Writing in place instead of into scratch rows first (and copying them after the
    check) halves the stores of an update. Another thread may read a non-finite value in
    the moment before it is reset; whatever it computes from it is non-finite too, so its
    own check fails and it resets its rows in the same way.
    """
    d = U.shape[1]
    decay = np.float32(1.0) - lr * alpha
    total = np.float32(0.0)
    Uu = U[u]
    Vi = V[i]
    Vj = V[j]
    if adagrad:
        GUu = GU[u]
        GVi = GV[i]
        GVj = GV[j]
        for f in range(d):
            x, y, z, gu2, gi2, gj2 = _adagrad_coordinate(Uu[f], Vi[f], Vj[f], GUu[f], GVi[f],
                                                         GVj[f], g, lr, decay)
            GUu[f] = gu2
            GVi[f] = gi2
            GVj[f] = gj2
            Uu[f] = x
            Vi[f] = y
            Vj[f] = z
            total += (x + y + z) + (gu2 + gi2 + gj2)
    else:
        for f in range(d):
            x, y, z = _sgd_coordinate(Uu[f], Vi[f], Vj[f], g, lr, decay)
            Uu[f] = x
            Vi[f] = y
            Vj[f] = z
            total += x + y + z
    new_bi, new_bj, abi, abj = _bias_steps(b, Gb, i, j, g, lr, adagrad)
    if not np.isfinite(total + (new_bi + new_bj)):
        _reset_non_finite(U, u, 0.0)
        _reset_non_finite(V, i, 0.0)
        _reset_non_finite(V, j, 0.0)
        if adagrad:
            _reset_non_finite(GU, u, 1.0)
            _reset_non_finite(GV, i, 1.0)
            _reset_non_finite(GV, j, 1.0)
        return False
    b[i] = new_bi
    b[j] = new_bj
    if adagrad:
        Gb[i] = abi
        Gb[j] = abj
    return True


@njit(**JIT)
def _reset_non_finite(matrix, row, value):
    """Set the NaN/Inf entries of ``matrix[row]`` to ``value``."""
    for f in range(matrix.shape[1]):
        if not np.isfinite(matrix[row, f]):
            matrix[row, f] = value


@inlined
def _step_buffered(U, V, b, GU, GV, Gb, u, i, j, g, lr, alpha, max_norm, buf, adagrad):
    """:func:`pair_update` with max-norm: the new rows are computed once, into ``buf``
    (rows 0-2: U[u], V[i], V[j]; rows 3-5: their Adagrad accumulators), max-norm
    applied; only if their sum is finite are they copied into the parameters. Returns
    ``False`` (and writes nothing) otherwise."""
    d = U.shape[1]
    decay = np.float32(1.0) - lr * alpha
    Uu = U[u]
    Vi = V[i]
    Vj = V[j]
    nu = buf[0]
    ni = buf[1]
    nj = buf[2]
    if adagrad:
        GUu = GU[u]
        GVi = GV[i]
        GVj = GV[j]
        au = buf[3]
        ai = buf[4]
        aj = buf[5]
        for f in range(d):
            nu[f], ni[f], nj[f], au[f], ai[f], aj[f] = _adagrad_coordinate(
                Uu[f], Vi[f], Vj[f], GUu[f], GVi[f], GVj[f], g, lr, decay)
    else:
        for f in range(d):
            nu[f], ni[f], nj[f] = _sgd_coordinate(Uu[f], Vi[f], Vj[f], g, lr, decay)
    new_bi, new_bj, abi, abj = _bias_steps(b, Gb, i, j, g, lr, adagrad)
    _clip_row(buf, 0, max_norm)
    _clip_row(buf, 1, max_norm)
    _clip_row(buf, 2, max_norm)
    check = new_bi + new_bj
    for f in range(d):
        check += nu[f] + ni[f] + nj[f]
    if adagrad:
        for f in range(d):
            check += au[f] + ai[f] + aj[f]
    if not np.isfinite(check):
        return False
    for f in range(d):
        Uu[f] = nu[f]
        Vi[f] = ni[f]
        Vj[f] = nj[f]
    b[i] = new_bi
    b[j] = new_bj
    if adagrad:
        for f in range(d):
            GUu[f] = au[f]
            GVi[f] = ai[f]
            GVj[f] = aj[f]
        Gb[i] = abi
        Gb[j] = abj
    return True


@inlined
def user_update(U, V, GU, u, i, j, g, lr, alpha, max_norm, buf, adagrad):
    """:func:`pair_update` of the user row alone: ``U[u]`` (and ``GU[u]``) step on
    ``g * (f(u, j) - f(u, i))`` with the items' factors and biases held fixed; the same
    decay, Adagrad and max-norm (``max_norm > 0``) rules. The new row is computed into
    ``buf`` (rows 0-2) and written only if finite; returns ``False`` otherwise."""
    decay = np.float32(1.0) - lr * alpha
    for f in range(U.shape[1]):
        buf[0, f] = g * (V[j, f] - V[i, f])
    if not np.isfinite(_propose_row(U, GU, u, buf, 0, lr, decay, adagrad, max_norm)):
        return False
    _commit_row(U, GU, u, buf, adagrad)
    return True


@njit(**JIT)
def list_update(U, V, b, GU, GV, Gb, u, items, grad, m, scale, lr, alpha, adagrad, max_norm,
                buf, freeze_items=False):
    """One step on ``scale * sum_t grad[t] * f(u, items[t])`` for a list of items.

    Same rules as :func:`pair_update` (decoupled decay of the touched factor rows,
    Adagrad, optional max-norm, nothing non-finite written; with ``freeze_items`` only the
    user row moves). Returns ``False`` if a new value would be non-finite; rows already
    written by then are finite.
    """
    return list_step(U, V, b, GU, GV, Gb, u, items, grad, m, scale, lr, alpha, adagrad,
                     max_norm, buf, freeze_items)


@inlined
def list_step(U, V, b, GU, GV, Gb, u, items, grad, m, scale, lr, alpha, adagrad, max_norm, buf,
              freeze_items):
    """:func:`list_update` inlined into its caller: the form the training kernels (compiled
    without reference counting) call with rows of their work arrays."""
    d = U.shape[1]
    decay = np.float32(1.0) - lr * alpha
    for f in range(d):
        acc = np.float32(0.0)
        for t in range(m):
            acc += np.float32(scale * grad[t]) * V[items[t], f]
        buf[0, f] = acc  # gradient of the user row, taken before the item rows move
    for t in range(0 if freeze_items else m):
        g = np.float32(scale * grad[t])
        if g == 0:
            continue
        i = items[t]
        for f in range(d):
            buf[3, f] = g * U[u, f]
        check = _propose_row(V, GV, i, buf, 3, lr, decay, adagrad, max_norm)
        if adagrad:
            ab = Gb[i] + g * g
            new_b = b[i] - lr * g / np.sqrt(ab)
        else:
            ab = np.float32(0.0)
            new_b = b[i] - lr * g
        if not np.isfinite(check + new_b):
            return False
        _commit_row(V, GV, i, buf, adagrad)
        b[i] = new_b
        if adagrad:
            Gb[i] = ab
    if not np.isfinite(_propose_row(U, GU, u, buf, 0, lr, decay, adagrad, max_norm)):
        return False
    _commit_row(U, GU, u, buf, adagrad)
    return True


@inlined
def _propose_row(P, G, r, buf, grad_row, lr, decay, adagrad, max_norm):
    """New values of ``P[r]`` after a step along ``buf[grad_row]`` into ``buf[1]`` (and the
    new Adagrad accumulators into ``buf[2]``), max-norm applied; returns their sum, whose
    finiteness tells whether the step may be written."""
    for f in range(P.shape[1]):
        gf = buf[grad_row, f]
        if adagrad:
            a = G[r, f] + gf * gf
            buf[2, f] = a
            buf[1, f] = decay * P[r, f] - lr * gf / np.sqrt(a)
        else:
            buf[1, f] = decay * P[r, f] - lr * gf
    _clip_row(buf, 1, max_norm)
    total = np.float32(0.0)
    for f in range(P.shape[1]):
        total += buf[1, f]
    return total


@inlined
def _commit_row(P, G, r, buf, adagrad):
    """Write the row proposed by :func:`_propose_row`."""
    for f in range(P.shape[1]):
        P[r, f] = buf[1, f]
        if adagrad:
            G[r, f] = buf[2, f]


@njit(**JIT)
def _clip_row(buf, row, max_norm):
    """Rescale ``buf[row]`` (a row of any 2-D array) to Euclidean norm ``max_norm`` if it
    is longer (max_norm > 0)."""
    if max_norm > 0:
        sq = np.float32(0.0)
        for f in range(buf.shape[1]):
            sq += buf[row, f] * buf[row, f]
        if sq > max_norm * max_norm:
            shrink = max_norm / np.sqrt(sq)
            for f in range(buf.shape[1]):
                buf[row, f] *= shrink
