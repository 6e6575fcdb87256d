"""Item cold start: split_cold_items, FeaturePopularityRecommender, evaluate_cold_items
(against a slow reference) and `warprec evaluate --cold-items`."""

import warnings

import numpy as np
import pandas as pd
import pytest
from naive_metrics import naive_ndcg, naive_precision, naive_ranking

from warprec import WARPFactorizer, WarprecWarning
from warprec.baselines import FeaturePopularityRecommender
from warprec.evaluation import evaluate_cold_items, evaluate_cold_users
from warprec.splitting import split_cold_items, split_cold_users

GENRES = ["A", "B", "C", "D"]


def _catalogue(n_users=60, n_items=40, seed=0):
    """Positives of users who each like one genre (items of genre ``item % 4``), and the
    items' genres (an item may have a second one)."""
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(n_users):
        liked = [i for i in range(n_items) if i % 4 == u % 4]
        for i in rng.choice(liked, size=6, replace=False):
            rows.append((f"u{u}", 1000 + int(i)))
        rows.append((f"u{u}", 1000 + int(rng.integers(n_items))))
    df = pd.DataFrame(rows, columns=["user_id", "item_id"]).drop_duplicates(ignore_index=True)
    genres = [GENRES[i % 4] + ("|" + GENRES[(i + 1) % 4] if i % 5 == 0 else "")
              for i in range(n_items)]
    features = pd.DataFrame({"item_id": 1000 + np.arange(n_items), "genres": genres})
    return df, features


def _cold_split(kind):
    """The catalogue, its features of ``kind``, the cold split (train, test) and the
    warm and cold entities' feature rows."""
    df, item_features = _catalogue()
    if kind == "item":
        features, (train, test) = item_features, split_cold_items(df, 0.25, random_state=1)
    else:
        features, (train, test) = _users(df), split_cold_users(df, 0.25, random_state=2)
    key = f"{kind}_id"
    return (df, features, train, test, features[features[key].isin(train[key])],
            features[features[key].isin(test[key])])


def test_split_cold_items_holds_out_every_row_of_a_share_of_the_items():
    df, features = _catalogue()
    train, test = split_cold_items(df, 0.25, random_state=3)
    assert len(train) + len(test) == len(df)
    cold = set(test["item_id"])
    assert len(cold) == round(0.25 * df["item_id"].nunique())
    assert not cold & set(train["item_id"])
    # same seed, same split; candidates restricted to the given items
    again = split_cold_items(df, 0.25, random_state=3)[1]
    pd.testing.assert_frame_equal(test, again)
    allowed = features["item_id"][:10]
    _, test = split_cold_items(df, 0.5, random_state=0, items=allowed)
    assert set(test["item_id"]) <= set(allowed) and test["item_id"].nunique() == 5


@pytest.mark.parametrize("fraction, match", [(0.0, r"\(0, 1\)"), (1.0, r"\(0, 1\)"),
                                             (0.001, "holds out none")])
def test_split_cold_items_errors(fraction, match):
    df, _ = _catalogue()
    with pytest.raises(ValueError, match=match):
        split_cold_items(df, fraction)


def test_feature_popularity_scores_items_by_their_features_share():
    df, features = _catalogue()
    model = FeaturePopularityRecommender().fit(df, item_features=features)
    counts = df["item_id"].value_counts()
    share = {}
    for g in GENRES:
        having = features["item_id"][features["genres"].str.contains(g)]
        share[g] = counts.reindex(having).fillna(0).sum() / len(df)
    expected = [sum(share[g] for g in features.set_index("item_id").loc[i, "genres"].split("|"))
                for i in model.item_ids_]
    assert np.allclose(model.item_biases_, expected, rtol=1e-6)
    # an unseen item is scored from its features alone
    new = pd.DataFrame({"item_id": [5000], "genres": ["B|C"]})
    factors, biases = model.item_embeddings(item_features=new)
    assert factors.shape == (1, 1) and not factors.any()
    assert np.isclose(biases[0], share["B"] + share["C"], rtol=1e-6)


