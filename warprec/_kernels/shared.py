"""Hogwild epoch kernel of the cosine losses with negatives shared by a group of positives
(``WARPFactorizer(negative_sharing=B)`` with ``B > 1``, ``loss="ccl"`` or ``"softmax"``).

The per-positive kernel (:mod:`.ccl`) draws ``N = n_negatives`` negatives for every
positive and takes one dot product per draw. Here the epoch order is cut into groups of
``B`` consecutive positions (group ``g`` holds positions ``[g B, (g + 1) B)``; a thread
claims chunks of whole groups) and the positives of a group share one set of ``N``
draws, so that their cosines are one dense ``B x N`` product of two gathered,
contiguous blocks: the user vectors ``H`` (``B x d``) and the drawn item rows ``V_N``
(``N x d``), computed in register tiles of two users by four draws, over tiles of
:data:`SHARED_TILE` draws that stay in the L1/L2 cache (:func:`cosine_block`). Numba
loops rather than BLAS: a BLAS call inside the ``nogil`` slices would have to be kept to
one thread of its own per call under our threads, and at ``B x N x d`` = 32 x 200 x 128
a call's overhead is a large share of the product. The gradients are sums of the same
kind: with ``G`` the ``B x N`` matrix of the loss's derivatives with respect to the
cosines, the users' gradients are ``G V_N`` minus their radial parts (``d cos(x, y) / dx
= y - cos(x, y) x`` on the sphere; :func:`gradient_block`), and a drawn row's gradient
is the sum over the positives of their terms ``G[b, t] (H[b] - C[b, t] V_N[t])``
(:func:`drawn_gradients`).

**Draws.** ``N`` items drawn with replacement over *all* items, uniformly (or from
``Positives.neg_cdf`` with popularity negatives), at positions ``0 .. N - 1`` of the
group's stream (:func:`group_key`, keyed by ``(seed, epoch, g)``): the same draws
whichever thread runs the group. A draw that is one of a positive's user's positives is
*masked* for that positive (:func:`mask_positives`: a binary search per positive of the
user in the group's sorted draws, or the user's filter, ``negatives.is_positive``): it
counts for nothing, adds no loss and gets no gradient from that positive. So a positive
sees ``M <= N`` negatives, in expectation ``N Y / n_items`` for a user with ``Y``
negatives.

**The losses.** The cosine contrastive loss takes the mean over the ``M`` unmasked draws:
``w (1 - c_i)^+ + (w m / M) sum_j max(0, c_j - margin)``. The sampled softmax corrects
every unmasked draw's logit by ``-log(N q_j) = log(n_items / N)`` (``q_j = 1 / n_items``
for a uniform draw over all items): the ``M`` unmasked draws then estimate the sum of
``exp(z_j)`` over the user's ``Y`` negatives without bias (its expectation is ``(N Y /
n_items) * (n_items / N) * mean = Y * mean``), the correction the per-positive kernel
writes as ``log(Y / N)`` for draws among the negatives only. The statistics count ``M``
trials per positive and its rank loss as ``w * (unmasked draws scoring at least the
positive) / M``.

**Order of the updates.** Within a group every cosine, loss and gradient is taken with
the rows as they are before any of them moves (the group's ``U[u]``, ``V[i]`` and drawn
rows are read once). Then the rows step on the sphere (:func:`sphere_step`, Adagrad or
plain, back to unit norm): the positives' item rows in group order, one step per
positive; the drawn rows in draw order (those with a non-zero gradient), one step each by
the sum of the positives' terms, with Adagrad's accumulator grown by the sum of their
squares, what the positives' separate steps would have added (an accumulator grown by
the square of the sum would shrink the negatives' steps about ``sqrt(B)``-fold); and the
users' rows in group order, one step per positive. A row that appears twice in a group
(a repeated draw, two positives of one item or of one user) steps twice, each time by a
gradient taken at the start of the group. The per-positive kernel instead takes each
positive's cosines with the rows as the previous positives left them (Hogwild steps one
positive at a time): a group is ``B`` positives' steps computed from one snapshot, as in
a minibatch, applied one after another. Between threads it is Hogwild as before. (With
``sample_order="users"`` a group holds several positives of one user, all taken from one
snapshot of the user's row; ``"auto"`` takes the positives order with shared
negatives.)

Dropout on the user vector (``Settings.dropout``) is per positive, from the positive's
own stream ``(seed, epoch, sample)`` as in :mod:`.ccl`: ``H``'s row of a positive is its
user's row after dropout, rescaled to unit norm, and the user's gradient goes back
through the mask and the rescaling. A positive whose mask leaves a zero vector makes no
step (its sample is counted, with no update).

The kernel is one compiled variant for both losses, Adagrad or plain steps and frozen
items (fold-in): those are arguments rather than compile-time constants, since the work
of a group is in its dense loops, which do not depend on them, and a variant less is a
few seconds of compilation less.
"""

