"""The refined MI whole-sample check on all rows against a bounded number
of query rows, on the wide development seeds.

`knn_refined_mutual_information` checks its answer for sets of 1,000
rows or more against `mi_statistics.whole_sample_estimate`, whose KSG
counts on the whole sample cost more than linearly in n. With
`query_rows=Q` each KSG is averaged over at most Q random rows, the
neighbours still counted among all rows: a bounded number of count
queries, the same bias, more noise. `refined_mi_check_cheaper.py`
compared them on the development seeds 0-1 (18 samples at n = 10,000).
This script compares them on the wide development split of
`estimator_fresh_seeds.py` (seeds 30-39 at n = 10,000, where the
candidates differ; below 4,096 rows they are the same rule):

- the preset's answer before its check (the check's inputs captured
  from the estimator's own call), then the check applied with each
  candidate's arguments (`whole`: as served; `queries Q`), its CPU
  seconds measured;
- the classical estimators of the benchmark on the same samples (read
  from the benchmark's cache, which `estimator_fresh_seeds.py --split
  development` fills).

Per candidate: cells where the mean error is below the best classical
one's, cells over 1.5x, mean error, coverage of the 90 % intervals and
the rule's CPU seconds (mean / max), into
`results/estimator_benchmark/refined_mi_check_query_rows.json` (the
per-sample records beside it, `..._records.json`, resumable).

    OMP_NUM_THREADS=1 KERAS_BACKEND=torch nice -n 10 \\
        python benchmarks/refined_mi_check_query_rows.py
"""

import argparse
import copy
import json
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import estimator_fresh_seeds as splits  # noqa: E402
from estimator_bench import problems as problem_sets  # noqa: E402
from estimator_bench import runner  # noqa: E402

ROOT = splits.ROOT
RECORDS = ROOT / "refined_mi_check_query_rows_records.json"
OUT = ROOT / "refined_mi_check_query_rows.json"
N = 10000
LEVEL = 0.9


def label(query_rows):
    return "whole" if query_rows is None else f"queries {query_rows}"


def _answers_before_check(x, y):
    """The preset's answer with its check's inputs, the check not run."""
    from keras_msets import estimators
    from keras_msets.estimators import refined

    captured = {}
    real = refined.apply_whole_sample_check

    def capture(check, x_sets, y_sets, rows, answers, level):
        captured.update(
            check=check,
            sets=(x_sets, y_sets),
            rows=list(rows),
            answers=tuple(np.array(a, dtype=float) for a in answers),
            level=level,
        )
        return []

    refined.apply_whole_sample_check = capture
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            estimators.mutual_information(x, y, interval=LEVEL)
    finally:
        refined.apply_whole_sample_check = real
    return captured


def _checked(captured, query_rows):
    """`(value, low, high, fired, rule CPU seconds)` with the candidate."""
    from keras_msets.estimators.whole_sample_check import (
        apply_whole_sample_check,
    )

    check = copy.deepcopy(captured["check"])
    if query_rows is not None:
        check["arguments"]["query_rows"] = query_rows
    answers = tuple(a.copy() for a in captured["answers"])
    start = time.process_time()
    fired = apply_whole_sample_check(
        check, *captured["sets"], captured["rows"], answers, captured["level"]
    )
    seconds = time.process_time() - start
    return [float(a[0]) for a in answers] + [bool(fired), seconds]


def compute(candidates, log=print):
    records = json.loads(RECORDS.read_text()) if RECORDS.exists() else {}
    for problem in problem_sets.mi_problems():
        if not runner.cell_path(ROOT, problem, N).exists():
            continue
        for seed in splits.split_seeds("development", N):
            keys = {q: f"{label(q)}/{problem.name}/{seed}" for q in candidates}
            if all(key in records for key in keys.values()):
                continue
            x, y = problem.sample(N, seed)
            captured = _answers_before_check(x, y)
            for query_rows, key in keys.items():
                records[key] = _checked(captured, query_rows)
                log(f"{key}: {records[key]}")
            RECORDS.write_text(json.dumps(records, indent=0))
    return records


def evaluate(records, query_rows):
    cells, seconds, hits, fired = [], [], [], 0
    seeds = splits.split_seeds("development", N)
    for problem in problem_sets.mi_problems():
        if not runner.cell_path(ROOT, problem, N).exists():
            continue
        cell = runner.load_cell(ROOT, problem, N)
        row = splits.summarize_cell(cell, seeds)
        if row is None:
            continue  # the classical records are not there yet
        errors = []
        for seed in seeds:
            value, low, high, did, cpu = records[
                f"{label(query_rows)}/{problem.name}/{seed}"
            ]
            errors.append(abs(value - cell["truth"]))
            hits.append(low <= cell["truth"] <= high)
            seconds.append(cpu)
            fired += did
        best = row["classical"][row["best"]]
        cells.append(
            {
                "problem": problem.name,
                "ours": float(np.mean(errors)),
                "best": best,
                "ratio": float(np.mean(errors)) / max(best, 1e-12),
            }
        )
    return {
        "cells": len(cells),
        "wins": sum(c["ratio"] < 1 for c in cells),
        "over_1_5": sum(c["ratio"] > 1.5 for c in cells),
        "mean_ours": float(np.mean([c["ours"] for c in cells])),
        "mean_best": float(np.mean([c["best"] for c in cells])),
        "coverage": float(np.mean(hits)),
        "fired": fired,
        "rule_cpu_seconds_mean": float(np.mean(seconds)),
        "rule_cpu_seconds_max": float(np.max(seconds)),
        "per_cell": cells,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, nargs="+", default=[2048, 4096])
    args = parser.parse_args(argv)
    candidates = [None, *args.queries]
    records = compute(candidates, log=lambda t: print(t, flush=True))
    out = {
        "n": N,
        "seeds": list(splits.split_seeds("development", N)),
        **{label(q): evaluate(records, q) for q in candidates},
    }
    OUT.write_text(json.dumps(out, indent=1), encoding="utf-8")
    for q in candidates:
        v = out[label(q)]
        print(
            f"{label(q)}: {v['wins']}/{v['cells']} wins, {v['over_1_5']} "
            f">1.5x, mean {v['mean_ours']:.4f} (best classical "
            f"{v['mean_best']:.4f}), coverage {v['coverage']:.3f}, fired "
            f"{v['fired']}, rule {v['rule_cpu_seconds_mean']:.3f} s mean, "
            f"{v['rule_cpu_seconds_max']:.3f} s max"
        )


if __name__ == "__main__":
    main()