def _reference(model, test, features, k):
    """Mean NDCG@k and precision@k of ranking every candidate for each known test user."""
    factors, biases = model.item_embeddings(item_features=features)
    U = model.user_embeddings()
    candidates = list(features["item_id"])
    ndcg, precision = [], []
    for user, rows in test.groupby("user_id"):
        if user not in set(model.user_ids_):
            continue
        u = list(model.user_ids_).index(user)
        # one dot product per candidate: candidates with the same features then tie
        # exactly, as they do in the evaluator (a BLAS matrix-vector product may round
        # equal rows differently by their position, on some processors)
        scores = np.array([U[u] @ row for row in factors], dtype=np.float32) + biases
        ranked = naive_ranking(scores, np.ones(len(candidates), bool))
        relevant = {candidates.index(i) for i in rows["item_id"]}
        ndcg.append(naive_ndcg(ranked, {i: 1.0 for i in relevant}, k, form="linear"))
        precision.append(naive_precision(ranked, relevant, k))
    return np.mean(ndcg), np.mean(precision), len(ndcg)


@pytest.mark.parametrize("kind", ["feature-popularity", "hybrid"])
def test_evaluate_cold_items_against_the_reference(kind):
    df, features, train, test, warm, cold = _cold_split("item")
    if kind == "hybrid":
        model = WARPFactorizer(n_components=8, epochs=5, n_threads=1, random_state=0).fit(
            train, item_features=warm)
    else:
        model = FeaturePopularityRecommender().fit(train, item_features=warm)
    out = evaluate_cold_items(model, test, cold, k=5, metrics=["ndcg", "precision"])
    ndcg, precision, n_users = _reference(model, test, cold, 5)
    assert out["n_users"] == n_users and out["n_items"] == len(cold)
    assert np.isclose(out["ndcg@5"], ndcg, atol=1e-6)
    assert np.isclose(out["precision@5"], precision, atol=1e-6)


def test_evaluate_cold_items_ranks_by_features():
    """The users' genre is all there is to learn: the features' ranking of cold items
    beats the arbitrary order of zero scores."""
    df, features, train, test, warm, cold = _cold_split("item")
    model = WARPFactorizer(n_components=8, epochs=30, n_threads=1, random_state=0).fit(
        train, item_features=warm)
    learnt = evaluate_cold_items(model, test, cold, k=5, metrics=["ndcg"])["ndcg@5"]
    flat = FeaturePopularityRecommender().fit(train)   # no features: every cold score 0
    flat_features = cold[["item_id"]]
    with pytest.raises(ValueError, match="no side features"):
        evaluate_cold_items(flat, test, flat_features, k=5)
    popular = FeaturePopularityRecommender().fit(train, item_features=warm)
    base = evaluate_cold_items(popular, test, cold, k=5, metrics=["ndcg"])["ndcg@5"]
    assert learnt > 1.5 * base


