"""First use on a cold Numba cache: the CPU seconds of a first fit per loss and mode.

    .venv/bin/python benchmarks/compile_time.py                    # this tree
    .venv/bin/python benchmarks/compile_time.py --base 0a60289     # and a revision, paired

Each case runs in a fresh interpreter with an empty ``NUMBA_CACHE_DIR``, so every kernel
it needs compiles; the figure is the CPU time (user + system, all threads) of the case's
calls, which does not depend on how busy the host's other cores are the way wall time
does. A second process on the same cache directory gives the cached figure (loading the
compiled kernels, and the two epochs themselves). With ``--base`` the revision runs in a
temporary git worktree, each case of both versions back to back, and the table gives
both. The data is ML-100K's size (943 users, 1,682 items, 55,000 positives, graded 1-5
for the ordinal loss), drawn by ``warprec.datasets.make_interactions``. Results go to
benchmarks/results/compile_time.md (and --out as JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULT = ROOT / "benchmarks" / "results" / "compile_time.md"
#: The result file's hand-written sections start at this heading (kept on a rerun).
KEPT = "\n## "

#: Run in a fresh interpreter: the case's calls, timed in CPU seconds.
WORKER = r"""
import json, resource, sys, warnings
import numpy as np, scipy.sparse as sp
from warprec import WARPFactorizer
from warprec.datasets import make_interactions
from warprec.evaluation import evaluate

warnings.simplefilter("ignore")
case = sys.argv[1]
X = make_interactions(943, 1682, 55_000, random_state=0).tocsr()
X.data[:] = np.random.default_rng(0).integers(1, 6, X.nnz)


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


params = dict(epochs=2, random_state=0)
kwargs = {}
if case in ("bpr", "ordinal", "ccl", "softmax"):
    params["loss"] = case
elif case == "warp-kos":
    params.update(loss="warp-kos", k=2, n=5)
elif case == "sample_weight":
    kwargs["sample_weight"] = "values"
elif case == "early_stopping":
    params.update(early_stopping=True, epochs=3)
elif case == "features":
    kwargs["item_features"] = sp.random(X.shape[1], 20, density=0.1, format="csr",
                                        random_state=0)
tic = cpu()
model = WARPFactorizer(**params).fit(X, **kwargs)
if case == "fold_in":
    model.fold_in(X[:50])
elif case == "evaluate":
    evaluate(model, X, k=10)
print(json.dumps(dict(cpu=cpu() - tic)))
"""

CASES = ("warp", "bpr", "warp-kos", "ordinal", "ccl", "softmax", "sample_weight",
         "early_stopping", "features", "fold_in", "evaluate")


def _run(tree, cache, case):
    env = dict(os.environ, PYTHONPATH=str(tree), NUMBA_CACHE_DIR=str(cache))
    out = subprocess.run([sys.executable, "-c", WORKER, case], env=env, cwd=tree,
                         capture_output=True, text=True, check=True, timeout=900)
    return json.loads(out.stdout.strip().splitlines()[-1])["cpu"]


def _measure(tree, case):
    with tempfile.TemporaryDirectory(prefix="warprec-compile-") as cache:
        cold = _run(tree, cache, case)
        warm = _run(tree, cache, case)
    return dict(cold=round(cold, 2), warm=round(warm, 2))


def _worktree(base):
    path = Path(tempfile.mkdtemp(prefix="warprec-compile-base-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(path),
                    base], check=True)
    return path


def _table(runs, base):
    head = "| case | first fit, cold cache (CPU s) | cached (CPU s) |"
    rule = "|---|---|---|"
    if base:
        head = (f"| case | before ({base}), cold | after, cold | before, cached | "
                "after, cached |")
        rule = "|---|---|---|---|---|"
    rows = [head, rule]
    for case, run in runs.items():
        if base:
            rows.append(f"| {case} | {run['base']['cold']:.1f} | {run['tree']['cold']:.1f} | "
                        f"{run['base']['warm']:.1f} | {run['tree']['warm']:.1f} |")
        else:
            rows.append(f"| {case} | {run['tree']['cold']:.1f} | {run['tree']['warm']:.1f} |")
    return "\n".join(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="git revision to measure as well (paired)")
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    parser.add_argument("--out", type=Path, help="write the runs as JSON here")
    parser.add_argument("--no-write", action="store_true",
                        help=f"do not rewrite {RESULT.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    base = _worktree(args.base) if args.base else None
    runs = {}
    try:
        for case in args.cases:
            runs[case] = {}
            if base is not None:
                runs[case]["base"] = _measure(base, case)
            runs[case]["tree"] = _measure(ROOT, case)
            print(case, json.dumps(runs[case]), flush=True)
    finally:
        if base is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(base)], check=False)
    table = _table(runs, args.base)
    print(table)
    if args.out:
        args.out.write_text(json.dumps(runs, indent=1))
    if not args.no_write:
        # (sections after the table, such as the throughput runs, are kept)
        old = RESULT.read_text() if RESULT.exists() else ""
        kept = old[old.index(KEPT):] if KEPT in old else ""
        RESULT.write_text(
            "# First fit on a cold Numba cache\n\n"
            "Written by `benchmarks/compile_time.py`"
            + (f" `--base {args.base}`" if args.base else "") + ": CPU seconds (user + "
            "system) of a first `fit` of 2 epochs (and the `fold_in` or `evaluate` call "
            "of those cases) in a fresh process, on ML-100K-sized synthetic data (943 x "
            "1,682, 55,000 positives), with an empty cache (cold) and with the cache the "
            "cold run filled (cached). Default parameters but the case's "
            "(`early_stopping`: 3 epochs with validation; `features`: 20 item features; "
            "`sample_weight`: the values 1-5).\n\n" + table + "\n"
            + ("\n" + kept if kept else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
