"""Tests for keras_msets.ops.complex, .phase and .log_polar (numpy complex128
references)."""

import itertools
import math

import keras
import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from keras import ops

from keras_msets import ops as msets_ops

BACKEND = keras.backend.backend()

# keras' torch backend converts tensors with np.array(x), which numpy 2 warns
# about for torch tensors; it is not ours to fix and only adds noise.
pytestmark = pytest.mark.filterwarnings(
    "ignore:__array__ implementation doesn't accept a copy keyword"
)


def grad_of(fn, x):
    """Gradient of the scalar `fn(x)` with respect to the numpy array `x`.

    Uses the backend's own autodiff, so the gradients the library's users
    get are the ones tested.
    """
    x = np.asarray(x, dtype="float32")
    if BACKEND == "tensorflow":
        import tensorflow as tf

        t = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(t)
            y = fn(t)
        g = tape.gradient(y, t)
        return np.zeros_like(x) if g is None else g.numpy()
    if BACKEND == "jax":
        import jax
        import jax.numpy as jnp

        # Jitted as in `model.fit`; one compilation beats op-by-op ones.
        return np.asarray(jax.jit(jax.grad(fn))(jnp.asarray(x)))
    if BACKEND == "torch":
        import torch

        t = torch.tensor(x, requires_grad=True)
        (g,) = torch.autograd.grad(fn(t), t)
        return g.detach().cpu().numpy()
    raise NotImplementedError(BACKEND)


def np_(x):
    return keras.ops.convert_to_numpy(x)


def to_complex(x):
    """Reference unpacking of `[..., 2d]` into complex128 (plain numpy)."""
    x = np.asarray(x, dtype="float64")
    d = x.shape[-1] // 2
    return x[..., :d] + 1j * x[..., d:]


def from_complex(z):
    return np.concatenate([z.real, z.imag], axis=-1).astype("float32")


def random_complex(rng, shape):
    """Float32 `[..., 2d]` tensor and the exact complex128 it represents."""
    x = rng.standard_normal(shape).astype("float32")
    return x, to_complex(x)


def random_mask(rng, shape, all_masked_set=True):
    mask = rng.random(shape) < 0.7
    if all_masked_set and len(shape) >= 2:
        mask[0] = False  # the whole first "batch" entry: all-masked sets
    return mask


# --------------------------------------------------------------- basics


def test_split_merge_round_trip():
    for shape in [(6,), (3, 8), (2, 5, 4)]:
        x = np.random.standard_normal(shape).astype("float32")
        real, imag = msets_ops.complex_split(x)
        d = shape[-1] // 2
        np.testing.assert_array_equal(np_(real), x[..., :d])
        np.testing.assert_array_equal(np_(imag), x[..., d:])
        merged = msets_ops.complex_merge(real, imag)
        np.testing.assert_array_equal(np_(merged), x)


def test_shape_errors_name_the_argument():
    with pytest.raises(ValueError, match="`x` must have .* even last"):
        msets_ops.complex_split(np.zeros((2, 5), "float32"))
    with pytest.raises(ValueError, match=r"Received: x.shape=\(2, None\)"):
        msets_ops.complex_split(keras.KerasTensor((2, None)))
    with pytest.raises(ValueError, match="`real` and `imag` must have"):
        msets_ops.complex_merge(np.zeros((2, 3)), np.zeros((2, 4)))
    with pytest.raises(ValueError, match="`x` and `y`"):
        msets_ops.complex_multiply(np.zeros((2, 4)), np.zeros((2, 6)))


def test_multiply_and_conjugate_match_numpy():
    rng = np.random.default_rng(0)
    shapes = [((3, 8), (3, 8)), ((2, 5, 6), (5, 6)), ((4, 1, 2), (4, 3, 2))]
    for shape_x, shape_y in shapes:  # including broadcasting
        x, zx = random_complex(rng, shape_x)
        y, zy = random_complex(rng, shape_y)
        out = to_complex(np_(msets_ops.complex_multiply(x, y)))
        np.testing.assert_allclose(out, zx * zy, rtol=1e-5, atol=1e-6)
        conj = to_complex(np_(msets_ops.complex_conjugate(x)))
        np.testing.assert_array_equal(conj, np.conj(zx))


