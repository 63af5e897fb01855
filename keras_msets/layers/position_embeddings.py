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

import keras
import numpy as np

from keras_msets.layers.complex_order_embedding import ComplexOrderEmbedding
from keras_msets.layers.complex_vanilla_embedding import ComplexVanillaEmbedding
from keras_msets.layers.word_position_embedding import POSITIONS
from keras_msets.layers.word_position_embedding import WordPositionEmbedding
from keras_msets.utils.validation import check_choice
from keras_msets.utils.validation import check_positive_int

__all__ = [
    "COMPLEX_EMBEDDING_VARIANTS",
    "EMBEDDING_VARIANTS",
    "POSITIONS",
    "ComplexVanillaEmbedding",
    "WordPositionEmbedding",
    "is_complex_variant",
    "make_text_embedding",
]

EMBEDDING_VARIANTS = ("none", "pe", "tpe", "complex_vanilla", "complex_order")
COMPLEX_EMBEDDING_VARIANTS = ("complex_vanilla", "complex_order")


def _check_variant(variant):
    return check_choice("variant", variant, EMBEDDING_VARIANTS)


def is_complex_variant(variant):
    """True for the variants whose output is complex (`[..., 2 d]`)."""
    return _check_variant(variant) in COMPLEX_EMBEDDING_VARIANTS


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
    input_dim = check_positive_int("input_dim", input_dim)
    output_dim = check_positive_int("output_dim", output_dim)
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
