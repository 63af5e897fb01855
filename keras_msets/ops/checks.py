"""Checks of tensor inputs (dtypes, ranks, token ids, masks) for layers.

Static properties (dtype, rank) are checked on every call, symbolic or
not. Values (the range of token ids) can only be checked where they are
known: in eager calls (`layer(x)`, `model(x)`, every torch call) and on the
numpy inputs of `predict` (the models of `keras_msets.models` check those
before Keras compiles the step). Inside a compiled graph (a `tf.function`
or `jax.jit` trace) the values are unknown and `check_token_ids` lets them
pass: a compiled step cannot raise on data.
"""

import keras
import numpy as np


def concrete_value(x):
    """`x` as a numpy array if its values are known now, else None.

    None for symbolic `KerasTensor`s and for tensors being traced into a
    compiled graph (a TensorFlow graph tensor, a JAX tracer), whose values
    do not exist yet.
    """
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, (int, float, list, tuple)):
        return np.asarray(x)
    if isinstance(x, keras.KerasTensor):
        return None
    try:
        return np.asarray(keras.ops.convert_to_numpy(x))
    except Exception:  # noqa: BLE001 - graph tensors and tracers have no value
        return None


def dtype_of(x):
    """The standardised dtype name of a tensor or array."""
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        dtype = np.asarray(x).dtype
    try:
        return keras.backend.standardize_dtype(dtype)
    except ValueError:
        # Strings, bytes and objects, which Keras has no name for: numpy's
        # name, so the caller's error can say what it received.
        return str(np.dtype(dtype))


def check_integer_dtype(name, x, what="token ids"):
    """A `TypeError` unless `x` holds integers (`what`: ids, positions...).

    Floats would be truncated where they index a table.
    """
    dtype = dtype_of(x)
    if "int" not in dtype:
        why = f"; float {what} would be truncated" if "float" in dtype else ""
        raise TypeError(
            f"`{name}` must hold integer {what} (an int dtype{why}). "
            f"Received: {name} with dtype={dtype}"
        )


def check_token_ids(name, ids, vocabulary_size, size_name="vocabulary_size"):
    """Checks that token ids are integers in `[0, vocabulary_size)`.

    The dtype is always checked; the values wherever they are known (see
    the module docstring). A negative id or one `>= vocabulary_size` would
    otherwise be read as another token (a negative index wraps around) or
    give NaN, without an error.

    Returns:
        `ids`, unchanged.
    """
    check_integer_dtype(name, ids)
    values = concrete_value(ids)
    if values is None or values.size == 0:
        return ids
    low, high = int(values.min()), int(values.max())
    if low < 0 or high >= vocabulary_size:
        raise ValueError(
            f"`{name}` must hold token ids in [0, {vocabulary_size - 1}] "
            f"({size_name}={vocabulary_size}). Received: {name} with ids "
            f"from {low} to {high}"
        )
    return ids


def check_mask(name, mask, shape):
    """Checks a boolean mask against the `[batch, n]` shape it must have.

    `shape` is the expected shape (entries may be None, unknown). Returns
    the mask as a boolean tensor, or None.
    """
    if mask is None:
        return None
    dtype = dtype_of(mask)
    if dtype not in ("bool",) and "int" not in dtype and "float" not in dtype:
        raise TypeError(
            f"`{name}` must be a boolean tensor. Received: {name} with "
            f"dtype={dtype}"
        )
    _check_shape(name, tuple(mask.shape), tuple(shape))
    if dtype != "bool":
        mask = keras.ops.cast(mask, "bool")
    return mask


def as_features(x, dtype, name="inputs"):
    """Set features as a floating tensor: integers and booleans are cast.

    Integer features (counts, one-hot codes) give the same result as the
    same values in floating point; any other dtype is a `TypeError`.
    """
    x_dtype = keras.backend.standardize_dtype(x.dtype)
    if "float" in x_dtype:
        return x
    if "int" in x_dtype or x_dtype == "bool":
        return keras.ops.cast(x, dtype)
    raise TypeError(
        f"`{name}` must hold numbers (a float, int or bool dtype). "
        f"Received: {name} with dtype={x_dtype}"
    )


def check_features_argument(name, x):
    """A `TypeError` for set features that are not numbers.

    Run before the call (see `check_mask_argument`), so that symbolic
    inputs are checked too. `x` may be a list of sets.
    """
    if isinstance(x, (list, tuple)):
        for k, item in enumerate(x):
            check_features_argument(f"{name}[{k}]", item)
        return
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        return
    if isinstance(dtype, np.dtype) and dtype.kind in "biuf":
        numeric = True
    else:
        # Also numpy dtypes of other kinds: bfloat16 (ml_dtypes) has kind
        # "V" but is a float for Keras.
        try:
            dtype = keras.backend.standardize_dtype(dtype)
        except ValueError:
            numeric = False
        else:
            numeric = "float" in dtype or "int" in dtype or dtype == "bool"
    if not numeric:
        raise TypeError(
            f"`{name}` must hold numbers (a float, int or bool dtype). "
            f"Received: {name} with dtype={dtype}"
        )


def check_mask_argument(name, mask, x=None):
    """Checks the `mask` call argument of the set `x` before the call.

    Run before Keras converts the call arguments to tensors (a string mask
    would otherwise fail there with a backend error) and on symbolic
    inputs too (Keras then only infers the output shape). A `TypeError`
    for a mask that is not boolean, int or float, a `ValueError` for a
    mask whose shape is not `x`'s `[batch, n]` (or more leading axes of
    `x`, as a Keras mask over every axis but the last). `mask`
    may also be a list of masks (or None entries), one per set of the
    list `x`.
    """
    if mask is None:
        return
    if isinstance(mask, (list, tuple)) and not all(
        isinstance(m, (bool, int, float)) for m in mask
    ):
        sets = x if isinstance(x, (list, tuple)) else None
        if sets is not None and len(sets) != len(mask):
            sets = None
        for k, m in enumerate(mask):
            check_mask_argument(
                f"{name}[{k}]", m, None if sets is None else sets[k]
            )
        return
    if not hasattr(mask, "shape"):
        mask = np.asarray(mask)
    dtype = mask.dtype
    if isinstance(dtype, np.dtype) and dtype.kind not in "biuf":
        raise TypeError(
            f"`{name}` must be a boolean tensor. Received: {name} with "
            f"dtype={dtype}"
        )
    if x is not None and hasattr(x, "shape") and len(x.shape) >= 3:
        _check_mask_shape(name, tuple(mask.shape), tuple(x.shape))


def _check_mask_shape(name, mask_shape, x_shape):
    rank = min(max(len(mask_shape), 2), len(x_shape) - 1)
    _check_shape(name, mask_shape, x_shape[:rank])


def shapes_compatible(a, b):
    """Whether two static shapes agree (`None` matches any length)."""
    a, b = tuple(a), tuple(b)
    return len(a) == len(b) and all(
        p is None or q is None or p == q for p, q in zip(a, b, strict=True)
    )


def _check_shape(name, mask_shape, shape):
    """A `ValueError` unless the mask's static shape is `shape`."""
    if not shapes_compatible(mask_shape, shape):
        raise ValueError(
            f"`{name}` must have shape {shape} (one entry per element). "
            f"Received: {name}.shape={mask_shape}"
        )
