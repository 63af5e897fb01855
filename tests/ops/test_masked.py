"""Tests for keras_msets.ops.masked against plain numpy float64 references."""

import itertools

import keras
import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from keras import ops

from keras_msets import ops as msets_ops
from tests.ops.test_complex import grad_of
from tests.ops.test_complex import np_

# See tests/ops/test_complex.py: numpy 2 noise from keras' torch backend.
pytestmark = pytest.mark.filterwarnings(
    "ignore:__array__ implementation doesn't accept a copy keyword"
)

REDUCTIONS = {
    "sum": msets_ops.masked_sum,
    "mean": msets_ops.masked_mean,
    "max": msets_ops.masked_max,
    "min": msets_ops.masked_min,
    "product": msets_ops.masked_product,
}
# What an all-masked set gives, as documented.
EMPTY_VALUE = {"sum": 0.0, "mean": 0.0, "max": 0.0, "min": 0.0, "product": 1.0}


def reference(name, x, mask, axis, keepdims=False):
    """Independent float64 numpy reference of a masked reduction."""
    x = np.asarray(x, dtype="float64")
    axis = axis % x.ndim
    if mask is None:
        mask = np.ones(x.shape[: axis + 1], dtype=bool)
    m = np.broadcast_to(
        mask.reshape(mask.shape + (1,) * (x.ndim - axis - 1)), x.shape
    )
    count = m.sum(axis=axis, keepdims=keepdims)
    if name == "sum":
        return np.where(m, x, 0).sum(axis=axis, keepdims=keepdims)
    if name == "mean":
        total = np.where(m, x, 0).sum(axis=axis, keepdims=keepdims)
        return np.divide(
            total, count, out=np.zeros_like(total), where=count > 0
        )
    if name == "product":
        return np.where(m, x, 1).prod(axis=axis, keepdims=keepdims)
    if name == "max":
        out = np.where(m, x, -np.inf).max(axis=axis, keepdims=keepdims)
    else:
        out = np.where(m, x, np.inf).min(axis=axis, keepdims=keepdims)
    return np.where(count > 0, out, 0.0)


def random_mask(rng, shape, all_masked_set=True):
    mask = rng.random(shape) < 0.6
    if all_masked_set and len(shape) >= 2:
        mask[0] = False  # the first batch entry holds only all-masked sets
    return mask


def with_garbage(rng, x, mask, axis):
    """Copy of `x` whose padded slots hold huge, infinite or NaN garbage."""
    m = np.broadcast_to(
        mask.reshape(mask.shape + (1,) * (x.ndim - axis - 1)), x.shape
    )
    values = [-3e38, 3e38, -1e30, 1e30, np.inf, -np.inf, np.nan]
    garbage = rng.choice(values, size=x.shape)
    return np.where(m, x, garbage).astype(x.dtype)


# (shape of x, set axis); the mask has shape x.shape[:axis + 1].
CASES = [((4, 7, 3), 1), ((3, 4, 5, 2), 2), ((5, 6), 1), ((6, 4, 3), 0)]
CASES += [((4, 7, 3), -2)]


# -------------------------------------------------------------- expand_mask


def test_expand_mask_shapes_and_dtypes():
    x = np.zeros((2, 3, 4, 5), "float32")
    for dtype in ["bool", "int32", "float32"]:
        mask = np.array([[1, 0, 2], [0, 0, 0.5]]).astype(dtype)
        out = msets_ops.expand_mask(mask, x)
        assert tuple(out.shape) == (2, 3, 1, 1)
        assert keras.backend.standardize_dtype(out.dtype) == "bool"
        np.testing.assert_array_equal(np_(out)[..., 0, 0], mask != 0)
    out = msets_ops.expand_mask(np.ones((2, 3, 4)), x, axis=2)
    assert tuple(out.shape) == (2, 3, 4, 1)
    out = msets_ops.expand_mask(np.ones((2,)), x, axis=0)
    assert tuple(out.shape) == (2, 1, 1, 1)


def test_wrong_mask_shape_raises():
    x = np.zeros((4, 7, 3), "float32")
    message = (
        r"`mask` must have shape \(batch, set_size\) = \(4, 7\) matching "
        r"`x`. Received: mask.shape=\(4, 8\)"
    )
    with pytest.raises(ValueError, match=message):
        msets_ops.expand_mask(np.ones((4, 8)), x)
    for fn in REDUCTIONS.values():
        with pytest.raises(ValueError, match="`mask`"):
            fn(x, np.ones((4, 8), bool))
        with pytest.raises(ValueError, match="`mask`"):
            fn(x, np.ones((4, 7, 3), bool))  # one axis too many
    with pytest.raises(ValueError, match=r"`axis` must be in \[-3, 3\)"):
        msets_ops.masked_sum(x, axis=3)
    with pytest.raises(ValueError, match="Received: axis=1.5"):
        msets_ops.masked_sum(x, axis=1.5)


# --------------------------------------------------------------- reductions


