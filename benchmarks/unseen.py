"""The defaults on synthetic shapes that no default was chosen on.

    .venv/bin/python benchmarks/unseen.py
    .venv/bin/python benchmarks/unseen.py --seeds 3 --compare '{"max_sampled": 30}'
    .venv/bin/python benchmarks/unseen.py --lightfm 0.02,100 --lightfm 0.02,10
    .venv/bin/python benchmarks/unseen.py --tune 120

The family of ``defaults.py`` chose the default rules; these three shapes were never used
for that, so they say how the rules carry over: short user histories (30,000 users, 8
training positives each), a long tail with many users (40,000 users x 30,000 items, 11
positives per item) and a dense catalogue (25,000 users x 1,000 items). Each is made by
``_data.make_synthetic`` and split like the family's synthetic sets. For each, it trains
``WARPFactorizer()`` and a configuration to compare with (by default the defaults before
automatic early stopping: 50 epochs without it), seeds 0, 1, ... (mean), d = 64, 2
threads, and prints NDCG@10 on 5,000 test users, the epochs each run ended at and the
training seconds, as a Markdown table. ``--lightfm LR,MAX_SAMPLED`` (repeatable) adds
LightFM 1.17's WARP at those settings (no regularisation, seed 0), trained for 60 epochs
with NDCG@10 every 5: its column is the best checkpoint of all its settings, an epoch
choice made on the test set, so it favours LightFM. ``--tune SECONDS`` instead runs
``warprec.tune`` with that budget on each shape (seed 0, its final model scored the same
way) and prints its own table.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Scorer  # noqa: E402
from _data import make_synthetic  # noqa: E402
from defaults import run_lightfm, run_tune, run_warprec  # noqa: E402

#: name -> (users, items, interactions) of make_synthetic (20% of each user's held out)
SHAPES = {
    "short histories": (30_000, 5_000, 300_000),
    "long tail, many users": (40_000, 30_000, 400_000),
    "dense": (25_000, 1_000, 750_000),
}


def shapes():
    """``(first cells of a table row, data set)`` for each shape of :data:`SHAPES`."""
    for name, (users, items, interactions) in SHAPES.items():
        ds = make_synthetic(n_users=users, n_items=items, n_interactions=interactions,
                            n_eval_users=5_000)
        n_users, n_items = ds.train.shape
        yield f"| {name} | {n_users:,} x {n_items:,}, {ds.train.nnz:,} | ", ds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--compare", default='{"epochs": 50, "early_stopping": false}',
                        help="JSON WARPFactorizer keyword arguments to compare the defaults "
                             "with")
    parser.add_argument("--lightfm", action="append", default=[], metavar="LR,MAX_SAMPLED")
    parser.add_argument("--tune", type=float, metavar="SECONDS",
                        help="run warprec.tune with this budget instead of the comparison")
    args = parser.parse_args(argv)
    if args.tune:
        return tune_table(args.tune, args.threads)
    configs = {"defaults": {}, args.compare: json.loads(args.compare)}
    lightfm = [dict(learning_rate=float(lr), max_sampled=int(ms), alpha=0.0)
               for lr, ms in (text.split(",") for text in args.lightfm)]
    extra = " | LightFM, best checkpoint (settings, epochs) | defaults / LightFM" if lightfm else ""
    print("| shape | users x items, training positives | "
          + " | ".join(f"{name} (epochs; s)" for name in configs) + " | ratio" + extra + " |")
    print("|---|---|" + "---|" * len(configs) + "---|" + ("---|---|" if lightfm else ""))
    for row, ds in shapes():
        scorer = Scorer(ds, args.threads)
        cells, means = [], []
        for params in configs.values():
            runs = [run_warprec(ds, scorer, params, seed=seed, max_epochs=None,
                                n_threads=args.threads) for seed in range(args.seeds)]
            mean = float(np.mean([r["final"]["ndcg@10"] for r in runs]))
            seconds = float(np.mean([r["final"]["seconds"] for r in runs]))
            epochs = ",".join(str(r["final"]["epoch"]) for r in runs)
            cells.append(f"{mean:.4f} ({epochs}; {seconds:.0f} s)")
            means.append(mean)
        cells.append(f"{means[0] / means[1]:.3f}")
        if lightfm:
            best = max(((point["ndcg@10"], p, point["epoch"]) for p in lightfm
                        for point in run_lightfm(ds, scorer, p, seed=0, max_epochs=60,
                                                 n_threads=args.threads)["curve"]),
                       key=lambda row: row[0])
            cells.append(f"{best[0]:.4f} (lr {best[1]['learning_rate']}, max_sampled "
                         f"{best[1]['max_sampled']}, {best[2]} ep)")
            cells.append(f"{means[0] / best[0]:.3f}")
        print(row + " | ".join(cells) + " |", flush=True)


def tune_table(budget, n_threads):
    """``warprec.tune(train, time_budget=budget)`` on each shape: its final model's NDCG@10,
    the epochs it trained, the chosen configuration and the wall time."""
    print(f"| shape | users x items, training positives | warprec.tune, {budget:g} s "
          f"(epochs; s) | chosen configuration |")
    print("|---|---|---|---|")
    for row, ds in shapes():
        result = run_tune(ds, Scorer(ds, n_threads), dict(time_budget=budget), seed=0,
                          max_epochs=None, n_threads=n_threads)
        final = result["final"]
        chosen = ("the defaults" if result["best_trial"] == 0 else ", ".join(
            f"{k}={v}" for k, v in result["best_params"].items()
            if k not in ("epochs", "early_stopping")))
        print(f"{row}{final['ndcg@10']:.4f} ({final['epoch']}; {final['seconds']:.0f} s) | "
              f"{chosen} |", flush=True)


if __name__ == "__main__":
    main()