import numpy as np
from numba import njit

from ._flags import JIT_NO_NRT, inlined
from .atomic import fetch_add
from .ccl import DROPOUT_POSITION
from .config import SHARED_TILE
from .epoch import LOSS_SOFTMAX, close_slice, sample_at
from .negatives import filter_shift, is_positive
from .rng import draw_below, draw_unit, mix64, stream_key
from .search import bisect, count_at_most

#: Rows 0-2 of a thread's scratch rows are the sphere steps' work rows; the group's rows
#: follow (see :func:`scratch_rows`).
FIRST_ROW = 3
#: The value a masked draw's entry takes in the cosine block (no cosine of unit rows
#: comes near it).
MASKED = 4.0
_GROUP_SALT = np.uint64(0xD1B54A32D192ED03)


def scratch_rows(group, n_negatives):
    """Float32 rows of width ``d`` a thread uses: 3 work rows, then for the ``B =
    group`` positives their user vectors ``H``, dropout masks, user gradients and item
    gradients, then the ``N`` drawn rows, their gradients and their gradients' squares
    summed over the positives (Adagrad)."""
    return FIRST_ROW + 4 * group + 3 * n_negatives


def real_rows(group):
    """Float64 rows (at least ``max(N, B)`` wide) a thread uses: the ``B x N`` cosine
    block, the ``B x N`` block of their derivatives, and per positive its cosine,
    gradient coefficient, dropout norm and weight."""
    return 2 * group + 4


#: Rows of the per-thread integer lists: the draws, their "has a gradient" flags, per
#: positive of the group its CSR position, user, item and the user's CSR bounds, and the
#: draws sorted (as ``item << SLOT_BITS | t``).
INT_ROWS = 8
#: Bits of a draw's slot ``t`` in its sorted key (:func:`sorted_draws`).
SLOT_BITS = 20
_SLOT_MASK = (1 << SLOT_BITS) - 1


@inlined
def squared_norm(W, r):
    """``sum_f W[r, f]^2``, a loop that only reads: a sum in a loop that also stores may
    be vectorised or not by a runtime check of the arrays' addresses, and the two paths
    add in different orders (``fastmath``'s reassociation), which would make a one-thread
    fit depend on where its arrays lie in memory."""
    sq = np.float32(0.0)
    for f in range(W.shape[1]):
        sq += W[r, f] * W[r, f]
    return sq


@inlined
def sphere_step(P, G, r, W, grad_row, square_row, lr, adagrad):
    """``ccl.sphere_step`` with its norm summed in a loop of its own
    (:func:`squared_norm`): step ``P[r]`` along ``-W[grad_row]`` (Adagrad-scaled: the
    accumulator ``G[r]`` grows by the squared gradient, or by ``W[square_row]`` when
    ``square_row >= 0``), proposed in ``W[1]`` (accumulators in ``W[2]``), written at unit
    norm only if finite; returns whether it was written."""
    for f in range(P.shape[1]):
        g = W[grad_row, f]
        if adagrad:
            a = G[r, f] + (g * g if square_row < 0 else W[square_row, f])
            W[2, f] = a
            W[1, f] = P[r, f] - lr * g / np.sqrt(a)
        else:
            W[1, f] = P[r, f] - lr * g
    sq = squared_norm(W, 1)
    if not (np.isfinite(sq) and sq > 0):
        return False
    inv = np.float32(1.0) / np.sqrt(sq)
    for f in range(P.shape[1]):
        P[r, f] = W[1, f] * inv
        if adagrad:
            G[r, f] = W[2, f]
    return True


