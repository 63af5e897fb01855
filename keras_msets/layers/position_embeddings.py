"""The word embeddings compared in Table 2 of Wang et al. (ICLR 2020).

Five ways to embed a sentence of token ids, real or complex:

- `"none"`: `keras.layers.Embedding`, `[batch, length, d]`.
- `"pe"`: `WordPositionEmbedding(position="learned")`, `[batch, length, d]`.
- `"tpe"`: `WordPositionEmbedding(position="sinusoidal")`,
  `[batch, length, d]`.
- `"complex_vanilla"`: `ComplexVanillaEmbedding`, `[batch, length, 2 d]`.
- `"complex_order"`: `ComplexOrderEmbedding`, `[batch, length, 2 d]`.

`make_text_embedding(variant, ...)` builds any of them with one call, the
way the text classifiers of `keras_msets.models.text` do.

KerasHub (`pip install keras-hub`) provides the position layers of `"pe"`
and `"tpe"`; it is imported only when such a layer is created.
"""

import math

import keras
import numpy as np
from keras import ops

from keras_msets import ops as msets_ops
from keras_msets.layers.complex_order_embedding import ComplexOrderEmbedding

EMBEDDING_VARIANTS = ("none", "pe", "tpe", "complex_vanilla", "complex_order")
COMPLEX_EMBEDDING_VARIANTS = ("complex_vanilla", "complex_order")
POSITIONS = ("learned", "sinusoidal")


def _check_positive_int(value, name, allow_none=False):
    if value is None and allow_none:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer))
        or value <= 0
    ):
        raise ValueError(
            f"`{name}` must be a positive integer. Received: {name}={value!r}"
        )
    return int(value)


def _check_variant(variant):
    if variant not in EMBEDDING_VARIANTS:
        raise ValueError(
            f"`variant` must be one of {EMBEDDING_VARIANTS}. "
            f"Received: variant={variant!r}"
        )
    return variant


def is_complex_variant(variant):
    """True for the variants whose output is complex (`[..., 2 d]`)."""
    return _check_variant(variant) in COMPLEX_EMBEDDING_VARIANTS


def _keras_hub():
    try:
        import keras_hub
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError(
            "The 'pe' and 'tpe' embeddings use KerasHub's position layers, "
            f"which could not be imported ({e}). Install them with "
            "`pip install keras-hub` (or `pip install keras-msets[hub]`)."
        ) from e
    return keras_hub


def _matrix_or_initializer(value, shape, name):
    """`(initializer, array or None)` for an initializer-or-array argument.

    An array is checked against `shape` and kept aside: it only builds the
    weight (then travels with the saved weights); the config records
    `"uniform"` in its place, as `ComplexOrderEmbedding` does.
    """
    if isinstance(value, (np.ndarray, list, tuple)):
        values = np.asarray(value)
        if values.shape != tuple(shape):
            raise ValueError(
                f"An array `{name}` must have shape {tuple(shape)} "
                f"(input_dim, output_dim). Received: {name}.shape="
                f"{values.shape}"
            )
        return keras.initializers.get("uniform"), values
    return keras.initializers.get(value), None


def _array_initializer(values):
    def initializer(shape, dtype=None):
        return ops.cast(values, dtype)

    return initializer


def _as_ids(inputs):
    dtype = keras.backend.standardize_dtype(inputs.dtype)
    if not keras.backend.is_int_dtype(dtype):
        return ops.cast(inputs, "int32")
    return inputs


