"""The refined mutual-information preset on the estimator benchmark.

Runs the `refined` row of `estimator_bench/estimators.py`
(`knn_refined_mutual_information` with a 90 % interval) on every MI
problem of `estimator_bench/problems.py`, at n = 50, 150, 1,000 and at
10,000 where the classical baselines are cached, for seeds 0-1
(development) and 2-4 (held out), into the benchmark's cache
(`results/estimator_benchmark/<problem>/n<n>.json`; a re-run computes
only what is missing), then summarizes:

- development seeds: the cells where the preset beats the best classical
  estimator (k = 1, k = 3, the best k chosen on those very seeds, the
  plug-in): what decides whether it is the default;
- held-out seeds (the reported table): the same counts, the cells more
  than 1.5 times worse than the best classical, the coverage of the 90 %
  intervals and the seconds per pair.

    KERAS_BACKEND=torch nice -n 10 python benchmarks/refined_mi_benchmark.py
    KERAS_BACKEND=torch python benchmarks/refined_mi_benchmark.py --report
    python benchmarks/refined_mi_benchmark.py --summary-only --report

Without `--report` only the development seeds are run and summarized
(printed, and `refined_mi_dev.json`): what design choices read. With it
the held-out seeds too, into the summary files and the card's table.
`--model DIR` measures a preset folder (a candidate) instead of the
installed preset; with `--results DIR` (a copy of the cache) the
installed preset's records stay untouched.
    KERAS_BACKEND=jax python benchmarks/refined_mi_benchmark.py --speed

`--speed` times one pair at n = 1e3, 1e4, 1e5 (`--speed-sizes`; d_x =
d_y = 1, 5, 25) after a first call, on the current backend (minimum of
5 calls, 1 at 1e5; wall-clock and CPU time of the process), into
`refined_mi_speed_<backend>.json`. `--threads` times n = 1,000 with the
KSG estimates on one thread and on two (`refined_mi_threads_<backend>.
json`).
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
CLASSICAL = ("ksg_k1", "ksg_k3", "ksg_k_best", "gaussian_plugin")


def _warm_up():
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for d in (1, 4):
            est._refined_mutual_information(
                rng.normal(size=(100, d)), rng.normal(size=(100, d))
            )


def drop_records(root, seeds):
    """Deletes the cached `refined` records of `seeds` (after the preset
    changed); those of other seeds (`estimator_fresh_seeds.py`) stay."""
    import fcntl
    import tempfile

    locks = pathlib.Path(tempfile.gettempdir()) / "estimator_benchmark_locks"
    locks.mkdir(exist_ok=True)
    for path in sorted(pathlib.Path(root).glob("mi_*/n*.json")):
        lock_name = f"{path.parent.name}_{path.stem}.lock"
        with open(locks / lock_name, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            with open(path, encoding="utf-8") as f:
                cell = json.load(f)
            for seed in seeds:
                cell["seeds"].get(str(seed), {}).pop(NAME, None)
            temporary = path.with_suffix(".tmp")
            with open(temporary, "w", encoding="utf-8") as f:
                json.dump(cell, f, indent=1, sort_keys=True)
            os.replace(temporary, path)


def run(root, sizes, seeds, log=print):
    _warm_up()
    done = 0
    for n in sizes:
        for problem in problem_sets.mi_problems():
            path = runner.cell_path(root, problem, n)
            if n >= 10000 and not path.exists():
                continue  # no classical baselines cached at this size
            cell = runner.load_cell(root, problem, n)
            for seed in seeds:
                records = cell["seeds"].setdefault(str(seed), {})
                if NAME in records:
                    continue
                x, y = problem.sample(n, seed)
                records[NAME] = est._refined_mutual_information(x, y)
                runner.save_cell(root, problem, n, cell)
                done += 1
                r = records[NAME]
                log(
                    f"{problem.name} n={n} seed={seed}: "
                    + (
                        r["error"][:80]
                        if "error" in r
                        else f"{r['value']:.3f} [{r['low']:.3f}, "
                        f"{r['high']:.3f}] truth {problem.truth:.3f} "
                        f"({r['seconds']:.3f} s)"
                    )
                )
    return done


def run_mst_dev(root, sizes, log=print):
    """The Multi-Set Transformer default of before ("ours") on the
    development seeds, for the choice of the default."""
    done = 0
    for n in sizes:
        for problem in problem_sets.mi_problems():
            cell = runner.load_cell(root, problem, n)
            for seed in runner.DEV_SEEDS:
                records = cell["seeds"].setdefault(str(seed), {})
                if "ours" in records:
                    continue
                if not done:
                    est.warm_up("mi")
                x, y = problem.sample(n, seed)
                records["ours"] = est.estimators_for("mi", seed)["ours"][1](
                    x, y
                )
                runner.save_cell(root, problem, n, cell)
                done += 1
                log(f"mst {problem.name} n={n} seed={seed}")
    return done


def _mst_dev(cell):
    """The MST's error on the development seeds, or None."""
    errors = []
    for seed in runner.DEV_SEEDS:
        record = cell["seeds"].get(str(seed), {}).get("ours")
        if record is None or "error" in record:
            return None
        errors.append(abs(record["value"] - cell["truth"]))
    return float(np.mean(errors))


