"""The default estimators against the classical ones on fresh seeds.

The held-out table of the estimator benchmark (`estimator_benchmark.py`,
`refined_kl_benchmark.py`, `refined_mi_benchmark.py`) has three seeds
per (problem, n) cell (2-4), and its "best classical" error is the
smallest of four estimators' mean errors in each cell, picked on those
same three seeds: with so few seeds the pick favours whichever baseline
was lucky, and the seeds 2-4 have been read after every round of design
since. This script draws seeds no choice has read (`FRESH_SEEDS`, 5-24;
5-14 at n = 10,000, where one pair costs seconds) and runs on them, into
the benchmark's cache (`results/estimator_benchmark/<problem>/n<n>.json`;
a re-run computes only what is missing):

- KL and MI: the classical estimators of the tables, k = 1, k = 3, the
  best k (chosen per cell on the development seeds 0-1, as there) and
  the Gaussian plug-in, and the default preset (`refined`: the
  statistics presets with a 90 % interval, the shipped answer where
  the tail check defers to the classical estimator);
- two-sample: the MMD permutation test, the classifier test and the
  default preset (`statistics`).

The summary, per n: the cells where the preset's mean error is below the
best classical one's, those more than 1.5 times worse, the cells where
the preset is worse by more than two standard errors of the paired
per-seed differences, mean errors, coverage of the 90 % intervals; the
same totals from seeds 2-4 beside them. Files: `fresh_seeds.json`,
`fresh_seeds.md` in the results folder.

`--split development` runs and summarizes the same on seeds 30-49
(30-39 at n = 10,000) into `development_seeds.json` / `.md`: a second
development split, twenty seeds per cell where seeds 0-1 give two, for
design choices that the fresh seeds then report once.

    KERAS_BACKEND=torch nice -n 10 python benchmarks/estimator_fresh_seeds.py \\
        --tasks kl two_sample &
    KERAS_BACKEND=torch nice -n 10 python benchmarks/estimator_fresh_seeds.py \\
        --tasks mi
    python benchmarks/estimator_fresh_seeds.py --summary-only

`--rerun-preset` recomputes the preset's records (after it changed).
"""

import argparse
import json
import os
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import estimator_benchmark  # noqa: E402
import refined_kl_benchmark  # noqa: E402
from estimator_bench import estimators as est  # noqa: E402
from estimator_bench import problems as problem_sets  # noqa: E402
from estimator_bench import runner  # noqa: E402

ROOT = estimator_benchmark.ROOT
LARGE_N = 10000
# split: (seeds, seeds at n = LARGE_N)
SPLITS = {
    "fresh": (tuple(range(5, 25)), tuple(range(5, 15))),
    "development": (tuple(range(30, 50)), tuple(range(30, 40))),
}
FRESH_SEEDS, FRESH_SEEDS_LARGE_N = SPLITS["fresh"]
SIZES = (50, 150, 1000, LARGE_N)
TWO_SAMPLE_SIZES = (50, 150, 1000)
PRESET = {"kl": "refined", "mi": "refined", "two_sample": "statistics"}
PREFIX = {"kl": "knn", "mi": "ksg"}


def split_seeds(split, n):
    seeds, large = SPLITS[split]
    return large if n >= LARGE_N else seeds


def best_config(cell):
    """The "best k" configuration of the cell, chosen on the development
    seeds as the benchmark's summary chooses it (None if they lack it)."""
    return runner.summarize_cell(cell).get("best_k")


def needed(cell):
    """The estimators the fresh table compares, for this cell."""
    task = cell["task"]
    if task == "two_sample":
        return ("mmd", "c2st", PRESET[task])
    base = PREFIX[task]
    names = [f"{base}_k1", f"{base}_k3", "gaussian_plugin", PRESET[task]]
    best = best_config(cell)
    if best is not None:
        names.append(f"{base}_{best}")
    return tuple(dict.fromkeys(names))


def _cells(tasks, sizes, root):
    """(problem, n) in the order they run: every task at the smallest n
    first, so that a stopped run leaves whole sizes done."""
    for n in sizes:
        for problem in problem_sets.all_problems():
            if problem.task not in tasks:
                continue
            if problem.task == "two_sample" and n not in TWO_SAMPLE_SIZES:
                continue
            if not runner.cell_path(root, problem, n).exists():
                continue  # no development seeds: no best k, not benchmarked
            yield problem, n