def test_symbolic_shapes():
    x = keras.KerasTensor((None, 5, 8))
    mask = keras.KerasTensor((None, 5), dtype="bool")
    real, imag = msets_ops.complex_split(x)
    assert real.shape == imag.shape == (None, 5, 4)
    assert msets_ops.complex_merge(real, imag).shape == (None, 5, 8)
    assert msets_ops.complex_multiply(x, x).shape == (None, 5, 8)
    assert msets_ops.complex_conjugate(x).shape == (None, 5, 8)
    assert msets_ops.complex_modulus(x).shape == (None, 5, 4)
    assert msets_ops.complex_phase(x).shape == (None, 5, 4)
    assert msets_ops.complex_exp_i(real).shape == (None, 5, 8)
    assert msets_ops.complex_from_polar(real, imag).shape == (None, 5, 8)
    lm, ph = msets_ops.log_polar_product(real, imag, mask)
    assert lm.shape == ph.shape == (None, 4)
    lm, ph = msets_ops.complex_log_polar_product(x, mask, keepdims=True)
    assert lm.shape == ph.shape == (None, 1, 4)


# ------------------------------------------------------- modulus, phase


def _with_special_points(x):
    """Puts exact zeros and points on the negative real axis into `x`."""
    x = x.copy()
    d = x.shape[-1] // 2
    x[..., 0, 0], x[..., 0, d] = 0.0, 0.0  # 0 + 0i
    x[..., 1, 0], x[..., 1, d] = -2.0, 0.0  # negative real axis: angle pi
    x[..., 2, 0], x[..., 2, d] = 0.0, -3.0  # pure imaginary
    return x


def test_modulus_and_phase_match_numpy():
    for shape in [(3, 6), (2, 4, 10)]:
        x = np.random.standard_normal(shape).astype("float32")
        x = _with_special_points(x)
        z = to_complex(x)
        modulus = np_(msets_ops.complex_modulus(x))
        phase = np_(msets_ops.complex_phase(x))
        # Float32 rounding only: a couple of ulps relative, no epsilon bias.
        np.testing.assert_allclose(modulus, np.abs(z), rtol=3e-7, atol=0)
        np.testing.assert_allclose(phase, np.angle(z), rtol=3e-7, atol=1e-7)
        assert np.all(modulus[..., 0, 0] == 0)
        assert np.all(phase[..., 0, 0] == 0)


def test_modulus_and_phase_gradients_at_zero():
    x = _with_special_points(np.random.standard_normal((4, 6)).astype("f4"))
    x[3] = 0.0  # a whole row of exact zeros
    z = to_complex(x)
    d = x.shape[-1] // 2
    nonzero = z != 0
    safe = np.where(nonzero, z, 1.0)

    g_mod = grad_of(lambda t: ops.sum(msets_ops.complex_modulus(t)), x)
    assert np.all(np.isfinite(g_mod))
    expected = np.where(nonzero, safe / np.abs(safe), 0.0)  # z / |z|
    np.testing.assert_allclose(g_mod[..., :d], expected.real, atol=1e-6)
    np.testing.assert_allclose(g_mod[..., d:], expected.imag, atol=1e-6)

    g_ph = grad_of(lambda t: ops.sum(msets_ops.complex_phase(t)), x)
    assert np.all(np.isfinite(g_ph))
    # d angle / d re = -im / |z|^2, d angle / d im = re / |z|^2.
    expected = np.where(nonzero, 1j * safe / np.abs(safe) ** 2, 0.0)
    np.testing.assert_allclose(g_ph[..., :d], expected.real, atol=1e-5)
    np.testing.assert_allclose(g_ph[..., d:], expected.imag, atol=1e-5)
    assert np.all(g_mod[3] == 0) and np.all(g_ph[3] == 0)


def test_exp_i_and_from_polar_match_numpy():
    rng = np.random.default_rng(1)
    for shape in [(5,), (3, 4), (2, 3, 4)]:
        theta = rng.uniform(-10, 10, shape).astype("float32")
        log_modulus = rng.normal(0, 2, shape).astype("float32")
        out = to_complex(np_(msets_ops.complex_exp_i(theta)))
        np.testing.assert_allclose(out, np.exp(1j * theta), atol=1e-6)
        out = msets_ops.complex_from_polar(log_modulus, theta)
        expected = np.exp(log_modulus.astype("f8") + 1j * theta)
        np.testing.assert_allclose(
            to_complex(np_(out)), expected, rtol=1e-5, atol=1e-6
        )
    with pytest.raises(ValueError, match="`log_modulus` and `phase`"):
        msets_ops.complex_from_polar(log_modulus, theta[..., :1])


