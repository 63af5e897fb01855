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

    @pytest.mark.slow
    def test_stable_for_1e5_factors(self):
        n = 100_000
        rng = np.random.default_rng(0)
        r = np.log(np.where(np.arange(n) % 2, 2.0, 0.5))[None, :, None]
        r = np.concatenate([r, np.full_like(r, np.log(2.0))], -1)
        angle = rng.uniform(-np.pi, np.pi, size=(1, n, 2))
        x = np.concatenate([r, np.cos(angle), np.sin(angle)], -1)
        out = keras.ops.convert_to_numpy(
            layers.ComplexMultiplicationPooling()(x.astype("float32"))
        )
        assert np.all(np.isfinite(out))
        total_angle = angle.astype("float32").astype("float64").sum(1)[0]
        # float32 sums of 1e5 angles of size ~pi carry ~1e-2 rad of error.
        self.assertAllClose(out[0, :2], np.cos(total_angle), atol=5e-2)
        self.assertAllClose(out[0, 2:4], np.sin(total_angle), atol=5e-2)
        # TensorFlow sums float32 sequentially: ~1e-3 relative drift over
        # 1e5 terms (jax and torch sum pairwise and land within 1e-6).
        self.assertAllClose(
            out[0, 4:], [0.0, n * np.log(2.0)], atol=1e-2, rtol=2e-3
        )

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
