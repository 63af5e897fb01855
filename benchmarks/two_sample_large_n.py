"""The two-sample problems of the estimator benchmark at n = 10,000.

`same_distribution_probability` (the `two_sample_statistics` preset,
"different" below probability 0.5), the classifier test
(`classifier_two_sample_test`) and the MMD permutation test
(`mmd_permutation_test`: Gaussian kernel, median-heuristic bandwidth, 200
permutations), both tests rejecting at p < 0.05 and seeded with the
sample's seed as in the estimator benchmark, on the nine two-sample
problems of `benchmarks/estimator_bench/problems.py`, held-out seeds 2-4
(the estimator benchmark's samples; 54 decisions per method).

Every (problem, seed, pair) result is written to the record as soon as it
is computed, so a killed run continues where it stopped; only missing
results are computed. `--refresh NAME ...` first drops a method's results
(after a change of what the preset serves, say).

    KERAS_BACKEND=torch OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/two_sample_large_n.py

Writes `benchmarks/results/two_sample_statistics/n10000.json`: per method
the accuracy over the pairs it has run on, the pairs run, the same pairs
kept and the different pairs found, and the rows (p-values or
probabilities and seconds per pair). `--memory` instead measures numpy's
peak allocation (`tracemalloc`) of the median heuristic and of the MMD
test on one pair of 2 x 10,000 points in d = 16 (a pair of the rows:
`ts_correlated_d16`, seed 2, same) and writes
`mmd_memory_n10000.json` beside it.
"""

import argparse
import json
import os
import pathlib
import sys
import time
import tracemalloc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from estimator_bench import problems as problem_sets  # noqa: E402
from estimator_bench import runner  # noqa: E402

from keras_msets import estimators  # noqa: E402
from keras_msets.stats import two_sample_tests  # noqa: E402

OUT = pathlib.Path(__file__).parent / "results" / "two_sample_statistics"
RECORD = OUT / "n10000.json"
N = 10_000
LEVEL = 0.05
PAIRS = ("same", "different")


def _methods(seed):
    """`{name: (function of (x, y), says "different" if)}`."""
    return {
        "statistics": (
            estimators.same_distribution_probability,
            lambda p: p < 0.5,
        ),
        "c2st": (
            lambda x, y: (
                two_sample_tests.classifier_two_sample_test(
                    x, y, seed=seed
                ).p_value
            ),
            lambda p: p < LEVEL,
        ),
        "mmd": (
            lambda x, y: (
                two_sample_tests.mmd_permutation_test(
                    x, y, num_permutations=200, seed=seed
                ).p_value
            ),
            lambda p: p < LEVEL,
        ),
    }


def _seconds_key(name, pair):
    return f"{name}_seconds_{pair}"


def summarize(rows):
    """Per method: accuracy over the (problem, seed) rows where both pairs
    ran, and the counts behind it."""
    summary = {}
    for name, (_, different) in _methods(0).items():
        done = [r for r in rows if all(f"{name}_{pair}" in r for pair in PAIRS)]
        if not done:
            continue
        kept = sum(not different(r[f"{name}_same"]) for r in done)
        found = sum(bool(different(r[f"{name}_different"])) for r in done)
        summary[name] = {
            "accuracy": (kept + found) / (2 * len(done)),
            "rows": len(done),
            "same_kept": int(kept),
            "different_found": int(found),
            "same_called_different": [
                [r["problem"], r["seed"], r[f"{name}_same"]]
                for r in done
                if different(r[f"{name}_same"])
            ],
            "different_missed": [
                [r["problem"], r["seed"], r[f"{name}_different"]]
                for r in done
                if not different(r[f"{name}_different"])
            ],
        }
    return summary


def _write(rows):
    OUT.mkdir(parents=True, exist_ok=True)
    summary = summarize(rows)
    record = {
        "n": N,
        "accuracy": {k: v["accuracy"] for k, v in summary.items()},
        "summary": summary,
        "rows": rows,
    }
    temporary = RECORD.with_suffix(".tmp")
    temporary.write_text(json.dumps(record, indent=1) + "\n")
    os.replace(temporary, RECORD)
    return summary


def memory():
    """Peak numpy allocation and time of the MMD test at n = 10,000 on the
    same pair of `ts_correlated_d16` (d = 16), seed 2, as in the rows."""
    problem = {p.name: p for p in problem_sets.two_sample_problems()}[
        "ts_correlated_d16"
    ]
    seed = runner.HELD_OUT_SEEDS[0]
    x, y, _, _ = problem.sample(N, seed)
    record = {"problem": problem.name, "seed": seed, "pair": "same"}
    tracemalloc.start()
    start = time.perf_counter()
    bandwidth = two_sample_tests.median_bandwidth(np.concatenate([x, y]))
    record["median_bandwidth_seconds"] = time.perf_counter() - start
    record["median_bandwidth_peak_bytes"] = tracemalloc.get_traced_memory()[1]
    record["bandwidth"] = bandwidth
    tracemalloc.reset_peak()
    start = time.perf_counter()
    test = two_sample_tests.mmd_permutation_test(
        x, y, num_permutations=200, bandwidth=bandwidth, seed=seed
    )
    record["test_seconds"] = time.perf_counter() - start
    record["test_peak_bytes"] = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    record["p_value"] = test.p_value
    record["kernel_matrix_bytes"] = (2 * N) ** 2 * 8
    path = OUT / "mmd_memory_n10000.json"
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(record)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--methods", nargs="+", default=list(_methods(0)), choices=_methods(0)
    )
    parser.add_argument("--refresh", nargs="+", default=[], choices=_methods(0))
    parser.add_argument("--memory", action="store_true")
    args = parser.parse_args(argv)
    if args.memory:
        return memory()
    stored = json.loads(RECORD.read_text())["rows"] if RECORD.exists() else []
    by_key = {(r["problem"], r["seed"]): r for r in stored}
    problems = {p.name: p for p in problem_sets.two_sample_problems()}
    rows = []
    for problem in problems.values():
        for seed in runner.HELD_OUT_SEEDS:
            row = by_key.get((problem.name, seed))
            if row is None:
                row = {"problem": problem.name, "seed": seed}
            for name in args.refresh:
                for pair in PAIRS:
                    row.pop(f"{name}_{pair}", None)
                    row.pop(_seconds_key(name, pair), None)
            rows.append(row)
    _write(rows)
    for row in rows:
        problem = problems[row["problem"]]
        sample = None
        for name in args.methods:
            function, _ = _methods(row["seed"])[name]
            for pair in PAIRS:
                if f"{name}_{pair}" in row:
                    continue
                if sample is None:
                    x, y, x2, z = problem.sample(N, row["seed"])
                    sample = {"same": (x, y), "different": (x2, z)}
                start = time.perf_counter()
                row[f"{name}_{pair}"] = function(*sample[pair])
                row[_seconds_key(name, pair)] = time.perf_counter() - start
                _write(rows)
                print(
                    row["problem"],
                    row["seed"],
                    name,
                    pair,
                    row[f"{name}_{pair}"],
                    f"{row[_seconds_key(name, pair)]:.1f} s",
                    flush=True,
                )
    summary = _write(rows)
    print(json.dumps(summary, indent=1))
    return summary


if __name__ == "__main__":
    main()