# --------------------------------------------------- log-polar products

# (shape of the log-polar inputs, set axis); the mask has shape[:axis + 1].
PRODUCT_CASES = [
    ((4, 7, 3), 1),
    ((3, 4, 6, 2), 2),
    ((6, 4, 3), 0),
    ((3, 5, 2, 2), -3),
]


def _reference_product(z, mask, axis):
    """np.prod over `axis` of complex128 factors, masked ones set to 1."""
    axis = axis % z.ndim
    mask = mask.reshape(mask.shape + (1,) * (z.ndim - axis - 1))
    return np.prod(np.where(mask, z, 1.0 + 0j), axis=axis)


def _assert_log_polar_equal(log_modulus, phase, product):
    """Checks exp(log_modulus + i phase) == product (complex128)."""
    np.testing.assert_allclose(log_modulus, np.log(np.abs(product)), atol=2e-5)
    unit = product / np.abs(product)
    phase = phase.astype("float64")
    np.testing.assert_allclose(np.cos(phase), unit.real, atol=2e-5)
    np.testing.assert_allclose(np.sin(phase), unit.imag, atol=2e-5)


def test_log_polar_product_matches_numpy():
    rng = np.random.default_rng(2)
    for (shape, axis), keepdims in itertools.product(PRODUCT_CASES, [0, 1]):
        log_modulus = rng.normal(0, 0.5, shape).astype("float32")
        phase = rng.uniform(-math.pi, math.pi, shape).astype("float32")
        mask = random_mask(rng, shape[: axis % len(shape) + 1], axis != 0)
        lm, ph = msets_ops.log_polar_product(
            log_modulus, phase, mask, axis=axis, keepdims=bool(keepdims)
        )
        z = np.exp(log_modulus.astype("float64") + 1j * phase)
        product = _reference_product(z, mask, axis)
        if keepdims:
            product = np.expand_dims(product, axis)
        _assert_log_polar_equal(np_(lm), np_(ph), product)


def test_complex_log_polar_product_matches_numpy():
    rng = np.random.default_rng(3)
    for shape, axis in PRODUCT_CASES:
        shape = shape[:-1] + (2 * shape[-1],)
        x, z = random_complex(rng, shape)
        mask = random_mask(rng, shape[: axis % len(shape) + 1], axis != 0)
        lm, ph = msets_ops.complex_log_polar_product(x, mask, axis=axis)
        expected = _reference_product(z, mask, axis)
        _assert_log_polar_equal(np_(lm), np_(ph), expected)
        # The product itself, back in [..., 2d] form.
        out = to_complex(np_(msets_ops.complex_from_polar(lm, ph)))
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-6)


def test_log_polar_product_padding_and_all_masked():
    rng = np.random.default_rng(4)
    x, _ = random_complex(rng, (3, 6, 4))
    mask = np.array([[1, 1, 1, 0, 0, 0], [0] * 6, [1] * 6], dtype=bool)
    clean, garbage = x.copy(), x.copy()
    clean[~mask] = 0.0  # exact zeros: log 0 = -inf if they were not masked
    values = [-1e30, 1e30, 3e4, np.inf, np.nan]
    garbage[~mask] = rng.choice(values, size=garbage[~mask].shape)
    lm_clean, ph_clean = msets_ops.complex_log_polar_product(clean, mask)
    lm_garbage, ph_garbage = msets_ops.complex_log_polar_product(garbage, mask)
    np.testing.assert_array_equal(np_(lm_clean), np_(lm_garbage))
    np.testing.assert_array_equal(np_(ph_clean), np_(ph_garbage))

    def loss(t):
        lm, ph = msets_ops.complex_log_polar_product(t, mask)
        return ops.sum(msets_ops.complex_from_polar(lm, ph))

    # Padded garbage (inf and NaN included) gets an exact zero gradient.
    g_clean, g_garbage = grad_of(loss, clean), grad_of(loss, garbage)
    np.testing.assert_array_equal(g_garbage, g_clean)
    np.testing.assert_array_equal(g_garbage[~mask], 0.0)
    # An all-masked set is the empty product 1 = exp(0 + 0i).
    np.testing.assert_array_equal(np_(lm_clean)[1], 0.0)
    np.testing.assert_array_equal(np_(ph_clean)[1], 0.0)
    # Float masks (nonzero = valid) give the same as boolean masks.
    lm_f, ph_f = msets_ops.complex_log_polar_product(clean, mask * 2.0)
    np.testing.assert_array_equal(np_(lm_f), np_(lm_clean))
    np.testing.assert_array_equal(np_(ph_f), np_(ph_clean))


