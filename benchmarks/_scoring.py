"""Scoring speed: warprec.metrics.evaluate_factors vs implicit's ranking_metrics_at_k, and
WARPFactorizer.recommend (with implicit's recommend for context), on the same factors."""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from _common import N_COMPONENTS, SETTLE_SECONDS, PeakRSS, now


def problem(n_users, n_items, *, train_per_user=20, test_per_user=5, seed=0):
    """Random factors (d=64) and random train/test positives (disjoint per user)."""
    rng = np.random.default_rng(seed)
    d = N_COMPONENTS
    U = (rng.standard_normal((n_users, d)) / np.sqrt(d)).astype(np.float32)
    V = rng.standard_normal((n_items, d)).astype(np.float32)
    b = (0.1 * rng.standard_normal(n_items)).astype(np.float32)

    def pairs(per_user):
        rows = np.repeat(np.arange(n_users), per_user)
        cols = rng.integers(0, n_items, rows.size)
        m = sp.csr_matrix((np.ones(rows.size, np.float32), (rows, cols)),
                          shape=(n_users, n_items))
        m.sum_duplicates()
        m.data[:] = 1.0
        return m

    train = pairs(train_per_user)
    test = pairs(test_per_user)
    test = test - test.multiply(train)          # drop test entries also in train
    test.eliminate_zeros()
    test = sp.csr_matrix(test, dtype=np.float32)
    test.sort_indices()
    return dict(U=U, V=V, b=b, train=train, test=test)


#: What warprec computes in the comparison with implicit: everything but the full AUC,
#: whose cost (n_items comparisons per relevant item) has no counterpart in implicit
#: (implicit's "auc" only looks at the top-K list). The full-AUC run is reported as well.
COMPARABLE_METRICS = ["precision", "recall", "map", "mrr", "ndcg", "hit_rate"]


def _timed(fn, *args, **kwargs):
    time.sleep(SETTLE_SECONDS)   # the previous library's OpenMP threads stop spinning
    with PeakRSS() as mem:
        tic = now()
        result = fn(*args, **kwargs)
        seconds = now() - tic
    return result, seconds, mem.as_dict()


def evaluation_speed(prob, *, n_threads, repeats):
    """Same factors, same train/test, k=10, both on ``n_threads`` threads; runs alternate.
    implicit is run with BLAS limited to 1 thread and to ``n_threads`` threads (its
    scoring calls BLAS inside its own threads), and its faster setting is compared with
    warprec computing ``COMPARABLE_METRICS`` (warprec with its full AUC is timed too)."""
    from threadpoolctl import threadpool_limits
    from warprec.metrics import DEFAULT_METRICS, evaluate_factors

    import _implicit

    has_implicit = _implicit.version()[0] is not None
    U, V, b, train, test = prob["U"], prob["V"], prob["b"], prob["train"], prob["test"]
    runs = {"warprec": [], "warprec_with_full_auc": [], "implicit_blas1": [],
            f"implicit_blas{n_threads}": []}

    def warprec_eval(metrics):
        with threadpool_limits(limits=n_threads, user_api="blas"):
            return evaluate_factors(U, V, b, test, train, k=10, metrics=metrics,
                                    n_threads=n_threads)

    model = _implicit.factor_model(U, V, b, n_threads) if has_implicit else None
    for r in range(repeats):
        order = list(runs) if r % 2 == 0 else list(runs)[::-1]
        for name in order:
            if name.startswith("warprec"):
                metrics = ([*DEFAULT_METRICS, "auc"] if name == "warprec_with_full_auc"
                           else COMPARABLE_METRICS)
                res, sec, mem = _timed(warprec_eval, metrics)
                values = {k: float(v) for k, v in res.items()
                          if k in ("ndcg@10", "precision@10", "map@10", "auc")}
            elif has_implicit:
                blas = int(name.rsplit("blas", 1)[1])
                res, sec, mem = _timed(_implicit.ranking_metrics, model, train, test, 10,
                                       n_threads, blas)
                values = {k: float(v) for k, v in res.items()}
            else:
                continue
            runs[name].append(dict(seconds=sec, metrics=values, **mem))
    # lower bound of any exact evaluator: the blocked float32 matmul U @ V.T + b alone
    def matmul_only(block=2048):
        with threadpool_limits(limits=n_threads, user_api="blas"):
            for lo in range(0, U.shape[0], block):
                scores = U[lo:lo + block] @ V.T
                scores += b
    _, matmul_seconds, _ = _timed(matmul_only)
    out = dict(n_users=int(U.shape[0]), n_items=int(V.shape[0]), d=int(U.shape[1]),
               matmul_only_seconds=matmul_seconds,
               n_test=int(test.nnz), n_train=int(train.nnz), threads=n_threads, k=10,
               repeats=repeats, runs=runs,
               warprec_metrics=("'warprec': " + ", ".join(COMPARABLE_METRICS) + "; "
                                "'warprec_with_full_auc': its default metrics plus the full "
                                "AUC (every relevant item ranked against every item)"),
               implicit_metrics="precision, map, ndcg, auc (implicit's AUC is computed from "
                                "the top-K list only)")
    best = {name: min(x["seconds"] for x in v) for name, v in runs.items() if v}
    out["best_seconds"] = best
    out["warprec_users_per_second"] = U.shape[0] / best["warprec"]
    if has_implicit:
        imp = min((v, k) for k, v in best.items() if k.startswith("implicit"))
        out["implicit_best_setting"] = imp[1]
        out["speedup_vs_implicit"] = imp[0] / best["warprec"]
    else:
        out["implicit"] = "not installed"
    return out


