"""Nothing lost when a call fails: a fit or partial_fit that raises before its first epoch
leaves the model (and its file) exactly as it was; loading checks every array; degenerate
inputs get a clear error; an interrupted fit says so and resumes.

The last test drives random sequences of operations (fit, partial_fit with growth, fold-in,
recommend, save, load, failing calls) through a Hypothesis state machine and checks the
invariants after every step, as stores test their state machines under faults.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from warprec import WARPFactorizer
from warprec.datasets import make_interactions

#: every test model: small and one-threaded, so fits are quick and deterministic
KW = dict(n_components=8, epochs=2, n_threads=1, random_state=0)


def fingerprint(model, skip=()) -> str:
    """A digest of every fitted attribute (names ending in ``_``) but those in ``skip``:
    arrays by dtype, shape and bytes, sparse matrices by their CSR arrays, the rest by
    value."""
    h = hashlib.sha256()
    for name in sorted(n for n in vars(model) if n.endswith("_") and not n.startswith("__")
                       and n not in skip):
        value = getattr(model, name)
        h.update(name.encode())
        if sp.issparse(value):
            value = sp.csr_matrix(value)
            for part in (value.data, value.indices, value.indptr, np.array(value.shape)):
                h.update(np.ascontiguousarray(part).tobytes())
        elif isinstance(value, np.ndarray):
            h.update(str((value.dtype, value.shape)).encode())
            h.update(value.tobytes() if value.dtype != object else repr(value.tolist()).encode())
        elif hasattr(value, "to_json"):
            h.update(value.to_json().encode())
        else:
            h.update(json.dumps(value, sort_keys=True, default=repr).encode())
    return h.hexdigest()


def frame(X, users=None, items=None):
    coo = sp.coo_matrix(X)
    return pd.DataFrame({"user_id": [f"u{u}" for u in coo.row],
                         "item_id": [f"i{i}" for i in coo.col]})


@pytest.fixture(scope="module")
def data():
    X = make_interactions(80, 60, 1200, rank=4, random_state=1)
    everything = frame(X)
    first = everything[everything["user_id"].isin([f"u{u}" for u in range(60)])
                       & everything["item_id"].isin([f"i{i}" for i in range(45)])]
    items = pd.DataFrame({"item_id": [f"i{i}" for i in range(60)],
                          "genre": [("a", "b", "c")[i % 3] for i in range(60)],
                          "year": np.arange(60) % 7})
    return X, first, everything, items


def _fitted(data, **params):
    X, first, everything, items = data
    return WARPFactorizer(**{**KW, **params}).fit(first, item_features=items)


# (method, keyword arguments, expected exception) of calls that must change nothing
def _bad_calls(data):
    X, first, everything, items = data
    valid = everything.sample(50, random_state=0)
    return {
        "partial_fit, new items whose features lack a fitted column": (
            "partial_fit", dict(X=everything, item_features=items.drop(columns="year")),
            ValueError),
        "partial_fit, validation data of unknown items": (
            "partial_fit", dict(X=everything, validation_data=valid.assign(
                item_id="never-seen")), ValueError),
        "partial_fit, validation data with a missing column": (
            "partial_fit", dict(X=everything, validation_data=valid[["user_id"]]), KeyError),
        "partial_fit, negative sample weights": (
            "partial_fit", dict(X=everything, sample_weight=-np.ones(len(everything))),
            ValueError),
        "partial_fit, ids of another type": (
            "partial_fit", dict(X=pd.DataFrame({"user_id": [1, 2], "item_id": [3, 4]})),
            TypeError),
        "partial_fit, features for a plain model's side it lacks": (
            "partial_fit", dict(X=everything, user_features=pd.DataFrame(
                {"user_id": ["u1"], "age": [3]})), ValueError),
        "fit again, no positive": (
            "fit", dict(X=sp.csr_matrix((5, 5), dtype=np.float32)), ValueError),
        "fit again, bad parameter": (
            "fit_params", dict(X=everything, n_components=0), ValueError),
        "fit again, validation data equal to the training data": (
            "fit", dict(X=everything, validation_data=everything), ValueError),
        "fit again, item features without columns": (
            "fit_params", dict(X=X, identity_features=False,
                               item_features=sp.csr_matrix((X.shape[1], 0))), ValueError),
    }


CASES = [
    "partial_fit, new items whose features lack a fitted column",
    "partial_fit, validation data of unknown items",
    "partial_fit, validation data with a missing column",
    "partial_fit, negative sample weights",
    "partial_fit, ids of another type",
    "partial_fit, features for a plain model's side it lacks",
    "fit again, no positive",
    "fit again, bad parameter",
    "fit again, validation data equal to the training data",
    "fit again, item features without columns",
]


def test_the_table_of_bad_calls_is_complete(data):
    assert list(_bad_calls(data)) == CASES


@pytest.mark.parametrize("case", CASES)
def test_a_failed_call_changes_nothing(data, case, tmp_path):
    method, kwargs, error = _bad_calls(data)[case]
    model = _fitted(data)
    if "plain model" in case:   # a model without user features
        model = WARPFactorizer(**KW).fit(data[1])
    path = tmp_path / "model.npz"
    model.save(path)
    before, file_before = fingerprint(model), path.read_bytes()
    kwargs = dict(kwargs)
    X = kwargs.pop("X")
    with pytest.raises(error):
        if method == "fit_params":
            original = model.get_params()
            model.set_params(**{k: kwargs.pop(k) for k in list(kwargs)
                                if k in original})
            try:
                model.fit(X, **kwargs)
            finally:
                model.set_params(**original)
        else:
            getattr(model, method)(X, **kwargs)
    assert fingerprint(model) == before, case
    assert path.read_bytes() == file_before
    # the model still works, and saving it again writes the same model
    model.recommend(model.user_ids_[:3], k=5)
    model.save(path)
    assert fingerprint(WARPFactorizer.load(path)) == before


def test_the_issues_case_then_a_good_call_trains_as_if_nothing_had_failed(data):
    X, first, everything, items = data
    failed, clean = _fitted(data), _fitted(data)
    with pytest.raises(ValueError):
        failed.partial_fit(everything, item_features=items.drop(columns="year"))
    failed.partial_fit(everything, item_features=items)
    clean.partial_fit(everything, item_features=items)
    # (the history's epoch times differ between any two fits)
    assert fingerprint(failed, skip=("history_",)) == fingerprint(clean, skip=("history_",))


@pytest.mark.parametrize("array", ["user_grad_sq", "item_factors", "item_feature_factors",
                                   "bias_grad_sq"])
def test_load_names_the_file_and_the_damaged_array(data, tmp_path, array):
    model = _fitted(data)
    path = tmp_path / "model.npz"
    model.save(path)
    with np.load(path, allow_pickle=False) as f:
        arrays = {key: f[key] for key in f.files}
    damaged = arrays[array].copy()
    damaged.flat[:3] = np.nan
    np.savez(path, **dict(arrays, **{array: damaged}))
    with pytest.raises(ValueError, match=rf"model\.npz.*damaged.*{array} has 3 non-finite"):
        WARPFactorizer.load(path)


def test_load_rejects_non_positive_adagrad_sums(data, tmp_path):
    model = WARPFactorizer(**KW).fit(data[1])
    path = tmp_path / "model.npz"
    model.save(path)
    with np.load(path, allow_pickle=False) as f:
        arrays = {key: f[key] for key in f.files}
    np.savez(path, **dict(arrays, item_grad_sq=-arrays["item_grad_sq"]))
    with pytest.raises(ValueError, match="item_grad_sq .* <= 0"):
        WARPFactorizer.load(path)


def test_feature_space_without_columns_is_an_error(data):
    X, first, everything, items = data
    empty = sp.csr_matrix((X.shape[1], 0), dtype=np.float32)
    with pytest.raises(ValueError, match="no feature column and identity_features=False"):
        WARPFactorizer(**KW, identity_features=False).fit(X, item_features=empty)
    # with the indicator features the same input is a model of indicators only
    WARPFactorizer(**KW).fit(X, item_features=empty)


def test_validation_data_that_cannot_measure_anything_is_an_error(data):
    X, first, everything, items = data
    held = everything.sample(100, random_state=1)
    train = everything.drop(held.index)
    with pytest.raises(ValueError, match="no \\(user, item\\) pair with the model"):
        WARPFactorizer(**KW).fit(train, validation_data=held.assign(item_id="unknown"))
    with pytest.raises(ValueError, match="validation_data holds only positives that are "
                                         "also in X"):
        WARPFactorizer(**KW).fit(train, validation_data=train)
    model = WARPFactorizer(**KW).fit(train, validation_data=held)   # a true hold-out
    assert len(model.validation_scores_) == 2 and min(model.validation_scores_) > 0


class Stop(Exception):
    pass


def test_an_interrupted_fit_says_so_and_resumes(data):
    X = data[0]

    def stop_at_two(model, info):
        if model.epochs_done_ == 2:
            raise Stop

    model = WARPFactorizer(**dict(KW, epochs=5))
    with pytest.raises(Stop):
        model.fit(X, callback=stop_at_two)
    assert model.interrupted_ and model.epochs_done_ == 2
    assert model.history_[-1]["interrupted"] is True
    assert "interrupted after 2 epochs" in repr(model)
    model.set_params(epochs=3).partial_fit(X)
    assert not model.interrupted_ and model.epochs_done_ == 5
    assert "interrupted" not in repr(model)
    # resuming trains as the uninterrupted fit does (one thread: bit for bit)
    whole = WARPFactorizer(**dict(KW, epochs=5)).fit(X)
    np.testing.assert_array_equal(model.user_factors_, whole.user_factors_)


def test_interrupted_survives_save_and_load(data, tmp_path):
    model = WARPFactorizer(**dict(KW, epochs=3))
    with pytest.raises(Stop):
        model.fit(data[0], callback=lambda m, info: (_ for _ in ()).throw(Stop()))
    model.save(tmp_path / "m.npz")
    assert WARPFactorizer.load(tmp_path / "m.npz").interrupted_


# ---------------------------------------------------------------------- state machine
class ModelLifecycle(RuleBasedStateMachine):
    """Random sequences of operations on one model; after each, the invariants hold and a
    failing call has changed nothing."""

    def __init__(self):
        super().__init__()
        self.X = make_interactions(40, 30, 500, rank=3, random_state=4)
        self.frame = frame(self.X)
        self.model = WARPFactorizer(n_components=4, epochs=1, n_threads=1, random_state=0)
        self.fitted = False
        self.n_users = self.n_items = 0

    def _part(self, users, items):
        keep = self.frame["user_id"].isin([f"u{u}" for u in range(users)]) \
            & self.frame["item_id"].isin([f"i{i}" for i in range(items)])
        return self.frame[keep]

    @rule(users=st.integers(10, 40), items=st.integers(10, 30))
    def fit(self, users, items):
        part = self._part(users, items)
        self.model.fit(part)
        self.fitted = True

    @precondition(lambda self: self.fitted)
    @rule(users=st.integers(10, 40), items=st.integers(10, 30))
    def partial_fit_with_growth(self, users, items):
        self.model.partial_fit(self._part(users, items))

    @precondition(lambda self: self.fitted)
    @rule(bad=st.sampled_from(["weights", "validation", "ids", "empty"]))
    def failing_call(self, bad):
        before = fingerprint(self.model)
        part = self._part(40, 30)
        with pytest.raises((ValueError, TypeError, KeyError)):
            if bad == "weights":
                self.model.partial_fit(part, sample_weight=np.full(len(part), np.nan))
            elif bad == "validation":
                self.model.partial_fit(part, validation_data=part.assign(item_id="x"))
            elif bad == "ids":
                self.model.partial_fit(pd.DataFrame({"user_id": [1], "item_id": [2]}))
            else:
                self.model.fit(part.iloc[:0])
        assert fingerprint(self.model) == before

    @precondition(lambda self: self.fitted)
    @rule(row=st.integers(0, 39))
    def fold_in_and_recommend(self, row):
        before = fingerprint(self.model)
        items = self.model.item_ids_
        user_items = sp.csr_matrix(np.isin(items, self.frame["item_id"][
            self.frame["user_id"] == f"u{row}"]).astype(np.float32)[None, :])
        vector = self.model.fold_in(user_items)
        assert np.isfinite(vector).all()
        self.model.recommend(self.model.user_ids_[:2], k=3)
        assert fingerprint(self.model) == before

    @precondition(lambda self: self.fitted)
    @rule()
    def save_and_load(self):
        import tempfile
        from pathlib import Path

        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "m.npz"
            self.model.save(path)
            loaded = WARPFactorizer.load(path)
        assert fingerprint(loaded) == fingerprint(self.model)
        self.model = loaded

    @invariant()
    def consistent(self):
        if not self.fitted:
            return
        m = self.model
        U, V, b = m.user_factors_, m.item_factors_, m.item_biases_
        assert np.isfinite(U).all() and np.isfinite(V).all() and np.isfinite(b).all()
        assert U.shape == (len(m.user_ids_), 4) and V.shape == (len(m.item_ids_), 4)
        assert b.shape == (V.shape[0],) and m.user_grad_sq_.shape == U.shape
        assert m.train_matrix_.shape == (U.shape[0], V.shape[0])
        assert len(set(m.user_ids_)) == U.shape[0] and len(set(m.item_ids_)) == V.shape[0]


TestModelLifecycle = ModelLifecycle.TestCase
TestModelLifecycle.settings = settings(max_examples=12, stateful_step_count=8, deadline=None,
                                       suppress_health_check=[HealthCheck.too_slow])