def test_log_polar_product_gradient_is_the_mask():
    rng = np.random.default_rng(5)
    log_modulus = rng.normal(size=(3, 5, 2)).astype("float32")
    phase = rng.normal(size=(3, 5, 2)).astype("float32")
    mask = rng.random((3, 5)) < 0.5
    mask[0] = False
    expected = np.broadcast_to(mask[..., None], log_modulus.shape)

    def lm_sum(t):
        return ops.sum(msets_ops.log_polar_product(t, phase, mask)[0])

    def phase_sum(t):
        lm, ph = msets_ops.log_polar_product(
            log_modulus, t, mask, wrap_phase=True
        )
        return ops.sum(ph)

    np.testing.assert_array_equal(grad_of(lm_sum, log_modulus), expected)
    np.testing.assert_array_equal(grad_of(phase_sum, phase), expected)


def test_zero_factor_gives_minus_inf_not_nan():
    rng = np.random.default_rng(6)
    x, z = random_complex(rng, (3, 4, 6))
    x[0, 2, :] = 0.0  # a valid exact 0 + 0i factor in every feature of set 0
    mask = np.ones((3, 4), dtype=bool)
    lm, ph = msets_ops.complex_log_polar_product(x, mask)
    lm, ph = np_(lm), np_(ph)
    assert np.all(lm[0] == -np.inf) and np.all(np.isfinite(lm[1:]))
    assert np.all(np.isfinite(ph))
    product = np_(msets_ops.complex_from_polar(lm, ph))
    np.testing.assert_array_equal(product[0], 0.0)

    def product_sum(t):
        lm, ph = msets_ops.complex_log_polar_product(t, mask)
        return ops.sum(msets_ops.complex_from_polar(lm, ph))

    g = grad_of(product_sum, x)
    # Documented: factors of a zero product get zero gradient, no NaN.
    assert np.all(np.isfinite(g))
    np.testing.assert_array_equal(g[0], 0.0)
    # Elsewhere f = Re(P) + Im(P) of the holomorphic product P, so
    # df/dre = Re(P') + Im(P') and df/dim = Re(P') - Im(P').
    z = to_complex(x)[1:]
    dprod_dz = np.prod(z, axis=1, keepdims=True) / z  # the other factors
    d = x.shape[-1] // 2
    np.testing.assert_allclose(
        g[1:, :, :d], dprod_dz.real + dprod_dz.imag, rtol=1e-4, atol=1e-5
    )
    np.testing.assert_allclose(
        g[1:, :, d:], dprod_dz.real - dprod_dz.imag, rtol=1e-4, atol=1e-5
    )


def test_wrap_phase_is_cosmetic():
    rng = np.random.default_rng(7)
    phase = rng.uniform(-3, 3, (4, 50, 3)).astype("float32")
    log_modulus = np.zeros_like(phase)
    phase[0, :, 0] = math.pi  # sums to an exact multiple of pi
    _, raw = msets_ops.log_polar_product(log_modulus, phase)
    _, wrapped = msets_ops.log_polar_product(
        log_modulus, phase, wrap_phase=True
    )
    raw, wrapped = np_(raw).astype("f8"), np_(wrapped).astype("f8")
    assert np.abs(raw).max() > math.pi
    assert np.all(wrapped > -math.pi) and np.all(wrapped <= math.pi + 1e-6)
    # Float32 multiples of 2 pi are subtracted: rounding of order ulp(|sum|).
    np.testing.assert_allclose(np.cos(wrapped), np.cos(raw), atol=1e-4)
    np.testing.assert_allclose(np.sin(wrapped), np.sin(raw), atol=1e-4)


