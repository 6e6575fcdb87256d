"""Property-based fuzzing of warprec's entry points with messy input.

Every generated case either works and gives the documented result (checked against an
oracle built independently of warprec), or raises ValueError / TypeError / KeyError
(FileNotFoundError for paths) from warprec itself, with a message that names the
problem (see ``clean_errors.py``). The number of cases tried per target is printed at
the end of the pytest run ("warprec fuzzing: cases tried per target").

Hypothesis runs derandomized (fixed seed, no example database), so CI sees the same
cases every time.
"""

import collections
import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from clean_errors import BARE_MESSAGES, assert_clean_error, message_of
from hypothesis import HealthCheck, assume, currently_in_test_context, given, note, settings
from hypothesis import strategies as st

from warprec import DivergenceError, WARPFactorizer, WarprecWarning
from warprec import metrics as wm
from warprec.baselines import PopularityRecommender
from warprec.data import read_ratings

FUZZ = settings(max_examples=120, deadline=None, derandomize=True, database=None,
                print_blob=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much,
                                       HealthCheck.function_scoped_fixture])
FEW = settings(FUZZ, max_examples=60)

#: target -> cases tried / cases rejected with a clean error
CASES = collections.Counter()
REJECTED = collections.Counter()
F32_MAX = float(np.finfo(np.float32).max)


class _FuzzReport:
    """Prints the per-target counts in pytest's terminal summary (also with -q)."""

    def pytest_terminal_summary(self, terminalreporter):
        if not CASES:
            return
        terminalreporter.write_sep("-", "warprec fuzzing: cases tried per target")
        for target in sorted(CASES):
            terminalreporter.write_line(
                f"{target:<40} {CASES[target]:>5} cases, {REJECTED[target]:>4} rejected "
                f"with a clear error, {CASES[target] - REJECTED[target]:>4} checked results")
        terminalreporter.write_line(f"{'total':<40} {sum(CASES.values()):>5} cases")


@pytest.fixture(scope="module", autouse=True)
def _report_counts(request):
    manager = request.config.pluginmanager
    if not manager.has_plugin("warprec-fuzz-report"):
        manager.register(_FuzzReport(), "warprec-fuzz-report")
    yield


class Rejected:
    """The outcome of a call that raised (a clean error, already checked)."""

    def __init__(self, exc):
        self.exc = exc
        self.message = message_of(exc)


def attempt(target, call, allowed=(ValueError, TypeError, KeyError), match=None):
    """Run ``call()``; return its result, or ``Rejected`` after checking the error."""
    CASES[target] += 1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", WarprecWarning)
            return call()
    except Exception as exc:  # noqa: BLE001 - every exception is judged here
        if currently_in_test_context():
            note(f"{type(exc).__name__}: {exc}")
        assert_clean_error(exc, allowed, match)
        REJECTED[target] += 1
        return Rejected(exc)


def must_fail(outcome, match=None):
    assert isinstance(outcome, Rejected), f"expected a clear error, got {outcome!r:.300}"
    if match is not None:
        assert re.search(match, outcome.message, re.IGNORECASE), \
            f"message {outcome.message!r} does not say {match!r}"
    return outcome


def must_work(outcome):
    assert not isinstance(outcome, Rejected), f"valid input rejected: {outcome.message}"
    return outcome


# ======================================================================================
# read_ratings on generated files
# ======================================================================================
_ALIASES = {
    "user_id": ["user_id", "userId", "user", "uid", "UserID", "user-id"],
    "item_id": ["item_id", "movieId", "item", "iid", "movie_id", "ItemId"],
    "rating": ["rating", "Rating", "score", "weight"],
    "timestamp": ["timestamp", "time", "ts"],
}
# strings pandas or the header sniffer treat specially (NA markers, booleans, aliases)
_RESERVED = {"na", "nan", "null", "none", "inf", "true", "false", "n", "nat", "ts", "uid",
             "iid", "user", "item", "time", "date", "movie", "score", "value", "weight",
             "users", "items", "rating", "ratings", "movies", "userid", "itemid", "movieid",
             "datetime", "timestamp", "infinity", "t", "f", "yes", "no"}
_STR_IDS = st.from_regex(r"[a-z]{1,3}[0-9]{0,3}", fullmatch=True).filter(
    lambda s: s not in _RESERVED)
_SEPS = [",", "\t", ";", "|", "::", " "]


@st.composite
def ratings_files(draw):
    """(bytes, expected frame or None, description) of a generated ratings file."""
    n = draw(st.integers(1, 6))
    columns = {}
    kinds = {}
    for role in ("user_id", "item_id"):
        kind = draw(st.sampled_from(["int", "int", "str", "mixed"]))
        kinds[role] = kind
        if kind == "int":
            columns[role] = draw(st.lists(st.integers(0, 10**6), min_size=n, max_size=n))
        elif kind == "str":
            columns[role] = draw(st.lists(_STR_IDS, min_size=n, max_size=n))
        else:
            columns[role] = draw(st.lists(st.one_of(st.integers(0, 999), _STR_IDS),
                                          min_size=n, max_size=n))
    n_optional = draw(st.integers(0, 2))
    if n_optional >= 1:
        columns["rating"] = draw(st.lists(st.sampled_from([1, 2, 3, 4, 5, 0.5, 3.5]),
                                          min_size=n, max_size=n))
    if n_optional == 2:
        columns["timestamp"] = draw(st.lists(st.integers(0, 2**40), min_size=n, max_size=n))
    header = draw(st.sampled_from(["none", "named", "named"]))
    extra = header == "named" and draw(st.booleans())
    roles = list(columns)
    if header == "named" and draw(st.booleans()):
        roles = draw(st.permutations(roles))
    names = [draw(st.sampled_from(_ALIASES[r])) for r in roles]
    if extra:
        roles.append("extra")
        names.append("comment")
        columns["extra"] = draw(st.lists(_STR_IDS, min_size=n, max_size=n))
    sep = draw(st.sampled_from(_SEPS))
    quote = sep in (",", ";", "\t", "|") and draw(st.booleans())

    def field(value):
        text = str(value)
        if quote and isinstance(value, str):
            return f'"{text}"'
        return text

    lines = []
    if header == "named":
        lines.append(sep.join(names))
    for r in range(n):
        lines.append(sep.join(field(columns[role][r]) for role in roles))
    blank = draw(st.booleans())
    if blank:
        lines.insert(draw(st.integers(1, len(lines))), "")
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    text = newline.join(lines) + (newline if draw(st.booleans()) else "")
    data = text.encode()
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data  # UTF-8 byte order mark
    # what read_ratings must return
    expected = {}
    for role in ("user_id", "item_id"):
        values = columns[role]
        if kinds[role] == "mixed" and all(isinstance(v, int) for v in values):
            kinds[role] = "int"
        if kinds[role] == "mixed" and all(isinstance(v, str) for v in values):
            kinds[role] = "str"
        expected[role] = [str(v) for v in values] if kinds[role] != "int" else list(values)
    for role in ("rating", "timestamp"):
        if role in columns:
            expected[role] = columns[role]
    # a headerless file whose first line is text above numbers (or whose only line is
    # text) cannot be told from one with a header line
    first_text = [isinstance(columns[r][0], str) for r in roles]
    later_number = [any(not isinstance(v, str) for v in columns[r][1:]) for r in roles]
    ambiguous = header == "none" and (
        (n == 1 and any(first_text)) or any(a and b for a, b in zip(first_text, later_number)))
    return data, pd.DataFrame(expected), kinds, ambiguous


