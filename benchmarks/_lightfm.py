"""LightFM 1.17 WARP runs (package rectools-lightfm). Imported lazily: without LightFM
the rows say "not installed"."""

from __future__ import annotations

from _common import N_COMPONENTS, PeakRSS, median, not_installed, now, timed_epochs


def version():
    try:
        import lightfm
    except Exception as exc:  # noqa: BLE001 - any import failure means "not available"
        return None, exc
    return getattr(lightfm, "__version__", "?"), None


def train(dataset, scorer, params, *, n_threads, seed, eval_epochs, name):
    """``fit_partial(epochs=1)`` per epoch, timed; quality at ``eval_epochs``.

    ``params``: learning_rate, max_sampled, epochs (LightFM defaults otherwise, i.e. no
    regularisation). Factors are scored by warprec's evaluator (user embeddings, item
    embeddings, item biases; user biases do not change a user's ranking).
    The per-call overhead of fit_partial (input checks, identity feature matrices, sample
    weights) is measured with ``fit_partial(epochs=0)`` and reported separately, so
    ``steady_seconds_per_epoch`` is LightFM's pure epoch time, as if fit(epochs=N) were
    called once.
    """
    try:
        from lightfm import LightFM
    except Exception as exc:  # noqa: BLE001
        return dict(library="lightfm", config=name, params=dict(params), **not_installed("lightfm", exc))
    epochs = int(params["epochs"])
    model = LightFM(no_components=N_COMPONENTS, loss="warp",
                    learning_rate=params["learning_rate"], max_sampled=params["max_sampled"],
                    learning_schedule="adagrad", random_state=seed)
    interactions = dataset.train.tocoo()
    with PeakRSS() as mem:
        tic = now()
        model.fit_partial(interactions, epochs=0, num_threads=n_threads)  # allocates; no epoch
        setup = now() - tic
        curve, epoch_wall, clock, cpu = timed_epochs(
            lambda: model.fit_partial(interactions, epochs=1, num_threads=n_threads), epochs,
            eval_epochs,
            lambda: scorer(model.user_embeddings, model.item_embeddings, model.item_biases),
            mem, clock=setup)
        overhead = call_overhead(model, interactions, n_threads)
    steady = max((clock - setup) / epochs - overhead, 1e-9)
    nnz = dataset.train.nnz
    return dict(
        library="lightfm", config=name, params=dict(params), seed=seed, threads=n_threads,
        epochs=epochs, status="ok", curve=curve, fit_seconds=clock,
        seconds_per_epoch=clock / epochs,
        steady_seconds_per_epoch=steady, cpu_seconds_per_epoch=cpu / epochs,
        positives_per_second=nnz / steady, mean_trials=None,
        epoch_wall_seconds=epoch_wall,
        breakdown=dict(setup_seconds=setup, fit_partial_call_overhead_seconds=overhead),
        **mem.as_dict())


def call_overhead(model, interactions, n_threads, repeats=3):
    """Median seconds of ``fit_partial(epochs=0)`` on an initialised model: the per-call
    overhead (input checks, identity feature matrices, sample weights) that one
    ``fit_partial(epochs=1)`` per epoch pays on top of the epoch itself."""
    seconds = []
    for _ in range(repeats):
        tic = now()
        model.fit_partial(interactions, epochs=0, num_threads=n_threads)
        seconds.append(now() - tic)
    return median(seconds)


def scaling(dataset, *, epochs, repeats, seed, thread_counts=(1, 2), params=None):
    """LightFM's training throughput (positives per second of ``fit``) with 1 and 2
    threads, runs alternating; for context next to warprec's scaling."""
    try:
        from lightfm import LightFM
    except Exception as exc:  # noqa: BLE001
        return not_installed("lightfm", exc)
    params = params or dict(learning_rate=0.05, max_sampled=10)
    interactions = dataset.train.tocoo()
    rows = {t: [] for t in thread_counts}
    for r in range(repeats):
        for t in (thread_counts if r % 2 == 0 else thread_counts[::-1]):
            model = LightFM(no_components=N_COMPONENTS, loss="warp", learning_schedule="adagrad",
                            random_state=seed, **params)
            model.fit_partial(interactions, epochs=0, num_threads=t)
            tic = now()
            model.fit_partial(interactions, epochs=epochs, num_threads=t)
            wall = now() - tic
            rows[t].append(dict(wall_seconds=wall,
                                positives_per_second=epochs * dataset.train.nnz / wall))
    med = {t: median([x["positives_per_second"] for x in v]) for t, v in rows.items()}
    lo, hi = thread_counts[0], thread_counts[-1]
    return dict(epochs=epochs, repeats=repeats, runs={str(t): v for t, v in rows.items()},
                positives_per_second_median={str(t): v for t, v in med.items()},
                ratio_median=med[hi] / med[lo])
