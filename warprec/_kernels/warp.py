"""WARP and k-OS: the step on one positive, plugged into the skeleton of :mod:`.epoch`.

Model: ``f(u, i) = <U[u], V[i]> + b[i]``. For a positive ``(u, i)`` WARP draws
negatives uniformly from the items ``u`` has not interacted with (see :mod:`.negatives`)
until one violates the margin, ``1 + f(u, j) > f(u, i)`` (in float32), or ``max_sampled``
draws pass (:func:`first_violator`). After ``N`` draws the rank of ``i`` is estimated as
``floor((Y - 1) / N)`` (``Y`` the user's number of negatives; at least 1 since a
violator was found, :func:`sampled_rank`) and the hinge ``L(rank) * (1 - f(u, i) +
f(u, j))`` is descended (Weston, Bengio & Usunier 2010, "Large scale image annotation:
learning to rank with joint word-image embeddings", sec. 3.2). With ``Mode.exact_rank``
every negative is scored instead (:func:`exact_violator`); with ``Settings.kos_n > 1``
the positive is the ``kos_k``-th best of ``kos_n`` of the user's positives (k-OS,
:func:`kos_positive`). With ``Mode.prefetch`` the slice runs a prefetching pipeline over
the samples to come (:func:`prefetching_ahead`).

The model's pieces here serve the other pairwise steps too: BPR's (:mod:`.bpr`), WARP's
with several violators (:mod:`.violators`), and the hybrid model's violator search and
rank estimate (:mod:`.features`). Each step is a plug-in of its own, so that a kernel
inlines only its mode's code (see ``epoch.compile_epoch``).
"""

import numpy as np
from numba import njit

from ._flags import JIT, inlined
from .config import (CACHE_LINE, CANDIDATES_AHEAD, CANDIDATES_EARLY, FILTER_PREFETCH_WORDS,
                     FIXED_D, LIST_LINES, SAMPLES_AHEAD)
from .epoch import LOSS_BPR, ids_ahead, prefetch_ids
from .negatives import draw_negative, filter_shift
from .prefetch import prefetch, prefetch_row
from .rng import draw_below, stream_key
from .updates import dot, pair_update, rank_loss_weight, score


# ----------------------------------------------------------------------- sample helpers
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


@inlined
def prefetch_ahead(U, V, b, GU, GV, indptr, indices, sample_users, sample_weight, filt, order,
                   s, hi, adagrad):
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
            if adagrad:
                prefetch_row(GU, u)
            if filt.shape[1] <= FILTER_PREFETCH_WORDS:
                prefetch_row(filt, u)
        prefetch_row(V, i)
        if adagrad:
            prefetch_row(GV, i)
        prefetch(b, i)
    near = s + 2
    if near < hi and sample_users[order[near]] != sample_users[order[near - 1]]:
        u = sample_users[order[near]]
        step = CACHE_LINE // indices.itemsize
        for q in range(indptr[u], min(indptr[u + 1], indptr[u] + LIST_LINES * step), step):
            prefetch(indices, q)


@inlined
def draw_early(fetch_at, rows, n_items, indptr, indices, sample_users, order, s, max_sampled,
               kos_n, neg_cdf, filt, shift, seed, epoch, candidates):
    """Draw the first ``CANDIDATES_EARLY`` negative candidates of sample ``s`` into
    ``candidates`` and prefetch what scoring them reads (``fetch_at(rows, c)``, as in
    :func:`first_violator`); returns how many were drawn.

    They are the draws :func:`first_violator` would make (candidates depend on the random
    stream and the user's positives only, not on the parameters), made one sample early so
    that their rows arrive from memory while the previous sample is processed.
    """
    p = order[s]
    u = sample_users[p]
    start = indptr[u]
    end = indptr[u + 1]
    if end - start >= n_items:
        return 0
    key = stream_key(seed, epoch, p)
    counter = kos_n if kos_n > 1 else 0
    n = min(CANDIDATES_EARLY, max_sampled)
    for t in range(n):
        c = draw_negative(indices, start, end, u, n_items, neg_cdf, filt, shift, key,
                          counter + t)
        candidates[t] = c
        fetch_at(rows, c)
    return n


