import keras
from keras import ops

from keras_msets import ops as msets_ops
from keras_msets.layers._complex_weights import complex_units
from keras_msets.layers._layer_base import ChecksInputs
from keras_msets.utils.validation import check_choice

READOUT_MODES = ("modulus", "l2", "concat")


@keras.saving.register_keras_serializable(package="keras_msets")
class ComplexReadout(ChecksInputs, keras.layers.Layer):
    """Maps complex activations to real features for a real-valued loss.

    Wang et al. (App. B) end their complex networks with a norm: the
    complex CNN is built by "adding a complex dense layer in (10), and
    taking their norm as the final prediction in the last layer", and the
    complex RNN says "In the final layer, a l2-norm operation is adopted to
    obtain a real-valued loss". Applied to a final `ComplexDense(
    num_classes)`, whose outputs are one complex number per class, that
    norm is the modulus of each unit (`mode="modulus"`), which then serves
    as the class logit (e.g. before a softmax). The authors' released code
    for the CNN and Transformer classifiers instead concatenates the real
    and imaginary parts and feeds them to a real dense softmax layer
    (`mode="concat"`).

    Modes:
    - `"modulus"`: `|z_k| = sqrt(Re(z_k)^2 + Im(z_k)^2)` for each complex
      unit, `[..., d]`; computed with `keras_msets.ops.complex_modulus`,
      whose gradient at `0 + 0i` is 0 (finite), not `NaN`.
    - `"l2"`: the l2 norm of the whole complex vector,
      `sqrt(sum_k |z_k|^2)`, `[..., 1]`; its gradient at the zero vector
      is 0 (finite) as well.
    - `"concat"`: the real parts then the imaginary parts as `2 * d` real
      features, i.e. the input unchanged (a real layer reads them).

    Args:
        mode: `"modulus"` (default), `"l2"` or `"concat"`.
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: complex tensor `[..., 2 * d]` (real parts, then imaginary
            parts).
        mask: optional boolean mask over the leading axes; it does not
            change the outputs and is passed on unchanged.

    Input shape:
        `[..., 2 * d]`; the last axis must be known and even.

    Output shape:
        `[..., d]` for `"modulus"`, `[..., 1]` for `"l2"`, `[..., 2 * d]`
        for `"concat"`.

    Example:
    >>> z = keras.ops.convert_to_tensor([[3.0, 0.0, 4.0, 1.0]])  # 3+4i, i
    >>> keras_msets.layers.ComplexReadout("modulus")(z)
    array([[5., 1.]], dtype=float32)
    >>> keras_msets.layers.ComplexReadout("l2")(z)
    array([[5.0990195]], dtype=float32)

    References:
        - Wang et al., "Encoding word order in complex embeddings",
          ICLR 2020.
    """

    def __init__(self, mode="modulus", **kwargs):
        super().__init__(**kwargs)
        check_choice("mode", mode, READOUT_MODES)
        self.mode = mode
        self.supports_masking = True

    def call(self, inputs, mask=None):
        # The mask is not used here: Keras passes it on unchanged.
        complex_units(inputs.shape)
        if self.mode == "concat":
            return inputs
        if self.mode == "modulus":
            return msets_ops.complex_modulus(inputs)
        real, imag = msets_ops.complex_split(inputs)
        squared = ops.sum(real * real + imag * imag, axis=-1, keepdims=True)
        # "Double where": sqrt only sees positive values, so the gradient
        # at the zero vector is 0 instead of NaN.
        nonzero = ops.greater(squared, 0)
        safe = ops.where(nonzero, squared, ops.ones_like(squared))
        return ops.where(nonzero, ops.sqrt(safe), ops.zeros_like(squared))

    def compute_output_shape(self, input_shape):
        units = complex_units(input_shape)
        sizes = {"modulus": units, "l2": 1, "concat": 2 * units}
        return tuple(input_shape)[:-1] + (sizes[self.mode],)

    def get_config(self):
        config = super().get_config()
        config.update({"mode": self.mode})
        return config
