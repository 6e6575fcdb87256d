"""The command line, run as `python -m warprec ...` in subprocesses: the happy paths, and
bad paths / formats / flags / ids that must end with one line on stderr and exit code 2,
never a traceback."""

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from warprec import WARPFactorizer

ENV = dict(os.environ, PYTHONWARNINGS="default")


def warprec(*args, cwd=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "warprec", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, env=ENV, timeout=timeout)


def _ratings_csv(path, n_users=30, n_items=20, seed=0, user_prefix=""):
    gen = np.random.default_rng(seed)
    lines = ["userId,movieId,rating,timestamp"]
    for u in range(n_users):
        for i in gen.choice(n_items, size=gen.integers(6, 12), replace=False):
            lines.append(f"{user_prefix}{u + 1},{100 + i},{gen.integers(1, 6)},"
                         f"{1_000_000 + u * 100 + int(i)}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Input files plus a model fitted by `warprec fit` (the first happy path)."""
    d = tmp_path_factory.mktemp("cli")
    f = dict(dir=d, ratings=_ratings_csv(d / "ratings.csv"),
             test=_ratings_csv(d / "test.csv", seed=1),
             strangers=_ratings_csv(d / "strangers.csv", user_prefix="x"),
             model=d / "model.npz")
    (d / "movies.csv").write_text("movieId,title,genres\n" + "".join(
        f"{100 + i},Film number {i} ({1990 + i}),Drama\n" for i in range(20)))
    f["titles"] = d / "movies.csv"
    (d / "binary.csv").write_bytes(bytes(range(256)) * 4)
    (d / "latin1.csv").write_bytes("user,item\nJos\xe9,1\nAna,2\n".encode("latin-1"))
    (d / "empty.csv").write_bytes(b"")
    (d / "nocols.csv").write_text("alpha,beta\n1,2\n3,4\n")
    (d / "ragged.csv").write_text("user,item,rating\n1,2,3\n4,5,6,7,8\n")
    (d / "plain.gz").write_text("user,item\n1,2\n")
    proc = warprec("fit", f["ratings"], "-o", f["model"], "--epochs", 3, "--quiet",
                   "--factors", 8, "--threads", 1)
    assert proc.returncode == 0, proc.stderr
    assert "saved model to" in proc.stdout and f["model"].exists()
    model = f["model"].read_bytes()
    (d / "truncated.npz").write_bytes(model[: len(model) // 2])
    return f


def _seen(ratings_path, user):
    rows = [line.split(",") for line in ratings_path.read_text().splitlines()[1:]]
    return {int(r[1]) for r in rows if r[0] == str(user)}


def test_fit_with_item_features(files):
    """--item-features reads a movies.csv-style file (genres "a|b"); the saved model has
    the genres as features."""
    d = files["dir"]
    (d / "genres.csv").write_text("movieId,title,genres\n" + "".join(
        f"{100 + i},Film {i},{'Drama|Comedy' if i % 2 else 'Drama'}\n" for i in range(20)))
    proc = warprec("fit", files["ratings"], "-o", d / "hybrid.npz", "--epochs", 2, "--quiet",
                   "--factors", 4, "--threads", 1, "--item-features", d / "genres.csv")
    assert proc.returncode == 0, proc.stderr
    from warprec import WARPFactorizer
    model = WARPFactorizer.load(d / "hybrid.npz")
    assert model.item_feature_names_.tolist()[-2:] == ["genres=Comedy", "genres=Drama"]
    proc = warprec("recommend", d / "hybrid.npz", 1, "-k", 2)
    assert proc.returncode == 0, proc.stderr


def test_fit_with_feature_normalization(files):
    """--feature-normalization reaches the model (saved with it); a value it does not know
    ends with the allowed ones on stderr."""
    d = files["dir"]
    (d / "genres2.csv").write_text("movieId,genres\n" + "".join(
        f"{100 + i},{'Drama|Comedy' if i % 2 else 'Drama'}\n" for i in range(20)))
    proc = warprec("fit", files["ratings"], "-o", d / "normed.npz", "--epochs", 1, "--quiet",
                   "--factors", 4, "--threads", 1, "--item-features", d / "genres2.csv",
                   "--feature-normalization", "side", "--feature-weight", 0.5,
                   "--feature-negatives", 0.25)
    assert proc.returncode == 0, proc.stderr
    model = WARPFactorizer.load(d / "normed.npz")
    assert model.feature_normalization_ == "side" and model.feature_weight_ == 0.5
    assert model.feature_negatives == 0.25
    np.testing.assert_allclose(np.asarray(model.item_features_.sum(axis=1)).ravel(), 1.5,
                               rtol=1e-6)
    proc = warprec("fit", files["ratings"], "--item-features", d / "genres2.csv",
                   "--feature-normalization", "l1")
    assert proc.returncode == 2 and "none" in proc.stderr and "Traceback" not in proc.stderr


def test_recommend_users_file_to_csv_and_json(files):
    """Users from a file (one id per line, or a CSV's user_id column) and the command
    line together; CSV and JSON rows user_id, item_id, score, rank[, title]."""
    d = files["dir"]
    (d / "users.txt").write_text("2\n3\n")
    (d / "users.csv").write_text("user_id,segment\n2,a\n3,b\n")
    expected = None
    for users_file in ("users.txt", "users.csv"):
        out = d / "recs.csv"
        proc = warprec("recommend", files["model"], 1, "--users-file", d / users_file, "-k", 3,
                       "-o", out)
        assert proc.returncode == 0, proc.stderr
        assert "wrote 9 recommendations for 3 users" in proc.stdout
        lines = out.read_text().splitlines()
        assert lines[0] == "user_id,item_id,score,rank"
        rows = [line.split(",") for line in lines[1:]]
        assert [r[0] for r in rows] == ["1"] * 3 + ["2"] * 3 + ["3"] * 3
        assert [r[3] for r in rows] == ["1", "2", "3"] * 3
        for r in rows:
            assert int(r[1]) not in _seen(files["ratings"], int(r[0]))
        assert expected is None or rows == expected
        expected = rows
    proc = warprec("recommend", files["model"], 2, "-k", 2, "--format", "json", "--titles",
                   files["titles"])
    assert proc.returncode == 0, proc.stderr
    records = json.loads(proc.stdout)
    assert [r["rank"] for r in records] == [1, 2] and {r["user_id"] for r in records} == {2}
    assert all(r["title"].startswith("Film number") for r in records)
    assert [[str(r["user_id"]), str(r["item_id"])] for r in records] == [
        row[:2] for row in expected[3:5]]


def test_fit_with_the_cosine_loss(files):
    out = files["dir"] / "ccl.npz"
    proc = warprec("fit", files["ratings"], "-o", out, "--epochs", 2, "--quiet", "--factors",
                   8, "--threads", 1, "--loss", "ccl", "--n-negatives", 15, "--margin", 0.7,
                   "--negative-weight", 4, "--dropout", 0.1)
    assert proc.returncode == 0, proc.stderr
    model = WARPFactorizer.load(out)
    assert (model.loss, model.n_negatives, model.margin, model.negative_weight_,
            model.dropout) == ("ccl", 15, 0.7, 4.0, 0.1)
    np.testing.assert_allclose(np.linalg.norm(model.item_factors_, axis=1), 1.0, rtol=1e-5)


def test_fit_with_a_learning_rate_drop(files):
    out = files["dir"] / "drop.npz"
    proc = warprec("fit", files["ratings"], "-o", out, "--epochs", 3, "--quiet", "--factors",
                   4, "--threads", 1, "--early-stopping", "--learning-rate-drop", 0.5)
    assert proc.returncode == 0, proc.stderr
    model = WARPFactorizer.load(out)
    assert model.learning_rate_drop == 0.5 and model.early_stopping_
    proc = warprec("fit", files["ratings"], "-o", out, "--epochs", 3, "--quiet",
                   "--no-early-stopping", "--learning-rate-drop", 0.5)
    assert proc.returncode != 0 and "needs early stopping" in proc.stderr


def test_fit_with_the_sampled_softmax(files):
    out = files["dir"] / "softmax.npz"
    proc = warprec("fit", files["ratings"], "-o", out, "--epochs", 2, "--quiet", "--factors",
                   8, "--threads", 1, "--loss", "softmax", "--n-negatives", 15,
                   "--temperature", 0.3)
    assert proc.returncode == 0, proc.stderr
    model = WARPFactorizer.load(out)
    assert (model.loss, model.n_negatives, model.temperature) == ("softmax", 15, 0.3)


def test_fit_recommend_evaluate(files):
    proc = warprec("recommend", files["model"], 1, 2, 3, "-k", 4)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    blocks = proc.stdout.split("user ")[1:]
    assert len(blocks) == 3
    for user, block in zip((1, 2, 3), blocks):
        items = [int(line.split(".")[1].split()[0]) for line in block.splitlines()[1:]]
        assert len(items) == 4 and not set(items) & _seen(files["ratings"], user)
    proc = warprec("recommend", files["model"], 1, "-k", 3, "--titles", files["titles"],
                   "--include-seen")
    assert proc.returncode == 0 and proc.stdout.count("Film number") == 3, proc.stderr
    proc = warprec("evaluate", files["ratings"], "--test", files["test"], "-k", 5,
                   "--epochs", 3, "--quiet", "--factors", 8)
    assert proc.returncode == 0, proc.stderr
    assert "warprec" in proc.stdout and "popularity" in proc.stdout
    assert "ndcg@5" in proc.stdout and "Traceback" not in proc.stderr
    # (a fit's report goes to stderr with --json: stdout is the JSON alone)
    proc = warprec("evaluate", files["ratings"], "--test", files["test"], "-k", 5,
                   "--epochs", 3, "--quiet", "--factors", 8, "--json")
    assert proc.returncode == 0, proc.stderr
    assert set(json.loads(proc.stdout)) == {"warprec", "popularity"}
    assert "fitted" in proc.stderr
    proc = warprec("evaluate", files["ratings"], "--test", files["test"], "--model",
                   files["model"], "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert set(result) == {"warprec", "popularity"}
    assert 0.0 <= result["warprec"]["ndcg@10"] <= 1.0 and result["warprec"]["n_users"] == 30
    assert "auc" not in result["warprec"]  # the full AUC only when asked for
    proc = warprec("evaluate", files["ratings"], "--test", files["test"], "--model",
                   files["model"], "--json", "--metrics", "ndcg, auc")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    for label in ("warprec", "popularity"):
        assert set(result[label]) == {"ndcg@10", "auc", "n_users"}
        assert 0.0 <= result[label]["auc"] <= 1.0


def test_evaluate_random_split_and_tuned(files):
    proc = warprec("evaluate", files["ratings"], "--min-rating", 3, "--test-fraction", 0.5,
                   "--tuned", "--epochs", 2, "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "evaluated on" in proc.stdout


def test_demo_with_few_epochs():
    proc = warprec("demo", "--epochs", 3)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "NDCG@10 is" in proc.stdout and "top 5 for user" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_help_and_version_of_each_command():
    import warprec as package

    for args in ([], ["fit"], ["evaluate"], ["recommend"], ["demo"]):
        proc = warprec(*args, "--help")
        assert proc.returncode == 0 and "usage: warprec" in proc.stdout
    proc = warprec("--version")
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout == f"warprec {package.__version__}\n"


def test_metrics_help_names_every_metric(capsys):
    from warprec.cli import build_parser
    from warprec.metrics import METRIC_NAMES

    with pytest.raises(SystemExit):
        build_parser().parse_args(["evaluate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert all(name in text for name in METRIC_NAMES)


# ---------------------------------------------------------------------- bad input
BAD = {
    # name: (arguments, regex the single stderr line must contain)
    "fit missing file": (["fit", "{dir}/nope.csv", "-o", "{dir}/m1.npz"], "No such file"),
    "fit directory": (["fit", "{dir}", "-o", "{dir}/m1.npz"], "directory"),
    "fit binary file": (["fit", "{dir}/binary.csv", "-o", "{dir}/m1.npz"], "binary"),
    "fit latin-1 file": (["fit", "{dir}/latin1.csv", "-o", "{dir}/m1.npz"], "encoding"),
    "fit empty file": (["fit", "{dir}/empty.csv", "-o", "{dir}/m1.npz"], "empty"),
    "fit unknown columns": (["fit", "{dir}/nocols.csv", "-o", "{dir}/m1.npz"],
                            "No user_id column"),
    "fit ragged lines": (["fit", "{dir}/ragged.csv", "-o", "{dir}/m1.npz"],
                         "different number of fields"),
    "fit fake gzip": (["fit", "{dir}/plain.gz", "-o", "{dir}/m1.npz"], "decompress"),
    "fit wrong separator": (["fit", "{ratings}", "-o", "{dir}/m1.npz", "--sep", ";"], "sep="),
    "fit output folder missing": (["fit", "{ratings}", "-o", "{dir}/no/such/m.npz"],
                                  "does not exist"),
    "fit output is a directory": (["fit", "{ratings}", "-o", "{dir}"], "is a directory"),
    "fit min rating too high": (["fit", "{ratings}", "-o", "{dir}/m1.npz", "--min-rating",
                                 "9"], "no rows left"),
    "fit negative epochs": (["fit", "{ratings}", "-o", "{dir}/m1.npz", "--epochs", "-1"],
                            "epochs"),
    "fit zero factors": (["fit", "{ratings}", "-o", "{dir}/m1.npz", "--factors", "0"],
                         "n_components"),
    "fit nan learning rate": (["fit", "{ratings}", "-o", "{dir}/m1.npz", "--learning-rate",
                               "nan"], "learning_rate"),
    "fit zero threads": (["fit", "{ratings}", "-o", "{dir}/m1.npz", "--threads", "0"],
                         "n_threads"),
    "fit negative seed": (["fit", "{ratings}", "-o", "{dir}/m1.npz", "--seed", "-1"],
                          "random_state"),
    "fit unknown weighting": (["fit", "{ratings}", "-o", "{dir}/m1.npz", "--rank-weighting",
                               "bogus"], "rank_weighting"),
    "fit diverging": (["fit", "{ratings}", "-o", "{dir}/m1.npz", "--alpha", "100",
                       "--learning-rate", "1", "--epochs", "60", "--quiet"], "diverged"),
    "fit unknown loss": (["fit", "{ratings}", "-o", "{dir}/m1.npz", "--loss", "hinge"],
                         "invalid choice"),
    "fit non-integer epochs": (["fit", "{ratings}", "-o", "{dir}/m1.npz", "--epochs", "x"],
                               "invalid int value"),
    "fit unknown flag": (["fit", "{ratings}", "-o", "{dir}/m1.npz", "--bogus"],
                         "unrecognized arguments"),
    "fit without output": (["fit", "{ratings}"], "required"),
    "recommend missing model": (["recommend", "{dir}/nope.npz", "1"], "No model file"),
    "recommend csv as model": (["recommend", "{ratings}", "1"],
                               "not a readable warprec model"),
    "recommend truncated model": (["recommend", "{dir}/truncated.npz", "1"],
                                  "not a readable warprec model|damaged"),
    "recommend unknown user": (["recommend", "{model}", "1", "999"], "not seen at fit time"),
    "recommend text user": (["recommend", "{model}", "abc"], "not a number"),
    "recommend k zero": (["recommend", "{model}", "1", "-k", "0"],
                         "-k must be a positive integer"),
    "recommend k negative": (["recommend", "{model}", "1", "-k", "-4"],
                             "-k must be a positive integer"),
    "recommend missing titles": (["recommend", "{model}", "1", "--titles", "{dir}/no.csv"],
                                 "No such file"),
    "recommend no users": (["recommend", "{model}"], "no users given"),
    "recommend missing users file": (["recommend", "{model}", "--users-file",
                                      "{dir}/nope.txt"], "cannot read the users file"),
    "recommend users csv without user_id": (["recommend", "{model}", "--users-file",
                                             "{dir}/nocols.csv"], "has no user id column"),
    "recommend unknown output extension": (["recommend", "{model}", "1", "-o",
                                            "{dir}/recs.xlsx"], "cannot tell the format"),
    "recommend bad format": (["recommend", "{model}", "1", "--format", "xml"],
                             "invalid choice"),
    "evaluate k zero": (["evaluate", "{ratings}", "-k", "0"], "-k must be a positive integer"),
    "evaluate bad fraction": (["evaluate", "{ratings}", "--test-fraction", "1.5"],
                              "test-fraction"),
    "evaluate missing test": (["evaluate", "{ratings}", "--test", "{dir}/nope.csv"],
                              "No such file"),
    "evaluate strangers only": (["evaluate", "{ratings}", "--test", "{strangers}", "--model",
                                 "{model}"], "no test user is known"),
    "evaluate csv as model": (["evaluate", "{ratings}", "--model", "{ratings}"],
                              "not a readable warprec model"),
    "evaluate unknown metric": (["evaluate", "{ratings}", "--metrics", "ndcg,rmse"],
                                "unknown metric 'rmse'"),
    "evaluate empty metrics": (["evaluate", "{ratings}", "--metrics", ","],
                               "at least one metric"),
    "evaluate empty split": (["evaluate", "{ratings}", "--test-fraction", "0.01", "--epochs",
                              "1", "--quiet"], "no test rows"),
    "no command": ([], "required"),
    "unknown command": (["frobnicate"], "invalid choice"),
}


#: Cases run in a real `python -m warprec` subprocess (about a second each); the others
#: call warprec.cli.main in-process (same code path after argument parsing) to keep the
#: suite fast.
SUBPROCESS = {"fit missing file", "fit binary file", "fit fake gzip", "fit diverging",
              "fit output folder missing", "fit unknown flag", "fit without output",
              "recommend csv as model", "recommend truncated model", "recommend unknown user",
              "recommend k zero", "evaluate strangers only", "evaluate empty split",
              "no command", "unknown command"}


def _arguments(files, name):
    return [a.format(**{k: str(v) for k, v in files.items()}) for a in BAD[name][0]]


@pytest.fixture(scope="module")
def bad_runs(files):
    """The SUBPROCESS cases, run in parallel: name -> (exit code, stderr)."""
    def run(name):
        proc = warprec(*_arguments(files, name), cwd=files["dir"])
        return name, (proc.returncode, proc.stderr)

    with ThreadPoolExecutor(max_workers=3) as pool:
        return dict(pool.map(run, sorted(SUBPROCESS)))


def _in_process(files, name, capsys, monkeypatch):
    from warprec.cli import main

    monkeypatch.chdir(files["dir"])
    capsys.readouterr()
    try:
        code = main(_arguments(files, name))
    except SystemExit as exc:  # argparse usage errors
        code = exc.code
    return code, capsys.readouterr().err


@pytest.mark.parametrize("name", list(BAD))
def test_bad_input_gives_one_line_and_exit_code_2(files, bad_runs, name, capsys,
                                                  monkeypatch):
    import re

    if name in SUBPROCESS:
        code, stderr = bad_runs[name]
    else:
        code, stderr = _in_process(files, name, capsys, monkeypatch)
    assert code == 2, (code, stderr[-2000:])
    assert "Traceback" not in stderr
    lines = [ln for ln in stderr.splitlines()
             if ln.strip() and not ln.startswith("warprec: warning:") and "epoch/s" not in ln]
    assert len(lines) == 1, stderr
    assert re.match(r"^warprec( \w+)?: error: ", lines[0]), lines[0]
    assert re.search(BAD[name][1], lines[0]), lines[0]
    assert len(lines[0]) < 600


def test_failed_fits_leave_no_model_file(files, bad_runs):
    assert not (files["dir"] / "m1.npz").exists()
    assert not list(files["dir"].glob(".warprec-*"))


def test_unexpected_errors_are_one_line_too(files, monkeypatch, capsys):
    """A bug (here: an injected RuntimeError) is reported in one line with exit code 1;
    WARPREC_DEBUG=1 re-raises it for the traceback."""
    import warprec.cli as cli

    def broken(args, out):
        raise RuntimeError("injected failure")

    monkeypatch.setitem(cli.COMMANDS, "recommend", broken)
    monkeypatch.delenv("WARPREC_DEBUG", raising=False)
    assert cli.main(["recommend", str(files["model"]), "1"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: RuntimeError: injected failure" in err
    monkeypatch.setenv("WARPREC_DEBUG", "1")
    with pytest.raises(RuntimeError, match="injected"):
        cli.main(["recommend", str(files["model"]), "1"])


def test_evaluate_reports_rows_it_cannot_score(files, monkeypatch, capsys):
    """Test users/items unseen in training: evaluated without them, one warning line each."""
    from warprec.cli import main

    mixed = files["dir"] / "mixed.csv"
    mixed.write_text(files["test"].read_text() + "9001,100,5,1\n9002,101,4,1\n1,999,5,1\n")
    monkeypatch.chdir(files["dir"])
    assert main(["evaluate", str(files["ratings"]), "--test", str(mixed), "--model",
                 str(files["model"])]) == 0
    captured = capsys.readouterr()
    assert "evaluated on 30 test users" in captured.out
    lines = captured.err.strip().splitlines()
    assert lines == ["warprec: warning: 2 test rows of 2 users unseen in training were left "
                     "out of the evaluation.",
                     "warprec: warning: 1 test rows name items unseen in training; they "
                     "count as relevant items that are never recommended."]


def test_evaluate_explains_text_versus_number_ids(files, monkeypatch, capsys):
    from warprec.cli import main

    text_ids = files["dir"] / "text_ids.csv"
    text_ids.write_text(files["test"].read_text() + "x1,100,5,1\n")
    monkeypatch.chdir(files["dir"])
    assert main(["evaluate", str(files["ratings"]), "--test", str(text_ids), "--model",
                 str(files["model"])]) == 2
    err = capsys.readouterr().err
    assert "user ids are numbers but the test file's are text" in err and err.count("\n") == 1


# ---------------------------------------------------------------------- serving (issue 39)
def test_recommend_unknown_users_error_skip_or_popular(files):
    """An unknown user stops the batch by default, with a message naming --on-unknown;
    skip leaves it out with a warning, popular serves it the most popular items and marks
    its rows in the fallback column."""
    proc = warprec("recommend", files["model"], 1, 999, "-k", 3)
    assert proc.returncode == 2 and "999" in proc.stderr and "--on-unknown" in proc.stderr

    def rows_of(*users, option):
        out = files["dir"] / f"{option}.csv"
        proc = warprec("recommend", files["model"], *users, "-k", 3, "--on-unknown", option,
                       "-o", out)
        assert proc.returncode == 0, proc.stderr
        return proc.stderr, [line.split(",") for line in out.read_text().splitlines()]

    stderr, rows = rows_of(1, 999, option="skip")
    assert "warprec: warning: 1 requested user(s) unseen at fit time got no " in stderr
    assert rows[0] == ["user_id", "item_id", "score", "rank"]
    assert [r[0] for r in rows[1:]] == ["1"] * 3
    stderr, rows = rows_of(999, 1, option="popular")
    assert "got the most popular items" in stderr
    assert rows[0] == ["user_id", "item_id", "score", "rank", "fallback"]
    assert [(r[0], r[4]) for r in rows[1:]] == [("999", "True")] * 3 + [("1", "False")] * 3
    counts = {}
    for line in files["ratings"].read_text().splitlines()[1:]:
        item = int(line.split(",")[1])
        counts[item] = counts.get(item, 0) + 1
    popular = sorted(counts, key=lambda item: (-counts[item], item))[:3]
    assert [int(r[1]) for r in rows[1:4]] == popular
    proc = warprec("recommend", files["model"], 999, "-k", 2, "--on-unknown", "popular")
    assert proc.returncode == 0 and "most popular items)" in proc.stdout, proc.stderr


def test_recommend_a_non_numeric_id_of_a_numeric_model_is_an_unknown_user(files, capsys):
    from warprec.cli import main

    assert main(["recommend", str(files["model"]), "1", "stranger", "-k", "2"]) == 2
    assert "'stranger' is not a number" in capsys.readouterr().err
    assert main(["recommend", str(files["model"]), "1", "stranger", "-k", "2",
                 "--on-unknown", "popular"]) == 0
    assert "stranger" in capsys.readouterr().out


def test_users_file_with_movielens_header(files):
    """A users file headed userId (MovieLens's header), alone or in a CSV, reads as
    fit reads ratings."""
    d = files["dir"]
    (d / "users_ml.txt").write_text("userId\n2\n3\n")
    (d / "users_ml.csv").write_text("segment,userId\na,2\nb,3\n")
    (d / "users_none.csv").write_text("segment,who\na,2\n")
    outputs = []
    for name in ("users_ml.txt", "users_ml.csv"):
        proc = warprec("recommend", files["model"], "--users-file", d / name, "-k", 2,
                       "--format", "csv")
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1]
    assert [line.split(",")[0] for line in outputs[0].splitlines()[1:]] == ["2", "2", "3", "3"]
    proc = warprec("recommend", files["model"], "--users-file", d / "users_none.csv")
    assert proc.returncode == 2 and "no user id column" in proc.stderr


def test_fit_id_columns_and_the_explicit_ratings_warning(files):
    """--user-col/--item-col name other id columns; ratings of five values without
    --min-rating warn (once), binary ones or --min-rating do not."""
    d = files["dir"]
    lines = files["ratings"].read_text().splitlines()
    (d / "odd.csv").write_text("member,sku,rating\n" + "".join(
        ",".join(line.split(",")[:3]) + "\n" for line in lines[1:]))
    common = ("--epochs", 1, "--quiet", "--factors", 4, "--threads", 1)
    proc = warprec("fit", d / "odd.csv", "-o", d / "odd.npz", *common)
    assert proc.returncode == 2 and "--user-col" in proc.stderr, proc.stderr
    proc = warprec("fit", d / "odd.csv", "-o", d / "odd.npz", "--user-col", "member",
                   "--item-col", "sku", *common)
    assert proc.returncode == 0, proc.stderr
    warned = [line for line in proc.stderr.splitlines() if "look like explicit" in line]
    assert len(warned) == 1 and "--min-rating" in warned[0]
    assert WARPFactorizer.load(d / "odd.npz").n_users_ == 30
    proc = warprec("fit", d / "odd.csv", "-o", d / "odd.npz", "--user-col", "member",
                   "--item-col", "sku", "--min-rating", 4, *common)
    assert proc.returncode == 0 and "explicit" not in proc.stderr, proc.stderr
    (d / "clicks.csv").write_text("user,item,rating\n" + "".join(
        f"{u},{i},1\n" for u in range(5) for i in range(u, u + 4)))
    proc = warprec("fit", d / "clicks.csv", "-o", d / "clicks.npz", *common)
    assert proc.returncode == 0 and "explicit" not in proc.stderr, proc.stderr


def test_recommend_with_item_features_ranks_items_unseen_at_fit(files):
    """`recommend --item-features` ranks the items of the file (one unseen at fit
    included) with a model fit with features; without features it is an error."""
    d = files["dir"]
    genres = "movieId,title,genres\n" + "".join(
        f"{100 + i},Film {i},{'Drama|Comedy' if i % 2 else 'Drama'}\n" for i in range(20))
    (d / "fit_genres.csv").write_text(genres)
    (d / "catalogue.csv").write_text(genres + "555,Brand new,Comedy\n")
    proc = warprec("fit", files["ratings"], "-o", d / "hybrid2.npz", "--epochs", 2,
                   "--quiet", "--factors", 4, "--threads", 1, "--min-rating", 1,
                   "--item-features", d / "fit_genres.csv")
    assert proc.returncode == 0, proc.stderr
    proc = warprec("recommend", d / "hybrid2.npz", 1, "-k", 21, "--item-features",
                   d / "catalogue.csv", "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    items = [int(line.split(",")[1]) for line in proc.stdout.splitlines()[1:]]
    assert 555 in items and set(items) <= set(range(100, 120)) | {555}
    assert not set(items) & _seen(files["ratings"], 1)
    proc = warprec("recommend", files["model"], 1, "--item-features", d / "catalogue.csv")
    assert proc.returncode == 2 and "no side features" in proc.stderr
