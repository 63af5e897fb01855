"""A task for estimators that refine classical statistics.

`StatisticsRegressionTask` trains a `keras_msets.models.QuantileRegressor`
on a table of precomputed statistics (one row per training sample pair)
with the pinball loss, to predict quantiles of a quantity with a known
answer (a mutual information, a KL divergence) as a correction to one of
the statistics, the "base" estimate:

- the target of a row is `transform(truth) - transform(base)`, with
  `transform` one of `TARGETS` (`"log1p"`, the default, for quantities
  >= 0 whose errors grow with their size: the model then predicts a
  relative correction; `"identity"`);
- `estimates_from_quantiles(outputs, base, target)` turns the model's
  quantiles back into the quantity's scale (monotone, so the quantiles
  stay ordered and an interval stays an interval).

How to use it for a new estimator (what the presets of
`mutual_information` do):

1. Write a statistics function (numpy, a fixed-length vector per sample
   pair; `keras_msets.stats.mi_statistics` is one) and a table builder
   `table(split)` that returns a dict with `"features"` `[rows,
   num_features]`, `"base"` `[rows]` and `"truth"` `[rows]` (optional
   extra columns such as `"family"` or `"n"` are carried along), for the
   splits `"train"`, `"validation"` and `"test"`; cache it on disk.
2. Declare the preset in `zoo/<name>/recipe.py`:

```python
RECIPE = Recipe(
    name="my_estimator",
    task=StatisticsRegressionTask(
        "my_estimator", table, FEATURES, serves={...}, description="..."
    ),
    build_model=lambda: QuantileRegressor(len(FEATURES), QUANTILES),
    budget={"epochs": 200, "batch_size": 64},
    summary="...",
    source=__file__,
)
```

`fit` sets the model's feature standardization from the training rows
(`QuantileRegressor.adapt`), trains with `keras.callbacks.
BackupAndRestore` in the run's work folder (an interrupted run resumes
at its last epoch) and keeps the weights of the epoch with the lowest
validation loss. `evaluate` reports the test rows' mean absolute error
of the median and of the base statistic, and the coverage of the
outermost quantile interval.
"""

import keras
import numpy as np

from keras_msets.models.quantile.quantile_regressor import check_quantiles
from keras_msets.training.task import Task

TARGETS = ("log1p", "identity")
SPLITS = ("train", "validation", "test")


def _forward(values, target):
    values = np.asarray(values, dtype="float64")
    if target == "log1p":
        return np.log1p(np.maximum(values, 0.0))
    return values


def _inverse(values, target):
    if target == "log1p":
        return np.expm1(np.maximum(values, 0.0))
    return values


def residual_target(truth, base, target="log1p"):
    """The regression target of rows with answers `truth` and base
    statistics `base`: `transform(truth) - transform(base)`."""
    return _forward(truth, target) - _forward(base, target)


def estimates_from_quantiles(outputs, base, target="log1p"):
    """The quantity's quantiles from the model's `outputs` `[rows, q]`
    and the rows' base statistics `base` `[rows]` (`"log1p"`: clipped at
    0, as the quantity is non-negative)."""
    outputs = np.asarray(outputs, dtype="float64")
    moved = _forward(base, target)[:, None] + outputs
    return _inverse(moved, target)


@keras.saving.register_keras_serializable(package="keras_msets")
class PinballLoss(keras.losses.Loss):
    """The pinball (quantile) loss summed over quantile levels.

    For level `q` and residual `r = y_true - y_pred[..., i]` the loss is
    `max(q r, (q - 1) r)`, whose minimizer is the `q`-quantile of
    `y_true`. `y_true` is `[batch]` or `[batch, 1]`; `y_pred` is
    `[batch, len(quantiles)]`.

    Args:
        quantiles: the levels of the columns of `y_pred`.
    """

    def __init__(self, quantiles=(0.05, 0.5, 0.95), name="pinball", **kwargs):
        super().__init__(name=name, **kwargs)
        self.quantiles = check_quantiles(quantiles)

    def call(self, y_true, y_pred):
        y_true = keras.ops.cast(y_true, y_pred.dtype)
        y_true = keras.ops.reshape(y_true, (-1, 1))
        levels = keras.ops.convert_to_tensor(self.quantiles, y_pred.dtype)
        residual = y_true - y_pred
        loss = keras.ops.maximum(levels * residual, (levels - 1) * residual)
        return keras.ops.sum(loss, axis=-1)

    def get_config(self):
        return {**super().get_config(), "quantiles": list(self.quantiles)}

    def __repr__(self):
        return f"PinballLoss(quantiles={list(self.quantiles)})"


