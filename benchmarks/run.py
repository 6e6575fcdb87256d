#!/usr/bin/env python
"""warprec vs LightFM 1.17 WARP vs implicit 0.7.3 BPR, side by side in one invocation.

    python benchmarks/run.py                  # everything (about 15 minutes on 2 cores)
    python benchmarks/run.py --quick          # tiny sizes, < 1 minute (used by the tests)
    python benchmarks/run.py --only ml100k --only evaluate --out /tmp/bench

Writes ``results.json``, ``results.md`` and ``quality_vs_time.png`` to ``--out``
(default ``benchmarks/results``), after every section (so an interrupted run keeps what
finished). See benchmarks/README.md for what every figure means.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


import _common  # noqa: E402
import _data  # noqa: E402
import _report  # noqa: E402

SECTIONS = ("host", "ml100k", "synthetic", "evaluate", "recommend", "compile", "scaling")

FULL = dict(repeats=3, ml100k_epoch_cap=None, ml100k_every=5,
            synthetic=dict(n_users=100_000, n_items=40_000, n_interactions=5_000_000,
                           n_eval_users=10_000),
            synthetic_epochs=6, synthetic_every=2, synthetic_bpr_epochs=20,
            synthetic_repeats=3, scaling_epochs=2, scaling_repeats=5,
            context_epochs=10, context_repeats=3,
            eval_users=100_000, eval_items=50_000, eval_repeats=2)
QUICK = dict(repeats=1, ml100k_epoch_cap=3, ml100k_every=2,
             synthetic=dict(n_users=2_000, n_items=1_000, n_interactions=40_000,
                            n_eval_users=500),
             synthetic_epochs=2, synthetic_every=1, synthetic_bpr_epochs=2,
             synthetic_repeats=1, scaling_epochs=1, scaling_repeats=1,
             context_epochs=1, context_repeats=1,
             eval_users=3_000, eval_items=2_000, eval_repeats=1)


# ---------------------------------------------------------------------- configurations
def warprec_defaults(train=None):
    """WARPFactorizer's defaults; an automatic learning rate is resolved for ``train``
    (a fit of zero epochs), so that LightFM can be given the same number."""
    from warprec import WARPFactorizer
    from warprec._plan import resolve_epochs
    p = WARPFactorizer().get_params()
    rate = p["learning_rate"]
    if isinstance(rate, str) and train is not None:
        rate = WARPFactorizer(epochs=0, n_threads=1, early_stopping=False).fit(
            train).learning_rate_
    # (the speed runs train without early stopping: its plain epoch count)
    epochs = resolve_epochs(p["epochs"], early_stopping=False)
    return dict(learning_rate=rate, max_sampled=p["max_sampled"], epochs=epochs)


def ml100k_configs(cap, train):
    from warprec.model import TUNED_PARAMS

    d = warprec_defaults(train)
    tuned = dict(TUNED_PARAMS)
    ref = dict(learning_rate=0.02, max_sampled=10, epochs=60)
    same = lambda p: dict(learning_rate=p["learning_rate"], max_sampled=p["max_sampled"],  # noqa: E731
                          epochs=p["epochs"])
    configs = [
        ("warprec", "warprec defaults", {}),
        ("warprec", "warprec tuned", tuned),
        # identical settings: LightFM's reference has no regularisation, so neither has
        # warprec here; the next row adds warprec's default (automatic) weight decay
        ("warprec", "warprec @ LightFM ref", dict(ref, alpha=0.0)),
        ("warprec", "warprec @ LightFM ref, alpha auto", dict(ref)),
        ("lightfm", "LightFM ref (lr 0.02, 60 ep)", dict(ref)),
        ("lightfm", "LightFM @ warprec defaults", same(d)),
        ("lightfm", "LightFM @ warprec tuned", same(tuned)),
        ("implicit", "implicit BPR ref", dict(learning_rate=0.01, regularization=0.001,
                                              epochs=50)),
    ]
    pairs = [("warprec defaults", "LightFM @ warprec defaults", True),
             ("warprec @ LightFM ref", "LightFM ref (lr 0.02, 60 ep)", True),
             ("warprec @ LightFM ref, alpha auto", "LightFM ref (lr 0.02, 60 ep)", False),
             ("warprec tuned", "LightFM @ warprec tuned", False),
             ("warprec tuned", "LightFM ref (lr 0.02, 60 ep)", False),
             ("warprec defaults", "LightFM ref (lr 0.02, 60 ep)", False),
             ("warprec tuned", "implicit BPR ref", False),
             ("warprec defaults", "implicit BPR ref", False)]
    return _cap(configs, cap), pairs


def synthetic_configs(epochs, bpr_epochs, train):
    from warprec.model import TUNED_PARAMS

    d = dict(warprec_defaults(train), epochs=epochs)
    tuned = dict(TUNED_PARAMS, epochs=epochs)
    configs = [
        ("warprec", "warprec defaults", dict(epochs=epochs)),
        ("warprec", "warprec tuned", tuned),
        ("lightfm", "LightFM @ warprec defaults", d),
        ("implicit", "implicit BPR ref", dict(learning_rate=0.01, regularization=0.001,
                                              epochs=bpr_epochs)),
    ]
    pairs = [("warprec defaults", "LightFM @ warprec defaults", True),
             ("warprec tuned", "LightFM @ warprec defaults", False),
             ("warprec defaults", "implicit BPR ref", False)]
    return configs, pairs


def _cap(configs, cap):
    if not cap:
        return configs
    out = []
    for lib, name, params in configs:
        params = dict(params)
        epochs = params.get("epochs", warprec_defaults()["epochs"])
        params["epochs"] = min(epochs, cap)
        out.append((lib, name, params))
    return out


# ---------------------------------------------------------------------- sections
def run_training(dataset, configs, pairs, *, threads, repeats, every, log):
    import _implicit
    import _lightfm
    import _warprec

    scorer = _common.Scorer(dataset, threads)
    runners = {"warprec": _warprec.train, "lightfm": _lightfm.train,
               "implicit": _implicit.train_bpr}
    runs = []
    for rep in range(repeats):
        shift = rep % len(configs)
        for lib, name, params in configs[shift:] + configs[:shift]:   # alternate the order
            epochs = params.get("epochs", warprec_defaults()["epochs"])
            schedule = _common.eval_schedule(epochs, every)
            time.sleep(_common.SETTLE_SECONDS)
            try:
                run = runners[lib](dataset, scorer, params, n_threads=threads, seed=rep,
                                   eval_epochs=schedule, name=name)
            except Exception as exc:  # noqa: BLE001 - keep the other rows
                run = dict(library=lib, config=name, params=params, status="error",
                           error=f"{exc.__class__.__name__}: {exc}",
                           traceback=traceback.format_exc())
            if run.get("status") == "ok":
                last = run["curve"][-1]
                log(f"  [{dataset.name}] {name} seed {rep}: {run['epochs']} epochs, "
                    f"{run['seconds_per_epoch']:.4f} s/epoch, NDCG@10 {last['ndcg@10']:.4f}, "
                    f"Recall@20 {last['recall@20']:.4f}")
            else:
                log(f"  [{dataset.name}] {name}: {run.get('status')} {run.get('error', '')}")
            runs.append(run)
    summary = _report.summarise(runs)
    comparisons = _report.compare(summary, [(a, b) for a, b, _ in pairs], runs)
    flags = {(a, b): same for a, b, same in pairs}
    for c in comparisons:
        c["identical_settings"] = flags[(c["warprec"], c["competitor"])]
    return dict(status="ok", dataset=dataset.describe(), repeats=repeats, threads=threads,
                runs=runs, summary=summary, comparisons=comparisons,
                paired=run_paired(dataset, scorer, configs, pairs, threads=threads,
                                  repeats=repeats, log=log),
                overhead_parts=_warprec.overhead_parts(dataset, threads))


#: The paired runs' seeds start here: other seeds than the separate runs' (0, 1, ...), so
#: that the quality target can pool both runs' seeds.
PAIRED_SEEDS = 100


def run_paired(dataset, scorer, configs, pairs, *, threads, repeats, log):
    """The identical-settings pairs against LightFM once more, the libraries taking turns
    of two epochs (``_paired.py``), ``repeats`` seeds each."""
    import _paired

    params = {name: (lib, p) for lib, name, p in configs}
    out = []
    for mine, theirs, same in pairs:
        if not same or params[theirs][0] != "lightfm":
            continue
        runs = []
        for rep in range(repeats):
            try:
                runs.append(_paired.run(dataset, scorer, params[mine][1], params[theirs][1],
                                        n_threads=threads, seed=PAIRED_SEEDS + rep))
            except Exception as exc:  # noqa: BLE001 - keep the other rows
                runs.append(dict(status="error", error=f"{exc.__class__.__name__}: {exc}",
                                 traceback=traceback.format_exc()))
        summary = _paired.summarise(runs)
        log(f"  [{dataset.name}] paired epochs, {mine} vs {theirs}: "
            + (f"median ratio {summary['ratio_median']:.2f}x "
               f"(quartiles {summary['ratio_q25']:.2f}-{summary['ratio_q75']:.2f})"
               if summary["status"] == "ok" else summary["status"]))
        out.append(dict(warprec=mine, competitor=theirs, runs=runs, **summary))
    return out


def ml100k_notes(sec):
    notes = []
    for row in sec["summary"]:
        for lib, ref in _report.REFERENCE.items():
            if row["library"] == lib and "ref" in row["config"] and row["status"] == "ok":
                full = row["epochs"] == (60 if lib == "lightfm" else 50)
                notes.append(
                    f"Reference check, {ref['setting']}: NDCG@10 here {row['ndcg']:.4f} "
                    f"(seeds {row['ndcg_by_seed']}) vs {ref['ndcg']} in "
                    f"../shared/data/README.md; fit {row['fit_seconds']:.2f} s here vs "
                    f"{ref['seconds']} s there"
                    + ("" if full else " (epochs capped by --quick: not comparable)") + ".")
    notes.append(
        "implicit is trained one iteration per fit() call with a numpy Generator as "
        "random_state: with an int seed implicit re-derives the same sampler seed on every "
        "call, so 50 one-iteration calls replay one iteration's samples 50 times (NDCG@10 "
        "0.178 instead of 0.240 here).")
    notes.append(
        "Protocol: every library is trained on the same CSR matrix and scored by "
        "warprec.metrics.evaluate_factors (train items excluded, binary NDCG@10 with the "
        "ideal DCG of min(k, |test_u|), Recall@20 = hits / |test_u|). "
        + sec["dataset"].get("unknown_item_handling", "") + f" ({sec['dataset'].get('test_only_items')} "
        f"such items, {sec['dataset'].get('test_rows_on_unknown_items')} test rows).")
    return notes


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes for a smoke test (< 60 s); skips the compile probe "
                             "unless asked for with --only compile")
    parser.add_argument("--only", action="append", choices=SECTIONS,
                        help="run only this section (repeatable)")
    parser.add_argument("--out", default=str(HERE / "results"), help="output folder")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, help="seeds per ML-100K config (default 3)")
    parser.add_argument("--synthetic-interactions", type=int,
                        help="size of the synthetic set (default 5,000,000)")
    parser.add_argument("--synthetic-epochs", type=int, help="epochs on the synthetic set")
    args = parser.parse_args(argv)

    size = dict(QUICK if args.quick else FULL)
    size["synthetic"] = dict(size["synthetic"])
    if args.repeats:
        size["repeats"] = args.repeats
    if args.synthetic_interactions:
        s = size["synthetic"]
        scale = args.synthetic_interactions / s["n_interactions"]
        s["n_interactions"] = args.synthetic_interactions
        s["n_users"] = max(int(s["n_users"] * scale), 100)
    if args.synthetic_epochs:
        size["synthetic_epochs"] = args.synthetic_epochs
    sections = args.only or [s for s in SECTIONS if not (args.quick and s == "compile")]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    threads = args.threads

    def log(msg):
        print(msg, flush=True)

    results = dict(meta=_meta(args, sections, size), notes=[])

    def save(final=False):
        """JSON and markdown after every section (an interrupted run keeps them), the
        plot after the training sections of a full run and at the end."""
        results["meta"]["loadavg_end"] = _loadavg()
        results["targets"] = _report.check_targets(results)
        _report.write_json(results, out / "results.json")
        _report.write_markdown(results, out / "results.md")
        if final:
            _report.plot(results, out / "quality_vs_time.png")

    import _warprec

    results["meta"]["warmup_seconds"] = _warprec.warm_up(threads)
    log(f"warprec warm-up (kernel load/compile): {results['meta']['warmup_seconds']:.2f} s")
    if "host" in sections:
        import _host

        results["host"] = _safe(lambda: _host.measure(threads, quick=args.quick))
        log(f"host check, efficiency at {threads} threads: "
            f"{_short(results['host'], 'efficiency')}")
        save()
    synthetic = None

    def get_synthetic():
        nonlocal synthetic
        if synthetic is None:
            tic = _common.now()
            synthetic = _data.make_synthetic(**size["synthetic"])
            log(f"synthetic set generated in {_common.now() - tic:.1f} s: {synthetic.describe()}")
        return synthetic

    if "ml100k" in sections:
        log("== ML-100K")
        ds = _data.load_ml100k()
        if ds is None:
            results["ml100k"] = dict(status=f"skipped: split not found at {_data.ML100K_SPLIT}")
        else:
            configs, pairs = ml100k_configs(size["ml100k_epoch_cap"], ds.train)
            sec = run_training(ds, configs, pairs, threads=threads, repeats=size["repeats"],
                               every=size["ml100k_every"], log=log)
            sec["notes"] = ml100k_notes(sec)
            results["ml100k"] = sec
        save()
    if "synthetic" in sections:
        log("== synthetic")
        ds = get_synthetic()
        configs, pairs = synthetic_configs(size["synthetic_epochs"],
                                           size["synthetic_bpr_epochs"], ds.train)
        sec = run_training(ds, configs, pairs, threads=threads,
                           repeats=size["synthetic_repeats"], every=size["synthetic_every"],
                           log=log)
        sec["notes"] = [f"Quality is measured on a fixed random subset of "
                        f"{sec['dataset']['n_eval_users']:,} test users; every user's test "
                        f"items are a random 20% (floor) of its interactions."]
        results["synthetic"] = sec
        save(final=not args.quick)
    if "scaling" in sections:
        log("== thread scaling")
        ds = get_synthetic()
        results["scaling"] = _warprec.scaling(ds, epochs=size["scaling_epochs"],
                                              repeats=size["scaling_repeats"], seed=0,
                                              thread_counts=(1, threads))
        log(f"  synthetic, warprec 1 -> {threads} threads: "
            f"{results['scaling']['ratio_paired_median']:.3f}x (median of paired runs)")
        results["scaling"]["launch_latency"] = _warprec.launch_latency(threads)
        log(f"  parallel launch (epoch of 100 positives): "
            f"{results['scaling']['launch_latency']['median_kernel_seconds']}")
        small = _data.load_ml100k()
        if small is not None:   # context: a small catalogue, warprec and LightFM
            import _lightfm

            kw = dict(epochs=size["context_epochs"], repeats=size["context_repeats"], seed=0,
                      thread_counts=(1, threads))
            ctx = dict(warprec=_warprec.scaling(small, **kw), lightfm=_lightfm.scaling(small, **kw))
            results["scaling"]["ml100k_context"] = ctx
            log("  ML-100K 1 -> {} threads: warprec {}, LightFM {}".format(
                threads, _short(ctx["warprec"], "ratio_median"),
                _short(ctx["lightfm"], "ratio_median")))
        save()
    prob = None
    if "evaluate" in sections or "recommend" in sections:
        import _scoring

        tic = _common.now()
        prob = _scoring.problem(size["eval_users"], size["eval_items"])
        log(f"scoring problem {size['eval_users']} x {size['eval_items']} built in "
            f"{_common.now() - tic:.1f} s")
    if "evaluate" in sections:
        log("== evaluation speed")
        results["evaluate"] = _safe(lambda: _scoring.evaluation_speed(
            prob, n_threads=threads, repeats=size["eval_repeats"]))
        log(f"  {_short(results['evaluate'], 'best_seconds')}")
        save()
    if "recommend" in sections:
        log("== recommend speed")
        results["recommend"] = _safe(lambda: _scoring.recommend_speed(
            prob, n_threads=threads, repeats=size["eval_repeats"]))
        log(f"  warprec users/s: {_short(results['recommend'], 'warprec_users_per_second')}")
        save()
    if "compile" in sections:
        log("== compile time (fresh processes)")
        import _compile

        results["compile"] = _safe(lambda: _compile.measure(threads))
        log(f"  compile {_short(results['compile'], 'compile_seconds_total')} s, cached "
            f"{_short(results['compile'], 'cache_load_seconds_total')} s")
    elif args.quick:
        results["compile"] = dict(status="skipped in --quick (run --only compile)")
    save(final=True)
    for t in results["targets"]:
        met = {True: "met", False: "NOT met",
               None: "not valid" if t["measured"] is not None else "not run"}[t["met"]]
        log(f"target {t['target']}: {t['goal']} -> {t['measured']} ({met})")
    log(f"wrote {out / 'results.json'}, {out / 'results.md'}, {out / 'quality_vs_time.png'}")
    return 0


def _safe(fn):
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001
        return dict(status=f"error: {exc.__class__.__name__}: {exc}",
                    traceback=traceback.format_exc())


def _short(d, key):
    v = d.get(key)
    return d.get("status") if v is None else v


def _loadavg():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _meta(args, sections, size):
    versions = {"python": platform.python_version()}
    for mod in ("warprec", "numba", "numpy", "scipy", "lightfm", "implicit"):
        try:
            versions[mod] = getattr(__import__(mod), "__version__", "?")
        except Exception:  # noqa: BLE001
            versions[mod] = "not installed"
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = _loadavg()
    return dict(command="python benchmarks/run.py " + " ".join(sys.argv[1:]),
                date=_dt.datetime.now().isoformat(timespec="seconds"), cpu=cpu,
                cores=os.cpu_count(), threads=args.threads, quick=args.quick,
                sections=list(sections), sizes=size, versions=versions,
                loadavg_start=load, busy=bool(load and load[0] > 1.0),
                numba_cache_dir=os.environ.get("NUMBA_CACHE_DIR"),
                memory_method="peak RSS from psutil, sampled every 2 ms in a background "
                              "thread; 'increase' = peak minus RSS when the measured call "
                              "started (evaluation checkpoints excluded)")


if __name__ == "__main__":
    sys.exit(main())
