"""Training throughput of the working tree against a git revision, in paired runs.

    .venv/bin/python benchmarks/ab.py --base HEAD            # the committed code vs edits
    .venv/bin/python benchmarks/ab.py --base v0.2.0 --rounds 8 --threads 1

For a change to the training kernel: is an epoch as fast as before? The two versions
cannot share a process (same package name), so each round runs both, one fresh process
each, one right after the other, in alternating order (the host's speed drifts over
minutes; a round's two runs see about the same host). Each process fits the same data
from the same seed with ``WARPFactorizer``'s defaults, after one warm-up fit that
compiles or loads the kernels (each version keeps its own Numba cache), and reports the
kernel seconds of every epoch (``history_[e]["seconds"]``) and the fit's wall time. A
round's ratio is the median epoch time of the working tree / that of the base; the
report gives the median over rounds with its quartiles.

Data: the ML-100K split (if ``../shared/data/ml-100k-split`` exists; its train part)
and a synthetic set from ``warprec.datasets.make_interactions`` (``--synthetic``
interactions, 20 per user, 10,000 items per 250,000 interactions).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
ML100K_TRAIN = ROOT.parent / "shared" / "data" / "ml-100k-split" / "train.csv"

#: Runs in a fresh interpreter with the version under test first on sys.path.
WORKER = r"""
import json, sys, time
import numpy as np, pandas as pd, scipy.sparse as sp
from warprec import WARPFactorizer
from warprec.datasets import make_interactions

data, epochs, threads, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
if data == "ml100k":
    frame = pd.read_csv(sys.argv[5])
    frame = frame[frame["rating"] >= 4]
    users = frame["user_id"].astype("category").cat.codes.to_numpy()
    items = frame["item_id"].astype("category").cat.codes.to_numpy()
    X = sp.csr_matrix((np.ones(len(frame), np.float32), (users, items)))
else:
    X = make_interactions(n // 20, max(n // 25, 1000), n, random_state=0)
WARPFactorizer(epochs=1, n_threads=threads, random_state=1).fit(X)   # compile or load
tic = time.perf_counter()
model = WARPFactorizer(epochs=epochs, n_threads=threads, random_state=2).fit(X)
wall = time.perf_counter() - tic
print(json.dumps(dict(epoch_seconds=[h["seconds"] for h in model.history_], wall=wall,
                      nnz=int(X.nnz))))
"""


def _worktree(base):
    """A temporary checkout of revision ``base``; returns its path."""
    path = Path(tempfile.mkdtemp(prefix="warprec-ab-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(path),
                    base], check=True)
    return path


def _run(tree, cache, data, args):
    env = dict(os.environ, PYTHONPATH=str(tree), NUMBA_CACHE_DIR=str(cache))
    out = subprocess.run([sys.executable, "-c", WORKER, data, str(args.epochs),
                          str(args.threads), str(args.synthetic), str(ML100K_TRAIN)],
                         env=env, capture_output=True, text=True, check=True, cwd=tree)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="HEAD", help="git revision to compare against")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--synthetic", type=int, default=1_000_000,
                        help="interactions of the synthetic set (0: leave it out)")
    parser.add_argument("--out", type=Path, help="write the runs and summary as JSON here")
    args = parser.parse_args(argv)

    sets = (["ml100k"] if ML100K_TRAIN.exists() else []) + (
        ["synthetic"] if args.synthetic else [])
    base = _worktree(args.base)
    caches = {side: Path(tempfile.mkdtemp(prefix=f"warprec-ab-{side}-"))
              for side in ("base", "tree")}
    trees = {"base": base, "tree": ROOT}
    report = dict(base=args.base, threads=args.threads, epochs=args.epochs, sets={})
    try:
        for data in sets:
            rounds = []
            for r in range(args.rounds):
                sides = ("base", "tree") if r % 2 == 0 else ("tree", "base")
                run = {side: _run(trees[side], caches[side], data, args) for side in sides}
                ratio = (np.median(run["tree"]["epoch_seconds"])
                         / np.median(run["base"]["epoch_seconds"]))
                rounds.append(dict(run, ratio=float(ratio)))
                print(f"{data} round {r}: tree/base epoch time {ratio:.3f} "
                      f"(base {np.median(run['base']['epoch_seconds']) * 1e3:.1f} ms)",
                      flush=True)
            ratios = np.array([x["ratio"] for x in rounds])
            q1, med, q3 = np.percentile(ratios, [25, 50, 75])
            report["sets"][data] = dict(rounds=rounds, median_ratio=float(med),
                                        quartiles=[float(q1), float(q3)])
            print(f"{data}: median tree/base epoch time {med:.3f} "
                  f"(quartiles {q1:.3f}-{q3:.3f}, {args.rounds} rounds)", flush=True)
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)],
                       check=False)
        for cache in caches.values():
            shutil.rmtree(cache, ignore_errors=True)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
