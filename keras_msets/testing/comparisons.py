"""Comparisons of (nested) tensors and arrays from any backend.

`assert_all_close` and `assert_all_equal` walk two structures of tensors,
numpy arrays and numbers (lists, tuples and dicts nest them) and report the
first difference with its path, shape and worst element. Only numpy and
`keras.ops` are used, so the same check runs on every backend.
"""

import keras
import numpy as np


def to_numpy(x):
    """Converts a tensor (any backend, any device) or array-like to numpy."""
    if x is None or isinstance(x, np.ndarray):
        return x
    if isinstance(x, (list, tuple)):
        return np.asarray(x)
    if isinstance(x, (bool, int, float, complex, np.generic)):
        return np.asarray(x)
    if isinstance(x, keras.Variable):
        x = x.value
    return np.asarray(keras.ops.convert_to_numpy(x))


def map_structure(fn, structure):
    """Applies `fn` to the leaves of nested lists, tuples and dicts."""
    if isinstance(structure, dict):
        return {k: map_structure(fn, v) for k, v in structure.items()}
    if isinstance(structure, (list, tuple)):
        return type(structure)(map_structure(fn, v) for v in structure)
    return fn(structure)


def to_numpy_structure(structure):
    """Converts every leaf of a nested structure to numpy."""
    return map_structure(to_numpy, structure)


def _compare(x, y, path, compare_leaf):
    """Walks two structures in parallel; returns a failure string or None."""
    if isinstance(x, dict) or isinstance(y, dict):
        if not (isinstance(x, dict) and isinstance(y, dict)):
            return f"{path}: one side is a dict, the other is {type(y)}"
        if set(x) != set(y):
            return f"{path}: dict keys differ: {sorted(x)} vs {sorted(y)}"
        for k in x:
            failure = _compare(x[k], y[k], f"{path}[{k!r}]", compare_leaf)
            if failure:
                return failure
        return None
    if isinstance(x, (list, tuple)) or isinstance(y, (list, tuple)):
        if not (isinstance(x, (list, tuple)) and isinstance(y, (list, tuple))):
            # A plain (nested) list of numbers against a tensor is compared
            # as an array, like numpy.testing does.
            other = y if isinstance(x, (list, tuple)) else x
            if other is not None:
                return compare_leaf(to_numpy(x), to_numpy(y), path)
            return f"{path}: one side is a sequence, the other is not"
        if len(x) != len(y):
            return f"{path}: lengths differ: {len(x)} vs {len(y)}"
        for i, (a, b) in enumerate(zip(x, y, strict=True)):
            failure = _compare(a, b, f"{path}[{i}]", compare_leaf)
            if failure:
                return failure
        return None
    if x is None or y is None:
        if x is None and y is None:
            return None
        return f"{path}: one side is None, the other is not"
    return compare_leaf(to_numpy(x), to_numpy(y), path)


def _close_leaf(atol, rtol):
    def compare(a, b, path):
        if a.shape != b.shape:
            return f"{path}: shapes differ: {a.shape} vs {b.shape}"
        if a.dtype == bool or b.dtype == bool:
            a, b = a.astype(np.int8), b.astype(np.int8)
        a64 = a.astype(np.float64) if a.dtype.kind != "c" else a
        b64 = b.astype(np.float64) if b.dtype.kind != "c" else b
        close = np.isclose(a64, b64, atol=atol, rtol=rtol, equal_nan=True)
        if close.all():
            return None
        diff = np.abs(a64 - b64)
        diff = np.where(np.isnan(diff), np.inf, diff)
        worst = np.unravel_index(np.argmax(diff), diff.shape)
        return (
            f"{path}: {int((~close).sum())} of {close.size} elements differ "
            f"(atol={atol}, rtol={rtol}); largest |x - y| = "
            f"{diff[worst]:.3g} at index {tuple(int(i) for i in worst)} "
            f"(x={a64[worst]!r}, y={b64[worst]!r})"
        )

    return compare


def _equal_leaf(a, b, path):
    if a.shape != b.shape:
        return f"{path}: shapes differ: {a.shape} vs {b.shape}"
    equal = a == b
    if np.all(equal):
        return None
    first = np.argwhere(~np.asarray(equal))[0]
    index = tuple(int(i) for i in first)
    return (
        f"{path}: {int((~equal).sum())} of {equal.size} elements differ; "
        f"first at index {index} (x={a[index]!r}, y={b[index]!r})"
    )


def assert_all_close(x, y, atol=1e-6, rtol=1e-6, msg=None):
    """Asserts two (nested) structures of tensors/arrays are elementwise close.

    Tensors of any backend are converted with `keras.ops.convert_to_numpy`.
    """
    failure = _compare(x, y, "value", _close_leaf(atol, rtol))
    if failure:
        raise AssertionError(f"{msg}\n{failure}" if msg else failure)


def assert_all_equal(x, y, msg=None):
    """Asserts two (nested) structures of tensors/arrays are equal."""
    failure = _compare(x, y, "value", _equal_leaf)
    if failure:
        raise AssertionError(f"{msg}\n{failure}" if msg else failure)