def _shipped(cell, seed, record):
    """What the default (`out_of_distribution="fallback"`) returns."""
    if record.get("flagged"):
        return cell["seeds"][str(seed)]["ksg_k3"]["value"], None
    return record["value"], (record["low"], record["high"])


def _errors(cell, seeds):
    """Our errors, interval hits and the classical errors over `seeds`."""
    ours, hits, flagged, seconds = [], [], 0, []
    for seed in seeds:
        record = cell["seeds"].get(str(seed), {}).get(NAME)
        if record is None or "error" in record:
            return None
        value, interval = _shipped(cell, seed, record)
        ours.append(abs(value - cell["truth"]))
        flagged += bool(record.get("flagged"))
        seconds.append(record["seconds"])
        if interval is not None:
            hits.append(interval[0] <= cell["truth"] <= interval[1])
    return {
        "mae": float(np.mean(ours)),
        "hits": hits,
        "flagged": flagged,
        "seconds": float(np.mean(seconds)),
    }


def summarize_cell(cell, splits=("held_out", "dev")):
    """The cell's errors per split of `splits` (None where a split's
    records are missing)."""
    held = runner.summarize_cell(cell)
    dev = runner.summarize_cell(
        cell, held=runner.DEV_SEEDS, dev=runner.DEV_SEEDS
    )
    row = {
        key: dev[key] for key in ("problem", "family", "dim_x", "dim_y", "n")
    }
    row["truth"] = cell["truth"]
    row["best_k"] = dev.get("best_k")
    for split, summary, seeds in (
        ("held_out", held, runner.HELD_OUT_SEEDS),
        ("dev", dev, runner.DEV_SEEDS),
    ):
        if split not in splits:
            continue
        classical = {
            k: summary["errors"][k] for k in CLASSICAL if k in summary["errors"]
        }
        ours = _errors(cell, seeds)
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
            "ksg_k3_seconds": summary["seconds"].get("ksg_k3"),
            "mst": summary["errors"].get("ours"),
        }
    row["dev"]["mst"] = _mst_dev(cell)
    return row


def summarize(root, sizes, splits=("held_out", "dev")):
    rows = []
    for n in sizes:
        for problem in problem_sets.mi_problems():
            path = runner.cell_path(root, problem, n)
            if path.exists():
                cell = runner.load_cell(root, problem, n)
                row = summarize_cell(cell, splits)
                if row is not None:
                    rows.append(row)
    totals = {}
    for split in splits:
        for n in sizes + ("all",):
            part = [r for r in rows if n == "all" or r["n"] == n]
            if not part:
                continue
            hits = [h for r in part for h in r[split]["interval_hits"]]
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
            }
            both = [r for r in part if r[split]["mst"] is not None]
            totals[f"{split}_n{n}"]["mst_cells"] = len(both)
            totals[f"{split}_n{n}"]["ours_below_mst"] = sum(
                r[split]["ours"] < r[split]["mst"] for r in both
            )
            if both:
                totals[f"{split}_n{n}"]["mst_vs_ours"] = [
                    float(np.mean([r[split]["mst"] for r in both])),
                    float(np.mean([r[split]["ours"] for r in both])),
                ]
    return rows, totals


def _fmt(value, digits=3):
    return "-" if value is None else f"{value:.{digits}f}"