def test_product_rejects_bad_axis_and_mask():
    x = np.zeros((4, 7, 6), "float32")
    with pytest.raises(ValueError, match="`axis` must not be the last"):
        msets_ops.complex_log_polar_product(x, axis=-1)
    with pytest.raises(ValueError, match="`axis` must be in"):
        msets_ops.complex_log_polar_product(x, axis=3)
    with pytest.raises(ValueError, match=r"Received: mask.shape=\(4, 8\)"):
        msets_ops.complex_log_polar_product(x, np.ones((4, 8), bool))
    with pytest.raises(ValueError, match="`mask` must have shape"):
        msets_ops.log_polar_product(x, x, np.ones((4,), bool))


# ----------------------------------------------------- very long products

N_LONG = 100_000


def test_long_products_stay_finite():
    # 0.5 ** 1e5 underflows and 2 ** 1e5 overflows in any float; the
    # log-polar sums are just +-1e5 * log(2) = +-69314.7.
    for modulus in (0.5, 2.0):
        expected = N_LONG * math.log(modulus)
        log_modulus = np.full((2, N_LONG, 1), math.log(modulus), "float32")
        phase = np.zeros_like(log_modulus)
        lm, ph = msets_ops.log_polar_product(log_modulus, phase)
        np.testing.assert_allclose(np_(lm), expected, rtol=1e-5)
        # The same from complex factors of modulus 0.5 or 2, random angles.
        theta = np.random.uniform(-math.pi, math.pi, phase.shape)
        x = msets_ops.complex_from_polar(log_modulus, theta.astype("f4"))
        lm, ph = msets_ops.complex_log_polar_product(x)
        assert np.all(np.isfinite(np_(lm))) and np.all(np.isfinite(np_(ph)))
        np.testing.assert_allclose(np_(lm), expected, rtol=1e-5)


def test_long_unit_products_match_numpy():
    rng = np.random.default_rng(8)
    theta = rng.uniform(-math.pi, math.pi, (3, N_LONG, 2)).astype("float32")
    unit = np.exp(1j * theta.astype("float64"))
    product = np.prod(unit, axis=1)  # complex128, |product| = 1 +- 1e-11
    product /= np.abs(product)
    # Float32 tolerance: the phase sum is a float32 sum of 1e5 angles in
    # (-pi, pi]; it wanders to |sum| ~ sqrt(1e5) * pi / sqrt(3) ~ 600-1200,
    # where one float32 ulp is 6e-5 to 1.2e-4 rad, and every addition
    # rounds. Tree-like reductions (JAX, PyTorch) end ~1e-4 rad off, but
    # TensorFlow (like numpy) reduces a non-last axis sequentially and ends
    # ~4e-3 rad off for this draw (error ~ sqrt(n) * ulp(|sum|) / 2). So
    # 5e-3 is float32 rounding only; a lost or doubled factor is ~1 rad off.
    atol = 5e-3
    _, ph = msets_ops.log_polar_product(np.zeros_like(theta), theta)
    ph = np_(ph).astype("float64")
    np.testing.assert_allclose(np.cos(ph), product.real, atol=atol)
    np.testing.assert_allclose(np.sin(ph), product.imag, atol=atol)
    x = msets_ops.complex_exp_i(theta)
    lm, ph = msets_ops.complex_log_polar_product(x)
    ph = np_(ph).astype("float64")
    np.testing.assert_allclose(np.cos(ph), product.real, atol=atol)
    np.testing.assert_allclose(np.sin(ph), product.imag, atol=atol)
    # Each |exp(i theta)| is 1 up to float32 rounding: the sum stays small.
    np.testing.assert_allclose(np_(lm), 0.0, atol=2e-2)


def test_long_phase_sums_of_any_mean_match_float64():
    # A plain float32 sum of 1e5 angles of mean 1.3 ends near 1.3e5 rad,
    # where one float32 step is 8e-3 rad: up to 1e-2 rad off. The blocked
    # sum reduced modulo 2 pi stays within 1e-5 rad of float64, for a
    # constant angle too (whose rounding errors would all add up).
    rng = np.random.default_rng(9)
    n = N_LONG + 37  # not a multiple of the block size
    phase = np.stack(
        [
            np.full(n, 1.3),
            0.7 + rng.uniform(-1, 1, n),
            np.full(n, -3.1),
            rng.uniform(-math.pi, math.pi, n),
            np.full(n, 12.5),  # angles beyond pi are reduced exactly too
        ],
        -1,
    )[None].astype("float32")
    mask = np.ones((1, n), bool)
    mask[0, 5::7] = False
    expected = np.where(mask[..., None], phase.astype("f8"), 0.0).sum(1)
    for wrap_phase in (False, True):
        lm, ph = msets_ops.log_polar_product(
            np.zeros_like(phase), phase, mask, wrap_phase=wrap_phase
        )
        ph = np_(ph).astype("float64")
        error = np.abs(np.angle(np.exp(1j * (ph - expected))))
        assert error.max() < 1e-5, error
        assert np.all(np.abs(ph) < 100)
    assert np.all(np.abs(ph) <= math.pi + 1e-6)