def _corrupt(draw, data):
    how = draw(st.sampled_from(["truncate", "bad_utf8", "nul", "empty", "drop_field",
                                "extra_field", "random_bytes", "unknown_header"]))
    if how == "truncate":
        return how, data[:draw(st.integers(0, max(len(data) - 1, 0)))]
    if how == "bad_utf8":
        at = draw(st.integers(0, len(data)))
        return how, data[:at] + draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\x80\x80"])) \
            + data[at:]
    if how == "nul":
        at = draw(st.integers(0, len(data)))
        return how, data[:at] + b"\x00" + data[at:]
    if how == "empty":
        return how, draw(st.sampled_from([b"", b"\n", b"  \r\n\t\n"]))
    if how == "random_bytes":
        return how, draw(st.binary(max_size=120))
    lines = data.split(b"\n")
    if how == "unknown_header":
        lines.insert(0, b",".join([b"alpha", b"beta", b"gamma"]))
        return how, b"\n".join(lines)
    candidates = [i for i, ln in enumerate(lines) if ln.strip()]
    i = draw(st.sampled_from(candidates))
    if how == "drop_field":
        for sep in (b"::", b"\t", b",", b";", b"|", b" "):
            if sep in lines[i]:
                lines[i] = lines[i].rsplit(sep, 1)[0]
                break
        else:
            lines[i] = b""
    else:  # extra_field
        lines[i] = lines[i].rstrip(b"\r") + b",99,extra"
    return how, b"\n".join(lines)


def _check_frame_is_sane(frame):
    """The invariants of every frame read_ratings returns."""
    assert {"user_id", "item_id"} <= set(frame.columns)
    assert set(frame.columns) <= {"user_id", "item_id", "rating", "timestamp"}
    for role in ("user_id", "item_id"):
        col = frame[role]
        assert not col.isna().any()
        values = col.tolist()
        assert all(isinstance(v, int) for v in values) or all(isinstance(v, str) for v in values)
    if "rating" in frame.columns:
        assert np.isfinite(frame["rating"].to_numpy(dtype=np.float64)).all()


@given(ratings_files())
@FUZZ
def test_read_ratings_clean_files(tmp_path_factory, case):
    data, expected, kinds, ambiguous = case
    path = tmp_path_factory.mktemp("rr") / "ratings.csv"
    path.write_bytes(data)
    note(repr(data))
    out = attempt("read_ratings", lambda: read_ratings(path))
    if isinstance(out, Rejected):
        assert ambiguous, f"a well-formed file was rejected: {out.message}"
        return
    _check_frame_is_sane(out)
    assert list(out.columns) == list(expected.columns)
    for role in ("user_id", "item_id"):
        assert out[role].tolist() == expected[role].tolist(), role
        if kinds[role] == "int":
            assert out[role].dtype == np.int64
    if "rating" in expected:
        np.testing.assert_allclose(out["rating"].to_numpy(np.float64),
                                   expected["rating"].to_numpy(np.float64))
    if "timestamp" in expected:
        assert out["timestamp"].tolist() == expected["timestamp"].tolist()


@given(ratings_files(), st.data())
@FUZZ
def test_read_ratings_damaged_files(tmp_path_factory, case, data):
    original = case[0]
    how, damaged = _corrupt(data.draw, original)
    path = tmp_path_factory.mktemp("rr") / "ratings.csv"
    path.write_bytes(damaged)
    note(f"{how}: {damaged!r}")
    out = attempt("read_ratings", lambda: read_ratings(path))
    if how == "bad_utf8":
        must_fail(out, "utf-8|encoding")
    elif how == "nul":
        must_fail(out, "binary|NUL")
    elif how == "empty":
        must_fail(out, "empty")
    elif how == "unknown_header":
        must_fail(out, "column|user_col|field|separator")
    elif not isinstance(out, Rejected):
        _check_frame_is_sane(out)


@pytest.mark.parametrize("kind", ["missing", "directory", "not a path", "gz", "zip", "bz2"])
def test_read_ratings_bad_paths(tmp_path, kind):
    if kind == "missing":
        out = attempt("read_ratings", lambda: read_ratings(tmp_path / "nope.csv"),
                      allowed=FileNotFoundError)
        must_fail(out, "nope.csv")
    elif kind == "directory":
        must_fail(attempt("read_ratings", lambda: read_ratings(tmp_path)), "directory")
    elif kind == "not a path":
        for value in (None, 3, b"x.csv", ["x.csv"]):
            must_fail(attempt("read_ratings", lambda: read_ratings(value)), "path")
    else:  # a plain-text file with a compression suffix
        path = tmp_path / f"ratings.csv.{kind}"
        path.write_bytes(b"1,2,3\n4,5,6\n")
        must_fail(attempt("read_ratings", lambda: read_ratings(path)), "decompress")


# ======================================================================================
# fit on matrices in every format and dtype
# ======================================================================================
_FLOATS = [0.0, 1.0, 1.0, 1.0, 2.0, 0.5, 3.0, 1e-50]
_BAD_FLOATS = [-1.0, math.nan, math.inf, -math.inf, 1e39]  # 1e39 overflows float32
_INTS = [0, 1, 1, 1, 2, 3, 100]
_FORMATS = ["coo", "csr", "csr_unsorted", "csc", "csr_array", "lil", "dok", "dense",
            "matrix", "list", "object"]


@st.composite
def interaction_matrices(draw):
    """(X, expected float64 dense values or None if not a valid container, fmt, dtype)."""
    n_users = draw(st.integers(0, 6))
    n_items = draw(st.integers(0, 6))
    dtype = draw(st.sampled_from(["float64", "float32", "int64", "int8", "uint8", "bool"]))
    fmt = draw(st.sampled_from(_FORMATS))
    nnz = draw(st.integers(0, 14)) if n_users and n_items else 0
    rows = np.array(draw(st.lists(st.integers(0, max(n_users - 1, 0)), min_size=nnz,
                                  max_size=nnz)), dtype=np.int64)
    cols = np.array(draw(st.lists(st.integers(0, max(n_items - 1, 0)), min_size=nnz,
                                  max_size=nnz)), dtype=np.int64)
    if dtype == "bool":
        pool, bad = [True, False, True], []
    elif dtype.startswith("float"):
        pool, bad = _FLOATS, _BAD_FLOATS
    else:
        pool, bad = _INTS, ([-1] if dtype != "uint8" else [])
    drawn = draw(st.lists(st.sampled_from(pool), min_size=nnz, max_size=nnz))
    if nnz and bad and draw(st.integers(0, 3)) == 0:  # one bad value in a quarter of cases
        drawn[draw(st.integers(0, nnz - 1))] = draw(st.sampled_from(bad))
    with np.errstate(over="ignore"):
        vals = np.array(drawn, dtype=np.float64).astype(dtype)
    shape = (n_users, n_items)
    if fmt in ("dense", "matrix", "list", "object"):
        dense = np.zeros(shape, dtype=dtype)
        with np.errstate(over="ignore", invalid="ignore"):
            np.add.at(dense, (rows, cols), vals)
        expected = dense.astype(np.float64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PendingDeprecationWarning)  # np.matrix
            X = {"dense": dense, "matrix": np.asmatrix(dense), "list": dense.tolist(),
                 "object": dense.astype(object)}[fmt]
        return X, expected, fmt, dtype
    expected = np.zeros(shape, dtype=np.float64)
    np.add.at(expected, (rows, cols), vals.astype(np.float64))
    coo = sp.coo_matrix((vals, (rows, cols)), shape=shape)
    if fmt == "coo":
        X = coo
    elif fmt == "csr_unsorted":
        # duplicates kept and column indices in reverse order within each row
        order = np.lexsort((-cols, rows))
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n_users))])
        X = sp.csr_matrix((vals[order], cols[order], indptr), shape=shape)
        assert not X.has_canonical_format or nnz < 2
    elif fmt == "csr":
        X = coo.tocsr()  # scipy sums duplicates in the input dtype (int8/uint8 may wrap)
        with np.errstate(over="ignore", invalid="ignore"):
            expected = X.toarray().astype(np.float64)
    elif fmt == "csc":
        X = sp.csc_matrix((vals, (rows, cols)), shape=shape)
        with np.errstate(over="ignore", invalid="ignore"):
            expected = X.toarray().astype(np.float64)
    elif fmt == "csr_array":
        X = sp.csr_array(coo)
        with np.errstate(over="ignore", invalid="ignore"):
            expected = X.toarray().astype(np.float64)
    elif fmt == "lil":
        X = coo.tolil()
        with np.errstate(over="ignore", invalid="ignore"):
            expected = X.toarray().astype(np.float64)
    else:
        X = coo.todok()
        with np.errstate(over="ignore", invalid="ignore"):
            expected = X.toarray().astype(np.float64)
    return X, expected, fmt, dtype


