"""Distributed training on a Dask LocalCluster (warprec.dask.fit, warprec/_dask_fit.py).

Skipped without the ``dask`` extra. The cluster runs its workers as threads of this
process (fast to start); each shard's epoch depends only on the item state sent to it and
its own rows, so the result does not depend on how the workers' kernels interleave.
"""

import json
import re

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")

from warprec import WARPFactorizer  # noqa: E402
from warprec import _dask_fit, _validation  # noqa: E402
from warprec import dask as wdask  # noqa: E402
from warprec.datasets import make_interactions  # noqa: E402
from warprec.metrics import evaluate  # noqa: E402

PARAMS = dict(n_components=16, epochs=8, random_state=3)


@pytest.fixture(scope="module")
def client(dask_client):
    return dask_client


@pytest.fixture(scope="module")
def data():
    X = make_interactions(300, 120, 6000, random_state=1).tocsr()
    rng = np.random.default_rng(0)
    rows, cols = X.nonzero()
    test = rng.random(rows.size) < 0.2
    frame = pd.DataFrame({"user_id": rows, "item_id": cols})
    return frame[~test].reset_index(drop=True), frame[test].reset_index(drop=True)


def test_shard_bounds_balance_positives():
    indptr = np.concatenate([[0], np.cumsum([10, 1, 1, 1, 10, 1, 1, 5])])
    bounds = _dask_fit.shard_bounds(indptr, 3)
    assert bounds[0] == 0 and bounds[-1] == 8 and np.all(np.diff(bounds) > 0)
    sizes = np.diff(indptr[bounds])
    assert sizes.max() <= 13
    assert list(_dask_fit.shard_bounds(indptr[:3], 5)) == [0, 1, 2]  # fewer users than shards


def test_fit_trains_a_usable_model(client, data):
    train, test = data
    model = wdask.fit(train, client, **PARAMS)
    assert isinstance(model, WARPFactorizer)
    assert model.epochs_done_ == PARAMS["epochs"]
    assert len(model.history_) == PARAMS["epochs"]
    entry = model.history_[-1]
    assert entry["workers"] == 2
    item_bytes = sum(getattr(model, name).nbytes for name in _dask_fit.ITEM_ARRAYS)
    assert entry["bytes_shipped"] == 4 * item_bytes
    assert entry["samples"] == len(train)
    # every user row was trained (none is left at its starting values)
    start = WARPFactorizer(**dict(PARAMS, epochs=0)).fit(train)
    assert np.all(np.any(model.user_factors_ != start.user_factors_, axis=1))
    assert np.all(np.isfinite(model.item_factors_))
    # quality: close to the same model trained on one machine, far above popularity noise
    alone = WARPFactorizer(**PARAMS, n_threads=1).fit(train)
    ours = evaluate(model, test, train=train, k=10)["ndcg@10"]
    single = evaluate(alone, test, train=train, k=10)["ndcg@10"]
    untrained = evaluate(start, test, train=train, k=10)["ndcg@10"]
    assert ours > 0.9 * single
    assert ours > 1.5 * untrained
    recs = model.recommend(train["user_id"].iloc[:3].to_numpy(), k=5, as_frame=True)
    assert len(recs) == 15


def test_fit_is_reproducible_with_one_thread_per_worker(client, data):
    train, _ = data
    a = _dask_fit.fit(train, client, **PARAMS, n_threads=1)
    b = _dask_fit.fit(train, client, **PARAMS, n_threads=1)
    for name in _dask_fit.ITEM_ARRAYS + _dask_fit.USER_ARRAYS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    c = _dask_fit.fit(train, client, **dict(PARAMS, random_state=4), n_threads=1)
    assert not np.array_equal(a.item_factors_, c.item_factors_)


def test_combine_mean_and_parquet_input(client, data, tmp_path):
    train, _ = data
    path = tmp_path / "train.parquet"
    train.to_parquet(path)
    model = _dask_fit.fit(str(path), client, combine="mean", **PARAMS)
    assert model.epochs_done_ == PARAMS["epochs"]
    assert list(model.user_ids_) == sorted(train["user_id"].unique())


def test_cosine_loss_keeps_unit_rows(client, data):
    """loss="ccl": the combined item rows go back onto the sphere after every epoch."""
    train, test = data
    model = wdask.fit(train, client, **dict(PARAMS, epochs=4), loss="ccl", n_negatives=20,
                      n_threads=1)
    for rows in (model.item_factors_, model.user_factors_):
        np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, rtol=1e-5)
    start = WARPFactorizer(**dict(PARAMS, epochs=0), loss="ccl").fit(train)
    assert (evaluate(model, test, train=train, k=10)["ndcg@10"]
            > 1.5 * evaluate(start, test, train=train, k=10)["ndcg@10"])


