"""Masked reductions over the set axis of padded tensors.

A batch of sets travels as a padded tensor `x` plus a mask whose shape is
`x.shape[:axis + 1]` (usually `[batch, set_size]` with `axis=1`); the mask is
broadcast over the trailing feature axes. `mask=None` means every element is
valid; integer and float masks are accepted (nonzero means valid).

Padded elements never change a result: they are replaced with the identity
of the reduction through `keras.ops.where` (never multiplied by zero), so
even `inf` or `NaN` in padded slots cannot leak into values or gradients.
Every reduction gives a finite, documented value for an all-masked set.
"""

import numpy as np
from keras import ops
from keras.backend import standardize_dtype

from keras_msets.ops.checks import shapes_compatible as _shapes_compatible
from keras_msets.utils.validation import check_int

MASK_LOGIT = -1e9
"""Logit for masked attention positions: large, negative and finite.

`-inf` would make a fully masked softmax row `NaN`; `-1e9` gives a uniform
row instead and `exp(-1e9 - max)` is exactly 0 whenever a valid logit exists.
"""


def _normalize_axis(axis, ndim, name="axis"):
    """Checks that `axis` indexes a tensor of rank `ndim`; returns it >= 0."""
    axis = check_int(name, axis)
    if not -ndim <= axis < ndim:
        raise ValueError(
            f"`{name}` must be in [{-ndim}, {ndim}) for a tensor of rank "
            f"{ndim}. Received: {name}={axis}"
        )
    return int(axis) % ndim


def _is_float(dtype):
    return "float" in standardize_dtype(dtype)


def _to_bool(mask):
    mask = ops.convert_to_tensor(mask)
    if standardize_dtype(mask.dtype) == "bool":
        return mask
    return ops.not_equal(mask, 0)


def expand_mask(mask, x, axis=1):
    """Validates a set mask against `x` and makes it broadcastable to `x`.

    The mask must have the shape `x.shape[:axis + 1]` (every axis up to and
    including the set axis). Unknown (`None`) dimensions match anything.

    Args:
        mask: boolean, integer or float tensor of shape `x.shape[:axis + 1]`;
            nonzero entries mark valid elements.
        x: the padded tensor the mask describes.
        axis: integer, the set axis of `x`. Defaults to `1`.

    Returns:
        A boolean tensor of shape `x.shape[:axis + 1] + (1,) * k`, where `k`
        is the number of trailing feature axes of `x`, so it broadcasts
        against `x`.

    Example:

    >>> x = keras.ops.ones((2, 3, 4))
    >>> mask = [[1, 1, 0], [1, 0, 0]]
    >>> keras_msets.ops.expand_mask(mask, x).shape
    (2, 3, 1)
    """
    x_shape = tuple(x.shape)
    axis = _normalize_axis(axis, len(x_shape))
    mask = _to_bool(mask)
    expected = x_shape[: axis + 1]
    received = tuple(mask.shape)
    compatible = _shapes_compatible(expected, received)
    if not compatible:
        label = "(batch, set_size)" if axis == 1 else f"x.shape[:{axis + 1}]"
        raise ValueError(
            f"`mask` must have shape {label} = {expected} "
            f"matching `x`. Received: mask.shape={received}"
        )
    for _ in range(len(x_shape) - axis - 1):
        mask = ops.expand_dims(mask, -1)
    return mask


def masked_count(mask, axis=1, keepdims=False, dtype="float32"):
    """Counts the valid elements of each set.

    An all-masked set has count 0.

    Args:
        mask: boolean, integer or float tensor (nonzero means valid), for
            example of shape `[batch, set_size]`.
        axis: integer, the set axis of `mask`. Defaults to `1`.
        keepdims: whether to keep the reduced axis with length 1.
        dtype: dtype of the result. Defaults to `"float32"`.

    Returns:
        The number of valid elements, of shape `mask.shape` without `axis`
        (or with length 1 there if `keepdims=True`).

    Example:

    >>> keras_msets.ops.masked_count([[1, 1, 0], [0, 0, 0]])
    array([2., 0.], dtype=float32)
    """
    mask = _to_bool(mask)
    axis = _normalize_axis(axis, len(mask.shape))
    return ops.sum(ops.cast(mask, dtype), axis=axis, keepdims=keepdims)


