"""Whole-sample KSG rules for the refined MI estimator at large n, on the
development seeds.

For every MI problem of the estimator benchmark at n = 1,000 and 10,000,
development seeds 0-1 only, computes on the copula-normal coordinates of
the sample (cached in `results/estimator_benchmark/
refined_mi_large_n_dev.json`, resumable):

- the base of the preset (`plugin_corrected`);
- KSG at k = 1, 3, 10 on the whole sample, and on a whole-sample
  Gaussian reference with the sample's shrunk copula correlation
  (`mi_statistics.gaussian_reference_ksg`, one block of n rows);
- the same difference on 4 disjoint quarters of the sample (each against
  a reference of a quarter's size), for the spread of the rule.

At k = 3 these are `mi_statistics.whole_sample_estimate` (equal to the
last digit). Then answers each cell with candidates and counts wins /
cells over 1.5x / mean error against the best classical estimator of the
cell, as the benchmark does, with the coverage of the 90 % intervals:

- `rule k from n_0`: from `n >= n_0` the rule `base + KSG_k(sample) -
  KSG_k(reference)`, interval `+- 1.645 x spread + floor`; below
  `n_0` the preset's answer;
- `check k from n_0`: the preset's answer unless it lies outside the
  rule's interval, then the rule's.

`x` in a label multiplies the spread, `+` adds a floor (nats). The
preset's answers come from the benchmark cache (`--results`, e.g. a copy
filled by `refined_mi_benchmark.py --model DIR --results DIR`) or from
the cells committed at a git revision (`--preset-rev`).

    nice -n 10 python benchmarks/refined_mi_large_n.py --preset-rev 01c020d
"""

import argparse
import json
import os
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from estimator_bench import problems as problem_sets  # noqa: E402
from estimator_bench import runner  # noqa: E402
from preset_history import file_at_revision  # noqa: E402

from keras_msets.stats import mi_statistics as stats  # noqa: E402

ROOT = pathlib.Path(__file__).parent / "results" / "estimator_benchmark"
OUT = ROOT / "refined_mi_large_n_dev.json"
SIZES = (50, 150, 1000, 10000)
CLASSICAL = ("ksg_k1", "ksg_k3", "ksg_k_best", "gaussian_plugin")
PARTS = 4


def whole_sample(x, y, seed=0):
    """The record of one sample (module docstring)."""
    x, y = stats.check_pair(x, y)
    start = time.perf_counter()
    zx, zy = stats.copula_normal(x), stats.copula_normal(y)
    dim_x = zx.shape[1]
    corr = stats.shrunk_correlation(np.concatenate([zx, zy], axis=1))
    corrected = stats.corrected_gaussian_information(zx, zy)
    if np.isnan(corrected):
        corrected = stats.gaussian_copula_statistics(zx, zy)[0]
    n = zx.shape[0]
    ksg = stats.ksg_estimates(zx, zy)
    reference = stats.gaussian_reference_ksg(corr, dim_x, n, seed)
    seconds = time.perf_counter() - start
    parts = []
    if n >= 4 * 50:
        rng = np.random.default_rng(seed)
        rows = n // PARTS
        for index in np.array_split(rng.permutation(n), PARTS):
            index = index[:rows]
            own = stats.ksg_estimates(
                stats.copula_normal(zx[index]), stats.copula_normal(zy[index])
            )
            gauss = stats.gaussian_reference_ksg(
                corr, dim_x, rows, seed + 1 + len(parts)
            )
            parts.append(list(np.subtract(own, gauss)))
    return {
        "base": float(corrected),
        "ksg": ksg,
        "reference": reference,
        "parts": parts,
        "seconds": seconds,
    }


def compute(sizes, log=print):
    records = json.loads(OUT.read_text()) if OUT.exists() else {}
    for n in sizes:
        for problem in problem_sets.mi_problems():
            if not runner.cell_path(ROOT, problem, n).exists():
                continue
            for seed in runner.DEV_SEEDS:
                key = f"{problem.name}/{n}/{seed}"
                if key in records:
                    continue
                x, y = problem.sample(n, seed)
                records[key] = whole_sample(x, y)
                OUT.write_text(json.dumps(records, indent=0))
                log(f"{key}: {records[key]['seconds']:.2f} s", flush=True)
    return records


def cell_loader(rev=None, root=ROOT):
    """Reads benchmark cells from the cache `root`, or as committed at
    `rev` (the answers of a preset that the cache no longer holds)."""
    if rev is None:
        return lambda problem, n: runner.load_cell(root, problem, n)
    top = pathlib.Path(__file__).resolve().parents[1]

    def load(problem, n):
        path = runner.cell_path(ROOT, problem, n).resolve().relative_to(top)
        return json.loads(file_at_revision(path, rev, top))

    return load


