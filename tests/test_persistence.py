"""Persistence: save/load round trips, exact resumption, damaged files, atomic writes."""

import glob
import io
import json
import os
import struct
import zipfile

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from clean_errors import assert_clean_error

import warprec.model as model_module
from warprec import WARPFactorizer
from warprec.datasets import make_interactions


def _frame(kind):
    """Positives with raw ids of the given kind: "int", "str" or "odd" strings."""
    X = make_interactions(40, 30, 400, rank=3, random_state=2).tocoo()
    users, items = X.row.tolist(), X.col.tolist()
    if kind == "int":
        return pd.DataFrame({"user_id": [1000 + 7 * u for u in users],
                             "item_id": [-5 + 3 * i for i in items]})
    if kind == "str":
        return pd.DataFrame({"user_id": [f"user {u}" for u in users],
                             "item_id": [f"film/{i}" for i in items]})
    # strings numpy's fixed-width arrays would mangle or that look like other types
    odd = ["", "a\x00", "a", "0", "1.5", "None", "ünïcødé", "🎬", " sp ", "x" * 300]
    return pd.DataFrame({"user_id": [odd[u % len(odd)] + str(u // len(odd)) for u in users],
                         "item_id": [odd[i % len(odd)] + (str(i // len(odd)) if i >= len(odd)
                                                           else "") for i in items]})


def _fitted_attributes(model):
    return sorted(k for k in vars(model) if k.endswith("_") and not k.startswith("_"))


def _assert_same_model(a, b):
    """Every fitted attribute and every hyperparameter is identical."""
    assert _fitted_attributes(a) == _fitted_attributes(b)
    for name in _fitted_attributes(a):
        x, y = getattr(a, name), getattr(b, name)
        if sp.issparse(x):
            assert sp.issparse(y) and x.shape == y.shape, name
            for part in ("indptr", "indices", "data"):
                np.testing.assert_array_equal(getattr(x, part), getattr(y, part), err_msg=name)
                assert getattr(x, part).dtype == getattr(y, part).dtype, name
        elif isinstance(x, np.ndarray):
            assert isinstance(y, np.ndarray) and x.dtype == y.dtype and x.shape == y.shape, name
            assert x.tolist() == y.tolist(), name
            assert [type(v) for v in x.tolist()] == [type(v) for v in y.tolist()], name
        else:
            assert x == y and type(x) is type(y), name
    pa, pb = a.get_params(), b.get_params()
    for key in pa:
        va, vb = pa[key], pb[key]
        if isinstance(va, np.ndarray):
            va = va.tolist()
        assert va == vb, key


PARAMS = [
    dict(),
    dict(rank_weighting=np.array([1.0, 0.5, 0.25]), alpha=0.0, max_norm=2.0),
    dict(loss="warp-kos", k=2, n=4, learning_schedule="sgd", learning_rate=0.02),
    dict(loss="bpr", negative_sampling="popularity", random_state=np.int64(11)),
    dict(rank_estimator="exact", rank_weighting="owpc-top-p", top_fraction=0.2),
    dict(sample_order="users"),
]


@pytest.mark.parametrize("kind", ["matrix", "int", "str", "odd"])
@pytest.mark.parametrize("params", PARAMS, ids=range(len(PARAMS)))
def test_round_trip_and_exact_resumption(tmp_path, kind, params):
    X = make_interactions(40, 30, 400, rank=3, random_state=2) if kind == "matrix" \
        else _frame(kind)
    base = dict(n_components=6, epochs=2, n_threads=1, random_state=3)
    base.update(params)
    model = WARPFactorizer(**base).fit(X)
    path = tmp_path / "model.npz"
    assert model.save(path) == str(path)
    loaded = WARPFactorizer.load(path)
    _assert_same_model(model, loaded)
    if kind != "matrix":
        assert loaded.user_ids_.dtype == (np.int64 if kind == "int" else object)
    # resumption: partial_fit after load == partial_fit without save/load, bit for bit
    model.partial_fit(X)
    loaded.partial_fit(X)
    assert model.epochs_done_ == loaded.epochs_done_ == 4
    for name in ("user_factors_", "item_factors_", "item_biases_", "user_grad_sq_",
                 "item_grad_sq_", "bias_grad_sq_"):
        assert getattr(model, name).tobytes() == getattr(loaded, name).tobytes(), name
    for a, b in zip(model.history_, loaded.history_):
        assert {k: v for k, v in a.items() if k != "seconds"} == \
            {k: v for k, v in b.items() if k != "seconds"}
    # and the inference API answers the same
    user = loaded.user_ids_[0] if loaded.user_ids_ is not None else 0
    for a, b in zip(model.recommend(user, k=5), loaded.recommend(user, k=5)):
        np.testing.assert_array_equal(a, b)


def test_learning_rate_drops_survive_save_and_load(tmp_path):
    """The drops are saved with their rates, and partial_fit after load continues at the
    dropped rate as without save/load."""
    X = make_interactions(300, 120, 6000, random_state=3)
    model = WARPFactorizer(n_components=8, epochs=40, learning_rate=0.1, n_threads=1,
                           early_stopping=True, n_iter_no_change=2, random_state=3,
                           learning_rate_drop=0.3).fit(X)
    assert model.learning_rate_drops_, "the fit should drop its rate once"
    loaded = WARPFactorizer.load(model.save(tmp_path / "m.npz"))
    _assert_same_model(model, loaded)
    for m in (model, loaded):
        m.set_params(early_stopping=False, learning_rate_drop=1.0, epochs=1).partial_fit(X)
    assert model.history_[-1]["learning_rate"] == float(np.float32(0.1 * 0.3))
    assert model.user_factors_.tobytes() == loaded.user_factors_.tobytes()


def test_saved_file_has_no_pickle_and_a_version(tmp_path):
    model = WARPFactorizer(n_components=2, epochs=1).fit(_frame("str"))
    path = model.save(tmp_path / "m.npz")
    with np.load(path, allow_pickle=False) as f:  # would raise on object arrays
        assert int(f["format_version"]) == model_module.FORMAT_VERSION
        assert json.loads(str(f["params"]))["n_components"] == 2


def test_save_without_npz_suffix_writes_exactly_that_path(tmp_path):
    model = WARPFactorizer(n_components=2, epochs=1).fit(_frame("int"))
    path = tmp_path / "model.bin"
    model.save(path)
    assert os.listdir(tmp_path) == ["model.bin"]
    _assert_same_model(model, WARPFactorizer.load(path))


# ------------------------------------------------------------------ damaged files
@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "model.npz"
    WARPFactorizer(n_components=4, epochs=1, n_threads=1).fit(_frame("str")).save(path)
    return path


def _expect_load_error(path, match):
    with pytest.raises(ValueError) as info:
        WARPFactorizer.load(path)
    return assert_clean_error(info.value, ValueError, match)


@pytest.mark.parametrize("fraction", [0.0, 0.01, 0.3, 0.5, 0.9, 0.999])
def test_truncated_file(tmp_path, saved, fraction):
    data = saved.read_bytes()
    path = tmp_path / "cut.npz"
    path.write_bytes(data[:int(len(data) * fraction)])
    _expect_load_error(path, "not a readable warprec model|damaged|not a warprec model")


def _stored_data_offset(data, where):
    """An offset in the middle of the stored bytes of the archive member nearest to
    ``where`` (a fraction of the file). Flipped bytes of zip metadata that readers skip
    (such as a local header's extra field) go unnoticed by any reader, so they are not
    aimed at."""
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        infos = archive.infolist()
    target = int(len(data) * where)
    info = min(infos, key=lambda i: abs(i.header_offset - target))
    name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26:
                                                     info.header_offset + 30])
    return info.header_offset + 30 + name_len + extra_len + info.compress_size // 2


@pytest.mark.parametrize("where", [0.05, 0.2, 0.5, 0.8])
def test_corrupted_bytes(tmp_path, saved, where):
    data = bytearray(saved.read_bytes())
    at = _stored_data_offset(data, where)
    data[at:at + 16] = bytes(b ^ 0xA5 for b in data[at:at + 16])
    path = tmp_path / "flipped.npz"
    path.write_bytes(bytes(data))
    _expect_load_error(path, "not a readable warprec model|damaged|corrupted|not a warprec")


@pytest.mark.parametrize("content", [b"", b"hello", b"PK\x03\x04garbage", "text,file\n1,2\n"])
def test_not_a_model_file(tmp_path, content):
    path = tmp_path / "junk.npz"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    _expect_load_error(path, "not a readable warprec model")


def _rewrite(saved, target, **changes):
    """Copy of ``saved`` with some arrays replaced (None removes one)."""
    with np.load(saved, allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    for key, value in changes.items():
        if value is None:
            arrays.pop(key)
        else:
            arrays[key] = value
    np.savez(target, **arrays)
    return target


def test_other_npz_is_not_a_model(tmp_path):
    path = tmp_path / "other.npz"
    np.savez(path, weights=np.ones(3))
    _expect_load_error(path, "not a warprec model")


def test_newer_format_version(tmp_path, saved):
    path = _rewrite(saved, tmp_path / "new.npz",
                    format_version=np.array(model_module.FORMAT_VERSION + 1))
    message = _expect_load_error(path, "newer warprec")
    assert "Upgrade" in message


@pytest.mark.parametrize("changes,match", [
    (dict(format_version=np.array("two")), "format_version"),
    (dict(item_factors=None), "damaged"),
    (dict(params=np.array("{not json")), "damaged"),
    (dict(params=np.array('{"no_such_parameter": 1}')), "damaged"),
    (dict(user_factors=np.ones(5, np.float32)), "damaged"),
    (dict(item_biases=np.zeros(3, np.float32)), "damaged"),
    (dict(user_grad_sq=np.ones((2, 2), np.float32)), "damaged"),
    (dict(user_factors=np.ones((40, 4), np.float64)), "damaged"),
    (dict(user_ids=np.array(["a", "b"])), "damaged"),
    (dict(user_ids_kind=np.array("pickle")), "damaged"),
    (dict(train_indices=np.full(10, 10**6, np.int32)), "damaged"),
    (dict(train_indptr=np.zeros(3, np.int64)), "damaged"),
    (dict(user_factors=np.full((40, 4), np.nan, np.float32)), "non-finite"),
    (dict(user_factors=np.full((40, 4), 1e20, np.float32),
          item_factors=np.full((30, 4), 1e20, np.float32)), "overflow"),
    (dict(history=np.array("[")), "damaged"),
])
def test_inconsistent_contents(tmp_path, saved, changes, match):
    path = _rewrite(saved, tmp_path / "bad.npz", **changes)
    _expect_load_error(path, match)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="No model file"):
        WARPFactorizer.load(tmp_path / "absent.npz")
    _expect_load_error(tmp_path, "not a readable warprec model")


def test_pickled_object_arrays_are_refused(tmp_path, saved):
    path = tmp_path / "obj.npz"
    with np.load(saved) as f:
        arrays = {k: f[k] for k in f.files}
    arrays["user_ids"] = np.array(["x"] * 40, dtype=object)
    np.savez(path, **arrays)
    _expect_load_error(path, "not a readable warprec model")


# ------------------------------------------------------------------ refusing bad models
def test_no_nan_model_can_be_saved(tmp_path):
    model = WARPFactorizer(n_components=3, epochs=1).fit(_frame("int"))
    path = tmp_path / "m.npz"
    model.save(path)
    before = path.read_bytes()
    for name, value in (("user_factors_", np.nan), ("item_factors_", np.inf),
                        ("item_biases_", -np.inf), ("item_factors_", 1e30)):
        broken = WARPFactorizer.load(path)
        getattr(broken, name).flat[0] = value
        if value == 1e30:  # finite, but scores overflow float32
            broken.user_factors_.flat[0] = 1e30
        with pytest.raises(ValueError) as info:
            broken.save(path)
        assert_clean_error(info.value, ValueError, "Refusing to save")
        assert path.read_bytes() == before
    assert glob.glob(str(tmp_path / ".warprec-*")) == []


def test_unfitted_model_cannot_be_saved(tmp_path):
    with pytest.raises(ValueError, match="not fitted"):
        WARPFactorizer().save(tmp_path / "m.npz")
    assert os.listdir(tmp_path) == []


def test_save_into_missing_folder(tmp_path):
    model = WARPFactorizer(n_components=2, epochs=1).fit(_frame("int"))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        model.save(tmp_path / "no" / "such" / "m.npz")


# ------------------------------------------------------------------ atomic writes
class _Crash(Exception):
    pass


@pytest.mark.parametrize("error", [_Crash, OSError, KeyboardInterrupt])
def test_crash_mid_save_keeps_previous_file(tmp_path, monkeypatch, error):
    old = WARPFactorizer(n_components=3, epochs=1, random_state=1).fit(_frame("str"))
    new = WARPFactorizer(n_components=3, epochs=2, random_state=2).fit(_frame("str"))
    path = tmp_path / "model.npz"
    old.save(path)
    before = path.read_bytes()
    real_savez = np.savez

    def savez_then_crash(file, **arrays):
        # write a real, partial archive (the first half of the arrays), then fail
        half = dict(list(arrays.items())[: len(arrays) // 2])
        real_savez(file, **half)
        raise error("disk full (simulated)")

    monkeypatch.setattr(model_module.np, "savez", savez_then_crash)
    with pytest.raises(error):
        new.save(path)
    monkeypatch.setattr(model_module.np, "savez", real_savez)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["model.npz"], "a temporary file was left behind"
    _assert_same_model(old, WARPFactorizer.load(path))


def test_crash_at_rename_keeps_previous_file(tmp_path, monkeypatch):
    model = WARPFactorizer(n_components=3, epochs=1).fit(_frame("int"))
    path = tmp_path / "model.npz"
    model.save(path)
    before = path.read_bytes()

    def replace_fails(src, dst):
        raise OSError("rename failed (simulated)")

    monkeypatch.setattr(model_module.os, "replace", replace_fails)
    with pytest.raises(OSError, match="simulated"):
        model.partial_fit(_frame("int")).save(path)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["model.npz"]


def test_save_replaces_the_file_in_one_step(tmp_path, monkeypatch):
    """Readers never see a partial file: the data goes to a temp file in the same folder
    that is renamed over the target."""
    model = WARPFactorizer(n_components=3, epochs=1).fit(_frame("int"))
    path = tmp_path / "model.npz"
    seen = []
    real_replace = os.replace

    def spy(src, dst):
        seen.append((os.path.dirname(src), os.path.basename(src), dst))
        assert zipfile.is_zipfile(src)  # complete before the rename
        real_replace(src, dst)

    monkeypatch.setattr(model_module.os, "replace", spy)
    model.save(path)
    assert len(seen) == 1 and seen[0][0] == str(tmp_path) and seen[0][2] == str(path)
    assert seen[0][1].startswith(".warprec-")


def test_saved_files_take_the_umask_or_the_replaced_files_mode(tmp_path):
    """A model file is readable as any file the process writes (not 0600 whatever the
    umask), and overwriting a file keeps its permissions."""
    import stat

    model = WARPFactorizer(n_components=4, epochs=1, n_threads=1).fit(
        sp.random(20, 15, density=0.3, random_state=0, format="csr"))
    old = os.umask(0o022)
    try:
        model.save(tmp_path / "m.npz")
        assert stat.S_IMODE(os.stat(tmp_path / "m.npz").st_mode) == 0o644
        os.umask(0o077)
        model.save(tmp_path / "private.npz")
        assert stat.S_IMODE(os.stat(tmp_path / "private.npz").st_mode) == 0o600
        os.chmod(tmp_path / "m.npz", 0o640)
        model.save(tmp_path / "m.npz")
        assert stat.S_IMODE(os.stat(tmp_path / "m.npz").st_mode) == 0o640
    finally:
        os.umask(old)
