"""Helpers shared by the word-embedding layers of Table 2 (Wang et al.).

Private: `WordPositionEmbedding` and `ComplexVanillaEmbedding` take an
initializer or an array for their word vectors; these helpers tell the two
apart and check token ids.
"""

import keras
import numpy as np
from keras import ops

from keras_msets.ops.checks import check_token_ids


def matrix_or_initializer(value, shape, name):
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
