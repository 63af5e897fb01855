"""The held-out two-sample rows of the estimator benchmark, measured again.

`same_distribution_probability` (the rows `statistics` of
`benchmarks/estimator_benchmark.py`) on the nine two-sample problems,
held-out seeds 2-4, at n = 50, 150 and 1,000, and at n = 10,000 through
`benchmarks/two_sample_large_n.py` (its record `n10000.json`); the MMD
and classifier tests' records already stored are kept. `--refresh` first
drops the stored `statistics` records of those seeds and sizes (after a
change of what the preset serves); without it only missing records are
computed. Writes the two-sample part of the summary (aggregate and rows;
n = 10,000 in the aggregate and the decisions only) to
`benchmarks/results/two_sample_statistics/heldout_summary.json` and
prints, per n, the same pairs kept, the different pairs found and the
same pairs called different:

    KERAS_BACKEND=torch python benchmarks/two_sample_heldout.py --refresh
"""

import argparse
import fcntl
import json
import os
import pathlib
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import estimator_benchmark as bench  # noqa: E402
import two_sample_large_n as large_n  # noqa: E402
from estimator_bench import problems as problem_sets  # noqa: E402
from estimator_bench import runner  # noqa: E402

OUT = (
    pathlib.Path(__file__).parent
    / "results"
    / "two_sample_statistics"
    / "heldout_summary.json"
)
NAME = "statistics"


def drop_records(problems, sizes, seeds, root):
    """Removes the `NAME` records of `seeds` from the cells (under the
    lock `runner.save_cell` takes)."""
    locks = pathlib.Path(tempfile.gettempdir()) / "estimator_benchmark_locks"
    locks.mkdir(exist_ok=True)
    for problem in problems:
        for n in sizes:
            path = runner.cell_path(root, problem, n)
            if not path.exists():
                continue
            with open(locks / f"{problem.name}_n{n}.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                cell = runner.load_cell(root, problem, n)
                for seed in seeds:
                    cell["seeds"].get(str(seed), {}).pop(NAME, None)
                temporary = path.with_suffix(".tmp")
                with open(temporary, "w", encoding="utf-8") as file:
                    json.dump(cell, file, indent=1, sort_keys=True)
                os.replace(temporary, path)


def decisions(problems, sizes, seeds, root):
    """Per n: same pairs kept, different pairs found (of `len(problems) *
    len(seeds)` each), and the same pairs called different."""
    out = {}
    for n in sizes:
        kept, found, wrong = 0, 0, []
        for problem in problems:
            cell = runner.load_cell(root, problem, n)
            for seed in seeds:
                record = cell["seeds"][str(seed)][NAME]
                kept += record["same"] >= 0.5
                found += record["different"] < 0.5
                if record["same"] < 0.5:
                    wrong.append([problem.name, seed, record["same"]])
        out[str(n)] = {
            "same_kept": int(kept),
            "different_found": int(found),
            "pairs_each": len(problems) * len(seeds),
            "same_called_different": wrong,
        }
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=bench.SIZES)
    parser.add_argument("--refresh", action="store_true")
    parser.add_argument(
        "--no-large-n", action="store_true", help="leave n = 10,000 out"
    )
    args = parser.parse_args(argv)
    bench._limit_threads(1)
    problems = problem_sets.two_sample_problems()
    seeds = runner.HELD_OUT_SEEDS
    if args.refresh:
        drop_records(problems, args.sizes, seeds, bench.ROOT)
    runner.run(problems, args.sizes, seeds, ["ours"], bench.ROOT)
    rows = runner.summarize(problems, args.sizes, bench.ROOT)
    aggregate = {
        key: value
        for key, value in bench.aggregate(rows).items()
        if key.startswith("two_sample")
    }
    record = {
        "aggregate": aggregate,
        "decisions": decisions(problems, args.sizes, seeds, bench.ROOT),
        "rows": [r for r in rows if r["task"] == "two_sample"],
    }
    if not args.no_large_n:
        summary = large_n.main(["--refresh", NAME] if args.refresh else [])
        # Every problem has all its seeds, so the mean over the nine
        # problems is the accuracy over all decisions.
        record["aggregate"][f"two_sample_n{large_n.N}"] = {
            "cells": len(problems),
            "mean_accuracy": {
                name: {"mean": value["accuracy"]}
                for name, value in summary.items()
            },
        }
        ours = summary[NAME]
        record["decisions"][str(large_n.N)] = {
            "same_kept": ours["same_kept"],
            "different_found": ours["different_found"],
            "pairs_each": ours["rows"],
            "same_called_different": ours["same_called_different"],
        }
    OUT.write_text(json.dumps(record, indent=1) + "\n")
    for key, value in aggregate.items():
        accuracy = value["mean_accuracy"]
        print(key, {k: round(v["mean"], 3) for k, v in accuracy.items()})
    print(json.dumps(record["decisions"], indent=1))


if __name__ == "__main__":
    main()
