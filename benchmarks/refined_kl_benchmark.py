"""The refined KL-divergence preset on the estimator benchmark.

Runs the `refined` row of `estimator_bench/estimators.py`
(`knn_refined_kl_divergence` with a 90 % interval) on every KL problem
of `estimator_bench/problems.py`, at n = 50, 150, 1,000 and at 10,000
where the classical baselines are cached, for seeds 0-1 (development)
and with `--report` 2-4 (held out), into the benchmark's cache
(`results/estimator_benchmark/<problem>/n<n>.json`; a re-run computes
only what is missing), then summarizes:

- development seeds: the cells where the preset beats the best classical
  estimator (k-NN KL with k = 1, k = 3, the best k chosen on those very
  seeds, the Gaussian plug-in), and the old default (the Multi-Set
  Transformers, `--mst-dev` runs them on the development seeds at n =
  50, 150, 1,000): what decides whether it is the default;
- held-out seeds (the reported table, only with `--report`): the same
  counts, the cells more than 1.5 times worse than the best classical,
  the coverage of the 90 % intervals and the seconds per pair; the
  summary files and the card's table are written only then.

    KERAS_BACKEND=torch nice -n 10 python benchmarks/refined_kl_benchmark.py
    KERAS_BACKEND=torch python benchmarks/refined_kl_benchmark.py --report
    python benchmarks/refined_kl_benchmark.py --summary-only --report

`--rerun` recomputes the preset's records (after the preset changed).
    KERAS_BACKEND=jax python benchmarks/refined_kl_benchmark.py --speed

`--speed` times one pair at n = 1e3, 1e4, 1e5 (d = 1, 5, 16) after a
first call, on the current backend (wall and CPU seconds), into
`refined_kl_speed_<backend>.json`.
`--profile` times the steps of one call at n = 1,000 (d = 1, 5, 16)
into `refined_kl_profile_<backend>.json`. `--threads` compares one and
two threads for the k-NN queries at n = 1,000 (d = 5, 16) into
`refined_kl_threads.json`; `--brute` the k-d
trees and the distance matrix (`nearest_neighbours.nearest_distances`) at n =
1,000 and 2,000 (d = 5-25) into `refined_kl_brute.json`.
"""

import argparse
import json
import os
import pathlib
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from estimator_bench import estimators as est  # noqa: E402
from estimator_bench import problems as problem_sets  # noqa: E402
from estimator_bench import runner  # noqa: E402

ROOT = pathlib.Path(__file__).parent / "results" / "estimator_benchmark"
SIZES = (50, 150, 1000, 10000)
NAME = "refined"
CLASSICAL = ("knn_k1", "knn_k3", "knn_k_best", "gaussian_plugin")
FALLBACK = "knn_k1"  # what out_of_distribution="fallback" answers with


def _cells(root, sizes):
    for n in sizes:
        for problem in problem_sets.kl_problems():
            path = runner.cell_path(root, problem, n)
            if n >= 10000 and not path.exists():
                continue  # no classical baselines cached at this size
            yield problem, n


def run(root, sizes, seeds, name=NAME, log=print, rerun=False):
    function = {
        NAME: est._refined_kl_divergence,
        "ours": lambda x, y: est._pretrained(est._mst_kl_divergence, x, y),
    }[name]
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        function(rng.normal(size=(100, 2)), rng.normal(size=(100, 2)))
    for problem, n in _cells(root, sizes):
        cell = runner.load_cell(root, problem, n)
        for seed in seeds:
            records = cell["seeds"].setdefault(str(seed), {})
            if name in records and not rerun:
                continue
            x, y = problem.sample(n, seed)
            records[name] = function(x, y)
            runner.save_cell(root, problem, n, cell)
            r = records[name]
            log(
                f"{name} {problem.name} n={n} seed={seed}: "
                + (
                    r["error"][:80]
                    if "error" in r
                    else f"{r['value']:.3f} truth {problem.truth:.3f} "
                    f"({r['seconds']:.3f} s)"
                )
            )


