"""First-call (compile) and cached-call time of warprec's kernels, in fresh processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

PROBE = Path(__file__).with_name("_compile_probe.py")
CALLS = ("fit", "evaluate", "recommend")


def _probe(cache_dir, n_threads):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    proc = subprocess.run([sys.executable, str(PROBE), str(n_threads)], env=env,
                          capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"compile probe failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _source_stamp():
    """(path, mtime, size) of warprec's sources: Numba's cache is keyed on them, so an
    edit between the two processes would force a recompilation."""
    import warprec

    root = Path(warprec.__file__).parent
    return sorted((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in root.rglob("*.py"))


def measure(n_threads, attempts=3):
    """Process 1 with an empty NUMBA_CACHE_DIR compiles every kernel; process 2 reuses
    that directory. In each, a call's first-call cost is (first - second call).
    If warprec's sources change while this runs (someone editing), the pair is redone."""
    for attempt in range(1, attempts + 1):
        before = _source_stamp()
        with tempfile.TemporaryDirectory(prefix="warprec-numba-cache-") as cache:
            fresh = _probe(cache, n_threads)
            cached = _probe(cache, n_threads)
            n_files = sum(1 for _ in Path(cache).rglob("*") if _.is_file())
        stable = _source_stamp() == before
        if stable:
            break
    out = dict(fresh_process_empty_cache=fresh, fresh_process_warm_cache=cached,
               cache_files=n_files, attempts=attempt, sources_stable=stable)
    for label, run in (("compile", fresh), ("cache_load", cached)):
        parts = {c: max(run[f"{c}_first_seconds"] - run[f"{c}_second_seconds"], 0.0)
                 for c in CALLS}
        out[f"{label}_seconds"] = parts
        out[f"{label}_seconds_total"] = sum(parts.values())
        out[f"{label}_first_calls_total"] = sum(run[f"{c}_first_seconds"] for c in CALLS)
    return out
