"""Quality options against the defaults on the data family: option x data set -> NDCG@10,
Recall@20 and training seconds, with LightFM's re-measured best grid point beside them.

    .venv/bin/python benchmarks/ablation.py                        # every option and set
    .venv/bin/python benchmarks/ablation.py --data amazon-book --option "d=128, violators"
    .venv/bin/python benchmarks/ablation.py --report               # tables from saved runs

Every option is ``WARPFactorizer`` keyword arguments on top of the defaults (d = 64 unless
an option sets ``n_components``), trained for its own number of epochs (the estimator's
default unless it sets ``epochs``) with seeds 1 and 2 on 2 threads; the data sets, splits,
evaluator and test-user samples are those of ``defaults.py`` (``_family.py``,
``_common.Scorer``). LightFM's column
is its best grid point of ``defaults.py`` re-measured with the same seeds (part
``remeasure`` there), read from ``results/defaults.jsonl``. implicit has no WARP loss:
``--implicit`` trains its ALS and BPR over the small grids of ``IMPLICIT_GRIDS`` (d = 64,
its default iterations, the same seeds and threads), and the report gives the best grid
point (mean over the seeds) of each. Runs append to ``results/ablation.jsonl`` (a rerun
of a data set, option and seed replaces the earlier one in the report), and the report is
``results/ablation.md``. ``--all-users`` scores every test user of amazon-book and the
synthetic sets instead of the fixed sample (recorded as its own data set name).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _family  # noqa: E402
from _common import Scorer  # noqa: E402
from defaults import N_EVAL_USERS, OUT as DEFAULTS_OUT, _load_rows, run_warprec  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
OUT = RESULTS / "ablation.jsonl"
#: The options measured: name -> WARPFactorizer keyword arguments.
OPTIONS = {
    "defaults": {},
    "violators": dict(max_violators=10),
    "violators, 300 draws": dict(max_violators=10, max_sampled=300),
    "d=128, violators": dict(n_components=128, max_violators=10, max_sampled=300, epochs=15),
    "ccl": dict(loss="ccl", epochs=40),
    "ccl, d=128": dict(loss="ccl", n_components=128, epochs=30),
    "ccl, dropout": dict(loss="ccl", epochs=40, dropout=0.1),
    "ccl, d=128, dropout": dict(loss="ccl", n_components=128, epochs=30, dropout=0.1),
    "softmax": dict(loss="softmax", epochs=40),
    "ccl, early stopping, no drop": dict(loss="ccl", early_stopping=True,
                                         learning_rate_drop=1.0),
    "ccl, early stopping": dict(loss="ccl", early_stopping=True),
}
#: implicit's models and the grid points tried (their other parameters at implicit's
#: defaults: ALS 15 iterations, BPR 100).
IMPLICIT_GRIDS = {
    "implicit ALS": [dict(alpha=a, regularization=r) for a in (1.0, 10.0, 40.0, 100.0)
                     for r in (0.01, 0.1, 1.0)],
    "implicit BPR": [dict(learning_rate=lr, regularization=0.01) for lr in (0.01, 0.05)],
}
DATA = ("ml100k", "ml-latest-small", "amazon-book", "synthetic-longtail", "synthetic-dense",
        "synthetic-short")
SEEDS = (1, 2)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", action="append", choices=_family.NAMES)
    parser.add_argument("--option", action="append", choices=tuple(OPTIONS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--all-users", action="store_true")
    parser.add_argument("--implicit", action="store_true",
                        help="train implicit's ALS and BPR grids instead of the options")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--report", action="store_true", help="only write the report")
    args = parser.parse_args(argv)
    if not args.report:
        for name in args.data or DATA:
            sample = N_EVAL_USERS.get(name, 0)    # 0: every test user anyway
            ds = _family.load(name, n_eval_users=0 if args.all_users else sample)
            if ds is None:
                print(f"{name}: data missing, skipped", flush=True)
                continue
            label = name + (" (all users)" if args.all_users and sample else "")
            scorer = Scorer(ds, args.threads)
            if args.implicit:
                for option, grid in IMPLICIT_GRIDS.items():
                    for params in grid:
                        for seed in SEEDS:
                            f = run_implicit(ds, scorer, option, params, seed, args.threads)
                            _append(args.out, dict(data=label, option=option, params=params,
                                                   seed=seed, threads=args.threads, final=f))
                continue
            for option in args.option or OPTIONS:
                params = dict(OPTIONS[option])
                for seed in SEEDS:
                    result = run_warprec(ds, scorer, params, seed=seed, max_epochs=None,
                                         n_threads=args.threads, every=10**9)
                    f = result["final"]
                    _append(args.out, dict(data=label, option=option, params=params,
                                           seed=seed, threads=args.threads, final=f))
    report(args.out)


def _append(out, row):
    with open(out, "a") as fh:
        fh.write(json.dumps(row) + "\n")
    f = row["final"]
    print(f"{row['data']:30s} {row['option']:24s} {json.dumps(row['params'])} seed "
          f"{row['seed']} ep {f['epoch']:3d} ndcg@10 {f['ndcg@10']:.4f} "
          f"r@20 {f['recall@20']:.4f} {f['seconds']:.1f} s", flush=True)


def run_implicit(ds, scorer, option, params, seed, n_threads):
    """One implicit model (``option``: "implicit ALS" or "implicit BPR") with ``params``
    on top of implicit's defaults, d = 64, BLAS on one thread: its scores and seconds."""
    from _common import N_COMPONENTS, blas_limit

    if option == "implicit ALS":
        from implicit.cpu.als import AlternatingLeastSquares as Model
    else:
        from implicit.cpu.bpr import BayesianPersonalizedRanking as Model
    # (a Generator: implicit derives its sampler's seed from it)
    model = Model(factors=N_COMPONENTS, num_threads=n_threads,
                  random_state=np.random.default_rng(seed), **params)
    with blas_limit(1):
        tic = time.perf_counter()
        model.fit(ds.train, show_progress=False)
        seconds = time.perf_counter() - tic
    return dict(epoch=model.iterations, seconds=seconds,
                **scorer(model.user_factors, model.item_factors, None))