def _ours(cell, seeds):
    """Errors of the shipped answers, interval hits, flagged pairs."""
    errors, hits, flagged, seconds = [], [], 0, []
    for seed in seeds:
        record = cell["seeds"].get(str(seed), {}).get(NAME)
        if record is None or "error" in record:
            return None
        value, interval = record["value"], (record["low"], record["high"])
        if record.get("flagged"):
            value = cell["seeds"][str(seed)][FALLBACK]["value"]
            interval = None
            flagged += 1
        errors.append(abs(value - cell["truth"]))
        seconds.append(record["seconds"])
        if interval is not None:
            hits.append(bool(interval[0] <= cell["truth"] <= interval[1]))
    return {
        "mae": float(np.mean(errors)),
        "hits": hits,
        "flagged": flagged,
        "seconds": float(np.mean(seconds)),
    }


def _mst(cell, seeds):
    """The old default's mean error over `seeds`, or None."""
    errors = []
    for seed in seeds:
        record = cell["seeds"].get(str(seed), {}).get("ours")
        if record is None or "error" in record:
            return None
        errors.append(abs(record["value"] - cell["truth"]))
    return float(np.mean(errors))


def summarize_cell(cell):
    held = runner.summarize_cell(cell)
    dev = runner.summarize_cell(
        cell, held=runner.DEV_SEEDS, dev=runner.DEV_SEEDS
    )
    row = {key: held[key] for key in ("problem", "family", "dim_x", "n")}
    row["truth"] = cell["truth"]
    row["best_k"] = held.get("best_k")
    for split, summary, seeds in (
        ("held_out", held, runner.HELD_OUT_SEEDS),
        ("dev", dev, runner.DEV_SEEDS),
    ):
        classical = {
            k: summary["errors"][k] for k in CLASSICAL if k in summary["errors"]
        }
        ours = _ours(cell, seeds)
        if ours is None or not classical:
            return None
        best = min(classical, key=classical.get)
        row[split] = {
            "ours": ours["mae"],
            "classical": classical,
            "best": best,
            "ratio": ours["mae"] / max(classical[best], 1e-12),
            "interval_hits": ours["hits"],
            "flagged": ours["flagged"],
            "seconds": ours["seconds"],
            "knn_k1_seconds": summary["seconds"].get("knn_k1"),
            "mst": _mst(cell, seeds),
        }
    return row


def summarize(root, sizes):
    rows = [
        row
        for problem, n in _cells(root, sizes)
        if runner.cell_path(root, problem, n).exists()
        and (row := summarize_cell(runner.load_cell(root, problem, n)))
    ]
    totals = {}
    for split in ("dev", "held_out"):
        for n in (*sizes, "all"):
            part = [r for r in rows if n == "all" or r["n"] == n]
            if not part:
                continue
            hits = [h for r in part for h in r[split]["interval_hits"]]
            with_mst = [r for r in part if r[split]["mst"] is not None]
            totals[f"{split}_n{n}"] = {
                "cells": len(part),
                "wins": sum(r[split]["ratio"] < 1 for r in part),
                "over_1_5": sum(r[split]["ratio"] > 1.5 for r in part),
                "mean_ours": float(np.mean([r[split]["ours"] for r in part])),
                "mean_best": float(
                    np.mean(
                        [r[split]["classical"][r[split]["best"]] for r in part]
                    )
                ),
                "coverage": float(np.mean(hits)) if hits else None,
                "intervals": len(hits),
                "flagged": sum(r[split]["flagged"] for r in part),
                "seconds": float(np.mean([r[split]["seconds"] for r in part])),
                "mst_cells": len(with_mst),
                "ours_beats_mst": sum(
                    r[split]["ours"] < r[split]["mst"] for r in with_mst
                ),
            }
    return rows, totals


def _fmt(value, digits=3):
    return "-" if value is None else f"{value:.{digits}f}"


