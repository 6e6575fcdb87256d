"""Compare warprec's loss options on the fixed ML-100K split.

For every option (rank weightings, OWPC families, exact rank, k-OS, BPR, ordinal) a small
learning-rate grid is run and the best NDCG@10 is reported with its P@10, MAP@10 and fit
seconds (dimension 64, 2 threads, as in ../shared/data/README.md, where the reference
figures were also "tuned over a small grid, best by NDCG@10").

The ordinal loss trains on graded feedback: every ML-100K rating (1-5) of the training
side (u.data minus the split's test pairs), scored on the same test pairs with graded gains
(the test ratings, 4 or 5) and all of the user's rated training items excluded; its
binary-gain figures are therefore not comparable to the other rows' and are marked.

Usage: python benchmarks/compare_losses.py [--quick] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pandas as pd

from warprec import WARPFactorizer
from warprec.data import read_ratings
from warprec.metrics import evaluate
from warprec.model import TUNED_PARAMS

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"

#: (label, parameters, learning-rate grid)
OPTIONS = [
    ("WARP harmonic (defaults)", {}, [0.05]),
    ("WARP harmonic, tuned", dict(TUNED_PARAMS), [TUNED_PARAMS["learning_rate"]]),
    ("WARP harmonic, exact rank", dict(rank_estimator="exact", epochs=15), [0.02, 0.05]),
    ("WARP auc", dict(rank_weighting="auc"), [0.005, 0.02, 0.05]),
    ("WARP precision@10", dict(rank_weighting="precision@10"), [0.02, 0.05]),
    ("WARP precision@1", dict(rank_weighting="precision@1"), [0.05, 0.1]),
    ("WARP log (LightFM's)", dict(rank_weighting="log"), [0.02, 0.05]),
    ("OWPC mean rank", dict(rank_weighting="owpc-mean"), [0.5, 2.0]),
    ("OWPC top rank", dict(rank_weighting="owpc-top"), [0.05, 0.2]),
    ("OWPC top 10% mean rank", dict(rank_weighting="owpc-top-p", top_fraction=0.1),
     [0.2, 1.0]),
    ("OWPC harmonic", dict(rank_weighting="owpc-harmonic"), [0.1, 0.3]),
    ("k-OS WARP (k=5, n=10)", dict(loss="warp-kos", k=5, n=10), [0.02, 0.05]),
    ("BPR uniform", dict(loss="bpr"), [0.02, 0.05, 0.1]),
    ("BPR popularity negatives", dict(loss="bpr", negative_sampling="popularity"),
     [0.02, 0.05, 0.1]),
]


def _split():
    folder = SHARED / "ml-100k-split"
    if not (folder / "train.csv").exists():
        sys.exit(f"The shared ML-100K split is missing ({folder}).")
    return pd.read_csv(folder / "train.csv"), pd.read_csv(folder / "test.csv")


def _run(params, lr, train, test, train_exclude, metrics, seed):
    model = WARPFactorizer(n_components=64, n_threads=2, random_state=seed,
                           **{**params, "learning_rate": lr})
    tic = time.perf_counter()
    model.fit(train)
    seconds = time.perf_counter() - tic
    result = evaluate(model, test, train=train_exclude, k=10, metrics=metrics)
    return result, seconds


def _compile(params, data):
    """One throw-away fit that compiles the kernel path of ``params`` (each loss compiles
    its own) outside the timed runs."""
    WARPFactorizer(epochs=1, n_components=8,
                   **{k: v for k, v in params.items() if k != "epochs"}).fit(data)


def compare(quick=False, seed=0):
    """Rows of the comparison table (best learning rate per option by NDCG@10)."""
    train, test = _split()
    options = OPTIONS[:3] if quick else OPTIONS
    rows = []
    binary = ["precision", "map", "ndcg"]
    for label, params, grid in options:
        if quick:
            params = {**params, "epochs": 2}
            grid = grid[:1]
        _compile(params, train.head(2000))
        best = None
        for lr in grid:
            result, seconds = _run(params, lr, train, test, train, binary, seed)
            if best is None or result["ndcg@10"] > best[0]["ndcg@10"]:
                best = (result, seconds, lr)
        rows.append(_row(label, *best))
    rows.append(_ordinal_row(train, test, quick, seed))
    return rows


def _ordinal_row(train, test, quick, seed):
    ratings = read_ratings(SHARED / "ml-100k" / "u.data")
    held = pd.MultiIndex.from_frame(test[["user_id", "item_id"]])
    graded = ratings[~pd.MultiIndex.from_frame(ratings[["user_id", "item_id"]]).isin(held)]
    graded = graded.rename(columns={"rating": "weight"})
    params = dict(loss="ordinal", n=10, max_sampled=10, epochs=2 if quick else 30)
    model = WARPFactorizer(n_components=64, n_threads=2, random_state=seed,
                           learning_rate=0.05, **params)
    from warprec.data import Interactions
    X = Interactions.from_frame(graded, weight_col="weight")
    _compile(params, Interactions.from_frame(graded.head(2000), weight_col="weight"))
    tic = time.perf_counter()
    model.fit(X)
    seconds = time.perf_counter() - tic
    test_graded = test.rename(columns={"rating": "weight"})
    result = evaluate(model, test_graded, train=graded, k=10,
                      metrics=["precision", "map", "ndcg", "ndcg_graded"])
    row = _row("Ordinal regression (ratings 1-5)*", result, seconds, 0.05)
    row["ndcg_graded@10"] = result.get("ndcg_graded@10")
    return row


def _row(label, result, seconds, lr):
    return {"option": label, "learning_rate": lr, "ndcg@10": result["ndcg@10"],
            "precision@10": result["precision@10"], "map@10": result["map@10"],
            "fit_seconds": seconds}


def to_markdown(rows):
    lines = ["| option | lr | NDCG@10 | P@10 | MAP@10 | fit s |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['option']} | {r['learning_rate']} | {r['ndcg@10']:.4f} | "
                     f"{r['precision@10']:.4f} | {r['map@10']:.4f} | {r['fit_seconds']:.2f} |")
    graded = [r for r in rows if r.get("ndcg_graded@10") is not None]
    for r in graded:
        lines.append("")
        lines.append(f"\\* trained on all training-side ratings 1-5, all rated training items "
                     f"excluded at test time; graded-gain NDCG@10 = {r['ndcg_graded@10']:.4f}.")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 epochs, 3 options")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = parser.parse_args(argv)
    rows = compare(quick=args.quick, seed=args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "losses.json").write_text(json.dumps(rows, indent=2))
    (out / "losses.md").write_text(to_markdown(rows))
    sys.stdout.write(to_markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
