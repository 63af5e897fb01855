import keras
from keras import ops

from keras_msets import ops as msets_ops
from keras_msets.layers._complex_weights import ComplexWeightsLayer
from keras_msets.layers._complex_weights import complex_units
from keras_msets.ops.checks import as_features
from keras_msets.utils.validation import check_choice
from keras_msets.utils.validation import check_positive_int

PADDINGS = ("valid", "same")


def _single_int(name, value):
    """Accepts `3` or `(3,)` (the Keras Conv1D spelling); returns `3`."""
    if isinstance(value, (tuple, list)):
        if len(value) != 1:
            raise ValueError(
                f"`{name}` must be a positive integer or a tuple of one "
                f"positive integer. Received: {name}={value!r}"
            )
        value = value[0]
    return check_positive_int(name, value)


@keras.saving.register_keras_serializable(package="keras_msets")
class ComplexConv1D(ComplexWeightsLayer):
    """1D convolution with a complex kernel, on complex sequences.

    The complex kernel `W = A + iB` and bias `b = c + id` are convolved with
    the complex input sequence `x + iy` as in the complex dense layer of
    Wang et al. (App. B, Eq. 10-11, "Complex-valued CNN"): the output is
    `sigma(A * x - B * y + c) + i sigma(B * x + A * y + d)`, where `*` is the
    1D convolution (cross-correlation, as `keras.layers.Conv1D`) and the
    real activation `sigma` is applied to the real parts and to the
    imaginary parts separately. `shared_weights=True` is the paper's
    parameter-saving option `A = B`, `c = d`, which halves the parameter
    count. The layer runs one real convolution of `[x, y]` with the block
    kernel `[[A, B], [-B, A]]`.

    Masking: a Keras mask `[batch, length]` on the input marks valid steps.
    Padded (masked-out) steps are replaced by zeros before convolving, so
    whatever they hold never changes an output; an output step whose window
    reaches padded steps sees zeros there, exactly as it sees the zero
    padding of `padding="same"` at the sequence ends. The output mask is:

    - `padding="same"`: output step `t` is valid if input step
      `t * strides` is valid (for `strides=1`, the input mask itself). For a
      right-padded sequence of true length `n` this marks the
      `ceil(n / strides)` outputs that the unpadded sequence would have.
    - `padding="valid"`: output step `t` is valid if its whole window
      (input steps `t * strides ... t * strides + kernel_size - 1`) is
      valid. For a right-padded sequence these are exactly the outputs of
      the unpadded sequence, with the same values.

    An all-masked sequence gives `sigma(c) + i sigma(d)` at every step (the
    convolution of zeros), and an all-False output mask.

    Args:
        filters: positive integer, number of complex output channels.
        kernel_size: positive integer (or a tuple of one), the window
            length.
        strides: positive integer (or a tuple of one), the step between
            windows. Defaults to `1`.
        padding: `"valid"` (no padding) or `"same"` (zero padding so that
            the output has `ceil(length / strides)` steps, as
            `keras.layers.Conv1D`). Defaults to `"valid"`.
        activation: activation function applied to the real parts and to
            the imaginary parts separately. Default None: no activation.
        use_bias: whether to add the complex bias `c + id`.
        shared_weights: if True, one kernel serves as `A` and `B` (and one
            vector as `c` and `d`).
        kernel_initializer: initializer of `A` and `B`.
        bias_initializer: initializer of `c` and `d`.
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: a complex sequence `[batch, length, 2 * channels]` (real
            parts, then imaginary parts).
        mask: optional boolean mask `[batch, length]`; False marks padded
            steps. Defaults to the Keras mask of `inputs`.

    Input shape:
        `[batch, length, 2 * channels]`; the last axis must be known and
        even.

    Output shape:
        `[batch, new_length, 2 * filters]` (real parts, then imaginary
        parts), with `new_length = (length - kernel_size) // strides + 1`
        for `"valid"` and `ceil(length / strides)` for `"same"`.

    Example:
    >>> x = keras.random.normal((2, 10, 2 * 8))
    >>> keras_msets.layers.ComplexConv1D(4, 3, padding="same")(x).shape
    (2, 10, 8)

    References:
        - Wang et al., "Encoding word order in complex embeddings",
          ICLR 2020.
        - Trabelsi et al., "Deep Complex Networks", ICLR 2018.
    """

    def __init__(
        self,
        filters,
        kernel_size,
        strides=1,
        padding="valid",
        activation=None,
        use_bias=True,
        shared_weights=False,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(
            activation=activation,
            use_bias=use_bias,
            shared_weights=shared_weights,
            kernel_initializer=kernel_initializer,
            bias_initializer=bias_initializer,
            **kwargs,
        )
        self.filters = check_positive_int("filters", filters)
        self.kernel_size = _single_int("kernel_size", kernel_size)
        self.strides = _single_int("strides", strides)
        normalized = padding.lower() if isinstance(padding, str) else padding
        self.padding = check_choice("padding", normalized, PADDINGS)

    def build(self, input_shape):
        channels = complex_units(input_shape, rank=3)
        shape = (self.kernel_size, channels, self.filters)
        self.add_complex_weights(shape, self.filters)

    def _check_length(self, shape):
        # A window longer than the sequence: an empty output, which the
        # backends report as internal errors (or not at all under a trace
        # of unknown length, where the caller's check must do).
        length = shape[1]
        if self.padding == "valid" and length is not None:
            if length < self.kernel_size:
                raise ValueError(
                    "With padding='valid' the sequence must be at least "
                    f"`kernel_size`={self.kernel_size} steps long. Received: "
                    f"inputs.shape={tuple(shape)}"
                )

    def call(self, inputs, mask=None):
        complex_units(inputs.shape, rank=3)
        self._check_length(tuple(inputs.shape))
        inputs = as_features(inputs, self.compute_dtype)
        if mask is not None:
            # Zeros, not garbage, reach the windows that overlap padding.
            valid = msets_ops.expand_mask(mask, inputs)
            inputs = ops.where(valid, inputs, ops.zeros_like(inputs))
        outputs = ops.conv(
            inputs,
            self.block_kernel(),
            strides=self.strides,
            padding=self.padding,
            data_format="channels_last",
        )
        return self.add_bias_and_activate(outputs)

    def compute_mask(self, inputs, mask=None):
        if mask is None:
            return None
        mask = ops.cast(mask, "bool")
        if self.padding == "same":
            if self.strides == 1:
                return mask
            return mask[:, :: self.strides]
        # A window is valid when it holds no padded step: max-pool the
        # "padded" indicator over the windows.
        padded = ops.cast(ops.logical_not(mask), "float32")
        padded = ops.max_pool(
            ops.expand_dims(padded, -1),
            pool_size=self.kernel_size,
            strides=self.strides,
            padding="valid",
            data_format="channels_last",
        )
        return ops.equal(ops.squeeze(padded, -1), 0.0)

    def compute_output_shape(self, input_shape):
        complex_units(input_shape, rank=3)
        self._check_length(tuple(input_shape))
        length = input_shape[1]
        if length is not None:
            if self.padding == "same":
                length = -(-length // self.strides)
            else:
                length = (length - self.kernel_size) // self.strides + 1
        return (input_shape[0], length, 2 * self.filters)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "filters": self.filters,
                "kernel_size": self.kernel_size,
                "strides": self.strides,
                "padding": self.padding,
            }
        )
        return config
