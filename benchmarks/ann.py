"""Approximate top-k (``recommend(..., approximate=True)``) against exact scoring.

    .venv/bin/python benchmarks/ann.py                       # the issue's target: 200k x 1M, d=64
    .venv/bin/python benchmarks/ann.py --users 20000 --items 100000 --out /tmp/ann.md
    .venv/bin/python benchmarks/ann.py --libraries   # usearch, faiss, voyager: 200k items

**Factors with structure.** Random factors have no structure for a graph index to exploit
(or to stumble on), so the factors come from a trained model: WARPFactorizer
(``n_components=64``, 15 epochs) fit on ``make_interactions(10_000, 50_000, 500_000)``.
Its 50,000 item vectors are tiled up to ``--items`` (each copy plus Gaussian noise of
half the factors' standard deviation), its 10,000 users up to ``--users`` the same way.
The trained biases are zero (WARP's default), so every item gets a popularity-skewed
bias: ``0.5 * std(scores) * z(log(1 + training count of its original))``. Each tiled
user's seen items are its original's training items, each mapped to a random copy of
that item (so the seen items are items the user scores highly, which makes over-fetching
necessary).

**Protocol.** Build the index (``build_index``, timed), then score a random sample of
``--sample`` users in batches, each batch exactly (``recommend(users, k=10)``, seen items
excluded) and approximately (``approximate=True``) one after the other, so that the
load of the shared machine weighs on both alike. Reported: users/s of each path, their
ratio, and recall@10 of the approximate lists against the exact ones.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from warprec import WARPFactorizer
from warprec.datasets import make_interactions


def base_model(threads):
    X = make_interactions(10_000, 50_000, 500_000, random_state=0)
    model = WARPFactorizer(n_components=64, epochs=15, n_threads=threads,
                           random_state=0).fit(X)
    return model, X


def tiled(model, X, n_users, n_items, seed):
    """(U, V, b, seen) tiled from the base model (see the module docstring)."""
    rng = np.random.default_rng(seed)
    U0, V0 = model.user_factors_, model.item_factors_
    n0_users, n0_items = U0.shape[0], V0.shape[0]
    item_origin = np.arange(n_items) % n0_items
    user_origin = np.arange(n_users) % n0_users
    V = (V0[item_origin] + rng.standard_normal((n_items, V0.shape[1]), np.float32)
         * np.float32(0.5 * V0.std()))
    U = (U0[user_origin] + rng.standard_normal((n_users, U0.shape[1]), np.float32)
         * np.float32(0.5 * U0.std()))
    spread = float((U[:500] @ V[:5000].T).std())
    log_pop = np.log1p(np.bincount(X.indices, minlength=n0_items)).astype(np.float64)
    b = (0.5 * spread * (log_pop - log_pop.mean()) / log_pop.std())[item_origin]
    # seen: the original user's items, each a random copy of itself
    copies = -(-n_items // n0_items)
    rows, cols = [], []
    X = X.tocsr()
    counts = np.diff(X.indptr)[user_origin]
    rows = np.repeat(np.arange(n_users), counts)
    base_items = np.concatenate([X.indices[X.indptr[o]:X.indptr[o + 1]] for o in user_origin])
    cols = base_items + n0_items * rng.integers(0, copies, base_items.size)
    cols = np.where(cols < n_items, cols, base_items)
    seen = sp.csr_matrix((np.ones(rows.size, np.float32), (rows, cols)),
                         shape=(n_users, n_items))
    seen.sum_duplicates()
    seen.data[:] = 1
    return U.astype(np.float32), V.astype(np.float32), b.astype(np.float32), seen


def fitted(U, V, b, seen, threads):
    """A WARPFactorizer holding these factors (as if fit on ``seen``)."""
    model = WARPFactorizer(n_components=U.shape[1], n_threads=threads)
    model.user_factors_, model.item_factors_, model.item_biases_ = U, V, b
    model.train_matrix_, model.user_ids_, model.item_ids_ = seen, None, None
    model.epochs_done_ = 0
    return model


def target(args):
    t0 = time.perf_counter()
    base, X = base_model(args.threads)
    U, V, b, seen = tiled(base, X, args.users, args.items, seed=1)
    model = fitted(U, V, b, seen, args.threads)
    prep = time.perf_counter() - t0
    t = time.perf_counter()
    model.build_index(n_threads=args.threads)
    build = time.perf_counter() - t
    print(f"data and base model {prep:.0f} s, index build {build:.0f} s", flush=True)
    rng = np.random.default_rng(2)
    sample = rng.choice(args.users, args.sample, replace=False)
    times = {"exact": 0.0, "approximate": 0.0}
    hits = []
    for batch in np.array_split(sample, max(1, args.sample // args.batch)):
        t = time.perf_counter()
        exact, _ = model.recommend(batch, k=10)
        times["exact"] += time.perf_counter() - t
        t = time.perf_counter()
        approx, _ = model.recommend(batch, k=10, approximate=True)
        times["approximate"] += time.perf_counter() - t
        hits += [len(set(a) & set(e)) / 10 for a, e in zip(approx, exact)]
    rate = {path: args.sample / seconds for path, seconds in times.items()}
    recall = float(np.mean(hits))
    speedup = rate["approximate"] / rate["exact"]
    ok = speedup >= 10 and recall >= 0.95
    lines = [
        "# Approximate top-k: `recommend(..., approximate=True)` against exact scoring",
        "",
        f"`{' '.join(['benchmarks/ann.py'] + sys.argv[1:])}` ({platform.machine()}, "
        f"{os.cpu_count()} cores shared with other engineers, run under `nice`; "
        f"{args.threads} threads; load average at the end "
        f"{os.getloadavg()[0]:.1f}).",
        "",
        f"Factors: tiled from a trained model (see the docstring of benchmarks/ann.py), "
        f"{args.users:,} users x {args.items:,} items, d = {U.shape[1]}; "
        f"{seen.nnz:,} seen items ({seen.nnz / args.users:.0f} per user on average, at "
        f"most {int(np.diff(seen.indptr).max())}), all excluded. Index: usearch HNSW, "
        f"inner product over `[V_i, b_i]`, half-precision vectors, default settings "
        f"(connectivity 16, expansion_add 128, expansion_search 64); candidates re-scored "
        f"exactly.",
        "",
        "| | value |",
        "|---|---|",
        f"| data and base model (s) | {prep:.0f} |",
        f"| index build, {args.items:,} items (s) | {build:.0f} |",
        f"| exact, users/s (top-10, seen excluded) | {rate['exact']:.1f} |",
        f"| approximate, users/s | {rate['approximate']:.1f} |",
        f"| **throughput ratio** | **{speedup:.1f}x** |",
        f"| **recall@10 against exact** | **{recall:.3f}** |",
        f"| users sampled (batches of {args.batch}, paths interleaved) | {args.sample:,} |",
        "",
        f"Target (issue 39: >= 10x and recall@10 >= 0.95): "
        f"{'met' if ok else 'NOT met'}.",
        "",
    ]
    return lines


def libraries(args):
    """Build time, queries/s and recall@10 (after exact re-ranking of 50 candidates) of
    the three libraries' indexes on the same tiled factors."""
    import faiss
    import voyager
    from usearch.index import Index

    base, X = base_model(args.threads)
    n_items, n_queries, fetch = 200_000, 2000, 50
    U, V, b, _ = tiled(base, X, n_queries, n_items, seed=1)
    Va = np.hstack([V, b[:, None]]).astype(np.float32)
    Ua = np.hstack([U, np.ones((n_queries, 1), np.float32)])
    truth = np.argsort(-(Ua @ Va.T), axis=1)[:, :10]
    # the MIPS-to-cosine transform (Bachrach et al. 2014): every item the same norm
    norms = np.linalg.norm(Va, axis=1)
    Vt = np.hstack([Va, np.sqrt(np.maximum(norms.max() ** 2 - norms ** 2, 0))[:, None]])
    Vt = Vt.astype(np.float32)
    Ut = np.hstack([Ua, np.zeros((n_queries, 1), np.float32)])
    faiss.omp_set_num_threads(args.threads)

    def recall(cand):
        out = []
        for r in range(n_queries):
            c = cand[r][cand[r] >= 0]
            top = c[np.argsort(-(Va[c] @ Ua[r]))[:10]]
            out.append(len(set(top.tolist()) & set(truth[r].tolist())) / 10)
        return float(np.mean(out))

    rows = ["| library, index | build (s) | ef | queries/s | recall@10 |", "|---|---|---|---|---|"]

    def run(name, build, search):
        t = time.perf_counter()
        index = build()
        seconds = time.perf_counter() - t
        for ef in (64, 128, 256):
            t = time.perf_counter()
            cand = search(index, ef)
            rate = n_queries / (time.perf_counter() - t)
            rows.append(f"| {name} | {seconds:.1f} | {ef} | {rate:.0f} | {recall(cand):.3f} |")
            print(rows[-1], flush=True)

    for dtype, metric, items, queries in (("f32", "ip", Va, Ua), ("f16", "ip", Va, Ua),
                                          ("f32", "cos", Vt, Ut), ("f16", "cos", Vt, Ut)):
        def build(items=items, metric=metric, dtype=dtype):
            index = Index(ndim=items.shape[1], metric=metric, dtype=dtype, connectivity=16,
                          expansion_add=128)
            index.add(np.arange(n_items), items, threads=args.threads)
            return index

        def search(index, ef, queries=queries):
            index.expansion_search = ef
            return index.search(queries, fetch, threads=args.threads).keys.astype(np.int64)

        run(f"usearch HNSW16 {dtype} {metric}", build, search)
    for metric, items, queries in (("ip", Va, Ua), ("l2 transform", Vt, Ut)):
        def build(items=items, metric=metric):
            index = faiss.IndexHNSWFlat(items.shape[1], 32, faiss.METRIC_INNER_PRODUCT
                                        if metric == "ip" else faiss.METRIC_L2)
            index.hnsw.efConstruction = 128
            index.add(items)
            return index

        def search(index, ef, queries=queries):
            index.hnsw.efSearch = ef
            return index.search(queries, fetch)[1]

        run(f"faiss HNSW32 {metric}", build, search)

    def build_ivf():
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(Va.shape[1]), Va.shape[1], 1024,
                                   faiss.METRIC_INNER_PRODUCT)
        index.train(Va[np.random.default_rng(0).choice(n_items, 100_000, replace=False)])
        index.add(Va)
        return index

    def search_ivf(index, ef):
        index.nprobe = ef // 4
        return index.search(Ua, fetch)[1]

    run("faiss IVF1024 ip (nprobe = ef/4)", build_ivf, search_ivf)

    def build_voyager():
        index = voyager.Index(voyager.Space.InnerProduct, num_dimensions=Va.shape[1], M=16,
                              ef_construction=128)
        index.add_items(Va, num_threads=args.threads)
        return index

    def search_voyager(index, ef):
        return index.query(Ua, k=fetch, num_threads=args.threads,
                           query_ef=ef)[0].astype(np.int64)

    run("voyager HNSW16 ip", build_voyager, search_voyager)
    return ["## Libraries", "", f"{n_items:,} tiled items, d = 64 + 1 (the bias), "
            f"{n_queries:,} queries, {fetch} candidates re-ranked exactly, "
            f"{args.threads} threads.", ""] + rows + [""]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--users", type=int, default=200_000)
    p.add_argument("--items", type=int, default=1_000_000)
    p.add_argument("--sample", type=int, default=2000)
    p.add_argument("--batch", type=int, default=500)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--libraries", action="store_true",
                   help="compare usearch, faiss-cpu and voyager instead")
    p.add_argument("--out", help="default: benchmarks/results/ann.md (ann_libraries.md "
                   "with --libraries)")
    args = p.parse_args(argv)
    results = Path(__file__).parent / "results"
    args.out = args.out or str(results / ("ann_libraries.md" if args.libraries else "ann.md"))
    lines = libraries(args) if args.libraries else target(args)
    text = "\n".join(lines)
    print(text)
    Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
