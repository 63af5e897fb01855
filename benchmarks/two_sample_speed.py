"""Seconds per pair of `same_distribution_probability` at n = 1e3 to 1e5.

The default preset (`two_sample_statistics`) on pairs of standard normal
sets with n points each in d = 8 and d = 16, after a first call that
loads the preset; wall-clock and process CPU seconds, the median of
`--repeats` calls. Every library runs on one thread unless `--threads`.

    KERAS_BACKEND=torch python benchmarks/two_sample_speed.py

Writes `benchmarks/results/two_sample_statistics/speed_<backend>.json`.
"""

import argparse
import json
import os
import pathlib
import time

RESULTS = pathlib.Path(__file__).parent / "results" / "two_sample_statistics"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[1000, 10000, 100000]
    )
    parser.add_argument("--dims", type=int, nargs="+", default=[8, 16])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(args.threads)
    import keras
    import numpy as np

    from keras_msets import estimators

    rng = np.random.default_rng(0)
    estimators.same_distribution_probability(
        rng.normal(size=(50, 2)), rng.normal(size=(50, 2))
    )
    rows = []
    for d in args.dims:
        for n in args.sizes:
            x, y = rng.normal(size=(n, d)), rng.normal(size=(n, d))
            wall, cpu = [], []
            for _ in range(args.repeats):
                start, start_cpu = time.perf_counter(), time.process_time()
                estimators.same_distribution_probability(x, y)
                wall.append(time.perf_counter() - start)
                cpu.append(time.process_time() - start_cpu)
            rows.append(
                {
                    "n": n,
                    "d": d,
                    "wall_seconds": float(np.median(wall)),
                    "cpu_seconds": float(np.median(cpu)),
                }
            )
            print(rows[-1], flush=True)
    backend = keras.backend.backend()
    RESULTS.mkdir(parents=True, exist_ok=True)
    record = {
        "backend": backend,
        "threads": args.threads,
        "load_average": os.getloadavg(),
        "cpu_count": os.cpu_count(),
        "rows": rows,
    }
    path = RESULTS / f"speed_{backend}.json"
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(path)


if __name__ == "__main__":
    main()
