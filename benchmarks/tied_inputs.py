"""The default estimators on rounded and discrete data (ties).

Every pair has a known bound or value: a discrete pair (`x` uniform on
0..2, `y = x + b` with a fair bit `b`: I = H(Y) - log 2 = 0.636 nats),
Gaussian pairs with `y = x + 0.5 z` (I = 0.805) and Gaussian samples
shifted by 0.5 (KL = 0.125) rounded to grids from 0.001 to 1. Rounding
only loses information, so the true value of a rounded pair is at most
the unrounded one. Each pair is answered twice in the same run: with the
package's ranks (ties in a seeded random order, `keras_msets.stats.ranks`)
and with ties ranked by row order (a stable sort, the former code,
patched in here). Then, over 20 draws at n = 1,000, the mean
difference between the answer on a rounded pair and on the same pair
unrounded, for each ranking (a bias, where the single draws above move
with the estimator's own noise). Last, the two-sample estimator's mean
probability of one distribution for two samples of one discrete
distribution (ties in the radii it ranks), against continuous ones.

    KERAS_BACKEND=torch python benchmarks/tied_inputs.py \\
        --output benchmarks/results/tied_inputs.json
"""

import argparse
import json
import warnings
from pathlib import Path

import numpy as np

from keras_msets import estimators
from keras_msets.stats import kl_statistics
from keras_msets.stats import mi_statistics
from keras_msets.stats import ranks
from keras_msets.stats import two_sample_statistics

GRIDS = (0.0, 0.001, 0.01, 0.1, 0.5, 1.0)


def _row_order(values, salt=0, axis=0):
    return np.argsort(values, axis=axis, kind="stable")


_MODULES = (mi_statistics, kl_statistics, two_sample_statistics)


def _answer(fn, x, y, row_order):
    saved = [module.column_order for module in _MODULES]
    if row_order:
        for module in _MODULES:
            module.column_order = _row_order
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(fn(x, y))
    finally:
        for module, function in zip(_MODULES, saved, strict=True):
            module.column_order = function


def _grid(values, step):
    return values if step == 0 else np.round(values / step) * step


def cases():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, size=(500, 1)).astype(float)
    p = np.array([1, 2, 2, 1]) / 6
    yield (
        "mi",
        "discrete, n = 500",
        0.0,
        x,
        x + rng.integers(0, 2, size=(500, 1)),
        float(-np.sum(p * np.log(p)) - np.log(2)),
    )
    for n in (150, 1000, 20000):
        x = rng.normal(size=(n, 1))
        y = x + 0.5 * rng.normal(size=(n, 1))
        for step in GRIDS:
            yield (
                "mi",
                f"Gaussian, n = {n}",
                step,
                _grid(x, step),
                _grid(y, step),
                0.5 * np.log(5.0),
            )
    for n in (150, 1000, 20000):
        a = rng.normal(size=(n, 1))
        b = rng.normal(size=(n, 1)) + 0.5
        for step in GRIDS:
            yield (
                "kl",
                f"Gaussian shift, n = {n}",
                step,
                _grid(a, step),
                _grid(b, step),
                0.125,
            )


def paired_differences(seeds=20, n=1000):
    """Mean (and standard error) over `seeds` draws of the answer on a
    rounded pair minus that on the same pair unrounded, per ranking."""
    functions = {
        "mi": (estimators.mutual_information, lambda x, z: x + 0.5 * z),
        "kl": (estimators.kl_divergence, lambda x, z: z + 0.5),
    }
    rows = []
    for task, (fn, second) in functions.items():
        for step in (0.001, 0.01, 0.1):
            differences = {"random_ties": [], "row_order_ties": []}
            for seed in range(seeds):
                rng = np.random.default_rng(100 + seed)
                x = rng.normal(size=(n, 1))
                y = second(x, rng.normal(size=(n, 1)))
                whole = _answer(fn, x, y, False)
                for name in differences:
                    rounded = _answer(
                        fn,
                        _grid(x, step),
                        _grid(y, step),
                        name == "row_order_ties",
                    )
                    differences[name].append(rounded - whole)
            row = {"task": task, "n": n, "grid": step, "seeds": seeds}
            for name, values in differences.items():
                values = np.asarray(values)
                row[f"{name}_mean"] = float(values.mean())
                row[f"{name}_se"] = float(
                    values.std(ddof=1) / np.sqrt(len(values))
                )
            rows.append(row)
            print(json.dumps(row))
    return rows


def two_sample_same(seeds=20, n=1000):
    """The mean probability of one distribution that the default
    two-sample estimator gives two samples of one distribution: discrete
    (uniform on 0..2 per coordinate, d = 2), and continuous Gaussians for
    comparison, per ranking."""
    rows = []
    for case in ("discrete", "continuous"):
        answers = {"random_ties": [], "row_order_ties": []}
        for seed in range(seeds):
            rng = np.random.default_rng(200 + seed)
            if case == "discrete":
                x = rng.integers(0, 3, size=(n, 2)).astype(float)
                y = rng.integers(0, 3, size=(n, 2)).astype(float)
            else:
                x, y = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
            for name in answers:
                answers[name].append(
                    _answer(
                        estimators.same_distribution_probability,
                        x,
                        y,
                        name == "row_order_ties",
                    )
                )
        row = {"case": case, "n": n, "d": 2, "seeds": seeds}
        for name, values in answers.items():
            row[f"{name}_mean"] = float(np.mean(values))
        rows.append(row)
        print(json.dumps(row))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    functions = {
        "mi": estimators.mutual_information,
        "kl": estimators.kl_divergence,
    }
    rows = []
    for task, case, step, x, y, truth in cases():
        row = {
            "task": task,
            "case": case,
            "grid": step,
            "truth_or_bound": truth,
            "random_ties": _answer(functions[task], x, y, False),
            "row_order_ties": _answer(functions[task], x, y, True),
        }
        rows.append(row)
        print(json.dumps(row))
    result = {
        "command": "KERAS_BACKEND=torch python benchmarks/tied_inputs.py",
        "tie_seed": ranks.TIE_SEED,
        "rows": rows,
        "rounded_minus_unrounded": paired_differences(),
        "two_sample_same_distribution": two_sample_same(),
    }
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
