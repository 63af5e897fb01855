import keras
import numpy as np

from keras_msets.models._trainer_guards import TrainerGuards
from keras_msets.utils import validation


def check_quantiles(quantiles):
    """`quantiles` as a tuple of floats strictly increasing in (0, 1)."""
    try:
        levels = tuple(float(q) for q in quantiles)
    except (TypeError, ValueError):
        levels = ()
    if (
        not levels
        or any(not 0.0 < q < 1.0 for q in levels)
        or any(b <= a for a, b in zip(levels, levels[1:], strict=False))
    ):
        raise ValueError(
            "`quantiles` must be a non-empty increasing sequence of levels "
            f"in (0, 1). Received: quantiles={quantiles!r}"
        )
    return levels


@keras.saving.register_keras_serializable(package="keras_msets")
class QuantileRegressor(TrainerGuards, keras.Model):
    """An MLP from a vector of statistics to ordered quantiles of a target.

    A small fully connected network for the pretrained estimators that
    refine classical statistics: it reads a fixed-length feature vector
    (cheap statistics of a sample, computed in numpy) and returns one
    value per quantile level of `quantiles`, in increasing order by
    construction. The middle level is the network's raw output; each
    level above it adds a softplus of its own output to the level below,
    each level below subtracts one from the level above, so the
    quantiles never cross. Trained with the pinball loss
    (`keras_msets.training.tasks.PinballLoss`) the outputs estimate the
    conditional quantiles of the target; the middle one (a median when
    0.5 is the middle level) is the point estimate.

    With `nonnegative_middle=True` the middle level is the softplus of the
    network's raw output, so it is never below 0 (the levels below it may
    be): a correction that can only raise the base it is added to, for a
    target known to lie above a base estimate up to the base's noise.

    The features are standardized inside the model by a mean and a
    standard deviation stored as non-trainable weights: call
    `adapt(features)` once on the training features before `fit`.

    Args:
        num_features: length of the feature vector.
        quantiles: increasing quantile levels in (0, 1), e.g.
            `(0.05, 0.5, 0.95)`.
        hidden_units: widths of the hidden `Dense` layers.
        activation: activation of the hidden layers.
        dropout: dropout rate after each hidden layer (0: none).
        nonnegative_middle: whether the middle level goes through a
            softplus (>= 0).
        **kwargs: `keras.Model` keyword arguments (`name`, ...).

    Call arguments:
        features: `[batch, num_features]` float features.

    Output shape:
        `[batch, len(quantiles)]`, increasing along the last axis.

    Example:
    >>> model = keras_msets.models.QuantileRegressor(3, (0.1, 0.5, 0.9))
    >>> model.adapt(np.random.normal(size=(100, 3)))
    >>> model(np.zeros((2, 3))).shape
    (2, 3)

    References:
        - Koenker & Bassett, "Regression Quantiles", Econometrica 1978.
    """

    def __init__(
        self,
        num_features,
        quantiles=(0.05, 0.5, 0.95),
        hidden_units=(64, 64),
        activation="gelu",
        dropout=0.0,
        nonnegative_middle=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_features = validation.check_positive_int(
            "num_features", num_features
        )
        self.quantiles = check_quantiles(quantiles)
        self.hidden_units = tuple(
            validation.check_int_list("hidden_units", hidden_units)
        )
        self.activation = activation
        self.dropout = validation.check_fraction("dropout", dropout)
        if not isinstance(nonnegative_middle, bool):
            raise ValueError(
                "`nonnegative_middle` must be a bool. Received: "
                f"nonnegative_middle={nonnegative_middle!r}"
            )
        self.nonnegative_middle = nonnegative_middle
        self.middle = len(self.quantiles) // 2
        self.hidden = [
            keras.layers.Dense(
                units,
                activation=activation,
                dtype=self.dtype_policy,
                name=f"hidden_{i}",
            )
            for i, units in enumerate(self.hidden_units)
        ]
        self.dropouts = [
            keras.layers.Dropout(self.dropout, name=f"dropout_{i}")
            for i in range(len(self.hidden_units))
        ]
        self.head = keras.layers.Dense(
            len(self.quantiles), dtype=self.dtype_policy, name="head"
        )

    def build(self, input_shape):
        self.feature_mean = self.add_weight(
            shape=(self.num_features,),
            initializer="zeros",
            trainable=False,
            name="feature_mean",
        )
        self.feature_scale = self.add_weight(
            shape=(self.num_features,),
            initializer="ones",
            trainable=False,
            name="feature_scale",
        )
        shape = (None, self.num_features)
        for layer in self.hidden:
            layer.build(shape)
            shape = (None, layer.units)
        self.head.build(shape)
        super().build(input_shape)

    def adapt(self, features):
        """Sets the stored feature mean and scale from `features`
        (`[num_samples, num_features]`, numpy)."""
        features = np.asarray(features, dtype="float64")
        if features.ndim != 2 or features.shape[1] != self.num_features:
            raise ValueError(
                "`features` must have shape [num_samples, "
                f"{self.num_features}]. Received: features.shape="
                f"{features.shape}"
            )
        if not self.built:
            self.build((None, self.num_features))
        scale = features.std(axis=0)
        self.feature_mean.assign(features.mean(axis=0))
        self.feature_scale.assign(np.where(scale > 1e-12, scale, 1.0))

    def call(self, features, training=False):
        h = (features - self.feature_mean) / self.feature_scale
        for dense, dropout in zip(self.hidden, self.dropouts, strict=True):
            h = dropout(dense(h), training=training)
        raw = self.head(h)
        middle = raw[:, self.middle : self.middle + 1]
        if self.nonnegative_middle:
            middle = keras.ops.softplus(middle)
        parts = [middle]
        if self.middle + 1 < len(self.quantiles):
            gaps = keras.ops.softplus(raw[:, self.middle + 1 :])
            parts.append(middle + keras.ops.cumsum(gaps, axis=-1))
        if self.middle > 0:
            gaps = keras.ops.softplus(raw[:, : self.middle])
            # Cumulated from the middle outwards, then put back in order.
            gaps = keras.ops.flip(gaps, axis=-1)
            below = keras.ops.flip(keras.ops.cumsum(gaps, axis=-1), axis=-1)
            parts.insert(0, middle - below)
        return keras.ops.concatenate(parts, axis=-1)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], len(self.quantiles))

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_features": self.num_features,
                "quantiles": list(self.quantiles),
                "hidden_units": list(self.hidden_units),
                "activation": self.activation,
                "dropout": self.dropout,
                "nonnegative_middle": self.nonnegative_middle,
            }
        )
        return config
