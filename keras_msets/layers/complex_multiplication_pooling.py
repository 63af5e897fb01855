import keras
from keras import ops

from keras_msets import ops as msets_ops
from keras_msets.layers._layer_base import ChecksInputs
from keras_msets.utils.validation import check_choice

INPUT_FORMATS = ("log_polar", "complex")
OUTPUT_FORMATS = ("log_polar", "complex")


@keras.saving.register_keras_serializable(package="keras_msets")
class ComplexMultiplicationPooling(ChecksInputs, keras.layers.Layer):
    """Multiplies complex numbers over the set axis, in log-polar form.

    The forward weights of a diagonal complex multiset automaton are the
    products, state by state, of the per-element complex transition weights
    (DeBenedetto & Chiang, Sec. 3 and 5.1). As in the paper, each number is
    stored as `e^r (a + bi)` with `(a, b)` normalised to unit length, so the
    product is `exp(sum r) * exp(i * sum theta)` with `theta = atan2(b, a)`:
    sums instead of products, finite for sets of 10^5 elements or more.
    The sums are computed in float32 whatever the dtype policy (the output
    is cast to the compute dtype last), and the phase sum is exact modulo
    2 pi up to about 1e-6 rad at 10^5 elements, for angles of any mean
    (see `keras_msets.ops.log_polar_product`).
    Padded elements are the identity `1 + 0i`, so an empty (all-masked) set
    gives the initial weight (`1 + 0i` without `use_initial_weights`).

    The default output keeps the log-polar form the reference implementation
    feeds to its readout: `[cos(sum theta), sin(sum theta), sum r]`, always
    finite. `output_format="complex"` returns `exp(sum r) * exp(i sum theta)`
    on the `[..., 2*d]` convention instead, which overflows to `inf` once
    `sum r` exceeds about 88 (float32): use it for short sets only.

    Args:
        input_format: `"log_polar"` (default): inputs are `[..., n, 3*d]`
            holding `r`, then `a`, then `b` (the direction `(a, b)` need not
            be normalised; only its angle is used, and `(0, 0)` counts as
            angle 0). `"complex"`: inputs are complex activations
            `[..., n, 2*d]` (real parts then imaginary parts), converted with
            `r = log|z|`, `theta = arg z`; a factor exactly 0 gives
            `sum r = -inf`.
        output_format: `"log_polar"` (default) or `"complex"`, see above.
        use_initial_weights: if True, multiplies the product by a learned
            complex initial weight vector `lambda` (one per state), stored as
            a log-modulus and an angle, both initialised to 0 (`lambda = 1`).
            The paper reports it made no difference; off by default.
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: a `[batch, n, 3*d]` (log-polar) or `[batch, n, 2*d]`
            (complex) tensor.
        mask: optional boolean `[batch, n]`, True for real elements. A Keras
            mask from an upstream layer (e.g. `Embedding(mask_zero=True)`) is
            used automatically.

    Input shape:
        `[batch, n, 3*d]` or `[batch, n, 2*d]` according to `input_format`.

    Output shape:
        `[batch, 3*d]` (log-polar output) or `[batch, 2*d]` (complex output).

    Example:
    >>> x = keras.random.normal((2, 7, 3 * 4))
    >>> pooled = keras_msets.layers.ComplexMultiplicationPooling()(x)
    >>> pooled.shape
    (2, 12)

    References:
        - DeBenedetto & Chiang, "Representing Unordered Data Using
          Complex-Weighted Multiset Automata", ICML 2020.
    """

    def __init__(
        self,
        input_format="log_polar",
        output_format="log_polar",
        use_initial_weights=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_choice("input_format", input_format, INPUT_FORMATS)
        check_choice("output_format", output_format, OUTPUT_FORMATS)
        self.input_format = input_format
        self.output_format = output_format
        self.use_initial_weights = bool(use_initial_weights)
        self.supports_masking = True

    def _num_states(self, input_shape):
        if len(input_shape) < 3:
            raise ValueError(
                "`inputs` must have rank >= 3: [batch, set_size, features]. "
                f"Received: inputs.shape={tuple(input_shape)}"
            )
        features = input_shape[-1]
        parts = 3 if self.input_format == "log_polar" else 2
        if features is None or features % parts:
            raise ValueError(
                f"With input_format={self.input_format!r} the last axis of "
                f"`inputs` must be a known multiple of {parts}. "
                f"Received: inputs.shape={tuple(input_shape)}"
            )
        return features // parts

    def build(self, input_shape):
        num_states = self._num_states(input_shape)
        if self.use_initial_weights:
            # Read in full precision even under mixed precision: they join
            # the float32 sums of `call`.
            self.initial_log_modulus = self.add_weight(
                name="initial_log_modulus",
                shape=(num_states,),
                initializer="zeros",
                autocast=False,
            )
            self.initial_phase = self.add_weight(
                name="initial_phase",
                shape=(num_states,),
                initializer="zeros",
                autocast=False,
            )

    def call(self, inputs, mask=None):
        num_states = self._num_states(inputs.shape)
        # Sums of many phases need float32 (float64 stays float64), whatever
        # the dtype policy; the output is cast to the compute dtype last.
        working = keras.backend.result_type(inputs.dtype, "float32")
        inputs = ops.cast(inputs, working)
        if self.input_format == "log_polar":
            # One split (its gradient one concatenation), not two slices
            # (each a zero-filled input-sized gradient on some backends).
            log_modulus, direction = ops.split(inputs, [num_states], axis=-1)
            phase, phase_lo = msets_ops.accurate_phase(direction)
        else:
            log_modulus = ops.log(msets_ops.complex_modulus(inputs))
            phase, phase_lo = msets_ops.accurate_phase(inputs)
        log_modulus, phase = msets_ops.log_polar_product(
            log_modulus, phase, mask=mask, axis=-2, phase_lo=phase_lo
        )
        if self.use_initial_weights:
            log_modulus = log_modulus + ops.cast(
                self.initial_log_modulus, log_modulus.dtype
            )
            phase = phase + ops.cast(self.initial_phase, phase.dtype)
        if self.output_format == "complex":
            outputs = msets_ops.complex_from_polar(log_modulus, phase)
        else:
            outputs = ops.concatenate(
                [ops.cos(phase), ops.sin(phase), log_modulus], axis=-1
            )
        return ops.cast(outputs, self.compute_dtype)

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        num_states = self._num_states(input_shape)
        parts = 3 if self.output_format == "log_polar" else 2
        return tuple(input_shape[:-2]) + (parts * num_states,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "input_format": self.input_format,
                "output_format": self.output_format,
                "use_initial_weights": self.use_initial_weights,
            }
        )
        return config
