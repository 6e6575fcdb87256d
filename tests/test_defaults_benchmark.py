"""The defaults benchmark's data plumbing and report (benchmarks/_family.py, defaults.py);
the measurements themselves run only from the command line."""

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import _data  # noqa: E402
import _family  # noqa: E402
import defaults  # noqa: E402


def test_frames_share_one_index_space_and_unknown_items_are_misses():
    train = pd.DataFrame({"user_id": [10, 10, 20, 30], "item_id": [7, 8, 8, 9]})
    test = pd.DataFrame({"user_id": [10, 20, 20, 40], "item_id": [9, 7, 99, 8]})
    ds = _data.from_frames("toy", train, test, {})
    # users 10, 20, 30, 40; train items 7, 8, 9 (item 99 only in test)
    assert ds.train.shape == ds.test.shape == (4, 3)
    assert ds.train.toarray().tolist() == [[1, 1, 0], [0, 1, 0], [0, 0, 1], [0, 0, 0]]
    assert ds.test.toarray().tolist() == [[0, 0, 1], [1, 0, 0], [0, 0, 0], [0, 1, 0]]
    assert ds.n_relevant.tolist() == [1, 2, 0, 1]
    assert ds.info["test_only_items"] == 1 and ds.info["test_rows_on_unknown_items"] == 1
    assert _family.shape(ds)["per_item"] == pytest.approx(4 / 3)


def _row(data, part, params, curve, final=None):
    curve = [dict(epoch=e, seconds=float(e), **{"ndcg@10": v, "recall@20": v})
             for e, v in curve]
    return dict(data=data, part=part, params=params, seed=0, threads=1,
                shape=dict(n_users=10, n_items=20, positives=50, per_item=2.5,
                           per_user=5.0, density=0.25),
                curve=curve, final=final or curve[-1])


def test_report_compares_the_defaults_with_the_best_grid_point(tmp_path):
    rows = [
        _row("ml100k", "defaults", {}, [(60, 0.30)]),
        _row("ml100k", "grid", {"learning_rate": 0.02}, [(5, 0.20), (10, 0.31), (15, 0.25)]),
        _row("ml100k", "grid", {"learning_rate": 0.05}, [(5, 0.29)]),
        _row("ml100k", "lightfm", {"learning_rate": 0.05}, [(5, 0.24), (10, 0.25)]),
        _row("ml100k", "early-stopping", {"early_stopping": True}, [(7, 0.28)]),
        # fresh-seed runs of the chosen points: reported beside them, never chosen
        dict(_row("ml100k", "grid-remeasure", {"learning_rate": 0.02, "epochs": 10},
                  [(10, 0.29)]), seed=1),
        dict(_row("ml100k", "grid-remeasure", {"learning_rate": 0.02, "epochs": 10},
                  [(10, 0.31)]), seed=2),
        dict(_row("ml100k", "lightfm-remeasure", {"learning_rate": 0.05, "epochs": 10},
                  [(10, 0.50)]), seed=1),
    ]
    out = tmp_path / "runs.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    defaults.report(out)
    table = out.with_suffix(".md").read_text()
    line = next(x for x in table.splitlines() if x.startswith("| ml100k"))
    cells = [c.strip() for c in line.split("|")[1:-1]]
    assert cells[2].startswith("0.3000") and cells[4].startswith("0.3100 (learning_rate=0.02")
    assert "10 ep" in cells[4]
    assert cells[5] == "0.3000"  # the re-measured grid point (mean of seeds 1 and 2)
    assert cells[6] == f"{0.30 / 0.31:.3f}; {0.30 / 0.30:.3f}"
    assert cells[7].startswith("0.2500 (learning_rate=0.05") and cells[8] == "0.5000"
    assert cells[9] == f"{0.30 / 0.25:.3f}; {0.30 / 0.50:.3f}"
    assert cells[10] == "0.2800 (7)"


def test_grid_points_cover_the_product():
    points = defaults.grid_points(dict(a=(1, 2), b=(3, 4, 5)))
    assert len(points) == 6 and {"a": 2, "b": 5} in points
    assert len(defaults.grid_points(defaults.GRID)) == np.prod([len(v) for v in
                                                               defaults.GRID.values()])


def test_ablation_report_means_seeds_ratios_and_reruns(tmp_path, monkeypatch):
    """benchmarks/ablation.py's table: the mean over seeds per option, the ratio to the
    defaults, a rerun replacing the earlier run, LightFM's re-measured point beside it and
    implicit's best grid point (by its mean over seeds)."""
    import ablation

    lightfm = tmp_path / "defaults.jsonl"
    lightfm.write_text(json.dumps(_row("toy", "lightfm-remeasure", dict(learning_rate=0.05),
                                       [(5, 0.25)])) + "\n")
    monkeypatch.setattr(ablation, "DEFAULTS_OUT", lightfm)
    out = tmp_path / "ablation.jsonl"

    def run(option, seed, ndcg, params=None):
        final = {"epoch": 60, "seconds": 2.0, "ndcg@10": ndcg, "recall@20": 0.5}
        return json.dumps(dict(data="toy", option=option, params=params or {}, seed=seed,
                               threads=2, final=final)) + "\n"

    als = "implicit ALS"
    out.write_text(run("defaults", 1, 0.2) + run("defaults", 2, 0.4)
                   + run("violators", 1, 0.9) + run("violators", 1, 0.36)
                   + run("violators", 2, 0.30)
                   # grid point a: one seed high, mean 0.2; b: mean 0.25 (the best)
                   + run(als, 1, 0.35, dict(alpha=1)) + run(als, 2, 0.05, dict(alpha=1))
                   + run(als, 1, 0.25, dict(alpha=10)) + run(als, 2, 0.25, dict(alpha=10)))
    ablation.report(out)
    row = [line for line in out.with_suffix(".md").read_text().splitlines()
           if line.startswith("| toy")][0]
    cells = [c.strip() for c in row.strip("|").split("|")]
    n = len(ablation.OPTIONS)
    assert cells[1] == "0.3000 / 0.5000, 2 s"
    assert cells[2] == "0.3300 / 0.5000 (1.100), 2 s"      # the rerun of seed 1 counts
    assert cells[3:n + 1] == ["-"] * (n - 2)   # options not run
    assert cells[n + 1] == "0.2500 / 0.2500 (learning_rate=0.05)"
    assert cells[n + 2] == "0.2500 / 0.5000 (alpha=10), 2 s"
    assert cells[n + 3] == "-"
