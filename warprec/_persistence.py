"""Model files: ``.npz`` archives written atomically and read back with every check.

A model file holds arrays only (no pickle): the estimator's parameters as JSON, its fitted
arrays, id maps (integers, floats or strings; JSON for strings numpy cannot hold), history
and format version. :func:`write` and :func:`read` deal with the file; the estimator's
``save`` and ``load`` decide what goes in and how a model is rebuilt from it.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
import zipfile
from typing import Any

import numpy as np

from ._hybrid import is_hybrid

#: The float arrays of a model file (fitted attribute names without the trailing ``_``),
#: every one of which must be finite.
FLOAT_ARRAYS = ("user_factors", "item_factors", "item_biases", "user_grad_sq", "item_grad_sq",
                "bias_grad_sq", "user_feature_factors", "item_feature_factors",
                "item_feature_biases", "user_feature_grad_sq", "item_feature_grad_sq",
                "item_feature_bias_grad_sq")

__all__ = ["FLOAT_ARRAYS", "check_target", "write", "read", "check_loaded", "jsonable_params",
           "encode_ids", "decode_ids"]


def check_target(path: str | os.PathLike) -> str:
    """``path`` as a string, or an IsADirectoryError when it names a folder."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(f"Cannot save to {path!r}: it is a directory. Give a file "
                                f"name, e.g. {os.path.join(path, 'model.npz')!r}.")
    return path


def write(path: str, arrays: dict[str, Any]) -> str:
    """Write ``arrays`` to the ``.npz`` file ``path`` atomically: to a temporary file in
    the same folder that replaces ``path`` only once complete, with the permissions a
    plain ``open`` would give (an existing file's, else those of the process's umask)."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"Cannot save to {path!r}: the folder {folder!r} does not "
                                f"exist. Create it first.")
    mode = _file_mode(path)
    fd, tmp = tempfile.mkstemp(prefix=".warprec-", suffix=".npz.tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _file_mode(path: str) -> int:
    """The permissions ``open(path, "wb")`` would give: an existing file's, else
    ``0o666`` less the process's umask (a temporary file is created ``0o600``)."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)   # (reading the umask means setting it; set it back at once)
        os.umask(umask)
        return 0o666 & ~umask