def test_phase_sums_are_float32_for_half_inputs():
    phase = np.full((2, 3000, 1), 1.3, "float16")
    lm, ph = msets_ops.log_polar_product(phase, phase, wrap_phase=True)
    for value in (lm, ph):
        assert keras.backend.standardize_dtype(value.dtype) == "float32"
    expected = 3000 * np.float64(np.float16(1.3))
    np.testing.assert_allclose(np_(lm), expected, rtol=1e-6)
    error = np.angle(np.exp(1j * (np_(ph).astype("f8") - expected)))
    assert np.abs(error).max() < 1e-5


def test_position_phase_matches_float64():
    # A plain float32 omega * pos rounds to half a float32 step of the
    # product: up to 4e-3 rad for omega ~ 1 at pos = 1e5 (0.1 rad here).
    positions = np.array(
        [1, 2, 1023, 1024, 4097, 65520, 70000, 99999, 100000, 150001, 200000]
    )
    omega = np.array(
        [0.0, 1e-4, 3.7e-3, 0.1, 1.0, 1.37, 2.0, 2.9999, 3.0, -1.3, math.pi]
    ).astype("float32")
    out = msets_ops.position_phase(omega[None, :], positions[:, None])
    assert keras.backend.standardize_dtype(out.dtype) == "float32"
    out = np_(out).astype("float64")
    expected = omega.astype("float64")[None, :] * positions[:, None]
    error = np.abs(np.angle(np.exp(1j * (out - expected))))
    assert error.max() < 2e-6, error.max()
    assert np.abs(out).max() < 3 * math.pi + 1e-3
    # float16 frequencies are computed in float32 too.
    half = msets_ops.position_phase(omega.astype("float16"), 100000)
    expected = omega.astype("float16").astype("float64") * 100000
    error = np.angle(np.exp(1j * (np_(half).astype("f8") - expected)))
    assert np.abs(error).max() < 2e-6

    # The gradient with respect to the frequency is the position.
    def loss(t):
        return ops.sum(msets_ops.position_phase(t, positions[:, None]))

    g = grad_of(loss, np.ones((1, 3), "float32"))
    np.testing.assert_allclose(g, np.full((1, 3), positions.sum()), rtol=1e-6)


def test_position_phase_with_a_short_bound_gives_the_same_bits():
    rng = np.random.default_rng(3)
    omega = rng.uniform(-3.9, 3.9, (1, 40)).astype("float32")
    positions = np.arange(1024)[:, None]
    full = np_(msets_ops.position_phase(omega, positions))
    short = msets_ops.position_phase(omega, positions, max_position=1023)
    np.testing.assert_array_equal(np_(short), full)
    # A bound past one 10-bit piece takes the general path.
    far = np.array([[5000]])
    np.testing.assert_array_equal(
        np_(msets_ops.position_phase(omega, far, max_position=5000)),
        np_(msets_ops.position_phase(omega, far)),
    )


def test_cos_sin_match_float64():
    from keras_msets.ops.phase import cos_sin

    rng = np.random.default_rng(5)
    # Every quadrant, its edges, and angles up to the documented 3,000 rad.
    theta = np.concatenate(
        [
            rng.uniform(-10, 10, 2000),
            rng.uniform(-3000, 3000, 2000),
            np.arange(-16, 17) * np.pi / 4,
        ]
    ).astype("float32")
    cos, sin = cos_sin(theta)
    exact = theta.astype("float64")
    np.testing.assert_allclose(np_(cos), np.cos(exact), rtol=0, atol=2e-7)
    np.testing.assert_allclose(np_(sin), np.sin(exact), rtol=0, atol=2e-7)

    def loss(t):
        cos, sin = cos_sin(t)
        return ops.sum(0.3 * cos + 0.7 * sin)

    g = grad_of(loss, theta[:2000])
    expected = -0.3 * np.sin(exact[:2000]) + 0.7 * np.cos(exact[:2000])
    np.testing.assert_allclose(g, expected, rtol=0, atol=4e-7)


