"""The statistics tables of `keras_msets.data.mi_problems` for the current
`FEATURES`, from the cached tables of the previous feature set.

The previous tables (`mi_statistics_v2`) hold, per row, the KSG
estimates, the Gaussian-reference KSG estimates (on one block), the
shrunk plug-in, the kurtosis and size columns. The current feature set
adds `plugin_corrected` and computes the reference on as many blocks as
the sample's KSG, then the differences `ksg_excess_k*`: each row's
sample is drawn again from its seed sequence (the same draws as
`mi_problems.table_row`), `plugin_corrected` is computed, and the
reference again where the sample has several blocks (with one block it
is unchanged); the sample's own KSG counts are not recomputed.
`--check N` recomputes the first `N` rows of each split from scratch
with `table_row` and prints the largest difference.

    nice -n 10 python benchmarks/refined_mi_table_upgrade.py --check 20
"""

import argparse
import pathlib

import numpy as np

from keras_msets.data import mi_problems
from keras_msets.stats import mi_statistics as stats

OLD_FEATURES = (
    *(f"ksg_k{k}" for k in stats.NEIGHBOURS),
    *(f"ksg_gaussian_k{k}" for k in stats.NEIGHBOURS),
    "plugin",
    "log_kurtosis_joint",
    "log_kurtosis_x",
    "log_kurtosis_y",
    "log_n",
    "log_block",
    "dim_x",
    "dim_y",
    "log_dim_x",
    "log_dim_y",
)


def new_columns(split, index):
    """`plugin_corrected` and the Gaussian-reference KSG of row `index` of
    `split` (the row's sample drawn as `mi_problems.table_row` draws it),
    the reference only where the sample is cut into several blocks (with
    one block it is the previous reference: None)."""
    rng = np.random.default_rng(
        [mi_problems.SEED_TAG, mi_problems.SPLITS[split], index]
    )
    problem = mi_problems.random_problem(
        rng, **mi_problems.EXTRA.get(split, {})
    )
    n = int(
        round(
            mi_problems._log_uniform(rng, mi_problems.MIN_N, mi_problems.MAX_N)
        )
    )
    x, y = problem.sample(n, rng)
    x, y = stats.check_pair(x, y)
    zx, zy = stats.copula_normal(x), stats.copula_normal(y)
    value = stats.corrected_gaussian_information(zx, zy)
    if np.isnan(value):
        value = stats.gaussian_copula_statistics(zx, zy)[0]
    size = stats.block_size(x.shape[1] + y.shape[1])
    blocks = int(np.ceil(n / size))
    reference = None
    if blocks > 1:
        corr = stats._shrunk_correlation(np.concatenate([zx, zy], axis=1))
        reference = stats.gaussian_reference_ksg(
            corr, x.shape[1], int(round(n / blocks)), index, blocks
        )
    return value, reference


def upgrade(old_dir, new_dir, split, log=print):
    old_dir, new_dir = pathlib.Path(old_dir), pathlib.Path(new_dir)
    new_dir.mkdir(parents=True, exist_ok=True)
    for path in sorted(old_dir.glob(f"mi_{split}_[0-9]*.npz")):
        target = new_dir / path.name
        if target.exists():
            continue
        chunk = int(path.stem.rsplit("_", 1)[1])
        with np.load(path) as data:
            table = {key: data[key] for key in data.files}
        old = {
            name: table["features"][:, j] for j, name in enumerate(OLD_FEATURES)
        }
        first = chunk * mi_problems.CHUNK
        corrected = []
        for i in range(len(table["truth"])):
            value, reference = new_columns(split, first + i)
            corrected.append(value)
            if reference is not None:
                for k, r in zip(stats.NEIGHBOURS, reference, strict=True):
                    old[f"ksg_gaussian_k{k}"][i] = r
        old["plugin_corrected"] = np.array(corrected)
        for k in stats.NEIGHBOURS:
            old[f"ksg_excess_k{k}"] = (
                old[f"ksg_k{k}"] - old[f"ksg_gaussian_k{k}"]
            )
        table["features"] = np.stack(
            [old[name] for name in stats.FEATURES], axis=1
        )
        temporary = target.with_suffix(".tmp.npz")
        np.savez(temporary, **table)
        temporary.replace(target)
        log(f"{split}: {target.name}")


def check(new_dir, split, rows):
    table = mi_problems.statistics_table(split, rows, new_dir)
    fresh = np.array([mi_problems.table_row(split, i)[0] for i in range(rows)])
    difference = np.abs(fresh - table["features"][:rows])
    worst = difference.max(axis=0)
    print(split, "largest difference per feature:")
    for name, value in zip(stats.FEATURES, worst, strict=True):
        print(f"  {name}: {value:.2e}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    cache = mi_problems.default_cache_dir()
    parser.add_argument("--old", default=cache.parent / "mi_statistics_v2")
    parser.add_argument("--new", default=cache)
    parser.add_argument("--check", type=int, default=0)
    args = parser.parse_args(argv)
    for split in mi_problems.SPLITS:
        upgrade(args.old, args.new, split)
        if args.check:
            check(args.new, split, args.check)


if __name__ == "__main__":
    main()