def rule(record, k_index, z, inflate, floor=0.0):
    excess = np.subtract(record["ksg"], record["reference"])[k_index]
    value = record["base"] + excess
    parts = np.array(record["parts"])
    if len(parts):
        # The spread of the whole-sample difference: that of the quarter
        # differences over sqrt(quarters), times `inflate` (bias).
        spread = np.std(parts[:, k_index], ddof=1) / np.sqrt(PARTS)
    else:
        spread = np.nan
    half = z * inflate * spread + floor
    return value, value - half, value + half


def evaluate(
    records,
    n_0,
    k_index,
    z=1.645,
    inflate=1.0,
    sizes=SIZES,
    check=False,
    floor=0.0,
    load=None,
):
    problems = {p.name: p for p in problem_sets.mi_problems()}
    out = {}
    for n in sizes:
        cells = []
        for name, problem in problems.items():
            if not runner.cell_path(ROOT, problem, n).exists():
                continue
            cell = (load or cell_loader())(problem, n)
            classical = runner.summarize_cell(
                cell, held=runner.DEV_SEEDS, dev=runner.DEV_SEEDS
            )["errors"]
            best = min(classical[k] for k in CLASSICAL if k in classical)
            errors, hits = [], []
            for seed in runner.DEV_SEEDS:
                preset = cell["seeds"][str(seed)]["refined"]
                value, low, high = (
                    preset["value"],
                    preset["low"],
                    preset["high"],
                )
                if n >= n_0:
                    answer = rule(
                        records[f"{name}/{n}/{seed}"],
                        k_index,
                        z,
                        inflate,
                        floor,
                    )
                    # `check`: the rule only where the preset's answer
                    # lies outside the rule's interval.
                    if not check or not answer[1] <= value <= answer[2]:
                        value, low, high = answer
                errors.append(abs(value - cell["truth"]))
                hits.append(low <= cell["truth"] <= high)
            ratio = np.mean(errors) / max(best, 1e-12)
            cells.append((name, np.mean(errors), best, ratio, hits))
        out[n] = summarise_cells(cells)
    return out


def summarise_cells(cells):
    """Wins, cells over 1.5x, mean errors, coverage and the worst cells of
    `cells`: tuples (problem name, our mean error, the best classical
    mean error, their ratio, our interval hits)."""
    return {
        "cells": len(cells),
        "wins": int(sum(c[3] < 1 for c in cells)),
        "over_1_5": int(sum(c[3] > 1.5 for c in cells)),
        "mean_ours": float(np.mean([c[1] for c in cells])),
        "mean_best": float(np.mean([c[2] for c in cells])),
        "coverage": float(np.mean([h for c in cells for h in c[4]])),
        "worst": [
            f"{c[0]} {c[3]:.2f}x ({c[1]:.3f} / {c[2]:.3f})"
            for c in cells
            if c[3] > 1.5
        ],
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument(
        "--preset-rev",
        default=None,
        help="read the preset's answers from the cells committed at this "
        "git revision (default: the cache)",
    )
    parser.add_argument(
        "--results",
        type=pathlib.Path,
        default=ROOT,
        help="a copy of the benchmark cache holding a candidate's answers "
        "(`refined_mi_benchmark.py --model DIR --results DIR`)",
    )
    args = parser.parse_args(argv)
    records = compute(args.sizes)
    sizes = tuple(args.sizes)
    load = cell_loader(args.preset_rev, args.results)
    results = {}
    candidates = [("preset", 10**9, 0, 1.0, False, 0.0)]
    for n_0 in sizes:
        for k_index, k in enumerate(stats.NEIGHBOURS):
            for inflate in (1.0, 2.0, 3.0, 4.0, 6.0):
                for check in (False, True):
                    for floor in (0.0, 0.02, 0.05):
                        if not check and (floor or inflate > 3):
                            continue
                        label = f"{'check' if check else 'rule'} k={k} "
                        label += f"from n={n_0} x{inflate:g} +{floor:g}"
                        candidates.append(
                            (label, n_0, k_index, inflate, check, floor)
                        )
    for label, n_0, k_index, inflate, check, floor in candidates:
        results[label] = evaluate(
            records,
            n_0,
            k_index,
            inflate=inflate,
            sizes=sizes,
            check=check,
            floor=floor,
            load=load,
        )
        line = "; ".join(
            f"n={n}: {v['wins']}/{v['cells']} wins, {v['over_1_5']} "
            f">1.5x, {v['mean_ours']:.3f}/{v['mean_best']:.3f}, "
            f"cov {v['coverage']:.2f}"
            for n, v in results[label].items()
        )
        print(f"{label}: {line}", flush=True)
    label = args.preset_rev or (
        "cache" if args.results == ROOT else args.results.name
    )
    name = f"refined_mi_large_n_rules_{label}.json"
    (ROOT / name).write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
