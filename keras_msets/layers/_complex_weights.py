"""The complex weights that `ComplexDense` and `ComplexConv1D` share.

Both layers hold a complex kernel `W = A + iB` and bias `b = c + id` as
real variables (`real_kernel`, `imag_kernel`, `real_bias`, `imag_bias`;
with `shared_weights=True` only the real ones, `A = B` and `c = d`), apply
`W` as one real product with the block kernel `[[A, B], [-B, A]]`, then
add the bias and apply a real activation to each half. Not exported.
"""

import keras
from keras import ops

from keras_msets import ops as msets_ops


def add_complex_weights(layer, kernel_shape, units):
    """Creates the layer's kernel and bias variables (names frozen)."""
    layer.real_kernel = layer.add_weight(
        name="real_kernel",
        shape=kernel_shape,
        initializer=layer.kernel_initializer,
    )
    if not layer.shared_weights:
        layer.imag_kernel = layer.add_weight(
            name="imag_kernel",
            shape=kernel_shape,
            initializer=layer.kernel_initializer,
        )
    if layer.use_bias:
        layer.real_bias = layer.add_weight(
            name="real_bias",
            shape=(units,),
            initializer=layer.bias_initializer,
        )
        if not layer.shared_weights:
            layer.imag_bias = layer.add_weight(
                name="imag_bias",
                shape=(units,),
                initializer=layer.bias_initializer,
            )


def block_kernel(layer):
    """The real kernel `[[A, B], [-B, A]]` over the last two axes.

    Input channels `[x, y]` map to `[A x - B y, B x + A y]`.
    """
    a = layer.real_kernel
    b = a if layer.shared_weights else layer.imag_kernel
    return ops.concatenate(
        [
            ops.concatenate([a, b], axis=-1),
            ops.concatenate([ops.negative(b), a], axis=-1),
        ],
        axis=-2,
    )


def add_bias_and_activate(layer, outputs):
    """Adds the complex bias, then the activation on each half."""
    if layer.use_bias:
        c = layer.real_bias
        d = c if layer.shared_weights else layer.imag_bias
        outputs = outputs + ops.concatenate([c, d], axis=0)
    if layer.activation is not None:
        real, imag = msets_ops.complex_split(outputs)
        outputs = msets_ops.complex_merge(
            layer.activation(real), layer.activation(imag)
        )
    return outputs


def complex_weights_config(layer):
    """The config entries of the arguments this module reads."""
    return {
        "activation": keras.activations.serialize(layer.activation),
        "use_bias": layer.use_bias,
        "shared_weights": layer.shared_weights,
        "kernel_initializer": keras.initializers.serialize(
            layer.kernel_initializer
        ),
        "bias_initializer": keras.initializers.serialize(
            layer.bias_initializer
        ),
    }
