"""Hogwild SGD epoch kernel for WARP (and BPR and ordinal) matrix factorisation.

One call of :func:`train_epoch` runs one epoch over the positives in the order given,
as one ``@njit(parallel=True)`` kernel: a ``prange`` loop over ``n_threads`` slices, each
of which claims contiguous chunks of that order from a shared counter (a thread that
runs ahead takes more chunks) and updates the shared factor matrices without locks
(Hogwild). Each sample's random draws come from a stream keyed by
``(seed, epoch, sample)`` (:mod:`.rng`), so the draws do not depend on which thread runs
the sample.

Model: ``f(u, i) = <U[u], V[i]> + b[i]``. For a positive ``(u, i)`` WARP draws
negatives uniformly from the items ``u`` has not interacted with (see :mod:`.negatives`)
until one violates the margin, ``1 + f(u, j) > f(u, i)`` (in float32), or ``max_sampled``
draws pass. After ``N`` draws the rank of ``i`` is estimated as ``floor((Y - 1) / N)``
(``Y`` the user's number of negatives; at least 1 since a violator was found) and the
hinge ``L(rank) * (1 - f(u, i) + f(u, j))`` is descended.

The interface is four small typed tuples and a mode:

* :class:`Parameters`: the arrays an epoch updates in place;
* :class:`Positives`: the training positives and what the draws need to know of them;
* :class:`Settings`: the scalars and the rank-weight table of a fit;
* :class:`Work`: the per-thread work arrays and shared counters, made once per fit
  (:func:`make_work`);
* :class:`Mode`: what the kernel does (loss, rank estimate, Adagrad, max-norm,
  prefetching). Each mode is a compiled variant of its own, chosen in one place,
  :func:`epoch_kernel`: the mode's flags are compile-time constants there, so a fit
  compiles only the code of its mode.
"""

import functools
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ._flags import JIT, JIT_NO_NRT, PJIT, PJIT_NO_NRT, inlined
from .aligned import aligned_empty
from .atomic import fetch_add
from .borrow import borrow
from .config import (CACHE_LINE, CANDIDATES_AHEAD, CANDIDATES_EARLY, CHUNK_MAX, CHUNK_MIN,
                     CHUNKS_PER_THREAD, FILTER_PREFETCH_WORDS, FIXED_D, LIST_LINES,
                     SAMPLES_AHEAD)
from .losses import ordinal_loss_grad_unit
from .negatives import draw_negative, filter_shift
from .prefetch import prefetch, prefetch_row
from .rng import draw_below, stream_key
from .updates import (_dot, bpr_terms, list_step, list_update, pair_update, rank_loss_weight,
                      score)

LOSS_WARP = 0
LOSS_BPR = 1
LOSS_ORDINAL = 2
LOSS_CCL = 3
LOSS_SOFTMAX = 4
#: The losses whose factor rows are kept at unit norm (scores are cosines; :mod:`.ccl`).
SPHERE_LOSSES = (LOSS_CCL, LOSS_SOFTMAX)

#: Columns of the per-thread statistics (``Work.stats``) filled by :func:`train_epoch`.
STAT_SAMPLES, STAT_UPDATES, STAT_TRIALS, STAT_LOSS, STAT_RANK_LOSS = 0, 1, 2, 3, 4
N_STATS = 5


class Parameters(NamedTuple):
    """The arrays an epoch updates in place (float32, cache-line aligned): the
    estimator's fitted arrays of the same names without their trailing underscore."""
    user_factors: np.ndarray    # (n_users, d)
    item_factors: np.ndarray    # (n_items, d)
    item_biases: np.ndarray     # (n_items,)
    user_grad_sq: np.ndarray    # Adagrad accumulators of the three above (same shapes);
    item_grad_sq: np.ndarray    # with plain SGD they are neither read nor written
    bias_grad_sq: np.ndarray


class Positives(NamedTuple):
    """The training positives, in CSR form (row = user, sorted column indices)."""
    indptr: np.ndarray          # int64 (n_users + 1,)
    indices: np.ndarray         # int32 (nnz,)
    users: np.ndarray           # int32 (nnz,): the row of every stored positive
    sample_weight: np.ndarray   # float32 (nnz,): multiplies each positive's gradient
    grades: np.ndarray          # int64 (nnz,) ordinal labels >= 1 (LOSS_ORDINAL), else empty
    neg_cdf: np.ndarray         # float64: empty for uniform negatives, else cumulative
    #                             item sampling probabilities
    filt: np.ndarray            # uint64 (n_users, n_words): the users' filters of
    #                             positives (negatives.positive_filter; any width gives
    #                             the same draws)