def test_callback_stops_training(client, data):
    train, _ = data
    seen = []

    def callback(model, info):
        seen.append(info["epoch"])
        return info["epoch"] < 2

    model = _dask_fit.fit(train, client, callback=callback, **PARAMS)
    assert seen == [0, 1, 2]
    assert model.epochs_done_ == 3


LOSE_A_WORKER = """
import pandas as pd, distributed
from warprec import dask as wdask
from warprec.datasets import make_interactions
X = make_interactions(300, 120, 6000, random_state=1).tocoo()
train = pd.DataFrame({"user_id": X.row, "item_id": X.col})
if __name__ == "__main__":
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            def lose_a_worker(model, info):
                if info["epoch"] == 0:
                    cluster.scale(1)  # (retire_workers refuses: each worker holds an actor)
            try:
                wdask.fit(train, client, callback=lose_a_worker, n_components=16, epochs=8)
            except RuntimeError as exc:
                print("raised:", exc)
"""


def test_a_lost_worker_fails_the_fit_with_a_clear_error(tmp_path):
    """Run in a fresh process: a cluster of its own, whose worker is lost after the first
    epoch (in this process the other tests' cluster stays up, and closing a worker of a
    second in-process cluster does not stop it reliably)."""
    import subprocess
    import sys

    script = tmp_path / "lose_a_worker.py"
    script.write_text(LOSE_A_WORKER)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # (the worker leaves during epoch 1, or a later one when the machine is busy)
    assert re.search(r"raised: Distributed training failed while training \(epoch [1-7]\)",
                     proc.stdout), proc.stdout
    assert "No model is returned" in proc.stdout


def test_automatic_early_stopping_trains_all_epochs(client, data, monkeypatch):
    """early_stopping="auto" (the default) trains for ``epochs`` on a cluster, even on
    data large enough for the automatic hold-out: nothing is held out."""
    monkeypatch.setattr(_validation, "EARLY_STOPPING_AUTO_USERS", 1)
    train, _ = data
    assert WARPFactorizer(**dict(PARAMS, epochs=0)).fit(train).early_stopping_
    plain = WARPFactorizer(**dict(PARAMS, epochs=0, early_stopping=False)).fit(train)
    model = _dask_fit.fit(train, client, **PARAMS, early_stopping="auto")
    assert model.epochs_done_ == PARAMS["epochs"] and not model.early_stopping_
    assert model.validation_scores_ == [] and model.train_matrix_.nnz == len(train)
    # (resolved on all the positives, as without a hold-out)
    assert model.learning_rate_ == plain.learning_rate_ and model.alpha_ == plain.alpha_


@pytest.mark.parametrize("bad, message", [
    (dict(early_stopping=True), "early_stopping is not available"),
    (dict(early_stopping="refit"), "early_stopping is not available"),
    (dict(learning_rate_drop=0.3), "learning_rate_drop is not available"),
    (dict(combine="max"), "combine must be one of"),
])
def test_bad_options_raise(client, data, bad, message):
    with pytest.raises(ValueError, match=message):
        _dask_fit.fit(data[0], client, **PARAMS, **bad)