def _problems(expected):
    """Regexes of every message a matrix with these values may legitimately raise."""
    found = []
    if expected.shape[0] == 0 or expected.shape[1] == 0:
        found.append("at least one user")
    finite = np.isfinite(expected)
    if not finite.all():
        found.append("NaN or infinite")
    if (expected[finite] < 0).any():
        found.append("negative")
    if (expected[finite] > F32_MAX).any():
        found.append("float32")
    if not found and not (expected != 0).any():
        found.append("no positive")
    return found


def _fit_small(X, **kwargs):
    params = dict(n_components=3, epochs=2, n_threads=1, random_state=0)
    params.update(kwargs)
    return WARPFactorizer(**params).fit(X)


def _check_fitted_model(model, pattern):
    """A fitted model's invariants: finite parameters, training matrix = the positives."""
    n_users, n_items = pattern.shape
    assert model.user_factors_.shape == (n_users, model.user_factors_.shape[1])
    assert model.item_factors_.shape[0] == n_items
    assert model._parameters_finite()
    stored = model.train_matrix_
    assert stored.shape == pattern.shape and stored.has_sorted_indices
    assert np.array_equal(stored.toarray() != 0, pattern) or np.array_equal(
        sp.csr_matrix((np.ones(stored.nnz), stored.indices, stored.indptr),
                      shape=stored.shape).toarray() != 0, pattern)
    raw_users = np.arange(n_users) if model.user_ids_ is None else model.user_ids_
    items, scores = model.recommend(raw_users, k=n_items)
    if model.item_ids_ is not None:  # raw ids out: back to column indices (-1 = empty)
        position = {raw: i for i, raw in enumerate(model.item_ids_.tolist())}
        items = np.array([[position.get(r, -1) for r in row] for row in items.tolist()],
                         dtype=np.int64).reshape(items.shape)
    for u in range(n_users):
        shown = set(items[u][items[u] >= 0].tolist())
        assert not shown & set(np.flatnonzero(pattern[u]).tolist()), "recommended a seen item"
        assert len(shown) == n_items - pattern[u].sum()
        assert np.all(np.diff(scores[u][np.isfinite(scores[u])]) <= 0)


@given(interaction_matrices())
@FUZZ
def test_fit_matrices(case):
    X, expected, fmt, dtype = case
    note(f"{fmt} {dtype} {expected.tolist()}")
    out = attempt("fit", lambda: _fit_small(X))
    if fmt == "list":
        must_fail(out, "scipy.sparse matrix")
        return
    if fmt == "object":
        must_fail(out, "numbers")
        return
    problems = _problems(expected)
    if problems:
        must_fail(out, "|".join(problems))
        return
    model = must_work(out)
    assert model.epochs_done_ == 2 and len(model.history_) == 2
    _check_fitted_model(model, expected != 0)


# ======================================================================================
# fit on DataFrames with raw ids
# ======================================================================================
_RAW_IDS = st.one_of(
    st.integers(-5, 40), _STR_IDS, st.sampled_from([None, math.nan, 2.0, 2.5, True]),
    st.integers(2**63, 2**64 + 5))


@st.composite
def id_frames(draw):
    n = draw(st.integers(0, 10))
    kind = {}
    cols = {}
    for role in ("user_id", "item_id"):
        kind[role] = draw(st.sampled_from(["int", "str", "any"]))
        elements = {"int": st.integers(0, 30), "str": _STR_IDS, "any": _RAW_IDS}[kind[role]]
        cols[role] = draw(st.lists(elements, min_size=n, max_size=n))
    frame = pd.DataFrame(cols)
    if draw(st.booleans()):
        frame["rating"] = draw(st.lists(st.sampled_from([1.0, 4.0, -2.0, math.nan]),
                                        min_size=n, max_size=n))
    return frame


def _id_problem(values):
    """Regex of the error a list of raw ids must raise, or None if they are valid."""
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in values):
        return "no (user|item) id"
    if any(isinstance(v, bool) for v in values):
        return "boolean|mix|type"
    kinds = {type(v) for v in values}
    if str in kinds and kinds != {str}:
        return "mix|type"
    if any(isinstance(v, float) and v != int(v) for v in values):
        return "non-integer"
    if any(isinstance(v, int) and v >= 2**63 for v in values):
        return "2\\*\\*(63|53)"
    if any(isinstance(v, float) and abs(v) > 2**53 for v in values):
        return "2\\*\\*53"
    return None


@given(id_frames())
@FUZZ
def test_fit_frames(frame):
    note(repr(frame.to_dict("list")))
    out = attempt("fit", lambda: _fit_small(frame))
    problems = [p for p in (_id_problem(frame[c].tolist()) for c in ("user_id", "item_id"))
                if p]
    if problems:
        must_fail(out, "|".join(problems))
        return
    if len(frame) == 0:
        must_fail(out, "at least one user")
        return
    model = must_work(out)
    users = sorted(set(frame["user_id"].map(lambda v: int(v) if not isinstance(v, str) else v)))
    items = sorted(set(frame["item_id"].map(lambda v: int(v) if not isinstance(v, str) else v)))
    assert model.user_ids_.tolist() == users and model.item_ids_.tolist() == items
    pattern = np.zeros((len(users), len(items)), dtype=bool)
    for u, i in zip(frame["user_id"], frame["item_id"]):
        u = u if isinstance(u, str) else int(u)
        i = i if isinstance(i, str) else int(i)
        pattern[users.index(u), items.index(i)] = True
    _check_fitted_model(model, pattern)


# ======================================================================================
# fit with arbitrary hyperparameters and sample weights
# ======================================================================================
_PARAM_VALUES = {
    "n_components": [1, 2, np.int64(3), 0, -1, 2.0, True, "4", None],
    "epochs": [0, 1, 2, np.int32(1), -1, 1.5, None],
    "learning_rate": [0.05, np.float32(0.1), 1.0, 0.0, -0.1, math.nan, math.inf, "0.1", 1e6],
    "max_sampled": [1, 10, 10**9, 0, -2, 1.5],
    "rank_weighting": ["harmonic", "auc", "log", "precision@2", "owpc-mean", "owpc-top",
                       "owpc-harmonic", "precision@0", "precision@x", "nope", [1.0, 0.5],
                       [0.5, 1.0], [], [math.nan], ["a"], np.ones((2, 2)), None, 5],
    "alpha": [0.0, 0.015, 1.0, -0.5, math.nan, "x", "auto"],
    "n_threads": [None, 1, 2, 99, 0, -1, 1.5],
    "random_state": [0, 7, None, 2**70, -1, "seed", 1.5, np.random.default_rng(3)],
    "loss": ["warp", "warp-kos", "bpr", "ccl", "hinge", None, ["warp"]],
    "n_negatives": [1, 20, 0, 2.5, "10"],
    "margin": [0.8, -1.0, 1.5, math.nan, "x"],
    "negative_weight": ["auto", 5.0, 0.0, -1.0, math.inf, "heavy"],
    "k": [None, 1, 3, 0, 2.5],
    "n": [1, 4, 0, "5"],
    "top_fraction": [None, 0.5, 0.0, 2.0, math.nan],
    "learning_schedule": ["adagrad", "sgd", "rmsprop", 3],
    "negative_sampling": ["uniform", "popularity", "zipf"],
    "rank_estimator": ["sampled", "exact", "oracle"],
    "init_scale": [0.1, 0.0, 1.0, -1.0, math.inf],
    "max_norm": [None, 1.0, 0.0, -1.0, math.nan, "x"],
}


