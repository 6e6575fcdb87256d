#!/usr/bin/env python
"""Hybrid (side-feature) training speed: warprec's hybrid epochs against LightFM's at
identical settings, and identity-only features against the plain model.

    .venv/bin/python benchmarks/hybrid_speed.py --threads 2 1   # writes the results file
    .venv/bin/python benchmarks/hybrid_speed.py --epochs 3 --only synthetic --no-write

Settings shared by both libraries: the WARP loss, ``max_sampled`` 10, learning rate 0.05
with Adagrad, ``--epochs`` epochs (10), d = 64, no regularisation (warprec ``alpha=0``,
LightFM's default), ``--threads`` threads (2; several counts give a row each), and the
same feature matrices (passed as matrices: LightFM uses them as they are, warprec with
``identity_features=False``; users have their indicator feature only in both).

Data sets:

* ``ml-latest-small``: ratings >= 4 of ``ratings.csv``; item features = an indicator
  per movie, its genres (``movies.csv``) and, if ``tags.csv`` is present, its tags
  (one feature per distinct lower-cased tag), weight 1 each.
* ``synthetic``: ``warprec.datasets.make_interactions`` with 100,000 items (10,000
  users, 500,000 positives), item features = an indicator per item and 3 of 5,000
  features per item, drawn with Zipf-like popularity (weight 1).
* ``identity``: the synthetic interactions with indicator features only on both sides
  (the hybrid model is then the plain model) against the plain model.

Times (wall): warprec's epochs are the intervals between the ends of consecutive
epochs (a callback's clock: the epoch's order, the kernel, the refresh of the factors
from the feature embeddings and the loop's bookkeeping), ``--epochs - 1`` of them;
LightFM's are one ``fit_partial(epochs=E)`` call divided by ``E``, after a call with
``epochs=0`` that allocated the model, less the overhead of such a call (its input
checks and conversions). Means over the epochs. The machine's cores may be shared with
other processes: ratios within one row are what counts.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))   # this checkout's warprec
SHARED = HERE.parent.parent / "shared" / "data" / "ml-latest-small"
RESULTS = HERE / "results" / "hybrid_speed.md"
SETTINGS = dict(learning_rate=0.05, max_sampled=10, n_components=64)


def _indicator_hstack(n, blocks):
    return sp.hstack([sp.identity(n, dtype=np.float32, format="csr")] + blocks,
                     format="csr", dtype=np.float32)


def movielens(min_rating=4.0):
    """``(X, item_features, description)`` for ml-latest-small, or None without it."""
    import pandas as pd

    from warprec.data import positives, read_ratings
    if not (SHARED / "ratings.csv").exists() or not (SHARED / "movies.csv").exists():
        return None
    ratings = positives(read_ratings(SHARED / "ratings.csv"), min_rating=min_rating)
    users = np.sort(ratings["user_id"].unique())
    items = np.sort(ratings["item_id"].unique())
    rows = np.searchsorted(users, ratings["user_id"].to_numpy())
    cols = np.searchsorted(items, ratings["item_id"].to_numpy())
    X = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)),
                      shape=(len(users), len(items)))
    movies = pd.read_csv(SHARED / "movies.csv")
    pairs = [(m, g) for m, text in zip(movies["movieId"], movies["genres"])
             for g in str(text).split("|") if g != "(no genres listed)"]
    what = "indicator + genres"
    tags_file = SHARED / "tags.csv"
    if tags_file.exists():
        tags = pd.read_csv(tags_file)
        pairs += [(m, "tag=" + str(t).strip().lower()) for m, t in
                  zip(tags["movieId"], tags["tag"])]
        what += " + tags"
    else:
        what += " (tags.csv absent: no tags)"
    frame = pd.DataFrame(pairs, columns=["item", "feature"]).drop_duplicates()
    frame = frame[np.isin(frame["item"], items)]
    names = np.sort(frame["feature"].unique())
    side = sp.csr_matrix((np.ones(len(frame), np.float32),
                          (np.searchsorted(items, frame["item"]),
                           np.searchsorted(names, frame["feature"]))),
                         shape=(len(items), len(names)))
    return X, _indicator_hstack(len(items), [side]), what


def synthetic(n_users=10_000, n_items=100_000, n_positives=500_000, n_features=5_000,
              per_item=3, seed=0):
    """``(X, item_features, description)``: planted interactions and Zipf-popular
    features, ``per_item`` distinct ones per item."""
    from warprec.datasets import make_interactions
    X = make_interactions(n_users, n_items, n_positives, random_state=seed).tocsr()
    gen = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, n_features + 1)
    p /= p.sum()
    cols = np.empty((n_items, per_item), np.int64)
    for k in range(per_item):   # distinct per row: redraw the collisions
        cols[:, k] = gen.choice(n_features, n_items, p=p)
        for _ in range(100):
            clash = (cols[:, :k] == cols[:, k:k + 1]).any(axis=1)
            if not clash.any():
                break
            cols[clash, k] = gen.choice(n_features, int(clash.sum()), p=p)
    side = sp.csr_matrix((np.ones(cols.size, np.float32),
                          (np.repeat(np.arange(n_items), per_item), cols.ravel())),
                         shape=(n_items, n_features))
    side.sum_duplicates()
    side.data[:] = 1.0
    return X, _indicator_hstack(n_items, [side]), (
        f"indicator + {per_item} of {n_features} Zipf-popular features per item")


def warprec_epochs(X, item_features, user_features, epochs, threads, seed):
    """``(seconds, model)``: the wall seconds of each epoch of a warprec fit after its
    first (from the end of one epoch to the end of the next: the epoch's order, the
    kernel, the refresh of the factors and the loop's bookkeeping), with features
    unless both are None."""
    from warprec import WARPFactorizer
    model = WARPFactorizer(epochs=epochs, n_threads=threads, random_state=seed, alpha=0.0,
                           early_stopping=False, identity_features=False, **SETTINGS)
    ends = []
    model.fit(X, user_features=user_features, item_features=item_features,
              callback=lambda m, info: ends.append(time.perf_counter()))
    return list(np.diff(ends)), model


def lightfm_epochs(X, item_features, user_features, epochs, threads, seed):
    """``(mean epoch seconds, None)`` of LightFM, or ``(None, reason)``."""
    try:
        from lightfm import LightFM
    except Exception as exc:  # noqa: BLE001 - any import failure: not available
        return None, f"lightfm not installed ({type(exc).__name__})"
    model = LightFM(no_components=SETTINGS["n_components"], loss="warp",
                    learning_rate=SETTINGS["learning_rate"],
                    max_sampled=SETTINGS["max_sampled"], learning_schedule="adagrad",
                    random_state=seed)
    coo = X.tocoo()
    kwargs = dict(user_features=user_features, item_features=item_features,
                  num_threads=threads)
    model.fit_partial(coo, epochs=0, **kwargs)
    overhead = []
    for _ in range(3):
        tic = time.perf_counter()
        model.fit_partial(coo, epochs=0, **kwargs)
        overhead.append(time.perf_counter() - tic)
    tic = time.perf_counter()
    model.fit_partial(coo, epochs=epochs, **kwargs)
    wall = time.perf_counter() - tic
    return (wall - float(np.median(overhead))) / epochs, None


def _steady(seconds):
    """Mean epoch seconds."""
    return float(np.mean(seconds))


def versus_lightfm(name, data, args, threads, rows):
    X, F, what = data
    load = os.getloadavg()[0]
    wr, model = warprec_epochs(X, F, None, args.epochs, threads, args.seed)
    plain, _ = warprec_epochs(X, None, None, args.epochs, threads, args.seed)
    lfm, reason = lightfm_epochs(X, F, None, args.epochs, threads, args.seed)
    row = dict(data=name, threads=threads, load_before=load, load_after=os.getloadavg()[0],
               features=what, users=X.shape[0], items=X.shape[1], positives=X.nnz,
               item_feature_columns=F.shape[1], item_feature_nnz=F.nnz,
               warprec_hybrid_epoch=_steady(wr), warprec_plain_epoch=_steady(plain),
               warprec_hybrid_epochs=wr, warprec_plain_epochs=plain,
               mean_trials=float(np.mean([h["mean_trials"] for h in model.history_])),
               lightfm_hybrid_epoch=lfm, lightfm=reason)
    if lfm is not None:
        row["lightfm_over_warprec"] = lfm / row["warprec_hybrid_epoch"]
    row["hybrid_over_plain"] = row["warprec_hybrid_epoch"] / row["warprec_plain_epoch"]
    rows.append(row)
    print(json.dumps({k: v for k, v in row.items() if not k.endswith("epochs")}), flush=True)


def identity_only(data, args, threads, rows):
    X, _, _ = data
    load = os.getloadavg()[0]
    ident_u = sp.identity(X.shape[0], dtype=np.float32, format="csr")
    ident_i = sp.identity(X.shape[1], dtype=np.float32, format="csr")
    plain, _ = warprec_epochs(X, None, None, args.epochs, threads, args.seed)
    hyb, _ = warprec_epochs(X, ident_i, ident_u, args.epochs, threads, args.seed)
    plain2, _ = warprec_epochs(X, None, None, args.epochs, threads, args.seed)
    hyb2, _ = warprec_epochs(X, ident_i, ident_u, args.epochs, threads, args.seed)
    row = dict(data="identity-only (synthetic interactions)", threads=threads,
               load_before=load, load_after=os.getloadavg()[0], users=X.shape[0],
               items=X.shape[1], positives=X.nnz,
               warprec_plain_epoch=_steady(plain + plain2),
               warprec_identity_epoch=_steady(hyb + hyb2),
               warprec_plain_epochs=plain + plain2, warprec_identity_epochs=hyb + hyb2)
    row["identity_over_plain"] = row["warprec_identity_epoch"] / row["warprec_plain_epoch"]
    rows.append(row)
    print(json.dumps({k: v for k, v in row.items() if not k.endswith("epochs")}), flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--threads", type=int, nargs="+", default=[2])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=["movielens", "synthetic", "identity"],
                        action="append")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    only = set(args.only or ["movielens", "synthetic", "identity"])
    from warprec import WARPFactorizer
    # compile (or load) the kernels first, on a toy problem
    toy = sp.random(30, 40, density=0.2, format="csr", random_state=0, dtype=np.float32)
    toy.data[:] = 1.0
    for features in (None, sp.random(40, 5, density=0.5, format="csr", random_state=0)):
        for threads in args.threads:
            WARPFactorizer(epochs=1, n_threads=threads, early_stopping=False,
                           alpha=0.0).fit(toy, item_features=features)
    rows = []
    ml = movielens() if "movielens" in only else None
    if "movielens" in only and ml is None:
        print(f"ml-latest-small is not at {SHARED}: skipped")
    synth = synthetic() if only & {"synthetic", "identity"} else None
    for threads in args.threads:
        if ml is not None:
            versus_lightfm("ml-latest-small", ml, args, threads, rows)
        if "synthetic" in only:
            versus_lightfm("synthetic", synth, args, threads, rows)
        if "identity" in only:
            identity_only(synth, args, threads, rows)
    if not args.no_write:
        write(rows, args)
    return 0


def write(rows, args):
    import lightfm
    import numba

    threads = " ".join(str(t) for t in args.threads)
    lines = ["# Hybrid training speed against LightFM (generated by "
             "benchmarks/hybrid_speed.py)", "",
             f"`python benchmarks/hybrid_speed.py --epochs {args.epochs} --threads "
             f"{threads}`; {platform.machine()}, {os.cpu_count()} cores, "
             f"numba {numba.__version__}, LightFM {getattr(lightfm, '__version__', '?')}. "
             "WARP, max_sampled 10, learning rate 0.05 with Adagrad, d = 64, no "
             "regularisation, the same feature matrices; mean wall seconds per epoch. One "
             "run on a machine whose cores are shared with other processes (the load "
             "average before and after each row is in the JSON below): compare the ratios "
             "within a row.", "",
             "| data | threads | features | items | feature nnz | warprec hybrid epoch (s) | "
             "warprec plain epoch (s) | LightFM hybrid epoch (s) | LightFM / warprec | "
             "hybrid / plain |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "identity_over_plain" in r:
            continue
        lfm = r["lightfm_hybrid_epoch"]
        lines.append(f"| {r['data']} | {r['threads']} | {r['features']} | {r['items']:,} | "
                     f"{r['item_feature_nnz']:,} | {r['warprec_hybrid_epoch']:.4f} | "
                     f"{r['warprec_plain_epoch']:.4f} | "
                     + (f"{lfm:.4f} | {r['lightfm_over_warprec']:.2f}x" if lfm is not None
                        else f"- | {r['lightfm']}")
                     + f" | {r['hybrid_over_plain']:.2f} |")
    identity = [r for r in rows if "identity_over_plain" in r]
    if identity:
        lines += ["", "Indicator features only (one per user and per item, weight 1), which "
                  "the estimator trains with the plain kernel, against the plain model: "
                  "same interactions, two fits each, alternating:", "",
                  "| data | threads | plain epoch (s) | identity-only hybrid epoch (s) | "
                  "ratio |", "|---|---|---|---|---|"]
        for r in identity:
            lines.append(f"| {r['data']} | {r['threads']} | {r['warprec_plain_epoch']:.4f} | "
                         f"{r['warprec_identity_epoch']:.4f} | "
                         f"{r['identity_over_plain']:.3f} |")
    lines += ["", "Every epoch's seconds:", "", "```json", json.dumps(rows, indent=1), "```",
              ""]
    RESULTS.write_text("\n".join(lines))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    sys.exit(main())