def run(
    tasks,
    sizes,
    root,
    split="fresh",
    log=print,
    max_seconds=None,
    rerun_preset=False,
):
    start = time.time()
    warm = set()
    for problem, n in _cells(tasks, sizes, root):
        cell = runner.load_cell(root, problem, n)
        names = needed(cell)
        for seed in split_seeds(split, n):
            if max_seconds and time.time() - start > max_seconds:
                log(f"stopped after {max_seconds} s")
                return
            records = cell["seeds"].setdefault(str(seed), {})
            functions = est.estimators_for(problem.task, seed)
            todo = [
                name
                for name in names
                if name not in records
                or (rerun_preset and name == PRESET[problem.task])
            ]
            if not todo:
                continue
            if problem.task not in warm:
                est.warm_up(problem.task)
                warm.add(problem.task)
            sample = problem.sample(n, seed)
            for name in todo:
                function = functions[name][1]
                if problem.task == "two_sample":
                    records[name] = function(sample)
                else:
                    records[name] = function(*sample)
                log(
                    f"{problem.name} n={n} seed={seed} {name}: "
                    f"{runner._short(records[name])}"
                )
                runner.save_cell(root, problem, n, cell)


def _preset_errors(cell, seed):
    """The shipped answer's absolute error and interval hit for one seed."""
    task = cell["task"]
    record = cell["seeds"].get(str(seed), {}).get(PRESET[task])
    if record is None or "error" in record:
        return None
    value, interval = record["value"], (record["low"], record["high"])
    if record.get("flagged"):
        fallback = refined_kl_benchmark.FALLBACK if task == "kl" else "ksg_k3"
        value, interval = cell["seeds"][str(seed)][fallback]["value"], None
    hit = None
    if interval is not None:
        hit = bool(interval[0] <= cell["truth"] <= interval[1])
    return abs(value - cell["truth"]), hit, bool(record.get("flagged"))


def summarize_cell(cell, seeds):
    """One KL / MI cell over `seeds`, or None where a record is missing."""
    task = cell["task"]
    base = PREFIX[task]
    best = best_config(cell)
    classical = {
        f"{base}_k1": f"{base}_k1",
        f"{base}_k3": f"{base}_k3",
        f"{base}_k_best": f"{base}_{best}" if best else None,
        "gaussian_plugin": "gaussian_plugin",
    }
    per_seed = {}
    for label, name in classical.items():
        if name is None:
            continue
        errors = []
        for seed in seeds:
            record = cell["seeds"].get(str(seed), {}).get(name)
            if record is None:
                return None
            if "error" in record:
                errors.append(np.inf)
            else:
                errors.append(abs(record["value"] - cell["truth"]))
        per_seed[label] = np.array(errors)
    ours = [_preset_errors(cell, seed) for seed in seeds]
    if any(o is None for o in ours):
        return None
    ours_errors = np.array([o[0] for o in ours])
    means = {k: float(np.mean(v)) for k, v in per_seed.items()}
    means = {k: v for k, v in means.items() if np.isfinite(v)}
    winner = min(means, key=means.get)
    difference = ours_errors - per_seed[winner]
    se = float(np.std(difference, ddof=1) / np.sqrt(len(seeds)))
    hits = [o[1] for o in ours if o[1] is not None]
    return {
        "problem": cell["problem"],
        "dim_x": cell["dim_x"],
        "dim_y": cell["dim_y"],
        "n": cell["n"],
        "truth": cell["truth"],
        "best_k": best,
        "seeds": len(seeds),
        "ours": float(np.mean(ours_errors)),
        "classical": means,
        "best": winner,
        "ratio": float(np.mean(ours_errors)) / max(means[winner], 1e-12),
        "difference_se": se,
        "clearly_worse": bool(np.mean(difference) > 2 * se),
        "clearly_better": bool(np.mean(difference) < -2 * se),
        "interval_hits": hits,
        "flagged": sum(o[2] for o in ours),
    }