# --------------------------------------------------------- violator search and rank
@inlined
def factor_score(rows, j):
    """``f(u, j)`` for ``rows = (U, V, b, u)``: the score a negative trial takes (the dot
    product unrolled at the default dimension, ``FIXED_D``)."""
    U, V, b, u = rows
    if U.shape[1] == FIXED_D:
        return dot(U, V, u, j, FIXED_D) + b[j]
    return score(U, V, b, u, j)


@inlined
def fetch_factors(rows, j):
    """Prefetch the rows :func:`factor_score` reads for item ``j``."""
    prefetch_row(rows[1], j)
    prefetch(rows[2], j)


@inlined
def first_violator(score_at, fetch_at, rows, f_i, max_sampled, indices, start, end, u,
                   n_items, neg_cdf, filt, shift, key, counter, candidates, drawn,
                   prefetching, begin):
    """Draw negatives after the first ``begin`` draws of the sample until one violates the
    margin, ``1 + f(u, j) > f(u, i)`` (float32), ``f(u, j) = score_at(rows, j)``.

    The model is in ``rows`` and the two functions: ``(U, V, b, u)`` with
    :func:`factor_score` and :func:`fetch_factors` for the plain model, the user's
    feature representation with the item features' (``features.feature_score``) for the
    hybrid one. Returns ``(j, f(u, j), N)`` for the first violator found at draw ``N``
    (counted from the sample's first draw), or ``(-1, 0, max_sampled)``. With
    ``prefetching`` the candidates are drawn ``CANDIDATES_AHEAD`` draws early into
    ``candidates`` (the same draws: they do not depend on scores) and what scoring them
    reads is prefetched (``fetch_at``), so memory latency overlaps the scoring of earlier
    ones; the first ``drawn`` of them are already there (see :func:`draw_early`).
    """
    for trial in range(begin + 1, max_sampled + 1):
        if prefetching:
            while drawn < min(trial + CANDIDATES_AHEAD, max_sampled):
                c = draw_negative(indices, start, end, u, n_items, neg_cdf, filt, shift, key,
                                  counter + drawn)
                candidates[drawn] = c
                fetch_at(rows, c)
                drawn += 1
            j = candidates[trial - 1]
        else:
            j = draw_negative(indices, start, end, u, n_items, neg_cdf, filt, shift, key,
                              counter + trial - 1)
        f_j = score_at(rows, j)
        if f_j + np.float32(1.0) > f_i:
            return j, f_j, trial
    return -1, np.float32(0.0), max_sampled


