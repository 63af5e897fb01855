import keras
from keras import ops

from keras_msets.layers._complex_weights import add_bias_and_activate
from keras_msets.layers._complex_weights import add_complex_weights
from keras_msets.layers._complex_weights import block_kernel
from keras_msets.layers._complex_weights import complex_weights_config
from keras_msets.ops.checks import as_features
from keras_msets.ops.checks import check_features_argument
from keras_msets.ops.checks import check_mask_argument
from keras_msets.utils.validation import check_positive_int


@keras.saving.register_keras_serializable(package="keras_msets")
class ComplexDense(keras.layers.Layer):
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
        super().__init__(**kwargs)
        self.units = check_positive_int("units", units)
        self.activation = keras.activations.get(activation)
        self.use_bias = bool(use_bias)
        self.shared_weights = bool(shared_weights)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True

    def _input_units(self, input_shape):
        features = input_shape[-1] if len(input_shape) else None
        if len(input_shape) < 2 or features is None or features % 2:
            raise ValueError(
                "`inputs` must be a complex tensor [..., 2 * input_units] "
                "with a known, even last axis. Received: inputs.shape="
                f"{tuple(input_shape)}"
            )
        return features // 2

    def build(self, input_shape):
        input_units = self._input_units(input_shape)
        shape = (input_units, self.units)
        add_complex_weights(self, shape, self.units)

    def __call__(self, inputs, *args, **kwargs):
        # Before Keras converts the arguments to tensors: a string mask
        # would otherwise fail there with a backend error.
        check_features_argument("inputs", inputs)
        check_mask_argument("mask", kwargs.get("mask"), inputs)
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs, mask=None):
        # The mask is not used here: Keras passes it on unchanged.
        self._input_units(inputs.shape)
        inputs = as_features(inputs, self.compute_dtype)
        kernel = block_kernel(self)
        outputs = ops.matmul(inputs, kernel)
        outputs = add_bias_and_activate(self, outputs)
        return outputs

    def compute_output_shape(self, input_shape):
        self._input_units(input_shape)
        return tuple(input_shape[:-1]) + (2 * self.units,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                **complex_weights_config(self),
            }
        )
        return config
