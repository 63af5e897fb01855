"""What the word-embedding layers of Table 2 (Wang et al.) share.

Private. `TokenEmbeddingLayer` is the base of `WordPositionEmbedding`,
`ComplexVanillaEmbedding` and `ComplexOrderEmbedding`: vocabulary size,
width and the `mask_zero` mask. The layers take an initializer or an
array for their word vectors; `matrix_or_initializer` tells the two apart.
"""

import keras
import numpy as np
from keras import ops

from keras_msets.ops.checks import check_token_ids
from keras_msets.utils.validation import check_positive_int


def matrix_or_initializer(
    value, shape, name, meaning="(input_dim, output_dim)"
):
    """`(initializer, array or None)` for an initializer-or-array argument.

    An array is checked against `shape` (the error says what the shape is,
    `meaning`) and kept aside: it only builds the weight (then travels
    with the saved weights); the config records `"uniform"` in its place.
    """
    if isinstance(value, (np.ndarray, list, tuple)):
        values = np.asarray(value)
        if values.shape != tuple(shape):
            raise ValueError(
                f"An array `{name}` must have shape {tuple(shape)} "
                f"{meaning}. Received: {name}.shape={values.shape}"
            )
        return keras.initializers.get("uniform"), values
    return keras.initializers.get(value), None


def array_initializer(values):
    def initializer(shape, dtype=None):
        return ops.cast(values, dtype)

    return initializer


def as_ids(inputs, input_dim):
    """Checked token ids: integers in `[0, input_dim)` (see `check_token_ids`).

    A float id is a `TypeError` (casting would truncate 3.9 to 3), an id
    out of range a `ValueError` wherever the values are known.
    """
    return check_token_ids("inputs", inputs, input_dim, size_name="input_dim")


_CALL_ARGUMENTS = """Call arguments:
        inputs: integer token ids `[batch, length]` in `[0, input_dim)`.
            Float ids raise a `TypeError` (they would be truncated) on
            every call. Ids out of range (a negative id would wrap around
            to the last words, a too large one gives NaN or an index error)
            raise a `ValueError` wherever their values are known: in eager
            calls (every PyTorch call; TensorFlow and JAX outside a compiled
            function). Inside a compiled graph (`tf.function`, `jax.jit`,
            `fit`) the values do not exist yet and cannot be checked.

    Input shape:
        `[batch, length]`.
"""


class TokenEmbeddingLayer(keras.layers.Layer):
    """Base of the word-embedding layers (private).

    A subclass docstring holds `{{token_ids_call_arguments}}` where the
    shared `Call arguments:` and `Input shape:` sections go (the ids are
    checked by `as_ids`).

    Args:
        input_dim: positive integer, size of the vocabulary.
        output_dim: positive integer, width of the embedding.
        mask_zero: if True, id 0 is padding and a mask `ids != 0` is
            returned.
        **kwargs: base layer keyword arguments.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__doc__ is not None:  # None under `python -OO`
            cls.__doc__ = cls.__doc__.replace(
                "{{token_ids_call_arguments}}\n", _CALL_ARGUMENTS
            )

    def __init__(self, input_dim, output_dim, mask_zero=False, **kwargs):
        super().__init__(**kwargs)
        self.input_dim = check_positive_int("input_dim", input_dim)
        self.output_dim = check_positive_int("output_dim", output_dim)
        self.mask_zero = bool(mask_zero)
        self.supports_masking = self.mask_zero

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        return ops.not_equal(inputs, 0)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "input_dim": self.input_dim,
                "output_dim": self.output_dim,
                "mask_zero": self.mask_zero,
            }
        )
        return config