def test_cli_fit_on_local_workers(tmp_path, data):
    """`warprec fit --workers 2` trains on a local cluster of two worker processes and
    saves a model that loads; `warprec recommend --workers 2` gives the rows of one
    machine; bad combinations end with one line and exit code 2."""
    import subprocess
    import sys

    train, _ = data
    ratings = tmp_path / "ratings.csv"
    train.rename(columns={"user_id": "user", "item_id": "item"}).to_csv(ratings, index=False)

    def warprec(*args):
        return subprocess.run([sys.executable, "-m", "warprec", *map(str, args)],
                              capture_output=True, text=True, timeout=300)

    proc = warprec("fit", ratings, "-o", tmp_path / "m.npz", "--workers", 2, "--epochs", 2,
                   "--factors", 8, "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "on 2 Dask workers" in proc.stdout and "MB shipped per epoch" in proc.stdout
    model = WARPFactorizer.load(tmp_path / "m.npz")
    assert model.epochs_done_ == 2 and model.n_users_ == train["user_id"].nunique()
    # the same model recommends the same rows on two local workers as on one machine
    users = [str(u) for u in sorted(train["user_id"].unique())[:7]]
    here = warprec("recommend", tmp_path / "m.npz", *users, "-k", 4, "-o", tmp_path / "a.csv")
    there = warprec("recommend", tmp_path / "m.npz", *users, "-k", 4, "-o", tmp_path / "b.csv",
                    "--workers", 2)
    assert here.returncode == 0 and there.returncode == 0, there.stderr
    assert (tmp_path / "a.csv").read_text() == (tmp_path / "b.csv").read_text()
    assert len((tmp_path / "b.csv").read_text().splitlines()) == 1 + 7 * 4
    for bad, message in ((["--workers", 0], "positive integer"),
                         (["--workers", 2, "--early-stopping"], "not available"),
                         (["--workers", 2, "--dask-scheduler", "tcp://x:1"], "not both")):
        proc = warprec("fit", ratings, "-o", tmp_path / "bad.npz", *bad)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr


# ---------------------------------------------------------------------- warprec evaluate on Dask
@pytest.fixture(scope="module")
def cli_files(tmp_path_factory, data):
    """The train / test rows as CSV files (column names as a user would have them) and a
    small model fitted on one machine, saved."""
    folder = tmp_path_factory.mktemp("cli_dask")
    train, test = data
    files = dict(dir=folder, ratings=folder / "ratings.csv", test=folder / "test.csv",
                 model=folder / "model.npz")
    for frame, name in ((train, "ratings"), (test, "test")):
        frame.rename(columns={"user_id": "user", "item_id": "item"}).to_csv(files[name],
                                                                            index=False)
    WARPFactorizer(n_components=8, epochs=2, random_state=0, verbose=False).fit(
        train).save(files["model"])
    return files


def _main(capsys, *args):
    """``warprec ARGS`` in this process: (exit code, stdout, stderr)."""
    from warprec.cli import main

    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def on_test_cluster(client, monkeypatch):
    """The CLI's ``--workers`` / ``--dask-scheduler`` run on this module's in-process
    cluster instead of starting one (fast)."""
    import contextlib

    from warprec import cli

    monkeypatch.setattr(cli, "_dask_client", lambda args: contextlib.nullcontext(client))


def test_cli_evaluate_on_local_workers_equals_one_machine(cli_files, capsys):
    """`warprec evaluate --model M --workers 2` (a real local cluster of two worker
    processes) prints the JSON of the single-machine evaluation, to the last digit, and
    nothing from Dask on stderr."""
    import subprocess
    import sys

    f = cli_files
    args = ["evaluate", f["ratings"], "--test", f["test"], "--model", f["model"], "--json"]
    code, here, _ = _main(capsys, *args)
    assert code == 0
    proc = subprocess.run([sys.executable, "-m", "warprec", *map(str, args), "--workers", "2"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == here
    assert set(json.loads(here)) == {"warprec", "popularity"}
    assert "distributed" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_cli_evaluate_on_dask_text_and_fit(cli_files, capsys, on_test_cluster):
    """On Dask: with --model, the table is the single machine's, byte for byte; without,
    the model is trained on the cluster and the popularity row is still the single
    machine's (it does not depend on the fit)."""
    f = cli_files
    common = ["evaluate", f["ratings"], "--test", f["test"], "-k", 5, "--metrics",
              "ndcg,auc,precision"]
    code, here, _ = _main(capsys, *common, "--model", f["model"])
    assert code == 0
    code, there, _ = _main(capsys, *common, "--model", f["model"], "--dask-scheduler",
                           "tcp://unused:8786")
    assert code == 0 and there == here
    assert "popularity" in here and "auc" in here
    code, out, err = _main(capsys, *common, "--workers", 2, "--epochs", 2, "--factors", 8,
                           "--quiet", "--json")
    assert code == 0, err
    # (with --json the fit's report goes to stderr: stdout is the JSON alone)
    assert "epochs on 2 Dask workers" in err
    result = json.loads(out)
    single = json.loads(_main(capsys, *common, "--model", f["model"], "--json")[1])
    assert result["popularity"] == single["popularity"]
    assert result["warprec"].keys() == single["warprec"].keys()
    assert result["warprec"]["n_users"] == single["warprec"]["n_users"]
    assert 0.0 < result["warprec"]["ndcg@5"] <= 1.0


@pytest.mark.parametrize("bad, message", [
    (["--workers", 0], "positive integer"),
    (["--workers", 2, "--dask-scheduler", "tcp://x:1"], "not both"),
    (["--workers", 2, "--early-stopping"], "not available with distributed training"),
])
def test_cli_evaluate_on_dask_bad_options(cli_files, capsys, monkeypatch, bad, message):
    """Bad cluster options end with one line and exit code 2, before a cluster starts."""
    from warprec import cli

    def no_cluster(args):
        raise AssertionError("a cluster was started")

    monkeypatch.setattr(cli, "_dask_client", no_cluster)
    code, _, err = _main(capsys, "evaluate", cli_files["ratings"], *bad)
    assert code == 2 and message in err, err
    assert len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------------- Parquet in and out
def test_cli_reads_and_writes_parquet(cli_files, data, capsys, on_test_cluster):
    """Ratings and test files (and users files) may be Parquet, a file or a folder written
    by Dask; `warprec recommend -o FILE.parquet` writes the rows its CSV output has, on one
    machine or on Dask."""
    pytest.importorskip("pyarrow")
    import dask.dataframe as dd

    f, folder = cli_files, cli_files["dir"]
    train, test = data
    train.to_parquet(folder / "ratings.parquet")
    dd.from_pandas(test, npartitions=2).to_parquet(folder / "test_parts")  # a folder
    args = ["evaluate", "--model", f["model"], "--json"]
    code, expected, _ = _main(capsys, *args, f["ratings"], "--test", f["test"])
    assert code == 0
    code, got, err = _main(capsys, *args, folder / "ratings.parquet", "--test",
                           folder / "test_parts")
    assert code == 0, err
    assert got == expected

    users = [str(u) for u in sorted(train["user_id"].unique())[:5]]
    pd.DataFrame({"user_id": [int(u) for u in users]}).to_parquet(folder / "users.parquet")
    assert _main(capsys, "recommend", f["model"], *users, "-k", 3, "-o",
                 folder / "recs.csv")[0] == 0
    code, out, err = _main(capsys, "recommend", f["model"], *users, "-k", 3, "-o",
                           folder / "recs.parquet")
    assert code == 0 and "(parquet)" in out, err
    code, _, err = _main(capsys, "recommend", f["model"], "--users-file",
                         folder / "users.parquet", "-k", 3, "-o", folder / "dask.pq",
                         "--workers", 2)
    assert code == 0, err
    written = pd.read_parquet(folder / "recs.parquet")
    assert list(written.columns) == ["user_id", "item_id", "score", "rank"]
    pd.testing.assert_frame_equal(pd.read_parquet(folder / "dask.pq"), written)
    as_csv = pd.read_csv(folder / "recs.csv")
    pd.testing.assert_frame_equal(written.drop(columns="score"),
                                  as_csv.drop(columns="score"), check_dtype=False)
    np.testing.assert_allclose(written["score"], as_csv["score"], rtol=1e-6)

    code, _, err = _main(capsys, "recommend", f["model"], *users, "--format", "parquet")
    assert code == 2 and "-o FILE.parquet" in err


def test_cli_parquet_without_pyarrow_says_what_to_install(cli_files, data, capsys,
                                                          monkeypatch):
    """Without pyarrow, Parquet in or out ends with one line naming what to install."""
    pytest.importorskip("pyarrow")
    import sys

    f, folder = cli_files, cli_files["dir"]
    path = folder / "no_engine.parquet"
    data[0].to_parquet(path)
    for engine in ("pyarrow", "fastparquet"):
        monkeypatch.setitem(sys.modules, engine, None)   # `import pyarrow` fails
    code, _, err = _main(capsys, "evaluate", path, "--model", f["model"])
    assert code == 2 and "pip install 'warprec[dask]'" in err, err
    user = str(data[0]["user_id"].iloc[0])
    code, _, err = _main(capsys, "recommend", f["model"], user, "-o", folder / "none.parquet")
    assert code == 2 and "pip install 'warprec[dask]'" in err, err
    assert not (folder / "none.parquet").exists()
    assert len(err.strip().splitlines()) == 1


def test_read_ratings_recognises_parquet(tmp_path):
    """read_ratings reads Parquet by suffix, by its magic bytes (any name) or by
    format="parquet", with the usual column detection; a damaged file or a folder without
    Parquet files gets a clear error."""
    pytest.importorskip("pyarrow")
    from warprec.data import read_ratings

    frame = pd.DataFrame({"userId": ["a", "b", "a"], "movieId": [3, 4, 5],
                          "rating": [4.0, 5.0, 3.0]})
    frame.to_parquet(tmp_path / "r.parquet")
    frame.to_parquet(tmp_path / "ratings.dat")   # a misleading suffix
    expected = pd.DataFrame({"user_id": ["a", "b", "a"], "item_id": [3, 4, 5],
                             "rating": [4.0, 5.0, 3.0]})
    for path, fmt in ((tmp_path / "r.parquet", "auto"), (tmp_path / "ratings.dat", "auto"),
                      (tmp_path / "ratings.dat", "parquet")):
        got = read_ratings(path, format=fmt)
        pd.testing.assert_frame_equal(got, expected, check_dtype=False)
        assert got["item_id"].dtype == np.int64
    (tmp_path / "bad.parquet").write_text("user,item\n1,2\n")
    with pytest.raises(ValueError, match="could not be read as Parquet"):
        read_ratings(tmp_path / "bad.parquet")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="is a directory"):
        read_ratings(tmp_path / "empty")
