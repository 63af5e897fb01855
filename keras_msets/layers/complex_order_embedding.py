import keras
from keras import ops

from keras_msets import ops as msets_ops
from keras_msets.layers._layer_base import arguments_config
from keras_msets.layers._word_embedding_utils import TokenEmbeddingLayer
from keras_msets.layers._word_embedding_utils import array_initializer
from keras_msets.layers._word_embedding_utils import as_ids
from keras_msets.layers._word_embedding_utils import matrix_or_initializer
from keras_msets.ops.phase import cos_sin
from keras_msets.utils.validation import check_choice
from keras_msets.utils.validation import check_rank

SHARING_SCHEMES = ("none", "word", "dimension")
# Sinusoidal frequencies `max_wavelength ** (-2 k / d_model)`, as in
# Vaswani et al. and KerasHub's `SinePositionEncoding`.
_MAX_WAVELENGTH = 10000.0


def sinusoidal_frequencies(output_dim, dtype=None):
    """`omega_k = 10000 ** (-2 k / d_model)`, `d_model = 2 * output_dim`.

    Complex dimension `k` (`k = 0 .. output_dim - 1`) carries the pair of
    Transformer sinusoids `2k`, `2k + 1` of a `d_model = 2 * output_dim`
    encoding (App. A). Computed with the same float operations as
    KerasHub's `SinePositionEncoding`.
    """
    min_frequency = ops.cast(1.0 / _MAX_WAVELENGTH, dtype)
    exponents = ops.cast(2 * ops.arange(output_dim), dtype) / ops.cast(
        2 * output_dim, dtype
    )
    return ops.power(min_frequency, exponents)


def _sinusoidal_initializer(sharing, output_dim):
    def initializer(shape, dtype=None):
        frequencies = sinusoidal_frequencies(output_dim, dtype)
        if sharing == "none":
            # A product, not a broadcast view (PyTorch cannot assign one).
            return ops.ones(shape, dtype) * frequencies[None, :]
        if sharing == "word":
            return frequencies
        # One frequency per word: word j starts with omega_{j mod d}.
        return ops.take(frequencies, ops.arange(shape[0]) % output_dim)

    return initializer


