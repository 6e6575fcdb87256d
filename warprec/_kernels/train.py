"""Hogwild SGD epoch kernel for WARP (and BPR) matrix factorisation.

One call runs one epoch over the positives in the order given. Each thread runs one
slice (a Numba function that releases the GIL; the threads are Python threads, not a
``prange`` loop, whose parallel lowering adds to the first fit's compilation). The
slices claim contiguous chunks of that order from a shared counter (a thread that runs
ahead takes more chunks) and update the shared factor matrices without locks (Hogwild).
Each sample's random draws come from a stream keyed by ``(seed, epoch, sample)``
(:mod:`.rng`), so the draws do not depend on which thread runs the sample.

Model: ``f(u, i) = <U[u], V[i]> + b[i]``. For a positive ``(u, i)`` WARP draws
negatives uniformly from the items ``u`` has not interacted with (see :mod:`.negatives`)
until one violates the margin, ``1 + f(u, j) > f(u, i)`` (in float32), or ``max_sampled``
draws pass.
After ``N`` draws the
rank of ``i`` is estimated as ``floor((Y - 1) / N)`` (``Y`` the user's number of
negatives; at least 1 since a violator was found) and the hinge
``L(rank) * (1 - f(u, i) + f(u, j))`` is descended.
"""

import numpy as np
from numba import njit

from .._aligned import aligned_empty
from .._threads import run_in_threads
from ..losses import ordinal_loss_grad_unit
from ._flags import JIT, JIT_NO_NRT
from .atomic import fetch_add
from .borrow import borrow
from .prefetch import prefetch, prefetch_row
from .negatives import draw_negative, filter_shift
from .rng import draw_below, stream_key

LOSS_WARP = 0
LOSS_BPR = 1
LOSS_ORDINAL = 2

#: Columns of the per-thread statistics array filled by :func:`train_epoch`.
STAT_SAMPLES, STAT_UPDATES, STAT_TRIALS, STAT_LOSS, STAT_RANK_LOSS = 0, 1, 2, 3, 4
N_STATS = 5


#: The factor dimension (the default ``n_components``) for which the negative trials of
#: :func:`first_violator` score with a constant trip count: the dot product is unrolled,
#: without the generic loop's control and remainder code. Only there: the negative trials
#: are the kernel's innermost loop, and a fixed-width copy in the other scoring sites gave
#: no further gain for its compile time.
FIXED_D = 64


@njit(**JIT)
def score(U, V, b, u, i):
    """``<U[u], V[i]> + b[i]`` in float32."""
    return _dot(U, V, u, i, U.shape[1]) + b[i]


@njit(**JIT)
def _dot(U, V, u, i, d):
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


@njit(inline="always", **JIT)
def pair_update(U, V, b, GU, GV, Gb, u, i, j, g, lr, alpha, max_norm, buf):
    """One step on ``g * (f(u, j) - f(u, i))`` for the rows U[u], V[i], V[j], b[i], b[j]
    (``i != j``).

    The factor rows also decay by ``1 - lr * alpha`` (decoupled weight decay, applied
    only to the rows an update touches, so frequent users/items are shrunk more often);
    biases are not decayed. With Adagrad (``GU, GV, Gb`` given; ``None`` means plain SGD,
    and Numba compiles only the branch in use) the gradient step is divided per
    coordinate by the root of the accumulated squared gradients.

    Returns ``False`` if a new value is non-finite; no parameter is left NaN or infinite
    (the buffered step then writes nothing, the in-place step resets the non-finite
    coordinates). Without max-norm (``max_norm is None``) the rows are updated in
    place in one pass (:func:`_step_in_place`); with it they are computed into ``buf``
    first (:func:`_step_buffered`; at least 6 rows of length ``d``).
    """
    if max_norm is None:
        return _step_in_place(U, V, b, GU, GV, Gb, u, i, j, g, lr, alpha)
    return _step_buffered(U, V, b, GU, GV, Gb, u, i, j, g, lr, alpha, max_norm, buf)


@njit(**JIT)
def _bias_steps(b, Gb, i, j, g, lr):
    """New ``b[i], b[j]`` (and their Adagrad accumulators, 0 without Adagrad) of a pairwise
    step. In float64 (g * g and lr * g are exact there), so that whether LLVM fuses or
    pairs them up cannot change a bit of the float32 result."""
    step = np.float64(lr) * np.float64(g)
    if Gb is not None:
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


