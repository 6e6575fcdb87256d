"""Hogwild SGD epochs of the training kernel: the interface the estimator calls.

One call of :func:`train_epoch` runs one epoch over the positives in the order given, as
one ``@njit`` kernel built from the epoch skeleton of :mod:`.epoch` (Hogwild slices
claiming chunks of the order, one random stream per sample) with the step of the fit's
loss plugged in: :mod:`.warp` (WARP and k-OS), :mod:`.violators` (WARP with several
violators), :mod:`.bpr`, :mod:`.ordinal`, :mod:`.ccl` (the cosine contrastive loss and
the sampled softmax) or :mod:`.features` (the hybrid model). The cosine losses with
negatives shared by groups of positives (``Mode.shared``) run a slice kernel of their own
(:mod:`.shared`), which claims chunks of whole groups.

The interface is four small typed tuples and a mode (defined in :mod:`.epoch`):

* :class:`Parameters`: the arrays an epoch updates in place (the hybrid model's are
  ``features.FeatureParameters``);
* :class:`Positives`: the training positives and what the draws need to know of them;
* :class:`Settings`: the scalars and the rank-weight table of a fit;
* :class:`Work`: the per-thread work arrays and shared counters, made once per fit
  (:func:`make_work`);
* :class:`Mode`: what the kernel does (loss, rank estimate, Adagrad, max-norm,
  prefetching). Each mode is a compiled variant of its own, chosen in one place,
  :func:`epoch_kernel`: the mode's flags are compile-time constants there, so a fit
  compiles only the code of its mode. A variant is one serial slice kernel that serves
  any number of threads: :func:`train_epoch` runs one slice per row of the work arrays,
  at the same time, with the runner it is given. :func:`compile_kernel` compiles (or
  loads) a variant without training.
"""

import functools

import numpy as np

from . import bpr, ccl, features, ordinal, shared, violators, warp
from .aligned import aligned_empty
from .config import CACHE_LINE, CHUNK_MAX, CHUNK_MIN, CHUNKS_PER_THREAD
from .epoch import (LOSS_BPR, LOSS_CCL, LOSS_ORDINAL, LOSS_SOFTMAX, LOSS_WARP, N_STATS,
                    SPHERE_LOSSES, STAT_LOSS, STAT_RANK_LOSS, STAT_SAMPLES, STAT_TRIALS,
                    STAT_UPDATES, Mode, Parameters, Positives, Settings, Work, compile_epoch)
from .features import FeatureParameters

__all__ = ["LOSS_BPR", "LOSS_CCL", "LOSS_ORDINAL", "LOSS_SOFTMAX", "LOSS_WARP", "N_STATS",
           "SPHERE_LOSSES", "STAT_LOSS", "STAT_RANK_LOSS", "STAT_SAMPLES", "STAT_TRIALS",
           "STAT_UPDATES", "FeatureParameters", "Mode", "Parameters", "Positives", "Settings",
           "Work", "chunk_size", "compile_kernel", "epoch_kernel", "make_work", "run_serially",
           "thread_rows", "train_epoch"]


@functools.cache
def epoch_kernel(mode):
    """The compiled slice kernel of ``mode`` (a :class:`Mode`): the one place where a
    variant is chosen. Called as ``kernel(params, positives, settings, work, order,
    epoch, chunk, thread)`` once per slice (:func:`train_epoch`); returns ``True`` if
    every update of the slice stayed finite."""
    if mode.shared and mode.loss not in SPHERE_LOSSES:
        raise ValueError("shared negatives apply to the cosine losses only")
    if mode.features:
        if (mode.loss in (LOSS_ORDINAL,) + SPHERE_LOSSES or mode.exact_rank or mode.clip
                or mode.freeze_items or mode.violators):
            raise ValueError("the hybrid model trains WARP (estimated ranks, one violator) "
                             "or BPR, without max-norm or frozen items")
        return compile_epoch(features, mode)
    if mode.loss in SPHERE_LOSSES:
        if mode.exact_rank or mode.clip or mode.prefetch or mode.violators:
            raise ValueError("the cosine losses have neither exact ranks, max-norm, "
                             "prefetching nor several violators")
        if mode.shared:
            return shared.compile_epoch(mode)
        return compile_epoch(ccl, mode)
    if mode.loss == LOSS_ORDINAL:
        if mode.exact_rank or mode.prefetch or mode.freeze_items:
            raise ValueError("the ordinal loss has neither exact ranks, prefetching nor "
                             "frozen items")
        return ordinal.compile_epoch(mode)
    if mode.loss not in (LOSS_WARP, LOSS_BPR):
        raise ValueError(f"unknown loss code {mode.loss}")
    if mode.exact_rank and mode.loss != LOSS_WARP:
        raise ValueError("exact ranks apply to the WARP loss only")
    if mode.violators and (mode.loss != LOSS_WARP or mode.exact_rank):
        raise ValueError("several violators per positive apply to WARP's sampled ranks only")
    if mode.loss == LOSS_BPR:
        return compile_epoch(bpr, mode)
    return compile_epoch(violators if mode.violators else warp, mode)


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


