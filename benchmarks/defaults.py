"""Do warprec's defaults carry over? Defaults against a documented grid and LightFM's grid,
on every data set of the family (``_family.py``), with the same evaluator for all.

    .venv/bin/python benchmarks/defaults.py                       # everything
    .venv/bin/python benchmarks/defaults.py --data ml100k --part grid
    .venv/bin/python benchmarks/defaults.py --report              # tables from saved runs

Each run appends one JSON line to ``--out`` (``benchmarks/results/defaults.jsonl``):
data set, library, configuration, seed, and the quality curve (NDCG@10, Recall@20 at
checkpoint epochs, training seconds excluded evaluation). A grid point is a configuration
*and* an epoch count: a run to ``--max-epochs`` with checkpoints every 5 epochs gives all
its epoch counts at once. ``--report`` writes ``defaults.md``: for every data set the
defaults, the best grid point, their ratio (the bar: >= 0.97) and LightFM's best grid point.

The best of a grid is chosen on one seed, so its score is biased upwards (the winner's
curse: the maximum of many noisy scores). Part ``remeasure`` trains the chosen warprec and
LightFM grid points again with fresh seeds (1 and 2, not the seed they were chosen on), for
their chosen epoch counts, and the report gives their mean beside the chosen score.

Quality is measured on a fixed random sample of test users on the large sets (10,000 on
amazon-book, 5,000 on the synthetic sets; the same for every library and configuration);
ml100k and ml-latest-small use all of theirs.

Part ``tune`` runs ``warprec.tune`` with its default space (both losses; ``--clock work``:
its budget counted in work, the same search on a loaded machine as on a quiet one); parts
``tune-warp`` and ``tune-ccl`` with ``warprec.tuning.WARP_SEARCH_SPACE`` or
``CCL_SEARCH_SPACE`` alone. Their rows are left out of the report's table
(benchmarks/README.md quotes them).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _family  # noqa: E402
from _common import Scorer  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "defaults.jsonl"
N_COMPONENTS = 64
#: The documented warprec grid (with WARPFactorizer's other parameters at their defaults,
#: early stopping off); every configuration runs to --max-epochs with checkpoints.
GRID = dict(learning_rate=(0.02, 0.05), alpha=(0.0, 0.003, 0.01, 0.03), max_sampled=(30, 100))
#: LightFM 1.17 WARP grid (Adagrad, d = 64, no regularisation).
LIGHTFM_GRID = dict(learning_rate=(0.02, 0.05), max_sampled=(10, 100), alpha=(0.0,))
#: LightFM on the large sets (a 60-epoch run at max_sampled 100 takes minutes there).
LIGHTFM_SMALL_GRID = dict(learning_rate=(0.05,), max_sampled=(10, 100), alpha=(0.0,))
#: The grid on the largest set (each point costs minutes there).
SMALL_GRID = dict(learning_rate=(0.02, 0.05), alpha=(0.0, 0.003), max_sampled=(100,))
#: Test users scored per checkpoint on the large sets (a fixed random sample per set).
N_EVAL_USERS = {"amazon-book": 10_000, "synthetic-longtail": 5_000, "synthetic-dense": 5_000,
                "synthetic-5m": 5_000, "synthetic-short": 5_000}
CHECK_EVERY = 5
#: The parts whose runs make up warprec's grid and LightFM's (not their re-measures).
GRID_PARTS = ("grid", "small-grid")
#: The parts that train the defaults with a change or two, for their own epochs.
DEFAULTS_PARTS = ("defaults", "early-stopping", "refit", "long")
LIGHTFM_PARTS = ("lightfm", "lightfm-small")


def grid_points(grid):
    keys = list(grid)
    return [dict(zip(keys, values)) for values in itertools.product(*grid.values())]


def _record(out, **row):
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "a") as fh:
        fh.write(json.dumps(row) + "\n")


def run_warprec(ds, scorer, params, *, seed, max_epochs, n_threads, every=CHECK_EVERY):
    """Fit to ``max_epochs`` (or ``params['epochs']``) with checkpoints; returns the curve
    and, with early stopping, where it stopped."""
    from warprec import WARPFactorizer

    params = dict(params)
    params.setdefault("n_components", N_COMPONENTS)
    if max_epochs is not None:
        params.setdefault("epochs", max_epochs)
    model = WARPFactorizer(n_threads=n_threads, random_state=seed, **params)
    curve, clock = [], dict(eval=0.0)
    tic = time.perf_counter()

    def callback(m, info):
        epoch = info["epoch"] + 1
        if epoch % every == 0:
            t = time.perf_counter()
            curve.append(dict(epoch=epoch, seconds=t - tic - clock["eval"],
                              **scorer(m.user_factors_, m.item_factors_, m.item_biases_)))
            clock["eval"] += time.perf_counter() - t

    model.fit(ds.train, callback=callback)
    seconds = time.perf_counter() - tic - clock["eval"]
    final = dict(epoch=model.epochs_done_, seconds=seconds,
                 **scorer(model.user_factors_, model.item_factors_, model.item_biases_))
    extra = {}
    for name in ("best_epoch_", "alpha_", "learning_rate_"):
        if hasattr(model, name):
            value = getattr(model, name)
            extra[name.rstrip("_")] = value.item() if hasattr(value, "item") else value
    return dict(curve=curve, final=final, **extra)


def run_tune(ds, scorer, params, *, seed, max_epochs, n_threads):
    """``warprec.tune`` with ``params['time_budget']`` seconds; its refit model scored."""
    from warprec import tune
    from warprec.tuning import CCL_SEARCH_SPACE, WARP_SEARCH_SPACE

    space = {"ccl": CCL_SEARCH_SPACE, "warp": WARP_SEARCH_SPACE,
             None: None}[params.get("search_space")]
    tic = time.perf_counter()
    result = tune(ds.train, time_budget=params["time_budget"], n_threads=n_threads,
                  random_state=seed, search_space=space, clock=params.get("clock", "wall"))
    seconds = time.perf_counter() - tic
    model = result.best_model
    final = dict(epoch=model.epochs_done_, seconds=seconds,
                 **scorer(model.user_factors_, model.item_factors_, model.item_biases_))
    best = {k: (v.item() if hasattr(v, "item") else v) for k, v in result.best_params.items()}
    trials = result.trials
    extra = dict(best_trial=int(getattr(result, "best_trial", -1)),
                 defaults_validation=float(trials.loc[trials["trial"] == 0, "score"].max()),
                 best_validation=float(trials["score"].max()))
    return dict(curve=[], final=final, best_params=best, validation=result.best_score,
                trials=int(trials["trial"].nunique()), **extra)


def run_lightfm(ds, scorer, params, *, seed, max_epochs, n_threads, every=CHECK_EVERY):
    from lightfm import LightFM

    model = LightFM(no_components=N_COMPONENTS, loss="warp", learning_schedule="adagrad",
                    learning_rate=params["learning_rate"], max_sampled=params["max_sampled"],
                    item_alpha=params["alpha"], user_alpha=params["alpha"], random_state=seed)
    interactions = ds.train.tocoo()
    curve, seconds = [], 0.0
    for epoch in range(1, max_epochs + 1):
        tic = time.perf_counter()
        model.fit_partial(interactions, epochs=1, num_threads=n_threads)
        seconds += time.perf_counter() - tic
        if epoch % every == 0:
            curve.append(dict(epoch=epoch, seconds=seconds,
                              **scorer(model.user_embeddings, model.item_embeddings,
                                       model.item_biases)))
    return dict(curve=curve, final=curve[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", action="append", choices=_family.NAMES)
    parser.add_argument("--part", action="append",
                        choices=(*DEFAULTS_PARTS, "grid", "small-grid", "lightfm",
                                 "lightfm-small", "tune", "tune-warp", "tune-ccl",
                                 "remeasure"))
    parser.add_argument("--time-budget", type=float, default=120.0,
                        help="seconds of warprec.tune per data set (part 'tune')")
    parser.add_argument("--clock", choices=("wall", "work"), default="wall",
                        help="what tune's budget counts (part 'tune'): wall time, or work "
                             "at the reference speed, the same search on a loaded machine")
    parser.add_argument("--max-epochs", type=int, default=60)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--first-seed", type=int, default=0,
                        help="run seeds first-seed .. first-seed + seeds - 1")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--report", action="store_true")
    args = parser.parse_args(argv)
    if args.report:
        report(args.out)
        return
    parts = args.part or ["defaults", "early-stopping", "long", "grid", "lightfm", "tune"]
    for name in args.data or _family.NAMES:
        ds = _family.load(name, n_eval_users=N_EVAL_USERS.get(name, 0))
        if ds is None:
            print(f"{name}: data missing, skipped", flush=True)
            continue
        scorer = Scorer(ds, args.threads)
        for part in parts:
            if part == "remeasure":
                remeasure(ds, scorer, args)
                continue
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                if part in DEFAULTS_PARTS:
                    points = [_defaults_part(part, ds)]
                    run = run_warprec
                elif part in ("tune", "tune-warp", "tune-ccl"):
                    points = [dict(time_budget=args.time_budget)]
                    if args.clock != "wall":
                        points[0]["clock"] = args.clock
                    if part != "tune":   # (not in the report's table: see README)
                        points[0]["search_space"] = part.split("-")[1]
                    run = run_tune
                elif part in ("grid", "small-grid"):
                    grid = GRID if part == "grid" else SMALL_GRID
                    points = [dict(p, early_stopping=False) for p in grid_points(grid)]
                    run = run_warprec
                else:
                    points = grid_points(LIGHTFM_GRID if part == "lightfm"
                                         else LIGHTFM_SMALL_GRID)
                    run = run_lightfm
                for params in points:
                    try:
                        result = run(ds, scorer, params, seed=seed, n_threads=args.threads,
                                 max_epochs=None if part in DEFAULTS_PARTS
                                 else args.max_epochs)
                    except TypeError as exc:  # an option this version does not have
                        print(f"{name} {part} {params}: {exc}", flush=True)
                        continue
                    _record(args.out, data=name, part=part, params=params, seed=seed,
                            threads=args.threads, shape=_family.shape(ds), **result)
                    f = result["final"]
                    print(f"{name:18s} {part:8s} {json.dumps(params):80s} "
                          f"ep {f['epoch']:3d} ndcg@10 {f['ndcg@10']:.4f} "
                          f"r@20 {f['recall@20']:.4f} {f['seconds']:.1f}s", flush=True)
    report(args.out)


def _long_epochs(ds):
    """1.5 times the defaults' epoch count on ``ds``: of ``epochs="auto"``'s maximum with
    early stopping where ``early_stopping="auto"`` validates, else of its plain count."""
    from warprec import _validation
    from warprec._plan import resolve_epochs

    return 3 * resolve_epochs("auto", _validation.auto_early_stopping(ds.train)) // 2


def common_checkpoints(curves):
    """Each curve (a list per run) cut to the checkpoints that every run reached: early
    stopping ends runs at different epochs."""
    n = min(len(curve) for curve in curves)
    return [list(curve)[:n] for curve in curves]


def _defaults_part(part, ds):
    """The WARPFactorizer keyword arguments of a part of :data:`DEFAULTS_PARTS` on
    ``ds``: "long" trains 1.5 times the default epochs."""
    return {"defaults": {}, "early-stopping": dict(early_stopping=True),
            "refit": dict(early_stopping="refit"),
            "long": dict(epochs=_long_epochs(ds))}[part]


#: Seeds of part ``remeasure`` (the grids ran with seed 0).
REMEASURE_SEEDS = (1, 2)


def _load_rows(out):
    """The saved runs; a rerun of a data set, part, configuration and seed replaces it."""
    rows = {}
    if Path(out).exists():
        for line in open(out):
            row = json.loads(line)
            rows[row["data"], row["part"], json.dumps(row["params"], sort_keys=True),
                 row["seed"]] = row
    return list(rows.values())


def remeasure(ds, scorer, args, metric="ndcg@10"):
    """Train the best warprec and LightFM grid points of ``ds`` (chosen on the saved runs)
    again with :data:`REMEASURE_SEEDS`, for their chosen epoch counts."""
    rows = [r for r in _load_rows(args.out) if r["data"] == ds.name]
    chosen = (("grid", _best([r for r in rows if r["part"] in GRID_PARTS], metric),
               run_warprec),
              ("lightfm", _best([r for r in rows if r["part"] in LIGHTFM_PARTS], metric),
               run_lightfm))
    for library, best, run in chosen:
        if best is None:
            continue
        params, epochs = dict(best[1]), best[2]
        for seed in REMEASURE_SEEDS:
            result = run(ds, scorer, params, seed=seed, n_threads=args.threads,
                         max_epochs=epochs)
            _record(args.out, data=ds.name, part=f"{library}-remeasure",
                    params=dict(params, epochs=epochs), seed=seed, threads=args.threads,
                    shape=_family.shape(ds), **result)
            f = result["final"]
            print(f"{ds.name:18s} {library}-remeasure {json.dumps(params):60s} ep {epochs:3d} "
                  f"seed {seed} ndcg@10 {f['ndcg@10']:.4f}", flush=True)


def _best(rows, metric):
    """Best (value, params, epoch, seconds) over the rows' checkpoints."""
    best = None
    for row in rows:
        for point in row["curve"] + [row["final"]]:
            if best is None or point[metric] > best[0]:
                best = (point[metric], row["params"], point["epoch"], point["seconds"])
    return best


