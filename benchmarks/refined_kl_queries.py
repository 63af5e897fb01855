"""`kl_statistics` and `kl_excess` now against the modules at a git
revision: the same answers, and the time of their steps.

Equality: `kl_statistics(x, y, standardized_knn=True)` on 32 pairs (d =
1, 2, 5, 8, 9, 12, 16, 25; n = 50, 700, 1,000, 2,500; `y` Student-t)
and the size rule `excess_estimate(x, y, k=20)` on 15 pairs (d = 1, 3,
5, 9, 16; n = 200, 5,000, 12,000; `y` Gamma): the largest relative
difference over every entry. Timing, interleaved (each repeat runs the
revision's function and the current one in turn), the minimum of the
repeats after a first call, wall-clock and CPU seconds of the process:
`nearest_distances` as the statistics call it, `copula_normal`, and the
rule on 20,000 points in d = 4, 5 and 16. numpy/scipy only (the same on
every backend). Writes `results/estimator_benchmark/
refined_kl_queries.json`.

    OMP_NUM_THREADS=1 nice -n 10 \
        python benchmarks/refined_kl_queries.py --rev ea14f5a~1
"""

import argparse
import importlib.util
import json
import os
import pathlib
import sys
import tempfile
import time

import numpy as np
from preset_history import file_at_revision

from keras_msets.stats import kl_excess
from keras_msets.stats import kl_statistics

ROOT = pathlib.Path(__file__).parent / "results" / "estimator_benchmark"
STATISTICS = "keras_msets.stats.kl_statistics"


def _load(name, path, rev):
    top = pathlib.Path(__file__).resolve().parents[1]
    file = pathlib.Path(tempfile.mkdtemp()) / f"{name}.py"
    file.write_bytes(file_at_revision(path, rev, top))
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def modules_at(rev):
    """`kl_statistics` and `kl_excess` at `rev` (the latter importing the
    former at `rev`)."""
    before = _load(
        "kl_statistics_at_rev", "keras_msets/stats/kl_statistics.py", rev
    )
    current = sys.modules[STATISTICS]
    sys.modules[STATISTICS] = before
    try:
        rule = _load("kl_excess_at_rev", "keras_msets/stats/kl_excess.py", rev)
    finally:
        sys.modules[STATISTICS] = current
    return before, rule


def _relative(a, b):
    a, b = np.asarray(a, "f8"), np.asarray(b, "f8")
    return float(np.max(np.abs(a - b) / (1e-12 + np.abs(a))))


def equality(before, rule_before):
    worst = {"kl_statistics": 0.0, "excess_estimate": 0.0}
    for d in (1, 2, 5, 8, 9, 12, 16, 25):
        for n in (50, 700, 1000, 2500):
            rng = np.random.default_rng([d, n])
            x = rng.normal(size=(n, d))
            y = rng.standard_t(3, size=(n + 37, d)) * 1.3 + 0.2
            old = before.kl_statistics(x, y, standardized_knn=True)
            new = kl_statistics.kl_statistics(x, y, standardized_knn=True)
            worst["kl_statistics"] = max(
                worst["kl_statistics"], _relative(old, new)
            )
    for d in (1, 3, 5, 9, 16):
        for n in (200, 5000, 12000):
            rng = np.random.default_rng([d, n, 1])
            x = rng.normal(size=(n, d))
            y = rng.gamma(2, size=(n, d))
            old = rule_before.excess_estimate(x, y, k=20)
            new = kl_excess.excess_estimate(x, y, k=20)
            worst["excess_estimate"] = max(
                worst["excess_estimate"], _relative(old, new)
            )
    return worst


def _time(pair, repeats):
    """Interleaved best (wall, CPU) seconds of the two functions."""
    for function in pair:
        function()
    times = [[], []]
    for _ in range(repeats):
        for i, function in enumerate(pair):
            start, cpu = time.perf_counter(), time.process_time()
            function()
            times[i].append(
                (time.perf_counter() - start, time.process_time() - cpu)
            )
    return [min(t) for t in times]


def _queries(module, points, queries, k):
    return lambda: module.nearest_distances(points, queries, k)


def _copula(module, x, y):
    return lambda: module.copula_normal(x, y)


def _rule(module, x, y):
    return lambda: module.excess_estimate(x, y, k=20)


def timing(before, rule_before, repeats):
    rng = np.random.default_rng(0)
    rows = []
    # (d, points, k): the model's queries at n = 1,000 (k = 10, within
    # sets k + 1) and the rule's blocks (k = 20).
    for d, n, k in ((1, 10000, 21), (5, 1000, 11), (5, 4000, 21)) + (
        (8, 4000, 21),
        (16, 1000, 11),
        (16, 2000, 21),
    ):
        x = rng.normal(size=(n, d))
        pair = [_queries(m, x, x, k) for m in (before, kl_statistics)]
        rows.append({"step": "nearest_distances", "d": d, "n": n, "k": k})
        rows[-1]["before"], rows[-1]["now"] = _time(pair, repeats)
    for d, n in ((16, 1000), (16, 10000)):
        x, y = rng.normal(size=(n, d)), rng.normal(size=(n, d))
        pair = [_copula(m, x, y) for m in (before, kl_statistics)]
        rows.append({"step": "copula_normal", "d": d, "n": n})
        rows[-1]["before"], rows[-1]["now"] = _time(pair, repeats)
    for d in (4, 5, 16):
        x = rng.normal(size=(20000, d))
        y = rng.normal(size=(20000, d)) + 0.3
        pair = [_rule(m, x, y) for m in (rule_before, kl_excess)]
        rows.append({"step": "excess_estimate", "d": d, "n": 20000})
        rows[-1]["before"], rows[-1]["now"] = _time(pair, max(1, repeats // 5))
    for row in rows:
        print(row, flush=True)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rev", required=True)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args(argv)
    before, rule_before = modules_at(args.rev)
    out = {"rev": args.rev, "load": os.getloadavg()}
    out["largest_relative_difference"] = equality(before, rule_before)
    print(out, flush=True)
    out["rows"] = timing(before, rule_before, args.repeats)
    out["load_after"] = os.getloadavg()
    with open(ROOT / "refined_kl_queries.json", "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
