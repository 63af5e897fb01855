"""A recipe's training run is reproducible: two runs with the same seed
give the same weights, bit for bit, whatever the global random state
before them (the refined estimators' recipes train this way)."""

import random

import keras
import numpy as np

from keras_msets import models
from keras_msets.training import Recipe
from keras_msets.training.tasks import StatisticsRegressionTask
from keras_msets.training.tasks.statistics_regression import SPLITS


def _table(split):
    rng = np.random.default_rng(SPLITS.index(split))
    features = rng.uniform(0.1, 3.0, size=(96, 3))
    truth = 2.0 * features[:, 0] * np.exp(0.1 * rng.normal(size=96))
    return {"features": features, "base": features[:, 0], "truth": truth}


RECIPE = Recipe(
    name="toy_refined",
    task=StatisticsRegressionTask(
        "toy_refined", _table, ("a", "b", "c"), quantiles=(0.1, 0.5, 0.9)
    ),
    build_model=lambda: models.QuantileRegressor(
        3, (0.1, 0.5, 0.9), hidden_units=(8,), dropout=0.1, name="toy"
    ),
    budget={"epochs": 2, "batch_size": 32, "seed": 3},
    summary="A toy refined estimator.",
)


def _trained_weights(folder, global_seed):
    # Another process starts with another global random state.
    random.seed(global_seed)
    np.random.seed(global_seed)
    keras.utils.set_random_seed(global_seed)
    path = RECIPE.train(output_dir=folder, verbose=0)
    model = RECIPE.build_model()
    model.adapt(_table("train")["features"])
    model.load_weights(path / "model.weights.h5")
    return model.get_weights()


def test_two_runs_give_the_same_weights_bitwise(tmp_path):
    first = _trained_weights(tmp_path / "a", 1)
    second = _trained_weights(tmp_path / "b", 2)
    assert len(first) == len(second) > 0
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