@njit(**JIT_NO_NRT)
def sorted_draws(drawn, keys, n):
    """``keys[:n]``: the draws ``drawn[:n]`` as ``item << SLOT_BITS | t``, sorted
    ascending (heapsort in place), so that the draws of an item are found by binary
    search."""
    for t in range(n):
        keys[t] = (drawn[t] << SLOT_BITS) | t
    for root in range(n // 2 - 1, -1, -1):
        _sift(keys, root, n)
    for end in range(n - 1, 0, -1):
        top = keys[0]
        keys[0] = keys[end]
        keys[end] = top
        _sift(keys, 0, end)


@inlined
def _sift(keys, root, n):
    while True:
        child = 2 * root + 1
        if child >= n:
            return
        if child + 1 < n and keys[child + 1] > keys[child]:
            child += 1
        if keys[root] >= keys[child]:
            return
        top = keys[root]
        keys[root] = keys[child]
        keys[child] = top
        root = child


@inlined
def mask_positives(C, b, u, start, end, drawn, keys, nt, positives, shift):
    """Set ``C[b, t] = MASKED`` for the draws ``t`` that are positives of user ``u``
    (``indices[start:end]``): through the sorted draws ``keys`` (a binary search per
    positive) when the user has fewer positives than ``nt / log2(nt)``, else through
    the user's filter (a test per draw)."""
    indices = positives.indices
    n_pos = end - start
    bits = 1
    while (1 << bits) < nt:
        bits += 1
    if nt < (1 << SLOT_BITS) and n_pos * bits < nt:
        for q in range(start, end):
            item = np.int64(indices[q])
            at = bisect(keys, 0, nt, item << SLOT_BITS, False)
            while at < nt and (keys[at] >> SLOT_BITS) == item:
                C[b, keys[at] & _SLOT_MASK] = MASKED
                at += 1
        return
    for t in range(nt):
        if is_positive(positives.filt, shift, u, drawn[t], indices, start, end):
            C[b, t] = MASKED


@inlined
def group_key(seed, epoch, group):
    """Key of group ``group``'s stream of draws in epoch ``epoch`` (apart from the
    positives' streams of ``rng.stream_key``)."""
    return mix64(stream_key(seed, epoch, group) ^ _GROUP_SALT)


@inlined
def shared_draw(key, t, n_items, neg_cdf):
    """Draw ``t`` of a group: an item uniform over all items, or from ``neg_cdf``."""
    if neg_cdf.shape[0] > 0:
        j = count_at_most(neg_cdf, draw_unit(key, t))
        return j if j < n_items else n_items - 1
    return draw_below(key, t, n_items)


@inlined
def user_vector(U, u, W, h, m, key, dropout):
    """Write the user vector of a positive's step into ``W[h]`` (``U[u]``, or after
    dropout, as ``ccl.dropped_user``: coordinate ``f`` kept when draw ``DROPOUT_POSITION +
    f`` of ``key`` is at least ``dropout``, the rest rescaled to unit norm, the 0/1 mask
    in ``W[m]``). Returns the norm of the masked row before rescaling (1 without dropout,
    0 when the mask leaves a zero vector)."""
    if dropout <= 0:
        for f in range(U.shape[1]):
            W[h, f] = U[u, f]
        return np.float32(1.0)
    for f in range(U.shape[1]):
        keep = draw_unit(key, DROPOUT_POSITION + f) >= dropout
        W[m, f] = np.float32(1.0) if keep else np.float32(0.0)
        W[h, f] = U[u, f] if keep else np.float32(0.0)
    sq = squared_norm(W, h)
    if not (np.isfinite(sq) and sq > 0):
        return np.float32(0.0)
    norm = np.sqrt(sq)
    inv = np.float32(1.0) / norm
    for f in range(U.shape[1]):
        W[h, f] *= inv
    return norm


@njit(**JIT_NO_NRT)
def cosine_block(W, h0, nb, v0, nt, C):
    """``C[b, t] = <W[h0 + b], W[v0 + t]>`` for ``b < nb``, ``t < nt``: the ``nb x nt``
    product in tiles of :data:`SHARED_TILE` rows ``W[v0 + t]`` (kept in cache while every
    ``b`` passes over them), eight dot products at a time, two user vectors by four
    drawn rows (six loads for eight multiply-adds per coordinate)."""
    d = W.shape[1]
    for t0 in range(0, nt, SHARED_TILE):
        t1 = min(t0 + SHARED_TILE, nt)
        for b in range(0, nb, 2):
            pair = b + 1 < nb
            ha = h0 + b
            hb = ha + 1 if pair else ha   # (an odd last row: its product is not stored)
            t = t0
            while t + 4 <= t1:
                r = v0 + t
                a0 = a1 = a2 = a3 = np.float32(0.0)
                c0 = c1 = c2 = c3 = np.float32(0.0)
                for f in range(d):
                    x = W[ha, f]
                    y = W[hb, f]
                    v = W[r, f]
                    a0 += x * v
                    c0 += y * v
                    v = W[r + 1, f]
                    a1 += x * v
                    c1 += y * v
                    v = W[r + 2, f]
                    a2 += x * v
                    c2 += y * v
                    v = W[r + 3, f]
                    a3 += x * v
                    c3 += y * v
                C[b, t] = a0
                C[b, t + 1] = a1
                C[b, t + 2] = a2
                C[b, t + 3] = a3
                if pair:
                    C[b + 1, t] = c0
                    C[b + 1, t + 1] = c1
                    C[b + 1, t + 2] = c2
                    C[b + 1, t + 3] = c3
                t += 4
            while t < t1:
                r = v0 + t
                a0 = np.float32(0.0)
                c0 = np.float32(0.0)
                for f in range(d):
                    a0 += W[ha, f] * W[r, f]
                    c0 += W[hb, f] * W[r, f]
                C[b, t] = a0
                if pair:
                    C[b + 1, t] = c0
                t += 1


@njit(**JIT_NO_NRT)
def gradient_block(W, out0, n_out, in0, n_in, G, first):
    """``W[out0 + o] += sum_k G[first + o, k] W[in0 + k]`` for ``o < n_out``: ``G V_N`` for
    the users' gradients. Zero coefficients are skipped (most of the cosine contrastive
    loss's: draws within the margin); the rest are taken four at a time (one load and
    store of the output coordinate for four multiply-adds)."""
    d = W.shape[1]
    for o in range(n_out):
        row = out0 + o
        k = 0
        while k < n_in:
            # the next (up to) four non-zero coefficients
            n = 0
            g0 = g1 = g2 = g3 = np.float32(0.0)
            r0 = r1 = r2 = r3 = in0
            while k < n_in and n < 4:
                g = np.float32(G[first + o, k])
                if g != 0:
                    if n == 0:
                        g0, r0 = g, in0 + k
                    elif n == 1:
                        g1, r1 = g, in0 + k
                    elif n == 2:
                        g2, r2 = g, in0 + k
                    else:
                        g3, r3 = g, in0 + k
                    n += 1
                k += 1
            if n == 0:
                break
            for f in range(d):   # (unused slots have g = 0 and a valid row)
                W[row, f] += (g0 * W[r0, f] + g1 * W[r1, f]) + (g2 * W[r2, f] + g3 * W[r3, f])


@inlined
def coefficients(C, b, gb, c_i, w, u, start, end, drawn, keys, nt, positives, shift,
                 softmax, margin, push_weight, inv_t, log_q, touched):
    """Mask (with :data:`MASKED`, :func:`mask_positives`) the draws that are positives of
    user ``u`` in row ``b`` of the cosine block and write the loss's derivatives with respect to the
    cosines into row ``gb`` (0 where masked); flag ``touched[t]`` where a derivative is
    not 0. Returns ``(loss, g_i, trials, above, radial)``: the positive's loss, the
    derivative with respect to its cosine ``c_i``, the unmasked draws, those scoring at
    least ``c_i``, and ``sum_t G[b, t] C[b, t]``."""
    mask_positives(C, b, u, start, end, drawn, keys, nt, positives, shift)
    m = 0
    above = 0
    hinge = 0.0
    z_i = c_i * inv_t
    top = z_i
    for t in range(nt):
        c = C[b, t]
        if c == MASKED:
            continue
        m += 1
        above += c >= c_i
        if softmax:
            top = max(top, c * inv_t + log_q)
        elif c > margin:
            hinge += c - margin
    if softmax:
        total = np.exp(z_i - top)
        for t in range(nt):
            if C[b, t] != MASKED:
                total += np.exp(C[b, t] * inv_t + log_q - top)
        loss = w * (np.log(total) + top - z_i)
        g_i = w * (np.exp(z_i - top) / total - 1.0) * inv_t
        scale = w * inv_t / total
        for t in range(nt):
            c = C[b, t]
            C[gb, t] = 0.0 if c == MASKED else scale * np.exp(c * inv_t + log_q - top)
    else:
        pull = w if c_i < 1 else 0.0     # (the hinge is flat at 1)
        push = w * push_weight / m if m > 0 else 0.0
        loss = pull * (1.0 - c_i) + push * hinge
        g_i = -pull
        for t in range(nt):
            c = C[b, t]
            C[gb, t] = push if (c > margin and c != MASKED) else 0.0
    for t in range(nt):
        if C[gb, t] != 0:
            touched[t] = 1
    # (a sum in a loop of its own, which only reads: see squared_norm; G is 0 where masked)
    radial = 0.0
    for t in range(nt):
        radial += C[gb, t] * C[b, t]
    return loss, g_i, m, above, radial


@njit(**JIT_NO_NRT)
def drawn_gradients(W, R, B, nb, h0, v0, ig0, sq0, N, touched, adagrad):
    """The drawn rows' gradients ``W[ig0 + t] = sum_b G[b, t] (H[b] - C[b, t] V_N[t])``
    (the cosine block in rows ``0 .. B - 1`` of ``R``, the derivatives in rows ``B ..``)
    and, with ``adagrad``, the sums of their per-positive terms' squares in ``W[sq0 +
    t]``, for the draws flagged in ``touched``. The non-zero terms are taken four at a
    time (one load and store of the sums per coordinate for four terms)."""
    d = W.shape[1]
    for t in range(N):
        if not touched[t]:
            continue
        ig, sq, vt = ig0 + t, sq0 + t, v0 + t
        for f in range(d):
            W[ig, f] = 0
            W[sq, f] = 0
        b = 0
        while b < nb:
            # the next (up to) four positives with a non-zero term
            n = 0
            g0 = g1 = g2 = g3 = np.float32(0.0)
            c0 = c1 = c2 = c3 = np.float32(0.0)
            r0 = r1 = r2 = r3 = h0
            while b < nb and n < 4:
                g = np.float32(R[B + b, t])
                if g != 0:
                    c = np.float32(R[b, t])
                    if n == 0:
                        g0, c0, r0 = g, c, h0 + b
                    elif n == 1:
                        g1, c1, r1 = g, c, h0 + b
                    elif n == 2:
                        g2, c2, r2 = g, c, h0 + b
                    else:
                        g3, c3, r3 = g, c, h0 + b
                    n += 1
                b += 1
            if n == 0:
                break
            # (unused slots have g = 0 and a valid row)
            if adagrad:
                for f in range(d):
                    v = W[vt, f]
                    x0 = g0 * (W[r0, f] - c0 * v)
                    x1 = g1 * (W[r1, f] - c1 * v)
                    x2 = g2 * (W[r2, f] - c2 * v)
                    x3 = g3 * (W[r3, f] - c3 * v)
                    W[ig, f] += (x0 + x1) + (x2 + x3)
                    W[sq, f] += (x0 * x0 + x1 * x1) + (x2 * x2 + x3 * x3)
            else:
                for f in range(d):
                    v = W[vt, f]
                    W[ig, f] += ((g0 * (W[r0, f] - c0 * v) + g1 * (W[r1, f] - c1 * v))
                                 + (g2 * (W[r2, f] - c2 * v) + g3 * (W[r3, f] - c3 * v)))


@njit(**JIT_NO_NRT)
def group_step(params, positives, settings, work, order, epoch, thread, g0, g1, shift,
               softmax, adagrad, freeze_items):
    """The step of the positives at positions ``[g0, g1)`` of ``order`` (one group; see
    the module docstring). Returns ``(ok, samples, updates, trials, loss, rank_loss)``."""
    U, V = params.user_factors, params.item_factors
    GU, GV = params.user_grad_sq, params.item_grad_sq
    n_items, d = V.shape[0], V.shape[1]
    B, N = settings.negative_sharing, settings.n_negatives
    W, L, R = work.scratch[thread], work.ints[thread], work.reals[thread]
    h0 = FIRST_ROW
    m0, ug0, pg0 = h0 + B, h0 + 2 * B, h0 + 3 * B
    v0 = h0 + 4 * B
    ig0, sq0 = v0 + N, v0 + 2 * N
    c_pos, g_pos, norms, weights = 2 * B, 2 * B + 1, 2 * B + 2, 2 * B + 3
    seed, dropout, lr = settings.seed, settings.dropout, settings.learning_rate
    # the group's positives and their user vectors, as they are now
    nb = 0
    samples = 0
    for s in range(g0, g1):
        p, u, start, end, n_neg = sample_at(order, s, positives.users, positives.indptr,
                                            n_items)
        samples += 1
        if n_neg <= 0:
            continue
        norm = user_vector(U, u, W, h0 + nb, m0 + nb, stream_key(seed, epoch, p), dropout)
        if norm == 0:
            continue
        i = positives.indices[p]
        L[1, nb], L[2, nb], L[3, nb], L[4, nb], L[5, nb] = p, u, i, start, end
        R[norms, nb] = norm
        R[weights, nb] = positives.sample_weight[p]
        acc = np.float32(0.0)
        for f in range(d):
            acc += W[h0 + nb, f] * V[i, f]
        R[c_pos, nb] = acc
        nb += 1
    if nb == 0:
        return True, samples, 0, 0, 0.0, 0.0
    # the shared draws, gathered
    key = group_key(seed, epoch, g0 // B)
    drawn = L[0]
    for t in range(N):
        j = shared_draw(key, t, n_items, positives.neg_cdf)
        drawn[t] = j
        L[6, t] = 0
        for f in range(d):
            W[v0 + t, f] = V[j, f]
    cosine_block(W, h0, nb, v0, N, R)
    sorted_draws(drawn, L[7], N)
    # the losses and their derivatives with respect to the cosines
    inv_t = 1.0 / np.float64(settings.temperature)
    log_q = np.log(np.float64(n_items) / N)
    trials = 0
    loss = 0.0
    rank = 0.0
    for b in range(nb):
        w = np.float64(R[weights, b])
        c_i = np.float32(R[c_pos, b])
        b_loss, g_i, m, above, radial = coefficients(
            R, b, B + b, c_i, w, L[2, b], L[4, b], L[5, b], drawn, L[7], N, positives,
            shift, softmax, settings.margin, settings.negative_weight, inv_t, log_q, L[6])
        loss += b_loss
        trials += m
        if m > 0:
            rank += w * above / m
        R[g_pos, b] = g_i
        # the user's gradient, without G V_N: -(radial + g_i c_i) h + g_i V[i]
        gi = np.float32(g_i)
        back = np.float32(-(radial + g_i * c_i))
        i = L[3, b]
        for f in range(d):
            W[ug0 + b, f] = back * W[h0 + b, f] + gi * V[i, f]
            W[pg0 + b, f] = gi * (W[h0 + b, f] - c_i * V[i, f])
    gradient_block(W, ug0, nb, v0, N, R, B)
    # the users' gradients through the dropout mask and rescaling
    if dropout > 0:
        for b in range(nb):
            inv = np.float32(1.0) / np.float32(R[norms, b])
            for f in range(d):
                W[ug0 + b, f] *= W[m0 + b, f] * inv
    if not freeze_items:
        drawn_gradients(W, R, B, nb, h0, v0, ig0, sq0, N, L[6], adagrad)
        # the steps: the positives' rows, the drawn rows, then the users'
        for b in range(nb):
            if R[g_pos, b] != 0 and not sphere_step(V, GV, L[3, b], W, pg0 + b, -1, lr,
                                                    adagrad):
                return False, samples, nb, trials, loss, rank
        for t in range(N):
            if L[6, t] and not sphere_step(V, GV, drawn[t], W, ig0 + t, sq0 + t, lr,
                                           adagrad):
                return False, samples, nb, trials, loss, rank
    for b in range(nb):
        if not sphere_step(U, GU, L[2, b], W, ug0 + b, -1, lr, adagrad):
            return False, samples, nb, trials, loss, rank
    return True, samples, nb, trials, loss, rank


@njit(**JIT_NO_NRT)
def shared_slice(params, positives, settings, work, order, epoch, chunk, thread, softmax,
                 adagrad, freeze_items):
    """Slice ``thread`` of an epoch with shared negatives: claim chunks of whole groups
    (``chunk`` rounded up to a multiple of ``Settings.negative_sharing``) from the shared
    counter until none is left or a slice raised ``work.stop``, run :func:`group_step`
    on each of their groups, and close the slice with its statistics (as
    ``epoch.run_slice``). ``softmax``: the sampled softmax, else the cosine contrastive
    loss; ``adagrad``: Adagrad steps; ``freeze_items``: only the user rows move."""
    B = settings.negative_sharing
    n_items = params.item_factors.shape[0]
    shift = filter_shift(positives.filt.shape[1], n_items)
    chunk = (chunk + B - 1) // B * B
    n = order.shape[0]
    next_chunk, stop = work.next_chunk, work.stop
    ok = True
    n_samples = 0
    n_updates = 0
    n_trials = 0
    loss_sum = 0.0
    rank_loss_sum = 0.0
    while ok and not stop[0]:
        cur = fetch_add(next_chunk, 0, 1) * chunk
        if cur >= n:
            break
        hi = min(cur + chunk, n)
        for g0 in range(cur, hi, B):
            ok, samples, updates, trials, loss, rank = group_step(
                params, positives, settings, work, order, epoch, thread, g0,
                min(g0 + B, hi), shift, softmax, adagrad, freeze_items)
            n_samples += samples
            n_updates += updates
            n_trials += trials
            loss_sum += loss
            rank_loss_sum += rank
            if not ok or stop[0]:
                break
    return close_slice(work.stats[thread], stop, ok, n_samples, n_updates, n_trials, loss_sum,
                       rank_loss_sum)


def compile_epoch(mode):
    """The shared-negatives slice kernel of ``mode``, called as the other losses' kernels
    are (``epoch.compile_epoch``): one compiled kernel for every such mode, the mode's
    loss, schedule and frozen items passed as arguments (see the module docstring)."""
    softmax = int(mode.loss) == LOSS_SOFTMAX
    adagrad, freeze_items = bool(mode.adagrad), bool(mode.freeze_items)

    def shared_variant(params, positives, settings, work, order, epoch, chunk, thread):
        return shared_slice(params, positives, settings, work, order, epoch, chunk, thread,
                            softmax, adagrad, freeze_items)

    return shared_variant
