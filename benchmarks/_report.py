"""Aggregation, target checks and output: results.json, results.md, quality_vs_time.png."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

REFERENCE = {  # ../shared/data/README.md, ML-100K split
    "lightfm": dict(setting="LightFM 1.17 WARP lr 0.02, max_sampled 10, 60 epochs",
                    ndcg=0.300, seconds=2.4),
    "implicit": dict(setting="implicit 0.7.3 BPR lr 0.01, reg 0.001, 50 iterations",
                     ndcg=0.2379, seconds=0.3),
}


# ---------------------------------------------------------------------- aggregation
def _median(values):
    values = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return float(np.median(values)) if values else None


def summarise(runs):
    """One row per (library, config): medians of speed over repeats, mean final quality."""
    rows = {}
    for run in runs:
        key = run["config"]
        rows.setdefault(key, []).append(run)
    table = []
    for key, group in rows.items():
        ok = [r for r in group if r.get("status") == "ok"]
        first = group[0]
        row = dict(config=key, library=first["library"], params=first.get("params"),
                   status="ok" if ok else first.get("status", "error"),
                   error=None if ok else first.get("error"), n_runs=len(ok))
        if ok:
            finals = [r["curve"][-1] for r in ok if r["curve"]]
            row.update(
                epochs=ok[0]["epochs"], threads=ok[0]["threads"],
                seconds_per_epoch=_median([r["seconds_per_epoch"] for r in ok]),
                steady_seconds_per_epoch=_median([r["steady_seconds_per_epoch"] for r in ok]),
                cpu_seconds_per_epoch=_median([r.get("cpu_seconds_per_epoch") for r in ok]),
                fit_seconds=_median([r["fit_seconds"] for r in ok]),
                positives_per_second=_median([r["positives_per_second"] for r in ok]),
                mean_trials=_median([r.get("mean_trials") for r in ok]),
                peak_rss_mb=_median([r.get("peak_rss_mb") for r in ok]),
                rss_increase_mb=_median([r.get("rss_increase_mb") for r in ok]),
                memory_method=ok[0].get("memory_method"),
                ndcg=float(np.mean([f["ndcg@10"] for f in finals])) if finals else None,
                recall=float(np.mean([f["recall@20"] for f in finals])) if finals else None,
                ndcg_by_seed=[round(f["ndcg@10"], 4) for f in finals],
                final_epoch=finals[0]["epoch"] if finals else None)
            if first["library"] == "warprec":
                bd = [r["breakdown"] for r in ok]
                row["breakdown"] = {k: _median([b[k] for b in bd]) for k in bd[0]}
                row["kernel_positives_per_second"] = _median(
                    [r["kernel_positives_per_second"] for r in ok])
            else:
                bd = [r["breakdown"] for r in ok]
                row["breakdown"] = {k: _median([b[k] for b in bd]) for k in bd[0]}
        table.append(row)
    return table


def _row(table, config):
    for row in table:
        if row["config"] == config:
            return row
    return None


def _best_epoch(runs, config):
    """The shortest epoch wall time over all seeds of ``config``, first epochs left out
    (they carry one-time work); None without such epochs."""
    walls = [w for run in runs if run["config"] == config and run.get("status") == "ok"
             for w in (run.get("epoch_wall_seconds") or [])[1:]]
    return min(walls) if walls else None


def _time_to(runs, config, level):
    """Median over seeds of the training seconds at the first checkpoint of ``config``
    whose NDCG@10 reaches ``level`` (None if no seed reaches it)."""
    times = []
    for run in runs:
        if run["config"] != config or run.get("status") != "ok":
            continue
        hit = next((p["seconds"] for p in run["curve"] if p["ndcg@10"] >= level), None)
        times.append(hit)
    if not times or any(t is None for t in times):
        return None
    return float(np.median(times))


def compare(table, pairs, runs=()):
    """warprec / competitor ratios for each (warprec config, competitor config) pair.

    Besides the per-epoch ratios: ``time_to_quality_speedup`` = competitor's fit seconds /
    seconds warprec needs to first reach the competitor's final NDCG@10 (checkpoint
    resolution, median over seeds; None if some seed never gets there)."""
    out = []
    for mine, theirs in pairs:
        a, b = _row(table, mine), _row(table, theirs)
        if a is None or b is None:
            continue
        item = dict(warprec=mine, competitor=theirs)
        if a["status"] != "ok" or b["status"] != "ok":
            item["status"] = f"{theirs}: {b['status']}" if b["status"] != "ok" else a["status"]
            out.append(item)
            continue
        item.update(
            status="ok",
            same_epochs=a["epochs"] == b["epochs"],
            speedup_steady=b["steady_seconds_per_epoch"] / a["steady_seconds_per_epoch"],
            speedup_wall=b["seconds_per_epoch"] / a["seconds_per_epoch"],
            speedup_cpu=(b["cpu_seconds_per_epoch"] / a["cpu_seconds_per_epoch"]
                         if a.get("cpu_seconds_per_epoch") and b.get("cpu_seconds_per_epoch")
                         else None),
            fit_time_ratio=a["fit_seconds"] / b["fit_seconds"],
            ndcg_ratio=a["ndcg"] / b["ndcg"] if b["ndcg"] else None,
            recall_ratio=a["recall"] / b["recall"] if b["recall"] else None,
            ndcg=(a["ndcg"], b["ndcg"]))
        best_a, best_b = _best_epoch(runs, mine), _best_epoch(runs, theirs)
        item["speedup_best_epoch"] = best_b / best_a if best_a and best_b else None
        reach = _time_to(runs, mine, b["ndcg"]) if b["ndcg"] is not None else None
        item["seconds_to_competitor_ndcg"] = reach
        item["time_to_quality_speedup"] = b["fit_seconds"] / reach if reach else None
        out.append(item)
    return out


def check_targets(results):
    """The issue's targets, each with the measured value and met / not met / not run."""
    targets = []

    def add(name, goal, value, met, detail=""):
        targets.append(dict(target=name, goal=goal, measured=value,
                            met=None if value is None else bool(met), detail=detail))

    for ds in ("ml100k", "synthetic"):
        sec = results.get(ds) or {}
        comp = [c for c in sec.get("comparisons", []) if c.get("identical_settings")]
        label = {"ml100k": "ML-100K", "synthetic": "synthetic"}[ds]
        if not comp:
            add(f"epoch throughput vs LightFM ({label})", ">= 6x", None, False, "not run")
            add(f"NDCG@10 vs LightFM, same epochs ({label})", ">= 0.99x", None, False, "not run")
            continue
        for c in comp:
            if c["status"] != "ok":
                add(f"epoch throughput vs LightFM ({label})", ">= 6x", None, False, c["status"])
                continue
            separate = (f"steady s/epoch ratio {c['speedup_steady']:.2f}x (wall incl. "
                        f"per-call overhead: {c['speedup_wall']:.2f}x; CPU seconds: "
                        f"{_f(c.get('speedup_cpu'), 3)}x; best single epochs: "
                        f"{_f(c.get('speedup_best_epoch'), 3)}x)")
            paired = _paired_row(sec, c["warprec"], c["competitor"])
            if paired is not None:
                value = paired["ratio_median"]
                detail = (f"median of {paired['pairs']} paired epoch ratios (quartiles "
                          f"{paired['ratio_q25']:.2f}-{paired['ratio_q75']:.2f}; summed "
                          f"epochs {paired['ratio_of_totals']:.2f}x); separate runs: "
                          + separate)
            else:
                value, detail = c["speedup_steady"], "separate runs: " + separate
            add(f"epoch throughput vs LightFM ({label}; {c['warprec']} vs {c['competitor']})",
                ">= 6x", round(value, 2), value >= 6.0, detail)
            mine = _final_ndcgs(sec, c["warprec"])
            theirs = _final_ndcgs(sec, c["competitor"])
            detail = f"separate runs: {c['ndcg'][0]:.4f} vs {c['ndcg'][1]:.4f}"
            if paired is not None:
                mine += paired["ndcg_by_seed"][0]
                theirs += paired["ndcg_by_seed"][1]
                detail += (f"; paired runs: {paired['ndcg'][0]:.4f} vs {paired['ndcg'][1]:.4f}; "
                           f"measured: means over all {len(mine)} and {len(theirs)} seeds")
            ratio = float(np.mean(mine) / np.mean(theirs))
            add(f"NDCG@10 vs LightFM, same epochs ({label}; {c['warprec']} vs "
                f"{c['competitor']})", ">= 0.99x", round(ratio, 4), ratio >= 0.99,
                f"{np.mean(mine):.4f} vs {np.mean(theirs):.4f} ({detail})")
    sc = results.get("scaling")
    if sc and "ratio_paired_median" in sc:
        add("thread scaling 1 -> 2 (synthetic)", ">= 1.8x",
            round(sc["ratio_paired_median"], 3), sc["ratio_paired_median"] >= 1.8,
            f"median of {len(sc['ratios_paired'])} paired runs (ratios "
            + ", ".join(f"{r:.2f}" for r in sc["ratios_paired"])
            + f"); ratio of median throughputs {sc['ratio_median']:.3f}, best-of-runs "
            f"ratio {sc['ratio_best']:.3f}")
    else:
        add("thread scaling 1 -> 2 (synthetic)", ">= 1.8x", None, False, "not run")
    ev = results.get("evaluate")
    if ev and ev.get("speedup_vs_implicit"):
        add("evaluate_factors vs implicit ranking_metrics_at_k", ">= 2x",
            round(ev["speedup_vs_implicit"], 2), ev["speedup_vs_implicit"] >= 2.0,
            f"{ev['n_users']} users x {ev['n_items']} items, implicit's best: "
            f"{ev.get('implicit_best_setting')}")
    else:
        add("evaluate_factors vs implicit ranking_metrics_at_k", ">= 2x", None, False,
            "not run" if not ev else "implicit not installed")
    co = results.get("compile")
    if co and "compile_seconds_total" in co:
        warn = "" if co.get("sources_stable", True) else "; INVALID: sources edited meanwhile"
        # the target is the first fit; evaluate and recommend are reported beside it
        fit_compile = co["compile_seconds"]["fit"]
        fit_cached = co["cache_load_seconds"]["fit"]
        add("first fit in a fresh process: compile", "< 15 s", round(fit_compile, 2),
            fit_compile < 15,
            f"fit + evaluate + recommend {co['compile_seconds_total']:.2f} s{warn}")
        add("first fit in a second process: cache load", "< 1 s", round(fit_cached, 3),
            fit_cached < 1,
            f"fit + evaluate + recommend {co['cache_load_seconds_total']:.3f} s{warn}")
        if warn:    # a recompilation caused by an edit says nothing about the cache
            targets[-1]["met"] = None
    else:
        add("first-call compile", "< 15 s", None, False,
            co.get("status", "not run") if co else "not run")
        add("cached first call", "< 1 s", None, False,
            co.get("status", "not run") if co else "not run")
    return targets


