"""Cost of `knn_refined_mutual_information` with and without its
whole-sample check.

Times `mutual_information(x, y, interval=0.9)` through the installed
preset and through a copy of it whose metadata lacks
`serves["whole_sample_check"]` (same weights), one after the other, on one
pair `y = A x + noise` with `d_x`, `d_y` given as `--pairs` (`A` the
`[d_y, d_x]` matrix of ones on its diagonal), after a first call; minimum
over `--repeats` calls (one call from `--single-from` rows on) of the
wall-clock and the CPU time of the process. Each row also records whether
the rule is within its cost budget (`whole_sample_affordable`) and the CPU
time of the rule alone (`whole_sample_estimate` with the arguments the
preset serves, one call). Rows already
in the output file for the same backend are kept and not re-measured.
Into `results/estimator_benchmark/refined_mi_check_speed_<backend>.json`.

    OMP_NUM_THREADS=1 KERAS_BACKEND=torch python \
        benchmarks/refined_mi_check_speed.py
"""

import argparse
import functools
import json
import os
import pathlib
import shutil
import tempfile
import time
import warnings

import numpy as np

ROOT = pathlib.Path(__file__).parent / "results" / "estimator_benchmark"
PRESET = "knn_refined_mutual_information"


def without_check(folder, target):
    """A copy of the preset `folder` without the whole-sample check."""
    shutil.copytree(folder, target)
    path = target / "metadata.json"
    metadata = json.loads(path.read_text(encoding="utf-8"))
    metadata["serves"].pop("whole_sample_check")
    path.write_text(json.dumps(metadata, indent=2), encoding="utf-8")
    return target


def timed(function, repeats):
    times, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        function()
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return float(np.min(times)), float(np.min(cpu))


def sample_pair(rng, n, dim_x, dim_y):
    """`x` `[n, dim_x]` standard normal, `y = A x + noise` `[n, dim_y]`."""
    x = rng.normal(size=(n, dim_x))
    mixing = np.eye(dim_y, dim_x)
    return x, x @ mixing.T + rng.normal(size=(n, dim_y))


def main(argv=None):
    import keras

    from keras_msets import estimators
    from keras_msets import zoo
    from keras_msets.stats import mi_statistics

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[1000, 10000, 100000]
    )
    parser.add_argument(
        "--pairs",
        nargs="+",
        default=["1,1", "3,3", "5,5", "2,4", "25,25"],
        help="d_x,d_y of each pair",
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--single-from", type=int, default=100000)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    backend = keras.backend.backend()
    path = pathlib.Path(
        args.out or ROOT / f"refined_mi_check_speed_{backend}.json"
    )
    out = {"backend": backend, "rows": []}
    if path.exists():
        stored = json.loads(path.read_text(encoding="utf-8"))
        if stored.get("backend") == backend and "dim_x" in str(stored):
            out = stored
    done = {(r["dim_x"], r["dim_y"], r["n"]) for r in out["rows"]}
    out.setdefault("load", os.getloadavg())
    installed = pathlib.Path(zoo.info(PRESET)["path"])
    # The rule alone as the preset serves it (k, bias allowance, rows).
    arguments = zoo.info(PRESET)["serves"]["whole_sample_check"]["arguments"]
    out["rule_arguments"] = arguments
    with tempfile.TemporaryDirectory() as tmp:
        plain = without_check(installed, pathlib.Path(tmp) / PRESET)
        for pair in args.pairs:
            dim_x, dim_y = (int(v) for v in pair.split(","))
            for n in args.sizes:
                if (dim_x, dim_y, n) in done:
                    continue
                rng = np.random.default_rng([n, dim_x, dim_y])
                x, y = sample_pair(rng, n, dim_x, dim_y)
                repeats = 1 if n >= args.single_from else args.repeats
                row = {
                    "dim_x": dim_x,
                    "dim_y": dim_y,
                    "n": n,
                    "repeats": repeats,
                    "load": os.getloadavg(),
                    "rule_affordable": mi_statistics.whole_sample_affordable(
                        n, dim_x + dim_y
                    ),
                }
                start = time.process_time()
                mi_statistics.whole_sample_estimate(x, y, **arguments)
                row["rule_cpu_seconds"] = time.process_time() - start
                for label, model in (("check", PRESET), ("plain", plain)):
                    call = functools.partial(
                        estimators.mutual_information,
                        x,
                        y,
                        model=model,
                        interval=0.9,
                    )
                    call()
                    row[label] = call()._asdict()
                    seconds, cpu = timed(call, repeats)
                    row[label].update(seconds=seconds, cpu_seconds=cpu)
                out["rows"].append(row)
                out["load_after"] = os.getloadavg()
                path.write_text(json.dumps(out, indent=1), encoding="utf-8")
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