class Settings(NamedTuple):
    """The scalar settings of a fit and its rank weighting (see ``warprec.weights``)."""
    learning_rate: np.float32
    alpha: np.float32           # decoupled weight decay of the touched factor rows
    max_norm: np.float32        # rows touched are rescaled to this norm at most (Mode.clip)
    max_sampled: int            # maximum negative draws per positive (WARP), or the
    #                             negatives of an ordinal list
    max_violators: int          # WARP: violators collected per positive (<= max_sampled)
    n_negatives: int            # CCL: negatives drawn per positive
    margin: np.float32          # CCL: negatives with a cosine above it are pushed away
    negative_weight: np.float32  # CCL: weight of the negatives' mean hinge
    dropout: np.float32         # CCL, softmax: share of the user vector's coordinates
    #                             zeroed per positive (0: none)
    temperature: np.float32     # softmax: the cosines are divided by it
    kos_k: int                  # k-OS: with kos_n > 1 the positive is the kos_k-th best
    kos_n: int                  # of kos_n of the user's positives (ordinal: list length)
    rank_table: np.ndarray      # float64: L(r) for r = 0..n_items
    top_fraction: float
    normalize: bool
    seed: int                   # key of the random streams, with the epoch


class Work(NamedTuple):
    """Per-thread work arrays and shared counters of the epochs (:func:`make_work`).

    Every per-thread array has a leading axis of ``n_threads`` and padding rows, so that
    two threads' rows never share a cache line (:func:`thread_rows`).
    """
    scratch: np.ndarray         # float32 (n_threads, >= 6, d): rows of a buffered update
    ints: np.ndarray            # int64 (n_threads, >= 3, kos_n + max_sampled): lists
    reals: np.ndarray           # float64 (n_threads, >= 2, kos_n + max_sampled): lists
    violators: np.ndarray       # int64 (n_threads, n_items) for exact ranks, else width 0
    candidates: np.ndarray      # int64 (n_threads, >= 2, max_sampled) when prefetching,
    #                             else width 0: negative candidates drawn early
    next_chunk: np.ndarray      # int64 (1,): the shared chunk counter
    stop: np.ndarray            # bool (1,): raised by a thread on a non-finite update
    stats: np.ndarray           # float64 (n_threads, N_STATS): per-thread sums


class Mode(NamedTuple):
    """What an epoch kernel does; each distinct mode is a compiled variant."""
    loss: int                   # LOSS_WARP, LOSS_BPR, LOSS_ORDINAL, LOSS_CCL or LOSS_SOFTMAX
    exact_rank: bool            # WARP: score every negative instead of the geometric estimate
    adagrad: bool               # Adagrad steps (else plain SGD)
    clip: bool                  # max-norm on the rows an update touches (Settings.max_norm)
    prefetch: bool              # prefetch upcoming rows and draw negative candidates early
    freeze_items: bool = False  # update the user rows only (folding in new users)
    features: bool = False      # the hybrid model (params: features.FeatureParameters)
    parallel: bool = True       # WARP/BPR: a prange over the slices (else one slice)
    violators: bool = False     # WARP: collect up to Settings.max_violators violators per
    #                             positive (compiled only when asked for: it would slow
    #                             the single-violator loop)


# ----------------------------------------------------------------------- sample helpers
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


@inlined
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


@inlined
def sample_at(order, s, sample_users, indptr, n_items):
    """The positive at position ``s`` of the epoch order: ``(p, u, start, end, n_neg)``,
    its position in the CSR arrays, its user, the user's CSR bounds and number of
    negatives."""
    p = order[s]
    u = sample_users[p]
    start = indptr[u]
    end = indptr[u + 1]
    return p, u, start, end, n_items - (end - start)


@inlined
def prefetch_ids(sample_users, indices, sample_weight, order, t, hi):
    """Ask for the user, item and weight of sample ``t`` (if ``t < hi``): in the positives
    order ``order[t]`` is random, and a sample would otherwise begin by waiting on these
    three reads one after another. Both paths do this ``2 * SAMPLES_AHEAD`` samples ahead;
    without ``Mode.prefetch`` (the rows stay cached) it is the only prefetch issued."""
    if t < hi:
        p = order[t]
        prefetch(sample_users, p)
        prefetch(indices, p)
        prefetch(sample_weight, p)


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


