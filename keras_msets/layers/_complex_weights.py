"""What the complex layers share (private).

`complex_units` reads the number of complex units of a complex shape
`[..., 2 * d]`. `ComplexWeightsLayer` is the base of `ComplexDense` and
`ComplexConv1D`: both hold a complex kernel `W = A + iB` and bias
`b = c + id` as real variables (`real_kernel`, `imag_kernel`, `real_bias`,
`imag_bias`; with `shared_weights=True` only the real ones, `A = B` and
`c = d`), apply `W` as one real product with the block kernel
`[[A, B], [-B, A]]`, then add the bias and apply a real activation to each
half.
"""

import keras
from keras import ops

from keras_msets import ops as msets_ops
from keras_msets.layers._layer_base import ChecksInputs
from keras_msets.layers._layer_base import arguments_config


def complex_units(shape, name="inputs", rank=None, min_rank=1):
    """Number of complex units `d` of a complex shape `[..., 2 * d]`.

    Args:
        shape: the static shape.
        name: the argument named in the error.
        rank: the exact rank required (3: `[batch, length, 2 * d]`), or None
            for any rank from `min_rank` on.
        min_rank: the smallest rank accepted when `rank` is None.

    Raises:
        ValueError: for another rank, or an unknown or odd last axis.
    """
    shape = tuple(shape)
    if rank == 3:
        layout = "[batch, length, 2 * d]"
    elif rank is None and min_rank > 1:
        layout = f"[..., 2 * d] of rank >= {min_rank}"
    else:
        layout = "[..., 2 * d]"
    valid_rank = len(shape) == rank if rank else len(shape) >= min_rank
    if not valid_rank or shape[-1] is None or shape[-1] % 2:
        raise ValueError(
            f"`{name}` must be a complex tensor {layout} with a known, even "
            f"last axis. Received: {name}.shape={shape}"
        )
    return shape[-1] // 2


COMPLEX_WEIGHT_ARGUMENTS = (
    "activation",
    "use_bias",
    "shared_weights",
    "kernel_initializer",
    "bias_initializer",
)


class ComplexWeightsLayer(ChecksInputs, keras.layers.Layer):
    """Base of the layers with a complex kernel and bias (private).

    Args:
        activation, use_bias, shared_weights, kernel_initializer,
            bias_initializer: see `ComplexDense`.
        **kwargs: base layer keyword arguments.

    A subclass creates the variables with `add_complex_weights(kernel_shape,
    units)` in `build()`, multiplies its inputs with `block_kernel()` and
    ends its `call` with `add_bias_and_activate(outputs)`. The input mask
    is propagated unchanged unless the subclass says otherwise.
    """

    def __init__(
        self,
        activation=None,
        use_bias=True,
        shared_weights=False,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.activation = keras.activations.get(activation)
        self.use_bias = bool(use_bias)
        self.shared_weights = bool(shared_weights)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True

    def add_complex_weights(self, kernel_shape, units):
        """Creates the kernel and bias variables (names frozen)."""
        parts = ("real",) if self.shared_weights else ("real", "imag")
        for part in parts:
            kernel = self.add_weight(
                name=f"{part}_kernel",
                shape=kernel_shape,
                initializer=self.kernel_initializer,
            )
            setattr(self, f"{part}_kernel", kernel)
        if self.use_bias:
            for part in parts:
                bias = self.add_weight(
                    name=f"{part}_bias",
                    shape=(units,),
                    initializer=self.bias_initializer,
                )
                setattr(self, f"{part}_bias", bias)

    def block_kernel(self):
        """The real kernel `[[A, B], [-B, A]]` over the last two axes.

        Input channels `[x, y]` map to `[A x - B y, B x + A y]`.
        """
        a = self.real_kernel
        b = a if self.shared_weights else self.imag_kernel
        return ops.concatenate(
            [
                ops.concatenate([a, b], axis=-1),
                ops.concatenate([ops.negative(b), a], axis=-1),
            ],
            axis=-2,
        )

    def add_bias_and_activate(self, outputs):
        """Adds the complex bias, then the activation on each half."""
        if self.use_bias:
            c = self.real_bias
            d = c if self.shared_weights else self.imag_bias
            outputs = outputs + ops.concatenate([c, d], axis=0)
        if self.activation is not None:
            real, imag = msets_ops.complex_split(outputs)
            outputs = msets_ops.complex_merge(
                self.activation(real), self.activation(imag)
            )
        return outputs

    def get_config(self):
        config = super().get_config()
        config.update(arguments_config(self, COMPLEX_WEIGHT_ARGUMENTS))
        return config