@njit(inline="always", **JIT)
def _step_in_place(U, V, b, GU, GV, Gb, u, i, j, g, lr, alpha):
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
    if GU is not None:
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
    new_bi, new_bj, abi, abj = _bias_steps(b, Gb, i, j, g, lr)
    if not np.isfinite(total + (new_bi + new_bj)):
        _reset_non_finite(U, u, 0.0)
        _reset_non_finite(V, i, 0.0)
        _reset_non_finite(V, j, 0.0)
        if GU is not None:
            _reset_non_finite(GU, u, 1.0)
            _reset_non_finite(GV, i, 1.0)
            _reset_non_finite(GV, j, 1.0)
        return False
    b[i] = new_bi
    b[j] = new_bj
    if Gb is not None:
        Gb[i] = abi
        Gb[j] = abj
    return True


@njit(**JIT)
def _reset_non_finite(matrix, row, value):
    """Set the NaN/Inf entries of ``matrix[row]`` to ``value``."""
    for f in range(matrix.shape[1]):
        if not np.isfinite(matrix[row, f]):
            matrix[row, f] = value


@njit(inline="always", **JIT)
def _step_buffered(U, V, b, GU, GV, Gb, u, i, j, g, lr, alpha, max_norm, buf):
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
    if GU is not None:
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
    new_bi, new_bj, abi, abj = _bias_steps(b, Gb, i, j, g, lr)
    _clip_row(buf, 0, max_norm)
    _clip_row(buf, 1, max_norm)
    _clip_row(buf, 2, max_norm)
    check = new_bi + new_bj
    for f in range(d):
        check += nu[f] + ni[f] + nj[f]
    if GU is not None:
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
    if GU is not None:
        for f in range(d):
            GUu[f] = au[f]
            GVi[f] = ai[f]
            GVj[f] = aj[f]
        Gb[i] = abi
        Gb[j] = abj
    return True


@njit(**JIT)
def list_update(U, V, b, GU, GV, Gb, u, items, grad, m, scale, lr, alpha, adagrad, max_norm,
                buf):
    """One step on ``scale * sum_t grad[t] * f(u, items[t])`` for a list of items.

    Same rules as :func:`pair_update` (decoupled decay of the touched factor rows,
    Adagrad, optional max-norm, nothing non-finite written). Returns ``False`` if a new
    value would be non-finite; rows already written by then are finite.
    """
    d = U.shape[1]
    decay = np.float32(1.0) - lr * alpha
    for f in range(d):
        acc = np.float32(0.0)
        for t in range(m):
            acc += np.float32(scale * grad[t]) * V[items[t], f]
        buf[0, f] = acc  # gradient of the user row, taken before the item rows move
    for t in range(m):
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


@njit(inline="always", **JIT)
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


@njit(inline="always", **JIT)
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


@njit(**JIT)
def ordinal_list(U, V, b, indices, start, end, u, p, grades, n_rated, n_unrated, neg_cdf, filt,
                 shift, key, counter, items, labels, f_list):
    """Fill the list of an ordinal step: positive ``p``, ``n_rated - 1`` more of the user's
    rated items (drawn with replacement) with their grades, and ``n_unrated`` negatives
    with grade 0. Returns the list length."""
    n_pos = end - start
    n_items = V.shape[0]
    m = 0
    for t in range(n_rated):
        q = p if t == 0 else start + draw_below(key, counter + t, n_pos)
        items[m] = indices[q]
        labels[m] = grades[q]
        m += 1
    if n_items > n_pos:
        for t in range(n_unrated):
            items[m] = draw_negative(indices, start, end, u, n_items, neg_cdf, filt, shift, key,
                                     counter + n_rated + t)
            labels[m] = 0
            m += 1
    for t in range(m):
        f_list[t] = score(U, V, b, u, items[t])
    return m


@njit(**JIT)
def kos_positive(U, V, b, indices, start, end, u, kos_k, kos_n, key, counter, best_pos,
                 best_score):
    """k-OS positive: the ``kos_k``-th best scored of ``kos_n`` positives drawn with
    replacement from the user's row. Returns the chosen column position in ``indices``.
    ``best_pos`` (int64) and ``best_score`` (float64) are work arrays of at least
    ``kos_n`` entries."""
    n_pos = end - start
    n = min(kos_n, n_pos)
    for t in range(n):
        # insertion into the list sorted by descending score (stable: ties keep draw order)
        p = start + draw_below(key, counter + t, n_pos)
        f = score(U, V, b, u, indices[p])
        q = t
        while q > 0 and best_score[q - 1] < f:
            best_score[q] = best_score[q - 1]
            best_pos[q] = best_pos[q - 1]
            q -= 1
        best_score[q] = f
        best_pos[q] = p
    return best_pos[min(kos_k, n) - 1]