def summarize_two_sample(cell, seeds):
    accuracy = {}
    for name in ("mmd", "c2st", PRESET["two_sample"]):
        records = [cell["seeds"].get(str(s), {}).get(name) for s in seeds]
        if any(r is None or "error" in r for r in records):
            return None
        right = sum(est.two_sample_correct(name, r) for r in records)
        accuracy[name] = right / (2 * len(records))
    return {
        "problem": cell["problem"],
        "dim_x": cell["dim_x"],
        "n": cell["n"],
        "seeds": len(seeds),
        "accuracy": accuracy,
    }


def totals(rows):
    out = {}
    for task in ("kl", "mi"):
        for n in (*SIZES, "all"):
            part = [
                r
                for r in rows
                if r["task"] == task and (n == "all" or r["n"] == n)
            ]
            if not part:
                continue
            hits = [h for r in part for h in r["interval_hits"]]
            out[f"{task}_n{n}"] = {
                "cells": len(part),
                "wins": sum(r["ratio"] < 1 for r in part),
                "over_1_5": sum(r["ratio"] > 1.5 for r in part),
                "clearly_better": sum(r["clearly_better"] for r in part),
                "clearly_worse": sum(r["clearly_worse"] for r in part),
                "mean_ours": float(np.mean([r["ours"] for r in part])),
                "mean_best": float(
                    np.mean([r["classical"][r["best"]] for r in part])
                ),
                "coverage": float(np.mean(hits)) if hits else None,
                "intervals": len(hits),
                "flagged": sum(r["flagged"] for r in part),
            }
    for n in (*TWO_SAMPLE_SIZES, "all"):
        part = [
            r
            for r in rows
            if r["task"] == "two_sample" and (n == "all" or r["n"] == n)
        ]
        if part:
            out[f"two_sample_n{n}"] = {
                "cells": len(part),
                "decisions": sum(2 * r["seeds"] for r in part),
                **{
                    name: float(np.mean([r["accuracy"][name] for r in part]))
                    for name in part[0]["accuracy"]
                },
            }
    return out


def summarize(root, seeds_for):
    rows = []
    for problem, n in _cells(("kl", "mi", "two_sample"), SIZES, root):
        cell = runner.load_cell(root, problem, n)
        seeds = seeds_for(n)
        if problem.task == "two_sample":
            row = summarize_two_sample(cell, seeds)
        else:
            row = summarize_cell(cell, seeds)
        if row is not None:
            row["task"] = problem.task
            rows.append(row)
    return rows, totals(rows)


def _fmt(value, digits=3):
    return "-" if value is None else f"{value:.{digits}f}"


