"""Paired epochs: warprec and LightFM trained side by side at identical settings, two
epochs of each in turn, so that both libraries' timed epochs see the same state of a
shared (noisy) machine.

The separate runs of ``run_training`` time each library's whole fit in its own stretch
of time; on a host whose neighbours come and go, a ratio of their medians mixes the
libraries' speed with how busy the machine was during each fit. Here the libraries take
turns of two epochs, and the second epoch of each turn is paired with the other
library's epoch of the same number (also the second of its turn): the first epoch of a
turn runs after the other library's turn (caches and thread pool left in another state),
the second runs the way a fit runs its epochs, one after another.

Between turns the machine settles for ``SETTLE_SECONDS``. LightFM's OpenMP runtime
(libgomp, default wait policy) keeps its worker thread spinning on a core for a while
after every parallel region: here the process used about 8-14 ms of CPU in the 30 ms
after a 2-thread ML-100K ``fit_partial(epochs=1)`` while its calling thread slept, and
under 1 ms with ``OMP_WAIT_POLICY=passive``. Without the pause that spinning ran during
warprec's next turn: warprec's timed (second) epochs took 7.03 ms instead of 5.28 ms
(defaults pair, medians over six seeds run alternately with and without a 20 ms pause)
and 6.00 ms instead of 5.13 ms (reference pair, four seeds); a fit's own epochs never
share the cores with another library's spinning threads. warprec's threads block when
idle and leave nothing running behind them; the pause is made on both sides anyway.
Neither library's own settings change.
"""

from __future__ import annotations

import time

import numpy as np

import _lightfm
from _common import N_COMPONENTS, SETTLE_SECONDS, not_installed, now


def run(dataset, scorer, warprec_params, lightfm_params, *, n_threads, seed):
    """Train warprec and LightFM from ``seed`` for the same number of epochs, in turns of
    two epochs each.

    warprec runs one ``fit``; its callback, after every second epoch (and after the last),
    trains LightFM up to the same epoch (``fit_partial(epochs=1)`` per epoch), with a
    pause of ``SETTLE_SECONDS`` before and after LightFM's turn. A warprec
    epoch is the wall time from the end of one callback to the start of the next (the
    kernel plus warprec's per-epoch Python work); a LightFM epoch is its ``fit_partial``
    call minus the per-call overhead measured with ``fit_partial(epochs=0)`` (as in
    ``_lightfm.train``). ``ratios`` pairs epochs 2, 4, 6, ... of the two libraries (the
    second epoch of each turn). Quality (NDCG@10, Recall@20) of both is measured once,
    after the last epoch.
    """
    try:
        from lightfm import LightFM
    except Exception as exc:  # noqa: BLE001 - any import failure means "not available"
        return not_installed("lightfm", exc)
    from warprec import WARPFactorizer

    epochs = int(lightfm_params["epochs"])
    interactions = dataset.train.tocoo()
    competitor = LightFM(no_components=N_COMPONENTS, loss="warp",
                         learning_rate=lightfm_params["learning_rate"],
                         max_sampled=lightfm_params["max_sampled"],
                         learning_schedule="adagrad", random_state=seed)
    competitor.fit_partial(interactions, epochs=0, num_threads=n_threads)  # allocates
    overhead = _lightfm.call_overhead(competitor, interactions, n_threads)
    mine, theirs = [], []
    state = {}

    def callback(model, info):
        mine.append(now() - state["last"])
        if len(mine) % 2 == 0 or len(mine) == epochs:
            time.sleep(SETTLE_SECONDS)
            while len(theirs) < len(mine):
                tic = now()
                competitor.fit_partial(interactions, epochs=1, num_threads=n_threads)
                theirs.append(max(now() - tic - overhead, 1e-9))
            time.sleep(SETTLE_SECONDS)
        state["last"] = now()

    model = WARPFactorizer(n_components=N_COMPONENTS, n_threads=n_threads, random_state=seed,
                           **dict(warprec_params, epochs=epochs))
    state["last"] = now()
    model.fit(dataset.train, callback=callback)
    quality = scorer(model.user_factors_, model.item_factors_, model.item_biases_)
    quality_competitor = scorer(competitor.user_embeddings, competitor.item_embeddings,
                                competitor.item_biases)
    second = range(1, epochs, 2)
    return dict(status="ok", seed=seed, epochs=epochs, warprec_epoch_seconds=mine,
                lightfm_epoch_seconds=theirs, lightfm_call_overhead_seconds=overhead,
                settle_seconds=SETTLE_SECONDS,
                warprec_paired_seconds=[mine[k] for k in second],
                lightfm_paired_seconds=[theirs[k] for k in second],
                ratios=[theirs[k] / mine[k] for k in second],
                warprec_quality=quality, lightfm_quality=quality_competitor)


def summarise(runs):
    """Pool the paired epochs of all seeds: median and quartiles of the per-pair ratios,
    the ratio of the summed paired epochs, each library's median paired epoch, and its
    NDCG@10 by seed and mean over the seeds."""
    ok = [r for r in runs if r.get("status") == "ok"]
    if not ok:
        return dict(status=runs[0].get("status", "no runs") if runs else "no runs")
    ratios = np.array([x for r in ok for x in r["ratios"]])
    if ratios.size == 0:   # one epoch per seed: no second epoch to pair
        return dict(status="too few epochs for a paired ratio", seeds=len(ok))
    mine = np.array([x for r in ok for x in r["warprec_paired_seconds"]])
    theirs = np.array([x for r in ok for x in r["lightfm_paired_seconds"]])
    ndcg = [r["warprec_quality"]["ndcg@10"] for r in ok]
    ndcg_competitor = [r["lightfm_quality"]["ndcg@10"] for r in ok]
    return dict(
        status="ok", seeds=len(ok), epochs=ok[0]["epochs"], pairs=int(ratios.size),
        ratio_median=float(np.median(ratios)),
        ratio_q25=float(np.quantile(ratios, 0.25)), ratio_q75=float(np.quantile(ratios, 0.75)),
        ratio_of_totals=float(theirs.sum() / mine.sum()),
        warprec_epoch_median=float(np.median(mine)),
        lightfm_epoch_median=float(np.median(theirs)),
        ndcg=(float(np.mean(ndcg)), float(np.mean(ndcg_competitor))),
        ndcg_by_seed=(ndcg, ndcg_competitor),
        ndcg_ratio=float(np.mean(ndcg) / np.mean(ndcg_competitor)))