def test_evaluate_cold_items_errors_and_unknown_users():
    df, features, train, test, warm, cold = _cold_split("item")
    model = FeaturePopularityRecommender().fit(train, item_features=warm)
    with pytest.raises(ValueError, match="trained on"):
        evaluate_cold_items(model, test, features, k=5)
    with pytest.raises(ValueError, match="repeats items"):
        evaluate_cold_items(model, test, pd.concat([cold, cold[:1]]), k=5)
    with pytest.raises(ValueError, match="without a row in item_features"):
        evaluate_cold_items(model, test, cold[1:], k=5)
    with pytest.raises(ValueError, match="DataFrame with user_id and item_id"):
        evaluate_cold_items(model, test.rename(columns={"user_id": "u"}), cold, k=5)
    with pytest.raises(ValueError, match="k must"):
        evaluate_cold_items(model, test, cold, k=0)
    stranger = pd.DataFrame({"user_id": ["nobody"], "item_id": [cold["item_id"].iloc[0]]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = evaluate_cold_items(model, pd.concat([test, stranger]), cold, k=5)
    assert any(issubclass(w.category, WarprecWarning) and "1 users" in str(w.message)
               for w in caught)
    assert out["n_users"] == test["user_id"].nunique()


def _cli(argv, capsys):
    from warprec.cli import main

    capsys.readouterr()
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    df, features = _catalogue(n_users=80, n_items=40)
    folder = tmp_path_factory.mktemp("cold")
    df.assign(rating=5.0).to_csv(folder / "ratings.csv", index=False)
    features.to_csv(folder / "items.csv", index=False)
    return folder / "ratings.csv", folder / "items.csv"


def test_cli_evaluate_cold_items(files, capsys):
    ratings, items = files
    base = ["evaluate", ratings, "--item-features", items, "--cold-items", 0.25, "--threads",
            1, "--epochs", 20, "--quiet", "-k", 5]
    code, out, err = _cli(base, capsys)
    assert code == 0, err
    warm, cold = out.split("cold items: ")
    assert "warm: " in warm and "10 items never trained on" in cold
    for table, labels in ((warm, ("warprec", "popularity", "feature pop.")),
                          (cold, ("warprec", "feature pop."))):
        rows = [line.split()[0] for line in table.splitlines() if line.startswith(
            ("warprec", "popularity", "feature"))]
        assert tuple(r if r != "feature" else "feature pop." for r in rows) == labels
    code, out, err = _cli(base + ["--json"], capsys)
    assert code == 0, err
    import json
    result = json.loads(out)
    assert set(result) == {"warm", "cold"}
    assert set(result["cold"]) == {"warprec", "feature pop."}
    assert result["cold"]["warprec"]["n_items"] == 10
    # the same seed gives the same split and fit: the model ranks cold items by features
    assert result["cold"]["warprec"]["ndcg@5"] > result["cold"]["feature pop."]["ndcg@5"]


@pytest.mark.parametrize("extra, match", [
    ([], "pass --item-features"),
    (["--item-features", "{items}", "--test", "{ratings}"], "leave out --test"),
    (["--item-features", "{items}", "--workers", "2"], "leave out --dask"),
    (["--item-features", "{items}", "--cold-items", "1.5"], r"must be in \(0, 1\)"),
])
def test_cli_evaluate_cold_items_errors(files, capsys, extra, match):
    ratings, items = files
    argv = ["evaluate", ratings, "--cold-items", 0.2] + [
        a.format(items=items, ratings=ratings) for a in extra]
    code, _, err = _cli(argv, capsys)
    assert code != 0 and pytest.importorskip("re").search(match, err), err


def test_cli_evaluate_with_item_features_fits_the_hybrid_model(files, capsys):
    ratings, items = files
    code, out, err = _cli(["evaluate", ratings, "--item-features", items, "--threads", 1,
                           "--epochs", 3, "--quiet", "--json"], capsys)
    assert code == 0, err
    import json
    assert set(json.loads(out)) == {"warprec", "popularity"}
    assert "fitted" in err


# ------------------------------------------------------------------ user cold start
def _users(df):
    """Each user's features: the genre they like (u % 4) and a feature of no use."""
    users = pd.unique(df["user_id"])
    index = np.array([int(u[1:]) for u in users])
    return pd.DataFrame({"user_id": users, "taste": [GENRES[i % 4] for i in index],
                         "noise": [f"n{i % 3}" for i in index]})


def _user_reference(model, test, features, k):
    U = model.user_embeddings(user_features=features)
    V, b = model.item_embeddings()
    items = list(model.item_ids_)
    ndcg = []
    for row, user in enumerate(features["user_id"]):
        relevant = {items.index(i) for i in test["item_id"][test["user_id"] == user]
                    if i in set(items)}
        if not relevant:
            continue
        ranked = naive_ranking(U[row] @ V.T + b, np.ones(len(items), bool))
        ndcg.append(naive_ndcg(ranked, {i: 1.0 for i in relevant}, k, form="linear"))
    return np.mean(ndcg), len(ndcg)


def test_split_cold_users():
    df, _ = _catalogue()
    train, test = split_cold_users(df, 0.25, random_state=2)
    cold = set(test["user_id"])
    assert len(cold) == 15 and not cold & set(train["user_id"])
    assert len(train) + len(test) == len(df)


@pytest.mark.parametrize("kind", ["popularity", "hybrid"])
def test_evaluate_cold_users_against_the_reference(kind):
    from warprec.baselines import PopularityRecommender

    df, features, train, test, warm, cold = _cold_split("user")
    if kind == "hybrid":
        model = WARPFactorizer(n_components=8, epochs=5, n_threads=1, random_state=0).fit(
            train, user_features=warm)
    else:
        model = PopularityRecommender().fit(train)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WarprecWarning)   # items only cold users rated
        out = evaluate_cold_users(model, test, cold, k=5, metrics=["ndcg"])
    ndcg, n_users = _user_reference(model, test, cold, 5)
    assert out["n_users"] == n_users
    assert np.isclose(out["ndcg@5"], ndcg, atol=1e-6)


def test_evaluate_cold_users_ranks_by_features():
    from warprec.baselines import PopularityRecommender

    df, features, train, test, warm, cold = _cold_split("user")
    model = WARPFactorizer(n_components=8, epochs=30, n_threads=1, random_state=0).fit(
        train, user_features=warm)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WarprecWarning)
        learnt = evaluate_cold_users(model, test, cold, k=5, metrics=["ndcg"])["ndcg@5"]
        base = evaluate_cold_users(PopularityRecommender().fit(train), test, cold, k=5,
                                   metrics=["ndcg"])["ndcg@5"]
    assert learnt > 1.5 * base