def report(out, metric="ndcg@10"):
    if not Path(out).exists():
        print(f"no runs in {out}")
        return
    rows = _load_rows(out)
    lines = [f"# Defaults against the grid ({metric}; Recall@20 beside it)", "",
             "Re-measured: the chosen grid point trained again with seeds "
             f"{' and '.join(map(str, REMEASURE_SEEDS))} (mean), for its chosen epochs.", "",
             "| data | shape (users x items, positives, per item) | defaults | epochs run "
             "| best warprec grid point | re-measured | ratio (chosen; re-measured) "
             "| LightFM best grid point | re-measured | defaults / LightFM (chosen; re-measured) "
             "| defaults + early stopping (epochs) | defaults, 1.5x epochs (final / peak; epochs) "
             "| warprec.tune (budget; epochs) | tuned / best grid (chosen; re-measured) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name in _family.NAMES:
        mine = [r for r in rows if r["data"] == name]
        if not mine:
            continue
        shape = mine[0]["shape"]
        shape_text = (f"{shape['n_users']:,} x {shape['n_items']:,}, {shape['positives']:,}, "
                      f"{shape['per_item']:.1f}")
        defaults = [r for r in mine if r["part"] == "defaults"]
        d = np.mean([r["final"][metric] for r in defaults]) if defaults else None
        d_r = np.mean([r["final"]["recall@20"] for r in defaults]) if defaults else None
        d_ep = ",".join(str(r["final"]["epoch"]) for r in defaults)
        grid = _best([r for r in mine if r["part"] in GRID_PARTS], metric)
        lfm = _best([r for r in mine if r["part"] in LIGHTFM_PARTS], metric)
        # the current definition: the epochs alone, the most of them (runs with other
        # options or fewer epochs are older ones; see _long_epochs)
        long = [r for r in mine if r["part"] == "long" and list(r["params"]) == ["epochs"]]
        long = [r for r in long if r["params"]["epochs"] == max(q["params"]["epochs"]
                                                                for q in long)]
        stopped = [r for r in mine if r["part"] == "early-stopping"]
        tuned = [r for r in mine if r["part"] == "tune"]

        def cell(best):
            if best is None:
                return "-"
            p = ", ".join(f"{k}={v}" for k, v in best[1].items() if k != "early_stopping")
            return f"{best[0]:.4f} ({p}, {best[2]} ep, {best[3]:.0f} s)"

        def again(library):
            runs = [r for r in mine if r["part"] == f"{library}-remeasure"]
            return np.mean([r["final"][metric] for r in runs]) if runs else None

        def ratios(value, chosen, remeasured):
            if value is None or chosen is None:
                return "-"
            text = f"{value / chosen[0]:.3f}"
            return text + (f"; {value / remeasured:.3f}" if remeasured else "")

        grid_again, lfm_again = again("grid"), again("lightfm")
        ratio = ratios(d, grid, grid_again)
        vs_lfm = ratios(d, lfm, lfm_again)
        grid_again_cell = f"{grid_again:.4f}" if grid_again else "-"
        lfm_again_cell = f"{lfm_again:.4f}" if lfm_again else "-"
        long_cell = "-"
        if long:
            curve = np.mean(common_checkpoints([[p[metric] for p in r["curve"]]
                                                for r in long]), axis=0)
            final = np.mean([r["final"][metric] for r in long])
            long_cell = (f"{final:.4f} / {max(curve.max(initial=0.0), final):.4f} ("
                         + ",".join(str(r["final"]["epoch"]) for r in long) + ")")
        dcell = f"{d:.4f} (R@20 {d_r:.4f})" if d is not None else "-"
        es_cell = "-"
        if stopped:
            es_cell = (f"{np.mean([r['final'][metric] for r in stopped]):.4f} ("
                       + ",".join(str(r["final"]["epoch"]) for r in stopped) + ")")
        tune_cell = tune_ratio = "-"
        if tuned:
            tuned.sort(key=lambda r: r["params"]["time_budget"])
            tune_cell = ", ".join(f"{r['final'][metric]:.4f} ({r['params']['time_budget']:.0f} s; "
                                  f"{r['final']['epoch']} ep)" for r in tuned)
            if grid:
                tune_ratio = ", ".join(ratios(r["final"][metric], grid, grid_again)
                                       for r in tuned)
        lines.append(f"| {name} | {shape_text} | {dcell} | {d_ep} | {cell(grid)} | "
                     f"{grid_again_cell} | {ratio} | {cell(lfm)} | {lfm_again_cell} | "
                     f"{vs_lfm} | {es_cell} | {long_cell} | {tune_cell} | {tune_ratio} |")
    text = "\n".join(lines) + "\n"
    Path(out).with_suffix(".md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
