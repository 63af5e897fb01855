import keras
import numpy as np
import pytest

from keras_msets import layers
from keras_msets import testing


def _log_polar_inputs(batch=3, n=6, d=4, seed=0):
    rng = np.random.default_rng(seed)
    r = rng.normal(scale=0.5, size=(batch, n, d))
    a = rng.normal(size=(batch, n, d))
    b = rng.normal(size=(batch, n, d))
    mask = rng.random((batch, n)) < 0.7
    mask[:, 0] = True
    return np.concatenate([r, a, b], -1).astype("float32"), mask


def _reference(x, mask, d):
    """numpy complex128: the product of e^r (a + bi) / |a + bi|."""
    x = x.astype("float64")
    r, a, b = x[..., :d], x[..., d : 2 * d], x[..., 2 * d :]
    z = np.exp(r) * (a + 1j * b) / np.abs(a + 1j * b)
    z = np.where(mask[..., None], z, 1.0 + 0j)
    return np.prod(z, axis=1)


def _exact_angles(x, d):
    """float64 angles of the directions `(a, b)` of log-polar inputs."""
    x = np.asarray(x, "float64")
    return np.arctan2(x[..., 2 * d :], x[..., d : 2 * d])


def _assert_angles_close(cos, sin, expected, atol):
    """Angle of `cos + i sin` against `expected` (rad), modulo 2 pi."""
    angle = np.arctan2(np.asarray(sin, "f8"), np.asarray(cos, "f8"))
    error = np.abs(np.angle(np.exp(1j * (angle - expected))))
    assert error.max() < atol, error