def read(path: str, format_version: int) -> dict[str, np.ndarray]:
    """The arrays of the model file ``path``, or FileNotFoundError / ValueError when it
    is missing, not a readable warprec model, or written in a format newer than
    ``format_version``."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"No model file at {path!r}.")
    if os.path.isfile(path) and not zipfile.is_zipfile(path):
        raise ValueError(f"{path!r} is not a readable warprec model file (those are .npz "
                         f"archives written by WARPFactorizer.save or `warprec fit`); it "
                         f"is truncated, or another kind of file.")
    try:
        with np.load(path, allow_pickle=False) as f:
            data = {key: f[key] for key in f.files}
    except Exception as exc:  # zipfile.BadZipFile, OSError, ValueError, EOFError...
        raise ValueError(f"{path!r} is not a readable warprec model file (truncated or "
                         f"corrupted?): {exc}") from exc
    if "format_version" not in data or "params" not in data:
        raise ValueError(f"{path!r} is an .npz file but not a warprec model.")
    try:
        version = int(data["format_version"])
    except (TypeError, ValueError):
        raise ValueError(f"{path!r} has an unreadable format_version "
                         f"({data['format_version']!r:.40}); it is not a warprec model "
                         f"file.") from None
    if version > format_version:
        raise ValueError(f"{path!r} was written by a newer warprec (model format {version}; "
                         f"this warprec reads up to {format_version}). Upgrade warprec.")
    return data


def check_loaded(model):
    """Raise ValueError unless the arrays read from a model file fit together."""
    U, V, b = model.user_factors_, model.item_factors_, model.item_biases_
    if U.ndim != 2 or V.ndim != 2 or U.shape[1] != V.shape[1] or b.shape != (V.shape[0],):
        raise ValueError(f"inconsistent factor shapes {U.shape}, {V.shape}, {b.shape}")
    for name, array, shape in (("user_factors", U, U.shape), ("item_factors", V, V.shape),
                               ("item_biases", b, b.shape),
                               ("user_grad_sq", model.user_grad_sq_, U.shape),
                               ("item_grad_sq", model.item_grad_sq_, V.shape),
                               ("bias_grad_sq", model.bias_grad_sq_, b.shape)):
        if array.dtype != np.float32 or array.shape != shape:
            raise ValueError(f"{name} has dtype {array.dtype} and shape {array.shape}; "
                             f"expected float32 {shape}")
    for name in FLOAT_ARRAYS:
        array = getattr(model, name + "_", None)
        if array is None:
            continue
        bad = int(np.count_nonzero(~np.isfinite(array)))
        if bad:
            raise ValueError(f"{name} has {bad} non-finite value(s) (NaN or infinite)")
        if name.endswith("grad_sq") and array.size and float(array.min()) <= 0:
            raise ValueError(f"{name} (Adagrad's sums of squared gradients, which start at "
                             f"1) has values <= 0")
    for kind, ids, n in (("user", model.user_ids_, U.shape[0]),
                         ("item", model.item_ids_, V.shape[0])):
        if ids is not None and ids.shape != (n,):
            raise ValueError(f"{kind}_ids has shape {ids.shape}, expected ({n},)")
    if model.epochs_done_ < 0 or not isinstance(model.history_, list):
        raise ValueError("bad training state (epochs_done / history)")
    model.train_matrix_.check_format(full_check=True)
    if not model.train_matrix_.has_canonical_format:
        raise ValueError("the training matrix is not in canonical CSR form")
    if is_hybrid(model):
        EU, EI = model.user_feature_factors_, model.item_feature_factors_
        for name, array, shape in (
                ("user_feature_factors", EU, (EU.shape[0], U.shape[1])),
                ("item_feature_factors", EI, (EI.shape[0], U.shape[1])),
                ("item_feature_biases", model.item_feature_biases_, (EI.shape[0],)),
                ("user_feature_grad_sq", model.user_feature_grad_sq_, EU.shape),
                ("item_feature_grad_sq", model.item_feature_grad_sq_, EI.shape),
                ("item_feature_bias_grad_sq", model.item_feature_bias_grad_sq_,
                 (EI.shape[0],))):
            if array.dtype != np.float32 or array.shape != shape:
                raise ValueError(f"{name} has dtype {array.dtype} and shape {array.shape}; "
                                 f"expected float32 {shape}")
        for kind in ("user", "item"):
            getattr(model, f"{kind}_features_").check_format(full_check=True)
            if len(getattr(model, f"{kind}_feature_names_")) != \
                    getattr(model, f"{kind}_features_").shape[1]:
                raise ValueError(f"{kind}_feature_names does not match the feature matrix")


def jsonable_params(params):
    out = {}
    for key, value in params.items():
        if isinstance(value, np.ndarray):
            value = value.tolist()
        elif isinstance(value, np.generic):
            value = value.item()
        elif isinstance(value, np.random.Generator):
            value = None
        out[key] = value
    return out


def encode_ids(ids):
    ids = np.asarray(ids)
    if np.issubdtype(ids.dtype, np.integer):
        return ids.astype(np.int64), np.array("int")
    if np.issubdtype(ids.dtype, np.floating):
        return ids.astype(np.float64), np.array("float")
    strings = [str(v) for v in ids]
    fixed = np.array(strings, dtype=str)
    if fixed.tolist() != strings:  # numpy's fixed-width strings drop trailing NULs
        return np.array(json.dumps(strings)), np.array("json")
    return fixed, np.array("str")


def decode_ids(data, kind):
    if f"{kind}_ids" not in data:
        return None
    ids = data[f"{kind}_ids"]
    encoding = str(data[f"{kind}_ids_kind"])
    if encoding == "json":
        return np.array(json.loads(str(ids)), dtype=object)
    if encoding == "str":
        return ids.astype(object)
    if encoding in ("int", "float"):
        return ids
    raise ValueError(f"unknown {kind} id encoding {encoding!r}")
