"""Checking the estimators' inputs and running pairs of sets in batches.

Inputs are one pair of sets or a batch of pairs (`_as_sets`); pairs are
checked against the preset's spec (`_check_pairs`), rescaled
(`_rescaled`), padded and masked (`_pad`) and run through the model
(`predict_prepared`), which is loaded once per preset and shared by all
threads (`load_estimator`).
"""

import functools
import os
import threading

import keras
import numpy as np

from keras_msets import zoo
from keras_msets.data.mixtures import pad_sets
from keras_msets.stats.classical import refuse_masked
from keras_msets.training.tasks import set_task
from keras_msets.utils.validation import check_positive_int

# Each set needs this many points more than its dimension: `d + 1` points
# make a set's covariance non-singular, which whitening (of the union)
# and the rotation to the first set's principal axes need.
MIN_EXTRA_POINTS = 1
# Pairs are padded to a multiple of this many elements (fewer distinct
# shapes, so fewer compilations of the predict function).
_PAD_MULTIPLE = 32
# One cached model is shared by every thread: loading and prediction are
# serialized (JAX donates and deletes buffers of a concurrent call).
_MODEL_LOCK = threading.RLock()


@functools.lru_cache(maxsize=8)
def _load_preset(name, root):
    del root  # part of the cache key only
    return zoo.load(name)


def load_estimator(name):
    """The model of zoo preset `name`, loaded once and cached.

    The cache is keyed by the preset name and the presets folder
    (`keras_msets.zoo.presets_root()`), so pointing
    `$KERAS_MSETS_ZOO_DIR` elsewhere loads the other folder's model.
    """
    with _MODEL_LOCK:
        return _load_preset(name, str(zoo.presets_root()))


def _real_array(value, name):
    """`value` as a float64 array; None when it is not one rectangular
    numeric array (a list of sets of different sizes)."""
    refuse_masked(name, value)
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            refuse_masked(f"{name}[{i}]", item)
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        return None
    if array.dtype.kind == "c":
        raise TypeError(
            f"`{name}` must hold real numbers; complex samples are not "
            "supported (pass the real and imaginary parts as separate "
            f"coordinates). Received: {name} of dtype {array.dtype}"
        )
    if array.dtype.kind == "O" and isinstance(value, (list, tuple)):
        return None
    if array.dtype.kind not in "biuf":
        raise TypeError(
            f"`{name}` must hold real numbers. Received: {name} of dtype "
            f"{array.dtype}"
        )
    return array.astype(np.float64)


def _as_sets(value, name):
    """A list of float64 `[n_i, d_i]` arrays and whether it was one set."""
    array = _real_array(value, name)
    if array is not None and array.ndim == 2:
        sets, single = [array], True
    elif array is not None and array.ndim == 3:
        sets, single = list(array), False
    elif array is None and isinstance(value, (list, tuple)) and value:
        sets, single = [], False
        for i, item in enumerate(value):
            item = _real_array(item, f"{name}[{i}]")
            if item is None or item.ndim != 2:
                raise ValueError(
                    f"`{name}` is a list of sets: each must be a 2-D array "
                    f"[num_points, d]. Received: {name}[{i}] of shape "
                    f"{getattr(item, 'shape', None)}"
                )
            sets.append(item)
    else:
        shape = None if array is None else array.shape
        raise ValueError(
            f"`{name}` must be one set, a 2-D array [num_points, d], or a "
            "batch of sets, a 3-D array [batch, num_points, d] or a list "
            f"of 2-D arrays. Received: {name} of shape {shape}"
        )
    if not sets:
        raise ValueError(f"`{name}` holds no sets. Received: {name}={value!r}")
    for i, values in enumerate(sets):
        if not np.all(np.isfinite(values)):
            bad = int(np.count_nonzero(~np.isfinite(values)))
            where = name if single else f"{name}[{i}]"
            raise ValueError(
                f"`{where}` must contain only finite values. Received "
                f"{bad} non-finite entries (NaN or inf)."
            )
    return sets, single


def _as_set_pair(x, y):
    """`_as_sets` of `x` and of `y`, which must both be one set or both a
    batch: (x sets, y sets, whether they were one set each)."""
    x_sets, x_single = _as_sets(x, "x")
    y_sets, y_single = _as_sets(y, "y")
    if x_single != y_single:
        raise ValueError(
            "`x` and `y` must both be one set ([num_points, d]) or both a "
            f"batch of sets. Received: {len(x_sets)} set(s) as "
            f"{'one set' if x_single else 'a batch'} and {len(y_sets)} as "
            f"{'one set' if y_single else 'a batch'}"
        )
    return x_sets, y_sets, x_single


