"""Two layers of the text classifiers that Keras does not provide.

`MaskedConv1D` is the real CNN's convolution with a padding mask;
`ComplexConcatenate` joins the complex branches of the complex CNN. Both are
also importable from `keras_msets.models.text.classifiers`.
"""

import keras
from keras import ops

from keras_msets import ops as msets_ops


@keras.saving.register_keras_serializable(package="keras_msets")
class MaskedConv1D(keras.layers.Conv1D):
    """`keras.layers.Conv1D` that honours a padding mask.

    Padded steps are replaced by zeros before the convolution, so their
    values never change an output, and the output mask says which output
    steps are valid: with `padding="valid"` (a narrow convolution) a step is
    valid when its whole window holds valid input steps, so the valid
    outputs of a right-padded sequence are exactly the outputs of the
    unpadded sequence; with `padding="same"` output step `t` is valid when
    input step `t * strides` is. This is the rule of `ComplexConv1D`, for
    real sequences. A sequence with no valid window gets an all-False
    output mask. Only `dilation_rate=1` and the paddings `"valid"` and
    `"same"` are supported.

    Args:
        *args, **kwargs: those of `keras.layers.Conv1D`.

    Call arguments:
        inputs: `[batch, length, channels]`.
        mask: optional boolean `[batch, length]`; the Keras mask of `inputs`
            by default.

    Input shape:
        `[batch, length, channels]`.

    Output shape:
        `[batch, new_length, filters]`, as `keras.layers.Conv1D`.

    Example:
    >>> from keras_msets.models.text.classifiers import MaskedConv1D
    >>> x = keras.random.normal((2, 7, 4))
    >>> mask = keras.ops.arange(7)[None, :] < keras.ops.array([[5], [7]])
    >>> MaskedConv1D(3, 3)(x, mask=mask).shape
    (2, 5, 3)

    References:
        - Kim, "Convolutional Neural Networks for Sentence Classification",
          EMNLP 2014.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.padding not in ("valid", "same"):
            raise ValueError(
                "`padding` must be 'valid' or 'same'. Received: "
                f"padding={self.padding!r}"
            )
        if tuple(self.dilation_rate) != (1,):
            raise ValueError(
                "`dilation_rate` must be 1. Received: "
                f"dilation_rate={self.dilation_rate!r}"
            )
        if self.data_format != "channels_last":
            raise ValueError(
                "`data_format` must be 'channels_last'. Received: "
                f"data_format={self.data_format!r}"
            )
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if mask is not None:
            valid = msets_ops.expand_mask(mask, inputs)
            inputs = ops.where(valid, inputs, ops.zeros_like(inputs))
        return super().call(inputs)

    def compute_mask(self, inputs, mask=None):
        if mask is None:
            return None
        mask = ops.cast(mask, "bool")
        (strides,) = self.strides
        (kernel_size,) = self.kernel_size
        if self.padding == "same":
            return mask if strides == 1 else mask[:, ::strides]
        padded = ops.cast(ops.logical_not(mask), "float32")
        padded = ops.max_pool(
            ops.expand_dims(padded, -1),
            pool_size=kernel_size,
            strides=strides,
            padding="valid",
            data_format="channels_last",
        )
        return ops.equal(ops.squeeze(padded, -1), 0.0)


@keras.saving.register_keras_serializable(package="keras_msets")
class ComplexConcatenate(keras.layers.Layer):
    """Concatenates complex tensors along their last (feature) axis.

    Complex activations are real tensors `[..., 2 d]` holding the real
    parts, then the imaginary parts, so a plain `Concatenate` would mix the
    two halves. This layer concatenates the real parts of all inputs, then
    their imaginary parts: inputs `[..., 2 d_i]` give `[..., 2 sum(d_i)]`.

    Call arguments:
        inputs: a list of complex tensors with equal leading axes.
        mask: optional list of masks over the leading axes; the output mask
            is their logical and (None when all are None).

    Example:
    >>> from keras_msets.models.text.classifiers import ComplexConcatenate
    >>> a = keras.ops.convert_to_tensor([[1.0, 2.0]])  # 1 + 2i
    >>> b = keras.ops.convert_to_tensor([[3.0, 4.0, 5.0, 6.0]])  # 3+5i, 4+6i
    >>> ComplexConcatenate()([a, b])
    array([[1., 3., 4., 2., 5., 6.]], dtype=float32)

    References:
        - Wang et al., "Encoding word order in complex embeddings",
          ICLR 2020.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def _units(self, shapes):
        if not isinstance(shapes, (list, tuple)) or len(shapes) < 1:
            raise ValueError(
                "`inputs` must be a list of complex tensors. Received: "
                f"{shapes!r}"
            )
        units = []
        for shape in shapes:
            shape = tuple(shape)
            if not shape or shape[-1] is None or shape[-1] % 2:
                raise ValueError(
                    "Every input must be a complex tensor [..., 2 * d] with "
                    f"a known, even last axis. Received: shape {shape}"
                )
            units.append(shape[-1] // 2)
        return units

    def call(self, inputs, mask=None):
        self._units([x.shape for x in inputs])
        parts = [msets_ops.complex_split(x) for x in inputs]
        real = ops.concatenate([p[0] for p in parts], axis=-1)
        imag = ops.concatenate([p[1] for p in parts], axis=-1)
        return msets_ops.complex_merge(real, imag)

    def compute_mask(self, inputs, mask=None):
        if mask is None:
            return None
        masks = [m for m in mask if m is not None]
        if not masks:
            return None
        output = ops.cast(masks[0], "bool")
        for m in masks[1:]:
            output = ops.logical_and(output, ops.cast(m, "bool"))
        return output

    def compute_output_shape(self, input_shape):
        units = self._units(input_shape)
        return tuple(input_shape[0])[:-1] + (2 * sum(units),)