def totals_table(totals, split="held_out"):
    lines = [
        "| n | cells | ours < best classical | ours > 1.5x best | mean error "
        "ours / best classical | 90 % interval coverage | seconds per pair "
        "| mean error MST / ours |",
        "|---|---:|---:|---:|---|---:|---:|---|",
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
            + (
                f"{t['mst_vs_ours'][0]:.3f} / {t['mst_vs_ours'][1]:.3f}; "
                f"ours better in {t['ours_below_mst']} of {t['mst_cells']}"
                if t.get("mst_vs_ours")
                else "-"
            )
            + " |"
        )
    return lines


def cells_table(rows, split="held_out"):
    lines = [
        "| problem | d_x x d_y | n | truth | ours | k=1 | k=3 | best k | "
        "plug-in | ratio | interval hits | MST |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        s = r[split]
        c = s["classical"]
        lines.append(
            f"| {r['problem']} | {r['dim_x']}x{r['dim_y']} | {r['n']} | "
            f"{r['truth']:.3f} | {_fmt(s['ours'])} | "
            f"{_fmt(c.get('ksg_k1'))} | {_fmt(c.get('ksg_k3'))} | "
            f"{_fmt(c.get('ksg_k_best'))} | {_fmt(c.get('gaussian_plugin'))} | "
            f"{s['ratio']:.2f} | {sum(s['interval_hits'])}/"
            f"{len(s['interval_hits'])} | {_fmt(s['mst'])} |"
        )
    return lines


def write_dev_summary(root, sizes):
    """The development seeds only (what the design choices read)."""
    rows, totals = summarize(root, sizes, splits=("dev",))
    with open(root / "refined_mi_dev.json", "w", encoding="utf-8") as f:
        json.dump({"rows": rows, "totals": totals}, f, indent=1)
    worse = [
        f"- {r['problem']} at n = {r['n']}: {r['dev']['ratio']:.2f}x "
        f"({r['dev']['ours']:.3f} against {r['dev']['best']} "
        f"{r['dev']['classical'][r['dev']['best']]:.3f})"
        for r in rows
        if r["dev"]["ratio"] > 1.5
    ]
    text = [
        "Development seeds 0-1:",
        "",
        *totals_table(totals, "dev"),
        "",
        "Cells more than 1.5x worse than the best classical estimator:",
        *(worse or ["- none"]),
    ]
    print("\n".join(text))


def write_summary(root, sizes):
    rows, totals = summarize(root, sizes)
    with open(root / "refined_mi_summary.json", "w", encoding="utf-8") as f:
        json.dump({"rows": rows, "totals": totals}, f, indent=1)
    worse = []
    for r in rows:
        h = r["held_out"]
        if h["ratio"] > 1.5:
            worse.append(
                f"- {r['problem']} at n = {r['n']}: {h['ratio']:.2f}x "
                f"({h['ours']:.3f} against {h['best']} "
                f"{h['classical'][h['best']]:.3f})"
            )
    command = "python benchmarks/refined_mi_benchmark.py --report"
    text = [
        "Held-out seeds 2-4 (mean absolute error per cell; best classical "
        "= the best of KSG k = 1, k = 3, the best k chosen on seeds 0-1, "
        "and the Gaussian plug-in; re-measure with "
        f"`KERAS_BACKEND=torch {command}`):",
        "",
        *totals_table(totals),
        "",
        "Cells more than 1.5x worse than the best classical estimator:",
        "",
        *(worse or ["- none"]),
    ]
    card = "\n".join(text) + "\n"
    (root / "refined_mi_card.md").write_text(card, encoding="utf-8")
    full = [
        "# knn_refined_mutual_information on the estimator benchmark",
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
    (root / "refined_mi_summary.md").write_text("\n".join(full), "utf-8")
    print("\n".join(full))


def speed(root, repeats=5, sizes=(1000, 10000, 100000), output=None):
    import keras

    from keras_msets import estimators

    rng = np.random.default_rng(0)
    out = {"backend": keras.backend.backend(), "load": os.getloadavg()}
    estimators.mutual_information(
        rng.normal(size=(100, 2)), rng.normal(size=(100, 2)), interval=0.9
    )
    rows = []
    for d in (1, 5, 25):
        for n in sizes:
            x = rng.normal(size=(n, d))
            y = x + rng.normal(size=(n, d))
            times, cpu = [], []
            for _ in range(repeats if n < 100000 else 1):
                start, start_cpu = time.perf_counter(), time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    estimators.mutual_information(x, y, interval=0.9)
                times.append(time.perf_counter() - start)
                cpu.append(time.process_time() - start_cpu)
            rows.append(
                {
                    "d": d,
                    "n": n,
                    "seconds": float(np.min(times)),
                    "cpu_seconds": float(np.min(cpu)),
                }
            )
            print(rows[-1], flush=True)
    out["rows"] = rows
    out["load_after"] = os.getloadavg()
    path = output or root / f"refined_mi_speed_{out['backend']}.json"
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)


def threads(root, repeats=7, output=None):
    """One pair `y = x + noise` at n = 1,000, d_x = d_y = 1, 5, 25: the
    call with the KSG estimates on one thread and on two
    (`mi_statistics.PARALLEL_POINTS`), alternating, the best of `repeats`
    calls each (the ratio survives a loaded machine better than the
    times), into `refined_mi_threads_<backend>.json`."""
    import keras

    from keras_msets import estimators
    from keras_msets.stats import mi_statistics

    rng = np.random.default_rng(0)
    parallel = mi_statistics.PARALLEL_POINTS
    out = {"backend": keras.backend.backend(), "load": os.getloadavg()}
    estimators.mutual_information(
        rng.normal(size=(100, 2)), rng.normal(size=(100, 2)), interval=0.9
    )
    rows = []
    for d in (1, 5, 25):
        x = rng.normal(size=(1000, d))
        y = x + rng.normal(size=(1000, d))
        times = {1: [], 2: []}
        answers = {}
        for _ in range(repeats):
            for workers, points in ((1, 10**9), (2, parallel)):
                mi_statistics.PARALLEL_POINTS = points
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    answer = estimators.mutual_information(x, y, interval=0.9)
                times[workers].append(time.perf_counter() - start)
                answers[workers] = np.asarray(answer, dtype=float).tolist()
        mi_statistics.PARALLEL_POINTS = parallel
        row = {"d": d, "n": 1000}
        row.update({f"seconds_{k}_threads": min(v) for k, v in times.items()})
        row["same_answer"] = answers[1] == answers[2]
        rows.append(row)
        print(row, flush=True)
    out["rows"] = rows
    out["load_after"] = os.getloadavg()
    path = output or root / f"refined_mi_threads_{out['backend']}.json"
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=None,
        help="default: the development seeds 0-1, and 2-4 with --report",
    )
    parser.add_argument(
        "--report",
        action="store_true",
        help="also run and summarize the held-out seeds (the reported "
        "table, the card's); without it only the development seeds",
    )
    parser.add_argument(
        "--model",
        default=None,
        help="a preset folder to measure instead of the installed preset",
    )
    parser.add_argument("--summary-only", action="store_true")
    parser.add_argument(
        "--mst-dev-sizes",
        type=int,
        nargs="*",
        default=[],
        help="also run the MST presets on the development seeds here",
    )
    parser.add_argument(
        "--recompute",
        action="store_true",
        help="delete the cached refined records of the seeds run first "
        "(a new preset)",
    )
    parser.add_argument("--speed", action="store_true")
    parser.add_argument(
        "--speed-sizes",
        type=int,
        nargs="+",
        default=[1000, 10000, 100000],
        help="the n of the --speed table",
    )
    parser.add_argument(
        "--speed-output",
        type=pathlib.Path,
        default=None,
        help="--speed writes here (default: refined_mi_speed_<backend>.json)",
    )
    parser.add_argument(
        "--threads",
        action="store_true",
        help="n = 1,000 on one thread and on two (refined_mi_threads_*.json)",
    )
    parser.add_argument("--results", type=pathlib.Path, default=ROOT)
    args = parser.parse_args(argv)
    if args.threads:
        threads(args.results, output=args.speed_output)
        return
    if args.speed:
        speed(args.results, sizes=args.speed_sizes, output=args.speed_output)
        return
    if args.model is not None:
        est.REFINED_MI = args.model
    seeds = args.seeds
    if seeds is None:
        seeds = runner.DEV_SEEDS
        if args.report:
            seeds = seeds + runner.HELD_OUT_SEEDS
    if not args.report and set(seeds) & set(runner.HELD_OUT_SEEDS):
        parser.error("the held-out seeds 2-4 are run only with --report")
    if args.recompute:
        drop_records(args.results, seeds)
    if not args.summary_only:
        run(args.results, args.sizes, seeds)
        run_mst_dev(args.results, args.mst_dev_sizes)
    if args.report:
        write_summary(args.results, tuple(args.sizes))
    else:
        write_dev_summary(args.results, tuple(args.sizes))


if __name__ == "__main__":
    main()