@keras.saving.register_keras_serializable(package="keras_msets")
class ComplexOrderEmbedding(TokenEmbeddingLayer):
    """Complex word embedding whose phase rotates with the word's position.

    Word `j` at position `pos` is embedded as the complex vector
    `f(j, pos) = r_j * exp(i (omega_j * pos + theta_j))` (Wang et al.,
    Eq. 5), dimension by dimension: the amplitude `r` plays the role of a
    classical word vector, the frequency `omega` says how fast the word
    turns with its position, and the optional initial phase `theta` shifts
    it. Moving a word by `n` positions multiplies its embedding by
    `exp(i omega n)`, whatever `pos`, so relative order is linear in the
    embedding. With word-shared sinusoidal frequencies, unit amplitudes and
    no initial phase, the embedding is equivalent to the Transformer's
    sinusoidal position encoding but not identical to it (App. A,
    Eq. 8-9: "equivalent, albeit not identical"): the token at index `t`
    gets the encoding of position `t + 1`, and complex dimension `k`
    holds its components `2k + 1` (the cosine, as the real part) and `2k`
    (the sine, as the imaginary part), a reordering of the dimensions.

    Positions: the token at index `k` of a row (`k = 0, 1, ...`) has
    position `pos = k + 1`, as in the paper's code; position 0 is never
    used; the ids must have rank 2 (positions count along axis 1), another
    rank raises a `ValueError`. Phases `omega * pos` are computed in
    float32 whatever the dtype
    policy, reduced modulo 2 pi exactly (within about 1e-6 rad of float64
    at `pos = 2e5` for `|omega| < 4`, see
    `keras_msets.ops.position_phase`), and the output is cast to the
    compute dtype last. Positions count every index, padded or not, so
    left padding shifts them. With `mask_zero=True`, id 0 marks padding:
    its output is computed like any other id (as in
    `keras.layers.Embedding`) and the layer returns the mask `ids != 0`,
    which the next layers receive.

    Sharing schemes (Table 4), for `frequency_sharing` and
    `amplitude_sharing`:
    - `"none"`: one value per word and dimension, shape
      `(input_dim, output_dim)`.
    - `"word"`: shared by all words, one value per dimension, shape
      `(output_dim,)`.
    - `"dimension"`: shared by all dimensions, one value per word, shape
      `(input_dim,)`.

    Args:
        input_dim: positive integer, size of the vocabulary.
        output_dim: positive integer, number of complex dimensions `D`; the
            output has `2 * D` real features.
        frequency_sharing: `"none"` (default), `"word"` or `"dimension"`.
        amplitude_sharing: `"none"` (default), `"word"` or `"dimension"`.
        use_initial_phase: if True, adds learned initial phases `theta`,
            one per word and dimension, initialised to 0. Off by default,
            as in the paper's experiments.
        frequency_initializer: `"sinusoidal"` (default) or any Keras
            initializer. `"sinusoidal"` gives dimension `k` the frequency
            `10000 ** (-2 k / (2 D))` (so every word starts with the
            frequencies of the Transformer sinusoids of `d_model = 2 D`);
            with `frequency_sharing="dimension"` word `j` gets the value
            of dimension `j mod D`.
        amplitude_initializer: a Keras initializer (default `"uniform"`, as
            `keras.layers.Embedding`), or an array holding the initial
            amplitudes (e.g. GloVe vectors) with the shape of the amplitude
            parameter: `(input_dim, output_dim)` for `amplitude_sharing=
            "none"`, `(output_dim,)` for `"word"`, `(input_dim,)` for
            `"dimension"`. An array is used only to build the weights (its
            values then travel with the saved weights, like
            `keras.layers.Embedding(weights=...)`); `get_config()` records
            `"uniform"` in its place.
        mask_zero: if True, id 0 is padding and a mask `ids != 0` is
            returned.
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    {{token_ids_call_arguments}}

    Output shape:
        `[batch, length, 2 * output_dim]`: the `D` real parts
        `r cos(omega pos + theta)`, then the `D` imaginary parts
        `r sin(omega pos + theta)`.

    Example:
    >>> ids = keras.ops.convert_to_tensor([[4, 2, 7, 0]])
    >>> embedding = keras_msets.layers.ComplexOrderEmbedding(
    ...     10, 8, mask_zero=True
    ... )
    >>> embedding(ids).shape
    (1, 4, 16)

    References:
        - Wang et al., "Encoding word order in complex embeddings",
          ICLR 2020.
        - Vaswani et al., "Attention Is All You Need", NeurIPS 2017.
    """

    def __init__(
        self,
        input_dim,
        output_dim,
        frequency_sharing="none",
        amplitude_sharing="none",
        use_initial_phase=False,
        frequency_initializer="sinusoidal",
        amplitude_initializer="uniform",
        mask_zero=False,
        **kwargs,
    ):
        super().__init__(input_dim, output_dim, mask_zero=mask_zero, **kwargs)
        self.frequency_sharing = check_choice(
            "frequency_sharing", frequency_sharing, SHARING_SCHEMES
        )
        self.amplitude_sharing = check_choice(
            "amplitude_sharing", amplitude_sharing, SHARING_SCHEMES
        )
        self.use_initial_phase = bool(use_initial_phase)
        if frequency_initializer == "sinusoidal":
            self.frequency_initializer = "sinusoidal"
        else:
            self.frequency_initializer = keras.initializers.get(
                frequency_initializer
            )
        self.amplitude_initializer, self._amplitude_values = (
            matrix_or_initializer(
                amplitude_initializer,
                self._shape(self.amplitude_sharing),
                "amplitude_initializer",
                meaning=(
                    f"(the shape of the amplitudes for input_dim="
                    f"{self.input_dim}, output_dim={self.output_dim}, "
                    f"amplitude_sharing={self.amplitude_sharing!r})"
                ),
            )
        )

    def _shape(self, sharing):
        """Shape of a parameter under a Table 4 sharing scheme."""
        if sharing == "none":
            return (self.input_dim, self.output_dim)
        if sharing == "word":
            return (self.output_dim,)
        return (self.input_dim,)

    def build(self, input_shape=None):
        if self.frequency_initializer == "sinusoidal":
            frequency_initializer = _sinusoidal_initializer(
                self.frequency_sharing, self.output_dim
            )
        else:
            frequency_initializer = self.frequency_initializer
        # Every weight is read in full precision even under mixed
        # precision (`autocast=False`): `call` computes in float32.
        self.frequency = self.add_weight(
            name="frequency",
            shape=self._shape(self.frequency_sharing),
            initializer=frequency_initializer,
            autocast=False,
        )
        amplitude_initializer = self.amplitude_initializer
        if self._amplitude_values is not None:
            amplitude_initializer = array_initializer(self._amplitude_values)
        self.amplitude = self.add_weight(
            name="amplitude",
            shape=self._shape(self.amplitude_sharing),
            initializer=amplitude_initializer,
            autocast=False,
        )
        if self.use_initial_phase:
            self.initial_phase = self.add_weight(
                name="initial_phase",
                shape=(self.input_dim, self.output_dim),
                initializer="zeros",
                autocast=False,
            )

    def _lookup(self, parameter, sharing, ids):
        """`[batch, length, output_dim]` or a broadcastable shape."""
        if sharing == "none":
            return ops.take(parameter, ids, axis=0)
        if sharing == "word":
            return parameter
        return ops.expand_dims(ops.take(parameter, ids, axis=0), -1)

    def _cos_sin(self, phase):
        # One range reduction for both on JAX, whose CPU `cos` and `sin`
        # cost most of this layer's step there.
        return cos_sin(phase)

    def _check_rank(self, shape):
        check_rank(
            "inputs",
            shape,
            2,
            "2: token ids [batch, length] (positions count along axis 1)",
        )

    def call(self, inputs):
        self._check_rank(inputs.shape)
        ids = as_ids(inputs, self.input_dim)
        # float32 (float64 for float64 weights) whatever the policy: float16
        # cannot count positions past 2048 and bfloat16 past 256.
        dtype = keras.backend.result_type(self.variable_dtype, "float32")
        positions = ops.arange(1, ops.shape(ids)[-1] + 1, dtype="int32")
        positions = ops.expand_dims(positions, -1)
        # Zeros `[batch, length, 1]` broadcast shared parameters to the ids.
        zeros = ops.expand_dims(ops.zeros_like(ids, dtype), -1)
        frequency = ops.cast(self.frequency, dtype)
        frequency = self._lookup(frequency, self.frequency_sharing, ids)
        # omega * pos modulo 2 pi, exact to about 1e-6 rad at pos = 1e5.
        phase = msets_ops.position_phase(
            frequency + zeros, positions, max_position=inputs.shape[-1]
        )
        if self.use_initial_phase:
            initial_phase = ops.cast(self.initial_phase, dtype)
            phase = phase + ops.take(initial_phase, ids, axis=0)
        amplitude = ops.cast(self.amplitude, dtype)
        amplitude = self._lookup(amplitude, self.amplitude_sharing, ids)
        amplitude = amplitude + zeros
        cos, sin = self._cos_sin(phase)
        outputs = msets_ops.complex_merge(amplitude * cos, amplitude * sin)
        return ops.cast(outputs, self.compute_dtype)

    def compute_output_shape(self, input_shape):
        self._check_rank(input_shape)
        return tuple(input_shape) + (2 * self.output_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            arguments_config(
                self,
                (
                    "frequency_sharing",
                    "amplitude_sharing",
                    "use_initial_phase",
                    "frequency_initializer",
                    "amplitude_initializer",
                ),
            )
        )
        return config
