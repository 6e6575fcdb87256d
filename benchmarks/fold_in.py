"""How well do folded-in users rank? WARPFactorizer.fold_in against the same users trained
with the model, ridge closed forms and popularity.

    .venv/bin/python benchmarks/fold_in.py                      # ML-100K split
    .venv/bin/python benchmarks/fold_in.py --data ml-latest-small --epochs 30 60 120

A seeded 10% of the users are left out of training. Each of them is split 80/20: the
model (defaults, 2 threads) folds the users in from their 80% (``fold_in``, the items
held fixed) and is scored on their 20% (NDCG@10, the 80% excluded from the ranking).
For comparison, with the same item side:

* *trained with the model*: a second fit whose data include the new users' 80%, their
  factors as trained (what a refit gives them);
* *ridge*: the closed form ``(V'V + c V_P'V_P + lam I)^-1 V'((1 + c) 1_P - b - c b_P)``
  (regression of the scores on 1 for the user's items and 0 for the rest, items of the
  user weighted ``1 + c``; the fold-in of implicit-feedback ALS);
* *popularity*: every user's factor zero (the scores are the item biases).

Also the time of ``recommend(..., recalculate_user=True)`` for one new user.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _family  # noqa: E402


def _split(X, seed):
    """(old users' rows, new users' 80%, new users' 20%)."""
    gen = np.random.default_rng(seed)
    new = np.zeros(X.shape[0], bool)
    new[gen.choice(X.shape[0], X.shape[0] // 10, replace=False)] = True
    rows = X[new].tocoo()
    future = np.zeros(rows.nnz, bool)
    for r in range(int(new.sum())):
        idx = np.flatnonzero(rows.row == r)
        if len(idx) >= 2:
            future[gen.choice(idx, len(idx) // 5 or 1, replace=False)] = True

    def part(mask):
        return sp.csr_matrix((np.ones(mask.sum(), np.float32),
                              (rows.row[mask], rows.col[mask])), shape=(new.sum(), X.shape[1]))

    return X[~new], part(~future), part(future)


def _ridge(V, b, seen, lam, conf):
    V, b = V.astype(np.float64), b.astype(np.float64)
    gram = V.T @ V
    out = np.zeros((seen.shape[0], V.shape[1]))
    for r in range(seen.shape[0]):
        p = seen.indices[seen.indptr[r]:seen.indptr[r + 1]]
        if len(p):
            Vp = V[p]
            out[r] = np.linalg.solve(gram + conf * Vp.T @ Vp + lam * np.eye(V.shape[1]),
                                     (1 + conf) * Vp.sum(0) - V.T @ b - conf * Vp.T @ b[p])
    return out.astype(np.float32)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="ml100k", help="a data set of _family.py")
    parser.add_argument("--epochs", type=int, nargs="+", default=[10, 30, 60, 120],
                        help="fold-in epochs to try (the default is the model's epochs)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    from warprec import WARPFactorizer
    from warprec.metrics import evaluate_factors

    ds = _family.load(args.data)
    old, seen, future = _split(ds.train.tocsr(), args.seed)
    model = WARPFactorizer(n_threads=args.threads, random_state=args.seed).fit(old)

    def ndcg(factors):
        return evaluate_factors(factors, model.item_factors_, model.item_biases_, future, seen,
                                k=10, metrics=["ndcg"])["ndcg@10"]

    print(f"{args.data}: {old.shape[0]} training users, {seen.shape[0]} new users "
          f"({seen.nnz} positives folded in, {future.nnz} held out); model "
          f"{model.epochs_done_} epochs")
    for epochs in args.epochs:
        tic = time.perf_counter()
        factors = model.fold_in(seen, epochs=epochs)
        seconds = time.perf_counter() - tic
        print(f"  fold_in, {epochs:3d} epochs: NDCG@10 {ndcg(factors):.4f} ({seconds:.2f} s)")
    trained = WARPFactorizer(n_threads=args.threads, random_state=args.seed).fit(
        sp.vstack([old, seen]).tocsr())
    reference = evaluate_factors(trained.user_factors_[old.shape[0]:], trained.item_factors_,
                                 trained.item_biases_, future, seen, k=10,
                                 metrics=["ndcg"])["ndcg@10"]
    print(f"  trained with the model:  NDCG@10 {reference:.4f}")
    for lam, conf in ((1.0, 10.0), (10.0, 10.0), (1.0, 40.0)):
        print(f"  ridge lam={lam:g} c={conf:g}:    NDCG@10 "
              f"{ndcg(_ridge(model.item_factors_, model.item_biases_, seen, lam, conf)):.4f}")
    print(f"  popularity (zero factors): NDCG@10 "
          f"{ndcg(np.zeros((seen.shape[0], model.item_factors_.shape[1]), np.float32)):.4f}")
    one = seen[:1]
    model.recommend(["new"], k=10, user_items=one, recalculate_user=True)
    tic = time.perf_counter()
    for _ in range(50):
        model.recommend(["new"], k=10, user_items=one, recalculate_user=True)
    print(f"  recommend for one new user ({one.nnz} positives, {model.epochs_done_} "
          f"fold-in epochs): {(time.perf_counter() - tic) / 50 * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
