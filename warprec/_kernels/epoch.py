"""One epoch of Hogwild SGD: what an epoch takes, and the loop every loss runs in it.

An epoch visits the positives in a given order as ``n_threads`` slices of one ``@njit``
kernel (:func:`run_slice`, compiled serially with ``nogil``), run at the same time on
Python threads by the caller (``train.train_epoch``); each slice claims contiguous
chunks of that order from a shared counter (a thread that runs ahead takes more chunks,
:func:`next_position`) and updates the shared parameters without locks (Hogwild).
(Not a ``prange`` over the slices: Numba's parallel passes would run over the whole
inlined slice, see ``compile_epoch``.) Each
sample's random draws come from a stream keyed by ``(seed, epoch, sample)``
(:mod:`.rng`), so the draws do not depend on which thread runs the sample. A slice that
meets a non-finite update raises ``Work.stop``, which makes the others return early;
every slice writes its sums into its row of ``Work.stats`` (:func:`close_slice`).

The loop is written once, in :func:`run_slice`. A loss plugs its work into it as a
module, one per algorithm (:mod:`.warp`, :mod:`.bpr`, :mod:`.violators`, :mod:`.ccl`,
:mod:`.features`, :mod:`.ordinal`), with three functions, all inlined at Numba's IR
level (``_flags.inlined``):

``begin(params, positives, settings, work, thread) -> (n_items, state)``
    The slice's state (its work rows, settings, anything computed once per slice).
``ahead(state, positives, order, s, hi, fresh, epoch, *mode)``
    Called at each position ``s`` of the slice's current chunk ``[s, hi)`` (``fresh``:
    ``s`` opens the chunk) before the sample there is read: prefetches for the samples
    to come (:func:`ids_ahead`, or :func:`nothing_ahead`). A module that supports
    ``Mode.prefetch`` has a ``prefetching_ahead`` too, which replaces it then.
``step(state, positives, s, p, u, start, end, n_neg, key, *mode)``
    The step on the positive at CSR position ``p`` of user ``u`` (the user's row is
    ``[start, end)``, with ``n_neg > 0`` negatives; ``key`` keys its random stream).
    Returns ``(ok, updates, trials, loss, rank_loss)``: ``ok`` is false after a
    non-finite update; the others are added to the slice's statistics.

``*mode`` is ``loss, exact_rank, adagrad, clip, prefetching, freeze_items, violators``
(the fields of :class:`Mode` but ``features``), passed one by one.
:func:`compile_epoch` makes them constants of the kernel it compiles, and Numba prunes
the branches they rule out before it types the code: a kernel compiles only the code of
its mode. (A flag reaches a branch as a constant only as an argument of its own, not
inside a tuple.) Numba prunes after it has inlined the helpers, though, except for the
branches in the compiled kernel's own code, and inlining costs compile time: hence a
module per algorithm rather than one step branching over them, and the choice of
``ahead`` made in the kernel itself. The kernel reaches the plugged-in functions as
attributes of the module, a cell of its closure: a function in a cell would give the
kernel's cache entry a key that changes with every process, where a module is keyed by
its name. The ordinal loss runs the same slice compiled apart, with reference counting
(:mod:`.ordinal`).
"""

from typing import NamedTuple

import numpy as np
from numba import njit

from ._flags import JIT_NO_NRT, inlined
from .atomic import fetch_add
from .config import SAMPLES_AHEAD
from .prefetch import prefetch
from .rng import stream_key

LOSS_WARP = 0
LOSS_BPR = 1
LOSS_ORDINAL = 2
LOSS_CCL = 3
LOSS_SOFTMAX = 4
#: The losses whose factor rows are kept at unit norm (scores are cosines; :mod:`.ccl`).
SPHERE_LOSSES = (LOSS_CCL, LOSS_SOFTMAX)

#: Columns of the per-thread statistics (``Work.stats``) an epoch fills.
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
    negative_sharing: int = 1   # CCL, softmax with Mode.shared: positives per shared set
    #                             of n_negatives draws (:mod:`.shared`)
    feature_negatives: float = 0.0  # hybrid WARP, BPR: share of the positives whose
    #                             negatives are drawn among items sharing one of the
    #                             positive's features (:mod:`.features`)


class Work(NamedTuple):
    """Per-thread work arrays and shared counters of the epochs (``train.make_work``).

    Every per-thread array has a leading axis of ``n_threads`` and padding rows, so that
    two threads' rows never share a cache line (``train.thread_rows``).
    """
    scratch: np.ndarray         # float32 (n_threads, >= 6, d): rows of a buffered update
    ints: np.ndarray            # int64 (n_threads, >= 3, entries): lists (see make_work)
    reals: np.ndarray           # float64 (n_threads, >= 2, entries): lists
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
    violators: bool = False     # WARP: collect up to Settings.max_violators violators per
    #                             positive (compiled only when asked for: it would slow
    #                             the single-violator loop)
    shared: bool = False        # CCL, softmax: negatives shared by the positives of a
    #                             group of Settings.negative_sharing (:mod:`.shared`)


