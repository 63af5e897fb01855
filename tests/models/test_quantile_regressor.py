import keras
import numpy as np
import pytest

from keras_msets import models
from keras_msets import testing
from keras_msets.training.tasks import PinballLoss
from keras_msets.training.tasks import StatisticsRegressionTask
from keras_msets.training.tasks.statistics_regression import (
    estimates_from_quantiles,
)
from keras_msets.training.tasks.statistics_regression import residual_target

LEVELS = (0.05, 0.25, 0.5, 0.75, 0.95)


def _features(rows=16, width=4, seed=0):
    return np.random.default_rng(seed).normal(size=(rows, width))


class QuantileRegressorTest(testing.TestCase):
    def _model(self, nonnegative_middle=False):
        model = models.QuantileRegressor(
            4,
            LEVELS,
            hidden_units=(8, 8),
            nonnegative_middle=nonnegative_middle,
        )
        model.adapt(_features(64) * 3.0 + 1.0)
        return model

    def test_quantiles_are_ordered_for_any_weights(self):
        for nonnegative in (False, True):
            model = self._model(nonnegative)
            rng = np.random.default_rng(1)
            for weight in model.trainable_weights:
                weight.assign(5.0 * rng.normal(size=weight.shape))
            out = model(_features(200, seed=2) * 10)
            out = keras.ops.convert_to_numpy(out)
            self.assertEqual(out.shape, (200, len(LEVELS)))
            self.assertTrue(np.all(np.diff(out, axis=1) >= 0))
            middle = out[:, len(LEVELS) // 2]
            # Free: of either sign; nonnegative: never below 0, while
            # the levels below it may be.
            self.assertEqual(bool(np.all(middle >= 0)), nonnegative)
            self.assertTrue(np.any(out[:, 0] < 0))

    def test_adapt_stores_the_feature_mean_and_scale(self):
        model = self._model()
        data = _features(64) * 3.0 + 1.0
        self.assertAllClose(
            keras.ops.convert_to_numpy(model.feature_mean),
            data.mean(axis=0),
            atol=1e-5,
        )
        self.assertAllClose(
            keras.ops.convert_to_numpy(model.feature_scale),
            data.std(axis=0),
            atol=1e-5,
        )

    def test_saving_round_trips(self):
        model = self._model(nonnegative_middle=True)
        data = _features().astype("float32")
        self.run_model_saving_test(model, data)
        self.run_weights_roundtrip_test(model, data)

    def test_bad_arguments_name_the_argument(self):
        with self.assertRaisesRegex(ValueError, "quantiles.*0.9, 0.5"):
            models.QuantileRegressor(3, (0.9, 0.5))
        with self.assertRaisesRegex(ValueError, "num_features"):
            models.QuantileRegressor(0)
        with self.assertRaisesRegex(ValueError, "nonnegative_middle=1"):
            models.QuantileRegressor(3, nonnegative_middle=1)
        model = models.QuantileRegressor(3)
        with self.assertRaisesRegex(ValueError, r"features.shape=\(5, 2\)"):
            model.adapt(np.zeros((5, 2)))


def test_pinball_loss_matches_numpy():
    y_true = np.array([0.0, 1.0, -2.0], dtype="float32")
    y_pred = np.array(
        [[-1.0, 0.0, 1.0], [0.0, 0.5, 2.0], [-3.0, -1.0, 0.0]], "float32"
    )
    levels = np.array([0.1, 0.5, 0.9])
    residual = y_true[:, None] - y_pred
    expected = np.maximum(levels * residual, (levels - 1) * residual).sum(1)
    loss = PinballLoss((0.1, 0.5, 0.9), reduction=None)
    got = keras.ops.convert_to_numpy(loss(y_true, y_pred))
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_targets_round_trip():
    truth = np.array([0.0, 0.3, 2.0, 9.0])
    base = np.array([0.1, 0.1, 3.0, 8.0])
    target = residual_target(truth, base)
    back = estimates_from_quantiles(target[:, None], base)[:, 0]
    np.testing.assert_allclose(back, truth, atol=1e-12)


def test_task_learns_a_known_correction(tmp_path):
    # truth = 2 * base: the median of the learned correction recovers it,
    # and the interval of the outer quantiles holds most of the rows.
    def table(split):
        rng = np.random.default_rng(
            ["train", "validation", "test"].index(split)
        )
        features = rng.uniform(0.1, 3.0, size=(128, 2))
        noise = np.exp(0.05 * rng.normal(size=128))
        truth = 2.0 * features[:, 0] * noise
        return {"features": features, "base": features[:, 0], "truth": truth}

    task = StatisticsRegressionTask(
        "toy",
        table,
        ("a", "b"),
        quantiles=(0.05, 0.5, 0.95),
        target="identity",
        defaults={"epochs": 25, "batch_size": 32, "learning_rate": 2e-2},
    )
    model = models.QuantileRegressor(2, (0.05, 0.5, 0.95), hidden_units=(16,))
    task.fit(model, task.budget(), tmp_path, verbose=0)
    metrics = task.evaluate(model, verbose=0)
    assert metrics["mae"] < 0.5 * metrics["base_mae"]
    assert metrics["interval_coverage"] > 0.6


def test_task_refuses_an_unknown_target():
    with pytest.raises(ValueError, match="target.*'log'"):
        StatisticsRegressionTask("t", None, ("a",), target="log")