_PARAMS = st.lists(st.sampled_from(sorted(_PARAM_VALUES)), max_size=3, unique=True).flatmap(
    lambda names: st.fixed_dictionaries({n: st.sampled_from(_PARAM_VALUES[n]) for n in names}))


@given(_PARAMS, st.sampled_from([None, None, None, "values", "ones", "negative", "short",
                                 "strings", "huge", "nan"]))
@FUZZ
def test_fit_hyperparameters(params, weight):
    X = sp.csr_matrix(np.array([[1, 0, 2, 0, 1], [0, 1, 0, 0, 3], [1, 1, 0, 1, 0],
                                [0, 0, 1, 0, 0]], dtype=np.float32))
    weights = {None: None, "values": "values", "ones": np.ones(X.nnz),
               "negative": -np.ones(X.nnz), "short": np.ones(2),
               "strings": ["a"] * X.nnz, "huge": np.full(X.nnz, 1e300),
               "nan": np.full(X.nnz, np.nan)}[weight]
    base = dict(n_components=3, epochs=2, n_threads=1)
    base.update(params)
    note(repr(base))

    def fit():
        return WARPFactorizer(**base).fit(X, sample_weight=weights)

    out = attempt("fit-params", fit, allowed=(ValueError, TypeError, DivergenceError))
    if weight in ("negative", "short", "strings", "huge", "nan"):
        must_fail(out)
    if isinstance(out, Rejected):
        if isinstance(out.exc, DivergenceError):
            assert out.exc.epoch >= 0 and "learning_rate" in out.message
        return
    assert out._parameters_finite()
    assert out.epochs_done_ == len(out.history_)


# ======================================================================================
# predict / recommend / similar_items on fitted models
# ======================================================================================
def _models():
    """Fitted models keyed by id kind: 'index' (matrix), 'int' and 'str' raw ids."""
    if not _MODELS:
        gen = np.random.default_rng(0)
        X = sp.random(7, 6, density=0.4, format="csr", random_state=gen, dtype=np.float64)
        X.data[:] = 1.0
        X = X.tolil()
        X[0, :] = 0.0          # a user without positives
        X[1, :] = 1.0          # a user who has seen every item
        X = X.tocsr()
        X.eliminate_zeros()
        _MODELS["index"] = (_fit_small(X, n_components=4), None, None)
        users = [10, 20, 30, 40, 50]
        items = [3, 5, 8, 13, 21, 34]
        rows = [(u, i) for u in users for i in items if gen.random() < 0.4] + [(10, 3)]
        frame = pd.DataFrame(rows, columns=["user_id", "item_id"])
        model = _fit_small(frame, n_components=4)
        _MODELS["int"] = (model, model.user_ids_.tolist(), model.item_ids_.tolist())
        sframe = frame.assign(user_id=frame["user_id"].map(lambda v: f"u{v}"),
                              item_id=frame["item_id"].map(lambda v: f"film {v}"))
        model = _fit_small(sframe, n_components=4)
        # raw ids in the model's order (sorted: "film 13" < "film 3")
        _MODELS["str"] = (model, model.user_ids_.tolist(), model.item_ids_.tolist())
    return _MODELS


_MODELS = {}
_ODD_IDS = [None, math.nan, -1, 2**70, 1.0, 2.5, True, "", "u10", "10", "film 3", b"u10",
            (1,), [1], {"a": 1}, {1}, np.int64(2), np.uint64(2**63 + 3), np.float64(3.0),
            np.str_("u20")]


def _index_of(kind, raw, value):
    """Index of ``value`` or None when the model must reject it."""
    if kind == "index":
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            return None
        return int(value) if 0 <= int(value) < len(raw) else None
    try:
        hash(value)
    except TypeError:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    for index, known in enumerate(raw):
        if type(value) in (int, float, bool) and type(known) is int and value == known:
            return index
        if isinstance(value, str) and isinstance(known, str) and value == known:
            return index
    return None


@st.composite
def id_queries(draw, kind, raw):
    """A scalar id or a list/array of ids: valid in about 2 cases of 3, else with one odd
    element (wrong type, unknown id, nested...)."""
    valid = raw if kind != "index" else list(range(len(raw)))
    odd = st.one_of(st.sampled_from(_ODD_IDS), st.integers(-3, 60))
    spoil = draw(st.integers(0, 2)) == 0
    shape = draw(st.sampled_from(["scalar", "scalar", "list", "list", "array", "empty",
                                  "nested"]))
    if shape == "scalar":
        return draw(odd if spoil else st.sampled_from(valid))
    if shape == "empty":
        return []
    if shape == "nested":
        return [[draw(st.sampled_from(valid))], draw(st.sampled_from(valid))]
    values = draw(st.lists(st.sampled_from(valid), min_size=1, max_size=5))
    if spoil:
        values[draw(st.integers(0, len(values) - 1))] = draw(odd)
    if shape == "array":
        try:
            return np.array(values)
        except ValueError:
            return values
    return values


def _query_indices(kind, raw, query):
    """Indices of a query, or None if the model must reject it."""
    if isinstance(query, (dict, set)):
        return None
    if isinstance(query, list) and any(isinstance(v, list) for v in query):
        return None
    values = query.tolist() if isinstance(query, np.ndarray) else query
    if isinstance(query, np.ndarray) and query.dtype.kind in "US" and kind == "index":
        return None
    if isinstance(values, (list, tuple)) and not isinstance(query, tuple):
        indices = [_index_of(kind, raw, v) for v in values]
        return None if any(i is None for i in indices) else indices
    index = _index_of(kind, raw, query)
    return None if index is None else [index]


#: What a rejected id query's message must talk about.
_ID_ERROR = "must be|not seen|out of range|indices|scalar|sequence|ids"


def _ids_for(kind, raw):
    return list(range(_models()[kind][0].n_users_)) if kind == "index" else raw


@given(st.sampled_from(["index", "int", "str"]), st.data())
@FUZZ
def test_predict(kind, data):
    model, users, items = _models()[kind]
    users = _ids_for(kind, users)
    items = list(range(model.n_items_)) if kind == "index" else items
    uq = data.draw(id_queries(kind, users), label="users")
    iq = data.draw(id_queries(kind, items), label="items")
    out = attempt("predict", lambda: model.predict(uq, iq))
    ui, ii = _query_indices(kind, users, uq), _query_indices(kind, items, iq)
    if ui is None or ii is None:
        must_fail(out, _ID_ERROR)
        return
    if len(ui) != len(ii) and len(ui) != 1 and len(ii) != 1:
        must_fail(out, "same length")
        return
    scores = must_work(out)
    ui, ii = np.broadcast_arrays(np.array(ui, dtype=np.int64), np.array(ii, dtype=np.int64))
    U, V, b = (model.user_factors_.astype(np.float64), model.item_factors_.astype(np.float64),
               model.item_biases_.astype(np.float64))
    expected = np.einsum("ij,ij->i", U[ui], V[ii]) + b[ii]
    assert scores.shape == expected.shape and scores.dtype == np.float32
    np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-6)


def _check_topk(items_out, scores_out, candidates, score_of, k):
    """A best-first top-k of ``candidates`` (index -> score), padded with -1/-inf."""
    k_eff = min(k, len(score_of))
    assert items_out.shape == (k_eff,) and scores_out.shape == (k_eff,)
    filled = [i for i in items_out.tolist() if i != -1]
    assert len(filled) == min(k_eff, len(candidates)), "wrong number of filled slots"
    assert len(set(filled)) == len(filled) and set(filled) <= set(candidates)
    assert np.all(np.isneginf(scores_out[len(filled):]))
    np.testing.assert_allclose(scores_out[:len(filled)], [score_of[i] for i in filled],
                               rtol=1e-5, atol=1e-5)
    assert np.all(np.diff(scores_out[:len(filled)]) <= 1e-6)
    if filled:
        worst = min(score_of[i] for i in filled)
        others = [score_of[i] for i in candidates if i not in filled]
        assert all(s <= worst + 1e-5 for s in others), "a better candidate was left out"