def _final_ndcgs(sec, config):
    """NDCG@10 after the last epoch of every successful separate run of ``config``."""
    return [r["curve"][-1]["ndcg@10"] for r in sec.get("runs", [])
            if r.get("config") == config and r.get("status") == "ok" and r.get("curve")]


def _paired_row(sec, mine, theirs):
    """The paired-epochs summary of a pair (``_paired.py``), if it ran."""
    for row in sec.get("paired") or []:
        if (row["warprec"], row["competitor"]) == (mine, theirs) and row["status"] == "ok":
            return row
    return None


# ---------------------------------------------------------------------- output
def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    return obj


def write_json(results, path):
    path = Path(path)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(_jsonable(results), indent=1))
    tmp.replace(path)


def _f(x, digits=3, unit=""):
    if x is None:
        return "n/a"
    if isinstance(x, str):
        return x
    if abs(x) >= 1000:
        return f"{x:,.0f}{unit}"
    if abs(x) >= 1:
        return f"{x:.{digits}f}{unit}"
    return f"{x:.{digits}g}{unit}"


def _status_row(pair, columns):
    """A table row of ``columns`` cells for a pair that did not run: names and status."""
    return (f"| {pair['warprec']} | {pair['competitor']} | {pair['status']} |"
            + " |" * (columns - 3))