def _lightfm(name):
    """Mean NDCG@10, Recall@20 of LightFM's re-measured best grid point on ``name``."""
    runs = [r for r in _load_rows(DEFAULTS_OUT)
            if r["data"] == name and r["part"] == "lightfm-remeasure"]
    if not runs:
        return None
    return (np.mean([r["final"]["ndcg@10"] for r in runs]),
            np.mean([r["final"]["recall@20"] for r in runs]), runs[0]["params"])


def _best_grid_point(runs):
    """The cell of the grid point with the best mean NDCG@10 over its seeds."""
    points = {}
    for r in runs:
        points.setdefault(json.dumps(r["params"]), []).append(r["final"])
    if not points:
        return "-"
    key, finals = max(points.items(), key=lambda kv: np.mean([f["ndcg@10"] for f in kv[1]]))
    params = ", ".join(f"{k}={v}" for k, v in json.loads(key).items())
    return (f"{np.mean([f['ndcg@10'] for f in finals]):.4f} / "
            f"{np.mean([f['recall@20'] for f in finals]):.4f} ({params}), "
            f"{np.mean([f['seconds'] for f in finals]):.0f} s")


def report(out):
    if not Path(out).exists():
        print(f"no runs in {out}")
        return
    rows = {}
    for line in open(out):
        row = json.loads(line)
        grid_point = json.dumps(row["params"]) if row["option"] in IMPLICIT_GRIDS else ""
        rows[row["data"], row["option"], row["seed"], grid_point] = row
    names = list(dict.fromkeys(key[0] for key in rows))
    lines = ["# Quality options against the defaults",
             "",
             "NDCG@10 / Recall@20, mean of seeds " + " and ".join(map(str, SEEDS)) +
             ", and training seconds (2 threads); in brackets the ratio of NDCG@10 to the "
             "defaults'. Options: " + "; ".join(f"`{k}` = {json.dumps(v)}"
                                                for k, v in OPTIONS.items() if v) + ".",
             "",
             "| data | " + " | ".join(OPTIONS) + " | LightFM best grid point, re-measured | "
             + " | ".join(f"{name}, best grid point" for name in IMPLICIT_GRIDS) + " |",
             "|---|" + "---|" * (len(OPTIONS) + 1 + len(IMPLICIT_GRIDS))]
    for name in names:
        cells = []
        base = None
        for option in OPTIONS:
            runs = [r for (d, o, _, _), r in rows.items() if d == name and o == option]
            if not runs:
                cells.append("-")
                continue
            ndcg = np.mean([r["final"]["ndcg@10"] for r in runs])
            recall = np.mean([r["final"]["recall@20"] for r in runs])
            seconds = np.mean([r["final"]["seconds"] for r in runs])
            base = ndcg if option == "defaults" else base
            ratio = f" ({ndcg / base:.3f})" if base and option != "defaults" else ""
            cells.append(f"{ndcg:.4f} / {recall:.4f}{ratio}, {seconds:.0f} s")
        lfm = None if " (" in name else _lightfm(name)  # (measured on the sample)
        if lfm is None:
            cells.append("-")
        else:
            params = ", ".join(f"{k}={v}" for k, v in lfm[2].items())
            cells.append(f"{lfm[0]:.4f} / {lfm[1]:.4f} ({params})")
        for option in IMPLICIT_GRIDS:
            cells.append(_best_grid_point([r for (d, o, _, _), r in rows.items()
                                           if d == name and o == option]))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    path = Path(out).with_suffix(".md")
    path.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
