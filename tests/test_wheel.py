"""The wheel builds, holds the package data, and works installed outside the repository.

The wheel is built from a copy of the sources (so no ``build/`` folder appears in the
checkout) and installed with ``pip install --no-deps --target`` into a temporary folder;
its dependencies come from the test environment. Every check runs in a subprocess whose
``PYTHONPATH`` starts with that folder and whose working directory is outside the
repository, and asserts that it imported the installed copy, not the checkout (an
editable install puts its finder after the path entries).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import warprec

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
#: What the build reads besides the package: pyproject.toml names the other two.
BUILD_FILES = ("pyproject.toml", "README.md", "LICENSE")


def _run(command, cwd, env=None, timeout=300):
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, (
        f"{' '.join(map(str, command))} exited with {proc.returncode}\n"
        f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}")
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """Build the wheel from a copy of the sources and install it into a folder."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    source.mkdir()
    for name in BUILD_FILES:
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(REPO / "warprec", source / "warprec",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc"))
    dist = root / "dist"
    _run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--quiet",
          "-w", str(dist)], cwd=root)
    wheels = sorted(dist.glob("warprec-*.whl"))
    assert len(wheels) == 1, wheels
    site = root / "site"
    _run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target",
          str(site), str(wheels[0])], cwd=root)
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(site)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    # the installed kernels compile into a cache of their own, not the checkout's
    env["NUMBA_CACHE_DIR"] = str(root / "numba-cache")
    return {"wheel": wheels[0], "site": site, "cwd": elsewhere, "env": env}


def test_wheel_holds_the_package_data_and_metadata(installed):
    with zipfile.ZipFile(installed["wheel"]) as wheel:
        names = set(wheel.namelist())
        dist_info = f"warprec-{warprec.__version__}.dist-info"
        for name in ("warprec/demo_data/ratings.csv", "warprec/demo_data/movies.csv",
                     "warprec/py.typed", "warprec/__main__.py",
                     f"{dist_info}/licenses/LICENSE"):
            assert name in names, f"{name} is missing from the wheel"
        assert not [n for n in names if "__pycache__" in n or n.startswith("tests/")]
        metadata = wheel.read(f"{dist_info}/METADATA").decode()
        entry_points = wheel.read(f"{dist_info}/entry_points.txt").decode()
    assert f"\nVersion: {warprec.__version__}\n" in metadata
    assert "License-Expression: MIT" in metadata
    numba_requirement = [line for line in metadata.splitlines()
                         if line.startswith("Requires-Dist: numba")]
    assert len(numba_requirement) == 1 and "<" in numba_requirement[0], numba_requirement
    assert "warprec = warprec.cli:main" in entry_points


def test_installed_copy_is_imported_and_finds_its_demo_data(installed):
    code = ("import importlib.resources, warprec\n"
            "from warprec.cli import DEMO_DATA\n"
            "from warprec.data import read_item_titles, read_ratings\n"
            "print(warprec.__file__)\n"
            "print(warprec.__version__)\n"
            "print(len(read_ratings(DEMO_DATA / 'ratings.csv')))\n"
            "print(len(read_item_titles(DEMO_DATA / 'movies.csv')))\n"
            "print(importlib.resources.files('warprec').joinpath('py.typed').is_file())\n")
    proc = _run([sys.executable, "-c", code], cwd=installed["cwd"], env=installed["env"])
    location, version, n_ratings, n_titles, typed = proc.stdout.split()
    assert Path(location).is_relative_to(installed["site"]), location
    assert version == warprec.__version__
    assert int(n_ratings) == 100_000 and int(n_titles) == 1500 and typed == "True"


def test_console_script_prints_the_version(installed):
    script = installed["site"] / "bin" / "warprec"
    assert script.is_file(), f"pip did not install the console script at {script}"
    proc = _run([str(script), "--version"], cwd=installed["cwd"], env=installed["env"])
    assert proc.stdout == f"warprec {warprec.__version__}\n"


def test_demo_runs_from_the_wheel(installed):
    # one Numba thread: the installed kernels compile into a cache of their own, and the
    # serial epoch kernel compiles in about half the time of the parallel one
    proc = _run([sys.executable, "-m", "warprec", "demo", "--epochs", "1"],
                cwd=installed["cwd"], env=dict(installed["env"], NUMBA_NUM_THREADS="1"))
    assert "data: ratings.csv" in proc.stdout
    assert "NDCG@10 is" in proc.stdout and "top 5 for user" in proc.stdout
    assert "Synthetic Film" in proc.stdout  # titles read from the package's movies.csv
    assert "Traceback" not in proc.stderr