class ComplexMultiplicationPoolingTest(testing.TestCase):
    def test_layer_basics(self):
        x, mask = _log_polar_inputs()
        self.run_layer_test(
            layers.ComplexMultiplicationPooling,
            {"use_initial_weights": True},
            x,
            input_mask=mask,
            expected_output_shape=(3, 12),
            expected_num_trainable_weights=2,
            expected_num_non_trainable_weights=0,
            supports_masking=True,
            expected_output_mask=None,
        )

    def test_matches_numpy_complex128(self):
        x, mask = _log_polar_inputs()
        product = _reference(x, mask, 4)
        out = layers.ComplexMultiplicationPooling()(x, mask=mask)
        expected = np.concatenate(
            [
                product.real / np.abs(product),
                product.imag / np.abs(product),
                np.log(np.abs(product)),
            ],
            -1,
        )
        self.assertAllClose(out, expected, atol=1e-5, rtol=1e-5)
        out = layers.ComplexMultiplicationPooling(output_format="complex")(
            x, mask=mask
        )
        expected = np.concatenate([product.real, product.imag], -1)
        self.assertAllClose(out, expected, atol=1e-5, rtol=1e-5)

    def test_complex_input_format_matches_numpy(self):
        rng = np.random.default_rng(3)
        z = rng.normal(size=(2, 5, 3)) + 1j * rng.normal(size=(2, 5, 3))
        mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
        x = np.concatenate([z.real, z.imag], -1).astype("float32")
        out = layers.ComplexMultiplicationPooling(
            input_format="complex", output_format="complex"
        )(x, mask=mask)
        product = np.prod(np.where(mask[..., None], z, 1.0), axis=1)
        expected = np.concatenate([product.real, product.imag], -1)
        self.assertAllClose(out, expected, atol=1e-5, rtol=1e-5)

    def test_initial_weights_multiply_the_product(self):
        x, mask = _log_polar_inputs(d=2)
        layer = layers.ComplexMultiplicationPooling(
            output_format="complex", use_initial_weights=True
        )
        layer(x, mask=mask)
        log_modulus = np.array([0.3, -0.2], "float32")
        phase = np.array([1.0, -2.5], "float32")
        layer.set_weights([log_modulus, phase])
        initial = np.exp(log_modulus + 1j * phase)
        product = _reference(x, mask, 2) * initial
        expected = np.concatenate([product.real, product.imag], -1)
        self.assertAllClose(layer(x, mask=mask), expected, atol=1e-5)

    def test_keras_mask_is_used(self):
        ids = np.array([[3, 1, 0, 0], [2, 2, 2, 1]], "int32")
        embedded = keras.layers.Embedding(4, 6, mask_zero=True)
        pooling = layers.ComplexMultiplicationPooling()
        via_keras_mask = pooling(embedded(ids))
        explicit = pooling(embedded(ids), mask=ids > 0)
        self.assertAllClose(via_keras_mask, explicit)
        everything = np.ones(ids.shape, bool)
        self.assertNotAllClose(
            via_keras_mask, pooling(embedded(ids), mask=everything)
        )

    def test_set_properties(self):
        x, mask = _log_polar_inputs(batch=4, n=7)
        layer = layers.ComplexMultiplicationPooling()

        def fn(inputs, masks):
            return layer(inputs, mask=masks)

        self.assert_permutation_invariant(fn, x, mask, atol=1e-4)
        self.assert_padding_invariant(fn, x, mask, atol=1e-4)

    def test_all_masked_set_is_the_identity(self):
        x, _ = _log_polar_inputs(batch=2, n=5, d=3)
        mask = np.array([[0] * 5, [1] * 5], bool)
        out = keras.ops.convert_to_numpy(
            layers.ComplexMultiplicationPooling()(x, mask=mask)
        )
        self.assertAllClose(out[0], [1, 1, 1, 0, 0, 0, 0, 0, 0])
        out = layers.ComplexMultiplicationPooling(output_format="complex")(
            x, mask=mask
        )
        self.assertAllClose(
            keras.ops.convert_to_numpy(out)[0], [1] * 3 + [0] * 3
        )

    def test_stable_for_1e5_factors(self):
        n = 100_000
        rng = np.random.default_rng(0)
        r = np.log(np.where(np.arange(n) % 2, 2.0, 0.5))[None, :, None]
        r = np.concatenate([r, np.full_like(r, np.log(2.0))], -1)
        angle = rng.uniform(-np.pi, np.pi, size=(1, n, 2))
        x = np.concatenate([r, np.cos(angle), np.sin(angle)], -1)
        x = x.astype("float32")
        out = keras.ops.convert_to_numpy(
            layers.ComplexMultiplicationPooling()(x)
        )
        assert np.all(np.isfinite(out))
        total_angle = _exact_angles(x, 2).sum(1)[0]
        _assert_angles_close(out[0, :2], out[0, 2:4], total_angle, 1e-3)
        # The sum of log-moduli is a plain float32 sum (TensorFlow reduces
        # sequentially: ~1e-3 relative drift over 1e5 terms).
        self.assertAllClose(
            out[0, 4:], [0.0, n * np.log(2.0)], atol=1e-2, rtol=2e-3
        )

    def test_phase_sum_of_1e5_angles_of_any_mean(self):
        # A plain float32 sum of 1e5 angles of mean 1.3 ends near 1.3e5 rad
        # (one float32 step there is 8e-3 rad): 1e-2 rad off on TensorFlow,
        # 5e-3 on JAX and PyTorch. The blocked sum, reduced modulo 2 pi, is
        # exact (see tests/ops), and the angles are float64 where the
        # backend has float64 (PyTorch's float32 atan2 is biased by up to an
        # ulp against the exact angle: 4e-3 rad over these 1e5 angles).
        n = 100_000
        rng = np.random.default_rng(1)
        mean = np.array([1.3, 0.7, -3.0, 0.0])
        angles = (mean + rng.uniform(-0.1, 0.1, (n, 4)))[None]
        x = np.concatenate(
            [np.zeros_like(angles), np.cos(angles), np.sin(angles)], -1
        ).astype("float32")
        out = keras.ops.convert_to_numpy(
            layers.ComplexMultiplicationPooling()(x)
        )
        total_angle = _exact_angles(x, 4).sum(1)[0]
        _assert_angles_close(out[0, :4], out[0, 4:8], total_angle, 1e-3)

    def test_mixed_precision_sums_in_float32(self):
        n = 20_000
        angles = np.full((1, n, 1), 1.3)
        x = np.concatenate(
            [np.full_like(angles, -0.01), np.cos(angles), np.sin(angles)], -1
        ).astype("float16")
        layer = layers.ComplexMultiplicationPooling(dtype="mixed_float16")
        out = layer(x)
        self.assertEqual(keras.backend.standardize_dtype(out.dtype), "float16")
        out = keras.ops.convert_to_numpy(out).astype("float64")
        total_angle = _exact_angles(x, 1).sum(1)[0]
        # float16 outputs: about 1e-3 of rounding on cos and sin.
        _assert_angles_close(out[0, :1], out[0, 1:2], total_angle, 2e-3)
        expected = n * np.float64(np.float16(-0.01))
        self.assertAllClose(out[0, 2:], [expected], rtol=1e-3)

    def test_bad_arguments(self):
        with pytest.raises(ValueError, match="input_format"):
            layers.ComplexMultiplicationPooling(input_format="polar")
        with pytest.raises(ValueError, match="output_format"):
            layers.ComplexMultiplicationPooling(output_format="real")
        with pytest.raises(ValueError, match=r"multiple of 3.*\(2, 5, 4\)"):
            layers.ComplexMultiplicationPooling()(np.zeros((2, 5, 4)))
        with pytest.raises(ValueError, match="mask"):
            layers.ComplexMultiplicationPooling()(
                np.zeros((2, 5, 6)), mask=np.ones((2, 4), bool)
            )

    def test_saving(self):
        x, mask = _log_polar_inputs()
        inputs = keras.Input((None, 12))
        outputs = layers.ComplexMultiplicationPooling(use_initial_weights=True)(
            inputs
        )
        model = keras.Model(inputs, keras.layers.Dense(2)(outputs))
        self.run_model_saving_test(model, x)
        self.run_weights_roundtrip_test(model, x)

    def test_golden(self):
        self.assert_golden("complex_multiplication_pooling")