_K_VALUES = st.one_of(st.integers(1, 9), st.sampled_from([0, -1, 2.0, True, "3", None,
                                                          np.int64(2), 10**6]))


@given(st.sampled_from(["index", "int", "str", "popularity"]), st.data())
@FUZZ
def test_recommend(kind, data):
    if kind == "popularity":
        base, users, items = _models()["int"]
        model = PopularityRecommender().fit(base.train_matrix_)
        kind, users, items = "index", list(range(base.n_users_)), list(range(base.n_items_))
    else:
        model, users, items = _models()[kind]
        users = _ids_for(kind, users)
        items = list(range(model.n_items_)) if kind == "index" else items
    query = data.draw(id_queries(kind, users), label="users")
    k = data.draw(_K_VALUES, label="k")
    exclude_seen = data.draw(st.booleans(), label="exclude_seen")
    filter_items = data.draw(st.one_of(st.none(), st.lists(st.sampled_from(items),
                                                           max_size=3)), label="filter")
    only = data.draw(st.one_of(st.none(), st.none(), st.lists(st.sampled_from(items),
                                                              max_size=4)), label="items")
    out = attempt("recommend", lambda: model.recommend(query, k=k, exclude_seen=exclude_seen,
                                                       filter_items=filter_items, items=only))
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
        must_fail(out, "k must be a positive integer")
        return
    indices = _query_indices(kind, users, query)
    if indices is None:
        must_fail(out, _ID_ERROR)
        return
    rec_items, rec_scores = must_work(out)
    single = np.ndim(query) == 0
    if single:
        rec_items, rec_scores = rec_items[None], rec_scores[None]
    assert rec_items.shape[0] == len(indices)
    U, V, b = model.user_factors_, model.item_factors_, model.item_biases_
    position = {raw: i for i, raw in enumerate(items)}
    for row, u in enumerate(indices):
        candidates = set(range(model.n_items_))
        if exclude_seen:
            candidates -= set(model.train_matrix_[u].indices.tolist())
        if only is not None:
            candidates &= {position[i] for i in only}
        if filter_items is not None:
            candidates -= {position[i] for i in filter_items}
        score_of = {i: float(np.dot(U[u].astype(np.float64), V[i]) + b[i])
                    for i in range(model.n_items_)}
        got = [(-1 if (r is None or (kind != "str" and r == -1)) else position[r])
               for r in rec_items[row].tolist()]
        _check_topk(np.array(got), rec_scores[row], sorted(candidates), score_of, int(k))


@given(st.sampled_from(["index", "int", "str"]), st.sampled_from(["items", "users"]),
       st.data())
@FEW
def test_similar_items_and_users(kind, side, data):
    """similar_items, and similar_users with the users in the items' part."""
    model, users, items = _models()[kind]
    if side == "users":
        items = list(range(model.n_users_)) if kind == "index" else users
        factors, similar = model.user_factors_, model.similar_users
    else:
        items = list(range(model.n_items_)) if kind == "index" else items
        factors, similar = model.item_factors_, model.similar_items
    query = data.draw(id_queries(kind, items), label=side)
    k = data.draw(_K_VALUES, label="k")
    out = attempt(f"similar_{side}", lambda: similar(query, k=k))
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
        must_fail(out, "k must be a positive integer")
        return
    indices = _query_indices(kind, items, query)
    if indices is None:
        must_fail(out, _ID_ERROR)
        return
    sim_items, sims = must_work(out)
    if np.ndim(query) == 0:
        sim_items, sims = sim_items[None], sims[None]
    V = factors.astype(np.float64)
    unit = V / np.maximum(np.linalg.norm(V, axis=1, keepdims=True), 1e-300)
    position = {raw: i for i, raw in enumerate(items)}
    for row, q in enumerate(indices):
        score_of = {i: float(unit[q] @ unit[i]) for i in range(len(V))}
        got = [(-1 if (r is None or (kind != "str" and r == -1)) else position[r])
               for r in sim_items[row].tolist()]
        candidates = [i for i in range(len(V)) if i != q]
        _check_topk(np.array(got), sims[row], candidates, score_of, int(k))
        assert np.all(sims[row][np.isfinite(sims[row])] <= 1.0 + 1e-5)


# ======================================================================================
# evaluate
# ======================================================================================
def _naive_metrics(model, test, train, k, extra):
    """Means over test users of the protocol's metrics, from a full sort per user."""
    U, V, b = model.user_factors_, model.item_factors_, model.item_biases_
    scores = U @ V.T + b
    values = collections.defaultdict(list)
    for u in range(test.shape[0]):
        relevant = set(test[u].indices.tolist())
        n_rel = len(relevant) + int(extra[u])
        if n_rel == 0:
            continue
        seen = set(train[u].indices.tolist()) if train is not None else set()
        ranked = sorted((i for i in range(V.shape[0]) if i not in seen),
                        key=lambda i: (-float(scores[u, i]), i))
        hits = [i in relevant for i in ranked[:k]]
        values["precision"].append(sum(hits) / k)
        values["recall"].append(sum(hits) / n_rel)
        ap = sum(sum(hits[:p + 1]) / (p + 1) for p, h in enumerate(hits) if h)
        values["map"].append(ap / min(k, n_rel))
        values["mrr"].append(next((1 / (p + 1) for p, h in enumerate(hits) if h), 0.0))
        dcg = sum(1 / math.log2(p + 2) for p, h in enumerate(hits) if h)
        idcg = sum(1 / math.log2(p + 2) for p in range(min(k, n_rel)))
        values["ndcg"].append(dcg / idcg)
        values["hit_rate"].append(float(any(hits)))
    return {name: float(np.mean(v)) for name, v in values.items()}, len(values["precision"])


@st.composite
def evaluation_cases(draw):
    n_users, n_items = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    train = np.array(draw(st.lists(st.booleans(), min_size=n_users * n_items,
                                   max_size=n_users * n_items))).reshape(n_users, n_items)
    assume(train.any())
    test = np.array(draw(st.lists(st.sampled_from([0.0, 0.0, 1.0, 2.0]),
                                  min_size=n_users * n_items,
                                  max_size=n_users * n_items))).reshape(n_users, n_items)
    poison = draw(st.sampled_from([None, None, None, None, -1.0, math.nan, math.inf]))
    if poison is not None:
        test[draw(st.integers(0, n_users - 1)), draw(st.integers(0, n_items - 1))] = poison
    form = draw(st.sampled_from(["matrix", "frame", "frame", "dense", "coo", "matrix",
                                 "wrong shape", "list"]))
    k = draw(st.one_of(st.integers(1, 8), st.integers(1, 3), st.integers(4, 9),
                       st.sampled_from([0, -2, 1.5, True, None])))
    with_train = draw(st.booleans())
    n_strangers = draw(st.integers(0, 2)) if form == "frame" else 0
    n_new_items = draw(st.integers(0, 2)) if form == "frame" else 0
    return train, test, form, k, with_train, n_strangers, n_new_items


