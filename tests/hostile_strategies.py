"""Hypothesis strategies and helpers for the hostile-input tests.

Shapes are drawn from a few small values so that each backend compiles
few programs; values are drawn from the cases that break numerics: NaN,
inf, huge and tiny magnitudes, empty sets and all-masked sets.
"""

import re

import keras
import numpy as np
from hypothesis import HealthCheck
from hypothesis import Phase
from hypothesis import settings
from hypothesis import strategies as st

# Derandomized and small: the same examples on every run and backend; no
# shrinking, so that a failing property reports its first example fast.
FAST = settings(
    derandomize=True,
    max_examples=6,
    phases=(Phase.explicit, Phase.generate),
    report_multiple_bugs=False,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
# Fewer examples for the properties of whole blocks and models.
FEW = settings(FAST, max_examples=3)

# Values that padding may hold; none of them may reach a result.
PAD_VALUES = st.sampled_from([np.nan, np.inf, -np.inf, 1e30, -7.0])

# Magnitudes of valid inputs: every layer must stay finite for these in
# float32 (1e15 squared is 1e30, still a float32 number).
SCALES = st.sampled_from([1e-20, 1e-6, 1e6, 1e15])


_KERAS_HEADER = "Exception encountered when calling"


def clear_message(message):
    """True if an error message names an argument or the value received.

    The first line of the message is read; where Keras wraps an error
    raised in a layer's `call()` ("Exception encountered when calling
    X.call()." then the original message), the first line of the original
    message.
    """
    lines = [
        re.sub(r"\x1b\[[0-9;]*m", "", line).strip()
        for line in message.splitlines()
    ]
    lines = [line for line in lines if line]
    if lines and lines[0].startswith(_KERAS_HEADER):
        lines = lines[1:]
    first = lines[0] if lines else ""
    return bool(re.search(r"`[A-Za-z_][\w.]*`|Received", first))


def assert_clear_error(fn, *args, **kwargs):
    """Calls `fn` and asserts a ValueError/TypeError naming the argument.

    Any other exception (a backend error, a Keras-wrapped error whose
    first line does not say which argument is wrong) is re-raised; a
    return without an error fails.
    """
    try:
        fn(*args, **kwargs)
    except (ValueError, TypeError) as error:
        assert clear_message(str(error)), (
            f"unclear {type(error).__name__}: {str(error)[:300]}"
        )
        return error
    raise AssertionError("no error for a bad input")


def numpy(x):
    """A tensor or nested list of tensors as float64 numpy arrays."""
    if isinstance(x, (list, tuple)):
        return [numpy(v) for v in x]
    return np.asarray(keras.ops.convert_to_numpy(x)).astype("float64")


def assert_finite(x, what="output"):
    for value in x if isinstance(x, list) else [x]:
        assert np.all(np.isfinite(value)), (
            f"{what} not finite: {value.ravel()[:6]}"
        )


# The one set shape `[batch, set_size]` of the properties. Every test of a
# layer uses it where it can (building the layer included): JAX compiles
# each op of an eager call once per input shape, so a new shape costs a
# whole layer's compilation.
BATCH, SIZE = 3, 5
# The second set of the multi-set properties, and their batch.
MULTI_BATCH, SECOND_SIZE = 2, 4


@st.composite
def masked_sets(draw, dims, batches=(BATCH,), sizes=(SIZE,)):
    """`(x, mask)`: a float32 batch of sets and a boolean mask.

    `dims` is the shape after `[batch, set_size]`. At least one row keeps
    one valid element; another row may be all masked. One shape by
    default: JAX compiles every op once per input shape, so the examples
    vary the values and masks, not the shapes (empty sets and batch 0 have
    their own tests).
    """
    batch = draw(st.sampled_from(batches))
    size = draw(st.sampled_from(sizes))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, size, *dims)).astype("float32")
    mask = rng.random((batch, size)) < draw(st.sampled_from([0.5, 0.8, 1.0]))
    mask[0, 0] = True
    if batch > 1 and draw(st.booleans()):
        mask[-1] = False
    return x, mask


@st.composite
def permutations(draw, size):
    seed = draw(st.integers(0, 2**16))
    return np.random.default_rng(seed).permutation(size)


@st.composite
def bad_ids(draw, vocabulary_size, shape=(2, 4), low=1):
    """Token ids with one id out of `[0, vocabulary_size)` somewhere."""
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    ids = rng.integers(low, vocabulary_size, size=shape).astype("int32")
    bad = draw(
        st.one_of(
            st.integers(vocabulary_size, vocabulary_size + 1000),
            st.integers(-1000, -1),
            st.sampled_from([2**31 - 1, -(2**31)]),
        )
    )
    row = draw(st.integers(0, shape[0] - 1))
    col = draw(st.integers(0, shape[1] - 1))
    ids[row, col] = bad
    return ids