def make_work(mode, n_threads, d, n_items, entries, kos_n, group=1):
    """The :class:`Work` of epochs in ``mode`` on ``n_threads`` threads, for factors of
    dimension ``d`` over ``n_items`` items; made once per fit instead of once per epoch
    (a small saving: Python work between epochs runs on caches the epoch has filled with
    its own data). ``entries`` is the most list entries a sample draws besides k-OS's
    ``kos_n`` positives: ``Settings.max_sampled``, or the softmax's
    ``Settings.n_negatives``. The integer and real work rows hold ``kos_n + entries``
    entries, the candidates' rows (with ``Mode.prefetch``) ``entries``.

    With ``Mode.shared`` (``entries`` the draws ``N`` a group of ``group`` positives
    shares) the rows are those of :mod:`.shared`: ``shared.scratch_rows`` scratch rows,
    ``shared.INT_ROWS`` integer rows and ``shared.real_rows`` real rows, each at least
    ``max(entries, group)`` wide."""
    width = kos_n + entries
    rows, int_rows, real_rows = 6, 3, 2
    if mode.shared:
        width = max(entries, group)
        rows = shared.scratch_rows(group, entries)
        int_rows, real_rows = shared.INT_ROWS, shared.real_rows(group)
    exact = mode.exact_rank and mode.loss == LOSS_WARP
    return Work(
        scratch=aligned_empty((n_threads, thread_rows(rows, d, 4), d), np.float32),
        ints=np.empty((n_threads, thread_rows(int_rows, width, 8), width), np.int64),
        reals=np.empty((n_threads, thread_rows(real_rows, width, 8), width), np.float64),
        violators=np.empty((n_threads, n_items if exact else 0), np.int64),
        candidates=(np.empty((n_threads, thread_rows(2, entries, 8), entries), np.int64)
                    if mode.prefetch else np.empty((n_threads, 2, 0), np.int64)),
        next_chunk=np.zeros(1, np.int64),
        stop=np.zeros(1, np.bool_),
        stats=np.zeros((n_threads, N_STATS)))


def run_serially(task, n):
    """Run ``task(0), ..., task(n - 1)`` one after another in the calling thread: the
    first slice of an epoch then claims every chunk (a one-thread epoch, whatever
    ``n``). :func:`train_epoch`'s runner for one slice, and for tests; the estimator
    runs slices at the same time (``warprec._threads.run_in_threads``)."""
    return [task(t) for t in range(n)]


def train_epoch(mode, params, positives, settings, work, order, epoch, run):
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
        number of rows is the number of slices the epoch runs.
    order : int64 array
        Positions (into ``positives.indices``) of the positives to visit, in visiting
        order.
    epoch : int
        Key of the random streams, with ``settings.seed``.
    run : callable
        ``run(task, n)`` calls ``task(0), ..., task(n - 1)``, each the slice of that
        number, and returns when all have ended: at the same time on ``n`` threads
        (``warprec._threads.run_in_threads``; the kernel releases the GIL), or
        :func:`run_serially`.

    Returns
    -------
    bool
        ``True`` if every update stayed finite; ``False`` if an update produced NaN/Inf
        (those coordinates were reset to finite values, see ``updates.pair_update``, and
        the slices stopped early).
    """
    work.next_chunk[0] = 0
    work.stop[0] = False
    n_slices = work.stats.shape[0]
    chunk = chunk_size(order.shape[0], n_slices)
    kernel = epoch_kernel(mode)

    def one_slice(thread):
        return kernel(params, positives, settings, work, order, epoch, chunk, thread)

    run(one_slice, n_slices)
    return not work.stop[0]


def compile_kernel(mode, params, positives, settings, work):
    """Compile (or load from Numba's cache) the slice kernel of ``mode`` for these
    inputs' types, without training: one slice runs on an empty order (it claims no
    position; its statistics row is written with zeros)."""
    order = np.zeros(0, np.int64)
    work.next_chunk[0] = 0
    work.stop[0] = False
    epoch_kernel(mode)(params, positives, settings, work, order, 0, CHUNK_MIN, 0)