@njit(**JIT)
def exact_violator(U, V, b, indices, start, end, u, f_i, table, top_fraction, normalize,
                   violators, key, counter):
    """Score every negative of ``u``: a uniformly drawn margin violator, its weight
    ``Phi_n(#violators)`` and the rank loss ``Phi_n(#{j: f_j >= f_i})``.

    Returns ``(j, f(u, j), weight, rank_loss)``, with ``j = -1`` when no negative violates
    the margin.
    """
    n_items = V.shape[0]
    n_neg = n_items - (end - start)
    count = 0
    above = 0
    q = start
    for j in range(n_items):
        if q < end and indices[q] == j:
            q += 1
            continue
        f_j = score(U, V, b, u, j)
        if f_j >= f_i:
            above += 1
        if f_j + np.float32(1.0) > f_i:
            violators[count] = j
            count += 1
    rank_loss = rank_loss_weight(table, above, n_neg, top_fraction, normalize)
    if count == 0:
        return -1, np.float32(0.0), 0.0, rank_loss
    j = violators[draw_below(key, counter, count)]
    return (j, score(U, V, b, u, j), rank_loss_weight(table, count, n_neg, top_fraction,
                                                      normalize), rank_loss)


@njit(**JIT)
def ordinal_slice(U, V, b, GU, GV, Gb, indptr, indices, sample_users, sample_weight, grades,
                  order, next_chunk, chunk, max_sampled, kos_n, neg_cdf, filt, lr, reg, mnorm,
                  adagrad, seed, epoch, stop, stats, scratch, ints, reals, thread):
    """:func:`train_slice` for the ordinal loss: each positive ``p`` of the claimed chunks
    makes a list of ``kos_n`` of the user's graded items (``p`` first) and
    ``max_sampled`` negatives of grade 0, whose loss is descended by
    :func:`list_update`. Compiled with reference counting, since the list loss sorts and
    allocates; it borrows the arrays the threads share (:mod:`.borrow`)."""
    U, V, b, GU, GV, Gb = borrow(U), borrow(V), borrow(b), borrow(GU), borrow(GV), borrow(Gb)
    indptr, indices, order = borrow(indptr), borrow(indices), borrow(order)
    sample_users, sample_weight = borrow(sample_users), borrow(sample_weight)
    grades, neg_cdf, filt = borrow(grades), borrow(neg_cdf), borrow(filt)
    # the work arrays and counters too: this slice's rows are views of arrays every
    # slice takes its rows from
    next_chunk, stop, stats = borrow(next_chunk), borrow(stop), borrow(stats)
    scratch, ints, reals = borrow(scratch), borrow(ints), borrow(reals)
    n_items = V.shape[0]
    shift = filter_shift(filt.shape[1], n_items)
    buf = scratch[thread]
    items = ints[thread, 0]
    labels = ints[thread, 1]
    f_list = reals[thread, 0]
    g_list = reals[thread, 1]
    n_labels = 1
    for q in range(grades.shape[0]):
        n_labels = max(n_labels, grades[q] + 1)
    ok = True
    n_samples = 0
    n_updates = 0
    n_trials = 0
    loss_sum = 0.0
    cur = hi = 0
    while not stop[0]:
        s, cur, hi, _ = next_position(next_chunk, chunk, order.shape[0], cur, hi)
        if s < 0:
            break
        p = order[s]
        u = sample_users[p]
        start = indptr[u]
        end = indptr[u + 1]
        n_samples += 1
        if end - start >= n_items:
            continue
        key = stream_key(seed, epoch, p)
        m = ordinal_list(U, V, b, indices, start, end, u, p, grades, kos_n, max_sampled,
                         neg_cdf, filt, shift, key, 0, items, labels, f_list)
        value = ordinal_loss_grad_unit(f_list[:m], labels[:m], n_labels, g_list[:m])
        n_trials += m
        loss_sum += sample_weight[p] * value
        if value > 0:
            if not list_update(U, V, b, GU, GV, Gb, u, items, g_list, m,
                               sample_weight[p] * m, lr, reg, adagrad, mnorm, buf):
                ok = False
                break
            n_updates += 1
    return _close_slice(stats, stop, ok, n_samples, n_updates, n_trials, loss_sum, 0.0)


