"""Argument checks shared by every layer, model, task and estimator.

One function per kind of argument, always called as `check(name, value,
...)`. Each returns the value in its canonical Python type (so a
`numpy.int64` becomes an `int`) and raises a `ValueError` in Keras's form
when the value is not acceptable:

    `num_heads` must be a positive integer. Received: num_heads=0

This module imports nothing of `keras_msets`: every other module may use
it.
"""

import math
import numbers


def is_int(value):
    """Whether `value` is an integer (Python or numpy), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_real(value):
    """Whether `value` is a real number (Python or numpy), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def fail(name, value, expected):
    """Raises the standard error: "`name` must be <expected>. Received: ..."."""
    raise ValueError(f"`{name}` must be {expected}. Received: {name}={value!r}")


def _bounded(noun, low, high, low_inclusive=True, high_inclusive=True):
    """`noun` with its bounds in words: "an integer in [0, 5]", "a number
    > 0"; `noun` alone without bounds."""
    if low is not None and high is not None:
        left = "[" if low_inclusive else "("
        right = "]" if high_inclusive else ")"
        return f"{noun} in {left}{low}, {high}{right}"
    if low is not None:
        return f"{noun} {'>=' if low_inclusive else '>'} {low}"
    if high is not None:
        return f"{noun} {'<=' if high_inclusive else '<'} {high}"
    return noun


def check_int(name, value, low=None, high=None, allow_none=False):
    """An integer with `low <= value <= high` (either bound may be None)."""
    if value is None and allow_none:
        return None
    if (
        not is_int(value)
        or (low is not None and value < low)
        or (high is not None and value > high)
    ):
        if low in (0, 1) and high is None:
            expected = f"a {'positive' if low else 'non-negative'} integer"
        else:
            expected = _bounded("an integer", low, high)
        fail(name, value, expected + (" or None" if allow_none else ""))
    return int(value)


def check_positive_int(name, value, allow_none=False, high=None):
    """A positive integer (at most `high` when given), or None if allowed."""
    return check_int(name, value, low=1, high=high, allow_none=allow_none)


def check_non_negative_int(name, value, allow_none=False):
    """An integer >= 0 (a seed, a count that may be zero)."""
    return check_int(name, value, low=0, allow_none=allow_none)


def check_float(
    name,
    value,
    low=None,
    high=None,
    low_inclusive=True,
    high_inclusive=True,
    allow_none=False,
):
    """A finite real number within the given bounds, returned as a float."""
    if value is None and allow_none:
        return None
    ok = is_real(value) and math.isfinite(float(value))
    if ok and low is not None:
        ok = value >= low if low_inclusive else value > low
    if ok and high is not None:
        ok = value <= high if high_inclusive else value < high
    if not ok:
        if low == 0 and high is None:
            sign = "non-negative" if low_inclusive else "positive"
            expected = f"a {sign} number"
        elif low is None and high is None:
            expected = "a finite number"
        else:
            expected = _bounded(
                "a number", low, high, low_inclusive, high_inclusive
            )
        fail(name, value, expected + (" or None" if allow_none else ""))
    return float(value)


def check_positive_float(name, value, allow_none=False):
    """A finite number > 0."""
    return check_float(
        name, value, low=0, low_inclusive=False, allow_none=allow_none
    )


def check_non_negative_float(name, value, allow_none=False):
    """A finite number >= 0."""
    return check_float(name, value, low=0, allow_none=allow_none)


def check_rate(name, value):
    """A dropout-like rate in [0, 1)."""
    return check_float(name, value, low=0, high=1, high_inclusive=False)


def check_fraction(name, value):
    """A fraction in [0, 1]."""
    return check_float(name, value, low=0, high=1)


def check_bool(name, value):
    """A Python bool (`numpy.bool_` accepted)."""
    if isinstance(value, bool):
        return value
    if type(value).__name__ == "bool_":
        return bool(value)
    fail(name, value, "a bool")


def check_choice(name, value, choices):
    """One of `choices`."""
    choices = tuple(choices)
    if not isinstance(value, (str, int, float, type(None))) or (
        value not in choices
    ):
        fail(name, value, f"one of {choices}")
    return value


def check_int_list(name, value, low=1, allow_none=False, allow_empty=True):
    """A list or tuple of integers >= `low`, returned as a list of ints."""
    if value is None and allow_none:
        return None
    kind = "positive integers" if low == 1 else f"integers >= {low}"
    expected = f"a list of {kind}" + (" or None" if allow_none else "")
    if not isinstance(value, (list, tuple)) or (
        not allow_empty and len(value) == 0
    ):
        fail(name, value, expected)
    if not all(is_int(v) and v >= low for v in value):
        fail(name, value, expected)
    return [int(v) for v in value]


def check_int_range(name, value, low=None, high=None):
    """A pair `(a, b)` of integers with `low <= a <= b <= high`."""
    ok = (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(is_int(v) for v in value)
        and value[0] <= value[1]
        and (low is None or value[0] >= low)
        and (high is None or value[1] <= high)
    )
    if not ok:
        bounds = ""
        if low is not None:
            bounds += f" and a >= {low}"
        if high is not None:
            bounds += f" and b <= {high}"
        fail(name, value, f"a pair (a, b) of integers with a <= b{bounds}")
    return (int(value[0]), int(value[1]))


def check_float_range(name, value, low=None):
    """A pair `(a, b)` of finite numbers with `low <= a <= b`."""
    ok = (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(is_real(v) and math.isfinite(float(v)) for v in value)
        and value[0] <= value[1]
        and (low is None or value[0] >= low)
    )
    if not ok:
        bound = f" and a >= {low}" if low is not None else ""
        fail(name, value, f"a pair (a, b) of finite numbers with a <= b{bound}")
    return (float(value[0]), float(value[1]))


def check_rank(name, shape, ranks, description=None):
    """A shape whose rank is in `ranks`; returns the shape as a tuple."""
    shape = tuple(shape)
    ranks = (ranks,) if is_int(ranks) else tuple(ranks)
    if len(shape) not in ranks:
        expected = description or " or ".join(str(r) for r in ranks)
        raise ValueError(
            f"`{name}` must have rank {expected}. Received: "
            f"{name}.shape={shape}"
        )
    return shape