@inlined
def sampled_rank(n_found, n_drawn, n_neg):
    """The rank estimate from ``n_found`` margin violators among ``n_drawn`` uniform draws
    from ``n_neg`` negatives: ``floor(n_found * (n_neg - 1) / n_drawn)``, at least 1 (a
    violator exists). With one violator it is Weston, Bengio & Usunier's geometric
    estimate ``floor((Y - 1) / N)``; with more, the violators' share of the draws
    estimates the share of negatives that violate the margin."""
    return max(n_found * (n_neg - 1) // n_drawn, 1)


# ------------------------------------------------------------- the epoch's plug-ins
@inlined
def begin(params, positives, settings, work, thread):
    """The slice's state: ``(params, settings, work, thread, shift, buf, n_early)``, the
    filter's hash shift, the slice's scratch rows and the counts of the candidates drawn
    early (:func:`draw_early`) for this sample and the next, whose candidates
    ``work.candidates[thread]`` holds when prefetching."""
    n_items = params.item_factors.shape[0]
    shift = filter_shift(positives.filt.shape[1], n_items)
    return n_items, (params, settings, work, thread, shift, work.scratch[thread],
                     work.ints[thread, 2, :2])


#: Without ``Mode.prefetch``, the ids of a later sample only.
ahead = ids_ahead


@inlined
def prefetching_ahead(state, positives, order, s, hi, fresh, epoch, loss, exact_rank, adagrad,
                      clip, prefetching, freeze_items, violators):
    """With ``Mode.prefetch``: the pipeline of :func:`prefetch_ahead` and the next
    sample's first candidates (:func:`draw_early`, for the violator search)."""
    params, settings, work, thread, shift, _, n_early = state
    if fresh:
        n_early[:] = 0
    prefetch_ahead(params.user_factors, params.item_factors, params.item_biases,
                   params.user_grad_sq, params.item_grad_sq, positives.indptr,
                   positives.indices, positives.users, positives.sample_weight, positives.filt,
                   order, s, hi, adagrad)
    if loss != LOSS_BPR and not exact_rank and s + 1 < hi:
        V = params.item_factors
        n_early[(s + 1) & 1] = draw_early(
            fetch_factors, (params.user_factors, V, params.item_biases, 0), V.shape[0],
            positives.indptr, positives.indices, positives.users, order, s + 1,
            settings.max_sampled, settings.kos_n, positives.neg_cdf, positives.filt, shift,
            settings.seed, epoch, work.candidates[thread, (s + 1) & 1])


@inlined
def positive_score(state, positives, p, u, start, end, key):
    """The positive a step descends and its score: ``p`` itself, or with ``kos_n > 1``
    the k-OS choice (:func:`kos_positive`, the stream's first ``kos_n`` draws). Returns
    ``(i, w, f(u, i), counter)``: the item, its sample weight, its score and the stream
    position of the step's next draw."""
    params, settings, work, thread, _, _, _ = state
    U, V, b = params.user_factors, params.item_factors, params.item_biases
    indices = positives.indices
    counter = 0
    if settings.kos_n > 1:
        p = kos_positive(U, V, b, indices, start, end, u, settings.kos_k, settings.kos_n, key,
                         counter, work.ints[thread, 0], work.reals[thread, 0])
        counter += settings.kos_n
    i = indices[p]
    return i, positives.sample_weight[p], score(U, V, b, u, i), counter


@inlined
def step(state, positives, s, p, u, start, end, n_neg, key, loss, exact_rank, adagrad, clip,
         prefetching, freeze_items, violators):
    """The WARP step on positive ``p`` (the module docstring: one violator, the sampled
    or, with ``exact_rank``, the exact rank); see :mod:`.epoch` for the arguments and
    what it returns."""
    params, settings, work, thread, shift, buf, n_early = state
    U, V, b = params.user_factors, params.item_factors, params.item_biases
    indices, neg_cdf, filt = positives.indices, positives.neg_cdf, positives.filt
    table, top_fraction = settings.rank_table, settings.top_fraction
    normalize = settings.normalize
    i, w, f_i, counter = positive_score(state, positives, p, u, start, end, key)
    if exact_rank:
        j, f_j, lw, rank_loss = exact_violator(U, V, b, indices, start, end, u, f_i, table,
                                               top_fraction, normalize,
                                               work.violators[thread], key, counter)
        trials = n_neg
    else:
        j, f_j, trials = first_violator(
            factor_score, fetch_factors, (U, V, b, u), f_i, settings.max_sampled, indices,
            start, end, u, V.shape[0], neg_cdf, filt, shift, key, counter,
            work.candidates[thread, s & 1], n_early[s & 1], prefetching, 0)
        lw = 0.0
        if j >= 0:
            lw = rank_loss_weight(table, sampled_rank(1, trials, n_neg), n_neg, top_fraction,
                                  normalize)
        rank_loss = lw
    if j < 0:
        return True, 0, trials, 0.0, 0.0
    ok = True
    if lw > 0:
        ok = pair_update(U, V, b, params.user_grad_sq, params.item_grad_sq,
                         params.bias_grad_sq, u, i, j, np.float32(w * lw),
                         settings.learning_rate, settings.alpha, settings.max_norm, buf,
                         adagrad, clip, freeze_items)
    return ok, int(lw > 0), trials, w * lw * (1.0 + f_j - f_i), w * rank_loss