def recommend_speed(prob, *, n_threads, repeats, k=10):
    """``WARPFactorizer.recommend`` for every user (k=10, train items excluded)."""
    from threadpoolctl import threadpool_limits
    from warprec import WARPFactorizer

    import _implicit

    U, V, b, train = prob["U"], prob["V"], prob["b"], prob["train"]
    n_users = U.shape[0]
    # epochs=0 allocates a fitted model without training; then install the factors
    model = WARPFactorizer(n_components=U.shape[1], epochs=0, n_threads=n_threads).fit(train)
    model.user_factors_, model.item_factors_, model.item_biases_ = U, V, b
    users = np.arange(n_users)
    has_implicit = _implicit.version()[0] is not None
    imodel = _implicit.factor_model(U, V, b, n_threads) if has_implicit else None
    runs = {"warprec": [], "implicit": []}
    agree = None
    for r in range(repeats):
        for name in (("warprec", "implicit") if r % 2 == 0 else ("implicit", "warprec")):
            if name == "warprec":
                def call():
                    with threadpool_limits(limits=n_threads, user_api="blas"):
                        return model.recommend(users, k=k)
                (items, _), sec, mem = _timed(call)
                w_items = items
            elif has_implicit:
                (items, _), sec, mem = _timed(_implicit.recommend, imodel, users, train, k, 1)
                i_items = items
            else:
                continue
            runs[name].append(dict(seconds=sec, users_per_second=n_users / sec, **mem))
    if has_implicit:
        agree = float(np.mean(np.sort(w_items, 1) == np.sort(i_items, 1)))
    best = {n: max(x["users_per_second"] for x in v) for n, v in runs.items() if v}
    return dict(n_users=int(n_users), n_items=int(V.shape[0]), d=int(U.shape[1]), k=k,
                threads=n_threads, repeats=repeats, runs=runs,
                warprec_users_per_second=best["warprec"],
                warprec_peak_rss_increase_mb=min(x["rss_increase_mb"] for x in runs["warprec"]),
                implicit_users_per_second=best.get("implicit"),
                top_k_agreement_with_implicit=agree,
                implicit_note="implicit recommend with BLAS 1 thread, num_threads="
                              f"{n_threads}, filter_already_liked_items=True")
