"""One call of the training kernel (``warprec._kernels.train.train_epoch``) from a matrix
and keyword settings, for the tests that drive the kernel directly."""

import numpy as np

from warprec._kernels import negatives, train
from warprec._threads import run_in_threads


def filter_of(X, words=None):
    """The kernel's positive filter of ``X``: exact by default, else ``words`` wide."""
    n_words = negatives.filter_words(*X.shape) if words is None else words
    return negatives.positive_filter(X.indptr, X.indices, X.shape[1], n_words)


def run_epoch(params, X, order, table, *, loss=train.LOSS_WARP, exact_rank=False,
              adagrad=True, max_norm=0.0, prefetch=False, learning_rate=0.1, alpha=0.0,
              max_sampled=5, kos_k=1, kos_n=1, neg_cdf=None, words=None, seed=1234, epoch=0,
              n_threads=1, sample_weight=None, users=None, top_fraction=1.0,
              normalize=False, freeze_items=False, work=None, max_violators=1,
              n_negatives=8, margin=0.5, negative_weight=1.0, dropout=0.0,
              temperature=0.2, slices=None, negative_sharing=1):
    """Run one epoch on ``params`` (U, V, b, GU, GV, Gb; updated in place) over the
    positives of the CSR matrix ``X`` in ``order``; returns ``(ok, work)``, the stats in
    ``work.stats``. It runs ``slices`` slices (``n_threads`` unless given) at the same
    time. ``negative_sharing > 1`` runs the shared-negatives kernel (cosine losses)."""
    if users is None:
        users = np.repeat(np.arange(X.shape[0], dtype=np.int32), np.diff(X.indptr))
    if sample_weight is None:
        sample_weight = np.ones(X.nnz, np.float32)
    mode = train.Mode(loss=loss, exact_rank=exact_rank, adagrad=adagrad, clip=max_norm > 0,
                      prefetch=prefetch, freeze_items=freeze_items, violators=max_violators > 1,
                      shared=negative_sharing > 1)
    positives = train.Positives(X.indptr.astype(np.int64), X.indices, users, sample_weight,
                                np.zeros(0, np.int64),
                                np.zeros(0) if neg_cdf is None else neg_cdf,
                                filter_of(X, words))
    settings = train.Settings(np.float32(learning_rate), np.float32(alpha),
                              np.float32(max_norm), max_sampled, max_violators, n_negatives,
                              np.float32(margin), np.float32(negative_weight),
                              np.float32(dropout), np.float32(temperature), kos_k, kos_n,
                              table, top_fraction, normalize, seed, negative_sharing)
    if work is None:
        entries = (n_negatives if loss == train.LOSS_SOFTMAX or negative_sharing > 1
                   else max_sampled)
        work = train.make_work(mode, n_threads if slices is None else slices,
                               params[0].shape[1], X.shape[1], entries, kos_n,
                               negative_sharing)
    ok = train.train_epoch(mode, train.Parameters(*params), positives, settings, work,
                           np.asarray(order, np.int64), epoch, run_in_threads)
    return ok, work
