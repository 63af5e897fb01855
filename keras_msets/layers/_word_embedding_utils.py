"""Helpers shared by the word-embedding layers of Table 2 (Wang et al.).

Private: `WordPositionEmbedding` and `ComplexVanillaEmbedding` take an
initializer or an array for their word vectors; these helpers tell the two
apart and turn token ids of any dtype into integer ids.
"""

import keras
import numpy as np
from keras import ops


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


def as_ids(inputs):
    dtype = keras.backend.standardize_dtype(inputs.dtype)
    if not keras.backend.is_int_dtype(dtype):
        return ops.cast(inputs, "int32")
    return inputs
