"""The two-sample problems of the estimator benchmark at n = 10,000.

`same_distribution_probability` (the `two_sample_statistics` preset) and
the classifier test (`classifier_two_sample_test`, rejecting at p < 0.05)
on the nine two-sample problems of `benchmarks/estimator_bench/
problems.py`, held-out seeds 2-4 (the estimator benchmark's samples). The
MMD permutation test is not run: with 20,000 pooled points its kernel
matrix alone takes 3.2 GB.

    KERAS_BACKEND=torch python benchmarks/two_sample_large_n.py

Writes `benchmarks/results/two_sample_statistics/n10000.json`.
"""

import json
import os
import pathlib
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from estimator_bench import problems as problem_sets  # noqa: E402
from estimator_bench import runner  # noqa: E402

from keras_msets import estimators  # noqa: E402
from keras_msets.stats import two_sample_tests  # noqa: E402

OUT = pathlib.Path(__file__).parent / "results" / "two_sample_statistics"
N = 10_000


def main():
    rows = []
    for problem in problem_sets.two_sample_problems():
        for seed in runner.HELD_OUT_SEEDS:
            x, y, x2, z = problem.sample(N, seed)
            row = {"problem": problem.name, "seed": seed}
            for name, pair in (("same", (x, y)), ("different", (x2, z))):
                start = time.perf_counter()
                p = estimators.same_distribution_probability(*pair)
                row[f"statistics_{name}"] = p
                row[f"statistics_seconds_{name}"] = time.perf_counter() - start
                test = two_sample_tests.classifier_two_sample_test(
                    *pair, seed=seed
                )
                row[f"c2st_{name}"] = test.p_value
            rows.append(row)
            print(row, flush=True)
    right = {
        "statistics": [
            (r["statistics_same"] >= 0.5) + (r["statistics_different"] < 0.5)
            for r in rows
        ],
        "c2st": [
            (r["c2st_same"] >= 0.05) + (r["c2st_different"] < 0.05)
            for r in rows
        ],
    }
    summary = {k: float(np.sum(v) / (2 * len(v))) for k, v in right.items()}
    OUT.mkdir(parents=True, exist_ok=True)
    record = {"n": N, "accuracy": summary, "rows": rows}
    (OUT / "n10000.json").write_text(json.dumps(record, indent=1) + "\n")
    print(summary)


if __name__ == "__main__":
    main()
