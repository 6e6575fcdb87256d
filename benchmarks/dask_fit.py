"""Distributed training (``warprec.dask.fit``) against one machine: quality after the
same epochs, epoch throughput of 2 workers against 1, bytes shipped per epoch.

    .venv/bin/python benchmarks/dask_fit.py                      # ML-100K and synthetic-5m
    .venv/bin/python benchmarks/dask_fit.py --data ml100k --epochs 60 --seeds 0,1

Quality: NDCG@10 of the defaults trained for ``--epochs`` epochs on one machine
(``n_threads=2``) and on a ``LocalCluster`` of 2 worker processes with 1 thread each
(``combine`` "sum" and "mean"), with the evaluator of ``defaults.py``. Throughput: the
median epoch time of ``--throughput-epochs`` epochs on 1 and on 2 single-threaded worker
processes (the driver's combine step included). Needs the ``dask`` extra and a quiet
machine for the timings.
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
from defaults import N_EVAL_USERS  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "dask_fit.json"


def distributed_fit(ds, n_workers, *, epochs, seed, combine):
    from distributed import Client

    from warprec import dask as wdask
    from warprec._dask_fit import local_cluster

    with local_cluster(n_workers) as cluster, Client(cluster) as client:
        tic = time.perf_counter()
        model = wdask.fit(ds.train, client, combine=combine, epochs=epochs, random_state=seed,
                          n_threads=1)
        return model, time.perf_counter() - tic


def main(argv=None):
    from warprec import WARPFactorizer

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", action="append", choices=_family.NAMES)
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--throughput-epochs", type=int, default=8)
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    results = []
    for name in args.data or ["ml100k", "synthetic-5m"]:
        ds = _family.load(name, n_eval_users=N_EVAL_USERS.get(name, 0))
        if ds is None:
            print(f"{name}: data missing, skipped")
            continue
        scorer = Scorer(ds, 2)

        def score(model):
            return scorer(model.user_factors_, model.item_factors_,
                          model.item_biases_)["ndcg@10"]

        row = dict(data=name, epochs=args.epochs, shape=_family.shape(ds))
        for seed in (int(s) for s in args.seeds.split(",")):
            tic = time.perf_counter()
            single = WARPFactorizer(epochs=args.epochs, random_state=seed, n_threads=2)
            single.fit(ds.train)
            row.setdefault("single", []).append(
                dict(seed=seed, ndcg=score(single), seconds=time.perf_counter() - tic))
            for combine in ("sum", "mean"):
                model, seconds = distributed_fit(ds, 2, epochs=args.epochs, seed=seed,
                                                 combine=combine)
                row.setdefault(f"2 workers, {combine}", []).append(
                    dict(seed=seed, ndcg=score(model), seconds=seconds,
                         bytes_per_epoch=model.history_[-1]["bytes_shipped"]))
            print(json.dumps(row), flush=True)
        for n_workers in (1, 2):
            model, seconds = distributed_fit(ds, n_workers, epochs=args.throughput_epochs,
                                             seed=0, combine="sum")
            epoch_seconds = [h["seconds"] for h in model.history_]
            row[f"epoch seconds, {n_workers} worker(s)"] = float(np.median(epoch_seconds[1:]))
        row["throughput 2 vs 1"] = (row["epoch seconds, 1 worker(s)"]
                                    / row["epoch seconds, 2 worker(s)"])
        print(json.dumps(row), flush=True)
        results.append(row)
    args.out.write_text(json.dumps(results, indent=1))
    for row in results:
        single = np.mean([r["ndcg"] for r in row["single"]])
        print(f"{row['data']}: one machine NDCG@10 {single:.4f}; "
              + "; ".join(f"{k} {np.mean([r['ndcg'] for r in row[k]]):.4f} "
                          f"({np.mean([r['ndcg'] for r in row[k]]) / single:.3f})"
                          for k in row if k.startswith("2 workers"))
              + f"; epoch {row['epoch seconds, 1 worker(s)']:.2f} s on 1 worker, "
              f"{row['epoch seconds, 2 worker(s)']:.2f} s on 2 "
              f"({row['throughput 2 vs 1']:.2f}x); "
              f"{row['2 workers, sum'][0]['bytes_per_epoch'] / 1e6:.1f} MB shipped per epoch")


if __name__ == "__main__":
    main()