class StatisticsRegressionTask(Task):
    """Quantiles of a known answer from a table of statistics.

    Args:
        name: the task's name (the preset metadata's `"task"`).
        table: a callable `table(split)` for `split` in `SPLITS`,
            returning a dict with `"features"`, `"base"` and `"truth"`
            arrays (module docstring).
        feature_names: the names of the feature columns.
        quantiles: the model's quantile levels (those of its
            `QuantileRegressor`).
        target: one of `TARGETS`.
        serves: the preset's `serves` record (what it estimates, for
            which dimensions and sizes; `keras_msets.training.preset_io.
            check_serves`), or None.
        description: one line: what the rows are (the card's data line).
        results_text: a callable returning markdown appended to the
            card's results (a benchmark table), or None.
        defaults: budget defaults of the task.
    """

    metrics = ()

    def __init__(
        self,
        name,
        table,
        feature_names,
        quantiles=(0.05, 0.5, 0.95),
        target="log1p",
        serves=None,
        description="",
        results_text=None,
        defaults=None,
    ):
        self.name = name
        self.table = table
        self.feature_names = tuple(feature_names)
        self.quantiles = check_quantiles(quantiles)
        if target not in TARGETS:
            raise ValueError(
                f"`target` must be one of {TARGETS}. Received: "
                f"target={target!r}"
            )
        self.target = target
        self._serves = serves
        self.description = description
        self.results_text = results_text
        self.loss = PinballLoss(self.quantiles)
        self.defaults = {
            "epochs": 200,
            "batch_size": 64,
            "learning_rate": 2e-3,
            **(defaults or {}),
        }

    def _rows(self, split):
        rows = self.table(split)
        features = np.asarray(rows["features"], dtype="float32")
        if features.ndim != 2 or features.shape[1] != len(self.feature_names):
            raise ValueError(
                f"The {split!r} table must have {len(self.feature_names)} "
                f"feature columns. Received: features.shape={features.shape}"
            )
        target = residual_target(rows["truth"], rows["base"], self.target)
        return features, target.astype("float32"), rows

    def training_data(self, budget):
        x, y, _ = self._rows("train")
        xv, yv, _ = self._rows("validation")
        return (x, y), (xv, yv)

    def callbacks(self, budget, output_dir):
        backup = keras.callbacks.BackupAndRestore(
            str(budget.get("checkpoint_dir") or output_dir) + "/backup"
        )
        self._best = _KeepBest()
        return [backup, self._best]

    def fit(self, model, budget, output_dir, verbose=2):
        features, _, _ = self._rows("train")
        model.adapt(features)
        record = super().fit(model, budget, output_dir, verbose)
        if getattr(self, "_best", None) is not None:
            self._best.restore(model)
            record["best_epoch"] = self._best.epoch
        return record

    def predict(self, model, features, base):
        """The quantity's quantiles `[rows, q]` for feature rows."""
        outputs = model.predict(
            np.asarray(features, dtype="float32"), verbose=0
        )
        return estimates_from_quantiles(outputs, base, self.target)

    def evaluate(self, model, verbose=1):
        features, _, rows = self._rows("test")
        quantiles = self.predict(model, features, rows["base"])
        truth = np.asarray(rows["truth"], dtype="float64")
        middle = quantiles[:, len(self.quantiles) // 2]
        inside = (quantiles[:, 0] <= truth) & (truth <= quantiles[:, -1])
        return {
            "test_rows": int(len(truth)),
            "mae": float(np.mean(np.abs(middle - truth))),
            "base_mae": float(np.mean(np.abs(rows["base"] - truth))),
            "interval_level": round(self.quantiles[-1] - self.quantiles[0], 6),
            "interval_coverage": float(np.mean(inside)),
        }

    def example_input(self):
        features, _, _ = self._rows("test")
        return features[:2]

    def serves(self):
        """The `serves` record given, completed with what the estimator
        needs to read the model: the feature names, the quantile levels,
        the target and each feature's range over the training rows
        (`feature_ranges`, for the out-of-distribution check)."""
        if self._serves is None:
            return None
        features, _, _ = self._rows("train")
        return self._complete(
            [
                [float(low), float(high)]
                for low, high in zip(
                    features.min(axis=0), features.max(axis=0), strict=True
                )
            ]
        )

    def serves_update(self, stored):
        """`serves()` with the stored `feature_ranges`: they describe the
        rows the weights were trained on, so a serves update keeps them
        and does not compute the training statistics again."""
        if self._serves is None or "feature_ranges" not in stored:
            return self.serves()
        return self._complete(stored["feature_ranges"])

    def _complete(self, feature_ranges):
        return {
            **self._serves,
            "features": list(self.feature_names),
            "quantiles": list(self.quantiles),
            "target": self.target,
            "feature_ranges": feature_ranges,
        }

    def data_description(self, budget):
        return self.description or self.name

    def use_text(self, recipe):
        estimator = (self._serves or {}).get("estimator")
        if estimator is None:
            return super().use_text(recipe)
        return (
            "```python\nimport keras_msets\n\n"
            f"keras_msets.estimators.{estimator}(\n"
            f'    x, y, model="{recipe.name}", interval=0.9\n)\n```\n'
        )

    def card_sections(self, recipe, metrics):
        text = super().card_sections(recipe, metrics)
        if self.results_text is not None:
            text += "\n\n" + self.results_text()
        return text


class _KeepBest(keras.callbacks.Callback):
    """Keeps the weights of the epoch with the lowest validation loss."""

    def __init__(self):
        super().__init__()
        self.best = np.inf
        self.epoch = None
        self.weights = None

    def on_epoch_end(self, epoch, logs=None):
        loss = (logs or {}).get("val_loss")
        if loss is not None and loss < self.best:
            self.best, self.epoch = float(loss), int(epoch)
            self.weights = [np.array(w) for w in self.model.get_weights()]

    def restore(self, model):
        if self.weights is not None:
            model.set_weights(self.weights)
