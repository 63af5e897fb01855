"""Error of the refined KL preset's recipe against the training data used.

Trains the `knn_refined_kl_divergence` model (same architecture, budget
and seed as its recipe) on the first 1,000, 2,000, 4,000 and 8,000 training
pairs of `keras_msets.data.kl_problems` and reports the mean absolute
error of the median and the coverage of the 90 % interval (quantiles
0.05 and 0.95) on the 800 validation pairs, into
`results/refined_kl_training_curve.json`: how much more data buys.

    KERAS_BACKEND=torch python benchmarks/refined_kl_training_curve.py
"""

import importlib.util
import json
import pathlib
import time

import keras
import numpy as np

from keras_msets.training.tasks.statistics_regression import PinballLoss
from keras_msets.training.tasks.statistics_regression import (
    estimates_from_quantiles,
)
from keras_msets.training.tasks.statistics_regression import residual_target

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "refined_kl_training_curve.json"
ROWS = (1000, 2000, 4000, 8000)


def _recipe():
    path = ROOT / "zoo" / "knn_refined_kl_divergence" / "recipe.py"
    spec = importlib.util.spec_from_file_location("kl_recipe", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    module = _recipe()
    recipe = module.RECIPE
    budget = recipe.full_budget()
    train, valid = module.table("train"), module.table("validation")
    quantiles = module.QUANTILES
    low, high = quantiles.index(0.05), quantiles.index(0.95)
    results = json.loads(OUT.read_text()) if OUT.exists() else {}
    for rows in ROWS:
        if str(rows) in results:
            continue
        keras.utils.set_random_seed(budget["seed"])
        model = recipe.build_model()
        x = train["features"][:rows].astype("float32")
        y = residual_target(train["truth"][:rows], train["base"][:rows])
        model.adapt(x)
        model.compile(
            optimizer=keras.optimizers.Adam(budget["learning_rate"]),
            loss=PinballLoss(quantiles),
        )
        start = time.time()
        model.fit(
            x,
            y.astype("float32"),
            epochs=budget["epochs"],
            batch_size=budget["batch_size"],
            verbose=0,
        )
        outputs = model.predict(valid["features"].astype("float32"), verbose=0)
        values = estimates_from_quantiles(outputs, valid["base"])
        truth = valid["truth"]
        median = values[:, quantiles.index(0.5)]
        inside = (values[:, low] <= truth) & (truth <= values[:, high])
        results[str(rows)] = {
            "validation_mae": float(np.mean(np.abs(median - truth))),
            "validation_base_mae": float(
                np.mean(np.abs(np.maximum(valid["base"], 0) - truth))
            ),
            "coverage_90": float(np.mean(inside)),
            "epochs": budget["epochs"],
            "seconds": time.time() - start,
            "backend": keras.backend.backend(),
        }
        print(rows, results[str(rows)], flush=True)
        OUT.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
