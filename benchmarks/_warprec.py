"""warprec runs: training with quality checkpoints, warm-up, per-phase breakdown."""

from __future__ import annotations

import numpy as np

from _common import N_COMPONENTS, PeakRSS, cpu_now, median, now


def warm_up(n_threads):
    """Load (or compile) the training, scoring and top-k kernels on a toy problem, so the
    timed runs measure steady-state speed. Returns the seconds it took."""
    import scipy.sparse as sp
    from warprec import WARPFactorizer
    from warprec.metrics import evaluate_factors

    rng = np.random.default_rng(0)
    X = sp.random(50, 40, density=0.2, format="csr", random_state=0, dtype=np.float32)
    X.data[:] = 1.0
    tic = now()
    model = WARPFactorizer(n_components=8, epochs=1, n_threads=n_threads).fit(X)
    # large fits prefetch, a code path that compiles separately: compile it here too
    import warprec.model as model_module
    threshold = model_module.PREFETCH_ABOVE_BYTES
    model_module.PREFETCH_ABOVE_BYTES = 0
    try:
        WARPFactorizer(n_components=8, epochs=1, n_threads=n_threads).fit(X)
    finally:
        model_module.PREFETCH_ABOVE_BYTES = threshold
    evaluate_factors(model.user_factors_, model.item_factors_, model.item_biases_, X, None,
                     k=5, metrics=["ndcg"], n_threads=n_threads)
    model.recommend(np.arange(10), k=5)
    del rng
    return now() - tic


def train(dataset, scorer, params, *, n_threads, seed, eval_epochs, name):
    """Fit warprec once with ``params``; measure quality after the epochs in
    ``eval_epochs`` (evaluation time excluded from the clock and the memory peak)."""
    from warprec import WARPFactorizer

    # (speed runs time the training epochs: no validation checks, nothing held out)
    model = WARPFactorizer(n_components=N_COMPONENTS, n_threads=n_threads, random_state=seed,
                           **{"early_stopping": False, **params})
    eval_epochs = set(eval_epochs)
    curve, epoch_wall = [], []
    state = dict(eval=0.0, eval_cpu=0.0, last=None)

    def callback(m, info):
        t = now()
        epoch_wall.append(t - state["last"])
        epoch = info["epoch"] + 1
        if epoch in eval_epochs:
            c = cpu_now()
            with mem.paused():
                quality = scorer(m.user_factors_, m.item_factors_, m.item_biases_)
            curve.append(dict(epoch=epoch, seconds=t - t0 - state["eval"], **quality))
            state["eval"] += now() - t
            state["eval_cpu"] += cpu_now() - c
        state["last"] = now()

    with PeakRSS() as mem:
        c0 = cpu_now()
        t0 = state["last"] = now()
        model.fit(dataset.train, callback=callback)
        fit_seconds = now() - t0 - state["eval"]
        cpu_seconds = cpu_now() - c0 - state["eval_cpu"]
    history = model.history_
    kernel = [h["seconds"] for h in history]
    overhead = [w - k for w, k in zip(epoch_wall[1:], kernel[1:])]
    per_epoch_overhead = median(overhead) or 0.0
    setup = max(epoch_wall[0] - kernel[0] - per_epoch_overhead, 0.0)
    steady = (fit_seconds - setup) / len(history)
    nnz = dataset.train.nnz
    return dict(
        library="warprec", config=name, params=dict(params), seed=seed, threads=n_threads,
        epochs=len(history), status="ok", curve=curve,
        fit_seconds=fit_seconds, seconds_per_epoch=fit_seconds / len(history),
        steady_seconds_per_epoch=steady, cpu_seconds_per_epoch=cpu_seconds / len(history),
        positives_per_second=nnz / steady,
        kernel_positives_per_second=nnz / median(kernel),
        mean_trials=float(np.mean([h["mean_trials"] for h in history])),
        mean_trials_by_epoch=[h["mean_trials"] for h in history],
        epoch_wall_seconds=epoch_wall, kernel_seconds=kernel,
        breakdown=dict(setup_seconds=setup, kernel_seconds=float(sum(kernel)),
                       per_epoch_python_seconds=per_epoch_overhead,
                       python_seconds=float(fit_seconds - sum(kernel))),
        **mem.as_dict())