def totals_table(totals, split="held_out"):
    lines = [
        "| n | cells | ours < best classical | ours > 1.5x best | mean error "
        "ours / best classical | 90 % interval coverage (intervals) | "
        "seconds per pair | ours < MST (cells) |",
        "|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for key, t in totals.items():
        if not key.startswith(split + "_n"):
            continue
        n = key.removeprefix(split + "_n")
        lines.append(
            f"| {n} | {t['cells']} | {t['wins']} ({t['wins'] / t['cells']:.0%})"
            f" | {t['over_1_5']} | {_fmt(t['mean_ours'])} / "
            f"{_fmt(t['mean_best'])} | {_fmt(t['coverage'], 2)} "
            f"({t['intervals']}) | {_fmt(t['seconds'], 4)} | "
            f"{t['ours_beats_mst']} ({t['mst_cells']}) |"
        )
    return lines


def cells_table(rows, split="held_out"):
    lines = [
        "| problem | d | n | truth | ours | k=1 | k=3 | best k | plug-in | "
        "ratio | interval hits | MST |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        s = r[split]
        c = s["classical"]
        lines.append(
            f"| {r['problem']} | {r['dim_x']} | {r['n']} | "
            f"{r['truth']:.3f} | {_fmt(s['ours'])} | "
            f"{_fmt(c.get('knn_k1'))} | {_fmt(c.get('knn_k3'))} | "
            f"{_fmt(c.get('knn_k_best'))} ({r['best_k']}) | "
            f"{_fmt(c.get('gaussian_plugin'))} | {s['ratio']:.2f} | "
            f"{sum(s['interval_hits'])}/{len(s['interval_hits'])} | "
            f"{_fmt(s['mst'])} |"
        )
    return lines


def write_summary(root, sizes, report=False):
    """Prints the development table; with `report`, also the held-out
    one, and writes the summary files and the card's table."""
    rows, totals = summarize(root, sizes)
    if not report:
        print("\n".join(totals_table(totals, "dev")))
        return
    with open(root / "refined_kl_summary.json", "w", encoding="utf-8") as f:
        json.dump({"rows": rows, "totals": totals}, f, indent=1)
    worse = [
        f"- {r['problem']} at n = {r['n']}: {r['held_out']['ratio']:.2f}x "
        f"({r['held_out']['ours']:.3f} against {r['held_out']['best']} "
        f"{r['held_out']['classical'][r['held_out']['best']]:.3f})"
        for r in rows
        if r["held_out"]["ratio"] > 1.5
    ]
    command = "python benchmarks/refined_kl_benchmark.py --report"
    text = [
        "Held-out seeds 2-4 (mean absolute error per cell, in nats; best "
        "classical = the best of k-NN KL with k = 1, k = 3, the best k "
        "chosen on seeds 0-1, and the Gaussian plug-in, per cell; MST = "
        "the Multi-Set Transformer presets, d <= 16, n <= 1,000; "
        f"re-measure with `KERAS_BACKEND=torch {command}`):",
        "",
        *totals_table(totals),
        "",
        "Cells more than 1.5x worse than the best classical estimator:",
        "",
        *(worse or ["- none"]),
    ]
    card = "\n".join(text) + "\n"
    (root / "refined_kl_card.md").write_text(card, encoding="utf-8")
    full = [
        "# knn_refined_kl_divergence on the estimator benchmark",
        "",
        f"Command: `KERAS_BACKEND=torch {command}`.",
        "",
        "## Development seeds 0-1 (the choice of the default)",
        "",
        *totals_table(totals, "dev"),
        "",
        "## Held-out seeds 2-4",
        "",
        card,
        "## Every held-out cell",
        "",
        *cells_table(rows),
        "",
    ]
    (root / "refined_kl_summary.md").write_text("\n".join(full), "utf-8")
    print("\n".join(full))


def speed(root, repeats=3, output=None):
    """One pair per (d, n) after a first call: the best of `repeats`
    calls (10 at n = 1,000, 1 at n = 100,000), wall seconds and the
    process's CPU seconds of that call (both threads)."""
    import keras

    from keras_msets import estimators

    rng = np.random.default_rng(0)
    out = {"backend": keras.backend.backend(), "load": os.getloadavg()}
    estimators.kl_divergence(
        rng.normal(size=(100, 2)),
        rng.normal(size=(100, 2)),
        model=est.REFINED_KL,
        interval=0.9,
    )
    rows = []
    for d in (1, 5, 16):
        for n in (1000, 10000, 100000):
            x = rng.normal(size=(n, d))
            y = rng.normal(size=(n, d)) + 0.5
            calls = {1000: 10, 100000: 1}.get(n, repeats)
            times = []
            for _ in range(calls):
                start = time.perf_counter()
                cpu = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    estimators.kl_divergence(
                        x, y, model=est.REFINED_KL, interval=0.9
                    )
                times.append(
                    (time.perf_counter() - start, time.process_time() - cpu)
                )
            best = min(times)
            rows.append(
                {
                    "d": d,
                    "n": n,
                    "seconds": float(best[0]),
                    "cpu_seconds": float(best[1]),
                    "calls": calls,
                    "load": os.getloadavg(),
                }
            )
            print(rows[-1], flush=True)
    out["rows"] = rows
    out["load_after"] = os.getloadavg()
    path = output or root / f"refined_kl_speed_{out['backend']}.json"
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)


def threads(root, repeats=15):
    """One pair at n = 1,000 (d = 5, 16) with the k-NN queries on one
    thread and on two, alternating, the best of `repeats` calls each
    (the ratio survives a loaded machine better than the times)."""
    from keras_msets import estimators
    from keras_msets.stats import nearest_neighbours

    rng = np.random.default_rng(0)
    parallel = nearest_neighbours.PARALLEL_POINTS
    out = {"load": os.getloadavg(), "rows": []}
    for d in (5, 16):
        x = rng.normal(size=(1000, d))
        y = rng.normal(size=(1000, d)) + 0.5
        times = {1: [], 2: []}
        for _ in range(repeats):
            for workers, points in ((1, 10**9), (2, parallel)):
                nearest_neighbours.PARALLEL_POINTS = points
                start = time.perf_counter()
                estimators.kl_divergence(
                    x, y, model=est.REFINED_KL, interval=0.9
                )
                times[workers].append(time.perf_counter() - start)
        nearest_neighbours.PARALLEL_POINTS = parallel
        row = {"d": d, "n": 1000}
        row.update({f"seconds_{k}_threads": min(v) for k, v in times.items()})
        out["rows"].append(row)
        print(row, flush=True)
    out["load_after"] = os.getloadavg()
    with open(root / "refined_kl_threads.json", "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)


def brute(root, repeats=9):
    """One pair at n = 1,000 and 2,000 (d = 5, 6, 8, 12, 16, 25) with the
    k-NN queries by k-d trees (`nearest_neighbours.BRUTE_POINTS = 0`) and by
    the distance matrix (`BRUTE_MIN_DIM = 1`), alternating, the best of
    `repeats` calls each (wall and CPU seconds), into
    `refined_kl_brute.json`; `served` names the default's choice."""
    from keras_msets import estimators
    from keras_msets.stats import nearest_neighbours

    rng = np.random.default_rng(0)
    default = nearest_neighbours.BRUTE_POINTS
    lowest = nearest_neighbours.BRUTE_MIN_DIM
    out = {"load": os.getloadavg(), "rows": []}
    for d in (5, 6, 8, 12, 16, 25):
        for n in (1000, 2000):
            x = rng.normal(size=(n, d))
            y = rng.normal(size=(n, d)) + 0.5
            times = {"tree": [], "matrix": []}
            values = {}
            for _ in range(repeats):
                for path, points in (("tree", 0), ("matrix", default)):
                    nearest_neighbours.BRUTE_POINTS = points
                    nearest_neighbours.BRUTE_MIN_DIM = 1
                    start = time.perf_counter()
                    cpu = time.process_time()
                    values[path] = estimators.kl_divergence(
                        x, y, model=est.REFINED_KL, interval=0.9
                    )
                    times[path].append(
                        (
                            time.perf_counter() - start,
                            time.process_time() - cpu,
                        )
                    )
            nearest_neighbours.BRUTE_POINTS = default
            nearest_neighbours.BRUTE_MIN_DIM = lowest
            row = {"d": d, "n": n, "served": "matrix" if d > lowest else "tree"}
            for k, v in times.items():
                row[f"seconds_{k}"], row[f"cpu_seconds_{k}"] = min(v)
            row["same_estimate"] = bool(
                np.allclose(values["tree"], values["matrix"], rtol=1e-9)
            )
            out["rows"].append(row)
            print(row, flush=True)
    out["load_after"] = os.getloadavg()
    with open(root / "refined_kl_brute.json", "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)


def _profile_steps(x, y, model):
    """The steps of one call on `x`, `y`, as functions without
    arguments."""
    import keras

    from keras_msets import estimators
    from keras_msets.stats import kl_statistics as ks

    cx, cy = ks.copula_normal(x, y)
    sx, sy = ks.standardized(x, y)
    rx, ry = ks.gaussian_reference(cx, cy)
    features = ks.pair_statistics(x, y)[None].astype("float32")
    return {
        "copula_normal": lambda: ks.copula_normal(x, y),
        "standardized": lambda: ks.standardized(x, y),
        "knn_copula": lambda: ks.knn_kl_estimates(cx, cy),
        "gaussian_reference": lambda: ks.gaussian_reference(cx, cy),
        "knn_reference": lambda: ks.knn_kl_estimates(rx, ry),
        "plugins": lambda: (
            ks.shrunk_gaussian_kl(cx, cy),
            ks.corrected_gaussian_kl(cx, cy),
            ks.shrunk_gaussian_kl(sx, sy),
        ),
        "shape": lambda: ks._shape(np.concatenate([sx, sy])),
        "pair_statistics": lambda: ks.pair_statistics(x, y),
        "model_predict_on_batch": lambda: model.predict_on_batch(features),
        "model_call": lambda: keras.ops.convert_to_numpy(
            model(features, training=False)
        ),
        "whole_call": lambda: estimators.kl_divergence(
            x, y, model=est.REFINED_KL, interval=0.9
        ),
    }


def profile(root, repeats=20):
    """Where one call's time goes at n = 1,000 (d = 1, 5, 16): the best of
    `repeats` timings (wall and CPU ms) of each step of `kl_statistics`,
    of the model's forward pass (`predict_on_batch`, as the estimator
    calls it, and a direct call) and of the whole call, into
    `refined_kl_profile_<backend>.json`."""
    import keras

    from keras_msets.estimators.inputs import load_estimator

    rng = np.random.default_rng(0)
    out = {"backend": keras.backend.backend(), "load": os.getloadavg()}
    model = load_estimator(est.REFINED_KL)
    rows = []
    for d in (1, 5, 16):
        x = rng.normal(size=(1000, d))
        y = rng.normal(size=(1000, d)) + 0.5
        steps = _profile_steps(x, y, model)
        steps["whole_call"]()
        row = {"d": d, "n": 1000}
        for name, step in steps.items():
            times = []
            for _ in range(repeats):
                start, cpu = time.perf_counter(), time.process_time()
                step()
                times.append(
                    (time.perf_counter() - start, time.process_time() - cpu)
                )
            wall, cpu = min(times)
            row[name] = {"ms": 1e3 * wall, "cpu_ms": 1e3 * cpu}
        rows.append(row)
        print(row, flush=True)
    out["rows"] = rows
    out["load_after"] = os.getloadavg()
    path = root / f"refined_kl_profile_{out['backend']}.json"
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    parser.add_argument("--seeds", type=int, nargs="+", default=None)
    parser.add_argument(
        "--report",
        action="store_true",
        help="also run and summarize the held-out seeds (the reported "
        "table, measured once after the choice)",
    )
    parser.add_argument("--summary-only", action="store_true")
    parser.add_argument(
        "--rerun",
        action="store_true",
        help="recompute the preset's records (after retraining it)",
    )
    parser.add_argument("--speed", action="store_true")
    parser.add_argument(
        "--speed-output",
        type=pathlib.Path,
        default=None,
        help="--speed writes here (default: refined_kl_speed_<backend>.json)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="the steps of one call at n = 1,000 (d = 1, 5, 16)",
    )
    parser.add_argument(
        "--threads",
        action="store_true",
        help="one thread against two for the k-NN queries (n = 1,000)",
    )
    parser.add_argument(
        "--brute",
        action="store_true",
        help="k-d trees against the distance matrix for the k-NN queries",
    )
    parser.add_argument(
        "--mst-dev",
        action="store_true",
        help="also run the Multi-Set Transformers on the development seeds",
    )
    parser.add_argument("--results", type=pathlib.Path, default=ROOT)
    args = parser.parse_args(argv)
    if args.speed:
        speed(args.results, output=args.speed_output)
        return
    if args.profile:
        profile(args.results)
        return
    if args.threads:
        threads(args.results)
        return
    if args.brute:
        brute(args.results)
        return
    seeds = args.seeds or (
        runner.DEV_SEEDS + runner.HELD_OUT_SEEDS
        if args.report
        else runner.DEV_SEEDS
    )
    if not args.summary_only:
        run(args.results, args.sizes, seeds, rerun=args.rerun)
        if args.mst_dev:
            sizes = [n for n in args.sizes if n <= 1000]
            run(args.results, sizes, runner.DEV_SEEDS, name="ours")
    write_summary(args.results, tuple(args.sizes), args.report)


if __name__ == "__main__":
    main()