@njit(inline="always", **JIT)
def _close_slice(stats, stop, ok, n_samples, n_updates, n_trials, loss_sum, rank_loss_sum):
    """Write a slice's statistics row; on a non-finite update (``not ok``) set ``stop[0]``
    so that the other slices return early. Returns ``ok``."""
    stats[STAT_SAMPLES] = n_samples
    stats[STAT_UPDATES] = n_updates
    stats[STAT_TRIALS] = n_trials
    stats[STAT_LOSS] = loss_sum
    stats[STAT_RANK_LOSS] = rank_loss_sum
    if not ok:
        stop[0] = True
    return ok


#: Bounds of the number of positions in a chunk that a thread claims at a time.
CHUNK_MIN, CHUNK_MAX = 64, 4096
#: Chunks per thread an epoch is cut into (within the bounds above): enough that a thread
#: slowed down by another process hands most of its work to the others.
CHUNKS_PER_THREAD = 16


def chunk_size(n, n_threads):
    """Positions per chunk of an epoch of ``n`` positives on ``n_threads`` threads."""
    return max(min(n // (n_threads * CHUNKS_PER_THREAD), CHUNK_MAX), CHUNK_MIN)


@njit(inline="always", **JIT)
def next_position(next_chunk, chunk, n, cur, hi):
    """The next position of ``range(n)`` a thread visits: ``cur`` if it lies in the
    thread's current chunk ``[cur, hi)``, else the start of a chunk claimed from the
    shared counter ``next_chunk[0]``.

    Returns ``(s, cur, hi, fresh)``: the position (-1 once every chunk has been claimed),
    the bounds to pass to the next call and whether ``s`` starts a new chunk.
    """
    fresh = cur >= hi
    if fresh:
        cur = min(fetch_add(next_chunk, 0, 1) * chunk, n)
        hi = min(cur + chunk, n)
        if cur >= hi:
            return -1, cur, hi, True
    return cur, cur + 1, hi, fresh


def thread_rows(rows, width, itemsize):
    """Rows to allocate per thread in an (n_threads, rows', width) work array of which
    a thread uses ``rows``: one or more padding rows, so that the rows of two threads
    never share a 64-byte cache line (writes to a shared line would make the cores
    take it from each other on every write)."""
    row_bytes = max(width * itemsize, 1)
    return rows + (64 + row_bytes - 1) // row_bytes


#: How many samples ahead the row prefetches of :func:`prefetch_ahead` reach.
SAMPLES_AHEAD = 4
#: How many negative candidates ahead of the current trial are drawn and prefetched.
CANDIDATES_AHEAD = 2
#: How many of the next sample's negative candidates are drawn (and their rows
#: prefetched) while the current sample is processed.
CANDIDATES_EARLY = 4
#: How many cache lines of a user's positives list are prefetched two samples ahead.
LIST_LINES = 4
#: A user's filter row is prefetched when it has at most this many words (2 cache lines;
#: an exact filter over many items is read a line at a time, where a draw lands).
FILTER_PREFETCH_WORDS = 16


@njit(inline="always", **JIT)
def prefetch_ids(sample_users, indices, sample_weight, order, t, hi):
    """Ask for the user, item and weight of sample ``t`` (if ``t < hi``): in the positives
    order ``order[t]`` is random, and a sample would otherwise begin by waiting on these
    three reads one after another. Both paths do this ``2 * SAMPLES_AHEAD`` samples ahead;
    without ``prefetch_rows`` (the rows stay cached) it is the only prefetch issued."""
    if t < hi:
        p = order[t]
        prefetch(sample_users, p)
        prefetch(indices, p)
        prefetch(sample_weight, p)


@njit(inline="always", **JIT)
def prefetch_ahead(U, V, b, GU, GV, indptr, indices, sample_users, sample_weight, filt, order,
                   s, hi):
    """Ask for the memory later samples of this slice will read (a staged pipeline).

    Sample ``s + 2 * SAMPLES_AHEAD``: its user and item ids; sample ``s + SAMPLES_AHEAD``:
    its user's CSR bounds and (short) filter row, the user and positive-item rows (with
    their Adagrad rows); sample ``s + 2``: the first ``LIST_LINES`` cache lines of the user's
    positives list, which :func:`draw_early` may search at sample ``s + 1``. The user's
    lines are not asked for again when the sample before has the same user (the users
    order visits a user's positives one after another): that saves most of the prefetch
    instructions there.
    """
    prefetch_ids(sample_users, indices, sample_weight, order, s + 2 * SAMPLES_AHEAD, hi)
    mid = s + SAMPLES_AHEAD
    if mid < hi:
        p = order[mid]
        u = sample_users[p]
        i = indices[p]
        if sample_users[order[mid - 1]] != u:
            prefetch(indptr, u)
            prefetch_row(U, u)
            if GU is not None:
                prefetch_row(GU, u)
            if filt.shape[1] <= FILTER_PREFETCH_WORDS:
                prefetch_row(filt, u)
        prefetch_row(V, i)
        if GV is not None:
            prefetch_row(GV, i)
        prefetch(b, i)
    near = s + 2
    if near < hi and sample_users[order[near]] != sample_users[order[near - 1]]:
        u = sample_users[order[near]]
        step = 64 // indices.itemsize
        for q in range(indptr[u], min(indptr[u + 1], indptr[u] + LIST_LINES * step), step):
            prefetch(indices, q)


@njit(inline="always", **JIT)
def draw_early(V, b, indptr, indices, sample_users, order, s, max_sampled, kos_n, neg_cdf,
               filt, shift, seed, epoch, candidates):
    """Draw the first ``CANDIDATES_EARLY`` negative candidates of sample ``s`` into
    ``candidates`` and prefetch their rows; returns how many were drawn.

    They are the draws :func:`first_violator` would make (candidates depend on the random
    stream and the user's positives only, not on the parameters), made one sample early so
    that their rows arrive from memory while the previous sample is processed.
    """
    p = order[s]
    u = sample_users[p]
    start = indptr[u]
    end = indptr[u + 1]
    n_items = V.shape[0]
    if end - start >= n_items:
        return 0
    key = stream_key(seed, epoch, p)
    counter = kos_n if kos_n > 1 else 0
    n = min(CANDIDATES_EARLY, max_sampled)
    for t in range(n):
        c = draw_negative(indices, start, end, u, n_items, neg_cdf, filt, shift, key,
                          counter + t)
        candidates[t] = c
        prefetch_row(V, c)
        prefetch(b, c)
    return n


@njit(inline="always", **JIT)
def first_violator(U, V, b, indices, start, end, u, f_i, max_sampled, neg_cdf, filt, shift, key,
                   counter, candidates, drawn):
    """Draw negatives until one violates the margin, ``1 + f(u, j) > f(u, i)`` (float32).

    Returns ``(j, f(u, j), N)`` for the first violator found at draw ``N``, or
    ``(-1, 0, max_sampled)``. With a ``candidates`` array (None: no prefetching; the
    branch is pruned at compile time) the candidates are drawn
    ``CANDIDATES_AHEAD`` draws early (the same draws: they do not depend on scores) and
    their rows prefetched, so memory latency overlaps the scoring of earlier ones; the
    first ``drawn`` of them are already in ``candidates`` (see :func:`draw_early`).
    """
    n_items = V.shape[0]
    for trial in range(1, max_sampled + 1):
        if candidates is not None:
            while drawn < min(trial + CANDIDATES_AHEAD, max_sampled):
                c = draw_negative(indices, start, end, u, n_items, neg_cdf, filt, shift, key,
                                  counter + drawn)
                candidates[drawn] = c
                prefetch_row(V, c)
                prefetch(b, c)
                drawn += 1
            j = candidates[trial - 1]
        else:
            j = draw_negative(indices, start, end, u, n_items, neg_cdf, filt, shift, key,
                              counter + trial - 1)
        if U.shape[1] == FIXED_D:
            f_j = _dot(U, V, u, j, FIXED_D) + b[j]
        else:
            f_j = score(U, V, b, u, j)
        if f_j + np.float32(1.0) > f_i:
            return j, f_j, trial
    return -1, np.float32(0.0), max_sampled


@njit(**JIT_NO_NRT)
def train_slice(U, V, b, GU, GV, Gb, indptr, indices, sample_users, sample_weight, order,
                next_chunk, chunk, table, top_fraction, normalize, violators, max_sampled, kos_k,
                kos_n, neg_cdf, filt, lr, reg, mnorm, seed, epoch, candidates, thread, stop,
                stats, scratch, ints, reals):
    """One thread's share of :func:`train_epoch`: claim chunks of ``chunk`` positions of
    ``order`` (:func:`next_position` on the shared counter ``next_chunk``) until none is
    left, and visit each chunk's positives serially.

    The loss is chosen by which optional arguments are ``None`` (Numba prunes the other
    branches before typing them, so each mode compiles only its own code): ``table``
    given means WARP (with the exact rank when ``violators`` is given) and ``table=None``
    means BPR (the ordinal loss has its own :func:`ordinal_slice`); ``candidates`` given means
    prefetching (upcoming rows are prefetched and negative candidates drawn early);
    ``GU, GV, Gb`` given means Adagrad, ``None`` plain SGD.
    Both are per-thread work arrays (n_threads, ...) of which this slice uses row
    ``thread``.
    ``stats`` is this slice's row of statistics; ``stop[0]`` is set by any slice that
    meets a non-finite update and makes the others return early. Returns ``False`` on a
    non-finite update.

    Compiled without reference counting (``JIT_NO_NRT``), so it allocates nothing: its
    work arrays are row ``thread`` of ``scratch`` (float32, (n_threads, >= 6, d)), ``ints``
    (int64, (n_threads, >= 3, kos_n + max_sampled)) and ``reals`` (float64,
    (n_threads, >= 2, kos_n + max_sampled)); their rows beyond those are padding that keeps
    two threads' rows off a shared cache line (see :func:`thread_rows`).
    """
    n_items = V.shape[0]
    shift = filter_shift(filt.shape[1], n_items)
    buf = scratch[thread]
    ok = True
    n_samples = 0
    n_updates = 0
    n_trials = 0
    loss_sum = 0.0
    rank_loss_sum = 0.0
    # candidates[thread] holds those of this sample and the next, drawn early when
    # prefetching; None (pruned at compile time) when not
    n_early = ints[thread, 2, :2]
    cur = hi = 0
    while not stop[0]:
        s, cur, hi, fresh = next_position(next_chunk, chunk, order.shape[0], cur, hi)
        if s < 0:
            break
        if fresh:
            n_early[:] = 0
        if candidates is not None:
            prefetch_ahead(U, V, b, GU, GV, indptr, indices, sample_users, sample_weight,
                           filt, order, s, hi)
            if table is not None and violators is None and s + 1 < hi:
                n_early[(s + 1) & 1] = draw_early(V, b, indptr, indices, sample_users, order,
                                                  s + 1, max_sampled, kos_n, neg_cdf, filt,
                                                  shift, seed, epoch,
                                                  candidates[thread, (s + 1) & 1])
        else:
            prefetch_ids(sample_users, indices, sample_weight, order, s + 2 * SAMPLES_AHEAD, hi)
        p = order[s]
        u = sample_users[p]
        start = indptr[u]
        end = indptr[u + 1]
        n_neg = n_items - (end - start)
        n_samples += 1
        if n_neg <= 0:
            continue
        key = stream_key(seed, epoch, p)
        counter = 0
        if kos_n > 1:
            p = kos_positive(U, V, b, indices, start, end, u, kos_k, kos_n, key, counter,
                             ints[thread, 0], reals[thread, 0])
            counter += kos_n
        i = indices[p]
        w = sample_weight[p]
        f_i = score(U, V, b, u, i)
        if table is None:
            j = draw_negative(indices, start, end, u, n_items, neg_cdf, filt, shift, key, counter)
            x = f_i - score(U, V, b, u, j)
            # dL/df_j of -log(sigmoid(x)) is sigmoid(-x), computed without overflow
            if x >= 0:
                e = np.exp(-x)
                g = e / (1.0 + e)
                loss_sum += w * np.log1p(e)
            else:
                e = np.exp(x)
                g = 1.0 / (1.0 + e)
                loss_sum += w * (np.log1p(e) - x)
            n_trials += 1
            if not pair_update(U, V, b, GU, GV, Gb, u, i, j, np.float32(w * g), lr, reg,
                               mnorm, buf):
                ok = False
                break
            n_updates += 1
            continue
        lw = 0.0
        rank_loss = 0.0
        f_j = np.float32(0.0)
        if violators is not None:
            j, f_j, lw, rank_loss = exact_violator(U, V, b, indices, start, end, u, f_i, table,
                                              top_fraction, normalize, violators[thread], key,
                                              counter)
            n_trials += n_neg
        else:
            if candidates is None:
                j, f_j, trial = first_violator(U, V, b, indices, start, end, u, f_i,
                                               max_sampled, neg_cdf, filt, shift, key, counter,
                                               None, 0)
            else:
                j, f_j, trial = first_violator(U, V, b, indices, start, end, u, f_i,
                                               max_sampled, neg_cdf, filt, shift, key, counter,
                                               candidates[thread, s & 1], n_early[s & 1])
            n_trials += trial
            if j >= 0:
                lw = rank_loss_weight(table, max((n_neg - 1) // trial, 1), n_neg,
                                      top_fraction, normalize)
                rank_loss = lw
        if j >= 0:
            loss_sum += w * lw * (1.0 + f_j - f_i)
            rank_loss_sum += w * rank_loss
            if lw > 0:
                if not pair_update(U, V, b, GU, GV, Gb, u, i, j, np.float32(w * lw), lr,
                                   reg, mnorm, buf):
                    ok = False
                n_updates += 1
        if not ok:
            break
    return _close_slice(stats, stop, ok, n_samples, n_updates, n_trials, loss_sum,
                        rank_loss_sum)


class EpochWork:
    """The work arrays of :func:`train_epoch`'s slices, made once per fit instead of once
    per epoch (a small saving: Python work between epochs runs on caches the epoch has
    filled with its own data).

    Parameters
    ----------
    n_threads, d, n_items : int
        Slices, factor dimension and number of items of the epochs.
    max_sampled, kos_n : int
        As for :func:`train_epoch`: the integer and real work rows hold
        ``kos_n + max_sampled`` entries.
    loss_code, exact_rank : int, bool
        As for :func:`train_epoch`: exact WARP ranks need a row of ``n_items`` violators
        per slice.
    prefetch_rows : bool
        Whether the epochs prefetch (two rows of early-drawn candidates per slice).

    Notes
    -----
    Every per-slice array has a leading axis of ``n_threads`` and padding rows, so that
    two slices' rows never share a cache line (see :func:`thread_rows`). ``scratch``
    (float32, cache-line aligned) holds the rows of a buffered update, ``ints`` (int64)
    and ``reals`` (float64) the k-OS and ordinal lists; ``next_chunk`` is the shared
    chunk counter and ``stop`` the flag a slice raises on a non-finite update (both reset
    by every epoch).
    """

    def __init__(self, n_threads, d, n_items, max_sampled, kos_n, loss_code, exact_rank,
                 prefetch_rows):
        width = kos_n + max_sampled
        self.scratch = aligned_empty((n_threads, thread_rows(6, d, 4), d), np.float32)
        self.ints = np.empty((n_threads, thread_rows(3, width, 8), width), np.int64)
        self.reals = np.empty((n_threads, thread_rows(2, width, 8), width), np.float64)
        self.violators = (np.empty((n_threads, n_items), np.int64)
                          if exact_rank and loss_code == LOSS_WARP else None)
        self.candidates = (np.empty((n_threads, thread_rows(2, max_sampled, 8), max_sampled),
                                    np.int64) if prefetch_rows else None)
        self.next_chunk = np.zeros(1, np.int64)
        self.stop = np.zeros(1, np.bool_)


def train_epoch(U, V, b, GU, GV, Gb, indptr, indices, sample_users, sample_weight, grades, order,
                table, top_fraction, normalize, loss_code, exact_rank, max_sampled, kos_k, kos_n,
                neg_cdf, filt, learning_rate, alpha, max_norm, adagrad, seed, epoch, n_threads,
                prefetch_rows, stats, work=None):
    """Run one epoch of Hogwild SGD over ``order``.

    Parameters
    ----------
    U, V, b : float32 arrays (n_users, d), (n_items, d), (n_items,)
        Parameters, updated in place.
    GU, GV, Gb : float32 arrays of the same shapes
        Adagrad accumulators of squared gradients (ignored unless ``adagrad``).
    indptr, indices : int arrays
        CSR structure of the positives (row = user, sorted column indices).
    sample_users : int32 array (nnz,)
        Row of every stored positive.
    sample_weight : float32 array (nnz,)
        Weight multiplying each positive's gradient.
    grades : int64 array (nnz,) or empty
        Ordinal labels (>= 1) of the positives, for ``LOSS_ORDINAL``.
    order : int64 array
        Positions (into ``indices``) of the positives to visit, in visiting order.
    table, top_fraction, normalize
        Rank weighting (see ``warprec.weights``).
    loss_code : int
        ``LOSS_WARP``, ``LOSS_BPR`` or ``LOSS_ORDINAL`` (the ordinal-regression loss of
        Weimer, Karatzoglou, Le & Smola 2007, appendix sec. 1.2, see
        :func:`warprec.losses.ordinal_loss`, over a list of ``kos_n`` of the user's graded
        items and ``max_sampled`` negatives of grade 0, scaled by the list length).
    exact_rank : bool
        WARP only: score all of the user's negatives, use the true number of margin
        violators as the rank and draw the violator uniformly among them, instead of the
        geometric-trial estimate.
    max_sampled : int
        Maximum negative draws per positive (WARP).
    kos_k, kos_n : int
        k-OS: when ``kos_n > 1`` the positive is the ``kos_k``-th best of ``kos_n``
        positives of the same user drawn with replacement.
    neg_cdf : float64 array
        Empty for uniform negatives, else cumulative item sampling probabilities.
    filt : uint64 array (n_users, n_words)
        The users' filters of positives, from ``negatives.positive_filter`` (any width
        gives the same draws; see :mod:`.negatives`).
    learning_rate, alpha : float
        Step size and decoupled weight decay of the touched factor rows.
    max_norm : float
        If > 0, factor rows touched by an update are rescaled to norm <= max_norm.
    adagrad : bool
        Adagrad (per-coordinate) steps; plain SGD otherwise.
    seed, epoch : int
        Random stream keys.
    n_threads : int
        Slices run at once: the calling thread runs one and pooled worker threads the
        others (``warprec._threads.run_in_threads``; the slices release the GIL). They
        claim chunks of ``order`` (:func:`chunk_size` positions) from a shared counter
        until none is left.
    prefetch_rows : bool
        Prefetch the rows of upcoming samples and negative candidates. It pays off when
        the parameters do not fit in cache (random row reads then wait on memory) and
        costs a little when they do.
    stats : float64 array (n_threads, N_STATS)
        Filled with per-slice sums: samples, updates, negatives scored, surrogate loss
        (weighted hinge, or BPR's log loss) and rank loss ``w * Phi_n(rank)`` (exact
        ranks ``#{j: f_j >= f_i}`` with ``exact_rank``, else the estimate).
    work : EpochWork, optional
        The slices' work arrays, from :class:`EpochWork` with the same settings; made
        afresh if not given. A fit makes them once and passes them to every epoch.

    Returns
    -------
    bool
        ``True`` if every update stayed finite; ``False`` if an update produced NaN/Inf
        (those coordinates were reset to finite values, see :func:`pair_update`, and the
        slices stopped early).
    """
    # the mode and prefetching travel as None / not-None arguments, which Numba prunes on
    # by type: one compiled specialisation per mode (a fit compiles only the code it
    # runs), and Python calls take the fast dispatch path
    # (``numba.literally`` arguments re-resolve their types on every call, which costs
    # far more than the dispatch, and do not prune: Numba types the non-literal version
    # first)
    if work is None:
        work = EpochWork(n_threads, U.shape[1], V.shape[0], max_sampled, kos_n, loss_code,
                         exact_rank, prefetch_rows)
    scratch, ints, reals = work.scratch, work.ints, work.reals
    violators, candidates = work.violators, work.candidates
    next_chunk, stop = work.next_chunk, work.stop
    next_chunk[0] = 0
    stop[0] = False
    if not adagrad and loss_code != LOSS_ORDINAL:
        GU = GV = Gb = None  # plain SGD: the pairwise update compiles without Adagrad
    lr = np.float32(learning_rate)
    reg = np.float32(alpha)
    chunk = chunk_size(order.shape[0], n_threads)
    if loss_code == LOSS_ORDINAL:
        list_mnorm = np.float32(max(max_norm, 0.0))   # 0: no max-norm

        def run_slice(t):
            return ordinal_slice(
                U, V, b, GU, GV, Gb, indptr, indices, sample_users, sample_weight, grades,
                order, next_chunk, chunk, max_sampled, kos_n, neg_cdf, filt, lr, reg,
                list_mnorm, adagrad, seed, epoch, stop, stats[t], scratch, ints, reals, t)
    else:
        # None (no max-norm) prunes the clipping code of the pairwise update
        mnorm = np.float32(max_norm) if max_norm > 0 else None
        table = None if loss_code == LOSS_BPR else table

        def run_slice(t):
            return train_slice(
                U, V, b, GU, GV, Gb, indptr, indices, sample_users, sample_weight, order,
                next_chunk, chunk, table, top_fraction, normalize, violators, max_sampled,
                kos_k, kos_n, neg_cdf, filt, lr, reg, mnorm, seed, epoch, candidates, t, stop,
                stats[t], scratch, ints, reals)
    return all(run_in_threads(run_slice, n_threads))
