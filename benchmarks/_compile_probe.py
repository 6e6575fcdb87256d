"""Run in a subprocess by _compile.py: time the first and second call of warprec's fit,
evaluate_factors and recommend in a fresh interpreter. NUMBA_CACHE_DIR is set by the
caller (an empty directory -> compilation; a filled one -> loading from the cache).
Prints one JSON line."""

import json
import sys
import time

t0 = time.perf_counter()
import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

t1 = time.perf_counter()
from warprec import WARPFactorizer  # noqa: E402
from warprec.metrics import evaluate_factors  # noqa: E402

t2 = time.perf_counter()
n_threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
X = sp.random(300, 200, density=0.05, format="csr", random_state=0, dtype=np.float32)
X.data[:] = 1.0
out = dict(import_numpy_scipy_seconds=t1 - t0, import_warprec_seconds=t2 - t1)
for call in ("first", "second"):
    tic = time.perf_counter()
    model = WARPFactorizer(n_components=64, epochs=2, n_threads=n_threads).fit(X)
    out[f"fit_{call}_seconds"] = time.perf_counter() - tic
    tic = time.perf_counter()
    evaluate_factors(model.user_factors_, model.item_factors_, model.item_biases_, X, None,
                     k=10, n_threads=n_threads)
    out[f"evaluate_{call}_seconds"] = time.perf_counter() - tic
    tic = time.perf_counter()
    model.recommend(np.arange(50), k=10)
    out[f"recommend_{call}_seconds"] = time.perf_counter() - tic
print(json.dumps(out))
