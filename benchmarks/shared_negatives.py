"""Negatives shared by a group of positives against per-positive draws, for the cosine
losses: epoch seconds and quality side by side.

    .venv/bin/python benchmarks/shared_negatives.py                       # the full run
    .venv/bin/python benchmarks/shared_negatives.py --data amazon-book --epochs 2 --no-write
    .venv/bin/python benchmarks/shared_negatives.py --data synthetic-5m --comparison ccl:200 \
        --sample-order users                                              # a control

For every data set (amazon-book and synthetic-5m of ``_family.py``), loss and number of
negatives ``N`` it fits ``WARPFactorizer(loss=..., n_negatives=N, negative_sharing=B)``
for ``B = 1`` (today's per-positive draws) and each shared ``B`` of ``--sharing``, one
after another in this process, with the same seed, threads, epochs and the other
parameters at their defaults (``early_stopping=False``; ``n_components`` 128 on
amazon-book, 64 on synthetic-5m). It reports the median epoch time of ``history_``
(the kernel's seconds, without scoring), NDCG@10 and Recall@20 after the last epoch with
the family's evaluator (``_common.Scorer``: amazon-book's fixed sample of 10,000 test
users, 5,000 on synthetic-5m), and each shared run's ratios to the per-positive run of
its comparison. The machine's load average at the start and end of every comparison is
recorded: only ratios within one comparison are meant to be read.

Writes ``results/shared_negatives.jsonl`` (one line per fit, appended) and
``results/shared_negatives.md`` (the tables of the runs in the jsonl file; a rerun of
the same configuration replaces the earlier line in the table).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _family  # noqa: E402
from _common import Scorer  # noqa: E402
from defaults import N_EVAL_USERS  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
OUT = RESULTS / "shared_negatives.jsonl"
#: Epochs and dimension per data set (a fixed budget of work, the same for every run).
EPOCHS = {"amazon-book": 20, "synthetic-5m": 3}
DIMENSION = {"amazon-book": 128, "synthetic-5m": 64}
#: (loss, n_negatives) of the comparisons.
COMPARISONS = (("ccl", 200), ("ccl", 800), ("softmax", 200))


def fit(ds, scorer, *, loss, n_negatives, sharing, epochs, d, seed, threads, order="auto"):
    """One fit; returns its row (epoch seconds, final quality, settings)."""
    from warprec import WARPFactorizer

    model = WARPFactorizer(loss=loss, n_negatives=n_negatives, negative_sharing=sharing,
                           n_components=d, epochs=epochs, early_stopping=False,
                           n_threads=threads, random_state=seed, sample_order=order)
    tic = time.perf_counter()
    model.fit(ds.train)
    wall = time.perf_counter() - tic
    seconds = [h["seconds"] for h in model.history_]
    quality = scorer(model.user_factors_, model.item_factors_, model.item_biases_)
    return dict(data=ds.name, loss=loss, n_negatives=n_negatives, sharing=sharing,
                epochs=epochs, d=d, seed=seed, threads=threads, order=order,
                epoch_seconds=float(np.median(seconds)), fit_seconds=wall,
                mean_trials=model.history_[-1]["mean_trials"], sample_order=model.sample_order_,
                learning_rate=model.learning_rate_, **quality)


def compile_once(ds, loss, sharing, d):
    """A throw-away fit on a few users that compiles (or loads) the kernel outside the
    timed runs."""
    from warprec import WARPFactorizer

    WARPFactorizer(loss=loss, negative_sharing=sharing, n_components=d, epochs=1,
                   early_stopping=False, n_threads=1).fit(ds.train[:200])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", action="append", choices=("amazon-book", "synthetic-5m"))
    parser.add_argument("--sharing", default="32", help="shared group sizes, comma-separated")
    parser.add_argument("--comparison", action="append",
                        help="LOSS:N (default: ccl:200, ccl:800, softmax:200)")
    parser.add_argument("--epochs", type=int, help="instead of the per-set default")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sample-order", default="auto",
                        help="sample_order of every fit (a control; default auto)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--report", action="store_true", help="only write the tables")
    args = parser.parse_args(argv)
    if not args.report:
        comparisons = ([(c.split(":")[0], int(c.split(":")[1])) for c in args.comparison]
                       if args.comparison else COMPARISONS)
        shared = [int(b) for b in args.sharing.split(",")]
        for name in args.data or ("amazon-book", "synthetic-5m"):
            run_set(name, comparisons, shared, args)
    if not args.no_write:
        report(args.out)


def run_set(name, comparisons, shared, args):
    ds = _family.load(name, n_eval_users=N_EVAL_USERS.get(name, 0))
    if ds is None:
        print(f"{name}: data missing, skipped")
        return
    scorer = Scorer(ds, args.threads)
    d, epochs = DIMENSION[name], args.epochs or EPOCHS[name]
    for loss in sorted({loss for loss, _ in comparisons}):
        compile_once(ds, loss, 1, d)
        compile_once(ds, loss, max(shared), d)
    for loss, n_negatives in comparisons:
        load = [os.getloadavg()[0]]
        rows = []
        for sharing in [1] + shared:
            row = fit(ds, scorer, loss=loss, n_negatives=n_negatives, sharing=sharing,
                      epochs=epochs, d=d, seed=args.seed, threads=args.threads,
                      order=args.sample_order)
            rows.append(row)
            print(json.dumps(row), flush=True)
        load.append(os.getloadavg()[0])
        for row in rows:
            row["load"] = load
            if not args.no_write:
                args.out.parent.mkdir(parents=True, exist_ok=True)
                with open(args.out, "a") as fh:
                    fh.write(json.dumps(row) + "\n")


def report(out):
    """``shared_negatives.md`` from the runs in ``out`` (a rerun replaces)."""
    runs = {}
    if Path(out).exists():
        for line in open(out):
            row = json.loads(line)
            key = (row["data"], row["loss"], row["n_negatives"], row["epochs"], row["d"],
                   row["seed"], row["threads"], row.get("order", "auto"))
            runs.setdefault(key, {})[row["sharing"]] = row
    lines = ["# Shared negatives against per-positive draws (the cosine losses)", "",
             "Generated by `benchmarks/shared_negatives.py`; the runs are in "
             f"`{Path(out).name}`. Each comparison's fits ran one after another in one "
             "process (same seed, threads and epochs, the other parameters at their "
             "defaults); *epoch s* is the median of `history_` seconds, the quality is "
             "that of the last epoch. The ratios are to the per-positive run (B = 1) of "
             "the same comparison; *load* is the 1-minute load average at its start and "
             "end (2 cores). *order* is `sample_order_` (the parameter was `\"auto\"` "
             "unless marked *(set)*: the control runs).", "",
             "| data | loss | N | d | epochs | B | order | epoch s | NDCG@10 | Recall@20 | "
             "speed-up | NDCG ratio | Recall ratio | trials / positive | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for key, by_sharing in sorted(runs.items()):
        base = by_sharing.get(1)
        for sharing, row in sorted(by_sharing.items()):
            ratios = ["-"] * 3
            if base is not None and sharing != 1:
                ratios = [f"**{base['epoch_seconds'] / row['epoch_seconds']:.2f}x**",
                          f"{row['ndcg@10'] / base['ndcg@10']:.3f}",
                          f"{row['recall@20'] / base['recall@20']:.3f}"]
            load = "-".join(f"{x:.1f}" for x in row.get("load", []))
            lines.append(
                f"| {row['data']} | {row['loss']} | {row['n_negatives']} | {row['d']} | "
                f"{row['epochs']} | {sharing} | {row.get('sample_order', '-')}"
                + (" (set)" if row.get("order", "auto") != "auto" else "") + " | "
                f"{row['epoch_seconds']:.2f} | "
                f"{row['ndcg@10']:.4f} | {row['recall@20']:.4f} | " + " | ".join(ratios)
                + f" | {row['mean_trials']:.0f} | {load} |")
    text = "\n".join(lines) + "\n"
    (RESULTS / "shared_negatives.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
