"""Validation error of the refined MI model against width, data and epochs.

Trains `QuantileRegressor`s on the statistics table of
`keras_msets.data.mi_problems` (the rows of the preset's recipe) with a
fraction of the training rows and several widths, and measures on the
VALIDATION rows (never the test rows, never the benchmark) the mean
absolute error of the median, that of the base statistic (the copula
Gaussian plug-in) and the coverage of the 90 % interval, after each
number of epochs in `--epochs`. The widths and epochs of the recipe are
chosen from this table.

    KERAS_BACKEND=torch nice -n 10 python benchmarks/refined_mi_training.py

Results: `results/refined_mi_training.json`.
"""

import argparse
import json
import pathlib

import keras
import numpy as np

from keras_msets.data import mi_problems
from keras_msets.models import QuantileRegressor
from keras_msets.stats import mi_statistics
from keras_msets.training.tasks import PinballLoss
from keras_msets.training.tasks.statistics_regression import (
    estimates_from_quantiles,
)
from keras_msets.training.tasks.statistics_regression import residual_target

QUANTILES = (0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.975)
RESULTS = pathlib.Path(__file__).parent / "results"


def _table(split):
    rows = mi_problems.DEFAULT_ROWS[split]
    table = mi_problems.statistics_table(
        split, rows, mi_problems.default_cache_dir()
    )
    target = residual_target(table["truth"], table["base"])
    return table, table["features"].astype("float32"), target


def _measure(model, table, features):
    outputs = np.asarray(model.predict(features, verbose=0))
    values = estimates_from_quantiles(outputs, table["base"])
    truth = table["truth"]
    low, high = values[:, 1], values[:, -2]  # 0.05 and 0.95
    return {
        "mae": float(np.mean(np.abs(values[:, 4] - truth))),
        "coverage_90": float(np.mean((low <= truth) & (truth <= high))),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--widths", type=int, nargs="+", default=[64, 128])
    parser.add_argument(
        "--fractions", type=float, nargs="+", default=[0.25, 0.5, 1.0]
    )
    parser.add_argument(
        "--epochs", type=int, nargs="+", default=[50, 100, 200, 300]
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    train, x, y = _table("train")
    validation, xv, _ = _table("validation")
    base_mae = float(np.mean(np.abs(validation["base"] - validation["truth"])))
    runs = []
    for width in args.widths:
        for fraction in args.fractions:
            keras.utils.set_random_seed(args.seed)
            rows = int(round(fraction * len(x)))
            model = QuantileRegressor(
                len(mi_statistics.FEATURES),
                QUANTILES,
                hidden_units=(width, width),
            )
            model.adapt(x[:rows])
            model.compile(
                optimizer=keras.optimizers.Adam(1e-3),
                loss=PinballLoss(QUANTILES),
            )
            done = 0
            for epochs in args.epochs:
                model.fit(
                    x[:rows],
                    y[:rows],
                    batch_size=64,
                    epochs=epochs - done,
                    verbose=0,
                )
                done = epochs
                run = {
                    "width": width,
                    "rows": rows,
                    "epochs": epochs,
                    "steps": epochs * int(np.ceil(rows / 64)),
                    **_measure(model, validation, xv),
                }
                runs.append(run)
                print(run, flush=True)
                _write(base_mae, len(xv), runs)


def _write(base_mae, validation_rows, runs):
    out = {
        "backend": keras.backend.backend(),
        "validation_rows": validation_rows,
        "base_mae": base_mae,
        "runs": runs,
    }
    with open(RESULTS / "refined_mi_training.json", "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
