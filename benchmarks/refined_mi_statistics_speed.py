"""`mi_statistics` now against the module at a git revision, same pairs.

Times `mi_statistics(x, y)` (or `--function whole_sample_estimate`, the
rule of the whole-sample check; numpy only, the same on every backend)
for one pair `y = x + noise`, d_x = d_y = d, interleaved (each repeat
runs the revision's module and the current one in turn), minimum of the
repeats after a first call (wall-clock and CPU time of the process),
checks that both give the same vector (for the rule: the same value and
spread), and writes `results/estimator_benchmark/
refined_mi_statistics_speed.json` (the rule: `refined_mi_whole_sample_
speed.json`; `--out` another name in that folder). Only
`mi_statistics.py` is taken at the revision: what it imports comes from
the working tree (the KSG counts of `keras_msets.stats.ksg` too, for
revisions after they moved there).

    OMP_NUM_THREADS=1 nice -n 10 \
        python benchmarks/refined_mi_statistics_speed.py --rev aa95517~1
    OMP_NUM_THREADS=1 nice -n 10 \
        python benchmarks/refined_mi_statistics_speed.py --rev c52afc6~1 \
        --function whole_sample_estimate --dims 1 3 5 25 --repeats 10
"""

import argparse
import importlib.util
import json
import os
import pathlib
import tempfile
import time

import numpy as np
from preset_history import file_at_revision

from keras_msets.stats import mi_statistics

ROOT = pathlib.Path(__file__).parent / "results" / "estimator_benchmark"
MODULE = "keras_msets/stats/mi_statistics.py"


def module_at(rev):
    top = pathlib.Path(__file__).resolve().parents[1]
    path = pathlib.Path(tempfile.mkdtemp()) / "mi_statistics_at_rev.py"
    path.write_bytes(file_at_revision(MODULE, rev, top))
    spec = importlib.util.spec_from_file_location("mi_statistics_at_rev", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rev", required=True)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dims", type=int, nargs="+", default=[1, 5, 25])
    parser.add_argument(
        "--function",
        default="mi_statistics",
        choices=["mi_statistics", "whole_sample_estimate"],
    )
    parser.add_argument(
        "--out", default=None, help="file name in the results folder"
    )
    args = parser.parse_args(argv)
    before = module_at(args.rev)
    name = args.function
    rng = np.random.default_rng(0)
    rows = []
    out = {
        "rev": args.rev,
        "function": name,
        "load": os.getloadavg(),
        "rows": rows,
    }
    for d in args.dims:
        for n in args.sizes:
            x = rng.normal(size=(n, d))
            y = x + rng.normal(size=(n, d))
            old = getattr(before, name)(x, y)
            new = getattr(mi_statistics, name)(x, y)
            if name == "whole_sample_estimate":
                # None over the budget; value and spread (no bias
                # allowance at the revision).
                same = (old is None and new is None) or (
                    old is not None
                    and new is not None
                    and tuple(old[:2]) == tuple(new[:2])
                )
            else:
                same = np.array_equal(old, new)
            times = {"rev": [], "now": [], "rev_cpu": [], "now_cpu": []}
            for _ in range(args.repeats):
                for key, module in (("rev", before), ("now", mi_statistics)):
                    start = time.perf_counter()
                    cpu = time.process_time()
                    getattr(module, name)(x, y)
                    times[key].append(time.perf_counter() - start)
                    times[key + "_cpu"].append(time.process_time() - cpu)
            rows.append(
                {
                    "d": d,
                    "n": n,
                    "rev_seconds": min(times["rev"]),
                    "now_seconds": min(times["now"]),
                    "rev_cpu_seconds": min(times["rev_cpu"]),
                    "now_cpu_seconds": min(times["now_cpu"]),
                    "identical": bool(same),
                }
            )
            print(rows[-1], flush=True)
    out["load_after"] = os.getloadavg()
    path = ROOT / (
        args.out
        or (
            "refined_mi_statistics_speed.json"
            if name == "mi_statistics"
            else "refined_mi_whole_sample_speed.json"
        )
    )
    path.write_text(json.dumps(out, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