_REDUCTION_ARGS = """Args:
        x: tensor of shape `[batch, set_size, ...]`.
        mask: optional tensor of shape `x.shape[:axis + 1]`; nonzero entries
            mark valid elements. `None` means all valid.
        axis: integer, the set axis. Defaults to `1`.
        keepdims: whether to keep the reduced axis with length 1.
"""


def _reduction(function):
    """Writes the `Args:` the masked reductions share into the docstring."""
    if function.__doc__ is not None:  # None under `python -OO`
        function.__doc__ = function.__doc__.replace(
            "{{reduction_args}}\n", _REDUCTION_ARGS
        )
    return function


def _fill_and_reduce(reduce, x, mask, axis, keepdims, fill_like):
    """`reduce` along `axis`, masked elements replaced by `fill_like(x)`."""
    x = ops.convert_to_tensor(x)
    axis = _normalize_axis(axis, len(x.shape))
    if mask is not None:
        mask = expand_mask(mask, x, axis)
        x = ops.where(mask, x, fill_like(x))
    return reduce(x, axis=axis, keepdims=keepdims)


@_reduction
def masked_sum(x, mask=None, axis=1, keepdims=False):
    """Sums the valid elements of each set along `axis`.

    An all-masked set sums to 0.

    {{reduction_args}}

    Returns:
        The sum over the valid elements, shaped like `x` without `axis`.

    Example:

    >>> x = keras.ops.ones((2, 3, 4))
    >>> keras_msets.ops.masked_sum(x, [[1, 1, 0], [0, 0, 0]])[:, 0]
    array([2., 0.], dtype=float32)
    """
    return _fill_and_reduce(ops.sum, x, mask, axis, keepdims, ops.zeros_like)


@_reduction
def masked_mean(x, mask=None, axis=1, keepdims=False):
    """Averages the valid elements of each set along `axis`.

    An all-masked set, or an empty set axis (`set_size` 0), gives 0 (the
    division by its zero count is guarded, so neither the value nor the
    gradient is `NaN`). Integer and boolean `x` are averaged in float32.

    {{reduction_args}}

    Returns:
        The mean over the valid elements, shaped like `x` without `axis`.

    Example:

    >>> x = keras.ops.reshape(keras.ops.arange(6.0), (2, 3, 1))
    >>> keras_msets.ops.masked_mean(x, [[1, 1, 0], [0, 0, 0]])[:, 0]
    array([0.5, 0. ], dtype=float32)
    """
    x = ops.convert_to_tensor(x)
    if not _is_float(x.dtype):
        x = ops.cast(x, "float32")
    axis = _normalize_axis(axis, len(x.shape))
    if mask is None:
        if x.shape[axis]:
            return ops.mean(x, axis=axis, keepdims=keepdims)
        # An empty or run-time set axis: its length may be 0, and a plain
        # mean would divide by it.
        total = ops.sum(x, axis=axis, keepdims=keepdims)
        count = ops.cast(ops.shape(x)[axis], x.dtype)
        return total / ops.maximum(count, 1)
    mask = expand_mask(mask, x, axis)
    total = ops.sum(
        ops.where(mask, x, ops.zeros_like(x)), axis=axis, keepdims=keepdims
    )
    count = ops.sum(ops.cast(mask, x.dtype), axis=axis, keepdims=keepdims)
    return total / ops.maximum(count, 1)


def _masked_extremum(x, mask, axis, keepdims, largest):
    x = ops.convert_to_tensor(x)
    axis = _normalize_axis(axis, len(x.shape))
    reduce = ops.max if largest else ops.min
    if 0 in tuple(x.shape):
        # No element at all: the value of an all-masked set, 0, or an empty
        # result (batch 0); a max over an empty tensor is an error on some
        # backends.
        if mask is not None:
            expand_mask(mask, x, axis)
        return ops.sum(x, axis=axis, keepdims=keepdims)
    if mask is None:
        result = reduce(x, axis=axis, keepdims=keepdims)
        if x.shape[axis] is not None:
            return result
        # A run-time length that may be 0 (TensorFlow then gives -inf).
        nonempty = ops.greater(ops.shape(x)[axis], 0)
        return ops.where(nonempty, result, ops.zeros_like(result))
    mask = expand_mask(mask, x, axis)
    dtype = standardize_dtype(x.dtype)
    if dtype == "bool":
        info_min, info_max = False, True
    elif dtype == "bfloat16":
        info_min, info_max = -3.3895314e38, 3.3895314e38
    elif "float" in dtype:
        info_min, info_max = np.finfo(dtype).min, np.finfo(dtype).max
    else:
        info_min, info_max = np.iinfo(dtype).min, np.iinfo(dtype).max
    # A finite fill (not +-inf): masked slots can never win against a valid
    # element, and an all-masked set stays finite before it is replaced.
    fill = ops.full_like(x, info_min if largest else info_max)
    result = reduce(ops.where(mask, x, fill), axis=axis, keepdims=keepdims)
    any_valid = ops.any(mask, axis=axis, keepdims=keepdims)
    return ops.where(any_valid, result, ops.zeros_like(result))


