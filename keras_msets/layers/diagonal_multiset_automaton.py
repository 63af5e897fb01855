import keras
from keras import ops

from keras_msets.layers._layer_base import arguments_config
from keras_msets.layers.complex_multiplication_pooling import OUTPUT_FORMATS
from keras_msets.layers.complex_multiplication_pooling import (
    ComplexMultiplicationPooling,
)
from keras_msets.ops.checks import check_mask
from keras_msets.ops.checks import check_token_ids
from keras_msets.utils.validation import check_choice
from keras_msets.utils.validation import check_positive_int
from keras_msets.utils.validation import check_rank


def _tiny_initializer():
    return keras.initializers.VarianceScaling(scale=0.005)


@keras.saving.register_keras_serializable(package="keras_msets")
class DiagonalMultisetAutomaton(keras.layers.Layer):
    """Forward weights of a diagonal complex multiset automaton.

    Each symbol `a` has a complex diagonal transition matrix `mu(a)`, stored
    per state in the paper's form `e^r (x + iy) / |x + iy|` by three
    embeddings (`r`, `x`, `y`) of `num_states` each (DeBenedetto & Chiang,
    Sec. 5.1). The forward weights of a multiset are `lambda * prod_k
    mu(a_k)`, computed by `ComplexMultiplicationPooling` in log-polar form;
    diagonal matrices commute, so the order of the tokens cannot change the
    result. Complex states of a real-weighted automaton come in conjugate
    pairs, and a real readout of the `[Re, Im]` parts sees both members of a
    pair, so only half the states are stored (Sec. 5.1): `num_states=50`
    stands for a 100-state automaton.

    Initialisation follows the reference implementation: all three
    embeddings start tiny (`VarianceScaling(scale=0.005)`). This matters
    for training, not only for avoiding NaNs: an Adam step of size `lr` on
    `(x, y)` turns the angle by about `lr / |x + iy|`, so small initial
    directions explore angles fast, and as `|x + iy|` grows the angle
    updates anneal. The `complex_deepsets_units_digit` preset was trained
    from this initialisation. The phase is computed NaN-free even at `(0, 0)`
    (`keras_msets.ops.complex_phase`). Embeddings, angles and sums are
    computed in float32 whatever the dtype policy (under mixed precision
    the sub-layers use the float32 variable dtype) and the output is cast
    to the compute dtype last; the sum of angles is exact modulo 2 pi (see
    `ComplexMultiplicationPooling`).

    Args:
        alphabet_size: number of token ids, including the padding id 0 when
            `mask_zero=True`.
        num_states: number of stored complex states `d`.
        mask_zero: if True (default), token id 0 is padding: it is masked
            out (acts as the identity) and the mask is not propagated.
        use_initial_weights: learn a complex initial weight vector `lambda`
            (off by default; the paper found it made no difference).
        unit_modulus: if True, every transition weight lies on the unit
            circle (`r = 0`, no `r` embedding): the automaton can only turn
            angles, as a cyclic counter does. The log-polar output is then
            `[cos(sum theta), sin(sum theta)]` (`[batch, 2*d]`, the sum of
            log-moduli is identically 0 and left out). Not in the paper; see
            `ComplexDeepSets` for why we offer it.
        output_format: `"log_polar"` (default, `[cos(sum theta),
            sin(sum theta), sum r]`, `[batch, 3*d]`, always finite) or
            `"complex"` (`[batch, 2*d]` forward weights, real parts then
            imaginary parts; may overflow for long inputs).
        log_modulus_initializer: initializer of the `r` embedding.
        direction_initializer: initializer of the `x` and `y` embeddings.
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: int tensor `[batch, length]` of token ids in
            `[0, alphabet_size)`. Float ids raise a `TypeError` (they would
            be truncated) on every call. Ids out of range (a negative id
            would wrap around to the last ones, a too large one gives NaN
            or an index error) raise a `ValueError` wherever their values
            are known: in eager calls (every PyTorch call; TensorFlow and JAX
            outside a compiled function). Inside a compiled graph
            (`tf.function`, `jax.jit`, `fit`) the values do not exist yet
            and cannot be checked.
        mask: optional boolean `[batch, length]`, combined (logical and) with
            the `mask_zero` mask; another shape raises a `ValueError`.

    Input shape:
        `[batch, length]`, any length.

    Output shape:
        `[batch, 3*num_states]` (log-polar) or `[batch, 2*num_states]`.

    Example:
    >>> ids = np.array([[3, 1, 4, 0], [1, 5, 9, 2]])
    >>> layer = keras_msets.layers.DiagonalMultisetAutomaton(10, 8)
    >>> layer(ids).shape
    (2, 24)

    References:
        - DeBenedetto & Chiang, "Representing Unordered Data Using
          Complex-Weighted Multiset Automata", ICML 2020.
    """

    def __init__(
        self,
        alphabet_size,
        num_states,
        mask_zero=True,
        use_initial_weights=False,
        unit_modulus=False,
        output_format="log_polar",
        log_modulus_initializer=None,
        direction_initializer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.alphabet_size = check_positive_int("alphabet_size", alphabet_size)
        self.num_states = check_positive_int("num_states", num_states)
        check_choice("output_format", output_format, OUTPUT_FORMATS)
        self.mask_zero = bool(mask_zero)
        self.use_initial_weights = bool(use_initial_weights)
        self.unit_modulus = bool(unit_modulus)
        self.output_format = output_format
        self.log_modulus_initializer = keras.initializers.get(
            log_modulus_initializer or _tiny_initializer()
        )
        self.direction_initializer = keras.initializers.get(
            direction_initializer or _tiny_initializer()
        )
        self.supports_masking = True
        # Under mixed precision the sub-layers compute in the variable dtype
        # (float32): angles summed over long inputs need it. The output is
        # cast to the compute dtype last.
        inner_policy = self.dtype_policy
        if self.compute_dtype != self.variable_dtype:
            inner_policy = keras.DTypePolicy(self.variable_dtype)

        def embedding(name, initializer):
            return keras.layers.Embedding(
                alphabet_size,
                num_states,
                embeddings_initializer=initializer,
                dtype=inner_policy,
                name=name,
            )

        self.log_modulus_embedding = None
        if not self.unit_modulus:
            self.log_modulus_embedding = embedding(
                "log_modulus_embedding", self.log_modulus_initializer
            )
        self.real_embedding = embedding(
            "real_embedding", self.direction_initializer
        )
        self.imag_embedding = embedding(
            "imag_embedding", self.direction_initializer
        )
        self.pooling = ComplexMultiplicationPooling(
            input_format="log_polar",
            output_format=output_format,
            use_initial_weights=use_initial_weights,
            dtype=inner_policy,
            name="pooling",
        )

    def build(self, input_shape):
        for embedding in self._embeddings():
            embedding.build(input_shape)
        self.pooling.build(tuple(input_shape) + (3 * self.num_states,))

    def _embeddings(self):
        embeddings = [self.real_embedding, self.imag_embedding]
        if self.log_modulus_embedding is not None:
            embeddings.insert(0, self.log_modulus_embedding)
        return embeddings

    def _combined_mask(self, inputs, mask):
        mask = check_mask("mask", mask, tuple(inputs.shape))
        if self.mask_zero:
            zero_mask = ops.not_equal(inputs, 0)
            if mask is None:
                return zero_mask
            return ops.logical_and(zero_mask, mask)
        return mask

    def call(self, inputs, mask=None):
        check_rank("inputs", inputs.shape, 2, "2: token ids [batch, length]")
        check_token_ids("inputs", inputs, self.alphabet_size, "alphabet_size")
        inputs = ops.cast(inputs, "int32")
        parts = [embedding(inputs) for embedding in self._embeddings()]
        if self.unit_modulus:
            parts.insert(0, ops.zeros_like(parts[0]))  # r = 0: |mu(a)| = 1
        elements = ops.concatenate(parts, axis=-1)
        outputs = self.pooling(elements, mask=self._combined_mask(inputs, mask))
        if self.unit_modulus and self.output_format == "log_polar":
            # Drop sum(r), identically 0 (or lambda's constant log-modulus).
            outputs = outputs[:, : 2 * self.num_states]
        return ops.cast(outputs, self.compute_dtype)

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        log_polar = self.output_format == "log_polar"
        parts = 3 if log_polar and not self.unit_modulus else 2
        return (input_shape[0], parts * self.num_states)

    def get_config(self):
        config = super().get_config()
        config.update(
            arguments_config(
                self,
                (
                    "alphabet_size",
                    "num_states",
                    "mask_zero",
                    "use_initial_weights",
                    "unit_modulus",
                    "output_format",
                    "log_modulus_initializer",
                    "direction_initializer",
                ),
            )
        )
        return config
