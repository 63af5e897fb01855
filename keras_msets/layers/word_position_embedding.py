import keras

from keras_msets.layers._keras_hub import import_keras_hub
from keras_msets.layers._layer_base import arguments_config
from keras_msets.layers._word_embedding_utils import TokenEmbeddingLayer
from keras_msets.layers._word_embedding_utils import array_initializer
from keras_msets.layers._word_embedding_utils import as_ids
from keras_msets.layers._word_embedding_utils import matrix_or_initializer
from keras_msets.utils.validation import check_choice
from keras_msets.utils.validation import check_positive_float
from keras_msets.utils.validation import check_positive_int

POSITIONS = ("learned", "sinusoidal")


@keras.saving.register_keras_serializable(package="keras_msets")
class WordPositionEmbedding(TokenEmbeddingLayer):
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

    {{token_ids_call_arguments}}

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
        super().__init__(input_dim, output_dim, mask_zero=mask_zero, **kwargs)
        self.position = check_choice("position", position, POSITIONS)
        self.sequence_length = check_positive_int(
            "sequence_length",
            sequence_length,
            allow_none=position == "sinusoidal",
        )
        self.embeddings_initializer, values = matrix_or_initializer(
            embeddings_initializer,
            (self.input_dim, self.output_dim),
            "embeddings_initializer",
        )
        self.position_initializer = keras.initializers.get(position_initializer)
        self.max_wavelength = check_positive_float(
            "max_wavelength", max_wavelength
        )
        self.token_embedding = keras.layers.Embedding(
            self.input_dim,
            self.output_dim,
            embeddings_initializer=(
                self.embeddings_initializer
                if values is None
                else array_initializer(values)
            ),
            dtype=self.dtype_policy,
            name="token_embedding",
        )
        keras_hub = import_keras_hub(
            "The 'pe' and 'tpe' embeddings use KerasHub's position layers"
        )
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
        words = self.token_embedding(as_ids(inputs, self.input_dim))
        return words + self.position_embedding(words)

    def compute_output_shape(self, input_shape):
        self._check_length(tuple(input_shape))
        return tuple(input_shape) + (self.output_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            arguments_config(
                self,
                (
                    "position",
                    "sequence_length",
                    "embeddings_initializer",
                    "position_initializer",
                    "max_wavelength",
                ),
            )
        )
        return config