def test_evaluate_cold_users_errors():
    df, features, train, test, warm, cold = _cold_split("user")
    model = FeaturePopularityRecommender().fit(train)
    with pytest.raises(ValueError, match="trained on"):
        evaluate_cold_users(model, pd.concat([test, train[:1]]), features, k=5)
    with pytest.raises(ValueError, match="without a row in user_features"):
        evaluate_cold_users(model, test, cold[1:], k=5)
    with pytest.raises(ValueError, match="repeats users"):
        evaluate_cold_users(model, test, pd.concat([cold, cold[:1]]), k=5)
    with pytest.raises(ValueError, match="user_features must be a DataFrame with user_id"):
        evaluate_cold_users(model, test, cold.rename(columns={"user_id": "id"}), k=5)
    assert len(warm)


def test_cli_evaluate_cold_users(files, tmp_path, capsys):
    ratings, items = files
    df = pd.read_csv(ratings)
    users = tmp_path / "users.csv"
    _users(df).to_csv(users, index=False)
    base = ["evaluate", ratings, "--user-features", users, "--cold-users", 0.25, "--threads",
            1, "--epochs", 20, "--quiet", "-k", 5]
    code, out, err = _cli(base, capsys)
    assert code == 0, err
    assert "cold users: 20 users never trained on" in out
    code, out, err = _cli(base + ["--json"], capsys)
    assert code == 0, err
    import json
    result = json.loads(out)
    assert set(result["cold"]) == {"warprec", "popularity"}
    assert result["cold"]["warprec"]["n_users"] == 20
    assert result["cold"]["warprec"]["ndcg@5"] > result["cold"]["popularity"]["ndcg@5"]
    code, _, err = _cli(base + ["--item-features", items, "--cold-items", 0.2], capsys)
    assert code != 0 and "not both" in err
    code, _, err = _cli(["evaluate", ratings, "--cold-users", 0.2], capsys)
    assert code != 0 and "--user-features FILE" in err