# ------------------------------------------------------------------------ the skeleton
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
    three reads one after another."""
    if t < hi:
        p = order[t]
        prefetch(sample_users, p)
        prefetch(indices, p)
        prefetch(sample_weight, p)


@inlined
def ids_ahead(state, positives, order, s, hi, fresh, epoch, loss, exact_rank, adagrad, clip,
              prefetching, freeze_items, violators):
    """An ``ahead`` that asks for the ids of the sample ``2 * SAMPLES_AHEAD`` positions
    on (:func:`prefetch_ids`)."""
    prefetch_ids(positives.users, positives.indices, positives.sample_weight, order,
                 s + 2 * SAMPLES_AHEAD, hi)


@inlined
def nothing_ahead(state, positives, order, s, hi, fresh, epoch, loss, exact_rank, adagrad,
                  clip, prefetching, freeze_items, violators):
    """An ``ahead`` that prefetches nothing."""


@inlined
def close_slice(stats, stop, ok, n_samples, n_updates, n_trials, loss_sum, rank_loss_sum):
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


@inlined
def run_slice(begin, ahead, step, params, positives, settings, work, order, epoch, chunk,
              thread, loss, exact_rank, adagrad, clip, prefetching, freeze_items, violators):
    """Slice ``thread`` of an epoch over ``order``: claim chunks of ``chunk`` positions
    until none is left or a slice raised ``work.stop``, run ``ahead`` and ``step`` (of
    the loss plugged in, see the module docstring) at each of their positions, and
    close the slice with its statistics (samples, updates, trials, loss, rank loss).
    Returns whether every update stayed finite."""
    n_items, state = begin(params, positives, settings, work, thread)
    indptr, sample_users = positives.indptr, positives.users
    next_chunk, stop, seed = work.next_chunk, work.stop, settings.seed
    ok = True
    n_samples = 0
    n_updates = 0
    n_trials = 0
    loss_sum = 0.0
    rank_loss_sum = 0.0
    cur = hi = 0
    while not stop[0]:
        s, cur, hi, fresh = next_position(next_chunk, chunk, order.shape[0], cur, hi)
        if s < 0:
            break
        ahead(state, positives, order, s, hi, fresh, epoch, loss, exact_rank, adagrad, clip,
              prefetching, freeze_items, violators)
        p, u, start, end, n_neg = sample_at(order, s, sample_users, indptr, n_items)
        n_samples += 1
        if n_neg <= 0:
            continue
        ok, updates, trials, sample_loss, rank_loss = step(
            state, positives, s, p, u, start, end, n_neg, stream_key(seed, epoch, p), loss,
            exact_rank, adagrad, clip, prefetching, freeze_items, violators)
        n_updates += updates
        n_trials += trials
        loss_sum += sample_loss
        rank_loss_sum += rank_loss
        if not ok:
            break
    return close_slice(work.stats[thread], stop, ok, n_samples, n_updates, n_trials, loss_sum,
                       rank_loss_sum)


def compile_epoch(plugin, mode):
    """The slice kernel of ``mode`` (a :class:`Mode`) with the loss module ``plugin``
    plugged into :func:`run_slice` (its ``begin``, ``ahead`` and ``step``, and its
    ``prefetching_ahead`` with ``Mode.prefetch``; compiled on the first call). The mode's
    fields are constants of the kernel, and Numba's cache keys the compiled kernel on
    them and on the module's name. The kernel is compiled without reference counting, so
    it allocates nothing: slice ``thread``'s work arrays are row ``thread`` of
    ``work``'s. Called as ``kernel(params, positives, settings, work, order, epoch,
    chunk, thread)``; returns ``True`` if every update of the slice stayed finite.

    One serial kernel serves one-thread and parallel epochs alike: the caller runs a
    slice per thread (``train.train_epoch``). Compiled with ``parallel=True`` and a
    ``prange`` over the slices, Numba's parfor passes (copy propagation, dead-code
    removal and the outlining of the loop body) ran over the whole inlined slice, most
    of the first fit's compilation with the cosine losses (docs/design.md,
    benchmarks/results/compile_time.md)."""
    loss, exact_rank, adagrad = int(mode.loss), bool(mode.exact_rank), bool(mode.adagrad)
    clip, prefetching, freeze_items = bool(mode.clip), bool(mode.prefetch), bool(
        mode.freeze_items)
    violators = bool(mode.violators)

    def slice_variant(params, positives, settings, work, order, epoch, chunk, thread):
        # (a branch here is pruned before Numba inlines anything: the other ``ahead``
        # is never inlined)
        if prefetching:
            return run_slice(plugin.begin, plugin.prefetching_ahead, plugin.step, params,
                             positives, settings, work, order, epoch, chunk, thread, loss,
                             exact_rank, adagrad, clip, prefetching, freeze_items, violators)
        return run_slice(plugin.begin, plugin.ahead, plugin.step, params, positives,
                         settings, work, order, epoch, chunk, thread, loss, exact_rank,
                         adagrad, clip, prefetching, freeze_items, violators)

    return njit(**JIT_NO_NRT)(slice_variant)
