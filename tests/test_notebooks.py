"""The notebooks under notebooks/: the outputs stored in them (what GitHub shows) come from one
clean run of their current cells, and they run top to bottom in a fresh kernel with the same
displays, figures included.

After editing a notebook, run ``python tests/test_notebooks.py --store``: it executes every
notebook as these tests do and writes it back with its outputs.
"""

import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
WALKTHROUGH = ROOT / "notebooks" / "walkthrough.ipynb"
#: where the walkthrough looks for MovieLens ml-latest-small by default (tests/conftest.py's
#: SHARED_DATA); without it, it runs on the demo data shipped with warprec
MOVIELENS = ROOT.parent / "shared" / "data" / "ml-latest-small"


def execute(path, movielens=None):
    """The notebook at ``path`` run in a fresh kernel whose working folder is the notebook's,
    importing this checkout's warprec (an installed copy may be another checkout's), with
    the environment variable MOVIELENS set to ``movielens`` if given."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.read(path, as_version=4)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    if movielens is not None:
        env["MOVIELENS"] = str(movielens)
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                     coalesce_streams=True, record_timing=False,
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute(env=env)
    return notebook


def code_cells(notebook):
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def errors(notebook):
    return [f"cell {cell.execution_count}: {out.get('ename')}: {out.get('evalue')}"
            for cell in code_cells(notebook) for out in cell.get("outputs", [])
            if out.get("output_type") == "error"]


def displays(notebook):
    """Per code cell, the MIME types of its displayed results (tables, figures) in order;
    streams (printed text, warnings) are left out, as they may depend on the machine."""
    return [[sorted(out["data"]) for out in cell.get("outputs", [])
             if out.get("output_type") in ("execute_result", "display_data")]
            for cell in code_cells(notebook)]


def figures(notebook):
    return sum(kinds.count(["image/png", "text/plain"]) for kinds in displays(notebook))


def stored(path):
    nbformat = pytest.importorskip("nbformat")
    return nbformat.read(path, as_version=4)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_outputs_come_from_one_clean_run(path):
    notebook = stored(path)
    assert [cell.execution_count for cell in code_cells(notebook)] == list(
        range(1, len(code_cells(notebook)) + 1)), "run every cell once, in order"
    assert not errors(notebook)


def test_the_walkthrough_stores_its_figures():
    """GitHub renders the stored outputs: the learning curve and the popularity figure are
    among them as PNG images, and the data section says which data set ran."""
    notebook = stored(WALKTHROUGH)
    assert figures(notebook) >= 2
    first = "".join(out.get("text", "") for out in code_cells(notebook)[0].outputs)
    assert first.startswith("Data: ")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_as_stored(path):
    """A fresh run has no error and shows the same tables and inline figures, cell by cell,
    as the stored outputs (a cell changed without storing its new outputs fails here)."""
    notebook = execute(path)
    assert not errors(notebook)
    assert displays(notebook) == displays(stored(path))


@pytest.mark.skipif(not (MOVIELENS / "ratings.csv").is_file(),
                    reason="without MovieLens the other tests already ran the demo data")
def test_walkthrough_runs_on_the_demo_data_without_movielens(tmp_path):
    notebook = execute(WALKTHROUGH, movielens=tmp_path / "absent")
    first = "".join(out.get("text", "") for out in code_cells(notebook)[0].outputs)
    assert "synthetic demo data" in first
    assert not errors(notebook)
    assert displays(notebook) == displays(stored(WALKTHROUGH))


def test_the_readme_links_the_notebooks():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\((notebooks/[^)\s]+\.ipynb)\)", readme))
    assert linked == {p.relative_to(ROOT).as_posix() for p in NOTEBOOKS}


if __name__ == "__main__":
    if sys.argv[1:] != ["--store"]:
        sys.exit("usage: python tests/test_notebooks.py --store")
    import nbformat

    for path in NOTEBOOKS:
        nbformat.write(execute(path), path)
        print(f"stored the outputs of {path.relative_to(ROOT)}")  # noqa: T201
