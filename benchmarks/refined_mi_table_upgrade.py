"""The statistics tables of `keras_msets.data.mi_problems` for the current
`FEATURES`, from the cached tables of the previous feature set.

The previous tables (`mi_statistics_v3`) hold every current statistic
but the canonical ones (`canonical_top`, `canonical_share`): each row's
sample is drawn again from its seed sequence (`mi_problems.
table_sample`, the draws of `table_row`) and only those two columns are
computed (the KSG counts, the costly part, are not). `--check N`
recomputes the first `N` rows of each split from scratch with
`table_row` and prints the largest difference.

    nice -n 10 python benchmarks/refined_mi_table_upgrade.py --check 8
"""

import argparse
import pathlib

import numpy as np

from keras_msets.data import mi_problems
from keras_msets.stats import mi_statistics as stats

NEW_FEATURES = ("canonical_top", "canonical_share")
OLD_FEATURES = tuple(f for f in stats.FEATURES if f not in NEW_FEATURES)


def new_columns(split, index):
    """The canonical statistics of row `index` of `split`."""
    _, x, y = mi_problems.table_sample(split, index)
    x, y = stats.check_pair(x, y)
    z = np.concatenate([stats.copula_normal(x), stats.copula_normal(y)], 1)
    corr = stats.shrunk_correlation(z)
    return stats.canonical_information(corr, x.shape[1])


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
        new = np.array(
            [new_columns(split, first + i) for i in range(len(table["truth"]))]
        )
        for j, name in enumerate(NEW_FEATURES):
            old[name] = new[:, j]
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
    parser.add_argument("--old", default=cache.parent / "mi_statistics_v3")
    parser.add_argument("--new", default=cache)
    parser.add_argument("--check", type=int, default=0)
    args = parser.parse_args(argv)
    for split in mi_problems.SPLITS:
        upgrade(args.old, args.new, split)
        if (
            args.check
            and (pathlib.Path(args.old) / f"mi_{split}_00000.npz").exists()
        ):
            check(args.new, split, args.check)


if __name__ == "__main__":
    main()
