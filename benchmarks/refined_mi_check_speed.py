"""Cost of the whole-sample check of `knn_refined_mutual_information`.

Times `mutual_information(x, y, interval=0.9)` through the installed
preset and through a copy of it whose metadata lacks
`serves["whole_sample_check"]` (same weights), one after the other, on one pair
`y = x + noise` with d_x = d_y = d, after a first call; minimum over
`--repeats` calls of the wall-clock and the CPU time of the process.
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


def main(argv=None):
    import keras

    from keras_msets import estimators
    from keras_msets import zoo

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--dims", type=int, nargs="+", default=[1, 5, 25])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    installed = pathlib.Path(zoo.info(PRESET)["path"])
    rng = np.random.default_rng(0)
    out = {"backend": keras.backend.backend(), "load": os.getloadavg()}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        plain = without_check(installed, pathlib.Path(tmp) / PRESET)
        for d in args.dims:
            for n in args.sizes:
                x = rng.normal(size=(n, d))
                y = x + rng.normal(size=(n, d))
                row = {"d": d, "n": n}
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
                    seconds, cpu = timed(call, args.repeats)
                    row[label].update(seconds=seconds, cpu_seconds=cpu)
                rows.append(row)
                print(json.dumps(row), flush=True)
    out["rows"] = rows
    out["load_after"] = os.getloadavg()
    path = ROOT / f"refined_mi_check_speed_{out['backend']}.json"
    path.write_text(json.dumps(out, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
