"""The ordinal loss's epoch: a list of graded items per positive.

Each positive ``p`` makes a list of ``Settings.kos_n`` of the user's graded items (``p``
first, the others drawn with replacement) and ``Settings.max_sampled`` negatives of
grade 0 (:func:`ordinal_list`), whose loss (Weimer, Karatzoglou, Le & Smola 2007,
"CofiRank - Maximum Margin Matrix Factorization for Collaborative Ranking", appendix
sec. 1.2, see :func:`warprec.losses.ordinal_loss`) is descended by ``list_update``,
scaled by the list length.

The list loss sorts and allocates, so its slice is compiled with reference counting, on
its own (:func:`ordinal_slice`, the epoch skeleton of :mod:`.epoch` with this module's
``begin``, ``ahead`` and ``step`` plugged in), and run once per thread as the other
losses' slices are (``train.train_epoch``); the slice borrows the arrays the threads
share (:mod:`.borrow`). Adagrad is an argument of the slice rather than a constant of it: one
compiled slice serves both.
"""

from numba import njit

from ._flags import JIT, inlined
from .borrow import borrow
from .epoch import LOSS_ORDINAL, Parameters, Positives, Work, nothing_ahead, run_slice
from .losses import ordinal_loss_grad_unit
from .negatives import draw_negative, filter_shift
from .rng import draw_below
from .updates import list_update, score


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


# ------------------------------------------------------------- the epoch's plug-ins
@inlined
def begin(params, positives, settings, work, thread):
    """The slice's state: ``(params, settings, shift, buf, items, labels, f_list, g_list,
    n_labels)``: the filter's hash shift, the slice's scratch rows, its list rows (items,
    their grades, scores and gradients) and the number of grades (the largest + 1)."""
    grades = positives.grades
    n_labels = 1
    for q in range(grades.shape[0]):
        n_labels = max(n_labels, grades[q] + 1)
    n_items = params.item_factors.shape[0]
    shift = filter_shift(positives.filt.shape[1], n_items)
    ints, reals = work.ints, work.reals
    return n_items, (params, settings, shift, work.scratch[thread], ints[thread, 0],
                     ints[thread, 1], reals[thread, 0], reals[thread, 1], n_labels)


#: The ordinal epoch prefetches nothing.
ahead = nothing_ahead


@inlined
def step(state, positives, s, p, u, start, end, n_neg, key, loss, exact_rank, adagrad, clip,
         prefetching, freeze_items, violators):
    """The ordinal step on positive ``p`` (the module docstring); see :mod:`.epoch` for
    the arguments and what it returns."""
    params, settings, shift, buf, items, labels, f_list, g_list, n_labels = state
    U, V, b = params.user_factors, params.item_factors, params.item_biases
    w = positives.sample_weight[p]
    m = ordinal_list(U, V, b, positives.indices, start, end, u, p, positives.grades,
                     settings.kos_n, settings.max_sampled, positives.neg_cdf, positives.filt,
                     shift, key, 0, items, labels, f_list)
    value = ordinal_loss_grad_unit(f_list[:m], labels[:m], n_labels, g_list[:m])
    ok = True
    if value > 0:
        ok = list_update(U, V, b, params.user_grad_sq, params.item_grad_sq,
                         params.bias_grad_sq, u, items, g_list, m, w * m,
                         settings.learning_rate, settings.alpha, adagrad, settings.max_norm,
                         buf)
        return ok, int(ok), m, w * value, 0.0
    return ok, 0, m, w * value, 0.0


# -------------------------------------------------------------------- the kernel
@inlined
def borrowed(params, positives, work, order):
    """The arrays of an epoch's inputs without their memory-info blocks (:mod:`.borrow`):
    the slice's views of them then count no references on the blocks the threads
    share."""
    return (Parameters(borrow(params.user_factors), borrow(params.item_factors),
                       borrow(params.item_biases), borrow(params.user_grad_sq),
                       borrow(params.item_grad_sq), borrow(params.bias_grad_sq)),
            Positives(borrow(positives.indptr), borrow(positives.indices),
                      borrow(positives.users), borrow(positives.sample_weight),
                      borrow(positives.grades), borrow(positives.neg_cdf),
                      borrow(positives.filt)),
            Work(borrow(work.scratch), borrow(work.ints), borrow(work.reals),
                 borrow(work.violators), borrow(work.candidates), borrow(work.next_chunk),
                 borrow(work.stop), borrow(work.stats)),
            borrow(order))


@njit(**JIT)
def ordinal_slice(params, positives, settings, work, order, epoch, chunk, thread, adagrad):
    """Thread ``thread``'s slice of an ordinal epoch (:func:`.epoch.run_slice`), on
    borrowed arrays."""
    params, positives, work, order = borrowed(params, positives, work, order)
    return run_slice(begin, ahead, step, params, positives, settings, work, order, epoch,
                     chunk, thread, LOSS_ORDINAL, False, adagrad, False, False, False, False)


def compile_epoch(mode):
    """The ordinal slice kernel of ``mode``, called as the other losses' kernels are
    (``epoch.compile_epoch``)."""
    adagrad = bool(mode.adagrad)

    def ordinal_variant(params, positives, settings, work, order, epoch, chunk, thread):
        return ordinal_slice(params, positives, settings, work, order, epoch, chunk, thread,
                             adagrad)

    return ordinal_variant
