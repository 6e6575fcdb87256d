"""Calibrate ``tune(..., clock="work")``: the seconds per unit of counted work.

    .venv/bin/python benchmarks/work_clock.py                 # 1 thread, then the report
    .venv/bin/python benchmarks/work_clock.py --threads 2

Fits a spread of configurations (WARP at several dimensions and draw caps, the cosine
loss, the sampled softmax, BPR, a hybrid model) on synthetic sets of two shapes with
early stopping checking every epoch, and records per epoch the wall seconds of the
training kernel, of the validation check and of the call's setup beside the counts
``warprec._clock`` turns into work: samples; scored negatives and updates times the
dimension; validation pairs times the dimension; the positives of a call. It fits the
training's two constants (seconds per sample, per row x dimension) by least squares on
the relative error, takes the median of the others, prints each fit's predicted over
measured time and writes ``results/work_clock.md``. The constants ``WORK_*`` of
``warprec._defaults`` are these at one thread.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from warprec import WARPFactorizer  # noqa: E402
from warprec._clock import check_units, feature_rows, setup_units, training_units  # noqa: E402
from warprec._validation import early_stopping_holdout, select  # noqa: E402
from warprec.datasets import make_interactions  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"

CONFIGS = [
    dict(n_components=32, max_sampled=10),
    dict(n_components=64),
    dict(n_components=128, max_sampled=300),
    dict(n_components=64, max_violators=10),
    dict(loss="ccl", n_negatives=100),
    dict(loss="ccl", n_components=128, n_negatives=500),
    dict(loss="softmax", n_negatives=200),
    dict(loss="bpr"),
]
SHAPES = {"small": (3_000, 2_000, 120_000), "wide": (20_000, 20_000, 600_000)}


def run(threads, epochs):
    rows = []
    for shape, (n_users, n_items, nnz) in SHAPES.items():
        X = make_interactions(n_users, n_items, nnz, random_state=0)
        features = None
        for params in CONFIGS + [dict(hybrid=True)]:
            params = dict(params)
            hybrid = params.pop("hybrid", False)
            fit_kw = {}
            if hybrid:
                rng = np.random.default_rng(0)
                import scipy.sparse as sp
                features = sp.csr_matrix(
                    (np.ones(3 * n_items, np.float32),
                     (np.repeat(np.arange(n_items), 3), rng.integers(0, 200, 3 * n_items))),
                    shape=(n_items, 200))
                features.sum_duplicates()
                features.data[:] = 1.0
                fit_kw = dict(item_features=features)
            model = WARPFactorizer(**params, epochs=epochs, early_stopping=True,
                                   validation_interval=1, n_iter_no_change=10**6,
                                   n_threads=threads, random_state=0)
            WARPFactorizer(**params, epochs=1, n_threads=threads).fit(X, **fit_kw)  # compile
            marks, infos = [time.perf_counter()], []

            def callback(m, info):
                marks.append(time.perf_counter())
                infos.append(dict(info))

            model.fit(X, callback=callback, **fit_kw)
            steps = np.diff(marks)
            d = model.n_components
            rows_per_item = feature_rows(model)
            held = early_stopping_holdout(X, model.validation_fraction, model.seed_)
            checked = int(np.count_nonzero(np.diff(select(X, held).indptr)))
            units = [training_units(i, d, rows_per_item) for i in infos[1:]]
            train = [i["seconds"] for i in infos[1:]]
            check = steps[1:] - np.array(train)
            name = json.dumps(dict(params, hybrid=True) if hybrid else params)
            rows.append(dict(
                shape=shape, config=name, threads=threads,
                samples=float(np.median([u[0] for u in units])),
                rows=float(np.median([u[1] for u in units])),
                train=float(np.median(train)),
                check=float(np.median(check / check_units(checked, n_items, d))),
                setup=float((steps[0] - infos[0]["seconds"] - np.median(check))
                            / setup_units(X.nnz)),
                mean_trials=float(np.mean([i["mean_trials"] for i in infos]))))
            print(json.dumps(rows[-1]), flush=True)
    return rows


def fit_training(rows):
    """``(per sample, per row)`` seconds minimising the squared relative error of the
    predicted training seconds of the fits (non-negative least squares)."""
    from scipy.optimize import nnls

    A = np.array([[r["samples"], r["rows"]] for r in rows]) / \
        np.array([[r["train"]] for r in rows])
    coef, _ = nnls(A, np.ones(len(rows)))
    return float(coef[0]), float(coef[1])


def report(rows):
    lines = ["# The work clock's reference speed", "",
             "From `benchmarks/work_clock.py` (see its docstring): per fit, the median over",
             "its epochs of the training seconds, then the seconds the work clock predicts",
             "with the fitted constants (`warprec._clock`: a sample; a scored or updated row",
             "times the dimension and the feature rows per item); a validation check's",
             "seconds per pair times the dimension; the setup's seconds per positive.", ""]
    for threads in sorted({r["threads"] for r in rows}):
        sel = [r for r in rows if r["threads"] == threads]
        sample, row = fit_training(sel)
        lines += [f"## {threads} thread(s)", "",
                  f"Fitted: {sample:.3g} s per sample, {row:.3g} s per row x dimension; "
                  f"median check {np.median([r['check'] for r in sel]):.3g} s per pair x "
                  f"dimension; median setup {np.median([r['setup'] for r in sel]):.3g} s "
                  f"per positive.", "",
                  "| shape | config | mean trials | train s/epoch | predicted / measured |",
                  "|---|---|---|---|---|"]
        for r in sel:
            predicted = sample * r["samples"] + row * r["rows"]
            lines.append(f"| {r['shape']} | `{r['config']}` | {r['mean_trials']:.1f} | "
                         f"{r['train']:.3g} | {predicted / r['train']:.2f} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, action="append")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--out", type=Path, default=RESULTS / "work_clock.md")
    args = parser.parse_args(argv)
    rows = []
    for threads in args.threads or [1]:
        rows += run(threads, args.epochs)
    text = report(rows)
    print(text)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
