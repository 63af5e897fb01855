"""The statistics tables of `keras_msets.data.kl_problems` for the current
`kl_statistics.STATISTICS`, from the cached tables of the previous set.

The previous tables (`kl_statistics_v1`, columns `OLD_STATISTICS`) hold
the k-NN estimates on pooled copula-normal and standardized coordinates,
the shrunk plug-ins, the shape and size columns. The current set adds
the k-NN estimates of the Gaussian reference pair
(`kl_statistics.gaussian_reference`) and the bias-corrected copula
plug-in (`plugin_corrected`), and leaves out the standardized k-NN
estimates: each row's pair is drawn again from its seed
(`kl_problems.training_pair`, the same draws), and only the new columns
are computed. `--with-standardized` keeps the standardized k-NN
estimates too, in the column order `refined_kl_design.V2_STATISTICS`
(the tables the design candidates were trained on, `kl_statistics_v2`;
the current tables, `kl_statistics_v3`, are those columns in the order
of `STATISTICS`). `--check N` recomputes the first `N` rows of each
split from scratch with `kl_statistics` and prints the largest
difference. The rows of the benchmark's development pairs
(`results/refined_kl_design/statistics_dev.npz`) are upgraded the same
way into `statistics_dev_v2.npz` (with the standardized estimates).

    nice -n 10 python benchmarks/refined_kl_table_upgrade.py --check 3
    nice -n 10 python benchmarks/refined_kl_table_upgrade.py \\
        --with-standardized
"""

import argparse
import os
import pathlib
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from keras_msets.data import kl_problems  # noqa: E402
from keras_msets.stats import kl_statistics as stats  # noqa: E402

OLD_STATISTICS = (
    *(f"knn_copula_k{k}" for k in stats.NEIGHBOURS),
    *(f"knn_standard_k{k}" for k in stats.NEIGHBOURS),
    "plugin_copula",
    "plugin_standard",
    "mean_abs_skew",
    "mean_log_kurtosis",
    "max_log_kurtosis",
    "dim",
    "log_n",
    "log_m",
    "log_block",
)
CACHE = pathlib.Path(
    os.environ.get(
        "KERAS_MSETS_KL_STATISTICS",
        os.path.expanduser("~/.cache/keras_msets/kl_statistics_v3"),
    )
)
OLD_CACHE = CACHE.parent / "kl_statistics_v1"
WIDE_CACHE = CACHE.parent / "kl_statistics_v2"
DEV = pathlib.Path(__file__).parent / "results/refined_kl_design"


def upgrade_row(old, x, y, seed=0, names=None):
    """The current statistics (or the columns `names`) of the pair `(x, y)`
    whose previous row is `old` (`OLD_STATISTICS`): the new columns
    computed, the others copied."""
    x, y = stats._check(x, y)
    cx, cy = stats.copula_normal(x, y)
    rx, ry = stats.gaussian_reference(cx, cy, seed)
    reference, _ = stats._blocked_knn(rx, ry, seed)
    corrected = stats.corrected_gaussian_kl(cx, cy)
    if not np.isfinite(corrected):
        corrected = old[OLD_STATISTICS.index("plugin_copula")]
    values = dict(zip(OLD_STATISTICS, old, strict=True))
    values.update(
        zip(
            (f"knn_reference_k{k}" for k in stats.NEIGHBOURS),
            reference,
            strict=True,
        )
    )
    values["plugin_corrected"] = corrected
    return np.array([values[name] for name in names or stats.STATISTICS])


def upgrade_split(split, cache=CACHE, names=None):
    low, high = kl_problems.SPLIT_SEEDS[split]
    folder = cache / split
    folder.mkdir(parents=True, exist_ok=True)
    for start in range(low, high, kl_problems.CHUNK):
        path = folder / f"chunk_{start}.npz"
        if path.exists():
            continue
        with np.load(OLD_CACHE / split / f"chunk_{start}.npz") as data:
            rows = {k: data[k] for k in data.files}
        features = []
        for seed, old in zip(rows["seed"], rows["features"], strict=True):
            x, y, _ = kl_problems.training_pair(int(seed))
            features.append(upgrade_row(old, x, y, names=names))
        rows["features"] = np.asarray(features)
        temporary = folder / f"chunk_{start}.tmp.npz"
        np.savez(temporary, **rows)
        os.replace(temporary, path)
        print(split, start, flush=True)


def upgrade_dev():
    from estimator_bench import problems as problem_sets
    from refined_kl_design import V2_STATISTICS

    path = DEV / "statistics_dev_v2.npz"
    if path.exists():
        return
    with np.load(DEV / "statistics_dev.npz") as data:
        rows = {k: data[k] for k in data.files}
    by_name = {p.name: p for p in problem_sets.kl_problems()}
    features = []
    for old, name, n, seed in zip(
        rows["statistics"],
        rows["problem"],
        rows["n"],
        rows["seed"],
        strict=True,
    ):
        x, y = by_name[str(name)].sample(int(n), int(seed))
        features.append(upgrade_row(old, x, y, names=V2_STATISTICS))
    rows["statistics"] = np.asarray(features)
    np.savez(path, **rows)
    print("dev", rows["statistics"].shape, flush=True)


def check(rows_per_split):
    for split in kl_problems.SPLIT_SEEDS:
        low = kl_problems.SPLIT_SEEDS[split][0]
        with np.load(CACHE / split / f"chunk_{low}.npz") as data:
            table = data["features"][:rows_per_split]
        worst = 0.0
        for i, row in enumerate(table):
            x, y, _ = kl_problems.training_pair(low + i)
            fresh = stats.kl_statistics(x, y)
            worst = max(worst, float(np.max(np.abs(fresh - row))))
        print(f"{split}: largest difference {worst:.2e}", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", type=int, default=0)
    parser.add_argument(
        "--splits", nargs="+", default=list(kl_problems.SPLIT_SEEDS)
    )
    parser.add_argument("--no-dev", action="store_true")
    parser.add_argument("--with-standardized", action="store_true")
    args = parser.parse_args(argv)
    if not args.no_dev:
        upgrade_dev()
    for split in args.splits:
        if args.with_standardized:
            from refined_kl_design import V2_STATISTICS

            upgrade_split(split, WIDE_CACHE, V2_STATISTICS)
        else:
            upgrade_split(split)
    if args.check:
        check(args.check)


if __name__ == "__main__":
    main()
