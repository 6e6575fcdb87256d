"""Quality curves of a few configurations on one data set of the family, two seeds each.

    .venv/bin/python benchmarks/levers.py synthetic-longtail '[{}, {"init_scale": 0.036}]'
    .venv/bin/python benchmarks/levers.py synthetic-dense '[{}]' --epochs 90 --seeds 1,2
    .venv/bin/python benchmarks/levers.py synthetic-longtail --lightfm 0.02,100

For every configuration (``WARPFactorizer`` keyword arguments on top of the defaults,
trained by ``defaults.run_warprec``: d = 64, 2 threads, ``early_stopping=False`` unless
given) it prints the mean over the seeds
of NDCG@10 every 5 epochs, its peak and the last value; the data sets, splits and
evaluator are those of ``defaults.py`` (``_family.py``, ``_common.Scorer``). ``--lightfm
LR,MAX_SAMPLED`` runs LightFM 1.17's WARP instead (``defaults.run_lightfm``). A quick way
to measure a lever across the family before it goes into the
defaults benchmark; docs/design.md ("Quality levers measured") quotes its output.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _family  # noqa: E402
from _common import Scorer  # noqa: E402
from defaults import (CHECK_EVERY, N_EVAL_USERS, common_checkpoints, run_lightfm,  # noqa: E402
                      run_warprec)

EVERY = CHECK_EVERY


def metric_curve(result, metric="ndcg@10"):
    """``metric`` every ``EVERY`` epochs of a run of ``defaults.run_warprec`` /
    ``run_lightfm`` (and seconds of training at each point)."""
    return [point[metric] for point in result["curve"]], [p["seconds"] for p in result["curve"]]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", choices=_family.NAMES)
    parser.add_argument("configs", nargs="?", default="[{}]",
                        help="JSON list of WARPFactorizer keyword arguments")
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--lightfm", metavar="LR,MAX_SAMPLED")
    parser.add_argument("--metric", default="ndcg@10", choices=("ndcg@10", "recall@20"))
    args = parser.parse_args(argv)
    ds = _family.load(args.data, n_eval_users=N_EVAL_USERS.get(args.data, 0))
    if ds is None:
        sys.exit(f"{args.data}: data missing")
    scorer = Scorer(ds, args.threads)
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.lightfm:
        lr, ms = args.lightfm.split(",")
        params = dict(learning_rate=float(lr), max_sampled=int(ms), alpha=0.0)
        runs = {f"lightfm lr={lr} max_sampled={ms}": lambda seed: metric_curve(run_lightfm(
            ds, scorer, params, seed=seed, max_epochs=args.epochs, n_threads=args.threads),
            args.metric)}
    else:
        # (curves run all the epochs: early stopping only where a configuration asks)
        runs = {json.dumps(p): (lambda seed, p=p: metric_curve(run_warprec(
            ds, scorer, {"early_stopping": False, **p}, seed=seed, max_epochs=args.epochs,
            n_threads=args.threads), args.metric))
            for p in json.loads(args.configs)}
    for name, run in runs.items():
        curves, seconds = zip(*(run(seed) for seed in seeds))
        curves, seconds = common_checkpoints(curves), common_checkpoints(seconds)
        mean = np.mean(curves, axis=0)
        peak = int(np.argmax(mean))
        print(f"{args.data} {name} {args.metric}: peak {mean[peak]:.4f} at "
              f"{EVERY * (peak + 1)}, last {mean[-1]:.4f}, {np.mean(seconds, axis=0)[-1]:.0f} s"
              " | " + " ".join(f"{x:.4f}" for x in mean), flush=True)


if __name__ == "__main__":
    main()