def _totals_lines(fresh, held):
    lines = [
        "| task | n | cells | ours < best classical | ours > 1.5x best | "
        "worse by > 2 se / better by > 2 se | mean error ours / best "
        "classical | 90 % coverage (intervals) | seeds 2-4: cells, wins, "
        "> 1.5x |",
        "|---|---|---:|---:|---:|---|---|---|---|",
    ]
    for key, t in fresh.items():
        if key.startswith("two_sample"):
            continue
        task, n = key.split("_n")
        h = held.get(key)
        lines.append(
            f"| {task} | {n} | {t['cells']} | {t['wins']} "
            f"({t['wins'] / t['cells']:.0%}) | {t['over_1_5']} | "
            f"{t['clearly_worse']} / {t['clearly_better']} | "
            f"{_fmt(t['mean_ours'])} / {_fmt(t['mean_best'])} | "
            f"{_fmt(t['coverage'], 2)} ({t['intervals']}) | "
            + (
                f"{h['cells']}, {h['wins']} ({h['wins'] / h['cells']:.0%}), "
                f"{h['over_1_5']}"
                if h
                else "-"
            )
            + " |"
        )
    lines += [
        "",
        "| two-sample, n | cells | decisions | MMD | C2ST | preset | "
        "seeds 2-4: MMD / preset |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for key, t in fresh.items():
        if not key.startswith("two_sample"):
            continue
        h = held.get(key)
        lines.append(
            f"| {key.split('_n')[1]} | {t['cells']} | {t['decisions']} | "
            f"{t['mmd']:.3f} | {t['c2st']:.3f} | "
            f"{t[PRESET['two_sample']]:.3f} | "
            + (f"{h['mmd']:.3f} / {h[PRESET['two_sample']]:.3f}" if h else "-")
            + " |"
        )
    return lines


def _cells_lines(rows):
    lines = [
        "| task | problem | d_x x d_y | n | seeds | truth | ours | k=1 | k=3 | "
        "best k | plug-in | ratio | ours - best (se) | interval hits |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in rows:
        if r["task"] == "two_sample":
            continue
        c, base = r["classical"], PREFIX[r["task"]]
        lines.append(
            f"| {r['task']} | {r['problem']} | {r['dim_x']}x{r['dim_y']} | "
            f"{r['n']} | {r['seeds']} | {r['truth']:.3f} | {_fmt(r['ours'])} "
            f"| {_fmt(c.get(base + '_k1'))} | {_fmt(c.get(base + '_k3'))} | "
            f"{_fmt(c.get(base + '_k_best'))} ({r['best_k']}) | "
            f"{_fmt(c.get('gaussian_plugin'))} | {r['ratio']:.2f} | "
            f"{r['ours'] - c[r['best']]:+.3f} ({r['difference_se']:.3f}) | "
            f"{sum(r['interval_hits'])}/{len(r['interval_hits'])} |"
        )
    return lines


def write_summary(root, split="fresh"):
    rows, fresh = summarize(root, lambda n: split_seeds(split, n))
    _, held = summarize(root, lambda n: runner.HELD_OUT_SEEDS)
    name = {"fresh": "fresh_seeds", "development": "development_seeds"}[split]
    seeds, large = SPLITS[split]
    with open(root / f"{name}.json", "w", encoding="utf-8") as file:
        json.dump(
            {"rows": rows, "totals": fresh, "seeds_2_4": held}, file, indent=1
        )
    worse = [
        f"- {r['task']} {r['problem']} at n = {r['n']}: {r['ratio']:.2f}x "
        f"({r['ours']:.3f} against {r['best']} {r['classical'][r['best']]:.3f})"
        for r in rows
        if r["task"] != "two_sample" and r["ratio"] > 1.5
    ]
    text = [
        f"# The default estimators on the {split} seeds",
        "",
        f"Seeds {seeds[0]}-{seeds[-1]} ({large[0]}-{large[-1]} at n = "
        "10,000)"
        + (
            ", read by no design choice"
            if split == "fresh"
            else ", a development split for design choices"
        )
        + "; best classical = the best of k = 1, k = 3, the best k chosen "
        "on seeds 0-1 and the Gaussian plug-in, per cell, on these seeds. "
        "Command: "
        "`KERAS_BACKEND=torch python benchmarks/estimator_fresh_seeds.py "
        f"--split {split}`.",
        "",
        *_totals_lines(fresh, held),
        "",
        "Cells more than 1.5x worse than the best classical estimator:",
        "",
        *(worse or ["- none"]),
        "",
        "## Every cell",
        "",
        *_cells_lines(rows),
        "",
    ]
    (root / f"{name}.md").write_text("\n".join(text), encoding="utf-8")
    print("\n".join(text[: 8 + len(fresh) + 6]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tasks",
        nargs="+",
        choices=("kl", "mi", "two_sample"),
        default=("kl", "mi", "two_sample"),
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    parser.add_argument(
        "--split",
        choices=tuple(SPLITS),
        default="fresh",
        help="fresh: seeds 5-24, the report; development: seeds 30-49, "
        "for design choices",
    )
    parser.add_argument("--summary-only", action="store_true")
    parser.add_argument(
        "--rerun-preset",
        action="store_true",
        help="recompute the default preset's records (after it changed)",
    )
    parser.add_argument("--max-seconds", type=float, default=None)
    parser.add_argument(
        "--threads", type=int, default=1, help="threads per backend library"
    )
    parser.add_argument("--results", type=pathlib.Path, default=ROOT)
    args = parser.parse_args(argv)
    if not args.summary_only:
        estimator_benchmark._limit_threads(args.threads)
        run(
            args.tasks,
            args.sizes,
            args.results,
            split=args.split,
            rerun_preset=args.rerun_preset,
            log=lambda text: print(text, flush=True),
            max_seconds=args.max_seconds,
        )
    write_summary(args.results, args.split)


if __name__ == "__main__":
    main()