def test_reductions_match_numpy():
    rng = np.random.default_rng(0)
    for (shape, axis), name in itertools.product(CASES, sorted(REDUCTIONS)):
        x = rng.standard_normal(shape).astype("float32")
        mask = random_mask(rng, shape[: axis % len(shape) + 1], axis != 0)
        # keepdims=True on two cases only: on JAX every new output shape
        # costs a compilation.
        keepdims_options = (False, True) if shape[0] > 4 else (False,)
        for keepdims, m in itertools.product(keepdims_options, (mask, None)):
            out = REDUCTIONS[name](x, m, axis=axis, keepdims=keepdims)
            expected = reference(name, x, m, axis, keepdims)
            context = f"{name} shape={shape} axis={axis} keepdims={keepdims}"
            assert tuple(out.shape) == expected.shape, context
            np.testing.assert_allclose(
                np_(out), expected, rtol=1e-5, atol=1e-6, err_msg=context
            )


def test_padding_never_changes_results():
    rng = np.random.default_rng(1)
    for (shape, axis), name in itertools.product(CASES, sorted(REDUCTIONS)):
        axis = axis % len(shape)
        x = rng.standard_normal(shape).astype("float32")
        mask = random_mask(rng, shape[: axis + 1], axis != 0)
        m = mask.reshape(mask.shape + (1,) * (x.ndim - axis - 1))
        clean = np.where(m, x, 0).astype("float32")
        garbage = with_garbage(rng, x, mask, axis)
        fn = REDUCTIONS[name]
        out_clean = np_(fn(clean, mask, axis=axis))
        out_garbage = np_(fn(garbage, mask, axis=axis))
        np.testing.assert_array_equal(out_garbage, out_clean, err_msg=name)
        assert np.all(np.isfinite(out_garbage))
        # Integer and float masks (nonzero = valid) act like boolean ones.
        out_int = np_(fn(garbage, mask.astype("int32"), axis=axis))
        np.testing.assert_array_equal(out_int, out_clean, err_msg=name)
        out_float = np_(fn(garbage, mask * 0.5, axis=axis))
        np.testing.assert_array_equal(out_float, out_clean, err_msg=name)


def test_all_masked_sets_give_documented_value():
    x = np.random.standard_normal((3, 5, 4)).astype("float32")
    mask = np.zeros((3, 5), bool)
    mask[2, 1] = True
    for name, fn in REDUCTIONS.items():
        out = np_(fn(x, mask))
        np.testing.assert_array_equal(out[:2], EMPTY_VALUE[name], name)
        np.testing.assert_allclose(out[2], x[2, 1], rtol=1e-6, err_msg=name)


def test_empty_set_axis_gives_documented_value():
    # set_size 0, with or without a mask: the value of an all-masked set
    # (a plain mean would divide by 0, a plain max has no identity).
    x = np.zeros((2, 0, 3), "float32")
    for name, fn in REDUCTIONS.items():
        for mask in (None, np.zeros((2, 0), bool)):
            out = np_(fn(x, mask))
            assert out.shape == (2, 3), name
            np.testing.assert_array_equal(out, EMPTY_VALUE[name], name)
        out = np_(fn(x, None, keepdims=True))
        assert out.shape == (2, 1, 3), name


def test_masked_count():
    mask = np.array([[1, 1, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1]], bool)
    out = msets_ops.masked_count(mask)
    assert keras.backend.standardize_dtype(out.dtype) == "float32"
    np.testing.assert_array_equal(np_(out), [2, 0, 4])
    out = msets_ops.masked_count(mask * 3, keepdims=True, dtype="int32")
    assert keras.backend.standardize_dtype(out.dtype) == "int32"
    np.testing.assert_array_equal(np_(out), [[2], [0], [4]])
    out = msets_ops.masked_count(mask, axis=0)
    np.testing.assert_array_equal(np_(out), [2, 2, 1, 1])


def test_symbolic_shapes():
    x = keras.KerasTensor((None, 7, 3))
    mask = keras.KerasTensor((None, 7), dtype="bool")
    out = msets_ops.expand_mask(keras.KerasTensor((None, 7)), x)
    assert out.shape == (None, 7, 1) and out.dtype == "bool"
    for fn in REDUCTIONS.values():
        assert fn(x, mask).shape == (None, 3)
        assert fn(x, mask, keepdims=True).shape == (None, 1, 3)
        assert fn(x).shape == (None, 3)
    assert msets_ops.masked_count(mask).shape == (None,)
    logits = keras.KerasTensor((None, 2, 7, 7))
    mask = keras.KerasTensor((None, 1, 1, 7), dtype="bool")
    assert msets_ops.mask_logits(logits, mask).shape == (None, 2, 7, 7)


# ---------------------------------------------------------------- gradients


def _grad_setup():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 6, 3)).astype("float32")
    mask = rng.random((4, 6)) < 0.5
    mask[0] = False  # all-masked set
    mask[1] = True
    m = np.broadcast_to(mask[..., None], x.shape)
    return with_garbage(rng, x, mask, 1), mask, m


