"""Cheaper variants of the refined MI whole-sample check, on the
development seeds.

The check (`keras_msets.estimators.whole_sample_check`) compares the
preset's answer with `mi_statistics.whole_sample_estimate`, whose KSG on
the whole sample costs more than linearly in n (its k-d tree counts).
Candidates: `whole` (every row a query row, the check as shipped
before) and `queries Q` (`query_rows=Q`: each KSG averaged over at most
Q random rows, the neighbours counted among all rows; the counts then
cost a bounded number of queries). An earlier candidate, blocks of at
most `B` rows averaged (`blocks B` in the records and the output, the
`block_rows` argument at commit 43d88b6), had the KSG bias of the block
size. For every MI problem of the estimator
benchmark at n = 1,000 and 10,000, development seeds 0-1 only, calls the
rule as the preset serves it (k = 3, bias allowance 20) on the same
sample the benchmark draws (records cached in
`results/estimator_benchmark/refined_mi_check_cheaper_records.json`,
resumable, with the rule's CPU seconds), applies the check to the
preset's answers without it (the cells committed at `--preset-rev`) and
counts wins / cells over 1.5x / mean error against the best classical
estimator per cell and the coverage of the 90 % intervals, per n and
over all cells, into `refined_mi_check_cheaper_dev.json`.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/refined_mi_check_cheaper.py
"""

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import refined_mi_check_bias as check_bias  # noqa: E402
import refined_mi_large_n as large_n  # noqa: E402
from estimator_bench import problems as problem_sets  # noqa: E402
from estimator_bench import runner  # noqa: E402

from keras_msets.stats import mi_statistics  # noqa: E402

ROOT = large_n.ROOT
RECORDS = ROOT / "refined_mi_check_cheaper_records.json"
OUT = ROOT / "refined_mi_check_cheaper_dev.json"
K, BIAS_SCALE = 3, 20.0


def label(query_rows):
    return "whole" if query_rows is None else f"queries {query_rows}"


def compute(candidates, sizes, log=print):
    """`{label/problem/n/seed: [value, sd, bias, cpu seconds] or None}`."""
    records = json.loads(RECORDS.read_text()) if RECORDS.exists() else {}
    for n in sizes:
        for problem in problem_sets.mi_problems():
            if not runner.cell_path(ROOT, problem, n).exists():
                continue
            for seed in runner.DEV_SEEDS:
                todo = [
                    b
                    for b in candidates
                    if f"{label(b)}/{problem.name}/{n}/{seed}" not in records
                ]
                if not todo:
                    continue
                x, y = problem.sample(n, seed)
                for query_rows in todo:
                    start = time.process_time()
                    rule = mi_statistics.whole_sample_estimate(
                        x, y, k=K, bias_scale=BIAS_SCALE, query_rows=query_rows
                    )
                    seconds = time.process_time() - start
                    key = f"{label(query_rows)}/{problem.name}/{n}/{seed}"
                    records[key] = None if rule is None else [*rule, seconds]
                    log(f"{key}: {seconds:.3f} s", flush=True)
                RECORDS.write_text(json.dumps(records, indent=0))
    return records


def evaluate(records, name, load, sizes):
    def rule_for(problem, n, seed):
        rule = records[f"{name}/{problem.name}/{n}/{seed}"]
        if n < check_bias.FROM_POINTS or rule is None:
            return None
        if not np.isfinite(rule[1]):
            return None
        return tuple(rule)  # value, sd, bias, cpu seconds

    return check_bias.evaluate_check(load, sizes, rule_for, timed=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument(
        "--queries", type=int, nargs="+", default=[1024, 2048, 4096]
    )
    parser.add_argument("--preset-rev", default="01c020d")
    args = parser.parse_args(argv)
    candidates = [None, *args.queries]
    records = compute(candidates, args.sizes)
    load = large_n.cell_loader(args.preset_rev)
    results = json.loads(OUT.read_text()) if OUT.exists() else {}
    for query_rows in candidates:
        name = label(query_rows)
        results[name] = evaluate(records, name, load, args.sizes)
        line = "; ".join(
            f"n={n}: {v['wins']}/{v['cells']} wins, {v['over_1_5']} >1.5x, "
            f"{v['mean_ours']:.4f}, cov {v['coverage']:.3f}"
            + (
                f", rule {v['rule_cpu_seconds_mean']:.3f} s mean, "
                f"{v['rule_cpu_seconds_max']:.3f} max"
                if n != "all"
                else ""
            )
            for n, v in results[name].items()
        )
        print(f"{name}: {line}", flush=True)
    OUT.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
