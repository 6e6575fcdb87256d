"""Cold start against LightFM: items and users never trained on, ranked from features.

    .venv/bin/python benchmarks/cold_start.py                  # every case, seeds 0 and 1
    .venv/bin/python benchmarks/cold_start.py --case ml100k-users --seeds 1
    .venv/bin/python benchmarks/cold_start.py --normalizations none,side,row --seeds 3

Cases (positives: ratings >= 4):

* ``ml100k-items``: ML-100K, its 19 genres (``u.item``) as item features;
* ``ml100k-users``: ML-100K, ``u.user``'s demographics as user features: age band
  (decade), gender, occupation and the zip code's first digit;
* ``mls-items``: ml-latest-small, the genres of ``movies.csv``.

Protocol, per case and seed: ``split_cold_items`` / ``split_cold_users`` hold out every
positive of 20% of the entities with features (the cold ones), then ``split_random``
holds out 20% of each remaining user's positives (the warm test). warprec fits its
defaults (d = 64, 2 threads) on the warm train with the features (and the identity
features, its default); LightFM 1.17 (package rectools-lightfm) fits WARP at d = 64 on the
same interaction matrix and the *same* feature matrices (warprec's, identity columns
included), for every point of a small grid (learning rate 0.02 or 0.05, max_sampled 10
or 100, 20 or 50 epochs), and its best point *by the cold test score itself* is reported
(an oracle choice, in LightFM's favour). The cold entities are embedded from their
feature rows by each library (LightFM: ``get_item_representations(features=...)`` /
``get_user_representations(features=...)`` with the identity block zero). Scores:
NDCG@10 over the test users (cold items: each known test user ranks all the cold items;
cold users: each ranks all the known items), by warprec's evaluator
(``evaluate_factors``). Beside them: warprec without features on the warm test (the warm
quality the features must not lower), popularity and, for items, feature popularity.

``--weights 0.1,0.2,...`` measures a lever instead: the side features' weight against
the identity feature's 1 (``feature_weight``); the warm and cold NDCG@10 of each ``w`` are
reported beside the plain model's warm score (``cold_start_weights.jsonl``; ``w = 1`` is
warprec's default hybrid model).

``--feature-negatives 0,0.25,0.5`` measures ``feature_negatives`` (the share of the
positives whose negatives are drawn among items sharing one of the positive's features)
the same way (``cold_start_negatives.jsonl``), beside LightFM's best of the same seeds;
it needs item features, so the user case reports ``p = 0`` only.

``--normalizations none,side,row`` (at ``--weights``, default 1) measures
``feature_normalization`` the same way (``cold_start_normalization.jsonl``), its cold
scores also over LightFM's best of the same seeds (from ``cold_start.jsonl``; LightFM
always fits the rows as given, identity columns included). ``--first-seed 2 --seeds 1``
adds seed 2.

``--tune SECONDS`` (with ``--case``) measures ``warprec.tune`` on the same split instead:
``tune(train, time_budget=SECONDS, clock="work", <kind>_features=warm features,
cold_start=...)`` (trials validated on held-out entities of the training part, ranked
from their features), and the same search validated on held-out positives
(``cold_start=None``), against the defaults' hybrid model; cold and warm NDCG@10 on the
case's test sets (``cold_start_tune.jsonl``). The budget is counted as work (the same
search on a loaded machine).

Writes ``benchmarks/results/cold_start.md`` (the tables) and ``cold_start.jsonl`` (runs).
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results"
CASES = ("ml100k-items", "ml100k-users", "mls-items")
LIGHTFM_GRID = dict(learning_rate=[0.02, 0.05], max_sampled=[10, 100], epochs=[20, 50])
GENRES = ["unknown", "Action", "Adventure", "Animation", "Children's", "Comedy", "Crime",
          "Documentary", "Drama", "Fantasy", "Film-Noir", "Horror", "Musical", "Mystery",
          "Romance", "Sci-Fi", "Thriller", "War", "Western"]


def load(case):
    """``(positives, features, kind)`` of a case, or None when its files are missing."""
    from warprec.data import positives, read_features, read_ratings

    if case.startswith("ml100k"):
        folder = SHARED / "ml-100k"
        if not (folder / "u.data").exists():
            return None
        ratings = positives(read_ratings(folder / "u.data"), min_rating=4.0)
        if case == "ml100k-items":
            items = pd.read_csv(folder / "u.item", sep="|", header=None, encoding="latin-1")
            flags = items.iloc[:, 5:].to_numpy().astype(bool)
            features = pd.DataFrame({
                "item_id": items[0].astype(np.int64),
                "genres": ["|".join(g for g, on in zip(GENRES, row) if on) for row in flags]})
            return ratings, features, "item"
        users = pd.read_csv(folder / "u.user", sep="|", header=None,
                            names=["user_id", "age", "gender", "occupation", "zip"])
        features = pd.DataFrame({
            "user_id": users["user_id"].astype(np.int64),
            "age": [f"{10 * (a // 10)}s" for a in users["age"]],
            "gender": users["gender"], "occupation": users["occupation"],
            "zip": [f"z{str(z)[:1]}" for z in users["zip"]]})
        return ratings, features, "user"
    folder = SHARED / "ml-latest-small"
    if not (folder / "ratings.csv").exists():
        return None
    ratings = positives(read_ratings(folder / "ratings.csv"), min_rating=4.0)
    return ratings, read_features(folder / "movies.csv", columns=["genres"]), "item"


def split(ratings, features, kind, seed):
    from warprec.data import split_cold_items, split_cold_users, split_random

    cold_split = split_cold_items if kind == "item" else split_cold_users
    rest, cold_test = cold_split(ratings, 0.2, seed, **{f"{kind}s": features[f"{kind}_id"]})
    train, warm_test = split_random(rest, 0.2, random_state=seed)
    key = f"{kind}_id"
    warm_features = features[features[key].isin(train[key])]
    cold_features = features[features[key].isin(cold_test[key])].reset_index(drop=True)
    return train, warm_test, cold_test, warm_features, cold_features


def cold_relevance(model, cold_test, cold_features, kind):
    """The test matrix of the cold evaluation and the known users' rows (items) or the
    cold users' order (users), in the fitted model's index space."""
    if kind == "item":
        rows = pd.Index(model.user_ids_).get_indexer(cold_test["user_id"])
        cols = pd.Index(cold_features["item_id"]).get_indexer(cold_test["item_id"])
        keep = rows >= 0
        users, inverse = np.unique(rows[keep], return_inverse=True)
        shape = (users.size, len(cold_features))
        matrix = sp.csr_matrix((np.ones(inverse.size, np.float32), (inverse, cols[keep])),
                               shape=shape)
        return matrix, users
    rows = pd.Index(cold_features["user_id"]).get_indexer(cold_test["user_id"])
    cols = pd.Index(model.item_ids_).get_indexer(cold_test["item_id"])
    keep = cols >= 0
    matrix = sp.csr_matrix((np.ones(int(keep.sum()), np.float32), (rows[keep], cols[keep])),
                           shape=(len(cold_features), len(model.item_ids_)))
    return matrix, None


def ndcg(U, V, b, relevant, train=None):
    """NDCG@10 of the factors on ``relevant``, the ``train`` entries excluded."""
    from warprec.evaluation import evaluate_factors

    relevant.sum_duplicates()
    relevant.data[:] = 1.0
    return float(evaluate_factors(np.asarray(U, np.float32), np.asarray(V, np.float32),
                                  None if b is None else np.asarray(b, np.float32), relevant,
                                  train, k=10, metrics=["ndcg"])["ndcg@10"])


def cold_rows(model, cold_features, kind):
    """The cold entities' rows of the model's feature matrix: the identity block zero,
    then the encoded features."""
    encoder = getattr(model, f"{kind}_feature_encoder_")
    encoded, _ = encoder.transform(cold_features)
    full = getattr(model, f"{kind}_features_")
    n_identity = full.shape[1] - encoded.shape[1]
    return sp.hstack([sp.csr_matrix((encoded.shape[0], n_identity), dtype=np.float32),
                      encoded], format="csr")


def lightfm_grid(model, cold_features, kind, relevant, users, threads, seed):
    """LightFM at every grid point on warprec's matrices: the best point by cold NDCG@10,
    its score and every point's."""
    from lightfm import LightFM

    features = {f"{kind}_features": getattr(model, f"{kind}_features_")}
    cold = cold_rows(model, cold_features, kind)
    points = []
    for lr, ms, epochs in itertools.product(*LIGHTFM_GRID.values()):
        lfm = LightFM(no_components=64, loss="warp", learning_rate=lr, max_sampled=ms,
                      random_state=seed)
        tic = time.perf_counter()
        lfm.fit(model.train_matrix_.tocoo(), epochs=epochs, num_threads=threads, **features)
        seconds = time.perf_counter() - tic
        if kind == "item":
            biases, factors = lfm.get_item_representations(features=cold)
            _, user_factors = lfm.get_user_representations()
            score = ndcg(user_factors[users], factors, biases, relevant)
        else:
            biases, factors = lfm.get_item_representations()
            _, user_factors = lfm.get_user_representations(features=cold)
            score = ndcg(user_factors, factors, biases, relevant)
        points.append(dict(learning_rate=lr, max_sampled=ms, epochs=epochs, cold=score,
                           seconds=seconds))
    return max(points, key=lambda p: p["cold"]), points


