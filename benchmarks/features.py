"""Side features on ml-latest-small: the hybrid model (identity + genres) against the plain
model on warm items, and items never seen in training ranked from their genres alone.

    .venv/bin/python benchmarks/features.py
    .venv/bin/python benchmarks/features.py --epochs 30 --threads 1

Ratings >= 4 are positives, split per user 80/20 (``split_random``, seed 42, as in
``defaults.py``). *Warm*: ``WARPFactorizer()`` with its defaults, without features and
with ``item_features`` = the genres of ``movies.csv`` (plus the indicator features),
NDCG@10 and Recall@20 of the test split (``warprec.metrics.evaluate``), and the median
epoch time. *Cold*: a seeded 10% of the movies lose every training row; the hybrid model
is fit on the rest, then every test user's cold movies are ranked among all cold movies
from their genres (``recommend(..., item_features=...)``): NDCG@10 against random
scores, and against ranking the cold movies by their genres' popularity in training
(the share of training positives of each genre, summed over the movie's genres).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "ml-latest-small"


def _median_epoch(model):
    return float(np.median([h["seconds"] for h in model.history_]))


def _lightfm_cold(model, cold_genres, users, relevant, args):
    """LightFM 1.17's hybrid WARP model on the same interactions and the same feature
    matrix as warprec's fitted ``model`` (indicators + genres), with its learning rate,
    max_sampled and epochs; the cold movies embedded from their genre rows."""
    try:
        from lightfm import LightFM
    except Exception as exc:  # noqa: BLE001 - any import failure: not available
        return f"not installed ({type(exc).__name__})"
    from warprec.metrics import evaluate_factors

    lfm = LightFM(no_components=model.user_factors_.shape[1], loss="warp",
                  learning_rate=model.learning_rate_, max_sampled=model.max_sampled,
                  random_state=args.seed)
    lfm.fit(model.train_matrix_.tocoo(), item_features=model.item_features_,
            epochs=model.epochs_done_, num_threads=args.threads)
    encoded, _ = model.item_feature_encoder_.transform(cold_genres)
    n_identity = model.item_features_.shape[1] - encoded.shape[1]
    cold = sp.hstack([sp.csr_matrix((encoded.shape[0], n_identity), dtype=np.float32),
                      encoded], format="csr")
    biases, factors = lfm.get_item_representations(features=cold)
    _, user_factors = lfm.get_user_representations()
    rows = model._known("user", users)
    ndcg = evaluate_factors(user_factors[rows].astype(np.float32),
                            factors.astype(np.float32), biases.astype(np.float32), relevant,
                            k=10, metrics=["ndcg"])["ndcg@10"]
    return f"NDCG@10 {ndcg:.4f} (same features, {model.epochs_done_} epochs)"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=None, help="default: the model's")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-identity", action="store_true",
                        help="cold part: identity_features=False")
    args = parser.parse_args(argv)

    from warprec import WARPFactorizer
    from warprec.data import positives, read_features, read_ratings, split_random
    from warprec.metrics import evaluate

    if not (SHARED / "ratings.csv").exists():
        print(f"ml-latest-small is not at {SHARED}")
        return 2
    ratings = positives(read_ratings(SHARED / "ratings.csv"), min_rating=4.0)
    genres = read_features(SHARED / "movies.csv", columns=["genres"])
    train, test = split_random(ratings, 0.2, random_state=42)
    genres = genres[genres["item_id"].isin(train["item_id"].unique())]
    params = dict(n_threads=args.threads, random_state=args.seed)
    if args.epochs:
        params["epochs"] = args.epochs

    print("warm (ml-latest-small, ratings >= 4, split_random 0.2 seed 42)")
    for label, features in (("plain", None), ("identity + genres", genres)):
        tic = time.perf_counter()
        model = WARPFactorizer(**params).fit(train, item_features=features)
        seconds = time.perf_counter() - tic
        metrics = evaluate(model, test, train=train, k=10, metrics=["ndcg"])
        recall = evaluate(model, test, train=train, k=20, metrics=["recall"])["recall@20"]
        print(f"  {label:<18} NDCG@10 {metrics['ndcg@10']:.4f}  Recall@20 {recall:.4f}  "
              f"epoch {_median_epoch(model) * 1e3:.1f} ms  fit {seconds:.1f} s")

    gen = np.random.default_rng(args.seed)
    movies = np.sort(ratings["item_id"].unique())
    cold = set(gen.choice(movies, len(movies) // 10, replace=False).tolist())
    warm_train = train[~train["item_id"].isin(cold)]
    cold_test = test[test["item_id"].isin(cold) & test["user_id"].isin(warm_train["user_id"])]
    all_genres = read_features(SHARED / "movies.csv", columns=["genres"])
    cold_genres = all_genres[all_genres["item_id"].isin(cold)].reset_index(drop=True)
    model = WARPFactorizer(identity_features=not args.no_identity, **params).fit(
        warm_train, item_features=all_genres[all_genres["item_id"].isin(
            warm_train["item_id"].unique())])
    users = np.sort(cold_test["user_id"].unique())
    column = {item: k for k, item in enumerate(cold_genres["item_id"])}
    row = {u: k for k, u in enumerate(users)}
    relevant = sp.csr_matrix((np.ones(len(cold_test), np.float32),
                              ([row[u] for u in cold_test["user_id"]],
                               [column[i] for i in cold_test["item_id"]])),
                             shape=(len(users), len(cold_genres)))
    from warprec.metrics import evaluate_factors

    factors, biases = model.item_embeddings(item_features=cold_genres)
    user_factors = model.user_embeddings(users=users)
    hybrid = evaluate_factors(user_factors, factors, biases, relevant, k=10,
                              metrics=["ndcg"])["ndcg@10"]
    share = warm_train.merge(all_genres, on="item_id")["genres"].str.split("|").explode()
    share = share.value_counts(normalize=True)
    popularity = np.array([sum(share.get(g, 0.0) for g in str(text).split("|"))
                           for text in cold_genres["genres"]], np.float32)
    by_genre = evaluate_factors(np.zeros((len(users), 1), np.float32),
                                np.zeros((len(cold_genres), 1), np.float32), popularity,
                                relevant, k=10, metrics=["ndcg"])["ndcg@10"]
    chance = np.mean([evaluate_factors(user_factors, gen.standard_normal(factors.shape)
                                       .astype(np.float32), np.zeros(len(cold_genres),
                                                                     np.float32),
                                       relevant, k=10, metrics=["ndcg"])["ndcg@10"]
                      for _ in range(5)])
    lightfm = _lightfm_cold(model, cold_genres, users, relevant, args)
    print(f"cold ({len(cold)} movies without training rows, {len(users)} users with test "
          f"positives on them, ranked among the {len(cold_genres)} cold movies)")
    print(f"  hybrid, from genres   NDCG@10 {hybrid:.4f}")
    print(f"  LightFM hybrid        {lightfm}")
    print(f"  genre popularity      NDCG@10 {by_genre:.4f}")
    print(f"  random                NDCG@10 {chance:.4f}")
    return 0


if __name__ == "__main__":
    main()
