import math

import keras
import numpy as np
from keras import ops

from keras_msets.layers._layer_base import arguments_config
from keras_msets.ops.checks import check_token_ids
from keras_msets.utils.validation import check_int_list
from keras_msets.utils.validation import check_positive_int
from keras_msets.utils.validation import is_int


def _group_plan(groups, rows, num_groups):
    """Classify a static group assignment: ('one', g), ('slice', g0), ('take',
    array)."""
    groups = np.asarray(groups, "int64").reshape(-1)
    if groups.shape[0] != rows:
        raise ValueError(
            f"`groups` must give one group per row: expected {rows} entries. "
            f"Received: {groups.shape[0]} entries"
        )
    if rows and (groups.min() < 0 or groups.max() >= num_groups):
        raise ValueError(
            f"`groups` must lie in [0, {num_groups}). Received: values from "
            f"{groups.min()} to {groups.max()}"
        )
    if rows and np.all(groups == groups[0]):
        return "one", int(groups[0])
    if np.array_equal(groups, np.arange(groups[0], groups[0] + rows)):
        return "slice", int(groups[0])
    return "take", groups.astype("int32")


@keras.saving.register_keras_serializable(package="keras_msets")
class GroupedMLP(keras.layers.Layer):
    """A multilayer perceptron with one parameter set per group of rows.

    The input holds rows `[batch, rows, features]`; row `r` is passed
    through the MLP parameterised by group `groups[r]`. With one group this
    is an ordinary MLP shared by all rows (a `Dense` stack); with one group
    per row every row has its own network; in between, rows share
    parameters group-wise. All rows are processed at once (a batched matrix
    product, a plain product when the rows of a call share one group), so
    a Fusion Encoder Network can keep one parameterisation per segment
    (Pasteris et al., Sec. 8) and still compute a whole tree level in one
    step.

    With `vocabulary_size` set, the input is integer token ids `[batch,
    rows]` and the first layer is a per-group embedding table (a dense layer
    on one-hot vectors, its bias folded into the table). With `pad_to`, id
    inputs shorter than `pad_to` are right-padded with the id
    `vocabulary_size`, which has its own learned row: the learned padding
    token of a Fusion Encoder Network whose length is not a power of two.
    Input ids must be integers in `[0, vocabulary_size)` (checked where
    their values are known, see `keras_msets.ops.checks`).

    Args:
        units: list of positive integers, the widths of the layers; the
            last one is the output width.
        num_groups: positive integer, number of parameter sets.
        input_dim: positive integer, width of float inputs (ignored, and
            may be None, when `vocabulary_size` is set: then inferred).
        vocabulary_size: None for float inputs, or the number of token ids.
        pad_to: None, or the number of rows that id inputs are padded to.
        activation: activation of every layer but the last.
        output_activation: activation of the last layer.
        kernel_initializer: Glorot uniform per group by default (fans are
            those of one group's matrix; a table row counts fan-in 1).
        **kwargs: base layer keyword arguments.

    Call arguments:
        inputs: `[batch, rows, input_dim]` floats, or `[batch, rows]` ids.
            With the default grouping, `rows` must equal `num_groups`
            (one group per row) unless `num_groups == 1`.

    Methods:
        apply_groups(inputs, groups): the same with an explicit static
            assignment `groups` (numpy int array, one entry per row).

    Output shape:
        `[batch, rows, units[-1]]` (`rows = pad_to` when padding).

    Example:
    >>> mlp = keras_msets.layers.GroupedMLP([8, 4], num_groups=3, input_dim=5)
    >>> mlp(keras.random.normal((2, 3, 5))).shape
    (2, 3, 4)
    """

    def __init__(
        self,
        units,
        num_groups=1,
        input_dim=None,
        vocabulary_size=None,
        pad_to=None,
        activation="relu",
        output_activation=None,
        kernel_initializer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if is_int(units):
            units = [units]
        self.units = check_int_list("units", units, allow_empty=False)
        self.num_groups = check_positive_int("num_groups", num_groups)
        self.vocabulary_size = check_positive_int(
            "vocabulary_size", vocabulary_size, allow_none=True
        )
        self.input_dim = check_positive_int(
            "input_dim", input_dim, allow_none=True
        )
        if self.vocabulary_size is None and self.input_dim is None:
            raise ValueError(
                "One of `input_dim` (float inputs) or `vocabulary_size` (id "
                "inputs) must be set. Received: input_dim=None, "
                "vocabulary_size=None"
            )
        self.pad_to = check_positive_int("pad_to", pad_to, allow_none=True)
        if self.pad_to is not None and self.vocabulary_size is None:
            raise ValueError(
                "`pad_to` needs id inputs (`vocabulary_size`). Received: "
                f"pad_to={pad_to}, vocabulary_size=None"
            )
        self.activation = keras.activations.get(activation)
        self.output_activation = keras.activations.get(output_activation)
        self.kernel_initializer = (
            None
            if kernel_initializer is None
            else keras.initializers.get(kernel_initializer)
        )
        self.kernels = []
        self.biases = []
        self.table = None

    def _initializer(self, fan_in, fan_out):
        if self.kernel_initializer is not None:
            return self.kernel_initializer
        limit = math.sqrt(6.0 / (fan_in + fan_out))
        return keras.initializers.RandomUniform(-limit, limit)

    def build(self, input_shape=None):
        g = self.num_groups
        start = 0
        if self.vocabulary_size is not None:
            rows = self.vocabulary_size + (1 if self.pad_to else 0)
            self.table = self.add_weight(
                name="table",
                shape=(g, rows, self.units[0]),
                initializer=self._initializer(1, self.units[0]),
            )
            width = self.units[0]
            start = 1
        else:
            width = self.input_dim
        for k, units in enumerate(self.units[start:], start=start):
            self.kernels.append(
                self.add_weight(
                    name=f"kernel_{k}",
                    shape=(g, width, units),
                    initializer=self._initializer(width, units),
                )
            )
            self.biases.append(
                self.add_weight(
                    name=f"bias_{k}", shape=(g, units), initializer="zeros"
                )
            )
            width = units
        self.built = True

    def _activation(self, k, x):
        last = k == len(self.units) - 1
        return (self.output_activation if last else self.activation)(x)

    def _dense(self, x, kernel, bias, plan):
        kind, value = plan
        kernel = ops.convert_to_tensor(kernel)
        bias = ops.convert_to_tensor(bias)
        if kind == "one":
            return ops.matmul(x, kernel[value]) + bias[value]
        if kind == "slice":
            rows = x.shape[1]
            w = ops.slice(kernel, (value, 0, 0), (rows,) + kernel.shape[1:])
            b = ops.slice(bias, (value, 0), (rows, bias.shape[1]))
        else:
            w = ops.take(kernel, value, axis=0)
            b = ops.take(bias, value, axis=0)
        return ops.einsum("bri,rio->bro", x, w) + b

    def _pad(self, ids):
        length = ids.shape[1]
        if self.pad_to is None or length == self.pad_to:
            return ids
        if length is None or length > self.pad_to:
            raise ValueError(
                f"Id inputs must have at most pad_to={self.pad_to} positions. "
                f"Received: {length}"
            )
        pad = ops.full(
            (ops.shape(ids)[0], self.pad_to - length),
            self.vocabulary_size,
            dtype=ids.dtype,
        )
        return ops.concatenate([ids, pad], axis=1)

    def apply_groups(self, inputs, groups):
        if self.vocabulary_size is not None:
            # Id `vocabulary_size` is the padding row: never an input.
            check_token_ids("inputs", inputs, self.vocabulary_size)
            ids = self._pad(ops.cast(inputs, "int32"))
            rows = ids.shape[1]
            plan = _group_plan(groups, rows, self.num_groups)
            table_rows = self.table.shape[1]
            if plan[0] == "one":
                x = ops.take(self.table[plan[1]], ids, axis=0)
            else:
                group_of_row = (
                    np.arange(plan[1], plan[1] + rows)
                    if plan[0] == "slice"
                    else plan[1]
                ).astype("int32")
                flat = ops.reshape(
                    ops.convert_to_tensor(self.table), (-1, self.units[0])
                )
                offsets = ops.convert_to_tensor(group_of_row * table_rows)
                x = ops.take(flat, ids + offsets[None, :], axis=0)
            x = self._activation(0, x)
            start = 1
        else:
            x = inputs
            rows = x.shape[1]
            plan = _group_plan(groups, rows, self.num_groups)
            start = 0
        for k, (kernel, bias) in enumerate(
            zip(self.kernels, self.biases, strict=True), start=start
        ):
            x = self._activation(k, self._dense(x, kernel, bias, plan))
        return x

    def call(self, inputs):
        rows = self.pad_to or inputs.shape[1]
        if rows is None:
            raise ValueError("GroupedMLP needs a static number of rows.")
        if self.num_groups == 1:
            groups = np.zeros(rows, "int32")
        elif rows == self.num_groups:
            groups = np.arange(rows, dtype="int32")
        else:
            raise ValueError(
                f"With num_groups={self.num_groups} the input must have "
                f"{self.num_groups} rows (one group per row) or use "
                f"`apply_groups`. Received: {rows} rows"
            )
        return self.apply_groups(inputs, groups)

    def compute_output_shape(self, input_shape):
        rows = self.pad_to or input_shape[1]
        return (input_shape[0], rows, self.units[-1])

    def get_config(self):
        config = super().get_config()
        config.update(
            arguments_config(
                self,
                (
                    "units",
                    "num_groups",
                    "input_dim",
                    "vocabulary_size",
                    "pad_to",
                    "activation",
                    "output_activation",
                    "kernel_initializer",
                ),
            )
        )
        config["units"] = list(self.units)
        return config