def overhead_parts(dataset, n_threads):
    """Time the known pieces of warprec's per-epoch Python work in isolation: the
    epoch order (of the default ``sample_order``) and the check of the parameters that
    follows every epoch (``_parameters_usable``: the score bound)."""
    from warprec import WARPFactorizer

    model = WARPFactorizer(n_components=N_COMPONENTS, epochs=0, n_threads=n_threads)
    tic = now()
    model.fit(dataset.train)
    setup_zero_epochs = now() - tic
    from warprec._trainer import epoch_order

    def draw_order(epoch):
        return epoch_order(model.sample_order_, model.train_matrix_, model.seed_, epoch)

    draw_order(0)  # compiles the order kernel if needed
    tic = now()
    draw_order(1)
    order = now() - tic
    tic = now()
    model._parameters_usable()
    usable_check = now() - tic
    return dict(order_seconds=order, sample_order=model.sample_order_,
                usable_check_seconds=usable_check,
                fit_with_zero_epochs_seconds=setup_zero_epochs)


def scaling(dataset, *, epochs, repeats, seed, thread_counts=(1, 2)):
    """Kernel throughput with 1 and 2 threads from the same seed, runs alternating.

    ``ratio_paired_median``: the median over the repeats of the ratio of the two runs of
    the same repeat (made one right after the other, so a change of the host's speed
    between repeats cancels out); ``ratio_median``: the ratio of the median throughputs;
    ``ratio_best``: of the best runs."""
    from warprec import WARPFactorizer

    rows = {t: [] for t in thread_counts}
    for r in range(repeats):
        for t in (thread_counts if r % 2 == 0 else thread_counts[::-1]):
            model = WARPFactorizer(n_components=N_COMPONENTS, epochs=epochs, n_threads=t,
                                   random_state=seed)
            tic = now()
            model.fit(dataset.train)
            wall = now() - tic
            kernel = sum(h["seconds"] for h in model.history_)
            samples = sum(h["samples"] for h in model.history_)
            rows[t].append(dict(kernel_seconds=kernel, wall_seconds=wall,
                                positives_per_second=samples / kernel,
                                mean_trials=float(np.mean([h["mean_trials"]
                                                           for h in model.history_]))))
    out = dict(epochs=epochs, repeats=repeats, runs={str(t): v for t, v in rows.items()})
    best = {t: max(x["positives_per_second"] for x in v) for t, v in rows.items()}
    med = {t: median([x["positives_per_second"] for x in v]) for t, v in rows.items()}
    lo, hi = thread_counts[0], thread_counts[-1]
    out["positives_per_second_median"] = {str(t): v for t, v in med.items()}
    out["ratio_median"] = med[hi] / med[lo]
    out["ratio_best"] = best[hi] / best[lo]
    out["ratios_paired"] = [b["positives_per_second"] / a["positives_per_second"]
                            for a, b in zip(rows[lo], rows[hi])]
    out["ratio_paired_median"] = median(out["ratios_paired"])
    return out


def launch_latency(n_threads, epochs=30):
    """Median kernel seconds of an epoch over 100 positives with 1 and ``n_threads``
    threads: the fixed cost of starting the parallel region. Microseconds on an idle
    machine; on a loaded one, waking the sleeping worker thread can take a scheduler
    time slice (~10-20 ms), which dominates short epochs (ML-100K: ~20 ms)."""
    import scipy.sparse as sp
    from warprec import WARPFactorizer

    X = sp.random(200, 100, density=0.005, format="csr", random_state=0, dtype=np.float32)
    X.data[:] = 1.0
    out = {}
    for t in sorted({1, n_threads}):
        model = WARPFactorizer(n_components=N_COMPONENTS, epochs=epochs, n_threads=t).fit(X)
        out[str(t)] = median([h["seconds"] for h in model.history_])
    return dict(positives=int(X.nnz), epochs=epochs, median_kernel_seconds=out)