@keras.saving.register_keras_serializable(package="keras_msets")
class WordPositionEmbedding(keras.layers.Layer):
    """Word embedding plus a position embedding ("PE" and "TPE" of Table 2).

    The position-enriched baselines of Wang et al. (Sec. 3.1): a word
    vector `WE(j)` and a position vector `PE(pos)` are added,
    `E(j, pos) = WE(j) + PE(pos)` (App. A). `position="learned"` is the
    vanilla position embedding of Gehring et al., a trainable table with one
    vector per position (KerasHub's `PositionEmbedding`, "PE");
    `position="sinusoidal"` is the fixed trigonometric encoding of Vaswani
    et al., Eq. 7, `PE(pos, 2k) = sin(pos / 10000^(2k/d))`,
    `PE(pos, 2k+1) = cos(pos / 10000^(2k/d))` (KerasHub's
    `SinePositionEncoding`, "TPE"; the paper reports the fixed version
    since a trainable one scored the same).

    Positions: the token at index `k` of a row has position `k`
    (`k = 0, 1, ...`, the KerasHub convention) and positions count every
    index, padded or not. With `mask_zero=True`, id 0 marks padding: its
    output is computed like any other id and the layer returns the mask
    `ids != 0`.

    Args:
        input_dim: positive integer, size of the vocabulary.
        output_dim: positive integer, size `d` of the word and position
            vectors.
        position: `"learned"` (default, "PE") or `"sinusoidal"` ("TPE").
        sequence_length: positive integer, the number of learned position
            vectors; inputs may be at most this long. Required for
            `"learned"`; unused (may be None) for `"sinusoidal"`.
        embeddings_initializer: a Keras initializer of the word vectors
            (default `"uniform"`, as `keras.layers.Embedding`), or an array
            `(input_dim, output_dim)` of initial word vectors (e.g. GloVe).
            An array only builds the weights (its values then travel with
            the saved weights); `get_config()` records `"uniform"` instead.
        position_initializer: initializer of the learned position vectors
            (default `"glorot_uniform"`, as KerasHub); unused for
            `"sinusoidal"`.
        max_wavelength: largest wavelength of the sinusoids (default
            10000, Eq. 7); unused for `"learned"`.
        mask_zero: if True, id 0 is padding and a mask `ids != 0` is
            returned.
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: integer token ids `[batch, length]`.

    Input shape:
        `[batch, length]`.

    Output shape:
        `[batch, length, output_dim]`.

    Example:
    >>> ids = keras.ops.convert_to_tensor([[4, 2, 7, 0]])
    >>> embedding = keras_msets.layers.WordPositionEmbedding(
    ...     10, 8, position="sinusoidal", mask_zero=True
    ... )
    >>> embedding(ids).shape
    (1, 4, 8)

    References:
        - Wang et al., "Encoding word order in complex embeddings",
          ICLR 2020.
        - Gehring et al., "Convolutional Sequence to Sequence Learning",
          ICML 2017.
        - Vaswani et al., "Attention Is All You Need", NeurIPS 2017.
    """

    def __init__(
        self,
        input_dim,
        output_dim,
        position="learned",
        sequence_length=None,
        embeddings_initializer="uniform",
        position_initializer="glorot_uniform",
        max_wavelength=10000.0,
        mask_zero=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.input_dim = _check_positive_int(input_dim, "input_dim")
        self.output_dim = _check_positive_int(output_dim, "output_dim")
        if position not in POSITIONS:
            raise ValueError(
                f"`position` must be one of {POSITIONS}. "
                f"Received: position={position!r}"
            )
        self.position = position
        self.sequence_length = _check_positive_int(
            sequence_length,
            "sequence_length",
            allow_none=position == "sinusoidal",
        )
        self.embeddings_initializer, values = _matrix_or_initializer(
            embeddings_initializer,
            (self.input_dim, self.output_dim),
            "embeddings_initializer",
        )
        self.position_initializer = keras.initializers.get(position_initializer)
        if (
            isinstance(max_wavelength, bool)
            or not isinstance(max_wavelength, (int, float, np.number))
            or not max_wavelength > 0
        ):
            raise ValueError(
                "`max_wavelength` must be a positive number. Received: "
                f"max_wavelength={max_wavelength!r}"
            )
        self.max_wavelength = float(max_wavelength)
        self.mask_zero = bool(mask_zero)
        self.supports_masking = self.mask_zero

        self.token_embedding = keras.layers.Embedding(
            self.input_dim,
            self.output_dim,
            embeddings_initializer=(
                self.embeddings_initializer
                if values is None
                else _array_initializer(values)
            ),
            dtype=self.dtype_policy,
            name="token_embedding",
        )
        keras_hub = _keras_hub()
        if self.position == "learned":
            self.position_embedding = keras_hub.layers.PositionEmbedding(
                self.sequence_length,
                initializer=self.position_initializer,
                dtype=self.dtype_policy,
                name="position_embedding",
            )
        else:
            self.position_embedding = keras_hub.layers.SinePositionEncoding(
                max_wavelength=self.max_wavelength,
                dtype=self.dtype_policy,
                name="position_encoding",
            )

    def build(self, input_shape=None):
        input_shape = tuple(input_shape) if input_shape is not None else ()
        self.token_embedding.build(input_shape)
        self.position_embedding.build(input_shape + (self.output_dim,))

    def _check_length(self, shape):
        length = shape[-1] if len(shape) else None
        if (
            self.position == "learned"
            and length is not None
            and length > self.sequence_length
        ):
            raise ValueError(
                f"The inputs hold {length} positions but the layer has "
                f"`sequence_length`={self.sequence_length} learned position "
                f"vectors. Received: inputs.shape={tuple(shape)}"
            )

    def call(self, inputs):
        self._check_length(tuple(inputs.shape))
        words = self.token_embedding(_as_ids(inputs))
        return words + self.position_embedding(words)

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        return ops.not_equal(inputs, 0)

    def compute_output_shape(self, input_shape):
        self._check_length(tuple(input_shape))
        return tuple(input_shape) + (self.output_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "input_dim": self.input_dim,
                "output_dim": self.output_dim,
                "position": self.position,
                "sequence_length": self.sequence_length,
                "embeddings_initializer": keras.initializers.serialize(
                    self.embeddings_initializer
                ),
                "position_initializer": keras.initializers.serialize(
                    self.position_initializer
                ),
                "max_wavelength": self.max_wavelength,
                "mask_zero": self.mask_zero,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="keras_msets")
class ComplexVanillaEmbedding(keras.layers.Layer):
    """Complex word embedding with a random phase and no position.

    The "Complex-vanilla" baseline of Wang et al. (Sec. 3.1, Table 2;
    `r_{j,d} e^{i omega_{j,d}}` in Table 4), taken from the quantum-inspired
    networks of Wang et al. (2019) and Li et al. (2019): word `j` is the
    complex vector `z_j = r_j * exp(i theta_j)`, dimension by dimension,
    with an amplitude `r_j` (a classical word vector, e.g. initialised with
    pre-trained vectors) and a phase `theta_j` drawn uniformly from
    `[-pi, pi)`. The phase depends on the word only, never on its position,
    so the embedding carries no word order: it is `ComplexOrderEmbedding`
    with `omega pos` replaced by a constant.

    Trainable phase: the paper says only that the phase is "randomly
    initialized in a range from -pi to pi". By default (`trainable_phase=
    False`) the phases stay fixed, so the variant has exactly the
    `input_dim * output_dim` trainable parameters of a real word embedding;
    `trainable_phase=True` trains them too (Table 4 counts more parameters
    for complex-vanilla than for complex-order, which suggests the authors
    did). Fixed phases are a non-trainable weight, saved with the model.

    With `mask_zero=True`, id 0 marks padding: its output is computed like
    any other id and the layer returns the mask `ids != 0`.

    Args:
        input_dim: positive integer, size of the vocabulary.
        output_dim: positive integer, number of complex dimensions `D`; the
            output has `2 * D` real features.
        amplitude_initializer: a Keras initializer (default `"uniform"`, as
            `keras.layers.Embedding`), or an array `(input_dim, output_dim)`
            of initial amplitudes (e.g. GloVe vectors). An array only builds
            the weights; `get_config()` records `"uniform"` instead.
        phase_initializer: initializer of the phases. None (default):
            `keras.initializers.RandomUniform(-pi, pi)`.
        trainable_phase: whether the phases are trained. Defaults to False.
        mask_zero: if True, id 0 is padding and a mask `ids != 0` is
            returned.
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: integer token ids `[batch, length]`.

    Input shape:
        `[batch, length]`.

    Output shape:
        `[batch, length, 2 * output_dim]`: the `D` real parts
        `r cos(theta)`, then the `D` imaginary parts `r sin(theta)`.

    Example:
    >>> ids = keras.ops.convert_to_tensor([[4, 2, 7, 0]])
    >>> embedding = keras_msets.layers.ComplexVanillaEmbedding(
    ...     10, 8, mask_zero=True
    ... )
    >>> embedding(ids).shape
    (1, 4, 16)

    References:
        - Wang et al., "Encoding word order in complex embeddings",
          ICLR 2020.
        - Wang et al., "Semantic Hilbert Space for Text Representation
          Learning", WWW 2019.
        - Li et al., "CNM: An Interpretable Complex-valued Network for
          Matching", NAACL 2019.
    """

    def __init__(
        self,
        input_dim,
        output_dim,
        amplitude_initializer="uniform",
        phase_initializer=None,
        trainable_phase=False,
        mask_zero=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.input_dim = _check_positive_int(input_dim, "input_dim")
        self.output_dim = _check_positive_int(output_dim, "output_dim")
        self.amplitude_initializer, self._amplitude_values = (
            _matrix_or_initializer(
                amplitude_initializer,
                (self.input_dim, self.output_dim),
                "amplitude_initializer",
            )
        )
        if phase_initializer is None:
            phase_initializer = keras.initializers.RandomUniform(
                -math.pi, math.pi
            )
        self.phase_initializer = keras.initializers.get(phase_initializer)
        if not isinstance(trainable_phase, bool):
            raise ValueError(
                "`trainable_phase` must be a bool. Received: "
                f"trainable_phase={trainable_phase!r}"
            )
        self.trainable_phase = trainable_phase
        self.mask_zero = bool(mask_zero)
        self.supports_masking = self.mask_zero

    def build(self, input_shape=None):
        shape = (self.input_dim, self.output_dim)
        amplitude_initializer = self.amplitude_initializer
        if self._amplitude_values is not None:
            amplitude_initializer = _array_initializer(self._amplitude_values)
        self.amplitude = self.add_weight(
            name="amplitude", shape=shape, initializer=amplitude_initializer
        )
        self.phase = self.add_weight(
            name="phase",
            shape=shape,
            initializer=self.phase_initializer,
            trainable=self.trainable_phase,
        )

    def call(self, inputs):
        ids = _as_ids(inputs)
        amplitude = ops.take(self.amplitude, ids, axis=0)
        phase = ops.take(self.phase, ids, axis=0)
        return msets_ops.complex_merge(
            amplitude * ops.cos(phase), amplitude * ops.sin(phase)
        )

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        return ops.not_equal(inputs, 0)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (2 * self.output_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "input_dim": self.input_dim,
                "output_dim": self.output_dim,
                "amplitude_initializer": keras.initializers.serialize(
                    self.amplitude_initializer
                ),
                "phase_initializer": keras.initializers.serialize(
                    self.phase_initializer
                ),
                "trainable_phase": self.trainable_phase,
                "mask_zero": self.mask_zero,
            }
        )
        return config


def make_text_embedding(
    variant,
    input_dim,
    output_dim,
    sequence_length=None,
    pretrained_embeddings=None,
    mask_zero=True,
    name="embedding",
    **kwargs,
):
    """Builds one of the five word embeddings of Table 2 (Wang et al.).

    | variant | returns |
    |---|---|
    | `"none"` | `keras.layers.Embedding` (no position information) |
    | `"pe"` | `WordPositionEmbedding(position="learned")` |
    | `"tpe"` | `WordPositionEmbedding(position="sinusoidal")` |
    | `"complex_vanilla"` | `ComplexVanillaEmbedding` |
    | `"complex_order"` | `ComplexOrderEmbedding` (Table 2 setting: no
      initial phase, no sharing, sinusoidal frequencies) |

    Real variants output `[batch, length, output_dim]`, complex ones
    `[batch, length, 2 * output_dim]` (real parts, then imaginary parts).
    `pretrained_embeddings`, when given, initialises the word vectors of
    the real variants and the amplitudes of the complex ones, as in the
    paper ("the amplitude embedding is initialized by the pre-trained word
    vectors").

    Args:
        variant: one of `"none"`, `"pe"`, `"tpe"`, `"complex_vanilla"`,
            `"complex_order"`.
        input_dim: positive integer, size of the vocabulary (id 0 included).
        output_dim: positive integer, real size (real variants) or complex
            size (complex variants) of each word vector.
        sequence_length: positive integer, the longest input; required for
            `"pe"` (one learned vector per position), ignored otherwise.
        pretrained_embeddings: optional array `(input_dim, output_dim)`.
        mask_zero: if True (default), id 0 is padding and the layer returns
            the mask `ids != 0`.
        name: name of the layer. Defaults to `"embedding"`.
        **kwargs: further arguments of the chosen layer (e.g.
            `frequency_sharing=` for `"complex_order"`, `trainable_phase=`
            for `"complex_vanilla"`).

    Returns:
        A Keras layer taking int ids `[batch, length]`.

    Example:
    >>> layer = keras_msets.layers.make_text_embedding("complex_order", 10, 4)
    >>> layer(keras.ops.convert_to_tensor([[3, 1, 0]])).shape
    (1, 3, 8)
    """
    _check_variant(variant)
    input_dim = _check_positive_int(input_dim, "input_dim")
    output_dim = _check_positive_int(output_dim, "output_dim")
    initial = "uniform"
    if pretrained_embeddings is not None:
        initial = np.asarray(pretrained_embeddings)
        if initial.shape != (input_dim, output_dim):
            raise ValueError(
                "`pretrained_embeddings` must have shape (input_dim, "
                f"output_dim) = {(input_dim, output_dim)}. Received: "
                f"pretrained_embeddings.shape={initial.shape}"
            )
    if variant == "none":
        return keras.layers.Embedding(
            input_dim,
            output_dim,
            mask_zero=mask_zero,
            weights=None if pretrained_embeddings is None else [initial],
            name=name,
            **kwargs,
        )
    if variant in ("pe", "tpe"):
        return WordPositionEmbedding(
            input_dim,
            output_dim,
            position="learned" if variant == "pe" else "sinusoidal",
            sequence_length=sequence_length if variant == "pe" else None,
            embeddings_initializer=initial,
            mask_zero=mask_zero,
            name=name,
            **kwargs,
        )
    if variant == "complex_vanilla":
        return ComplexVanillaEmbedding(
            input_dim,
            output_dim,
            amplitude_initializer=initial,
            mask_zero=mask_zero,
            name=name,
            **kwargs,
        )
    return ComplexOrderEmbedding(
        input_dim,
        output_dim,
        amplitude_initializer=initial,
        mask_zero=mask_zero,
        name=name,
        **kwargs,
    )