def run(case, seed, threads):
    from warprec import WARPFactorizer
    from warprec.baselines import FeaturePopularityRecommender, PopularityRecommender
    from warprec.evaluation import evaluate, evaluate_cold_items, evaluate_cold_users

    loaded = load(case)
    if loaded is None:
        return None
    ratings, features, kind = loaded
    train, warm_test, cold_test, warm_features, cold_features = split(ratings, features,
                                                                      kind, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tic = time.perf_counter()
        model = WARPFactorizer(n_threads=threads, random_state=seed).fit(
            train, **{f"{kind}_features": warm_features})
        seconds = time.perf_counter() - tic
        plain = WARPFactorizer(n_threads=threads, random_state=seed).fit(train)
        warm = evaluate(model, warm_test, train=train, metrics=["ndcg"])["ndcg@10"]
        warm_plain = evaluate(plain, warm_test, train=train, metrics=["ndcg"])["ndcg@10"]
        popularity = PopularityRecommender().fit(train)
        if kind == "item":
            cold = evaluate_cold_items(model, cold_test, cold_features, metrics=["ndcg"])
            baseline = evaluate_cold_items(
                FeaturePopularityRecommender().fit(train, item_features=warm_features),
                cold_test, cold_features, metrics=["ndcg"])["ndcg@10"]
        else:
            cold = evaluate_cold_users(model, cold_test, cold_features, metrics=["ndcg"])
            baseline = evaluate_cold_users(popularity, cold_test, cold_features,
                                           metrics=["ndcg"])["ndcg@10"]
    relevant, users = cold_relevance(model, cold_test, cold_features, kind)
    try:
        best, points = lightfm_grid(model, cold_features, kind, relevant, users, threads, seed)
    except ImportError as exc:
        best, points = dict(cold=float("nan"), error=str(exc)), []
    return dict(case=case, seed=seed, threads=threads, kind=kind,
                n_cold=len(cold_features), cold_users=int(cold["n_users"]),
                warprec_cold=cold["ndcg@10"], warprec_warm=warm, plain_warm=warm_plain,
                warprec_seconds=seconds, epochs=int(model.epochs_done_),
                baseline_cold=baseline, lightfm_best=best, lightfm_points=points)


def weight_grid(case, seed, threads, weights, normalizations=("none",), negatives=None):
    """Warm and cold NDCG@10 with the side features weighted ``w`` against the identity
    feature (``WARPFactorizer(feature_weight=w)``), for each ``w`` of ``weights`` (and
    each ``feature_normalization`` of ``normalizations``: then keyed ``"norm w"``), or,
    with ``negatives``, for each ``feature_negatives`` of it at the first ``w`` (keyed
    ``p``; the fit's seconds and epochs beside)."""
    from warprec import WARPFactorizer
    from warprec.evaluation import evaluate, evaluate_cold_items, evaluate_cold_users

    ratings, features, kind = load(case)
    train, warm_test, cold_test, warm_features, cold_features = split(ratings, features,
                                                                      kind, seed)
    cold_evaluate = evaluate_cold_items if kind == "item" else evaluate_cold_users

    def warm(model):
        return evaluate(model, warm_test, train=train, metrics=["ndcg"])["ndcg@10"]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # test rows of entities only the other side has
        plain = WARPFactorizer(n_threads=threads, random_state=seed).fit(train)
        out = dict(case=case, seed=seed, weights={}, plain_warm=warm(plain))
        for p in negatives or ():
            if p > 0 and kind != "item":
                continue
            tic = time.perf_counter()
            model = WARPFactorizer(n_threads=threads, random_state=seed,
                                   feature_weight=weights[0], feature_negatives=p).fit(
                train, **{f"{kind}_features": warm_features})
            seconds = time.perf_counter() - tic
            cold = cold_evaluate(model, cold_test, cold_features, metrics=["ndcg"])
            out["weights"][str(p)] = dict(warm=warm(model), cold=cold["ndcg@10"],
                                          seconds=seconds, epochs=int(model.epochs_done_))
        if negatives:
            return out
        for norm, w in itertools.product(normalizations, weights):
            model = WARPFactorizer(n_threads=threads, random_state=seed, feature_weight=w,
                                   feature_normalization=norm).fit(
                train, **{f"{kind}_features": warm_features})
            cold = cold_evaluate(model, cold_test, cold_features, metrics=["ndcg"])
            key = str(w) if normalizations == ("none",) else f"{norm} {w}"
            out["weights"][key] = dict(warm=warm(model), cold=cold["ndcg@10"])
    return out


def tune_run(case, seed, threads, budget):
    """Cold and warm NDCG@10 of the defaults' hybrid model and of ``tune``'s model,
    validated on held-out entities (``cold_start``) or on held-out positives."""
    from warprec import WARPFactorizer, tune
    from warprec.evaluation import evaluate, evaluate_cold_items, evaluate_cold_users

    ratings, features, kind = load(case)
    train, warm_test, cold_test, warm_features, cold_features = split(ratings, features,
                                                                      kind, seed)
    cold_evaluate = evaluate_cold_items if kind == "item" else evaluate_cold_users
    given = {f"{kind}_features": warm_features}

    def scores(model):
        return dict(cold=cold_evaluate(model, cold_test, cold_features,
                                       metrics=["ndcg"])["ndcg@10"],
                    warm=evaluate(model, warm_test, train=train, metrics=["ndcg"])["ndcg@10"])

    out = dict(case=case, seed=seed, budget=budget, threads=threads)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out["defaults"] = scores(WARPFactorizer(n_threads=threads, random_state=seed).fit(
            train, **given))
        for name, cold_start in (("cold_tune", f"{kind}s"), ("warm_tune", None)):
            tic = time.perf_counter()
            result = tune(train, time_budget=budget, n_threads=threads, random_state=seed,
                          clock="work", cold_start=cold_start, **given)
            out[name] = dict(scores(result.best_model), seconds=time.perf_counter() - tic,
                             best_trial=result.best_trial, validation=result.best_score,
                             trials=int(result.trials["trial"].nunique()),
                             params={k: v for k, v in result.best_params.items()
                                     if k != "early_stopping"})
    return out


def tune_report(runs):
    lines = ["## Tuning for cold start", "",
             "`benchmarks/cold_start.py --tune 60`: the defaults' hybrid model against "
             "`tune(train, time_budget=60, clock=\"work\", ...)` validated on held-out "
             "entities (`cold_start`) or on held-out positives (warm), on the split above; "
             "cold / warm NDCG@10 per seed, the chosen trial (0: the defaults kept) and "
             "the search's configurations.", "",
             "| case | seed | defaults | tune, cold_start | tune, warm validation |",
             "|---|---|---|---|---|"]
    for r in runs:
        cells = [f"{r['defaults']['cold']:.4f} / {r['defaults']['warm']:.4f}"]
        for name in ("cold_tune", "warm_tune"):
            t = r[name]
            cells.append(f"{t['cold']:.4f} / {t['warm']:.4f} (trial {t['best_trial']} of "
                         f"{t['trials']})")
        lines.append(f"| {r['case']} | {r['seed']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def weights_report(runs):
    frame = pd.DataFrame(runs)
    weights = list(runs[0]["weights"])
    lines = ["## The side features' weight against the identity feature", "",
             "`benchmarks/cold_start.py --weights ...`: warm / cold NDCG@10, the mean over "
             "seeds; the plain model's warm score beside. `w = 1.0` is the default hybrid "
             "model.", "",
             "| case | seeds | plain warm | " + " | ".join(f"w = {w}" for w in weights) + " |",
             "|---|---|---|" + "---|" * len(weights)]
    for case, rows in frame.groupby("case", sort=False):
        cells = []
        for w in weights:
            warm = np.mean([r[w]["warm"] for r in rows["weights"]])
            cold = np.mean([r[w]["cold"] for r in rows["weights"]])
            cells.append(f"{warm:.4f} / {cold:.4f}")
        lines.append(f"| {case} | {len(rows)} | {rows['plain_warm'].mean():.4f} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


NORMALIZATION_TITLE = "## Feature-row normalisation"
NORMALIZATION_TEXT = (
    "`benchmarks/cold_start.py --normalizations ... --weights ...`: warm / cold NDCG@10 "
    "(the mean over seeds) and, in brackets, cold over LightFM's best (the mean of "
    "LightFM's best over the same seeds). `none 1.0` is the hybrid model before "
    "normalisation; `side`: the given features of a row scaled to sum `w`; `row`: the "
    "whole row, indicator included, to sum 1 (LightFM's `Dataset`).")
NEGATIVES_TITLE = "## Negatives among the items that share a feature with the positive"
NEGATIVES_TEXT = (
    "`benchmarks/cold_start.py --feature-negatives ...`: warm / cold NDCG@10 (the mean "
    "over seeds) and, in brackets, cold over LightFM's best (the mean of LightFM's best "
    "over the same seeds), for `feature_negatives = p` (the share of the positives whose "
    "negatives are drawn among the items sharing one of the positive's features; `0.0` is "
    "the default hybrid model). It needs item features: the user case has `p = 0` only.")


def normalization_report(runs, lightfm, title=NORMALIZATION_TITLE, text=NORMALIZATION_TEXT):
    """The table of ``--normalizations`` (or of ``--feature-negatives``, with its
    ``title`` and ``text``): per case and variant, warm / cold NDCG@10 and the cold score
    over LightFM's best (``lightfm``: case -> seed -> its best cold score, from the main
    runs; the mean over the seeds both have)."""
    variants = list(dict.fromkeys(k for r in runs for k in r["weights"]))
    lines = [title, "", text, "",
             "| case | seeds | plain warm | " + " | ".join(variants) + " |",
             "|---|---|---|" + "---|" * len(variants)]
    merged: dict = {}   # case -> seed -> the latest run's plain score and every variant
    for r in runs:
        if r["seed"] in lightfm.get(r["case"], {}):
            at = merged.setdefault(r["case"], {}).setdefault(r["seed"], dict(weights={}))
            at["plain_warm"] = r["plain_warm"]
            at["weights"].update(r["weights"])
    for case, seeds in merged.items():
        lfm = np.mean([lightfm[case][s] for s in seeds])
        cells = []
        for v in variants:
            have = [at["weights"][v] for at in seeds.values() if v in at["weights"]]
            if len(have) < len(seeds):
                cells.append("")
                continue
            warm = np.mean([h["warm"] for h in have])
            cold = np.mean([h["cold"] for h in have])
            cells.append(f"{warm:.4f} / {cold:.4f} ({cold / lfm:.3f}x)")
        plain = np.mean([at["plain_warm"] for at in seeds.values()])
        lines.append(f"| {case} | {len(seeds)} | {plain:.4f} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def report(runs):
    lines = ["# Cold start against LightFM (NDCG@10)", "",
             "From `benchmarks/cold_start.py` (protocol in its docstring): the mean over "
             "seeds; LightFM's best grid point chosen on the cold test score itself. "
             "Baseline: feature popularity (items) or popularity (users).", "",
             "| case | seeds | cold entities | warprec cold | LightFM best cold | ratio | "
             "baseline cold | warprec warm (hybrid / plain) |",
             "|---|---|---|---|---|---|---|---|"]
    frame = pd.DataFrame(runs)
    for case, rows in frame.groupby("case", sort=False):
        lfm = np.mean([r["cold"] for r in rows["lightfm_best"]])
        ours = rows["warprec_cold"].mean()
        lines.append(
            f"| {case} | {len(rows)} | {int(rows['n_cold'].iloc[0])} | {ours:.4f} | "
            f"{lfm:.4f} | {ours / lfm:.3f} | {rows['baseline_cold'].mean():.4f} | "
            f"{rows['warprec_warm'].mean():.4f} / {rows['plain_warm'].mean():.4f} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", action="append", choices=CASES)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS / "cold_start.jsonl")
    parser.add_argument("--report", action="store_true", help="only rewrite the tables")
    parser.add_argument("--first-seed", type=int, default=0,
                        help="seeds first-seed, ..., first-seed + seeds - 1")
    parser.add_argument("--weights", type=lambda text: [float(w) for w in text.split(",")],
                        help="measure the side features' weight instead (comma-separated)")
    parser.add_argument("--feature-negatives",
                        type=lambda text: [float(p) for p in text.split(",")],
                        help="measure feature_negatives instead (comma-separated shares), "
                             "at the first of --weights (default 1)")
    parser.add_argument("--normalizations", type=lambda text: tuple(text.split(",")),
                        help="measure feature_normalization instead (comma-separated: "
                             "none, side, row), at each of --weights (default 1)")
    parser.add_argument("--tune", type=float, metavar="SECONDS",
                        help="measure warprec.tune with cold_start instead (its budget)")
    args = parser.parse_args(argv)
    weights_out = args.out.parent / "cold_start_weights.jsonl"
    norms_out = args.out.parent / "cold_start_normalization.jsonl"
    negatives_out = args.out.parent / "cold_start_negatives.jsonl"
    tune_out = args.out.parent / "cold_start_tune.jsonl"
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    if args.tune and not args.report:
        with tune_out.open("a") as handle:
            for case in args.case or CASES:
                for seed in seeds:
                    if load(case) is None:
                        continue
                    result = tune_run(case, seed, args.threads, args.tune)
                    handle.write(json.dumps(result) + "\n")
                    handle.flush()
                    print(json.dumps(result), flush=True)
    elif args.feature_negatives and not args.report:
        with negatives_out.open("a") as handle:
            for case in args.case or CASES:
                for seed in seeds:
                    if load(case) is None:
                        continue
                    result = weight_grid(case, seed, args.threads, args.weights or [1.0],
                                         negatives=args.feature_negatives)
                    handle.write(json.dumps(result) + "\n")
                    handle.flush()
                    print(case, seed, json.dumps(result["weights"]), flush=True)
    elif args.normalizations and not args.report:
        with norms_out.open("a") as handle:
            for case in args.case or CASES:
                for seed in seeds:
                    if load(case) is None:
                        continue
                    result = weight_grid(case, seed, args.threads, args.weights or [1.0],
                                         args.normalizations)
                    handle.write(json.dumps(result) + "\n")
                    handle.flush()
                    print(case, seed, json.dumps(result["weights"]), flush=True)
    elif args.weights and not args.report:
        with weights_out.open("a") as handle:
            for case in args.case or CASES:
                for seed in seeds:
                    if load(case) is None:
                        continue
                    result = weight_grid(case, seed, args.threads, args.weights)
                    handle.write(json.dumps(result) + "\n")
                    handle.flush()
                    print(case, seed, json.dumps(result["weights"]), flush=True)
    elif not args.report:
        with args.out.open("a") as handle:
            for case in args.case or CASES:
                for seed in seeds:
                    result = run(case, seed, args.threads)
                    if result is None:
                        print(f"{case}: data missing, skipped", flush=True)
                        continue
                    handle.write(json.dumps(result) + "\n")
                    handle.flush()
                    print(f"{case} seed {seed}: warprec cold {result['warprec_cold']:.4f}, "
                          f"LightFM best {result['lightfm_best']['cold']:.4f}, baseline "
                          f"{result['baseline_cold']:.4f}; warm {result['warprec_warm']:.4f}"
                          f" (plain {result['plain_warm']:.4f})", flush=True)
    runs = [json.loads(line) for line in args.out.read_text().splitlines() if line.strip()]
    table = report(runs)
    if weights_out.exists():
        table += "\n" + weights_report([json.loads(line) for line in
                                          weights_out.read_text().splitlines() if line])
    lightfm: dict = {}
    for r in runs:
        lightfm.setdefault(r["case"], {})[r["seed"]] = r["lightfm_best"]["cold"]
    if norms_out.exists():
        table += "\n" + normalization_report(
            [json.loads(line) for line in norms_out.read_text().splitlines() if line],
            lightfm)
    if negatives_out.exists():
        table += "\n" + normalization_report(
            [json.loads(line) for line in negatives_out.read_text().splitlines() if line],
            lightfm, NEGATIVES_TITLE, NEGATIVES_TEXT)
    if tune_out.exists():
        table += "\n" + tune_report([json.loads(line) for line in
                                       tune_out.read_text().splitlines() if line])
    (args.out.parent / "cold_start.md").write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    main()