@given(evaluation_cases())
@FUZZ
def test_evaluate(case):
    train, test, form, k, with_train, n_strangers, n_new_items = case
    note(f"{form} k={k} train={train.astype(int).tolist()} test={test.tolist()}")
    n_users, n_items = train.shape
    users = [f"u{u}" for u in range(n_users)]
    items = [f"i{i}" for i in range(n_items)]
    train_frame = pd.DataFrame([(users[u], items[i]) for u, i in zip(*np.nonzero(train))],
                               columns=["user_id", "item_id"])
    raw = form == "frame"
    model = _fit_small(train_frame if raw else sp.csr_matrix(train.astype(np.float32)))
    # the model only knows the users/items present in train
    known_users = sorted(set(train_frame["user_id"])) if raw else users
    known_items = sorted(set(train_frame["item_id"])) if raw else items
    rows = [(users[u], items[i]) for u, i in zip(*np.nonzero(test > 0))]
    rows += [(f"stranger{s}", items[0]) for s in range(n_strangers)]
    rows += [(users[0], f"new{j}") for j in range(n_new_items)]
    if form == "frame":
        test_in = pd.DataFrame(rows, columns=["user_id", "item_id"])
        train_in = train_frame if with_train else None
    elif form == "list":
        test_in, train_in = test.tolist(), None
    elif form == "wrong shape":
        test_in, train_in = sp.csr_matrix(np.ones((n_users + 1, n_items))), None
    else:
        test_in = {"matrix": sp.csr_matrix(test), "dense": test, "coo": sp.coo_matrix(test)}[
            form]
        train_in = sp.csr_matrix(train.astype(np.float64)) if with_train else None
    out = attempt("evaluate", lambda: wm.evaluate(model, test_in, train=train_in, k=k))
    problems = []
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
        problems.append("k must be a positive integer")
    if form == "list":
        problems.append("sparse matrix")
    if form == "wrong shape":
        problems.append("shape")
    if form in ("matrix", "dense", "coo"):
        finite = np.isfinite(test)
        if not finite.all() or (test[finite] < 0).any():
            problems.append("NaN or infinite|negative")
    if problems:
        must_fail(out, "|".join(problems))
        return
    result = must_work(out)
    # the oracle, in the model's index space
    u_index = {u: j for j, u in enumerate(known_users)}
    i_index = {i: j for j, i in enumerate(known_items)}
    test_m = np.zeros((len(known_users), len(known_items)))
    extra = np.zeros(len(known_users), dtype=np.int64)
    unknown_pairs = set()
    for u, i in rows:
        if u not in u_index:
            continue
        if i in i_index:
            test_m[u_index[u], i_index[i]] = 1
        elif (u, i) not in unknown_pairs:
            unknown_pairs.add((u, i))
            extra[u_index[u]] += 1
    train_m = np.zeros_like(test_m, dtype=bool)
    if train_in is not None:
        for u, i in (zip(train_frame["user_id"], train_frame["item_id"]) if raw else
                     ((users[a], items[b]) for a, b in zip(*np.nonzero(train)))):
            train_m[u_index[u], i_index[i]] = True
    expected, n_eval = _naive_metrics(model, sp.csr_matrix(test_m),
                                      sp.csr_matrix(train_m) if train_in is not None else None,
                                      int(k), extra)
    assert result["n_users"] == n_eval
    for name, value in expected.items():
        assert result[f"{name}@{k}"] == pytest.approx(value, rel=1e-6, abs=1e-9), name
    if n_eval == 0:
        assert all(math.isnan(v) for key, v in result.items() if key != "n_users")


# ======================================================================================
# every metric function of warprec.metrics
# ======================================================================================
_ITEM = st.one_of(st.integers(0, 8), st.sampled_from(["a", "b", "c"]))
_RANKED = st.one_of(
    st.lists(_ITEM, max_size=8, unique=True), st.lists(_ITEM, max_size=8, unique=True),
    st.lists(_ITEM, max_size=8),
    st.lists(st.integers(0, 8), max_size=8, unique=True).map(np.array),
    st.sampled_from(["abc", None, 3, np.zeros((2, 2)), {"a": 1}, [[1], [2]]]))
_GAIN = st.one_of(st.sampled_from([0, 1, 2, 0.5, 3.0]),
                  st.sampled_from([-1.0, math.nan, math.inf, "x", None, True]))
_RELEVANT = st.one_of(
    st.sets(_ITEM, max_size=5), st.lists(_ITEM, max_size=5),
    st.dictionaries(_ITEM, _GAIN, max_size=5),
    st.lists(st.integers(0, 8), max_size=4, unique=True).flatmap(
        lambda ids: st.tuples(st.just(ids), st.lists(_GAIN, min_size=len(ids),
                                                     max_size=len(ids)))),
    st.sampled_from(["abc", None, 5, [[1]]]))
_K = st.one_of(st.none(), st.integers(1, 10), st.integers(1, 4),
               st.sampled_from([0, -1, 1.5, True, "2", np.int64(3)]))
_LIST_METRICS = ["precision_at_k", "recall_at_k", "average_precision_at_k",
                 "reciprocal_rank_at_k", "hit_rate_at_k", "ndcg_at_k"]


def _is_item_list(ranked):
    if isinstance(ranked, np.ndarray):
        return ranked.ndim == 1
    return isinstance(ranked, list)


def _valid_k(k):
    return k is None or (isinstance(k, (int, np.integer)) and not isinstance(k, bool)
                         and k >= 1)


def _gains(relevant):
    """item -> gain of a valid ``relevant`` argument, or None if it is invalid."""
    if isinstance(relevant, dict):
        pairs = list(relevant.items())
    elif isinstance(relevant, tuple):
        pairs = list(zip(*relevant))
    elif isinstance(relevant, (set, list)):
        pairs = [(item, 1.0) for item in relevant]
    else:
        return None
    if any(isinstance(item, (list, dict, set)) for item, _ in pairs):
        return None
    for _, gain in pairs:
        if isinstance(gain, bool) or not isinstance(gain, (int, float)) or \
                not math.isfinite(gain) or gain < 0:
            return None
    return {item: float(gain) for item, gain in pairs}