@_reduction
def masked_max(x, mask=None, axis=1, keepdims=False):
    """Takes the maximum over the valid elements of each set along `axis`.

    An all-masked set, or an empty set axis (`set_size` 0), gives 0. The
    gradient flows only to the valid element that attains the maximum
    (split evenly between exact ties, as the backend's own `max` does);
    padded elements and all-masked sets get a zero gradient, never `NaN`.

    {{reduction_args}}

    Returns:
        The maximum over the valid elements, shaped like `x` without `axis`.

    Example:

    >>> x = keras.ops.reshape(keras.ops.arange(6.0), (2, 3, 1))
    >>> keras_msets.ops.masked_max(x, [[1, 1, 0], [0, 0, 0]])[:, 0]
    array([1., 0.], dtype=float32)
    """
    return _masked_extremum(x, mask, axis, keepdims, largest=True)


@_reduction
def masked_min(x, mask=None, axis=1, keepdims=False):
    """Takes the minimum over the valid elements of each set along `axis`.

    An all-masked set, or an empty set axis (`set_size` 0), gives 0. The
    gradient flows only to the valid element that attains the minimum;
    padded elements and all-masked sets get a zero gradient, never `NaN`.

    {{reduction_args}}

    Returns:
        The minimum over the valid elements, shaped like `x` without `axis`.

    Example:

    >>> x = keras.ops.reshape(keras.ops.arange(6.0), (2, 3, 1))
    >>> keras_msets.ops.masked_min(x, [[0, 1, 1], [0, 0, 0]])[:, 0]
    array([1., 0.], dtype=float32)
    """
    return _masked_extremum(x, mask, axis, keepdims, largest=False)


@_reduction
def masked_product(x, mask=None, axis=1, keepdims=False):
    """Multiplies the valid elements of each set along `axis` (real values).

    Padded elements act as 1, so an all-masked set gives 1. For long sets
    prefer the log-polar products in `keras_msets.ops.log_polar`, which do not
    underflow or overflow.

    {{reduction_args}}

    Returns:
        The product over the valid elements, shaped like `x` without `axis`.

    Example:

    >>> x = keras.ops.reshape(keras.ops.arange(1.0, 7.0), (2, 3, 1))
    >>> keras_msets.ops.masked_product(x, [[1, 1, 0], [0, 0, 0]])[:, 0]
    array([2., 1.], dtype=float32)
    """
    return _fill_and_reduce(ops.prod, x, mask, axis, keepdims, ops.ones_like)


def mask_logits(logits, mask):
    """Sets the logits of masked positions to `MASK_LOGIT` (`-1e9`).

    Use before a softmax: masked positions then get exactly zero weight
    whenever one position is valid, and an all-masked row gets a uniform
    (finite) distribution instead of `NaN`. In `float16`, whose range ends
    near 65504, the fill is the most negative finite `float16` instead.

    Args:
        logits: floating tensor, e.g. `[batch, heads, queries, keys]`.
        mask: boolean, integer or float tensor broadcastable to `logits`
            (nonzero means valid), e.g. `[batch, 1, 1, keys]`.

    Returns:
        A tensor like `logits` with masked positions set to `MASK_LOGIT`.

    Example:

    >>> logits = keras.ops.zeros((1, 3))
    >>> keras_msets.ops.mask_logits(logits, [[True, True, False]])
    array([[ 0.e+00,  0.e+00, -1.e+09]], dtype=float32)
    """
    logits = ops.convert_to_tensor(logits)
    mask = _to_bool(mask)
    fill = MASK_LOGIT
    if standardize_dtype(logits.dtype) == "float16":
        fill = float(np.finfo(np.float16).min)
    return ops.where(mask, logits, ops.full_like(logits, fill))
