"""The feedforward half of the post-LN transformer block (private).

`FeedForwardBlock` computes `LN(H + FF(H))` with
`FF = Dense(ff_dim, relu) -> Dense(dim)` on every element alone. It is the
one place where this half of eq. 2 of Selby et al. is written: the pair
blocks of the set and multi-set layers (attention, multichannel attention,
relation network) subclass it and put their own mixing step in front, and
the row-wise baseline block is this block alone. Its attribute names
(`ff_hidden`, `ff_output`, `output_norm`) key the weight files and are
frozen.

The blocks call their own sub-layers' arithmetic (`apply_dense`,
`apply_norm`: the same ops on the same weights) instead of calling the
sub-layers, which still exist and are built so that weights, names and
checkpoints are those of the layers: on the torch backend, where every
layer call runs eagerly through Keras's `Layer.__call__`, that call costs
more than the arithmetic of a small block (see benchmarks/RESULTS.md,
"fewer layer calls"). Layers under a mixed or quantized dtype policy are
called as layers (`writes_out`).
"""

import keras
from keras import ops

from keras_msets.ops.products import matmul_last_axis
from keras_msets.utils.validation import check_positive_float
from keras_msets.utils.validation import check_positive_int


def writes_out(*layers):
    """Whether the calls of `layers` may be replaced by their arithmetic.

    True when every layer computes in its variables' dtype and is not
    quantized: then `apply_dense` and `apply_norm` are exactly the
    layer's `call`, and Keras's `Layer.__call__` adds nothing (the
    inputs already have the compute dtype). Mixed precision (layer norms
    compute in float32 there) and quantized kernels keep the layer call.
    """
    for layer in layers:
        policy = layer.dtype_policy
        if (
            policy.quantization_mode is not None
            or policy.compute_dtype != policy.variable_dtype
        ):
            return False
    return True


def as_compute_dtype(layer, x):
    """`x` in `layer`'s compute dtype, as `Layer.__call__` casts it."""
    if keras.backend.standardize_dtype(x.dtype) != layer.compute_dtype:
        return ops.cast(x, layer.compute_dtype)
    return x


def _static_shape(dims):
    """`dims` for `ops.reshape`, one unknown size as -1; None if more."""
    dims = [-1 if d is None else d for d in dims]
    return tuple(dims) if dims.count(-1) <= 1 else None


def _einsum_dense_product(equation, x, kernel):
    """`einsum(equation, x, kernel)` of an attention projection.

    The projections of `keras.layers.MultiHeadAttention` on `[batch, n,
    dim]` sets are written as one matrix product on the kernel flattened
    to two axes (torch's einsum is slower than its matmul for these);
    any other equation is left to `ops.einsum`.
    """
    if equation == "abc,cde->abde":  # [b, n, dim] -> [b, n, heads, size]
        shape = _static_shape(tuple(x.shape[:2]) + tuple(kernel.shape[1:]))
        if shape is not None:
            flat = ops.reshape(kernel, (kernel.shape[0], -1))
            return ops.reshape(matmul_last_axis(x, flat), shape)
    if equation == "abcd,cde->abe":  # [b, n, heads, size] -> [b, n, dim]
        width = kernel.shape[0] * kernel.shape[1]
        shape = _static_shape(tuple(x.shape[:2]) + (width,))
        if shape is not None:
            flat = ops.reshape(kernel, (width, kernel.shape[-1]))
            return matmul_last_axis(ops.reshape(x, shape), flat)
    return ops.einsum(equation, x, kernel)


def apply_dense(layer, x):
    """`layer(x)` for a built `Dense` or `EinsumDense`, without the call.

    The same ops as the layer's `call`: its kernel (with LoRA, if
    enabled), bias and activation, on `x` in the layer's compute dtype.
    """
    x = as_compute_dtype(layer, x)
    if isinstance(layer, keras.layers.EinsumDense):
        y = _einsum_dense_product(layer.equation, x, layer.kernel)
    else:
        y = matmul_last_axis(x, layer.kernel)
    if layer.bias is not None:
        y = ops.add(y, layer.bias)
    if layer.activation is not None:
        y = layer.activation(y)
    return y


def apply_norm(layer, x):
    """`layer(x)` for a built `LayerNormalization`, without the call."""
    y = ops.layer_normalization(
        as_compute_dtype(layer, x),
        layer.gamma,
        layer.beta,
        layer.axis,
        layer.epsilon,
        rms_scaling=layer.rms_scaling,
    )
    return ops.cast(y, layer.compute_dtype)


class FeedForwardBlock(keras.layers.Layer):
    """Residual feedforward block `LN(H + FF(H))` (private base).

    Args:
        ff_dim: hidden width of `FF`. None: `2 * dim`, with `dim` the last
            axis of the input (App. B of Selby et al.).
        layer_norm_epsilon: epsilon of the layer norm(s). Defaults to
            `1e-5` (PyTorch's default, as in the reference code).
        **kwargs: base layer keyword arguments.

    Call arguments:
        inputs: `[batch, ..., dim]`.

    A subclass that mixes elements first creates its own sub-layers, then
    calls `make_feed_forward(dim)`, builds them all (the feedforward half
    with `build_feed_forward(shape)`), and ends its `call` with
    `feed_forward(hidden)`.
    """

    def __init__(self, ff_dim=None, layer_norm_epsilon=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.ff_dim = check_positive_int("ff_dim", ff_dim, allow_none=True)
        self.layer_norm_epsilon = check_positive_float(
            "layer_norm_epsilon", layer_norm_epsilon
        )

    def make_feed_forward(self, dim):
        """Creates `ff_hidden`, `ff_output` and `output_norm` for width `dim`.

        A subclass creates them right after its own sub-layers and before
        building any of them, so that seeded initial weights do not depend
        on where the feedforward half is written.
        """
        ff_dim = self.ff_dim if self.ff_dim is not None else 2 * dim
        self.ff_hidden = keras.layers.Dense(
            ff_dim, activation="relu", dtype=self.dtype_policy, name="ff_hidden"
        )
        self.ff_output = keras.layers.Dense(
            dim, dtype=self.dtype_policy, name="ff_output"
        )
        self.output_norm = self.make_norm("output_norm")

    def make_norm(self, name):
        """A new layer norm with the block's epsilon, named `name`."""
        return keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon,
            dtype=self.dtype_policy,
            name=name,
        )

    def build_feed_forward(self, shape):
        """Builds the layers made by `make_feed_forward` on `shape`."""
        shape = tuple(shape)
        self.ff_hidden.build(shape)
        self.ff_output.build(shape[:-1] + (self.ff_hidden.units,))
        self.output_norm.build(shape)

    def feed_forward(self, hidden):
        """`LN(hidden + FF(hidden))`."""
        if writes_out(self.ff_hidden, self.ff_output, self.output_norm):
            ff = apply_dense(self.ff_hidden, hidden)
            ff = apply_dense(self.ff_output, ff)
            return apply_norm(self.output_norm, hidden + ff)
        return self.output_norm(hidden + self.ff_output(self.ff_hidden(hidden)))

    def build(self, input_shape):
        self.make_feed_forward(input_shape[-1])
        self.build_feed_forward(input_shape)

    def call(self, inputs):
        return self.feed_forward(inputs)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "ff_dim": self.ff_dim,
                "layer_norm_epsilon": self.layer_norm_epsilon,
            }
        )
        return config