def test_masked_max_and_min_gradients():
    x, mask, m = _grad_setup()
    cases = ((msets_ops.masked_max, -np.inf), (msets_ops.masked_min, np.inf))
    for fn, fill in cases:

        def loss(t, fn=fn):
            return ops.sum(fn(t, mask))

        g = grad_of(loss, x)
        assert np.all(np.isfinite(g))
        filled = np.where(m, x, fill)
        best = (
            filled.max(1, keepdims=True)
            if fill < 0
            else filled.min(1, keepdims=True)
        )
        expected = ((filled == best) & m).astype("float32")
        np.testing.assert_array_equal(g, expected)
        np.testing.assert_array_equal(g[0], 0.0)


def test_masked_mean_sum_product_gradients():
    x, mask, m = _grad_setup()
    count = m.sum(axis=1, keepdims=True)

    g = grad_of(lambda t: ops.sum(msets_ops.masked_mean(t, mask)), x)
    expected = np.where(m, 1.0 / np.maximum(count, 1), 0.0)
    np.testing.assert_allclose(g, expected, rtol=1e-6)
    np.testing.assert_array_equal(g[0], 0.0)

    g = grad_of(lambda t: ops.sum(msets_ops.masked_sum(t, mask)), x)
    np.testing.assert_array_equal(g, m.astype("float32"))

    # Product: d/dx_k = product of the other valid factors.
    x = np.where(m, np.random.uniform(0.5, 2.0, x.shape), x).astype("f4")
    g = grad_of(lambda t: ops.sum(msets_ops.masked_product(t, mask)), x)
    factors = np.where(m, x.astype("float64"), 1.0)
    expected = np.where(m, np.prod(factors, axis=1, keepdims=True) / factors, 0)
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g, expected, rtol=1e-5, atol=1e-6)


# -------------------------------------------------------------- mask_logits


def test_mask_logits():
    rng = np.random.default_rng(3)
    logits = rng.normal(0, 5, (2, 3, 4, 6)).astype("float32")
    mask = rng.random((2, 1, 1, 6)) < 0.5
    mask[0] = False  # all keys masked
    mask[1, ..., 0] = True
    out = np_(msets_ops.mask_logits(logits, mask))
    full_mask = np.broadcast_to(mask, logits.shape)
    np.testing.assert_array_equal(out[full_mask], logits[full_mask])
    assert np.all(out[~full_mask] == msets_ops.MASK_LOGIT)
    assert msets_ops.MASK_LOGIT == -1e9 and np.isfinite(msets_ops.MASK_LOGIT)
    probs = np_(ops.softmax(msets_ops.mask_logits(logits, mask), axis=-1))
    # Reference: numpy softmax over the valid keys only.
    shifted = np.where(full_mask, logits, -np.inf).astype("float64")
    shifted = np.exp(shifted - shifted[1].max(axis=-1, keepdims=True))
    expected = shifted[1] / shifted[1].sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(probs[1], expected, rtol=1e-5, atol=1e-7)
    # All-masked rows: uniform and finite, never NaN.
    np.testing.assert_allclose(probs[0], 1.0 / 6, rtol=1e-6)
    # Integer masks, and float16 logits (where -1e9 would be -inf).
    out16 = np_(msets_ops.mask_logits(logits.astype("float16"), mask * 1))
    assert np.all(np.isfinite(out16))
    assert np.all(out16[~full_mask] == np.finfo(np.float16).min)


# --------------------------------------------------------------- properties

# A few fixed shapes (values, masks and permutations vary): every new shape
# costs an op compilation on JAX, which would dominate the test time.
SET_SHAPES = [(1, 1, 2), (3, 6, 4)]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), shape=st.sampled_from(SET_SHAPES))
def test_reductions_are_permutation_invariant(seed, shape):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype("float32")
    mask = rng.random(shape[:2]) < 0.6
    perm = rng.permutation(shape[1])
    for fn in REDUCTIONS.values():
        out = np_(fn(x, mask))
        out_perm = np_(fn(x[:, perm], mask[:, perm]))
        np.testing.assert_allclose(out_perm, out, rtol=1e-5, atol=1e-6)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=st.sampled_from(SET_SHAPES),
    extra=st.sampled_from([1, 4]),
)
def test_appending_padding_changes_nothing(seed, shape, extra):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype("float32")
    mask = rng.random(shape[:2]) < 0.6
    pad = rng.choice([-1e30, 1e30], size=(shape[0], extra, shape[2]))
    x_padded = np.concatenate([x, pad.astype("float32")], axis=1)
    mask_padded = np.concatenate([mask, np.zeros((shape[0], extra), bool)], 1)
    for fn in REDUCTIONS.values():
        out = np_(fn(x, mask))
        out_padded = np_(fn(x_padded, mask_padded))
        np.testing.assert_allclose(out_padded, out, rtol=1e-6, atol=1e-7)