def _training_md(name, sec):
    lines = [f"## {name}", ""]
    d = sec.get("dataset", {})
    if d:
        lines.append(f"{d.get('n_users'):,} users x {d.get('n_items'):,} items, "
                     f"{d.get('n_train'):,} train positives, {d.get('n_test'):,} test positives; "
                     f"metrics over {d.get('n_eval_users'):,} test users. "
                     f"Repeats (seeds): {sec.get('repeats')}, runs alternate between libraries.")
        lines.append("")
    lines += ["| config | epochs | s/epoch (wall) | s/epoch (steady) | CPU s/epoch | positives/s | "
              "mean neg. trials | peak RSS MB (+increase) | NDCG@10 | Recall@20 | NDCG@10 by seed |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sec.get("summary", []):
        if r["status"] != "ok":
            lines.append(f"| {r['config']} | {r['status']} | | | | | | | | | |")
            continue
        trials = "n/a" if r["library"] == "lightfm" else (
            "1 (BPR)" if r["library"] == "implicit" else _f(r["mean_trials"], 2))
        lines.append(
            f"| {r['config']} | {r['epochs']} | {_f(r['seconds_per_epoch'], 4)} | "
            f"{_f(r['steady_seconds_per_epoch'], 4)} | {_f(r.get('cpu_seconds_per_epoch'), 4)} | "
            f"{_f(r['positives_per_second'])} | "
            f"{trials} | {_f(r['peak_rss_mb'], 0)} (+{_f(r['rss_increase_mb'], 0)}) | "
            f"{_f(r['ndcg'], 4)} | {_f(r['recall'], 4)} | {r['ndcg_by_seed']} |")
    comps = sec.get("comparisons", [])
    if comps:
        lines += ["", "Ratios (warprec / competitor; speed-up = competitor s/epoch / warprec "
                  "s/epoch; time-to-quality speed-up = competitor's fit time / warprec's time "
                  "to first reach the competitor's final NDCG@10, at checkpoint resolution):", "",
                  "| warprec | competitor | same epochs | speed-up (steady) | speed-up (wall) | "
                  "speed-up (CPU s) | speed-up (best epochs) | fit-time ratio | NDCG@10 ratio | "
                  "Recall@20 ratio | time-to-quality speed-up |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for c in comps:
            if c["status"] != "ok":
                lines.append(_status_row(c, 11))
                continue
            lines.append(f"| {c['warprec']} | {c['competitor']} | {c['same_epochs']} | "
                         f"{c['speedup_steady']:.2f}x | {c['speedup_wall']:.2f}x | "
                         f"{_f(c.get('speedup_cpu'), 3)}x | "
                         f"{_f(c.get('speedup_best_epoch'), 3)}x | "
                         f"{c['fit_time_ratio']:.3f} | {c['ndcg_ratio']:.4f} | "
                         f"{c['recall_ratio']:.4f} | "
                         + (f"{c['time_to_quality_speedup']:.2f}x "
                            f"({c['seconds_to_competitor_ndcg']:.3g} s)"
                            if c.get("time_to_quality_speedup") else "not reached") + " |")
    paired = sec.get("paired") or []
    if paired:
        lines += ["", "Paired epochs (the identical-settings pairs once more, from other seeds: "
                  "the libraries take turns of two epochs; ratio = LightFM's / warprec's epoch "
                  "2, 4, 6, ... (the second of each turn); this median is the throughput "
                  "target's figure; see benchmarks/README.md):", "",
                  "| warprec | competitor | seeds x epochs | warprec s/epoch (median) | "
                  "LightFM s/epoch (median) | ratio: median (quartiles) | ratio of summed "
                  "epochs | NDCG@10 (warprec vs LightFM) |", "|---|---|---|---|---|---|---|---|"]
        for row in paired:
            if row["status"] != "ok":
                lines.append(_status_row(row, 8))
                continue
            lines.append(f"| {row['warprec']} | {row['competitor']} | "
                         f"{row['seeds']} x {row['epochs']} | "
                         f"{_f(row['warprec_epoch_median'], 4)} | "
                         f"{_f(row['lightfm_epoch_median'], 4)} | {row['ratio_median']:.2f}x "
                         f"({row['ratio_q25']:.2f}-{row['ratio_q75']:.2f}) | "
                         f"{row['ratio_of_totals']:.2f}x | {row['ndcg'][0]:.4f} vs "
                         f"{row['ndcg'][1]:.4f} ({row['ndcg_ratio']:.4f}) |")
    bd = [r for r in sec.get("summary", []) if r["library"] == "warprec" and r["status"] == "ok"]
    if bd:
        lines += ["", "Where warprec's fit time goes (medians over repeats):", "",
                  "| config | fit s | kernel s | Python s (total) | one-time setup s | "
                  "per-epoch Python s | kernel positives/s | kernel ns per positive | "
                  "kernel ns per negative trial |", "|---|---|---|---|---|---|---|---|---|"]
        nnz = d.get("n_train", 0)
        for r in bd:
            b = r["breakdown"]
            kpps = r["kernel_positives_per_second"]
            ns_pos = 1e9 * r["threads"] / kpps
            ns_trial = ns_pos / max(r["mean_trials"] or 1, 1e-9)
            lines.append(f"| {r['config']} | {_f(r['fit_seconds'], 3)} | "
                         f"{_f(b['kernel_seconds'], 3)} | {_f(b['python_seconds'], 3)} | "
                         f"{_f(b['setup_seconds'], 3)} | {_f(b['per_epoch_python_seconds'], 3)} | "
                         f"{_f(kpps)} | {ns_pos:.0f} | {ns_trial:.0f} |")
        parts = sec.get("overhead_parts")
        if parts:
            lines += ["", f"Isolated pieces on this data ({nnz:,} positives): epoch order "
                      f"({parts['sample_order']}) {parts['order_seconds']:.4f} s, parameter "
                      f"check after each epoch (score bound) "
                      f"{parts['usable_check_seconds']:.4f} s, fit with epochs=0 (validation, "
                      f"allocation, initialisation) {parts['fit_with_zero_epochs_seconds']:.4f} s. "
                      "ns per positive/trial are per thread (kernel seconds x threads / work)."]
        others = [r for r in sec.get("summary", []) if r["library"] != "warprec" and r["status"] == "ok"]
        for r in others:
            b = r["breakdown"]
            lines.append("")
            lines.append(f"{r['config']}: " + ", ".join(f"{k} {_f(v, 4)}" for k, v in b.items()))
    for note in sec.get("notes", []):
        lines += ["", note]
    lines.append("")
    return lines


def _host_md(host):
    """The machine check of ``_host.py``: how the logical CPUs share work."""
    if not host:
        return []
    L = ["## Machine check (how the logical CPUs share work)", ""]
    if host.get("status") != "ok":
        return L + [str(host.get("status")), ""]
    L += [f"Efficiency at {host['threads']} threads = one thread's time for a loop / the "
          f"time of {host['threads']} threads each running it at once (1.0: as if alone; "
          f"{1 / host['threads']:.2f}: one core's worth shared); median of "
          f"{host['repeats']} alternating repeats (all repeats in brackets).", "",
          "| loop | bound by | efficiency | repeats | one thread s |", "|---|---|---|---|---|"]
    bound = dict(latency="latency of a dependent scalar chain",
                 vector="vector FMA throughput (L1-resident)",
                 sgemm="numpy float32 matmul (BLAS 1 thread per caller)")
    for name, what in bound.items():
        L.append(f"| {name} | {what} | {_f(host['efficiency'][name], 2)} | "
                 f"{host['efficiency_runs'][name]} | {_f(host['single_seconds'][name], 3)} |")
    L += ["", "Latency near 1 with vector or sgemm well below 1 means the logical CPUs "
          "share one core's vector units (SMT siblings, or a neighbour using them): "
          "vectorised code (warprec's kernels, BLAS) cannot scale there, while scalar "
          "latency-bound code (LightFM's loops) still can. See benchmarks/_host.py.", ""]
    return L


def write_markdown(results, path):
    meta = results.get("meta", {})
    L = ["# warprec benchmark results", ""]
    L.append(f"Command: `{meta.get('command')}`  ")
    L.append(f"Date: {meta.get('date')}; machine: {meta.get('cpu')} ({meta.get('cores')} "
             f"logical cores); threads: {meta.get('threads')}; quick: {meta.get('quick')}  ")
    L.append("Versions: " + ", ".join(f"{k} {v}" for k, v in meta.get("versions", {}).items()) + "  ")
    L.append(f"Load average at start / end: {meta.get('loadavg_start')} / {meta.get('loadavg_end')}"
             + (" - **the machine was busy; timings are unreliable**" if meta.get("busy") else ""))
    L.append("")
    L.append(f"Memory: {meta.get('memory_method')}.  ")
    L.append("warprec's first-call kernel load happens in a warm-up before any timed run "
             f"({_f(meta.get('warmup_seconds'), 3)} s here).")
    L += ["", "## Targets", "", "| target | goal | measured | met | detail |", "|---|---|---|---|---|"]
    for t in results.get("targets", []):
        met = {True: "yes", False: "**no**",
               None: "not valid" if t["measured"] is not None else "not run"}[t["met"]]
        L.append(f"| {t['target']} | {t['goal']} | {_f(t['measured'], 3)} | {met} | {t['detail']} |")
    L.append("")
    L += _host_md(results.get("host"))
    for key, title in (("ml100k", "ML-100K split (quality vs time)"),
                       ("synthetic", "Synthetic set (quality vs time)")):
        sec = results.get(key)
        if sec:
            if sec.get("status") and sec["status"] != "ok":
                L += [f"## {title}", "", sec["status"], ""]
            else:
                L += _training_md(title, sec)
    sc = results.get("scaling")
    if sc:
        L += ["## Thread scaling (warprec, synthetic)", ""]
        if "ratio_paired_median" in sc:
            med = sc["positives_per_second_median"]
            L.append(f"{sc['epochs']} epochs per run from the same seed, {sc['repeats']} "
                     "alternating repeats per thread count; kernel positives/s: "
                     + ", ".join(f"{t} thread(s) {_f(v)}" for t, v in med.items())
                     + f". Ratio 1 -> 2 threads: median of the repeats' ratios "
                     f"{sc['ratio_paired_median']:.3f} ("
                     + ", ".join(f"{r:.3f}" for r in sc["ratios_paired"])
                     + f"), ratio of the medians {sc['ratio_median']:.3f}, best-of-runs "
                     f"{sc['ratio_best']:.3f}.")
        else:
            L.append(str(sc.get("status")))
        lat = sc.get("launch_latency")
        if lat:
            L.append("")
            L.append(f"Parallel-launch check: median kernel time of an epoch over "
                     f"{lat['positives']} positives: " + ", ".join(
                         f"{t} thread(s) {1e3 * v:.3f} ms"
                         for t, v in lat["median_kernel_seconds"].items())
                     + ". On an idle machine both are well under 1 ms; milliseconds with "
                     "several threads mean the worker threads waited for a core (a busy "
                     "machine), which distorts every short multi-threaded epoch here.")
        ctx = sc.get("ml100k_context")
        if ctx:
            L.append("")
            L.append("Context on ML-100K (1,416 items: every thread updates the same popular "
                     f"item rows), {ctx['warprec'].get('epochs')} epochs per run, "
                     f"{ctx['warprec'].get('repeats')} alternating repeats, ratio of median "
                     "throughputs 1 -> 2 threads: " + ", ".join(
                         f"{lib} {_f(v.get('ratio_median'), 3)}"
                         + (f" ({v['status']})" if "status" in v else "")
                         for lib, v in ctx.items()) + " (warprec: kernel time; LightFM: fit time).")
        L.append("")
    ev = results.get("evaluate")
    if ev:
        L += ["## Evaluation speed", ""]
        if "best_seconds" in ev:
            L.append(f"{ev['n_users']:,} users x {ev['n_items']:,} items, d={ev['d']}, "
                     f"{ev['n_train']:,} train / {ev['n_test']:,} test positives, k=10, "
                     f"{ev['threads']} threads, random factors; best of {ev['repeats']} "
                     "alternating runs.")
            L += ["", "| implementation | seconds (best) | users/s | peak RSS increase MB | "
                  "NDCG@10 reported |", "|---|---|---|---|---|"]
            for name, runs in ev["runs"].items():
                if not runs:
                    continue
                best = min(runs, key=lambda x: x["seconds"])
                ndcg = best["metrics"].get("ndcg@10", best["metrics"].get("ndcg"))
                L.append(f"| {name} | {best['seconds']:.3f} | {_f(ev['n_users'] / best['seconds'])} | "
                         f"{_f(best['rss_increase_mb'], 0)} | {_f(ndcg, 4)} |")
            if ev.get("matmul_only_seconds"):
                L.append("")
                L.append(f"For scale: the blocked matmul `U @ V.T + b` alone (numpy, BLAS on "
                         f"{ev['threads']} threads, 2048 users per block) takes "
                         f"{ev['matmul_only_seconds']:.3f} s.")
            if ev.get("speedup_vs_implicit"):
                L.append("")
                L.append(f"warprec.metrics.evaluate_factors ('warprec' row) takes "
                         f"{1 / ev['speedup_vs_implicit']:.2f}x the time of implicit's best "
                         f"setting ({ev['implicit_best_setting']}), a speed-up of "
                         f"{ev['speedup_vs_implicit']:.2f}x. Metrics: {ev['warprec_metrics']}; "
                         f"implicit: {ev['implicit_metrics']}.")
        else:
            L.append(str(ev.get("status")))
        L.append("")
    rc = results.get("recommend")
    if rc:
        L += ["## recommend speed", ""]
        if "warprec_users_per_second" in rc:
            L.append(f"`WARPFactorizer.recommend` for all {rc['n_users']:,} users, k={rc['k']}, "
                     f"{rc['n_items']:,} items, d={rc['d']}, train items excluded, "
                     f"{rc['threads']} threads: **{_f(rc['warprec_users_per_second'])} users/s**, "
                     f"peak RSS increase {_f(rc['warprec_peak_rss_increase_mb'], 0)} MB. "
                     f"implicit's recommend on the same factors: "
                     f"{_f(rc['implicit_users_per_second'])} users/s ({rc['implicit_note']}); "
                     f"share of identical top-k entries: {_f(rc['top_k_agreement_with_implicit'], 4)}.")
        else:
            L.append(str(rc.get("status")))
        L.append("")
    co = results.get("compile")
    if co:
        L += ["## Compile time", ""]
        if "compile_seconds_total" in co:
            f, c = co["fresh_process_empty_cache"], co["fresh_process_warm_cache"]
            L.append("Fresh Python processes; first call minus second call of the same "
                     "function in that process. Process 1 has an empty NUMBA_CACHE_DIR "
                     "(compiles), process 2 reuses it (loads from the cache).")
            L += ["", "| call | compile (empty cache) s | cached first call s |", "|---|---|---|"]
            for call in ("fit", "evaluate", "recommend"):
                L.append(f"| {call} | {co['compile_seconds'][call]:.2f} | "
                         f"{co['cache_load_seconds'][call]:.3f} |")
            L.append(f"| total | {co['compile_seconds_total']:.2f} | "
                     f"{co['cache_load_seconds_total']:.3f} |")
            L.append("")
            if not co.get("sources_stable", True):
                L.append("**warprec's sources changed during the measurement (edited while it "
                         "ran): the cached figures are not valid.**")
                L.append("")
            L.append("First calls as measured (including the tiny fit/evaluate/recommend "
                     f"themselves): {co['compile_first_calls_total']:.2f} s with the empty "
                     f"cache, {co['cache_load_first_calls_total']:.3f} s with the warm one.  ")
            L.append(f"import warprec: {f['import_warprec_seconds']:.2f} s (empty cache), "
                     f"{c['import_warprec_seconds']:.2f} s (warm cache); "
                     f"{co['cache_files']} files in the cache directory.")
        else:
            L.append(str(co.get("status")))
        L.append("")
    for note in results.get("notes", []):
        L.append(f"- {note}")
    Path(path).write_text("\n".join(L) + "\n")


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    sections = [k for k in ("ml100k", "synthetic") if (results.get(k) or {}).get("runs")]
    n = max(len(sections), 1)
    fig, axes = plt.subplots(n, 2, figsize=(12, 4.2 * n), squeeze=False)
    styles = {"warprec": "-", "lightfm": "--", "implicit": ":"}
    for row, key in enumerate(sections):
        sec = results[key]
        seen = set()
        for run in sec["runs"]:
            if run.get("status") != "ok" or run["config"] in seen or not run["curve"]:
                continue
            seen.add(run["config"])        # first repeat (seed 0) of each config
            t = [p["seconds"] for p in run["curve"]]
            for col, metric in enumerate(("ndcg@10", "recall@20")):
                axes[row, col].plot(t, [p[metric] for p in run["curve"]], marker="o",
                                    markersize=3, linestyle=styles.get(run["library"], "-"),
                                    label=run["config"])
        for col, metric in enumerate(("NDCG@10", "Recall@20")):
            ax = axes[row, col]
            ax.set_xscale("log")
            ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.set_xlabel("training wall time, s (log scale; evaluation excluded)")
            ax.set_ylabel(metric)
            ax.set_title(f"{key}: {metric} vs training time")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
    if not sections:
        axes[0, 0].text(0.5, 0.5, "no training section was run", ha="center")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
