"""Where the whole-sample check of `knn_refined_mutual_information` runs,
and what its rule costs at the top of that range.

For each `d_x,d_y` of `--pairs`, the ranges of n (from the preset's
`from_points` up to `--max-n`) inside the rule's cost budget
(`mi_statistics.whole_sample_affordable`), and the CPU time of one call
of the rule (`whole_sample_estimate`, k = 3, after a first call) at the
top of each range, on one pair `y = A x + noise` (as
`refined_mi_check_speed.py`). Numpy only: the same on every backend.
Into `results/estimator_benchmark/refined_mi_check_budget.json`.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/refined_mi_check_budget.py
"""

import argparse
import json
import os
import pathlib
import time

import numpy as np
from refined_mi_check_speed import sample_pair

from keras_msets.stats import mi_statistics

ROOT = pathlib.Path(__file__).parent / "results" / "estimator_benchmark"
FROM_POINTS = 1000


def affordable_ranges(total_dim, low, high):
    """`[(first, last), ...]`: the runs of n in `low..high` inside the
    rule's budget (the budget changes form at `MAX_DENSE` rows)."""
    n = np.arange(low, high + 1)
    inside = np.array(
        [mi_statistics.whole_sample_affordable(int(v), total_dim) for v in n]
    )
    edges = np.flatnonzero(np.diff(np.r_[0, inside.astype(int), 0]))
    return [
        (int(n[a]), int(n[b - 1]))
        for a, b in zip(edges[::2], edges[1::2], strict=True)
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--pairs",
        nargs="+",
        default=[
            "1,1",
            "1,2",
            "2,2",
            "3,3",
            "2,4",
            "4,4",
            "5,5",
            "10,10",
            "14,14",
            "25,25",
        ],
    )
    parser.add_argument("--max-n", type=int, default=100_000)
    args = parser.parse_args(argv)
    out = {"load": os.getloadavg(), "rows": []}
    for pair in args.pairs:
        dim_x, dim_y = (int(v) for v in pair.split(","))
        ranges = affordable_ranges(dim_x + dim_y, FROM_POINTS, args.max_n)
        row = {"dim_x": dim_x, "dim_y": dim_y, "ranges": ranges, "top": []}
        for _, last in ranges:
            rng = np.random.default_rng([last, dim_x, dim_y])
            x, y = sample_pair(rng, last, dim_x, dim_y)
            mi_statistics.whole_sample_estimate(x, y, k=3)
            start = time.process_time()
            mi_statistics.whole_sample_estimate(x, y, k=3)
            row["top"].append(
                {"n": last, "rule_cpu_seconds": time.process_time() - start}
            )
        out["rows"].append(row)
        print(json.dumps(row), flush=True)
    out["load_after"] = os.getloadavg()
    path = ROOT / "refined_mi_check_budget.json"
    path.write_text(json.dumps(out, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
