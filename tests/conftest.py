"""Shared test fixtures: paths to the shared MovieLens data (tests skip without it); and a
guard against testing stale compiled kernels."""

import hashlib
import os
import shutil
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))  # so tests can `import naive`
PACKAGE = TESTS.parent / "warprec"
#: The tests' Numba caches, one folder per state of the sources (unless NUMBA_CACHE_DIR is set).
KERNEL_CACHES = TESTS.parent / ".pytest_cache" / "numba"


def _use_a_cache_of_these_sources():
    """Point Numba's on-disk cache at a folder named after the digest of every warprec
    source file that uses Numba (and every file of ``_kernels/``), so that no test runs a
    kernel compiled from other sources.

    Numba's cache (``cache=True``) checks a function against its own file only (numba
    0.68 stores a hash of that file's contents), not against the files of the functions
    it calls or inlines: after an edit to ``_kernels/search.py`` or a ``git pull`` that
    changes it, the cached training slice (in ``_kernels/train.py``) would still run the
    old code and the tests would pass on it. Here a change to any such file makes a new
    folder, and the first run after it compiles everything, as a fresh clone does. The
    folders of other states are removed (going back to earlier sources compiles again),
    except under a ``NUMBA_CACHE_DIR`` the caller set, which gets a subfolder per state.
    Set before Numba reads its configuration; subprocesses inherit it.
    """
    digest = hashlib.sha1()
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_bytes()
        # (every file of the kernel layer: some are compiled into kernels without naming
        # numba, e.g. the loss modules plugged into the epoch skeleton)
        if b"numba" in source or "_kernels" in path.relative_to(PACKAGE).parts:
            digest.update(str(path.relative_to(PACKAGE)).encode() + b"\0" + source)
    name = "warprec-" + digest.hexdigest()[:16]
    given = os.environ.get("NUMBA_CACHE_DIR")
    if given and Path(given).name == name:   # chosen by the process that started this one
        return                               # (an xdist controller): share it
    root = Path(given) if given else KERNEL_CACHES
    folder = root / name
    if not given and root.is_dir():
        for other in root.iterdir():
            if other != folder:
                shutil.rmtree(other, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    os.environ["NUMBA_CACHE_DIR"] = str(folder)
    if "numba" in sys.modules:   # imported by a plugin before this file: update it too
        sys.modules["numba"].config.CACHE_DIR = str(folder)


_use_a_cache_of_these_sources()

SHARED_DATA = TESTS.parents[1] / "shared" / "data"
ML100K_SPLIT = SHARED_DATA / "ml-100k-split"


@pytest.fixture(scope="session")
def ml100k_split():
    """(train, test) DataFrames of the fixed ML-100K benchmark split, or skip."""
    if not (ML100K_SPLIT / "train.csv").exists():
        pytest.skip(f"shared MovieLens split not found at {ML100K_SPLIT}")
    import pandas as pd
    return pd.read_csv(ML100K_SPLIT / "train.csv"), pd.read_csv(ML100K_SPLIT / "test.csv")


@pytest.fixture(scope="module")
def dask_client():
    """A Dask client of a local cluster of two single-threaded workers, run as threads of
    this process (fast to start); skips without the ``dask`` extra."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            yield client


#: Test files whose tests (with their subprocesses) take the longest once the kernels are
#: compiled. They run first, so that the run does not end with one xdist worker still on
#: them while the other is idle. (`--dist loadscope`, whole files per worker, ran their
#: module fixtures once but left the kernel compilations of a cold cache unbalanced
#: between the two workers: 181 against 114 CPU s.)
LONG_FILES = ("test_tuning.py", "test_cli.py", "test_notebooks.py", "test_dask_fit.py",
              "test_wheel.py", "test_benchmarks.py", "test_features.py")


def pytest_collection_modifyitems(config, items):
    """Run the LONG_FILES first (a stable sort: the order within and among the others
    stays)."""
    rank = {name: k for k, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONG_FILES)))
