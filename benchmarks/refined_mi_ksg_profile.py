"""Where the time of the whole-sample KSG (`keras_msets.stats.ksg._ksg_tree`,
k = 3) goes as n grows: the joint max-norm k-nearest-neighbour query,
each side's marginal count (k-d tree ball counts, or sorted columns for
one column) with its mean count, and the Gaussian reference draws with
their copula-normal scores, one call each (CPU time), on one pair
`y = A x + noise` (as `refined_mi_check_speed.py`) in copula-normal
coordinates. Numpy and scipy only: the same on every backend. Into
`results/estimator_benchmark/refined_mi_ksg_profile.json`.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/refined_mi_ksg_profile.py
"""

import argparse
import json
import os
import pathlib
import time

import numpy as np
from refined_mi_check_speed import sample_pair
from scipy.spatial import cKDTree

from keras_msets.stats import ksg
from keras_msets.stats import mi_statistics

ROOT = pathlib.Path(__file__).parent / "results" / "estimator_benchmark"


def cpu(function):
    start = time.process_time()
    value = function()
    return time.process_time() - start, value


def profile(zx, zy, k=3):
    """CPU seconds of each part of `_ksg_tree` at one `k`, as it does
    them, and the mean marginal counts."""
    joint = np.concatenate([zx, zy], axis=1)
    seconds, nearest = cpu(
        lambda: cKDTree(joint).query(joint, k=k + 1, p=np.inf)[0][:, k]
    )
    row = {"joint_query": seconds}
    radius = nearest * (1 - 1e-9)
    for label, side in (("x", zx), ("y", zy)):
        if side.shape[1] == 1:
            column = side[:, 0]

            def count(column=column):
                ordered = np.sort(column)
                return np.searchsorted(
                    ordered, column + radius, "left"
                ) - np.searchsorted(ordered, column - radius, "right")
        else:
            leaf = min(
                ksg.SIDE_LEAF * side.shape[1],
                ksg.MAX_SIDE_LEAF,
            )

            def count(side=side, leaf=leaf):
                return cKDTree(side, leafsize=leaf).query_ball_point(
                    side, radius, p=np.inf, return_length=True
                )

        seconds, counts = cpu(count)
        row[f"count_{label}"] = seconds
        row[f"mean_count_{label}"] = float(np.mean(counts) - 1)
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[2500, 5000, 10000, 20000]
    )
    parser.add_argument("--pairs", nargs="+", default=["1,1", "3,3", "2,4"])
    args = parser.parse_args(argv)
    out = {"load": os.getloadavg(), "rows": []}
    for pair in args.pairs:
        dim_x, dim_y = (int(v) for v in pair.split(","))
        for n in args.sizes:
            rng = np.random.default_rng([n, dim_x, dim_y])
            x, y = sample_pair(rng, n, dim_x, dim_y)
            zx = mi_statistics.copula_normal(x)
            zy = mi_statistics.copula_normal(y)
            corr = mi_statistics.shrunk_correlation(
                np.concatenate([zx, zy], axis=1)
            )
            row = {"dim_x": dim_x, "dim_y": dim_y, "n": n, **profile(zx, zy)}
            draw = np.random.default_rng(0)
            chol = np.linalg.cholesky(corr)
            row["reference_draws"] = cpu(
                lambda: mi_statistics.copula_normal(
                    draw.normal(size=(n, corr.shape[0])) @ chol.T  # noqa: B023
                )
            )[0]
            row["ksg_tree"] = cpu(
                lambda: ksg._ksg_tree(zx, zy, (3,))  # noqa: B023
            )[0]
            out["rows"].append(row)
            print(json.dumps(row), flush=True)
    out["load_after"] = os.getloadavg()
    path = ROOT / "refined_mi_ksg_profile.json"
    path.write_text(json.dumps(out, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