def test_accurate_phase_is_the_float64_angle():
    rng = np.random.default_rng(10)
    x = rng.uniform(-1, 1, (3, 50, 4)).astype("float32")
    x[0, 0] = [0, -1, 0, 0]  # the origin and the negative real axis
    x[0, 1] = [0, -2, -1, 1e-30]  # -i, and just above the negative axis
    hi, lo = msets_ops.accurate_phase(x)
    hi, lo = np_(hi).astype("float64"), np_(lo).astype("float64")
    xd = x.astype("float64")
    expected = np.arctan2(xd[..., 2:], xd[..., :2])
    # hi is the float32 phase; hi + lo the exact one: float64 on TensorFlow
    # and PyTorch, a float32 refinement on JAX (about 1e-10 rad).
    np.testing.assert_allclose(hi, expected, atol=3e-7)
    error = np.abs(np.angle(np.exp(1j * (hi + lo - expected))))
    assert error.max() < (1e-9 if BACKEND == "jax" else 1e-12), error.max()
    assert np.abs(lo).max() > 0


@pytest.mark.parametrize("scale", [1e-30, 1.0, 1e30])
def test_accurate_phase_of_one_angle_repeated_sums_exactly(scale):
    # 1e5 copies of one complex number: the float32 angle's rounding (up
    # to 2e-8 rad) is the same for every copy and adds up to 2e-3 rad
    # unless the angle is known better than float32.
    n = N_LONG
    theta = np.array([1.3, 0.3, 2.9, -2.0, -math.pi])
    z = np.stack([np.cos(theta), np.sin(theta)], 0) * scale
    z = np.broadcast_to(z.reshape(1, 1, -1), (1, n, 2 * len(theta)))
    z = z.astype("float32")
    hi, lo = msets_ops.accurate_phase(z)
    lm, ph = msets_ops.log_polar_product(
        np.zeros_like(np_(hi)), hi, phase_lo=lo
    )
    zd = z[0, 0].astype("float64")
    expected = n * np.arctan2(zd[len(theta) :], zd[: len(theta)])
    ph = np_(ph).astype("float64")[0]
    error = np.abs(np.angle(np.exp(1j * (ph - expected))))
    assert error.max() < 1e-4, error


# --------------------------------------------------------------- properties


# A few fixed shapes (values, masks and permutations vary): every new shape
# costs an op compilation on JAX, which would dominate the test time.
SET_SHAPES = [(1, 1, 2), (3, 6, 4)]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), shape=st.sampled_from(SET_SHAPES))
def test_product_is_permutation_invariant(seed, shape):
    rng = np.random.default_rng(seed)
    x, _ = random_complex(rng, shape)
    mask = rng.random(shape[:2]) < 0.7
    perm = rng.permutation(shape[1])
    lm, ph = msets_ops.complex_log_polar_product(x, mask)
    lm_p, ph_p = msets_ops.complex_log_polar_product(x[:, perm], mask[:, perm])
    # Same numbers summed in another order: equal up to float32 rounding.
    np.testing.assert_allclose(np_(lm_p), np_(lm), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np_(ph_p), np_(ph), rtol=1e-5, atol=1e-5)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=st.sampled_from([(2,), (2, 3, 6)]),
    scale=st.sampled_from([1e-3, 1.0, 1e3]),
)
def test_two_factor_product_agrees_with_multiply(seed, shape, scale):
    rng = np.random.default_rng(seed)
    x = (scale * rng.standard_normal(shape)).astype("float32")
    y = rng.standard_normal(shape).astype("float32")
    expected = to_complex(x) * to_complex(y)
    direct = to_complex(np_(msets_ops.complex_multiply(x, y)))
    np.testing.assert_allclose(direct, expected, rtol=1e-5, atol=1e-5 * scale)
    pair = np.stack([x, y], axis=0)  # the set axis in front
    lm, ph = msets_ops.complex_log_polar_product(pair, axis=0)
    polar = to_complex(np_(msets_ops.complex_from_polar(lm, ph)))
    np.testing.assert_allclose(polar, expected, rtol=1e-4, atol=1e-4 * scale)
