"""Golden fits: one-thread fits of every loss and mode hash to the digests recorded before a
change to the training code, so a restructuring that should change nothing provably changes
nothing.

Floating-point results depend on the processor (the instructions LLVM selects for it) and on
the Numba and NumPy versions, so the digests are kept per machine key
(``tests/golden_fits.json``). On a machine without recorded digests the test skips and says
how to record them: check out the commit *before* the change, run

    python tests/test_golden.py --record

then check out the change again and run the test. The digests of the machine the project's CI
runs on are committed.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

GOLDEN = Path(__file__).resolve().parent / "golden_fits.json"

#: name -> (estimator parameters, how the case is fitted); every case is one-threaded.
CASES: dict[str, dict] = {
    "warp": {},
    "warp-exact": {"rank_estimator": "exact"},
    "warp-violators": {"max_violators": 3},
    "warp-kos": {"loss": "warp-kos", "k": 2, "n": 4},
    "warp-sgd-max-norm": {"learning_schedule": "sgd", "max_norm": 1.0},
    "warp-users-order": {"sample_order": "users"},
    "warp-auc-weighting": {"rank_weighting": "auc"},
    "bpr": {"loss": "bpr"},
    "bpr-popularity": {"loss": "bpr", "negative_sampling": "popularity"},
    "ordinal": {"loss": "ordinal", "n": 3},
    "ccl": {"loss": "ccl"},
    "ccl-dropout-popularity": {"loss": "ccl", "dropout": 0.1,
                               "negative_sampling": "popularity"},
    "softmax": {"loss": "softmax", "n_negatives": 20},
    "early-stopping-drop": {"loss": "ccl", "epochs": 12, "early_stopping": True,
                            "learning_rate_drop": 0.5, "n_iter_no_change": 2,
                            "validation_interval": 1},
    "early-stopping-refit": {"epochs": 8, "early_stopping": "refit", "n_iter_no_change": 2},
}
#: the fitted arrays a digest covers (those a model has)
ARRAYS = ("user_factors_", "item_factors_", "item_biases_", "user_grad_sq_", "item_grad_sq_",
          "bias_grad_sq_", "user_feature_factors_", "item_feature_factors_",
          "item_feature_biases_", "user_feature_grad_sq_", "item_feature_grad_sq_",
          "item_feature_bias_grad_sq_")


def machine_key() -> str:
    """The processor LLVM compiles for, with the versions that change generated code."""
    import llvmlite.binding
    import numba

    return (f"{llvmlite.binding.get_host_cpu_name()}|{platform.machine()}|numba "
            f"{numba.__version__}|numpy {np.__version__}")


def _digest(model, extra=()) -> str:
    h = hashlib.sha256()
    for name in ARRAYS:
        if hasattr(model, name):
            h.update(name.encode())
            h.update(np.ascontiguousarray(getattr(model, name)).tobytes())
    h.update(repr(model.epochs_done_).encode())
    for array in extra:
        h.update(np.ascontiguousarray(array).tobytes())
    return h.hexdigest()[:24]


def _data():
    from warprec.datasets import make_interactions

    X = make_interactions(300, 200, 6000, rank=4, random_state=11)
    graded = X.copy()
    graded.data = (1 + np.arange(graded.nnz) % 5).astype(np.float32)
    return X, graded


def _model(**params):
    from warprec import WARPFactorizer

    base = {"n_components": 16, "epochs": 3, "n_threads": 1, "random_state": 5}
    return WARPFactorizer(**{**base, **params})


def _frames(X):
    coo = X.tocoo()
    frame = pd.DataFrame({"user_id": [f"u{u}" for u in coo.row],
                          "item_id": [f"i{i}" for i in coo.col]})
    first = frame[(coo.row < 250) & (coo.col < 180)]
    return first, frame


def compute() -> dict[str, str]:
    """The digest of every case on this machine."""
    X, graded = _data()
    out = {}
    for name, params in CASES.items():
        model = _model(**params).fit(graded if params.get("loss") == "ordinal" else X)
        out[name] = _digest(model)
    # growth through partial_fit (raw ids, new users and items), then fold-in
    first, everything = _frames(X)
    model = _model().fit(first)
    model.partial_fit(everything)
    folded = model.fold_in(X[:7].astype(np.float32).tocsr()[:, :model.item_factors_.shape[0]])
    out["partial-fit-growth-fold-in"] = _digest(model, [folded])
    # side features (hybrid kernel), WARP and BPR
    rng = np.random.default_rng(3)
    item_features = sp.random(X.shape[1], 12, density=0.2, random_state=rng, format="csr",
                              dtype=np.float32)
    user_features = sp.random(X.shape[0], 6, density=0.3, random_state=rng, format="csr",
                              dtype=np.float32)
    out["hybrid-warp"] = _digest(_model().fit(X, item_features=item_features))
    out["hybrid-bpr"] = _digest(_model(loss="bpr").fit(
        X, user_features=user_features, item_features=item_features))
    # parameters beyond the prefetch threshold (the prefetching kernel)
    from warprec.datasets import make_interactions

    big = make_interactions(2000, 16000, 30000, rank=4, random_state=2)
    out["warp-prefetch"] = _digest(_model(n_components=64, epochs=1, sample_order="users")
                                   .fit(big))
    return out


def _recorded() -> dict[str, dict[str, str]]:
    return json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}


def test_fits_match_the_recorded_digests():
    recorded = _recorded().get(machine_key())
    if recorded is None:
        pytest.skip(f"no golden digests for this machine ({machine_key()}); record them on "
                    f"the commit before a change with: python tests/test_golden.py --record")
    now = compute()
    assert set(now) == set(recorded), "cases were added or removed: record them again"
    changed = sorted(name for name in now if now[name] != recorded[name])
    assert not changed, f"one-thread fits changed: {changed}"


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python tests/test_golden.py --record")
    table = _recorded()
    table[machine_key()] = compute()
    GOLDEN.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(f"recorded {len(table[machine_key()])} digests for {machine_key()}")  # noqa: T201
