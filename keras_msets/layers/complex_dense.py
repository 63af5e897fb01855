import keras

from keras_msets.layers._complex_weights import ComplexWeightsLayer
from keras_msets.layers._complex_weights import complex_units
from keras_msets.ops.checks import as_features
from keras_msets.ops.products import matmul_last_axis
from keras_msets.utils.validation import check_positive_int


@keras.saving.register_keras_serializable(package="keras_msets")
class ComplexDense(ComplexWeightsLayer):
    """Densely connected layer with complex weights, on complex activations.

    With complex weights `W = A + iB` and bias `b = c + id`, the input
    `x + iy` is mapped to `z = sigma(Ax - By + c) + i sigma(Bx + Ay + d)`
    (Wang et al., App. B, Eq. 10-11): the complex product `W (x + iy) + b`,
    then a real activation applied to the real parts and to the imaginary
    parts separately. `shared_weights=True` is the paper's parameter-saving
    option `A = B`, `c = d`. The product is computed as one real matrix
    product of `[x, y]` with the block matrix `[[A, B], [-B, A]]`.

    Args:
        units: positive integer, number of complex output units.
        activation: activation function applied to the real parts and to
            the imaginary parts separately (so even `"softmax"` never mixes
            the two halves). Default None: no activation (the complex
            linear map).
        use_bias: whether to add the complex bias `c + id`.
        shared_weights: if True, uses one matrix for `A` and `B` (and one
            vector for `c` and `d`): `(A + iA)(x + iy) = A(x - y) +
            iA(x + y)`.
        kernel_initializer: initializer of `A` and `B`.
        bias_initializer: initializer of `c` and `d`.
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: a complex tensor `[..., 2 * input_units]` (real parts, then
            imaginary parts).
        mask: optional boolean mask over the leading axes; it does not
            change the outputs and is returned as the output mask.

    Input shape:
        `[..., 2 * input_units]`; the last axis must be known and even.

    Output shape:
        `[..., 2 * units]`: the real parts, then the imaginary parts. A mask
        on the leading axes (e.g. from `ComplexOrderEmbedding(
        mask_zero=True)`) is passed through unchanged.

    Example:
    >>> x = keras.random.normal((2, 5, 2 * 8))
    >>> keras_msets.layers.ComplexDense(4)(x).shape
    (2, 5, 8)

    References:
        - Wang et al., "Encoding word order in complex embeddings",
          ICLR 2020.
        - Trabelsi et al., "Deep Complex Networks", ICLR 2018.
    """

    def __init__(
        self,
        units,
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
        self.units = check_positive_int("units", units)

    def build(self, input_shape):
        input_units = complex_units(input_shape, min_rank=2)
        self.add_complex_weights((input_units, self.units), self.units)

    def call(self, inputs, mask=None):
        # The mask is not used here: Keras passes it on unchanged.
        complex_units(inputs.shape, min_rank=2)
        inputs = as_features(inputs, self.compute_dtype)
        outputs = matmul_last_axis(inputs, self.block_kernel())
        return self.add_bias_and_activate(outputs)

    def compute_output_shape(self, input_shape):
        complex_units(input_shape, min_rank=2)
        return tuple(input_shape[:-1]) + (2 * self.units,)

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units})
        return config