def _model_dim(model):
    """The input dimension a built fixed-dimension model needs, or None."""
    if getattr(model, "dimension_equivariant", False) or not model.built:
        return None
    try:
        shapes = model.get_build_config().get("set_shapes")
    except (AttributeError, NotImplementedError, TypeError):
        return None
    if not shapes or shapes[0][-1] is None:
        return None
    return int(shapes[0][-1])


def _resolve_model(model, spec):
    """`(model, allowed_dims)`; `allowed_dims` is `(low, high)` or None."""
    if model is None:
        model = spec.preset
    if isinstance(model, (str, os.PathLike)):
        return load_estimator(model), spec.dims
    if not isinstance(model, keras.Model):
        raise ValueError(
            "`model` must be None (the default preset), a preset name or a "
            f"keras.Model. Received: model of type {type(model).__name__}"
        )
    dim = _model_dim(model)
    if dim is not None and spec.joint:
        # A fixed-dimension model of joint samples reads [x_j, y_j].
        dim = dim // 2 if dim % 2 == 0 else None
    return model, None if dim is None else (dim, dim)


def _check_pairs(spec, x_sets, y_sets, allowed_dims, estimator):
    if len(x_sets) != len(y_sets):
        raise ValueError(
            "`x` and `y` must hold the same number of sets. Received: "
            f"{len(x_sets)} and {len(y_sets)}"
        )
    for i, (x, y) in enumerate(zip(x_sets, y_sets, strict=True)):
        where = f" (pair {i})" if len(x_sets) > 1 else ""
        if x.shape[1] != y.shape[1]:
            raise ValueError(
                "`x` and `y` must have the same dimension d (number of "
                f"columns){where}. Received: x.shape={x.shape}, "
                f"y.shape={y.shape}"
            )
        d = x.shape[1]
        if d < 1:
            raise ValueError(
                f"`x` and `y` need at least one column (d >= 1){where}. "
                f"Received: x.shape={x.shape}, y.shape={y.shape}"
            )
        if allowed_dims is not None and not (
            allowed_dims[0] <= d <= allowed_dims[1]
        ):
            low, high = allowed_dims
            supported = f"d = {low}" if low == high else f"d = {low}..{high}"
            raise ValueError(
                f"`{estimator}` supports {supported} (the dimensions its "
                f"model was trained on). Received: d={d}{where}"
            )
        if spec.paired and x.shape[0] != y.shape[0]:
            raise ValueError(
                "`x` and `y` must have the same number of rows: row j of "
                "both is one joint sample (x_j, y_j)"
                f"{where}. Received: x.shape={x.shape}, y.shape={y.shape}"
            )
        # The joint samples [x_j, y_j] have dimension 2d.
        needed = "2d + 1" if spec.joint else "d + 1"
        minimum = (2 * d if spec.joint else d) + MIN_EXTRA_POINTS
        for name, values in (("x", x), ("y", y)):
            if values.shape[0] < minimum:
                raise ValueError(
                    f"Each set needs at least {needed} = {minimum} points "
                    f"(d = {d}){where}. Received: {name}.shape="
                    f"{values.shape}"
                )
    # Set sizes outside the trained ones: `_warn_set_size`, called by
    # `_estimate` (it knows whether the model is the preset itself).


def _pad(sets, width):
    """float64 `[num, width, d]` and the mask (`mixtures.pad_sets`)."""
    return pad_sets(sets, width, np.float64)


def _round_up(value, multiple):
    return -(-value // multiple) * multiple


def predict_prepared(model, x, y, x_mask, y_mask):
    """The model's first output for prepared (preprocessed) padded pairs.

    `keras_msets.training.tasks.set_task.predict_prepared` (one
    `predict_on_batch` call on a batch filled up to a power of two),
    serialized with every other call of the shared models.

    Returns:
        float64 `[batch]`.
    """
    with _MODEL_LOCK:
        return set_task.predict_prepared(model, x, y, x_mask, y_mask)


def _positive_int(value, name):
    return check_positive_int(name, value)


def _rescaled(x, y):
    """`x` and `y` divided by the largest absolute value of both.

    One positive factor for both sets, an affine map that every estimate
    here is invariant to; it keeps the covariances of the preprocessing
    finite and normal for values near the float64 limits (1e155 and
    above, where squares overflow, or 1e-300, where they underflow).
    """
    scale = max(np.max(np.abs(x)), np.max(np.abs(y)))
    if scale == 0.0:
        return x, y
    return x / scale, y / scale
