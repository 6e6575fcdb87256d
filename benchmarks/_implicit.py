"""implicit 0.7.3 runs: BPR training (BLAS limited to 1 thread) and the evaluation /
recommend competitors. Imported lazily: without implicit the rows say "not installed"."""

from __future__ import annotations

import numpy as np

from _common import N_COMPONENTS, PeakRSS, blas_limit, median, not_installed, now, timed_epochs


def version():
    try:
        import implicit
    except Exception as exc:  # noqa: BLE001
        return None, exc
    return getattr(implicit, "__version__", "?"), None


def train_bpr(dataset, scorer, params, *, n_threads, seed, eval_epochs, name):
    """``implicit.cpu.bpr.BayesianPersonalizedRanking`` with ``factors=64`` (implicit adds
    its bias as a 65th column), one ``fit(iterations=1)`` call per iteration (a second fit
    continues from the current factors); quality at ``eval_epochs``."""
    try:
        from implicit.cpu.bpr import BayesianPersonalizedRanking
    except Exception as exc:  # noqa: BLE001
        return dict(library="implicit", config=name, params=dict(params), **not_installed("implicit", exc))
    iterations = int(params["epochs"])
    # A numpy Generator, not an int: implicit derives the sampler's seed from random_state
    # on every fit() call, so with an int each one-iteration call would replay the same
    # samples (NDCG@10 0.178 instead of 0.240 on ML-100K after 50 iterations).
    model = BayesianPersonalizedRanking(
        factors=N_COMPONENTS, learning_rate=params["learning_rate"],
        regularization=params["regularization"], iterations=1, num_threads=n_threads,
        random_state=np.random.default_rng(seed))
    user_items = dataset.train
    with blas_limit(1), PeakRSS() as mem:
        # user rows end with a constant 1 and item rows with the item bias, so U @ V.T is
        # implicit's own score
        curve, epoch_wall, clock, cpu = timed_epochs(
            lambda: model.fit(user_items, show_progress=False), iterations, eval_epochs,
            lambda: scorer(model.user_factors, model.item_factors, None), mem)
        # per-call overhead of fit (input conversion) on an initialised model
        model.iterations = 0
        overhead = []
        for _ in range(3):
            tic = now()
            model.fit(user_items, show_progress=False)
            overhead.append(now() - tic)
    call_overhead = median(overhead)
    nnz = dataset.train.nnz
    # the first call also allocates and initialises the factors
    rest = epoch_wall[1:] or epoch_wall
    steady = max(sum(rest) / len(rest) - call_overhead, 1e-9)
    return dict(
        library="implicit", config=name, params=dict(params), seed=seed, threads=n_threads,
        epochs=iterations, status="ok", curve=curve, fit_seconds=clock,
        seconds_per_epoch=clock / iterations, steady_seconds_per_epoch=steady,
        cpu_seconds_per_epoch=cpu / iterations, positives_per_second=nnz / steady, mean_trials=1.0, epoch_wall_seconds=epoch_wall,
        breakdown=dict(first_call_seconds=epoch_wall[0],
                       fit_call_overhead_seconds=call_overhead), **mem.as_dict())


def factor_model(user_factors, item_factors, item_biases, n_threads):
    """An implicit model holding given factors, scoring exactly ``U @ V.T + b`` (the bias
    is folded in as an extra column, as implicit's own BPR does)."""
    from implicit.cpu.bpr import BayesianPersonalizedRanking

    model = BayesianPersonalizedRanking(factors=user_factors.shape[1], num_threads=n_threads)
    ones = np.ones((user_factors.shape[0], 1), np.float32)
    model.user_factors = np.hstack([user_factors, ones]).astype(np.float32)
    model.item_factors = np.hstack([item_factors, item_biases[:, None]]).astype(np.float32)
    return model


def ranking_metrics(model, train, test, k, n_threads, blas_threads):
    from implicit.evaluation import ranking_metrics_at_k

    with blas_limit(blas_threads):
        return ranking_metrics_at_k(model, train, test, K=k, show_progress=False,
                                    num_threads=n_threads)


def recommend(model, users, user_items, k, blas_threads):
    with blas_limit(blas_threads):
        return model.recommend(users, user_items, N=k, filter_already_liked_items=True)