def _reference(name, ranked, gains, k):
    relevant = {item for item, gain in gains.items() if gain > 0}
    cut = len(ranked) if k is None else int(k)
    head = ranked[:cut]
    hits = [item in relevant for item in head]
    if name == "precision_at_k":
        return sum(hits) / cut if cut else 0.0
    if name == "recall_at_k":
        return sum(hits) / len(relevant) if relevant else 0.0
    if name == "average_precision_at_k":
        if not relevant:
            return 0.0
        ap = sum(sum(hits[:p + 1]) / (p + 1) for p, h in enumerate(hits) if h)
        return ap / (len(relevant) if k is None else min(cut, len(relevant)))
    if name == "reciprocal_rank_at_k":
        return next((1 / (p + 1) for p, h in enumerate(hits) if h), 0.0)
    if name == "hit_rate_at_k":
        return float(any(hits))
    dcg = sum((2 ** gains.get(item, 0.0) - 1) / math.log2(p + 2) for p, item in enumerate(head))
    ideal = sorted(gains.values(), reverse=True)[:None if k is None else cut]
    idcg = sum((2 ** g - 1) / math.log2(p + 2) for p, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


@pytest.mark.parametrize("name", _LIST_METRICS)
@given(ranked=_RANKED, relevant=_RELEVANT, k=_K)
@FEW
def test_list_metrics(name, ranked, relevant, k):
    function = getattr(wm, name)
    out = attempt(f"metrics.{name}", lambda: function(ranked, relevant, k))
    items = ranked.tolist() if isinstance(ranked, np.ndarray) else ranked
    gains = _gains(relevant)
    valid = _is_item_list(ranked) and _valid_k(k) and not any(
        isinstance(item, (list, dict, set)) for item in items) and \
        len(set(items)) == len(items)
    uses_gains = name == "ndcg_at_k" or isinstance(relevant, (dict, tuple))
    if not valid or gains is None or (uses_gains and gains is None):
        must_fail(out)
        return
    value = must_work(out)
    assert isinstance(value, float) and 0.0 <= value <= 1.0 + 1e-12
    assert value == pytest.approx(_reference(name, items, gains, k), rel=1e-9, abs=1e-12)


_GAIN_VECTORS = st.one_of(
    *[st.lists(st.sampled_from([0, 1, 2, 3.5, 0.0]), max_size=8)] * 4,
    st.lists(st.sampled_from([0, 1, -1.0, math.nan, math.inf]), max_size=5),
    st.sampled_from(["abc", None, [[1, 2]], [[1, 2], [1]], [True, False], ["a", "b"]]))


@pytest.mark.parametrize("name", ["dcg_at_k", "expected_rank_utility",
                                  "normalized_expected_rank_utility"])
@given(gains=_GAIN_VECTORS, k=_K,
       form=st.sampled_from(["exponential", "linear", "classic", "exponential", "bogus"]),
       d=st.sampled_from([0.0, 1.0, 0.5, math.nan]),
       alpha=st.sampled_from([5.0, 2.0, 3.5, 1.0, 0.5, math.inf]))
@FEW
def test_gain_metrics(name, gains, k, form, d, alpha):
    function = getattr(wm, name)
    if name == "dcg_at_k":
        out = attempt(f"metrics.{name}", lambda: function(gains, k, form))
    else:
        out = attempt(f"metrics.{name}", lambda: function(gains, d, alpha, k))
    numeric = isinstance(gains, list) and all(
        isinstance(g, (int, float)) and math.isfinite(g) for g in gains)
    if name == "dcg_at_k":
        valid = numeric and _valid_k(k) and form != "bogus"
    else:
        valid = numeric and _valid_k(k) and math.isfinite(d) and math.isfinite(alpha) \
            and alpha > 1
    if not valid:
        if not (isinstance(gains, list) and all(isinstance(g, bool) for g in gains) and gains
                and _valid_k(k)):
            must_fail(out)
        return
    if isinstance(out, Rejected) and min(gains, default=0) < 0:
        must_fail(out, ">= 0|negative")  # negative gains may be rejected
        return
    value = must_work(out)
    assert isinstance(value, float) and (value >= 0 or min(gains) < 0)
    cut = gains if k is None else gains[:int(k)]
    if name == "dcg_at_k":
        numerators = {"exponential": [2 ** g - 1 for g in cut], "linear": cut,
                      "classic": cut}[form]
        if form == "classic":
            expected = sum(g / (1 if p == 0 else math.log2(p + 1)) for p, g in enumerate(cut))
        else:
            expected = sum(n / math.log2(p + 2) for p, n in enumerate(numerators))
        assert value == pytest.approx(expected, rel=1e-9, abs=1e-12)
    else:
        eru = sum(max(g - d, 0) / 2 ** (p / (alpha - 1)) for p, g in enumerate(cut))
        if name == "expected_rank_utility":
            assert value == pytest.approx(eru, rel=1e-9, abs=1e-12)
        else:
            ideal_cut = sorted(gains, reverse=True)[:len(cut)]
            ideal = sum(max(g - d, 0) / 2 ** (p / (alpha - 1)) for p, g in enumerate(ideal_cut))
            assert value == pytest.approx(eru / ideal if ideal > 0 else 0.0, rel=1e-9,
                                          abs=1e-12)
            assert value <= 1.0 + 1e-12


_SCORES = st.one_of(
    *[st.lists(st.sampled_from([0.0, 1.0, 2.5, -1.0, 1.0]), min_size=0, max_size=7)] * 4,
    st.lists(st.sampled_from([0.0, math.nan, math.inf, -math.inf]), min_size=1, max_size=4),
    st.sampled_from(["abc", None, [[1.0, 2.0]], [[1.0, 2.0], [1.0]]]))


@given(_SCORES, st.data())
@FUZZ
def test_auc(scores, data):
    n = len(scores) if isinstance(scores, list) else 3
    mask = st.one_of(*[st.lists(st.booleans(), min_size=n, max_size=n)] * 4,
                     st.lists(st.sampled_from([0, 1]), min_size=n, max_size=n),
                     st.lists(st.booleans(), min_size=n + 1, max_size=n + 1),
                     st.lists(st.sampled_from([0, 2, -1]), min_size=n, max_size=n),
                     st.sampled_from([None, "abc"]))
    relevant = data.draw(mask, label="relevant")
    exclude = data.draw(st.one_of(st.none(), st.none(), mask), label="exclude")
    out = attempt("metrics.auc", lambda: wm.auc(scores, relevant, exclude))

    def valid_mask(m):
        return isinstance(m, list) and len(m) == n and all(v in (0, 1) for v in m) and \
            all(isinstance(v, (bool, int)) for v in m)

    valid = isinstance(scores, list) and all(isinstance(s, float) and not math.isnan(s)
                                             for s in scores) \
        and valid_mask(relevant) and (exclude is None or valid_mask(exclude))
    if not valid:
        if isinstance(scores, list) and not scores and relevant == [] and exclude in (None, []):
            return  # zero items: NaN (undefined) is the documented answer
        must_fail(out)
        return
    value = must_work(out)
    keep = [i for i in range(n) if exclude is None or not exclude[i]]
    pos = [scores[i] for i in keep if relevant[i]]
    neg = [scores[i] for i in keep if not relevant[i]]
    if not pos or not neg:
        assert math.isnan(value)
        return
    wins = sum((p > q) + 0.5 * (p == q) for p in pos for q in neg)
    assert value == pytest.approx(wins / (len(pos) * len(neg)), rel=1e-9)


@pytest.mark.parametrize("name", ["kendall_tau", "weighted_kendall_tau"])
@given(data=st.data())
@FEW
def test_kendall(name, data):
    n = data.draw(st.integers(0, 6), label="n")
    vector = st.one_of(*[st.lists(st.sampled_from([0.0, 1.0, 2.0, 3.0, 1.0]), min_size=n,
                                  max_size=n)] * 6,
                       st.lists(st.sampled_from([0.0, math.nan]), min_size=n, max_size=n),
                       st.lists(st.floats(0, 5), min_size=n + 1, max_size=n + 1),
                       st.sampled_from(["abc", None, ["a", "b"]]))
    a, b = data.draw(vector, label="a"), data.draw(vector, label="b")
    weights = data.draw(st.one_of(st.none(), st.none(), st.just(np.ones((n, n))),
                                  st.just(-np.ones((n, n))), st.just(np.ones((n + 1, n)))),
                        label="weights")
    out = attempt(f"metrics.{name}", lambda: getattr(wm, name)(a, b, weights))
    valid = all(isinstance(v, list) and all(isinstance(x, float) and not math.isnan(x)
                                            for x in v) for v in (a, b)) and len(a) == len(b)
    n = len(a) if valid else n
    valid = valid and (weights is None or (weights.shape == (n, n) and
                                           (n < 2 or (weights >= 0).all())))
    if not valid:
        must_fail(out)
        return
    value = must_work(out)
    pairs = [(u, v) for u in range(n) for v in range(u + 1, n)]
    if not pairs:
        assert math.isnan(value)
        return
    agree = sum(np.sign(a[u] - a[v]) * np.sign(b[u] - b[v]) for u, v in pairs)
    expected = agree / len(pairs)
    if name == "weighted_kendall_tau":
        expected = (len(pairs) + agree) / (2 * len(pairs))
    assert value == pytest.approx(expected, abs=1e-9)


@given(st.lists(st.lists(st.integers(0, 5), max_size=4, unique=True), max_size=4),
       st.data())
@FEW
def test_map_at_k(rankings, data):
    relevants = data.draw(st.one_of(
        st.lists(st.sets(st.integers(0, 5), max_size=3), min_size=len(rankings),
                 max_size=len(rankings)),
        st.lists(st.sets(st.integers(0, 5)), min_size=len(rankings) + 1,
                 max_size=len(rankings) + 1)), label="relevants")
    k = data.draw(_K, label="k")
    out = attempt("metrics.map_at_k", lambda: wm.map_at_k(rankings, relevants, k))
    if len(relevants) != len(rankings) or not _valid_k(k):
        must_fail(out)
        return
    value = must_work(out)
    if not rankings:
        assert math.isnan(value)
        return
    expected = np.mean([_reference("average_precision_at_k", r, {i: 1.0 for i in rel}, k)
                        for r, rel in zip(rankings, relevants)])
    assert value == pytest.approx(expected, rel=1e-9, abs=1e-12)


@given(st.data())
@FEW
def test_evaluate_factors(data):
    n_users, n_items, d = (data.draw(st.integers(1, 5)), data.draw(st.integers(1, 5)),
                           data.draw(st.integers(1, 3)))
    gen = np.random.default_rng(data.draw(st.integers(0, 100)))
    U, V, b = gen.normal(size=(n_users, d)), gen.normal(size=(n_items, d)), gen.normal(
        size=n_items)
    bad = data.draw(st.sampled_from(["none"] * 6 + ["nan factor", "bias shape", "d mismatch",
                                                    "test dense", "test shape", "k"]))
    test = sp.lil_matrix(gen.random((n_users, n_items)) < 0.4, dtype=np.float32)
    k = 3
    if bad == "nan factor":
        U[0, 0] = np.nan
        test[0, 0] = 1.0
    elif bad == "bias shape":
        b = np.zeros(n_items + 1)
    elif bad == "d mismatch":
        V = gen.normal(size=(n_items, d + 1))
    elif bad == "test shape":
        test = sp.csr_matrix((n_users + 1, n_items))
    elif bad == "k":
        k = data.draw(st.sampled_from([0, -1, 2.5, None]))
    test = test.toarray() if bad == "test dense" else sp.csr_matrix(test)
    out = attempt("metrics.evaluate_factors", lambda: wm.evaluate_factors(U, V, b, test, k=k))
    if bad != "none":
        must_fail(out)
        return
    result = must_work(out)
    model = PopularityRecommender()
    model.user_factors_, model.item_factors_ = U.astype(np.float32), V.astype(np.float32)
    model.item_biases_ = b.astype(np.float32)
    expected, n_eval = _naive_metrics(model, test, None, k, np.zeros(n_users, np.int64))
    assert result["n_users"] == n_eval
    for name, value in expected.items():
        assert result[f"{name}@{k}"] == pytest.approx(value, rel=1e-6, abs=1e-9)


def test_bare_message_filter_catches_library_messages():
    """The filter used above really flags typical internal messages."""
    for text in ("setting an array element with a sequence.", "unhashable type: 'list'",
                 "Python int too large to convert to C long",
                 "index 7 is out of bounds for axis 0 with size 3", "'x'",
                 "No implementation of function Function(<built-in function getitem>)"):
        assert BARE_MESSAGES.search(text), text
    assert not BARE_MESSAGES.search("k must be a positive integer (got 0)")


# ======================================================================================
# regressions: inputs the fuzzing above found mishandled (fixed), pinned explicitly
# ======================================================================================
def test_regression_small_int_duplicates_are_summed_without_wrapping():
    # int8 100 + 100 used to wrap to -56 ("negative value"), uint8 200 + 200 to 144
    for dtype in (np.int8, np.uint8):
        X = sp.coo_matrix((np.array([100, 100, 1], dtype=dtype), ([0, 0, 1], [1, 1, 0])),
                          shape=(2, 2))
        model = must_work(attempt("fit", lambda: _fit_small(X, epochs=1)))
        assert model.train_matrix_[0, 1] == 200.0
        assert model.train_matrix_.nnz == 2


def test_regression_values_beyond_float32_are_rejected():
    # they used to become inf in the float32 training matrix / weights
    X = sp.csr_matrix(np.array([[1e39, 1.0], [0.0, 1.0]]))
    must_fail(attempt("fit", lambda: _fit_small(X)), "float32")
    model = WARPFactorizer(n_components=2, epochs=1)
    must_fail(attempt("fit", lambda: model.fit(sp.csr_matrix(np.eye(2)),
                                               sample_weight=[1e300, 1.0])), "sample_weight")


def test_regression_ids_beyond_int64_are_rejected_not_wrapped():
    frame = pd.DataFrame({"user_id": np.array([2**63 + 5, 1], dtype=np.uint64),
                          "item_id": [1, 2]})
    must_fail(attempt("fit", lambda: _fit_small(frame)), "2\\*\\*63")
    frame = pd.DataFrame({"user_id": [1e30, 2.0], "item_id": [1, 2]})
    must_fail(attempt("fit", lambda: _fit_small(frame)), "2\\*\\*53")
    model = _models()["index"][0]
    for index in (2**70, np.uint64(2**63 + 1), [0, 2**64]):
        must_fail(attempt("predict", lambda: model.predict(index, 0)), "out of range")


def test_regression_nested_and_unhashable_ids():
    model, users, _ = _models()["str"]
    for query in ([[users[0]], users[1]], {users[0]}, {users[0]: 1}, [[users[0]]]):
        out = attempt("recommend", lambda: model.recommend(query, k=2))
        must_fail(out, "scalar|sequence")


def test_regression_recommend_rejects_zero_threads():
    model = _models()["index"][0]
    must_fail(attempt("recommend", lambda: model.recommend(0, k=2, n_threads=0)), "n_threads")


def test_regression_byte_order_mark_only_file(tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_bytes(b"\xef\xbb\xbf\r\n")
    must_fail(attempt("read_ratings", lambda: read_ratings(path)), "empty")


def test_regression_titles_files(tmp_path):
    from warprec.data import read_item_titles

    path = tmp_path / "movies.csv"
    path.write_bytes(b"movieId,title\n1,Toy Story,extra\n2,Heat\n")
    titles = must_work(attempt("read_ratings", lambda: read_item_titles(path)))
    assert titles.to_dict() == {1: "Toy Story", 2: "Heat"}  # not {"Toy Story": "extra"}
    path.write_bytes(b'movieId,title\n1,"Toy Story\n')
    must_fail(attempt("read_ratings", lambda: read_item_titles(path)), "parse")


def test_regression_rating_infinite(tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_bytes(b"user,item,rating\n1,2,inf\n")
    must_fail(attempt("read_ratings", lambda: read_ratings(path)), "infinite")


# ======================================================================================
# metric inputs found mishandled while this suite was written (fixed in metrics.py), and
# one known bug there (strict xfail, so the suite notices when it is fixed)
# ======================================================================================
@pytest.mark.parametrize("ranked,relevant", [(None, {1}), ([1, 2], None), ([1, 2], 5),
                                             ([[1], [2]], {1}), ([1, 2], [[1]])])
def test_metrics_non_iterable_or_unhashable_items(ranked, relevant):
    for name in _LIST_METRICS:
        out = attempt(f"metrics.{name}", lambda: getattr(wm, name)(ranked, relevant, 2))
        must_fail(out, "ranked|relevant")


@pytest.mark.parametrize("call", [
    lambda: wm.dcg_at_k(["a", "b"]), lambda: wm.dcg_at_k([[1, 2], [1]]),
    lambda: wm.expected_rank_utility("abc"),
    lambda: wm.normalized_expected_rank_utility([1.0], ideal_gains="x"),
    lambda: wm.auc("abc", [True, False, True]), lambda: wm.auc([[1.0, 2.0], [1.0]], [True]),
    lambda: wm.kendall_tau(["a"], ["b"]), lambda: wm.kendall_tau([1, 2], [1, 2], weights="x"),
    lambda: wm.weighted_kendall_tau([1, 2], [2, 1], w=lambda u, v: "x"),
])
def test_metrics_numeric_vectors_of_strings(call):
    must_fail(attempt("metrics.numeric-vectors", call))


def test_map_at_k_checks_k_without_queries():
    must_fail(attempt("metrics.map_at_k", lambda: wm.map_at_k([], [], k=0)), "k must be")


def test_huge_exponential_gains_are_rejected():
    """2**gain overflows float64 for gains >= 1024: a clear error, not inf/NaN."""
    with np.errstate(over="ignore"):
        out = attempt("metrics.ndcg_at_k", lambda: wm.ndcg_at_k([1, 2], {1: 2000.0, 2: 3000.0}))
    assert isinstance(out, Rejected) or math.isfinite(out)