@inlined
def first_violator(U, V, b, indices, start, end, u, f_i, max_sampled, neg_cdf, filt, shift, key,
                   counter, candidates, drawn, prefetching, begin):
    """Draw negatives after the first ``begin`` draws of the sample until one violates the
    margin, ``1 + f(u, j) > f(u, i)`` (float32).

    Returns ``(j, f(u, j), N)`` for the first violator found at draw ``N`` (counted from
    the sample's first draw), or ``(-1, 0, max_sampled)``. With ``prefetching`` the
    candidates are drawn ``CANDIDATES_AHEAD`` draws early into ``candidates`` (the same
    draws: they do not depend on scores) and their rows prefetched, so memory latency
    overlaps the scoring of earlier ones; the first ``drawn`` of them are already there
    (see :func:`draw_early`).
    """
    n_items = V.shape[0]
    for trial in range(begin + 1, max_sampled + 1):
        if prefetching:
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
        j, f_j, trial = first_violator(U, V, b, indices, start, end, u, f_i, max_sampled,
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
def sampled_rank(n_found, n_drawn, n_neg):
    """The rank estimate from ``n_found`` margin violators among ``n_drawn`` uniform draws
    from ``n_neg`` negatives: ``floor(n_found * (n_neg - 1) / n_drawn)``, at least 1 (a
    violator exists). With one violator it is Weston, Bengio & Usunier's geometric
    estimate ``floor((Y - 1) / N)``; with more, the violators' share of the draws
    estimates the share of negatives that violate the margin."""
    return max(n_found * (n_neg - 1) // n_drawn, 1)


@inlined
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


# ----------------------------------------------------------------------------- slices
@njit(**JIT)
def ordinal_slice(params, positives, settings, work, order, epoch, chunk, thread, adagrad):
    """Thread ``thread``'s share of an ordinal epoch (as the slices of
    :func:`_pairwise_epoch`): each positive ``p`` of the claimed chunks makes a list of
    ``kos_n`` of the user's graded items (``p`` first) and ``max_sampled`` negatives of
    grade 0, whose loss (Weimer, Karatzoglou, Le & Smola 2007, appendix sec. 1.2, see
    :func:`warprec.losses.ordinal_loss`) is descended by :func:`list_update`, scaled by
    the list length. Compiled with reference counting, since the list loss sorts and
    allocates; it borrows the arrays the threads share (:mod:`.borrow`)."""
    U = borrow(params.user_factors)
    V = borrow(params.item_factors)
    b = borrow(params.item_biases)
    GU = borrow(params.user_grad_sq)
    GV = borrow(params.item_grad_sq)
    Gb = borrow(params.bias_grad_sq)
    indptr, indices = borrow(positives.indptr), borrow(positives.indices)
    sample_users = borrow(positives.users)
    sample_weight = borrow(positives.sample_weight)
    grades, neg_cdf = borrow(positives.grades), borrow(positives.neg_cdf)
    filt, order = borrow(positives.filt), borrow(order)
    # the work arrays and counters too: this slice's rows are views of arrays every
    # slice takes its rows from
    next_chunk, stop, stats = borrow(work.next_chunk), borrow(work.stop), borrow(work.stats)
    scratch, ints, reals = borrow(work.scratch), borrow(work.ints), borrow(work.reals)
    lr, alpha, max_norm = settings.learning_rate, settings.alpha, settings.max_norm
    max_sampled, kos_n, seed = settings.max_sampled, settings.kos_n, settings.seed
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
                               sample_weight[p] * m, lr, alpha, adagrad, max_norm, buf):
                ok = False
                break
            n_updates += 1
    return _close_slice(stats[thread], stop, ok, n_samples, n_updates, n_trials, loss_sum, 0.0)


# ------------------------------------------------------------------ compiled variants
@njit(**PJIT)
def _ordinal_epoch(params, positives, settings, work, order, epoch, chunk, adagrad):
    """The ordinal loss's epoch: one slice per thread (``prange``)."""
    for thread in prange(work.stats.shape[0]):
        # (int64: the loop index is unsigned in the outlined body, and a second type would
        # compile the slice twice)
        ordinal_slice(params, positives, settings, work, order, epoch, chunk,
                      np.int64(thread), adagrad)
    return not work.stop[0]


def _pairwise_epoch(bpr, exact_rank, adagrad, clip, prefetching, freeze_items, parallel,
                    violators):
    """The epoch kernel of one WARP/BPR mode (compiled on its first call).

    A ``prange`` loop over the slices: slice ``thread`` claims chunks of ``chunk``
    positions of ``order`` (:func:`next_position` on ``work.next_chunk``) until none is
    left, and visits each chunk's positives serially. A slice that meets a non-finite
    update raises ``work.stop``, which makes the others return early. Without
    ``parallel`` the same code is compiled as a serial function (Numba's ``prange`` is a
    plain ``range`` there) that runs one slice, which then claims every chunk: one-thread
    epochs skip the launch of a parallel region (a task handed to a pool thread, 3-4% of
    a one-thread ML-100K epoch with Numba's ``workqueue`` layer).

    The flags ``bpr, exact_rank, adagrad, clip, prefetching, freeze_items, parallel,
    violators`` are the mode (:class:`Mode`) and constants of the closure, so Numba
    prunes the code of the other modes before typing it (the helpers that take them are
    inlined), and its cache keys the compiled kernel on their values. The kernel is
    compiled without reference counting, so it allocates nothing: slice ``thread``'s work
    arrays are row ``thread`` of ``work``'s.
    """

    def epoch_variant(params, positives, settings, work, order, epoch, chunk):
        n_slices = work.stats.shape[0] if parallel else 1
        for thread in prange(n_slices):
            U, V, b = params.user_factors, params.item_factors, params.item_biases
            GU, GV, Gb = params.user_grad_sq, params.item_grad_sq, params.bias_grad_sq
            indptr, indices = positives.indptr, positives.indices
            sample_users, sample_weight = positives.users, positives.sample_weight
            neg_cdf, filt = positives.neg_cdf, positives.filt
            lr, alpha, max_norm = settings.learning_rate, settings.alpha, settings.max_norm
            max_sampled, kos_k, kos_n = settings.max_sampled, settings.kos_k, settings.kos_n
            table, top_fraction = settings.rank_table, settings.top_fraction
            normalize, seed = settings.normalize, settings.seed
            stop = work.stop
            n_items = V.shape[0]
            shift = filter_shift(filt.shape[1], n_items)
            buf = work.scratch[thread]
            ok = True
            n_samples = 0
            n_updates = 0
            n_trials = 0
            loss_sum = 0.0
            rank_loss_sum = 0.0
            # work.candidates[thread] holds those of this sample and the next, drawn
            # early when prefetching
            n_early = work.ints[thread, 2, :2]
            cur = hi = 0
            while not stop[0]:
                s, cur, hi, fresh = next_position(work.next_chunk, chunk, order.shape[0], cur, hi)
                if s < 0:
                    break
                if fresh:
                    n_early[:] = 0
                if prefetching:
                    prefetch_ahead(U, V, b, GU, GV, indptr, indices, sample_users, sample_weight,
                                   filt, order, s, hi, adagrad)
                    if not bpr and not exact_rank and s + 1 < hi:
                        n_early[(s + 1) & 1] = draw_early(
                            V, b, indptr, indices, sample_users, order, s + 1, max_sampled,
                            kos_n, neg_cdf, filt, shift, seed, epoch,
                            work.candidates[thread, (s + 1) & 1])
                else:
                    prefetch_ids(sample_users, indices, sample_weight, order,
                                 s + 2 * SAMPLES_AHEAD, hi)
                p, u, start, end, n_neg = sample_at(order, s, sample_users, indptr, n_items)
                n_samples += 1
                if n_neg <= 0:
                    continue
                key = stream_key(seed, epoch, p)
                counter = 0
                if kos_n > 1:
                    p = kos_positive(U, V, b, indices, start, end, u, kos_k, kos_n, key, counter,
                                     work.ints[thread, 0], work.reals[thread, 0])
                    counter += kos_n
                i = indices[p]
                w = sample_weight[p]
                f_i = score(U, V, b, u, i)
                if bpr:
                    j = draw_negative(indices, start, end, u, n_items, neg_cdf, filt, shift,
                                      key, counter)
                    g, loss = bpr_terms(f_i - score(U, V, b, u, j))
                    loss_sum += w * loss
                    n_trials += 1
                    if not pair_update(U, V, b, GU, GV, Gb, u, i, j, np.float32(w * g), lr, alpha,
                                       max_norm, buf, adagrad, clip, freeze_items):
                        ok = False
                        break
                    n_updates += 1
                    continue
                j = -1
                lw = 0.0
                rank_loss = 0.0
                f_j = np.float32(0.0)
                if exact_rank:
                    j, f_j, lw, rank_loss = exact_violator(
                        U, V, b, indices, start, end, u, f_i, table, top_fraction, normalize,
                        work.violators[thread], key, counter)
                    n_trials += n_neg
                elif violators:
                    # up to max_violators violators, each after the draws of the one before
                    n_found, trial = collect_violators(
                        U, V, b, indices, start, end, u, f_i, max_sampled,
                        settings.max_violators, neg_cdf, filt, shift, key, counter,
                        work.candidates[thread, s & 1], n_early[s & 1], prefetching,
                        work.ints[thread, 1], work.reals[thread, 1])
                    n_trials += trial
                    if n_found > 0:
                        lw = rank_loss_weight(table, sampled_rank(n_found, trial, n_neg), n_neg,
                                              top_fraction, normalize)
                        rank_loss = lw
                        if n_found == 1:
                            j = work.ints[thread, 1, 1]  # (found[1:], see collect_violators)
                            f_j = np.float32(work.reals[thread, 1, 0])
                        else:
                            ok, loss = violators_step(
                                U, V, b, GU, GV, Gb, u, i, f_i, w, lw, n_found, work.ints,
                                work.reals, work.scratch, thread, lr, alpha, max_norm, adagrad,
                                freeze_items)
                            loss_sum += loss
                            rank_loss_sum += w * rank_loss
                            n_updates += lw > 0
                            if not ok:
                                break
                            continue
                else:
                    j, f_j, trial = first_violator(
                        U, V, b, indices, start, end, u, f_i, max_sampled, neg_cdf, filt, shift,
                        key, counter, work.candidates[thread, s & 1], n_early[s & 1],
                        prefetching, 0)
                    n_trials += trial
                    if j >= 0:
                        lw = rank_loss_weight(table, sampled_rank(1, trial, n_neg), n_neg,
                                              top_fraction, normalize)
                        rank_loss = lw
                if j >= 0:
                    loss_sum += w * lw * (1.0 + f_j - f_i)
                    rank_loss_sum += w * rank_loss
                    if lw > 0:
                        if not pair_update(U, V, b, GU, GV, Gb, u, i, j, np.float32(w * lw), lr,
                                           alpha, max_norm, buf, adagrad, clip, freeze_items):
                            ok = False
                        n_updates += 1
                if not ok:
                    break
            _close_slice(work.stats[thread], stop, ok, n_samples, n_updates, n_trials, loss_sum,
                         rank_loss_sum)
        return not work.stop[0]

    return njit(**(PJIT_NO_NRT if parallel else JIT_NO_NRT))(epoch_variant)


@functools.cache
def epoch_kernel(mode):
    """The compiled epoch kernel of ``mode`` (a :class:`Mode`): the one place where a
    variant is chosen. Called as ``kernel(params, positives, settings, work, order,
    epoch, chunk)``; returns ``True`` if every update stayed finite."""
    if mode.features:
        if (mode.loss in (LOSS_ORDINAL,) + SPHERE_LOSSES or mode.exact_rank or mode.clip
                or mode.prefetch or mode.freeze_items or mode.violators):
            raise ValueError("the hybrid model trains WARP (estimated ranks, one violator) "
                             "or BPR, without max-norm, prefetching or frozen items")
        from .features import features_epoch   # (it builds on this module's helpers)

        return features_epoch(mode.loss == LOSS_BPR, bool(mode.adagrad))
    if mode.loss in SPHERE_LOSSES:
        if mode.exact_rank or mode.clip or mode.prefetch or mode.violators:
            raise ValueError("the cosine losses have neither exact ranks, max-norm, "
                             "prefetching nor several violators")
        from .ccl import ccl_epoch   # (it builds on this module's helpers)

        return ccl_epoch(bool(mode.adagrad), bool(mode.freeze_items), bool(mode.parallel),
                         mode.loss == LOSS_SOFTMAX)
    if mode.loss == LOSS_ORDINAL:
        if mode.exact_rank or mode.prefetch or mode.freeze_items:
            raise ValueError("the ordinal loss has neither exact ranks, prefetching nor "
                             "frozen items")

        def ordinal_variant(params, positives, settings, work, order, epoch, chunk):
            return _ordinal_epoch(params, positives, settings, work, order, epoch, chunk,
                                  mode.adagrad)

        return ordinal_variant
    if mode.loss not in (LOSS_WARP, LOSS_BPR):
        raise ValueError(f"unknown loss code {mode.loss}")
    if mode.exact_rank and mode.loss != LOSS_WARP:
        raise ValueError("exact ranks apply to the WARP loss only")
    if mode.violators and (mode.loss != LOSS_WARP or mode.exact_rank):
        raise ValueError("several violators per positive apply to WARP's sampled ranks only")
    return _pairwise_epoch(mode.loss == LOSS_BPR, bool(mode.exact_rank), bool(mode.adagrad),
                           bool(mode.clip), bool(mode.prefetch), bool(mode.freeze_items),
                           bool(mode.parallel), bool(mode.violators))


# ---------------------------------------------------------------------- work and epoch
def chunk_size(n, n_threads):
    """Positions per chunk of an epoch of ``n`` positives on ``n_threads`` threads."""
    return max(min(n // (n_threads * CHUNKS_PER_THREAD), CHUNK_MAX), CHUNK_MIN)


def thread_rows(rows, width, itemsize):
    """Rows to allocate per thread in an (n_threads, rows', width) work array of which
    a thread uses ``rows``: one or more padding rows, so that the rows of two threads
    never share a cache line (writes to a shared line would make the cores take it from
    each other on every write)."""
    row_bytes = max(width * itemsize, 1)
    return rows + (CACHE_LINE + row_bytes - 1) // row_bytes


def make_work(mode, n_threads, d, n_items, max_sampled, kos_n):
    """The :class:`Work` of epochs in ``mode`` on ``n_threads`` threads, for factors of
    dimension ``d`` over ``n_items`` items; made once per fit instead of once per epoch
    (a small saving: Python work between epochs runs on caches the epoch has filled with
    its own data). The integer and real work rows hold ``kos_n + max_sampled`` entries."""
    width = kos_n + max_sampled
    exact = mode.exact_rank and mode.loss == LOSS_WARP
    return Work(
        scratch=aligned_empty((n_threads, thread_rows(6, d, 4), d), np.float32),
        ints=np.empty((n_threads, thread_rows(3, width, 8), width), np.int64),
        reals=np.empty((n_threads, thread_rows(2, width, 8), width), np.float64),
        violators=np.empty((n_threads, n_items if exact else 0), np.int64),
        candidates=(np.empty((n_threads, thread_rows(2, max_sampled, 8), max_sampled),
                             np.int64) if mode.prefetch else np.empty((n_threads, 2, 0),
                                                                      np.int64)),
        next_chunk=np.zeros(1, np.int64),
        stop=np.zeros(1, np.bool_),
        stats=np.zeros((n_threads, N_STATS)))


def train_epoch(mode, params, positives, settings, work, order, epoch):
    """Run one epoch of Hogwild SGD over ``order``.

    Parameters
    ----------
    mode : Mode
        What the epoch does; selects the compiled variant (:func:`epoch_kernel`).
    params : Parameters
        Updated in place.
    positives : Positives
    settings : Settings
    work : Work
        From :func:`make_work` with the same mode; its ``stats`` are filled with
        per-thread sums (samples, updates, negatives scored, surrogate loss - weighted
        hinge, BPR's log loss or the ordinal loss - and rank loss ``w * Phi_n(rank)``,
        exact ranks ``#{j: f_j >= f_i}`` with ``exact_rank``, else the estimate). Its
        number of rows is the number of slices the epoch runs in parallel; run the call
        with at least that many Numba threads (``warprec._threads.kernel_threads``).
    order : int64 array
        Positions (into ``positives.indices``) of the positives to visit, in visiting
        order.
    epoch : int
        Key of the random streams, with ``settings.seed``.

    Returns
    -------
    bool
        ``True`` if every update stayed finite; ``False`` if an update produced NaN/Inf
        (those coordinates were reset to finite values, see ``updates.pair_update``, and
        the slices stopped early).
    """
    work.next_chunk[0] = 0
    work.stop[0] = False
    chunk = chunk_size(order.shape[0], work.stats.shape[0])
    return bool(epoch_kernel(mode)(params, positives, settings, work, order, epoch, chunk))
