import keras
import numpy as np
import pytest

from keras_msets import layers
from keras_msets import testing


def _complex_inputs(shape=(3, 5), units=4, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=shape + (units,)) + 1j * rng.normal(
        size=shape + (units,)
    )
    return np.concatenate([z.real, z.imag], -1).astype("float32")


def _reference(x, a, b, c, d, activation=None):
    """numpy complex128 of Eq. 10: sigma(Re(Wz + b)) + i sigma(Im(Wz + b))."""
    n = x.shape[-1] // 2
    z = x[..., :n].astype("float64") + 1j * x[..., n:].astype("float64")
    w = a.astype("float64") + 1j * b.astype("float64")
    out = z @ w + (c.astype("float64") + 1j * d.astype("float64"))
    real, imag = out.real, out.imag
    if activation is not None:
        real, imag = activation(real), activation(imag)
    return np.concatenate([real, imag], -1)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


class ComplexDenseTest(testing.TestCase):
    def test_layer_basics(self):
        x = _complex_inputs()
        mask = np.random.default_rng(1).random((3, 5)) < 0.6
        for kwargs, count in (
            ({}, 4),
            ({"shared_weights": True, "activation": "tanh"}, 2),
            ({"use_bias": False}, 2),
            ({"use_bias": False, "shared_weights": True}, 1),
        ):
            self.run_layer_test(
                layers.ComplexDense,
                {"units": 3, **kwargs},
                x,
                input_mask=mask,
                expected_output_shape=(3, 5, 6),
                expected_num_trainable_weights=count,
                expected_num_non_trainable_weights=0,
                supports_masking=True,
                expected_output_mask=mask,
            )

    def test_parameter_counts(self):
        for kwargs, expected in (
            ({}, 2 * 4 * 3 + 2 * 3),
            ({"shared_weights": True}, 4 * 3 + 3),
            ({"use_bias": False}, 2 * 4 * 3),
        ):
            layer = layers.ComplexDense(3, **kwargs)
            layer.build((None, 8))
            self.assertEqual(layer.count_params(), expected)

    def test_matches_numpy_complex128(self):
        x = _complex_inputs()
        rng = np.random.default_rng(2)
        a, b = rng.normal(size=(2, 4, 3)).astype("float32")
        c, d = rng.normal(size=(2, 3)).astype("float32")
        layer = layers.ComplexDense(3)
        layer.build(x.shape)
        layer.set_weights([a, b, c, d])
        self.assertAllClose(
            layer(x), _reference(x, a, b, c, d), atol=1e-5, rtol=1e-5
        )
        layer = layers.ComplexDense(3, activation="sigmoid")
        layer.build(x.shape)
        layer.set_weights([a, b, c, d])
        expected = _reference(x, a, b, c, d, _sigmoid)
        self.assertAllClose(layer(x), expected, atol=1e-5, rtol=1e-5)

    def test_shared_weights_matches_numpy(self):
        # A = B, c = d: W = A + iA, bias c + ic.
        x = _complex_inputs(shape=(2, 3, 6))
        rng = np.random.default_rng(3)
        a = rng.normal(size=(4, 5)).astype("float32")
        c = rng.normal(size=(5,)).astype("float32")
        layer = layers.ComplexDense(5, shared_weights=True, activation="tanh")
        layer.build(x.shape)
        layer.set_weights([a, c])
        expected = _reference(x, a, a, c, c, np.tanh)
        self.assertAllClose(layer(x), expected, atol=1e-5, rtol=1e-5)

    def test_activation_applied_to_parts_separately(self):
        x = _complex_inputs(shape=(2,))
        layer = layers.ComplexDense(3, activation="softmax")
        linear = layers.ComplexDense(3)
        out = keras.ops.convert_to_numpy(layer(x))
        linear(x)
        linear.set_weights(layer.get_weights())
        pre = keras.ops.convert_to_numpy(linear(x))
        for part in (slice(0, 3), slice(3, 6)):
            e = np.exp(pre[:, part] - pre[:, part].max(-1, keepdims=True))
            self.assertAllClose(out[:, part], e / e.sum(-1, keepdims=True))

    def test_mask_passes_through(self):
        ids = np.array([[3, 1, 0, 0], [2, 2, 2, 1]], "int32")
        embedding = layers.ComplexOrderEmbedding(4, 3, mask_zero=True)
        dense = layers.ComplexDense(2)
        pooling = layers.ComplexMultiplicationPooling(
            input_format="complex", output_format="complex"
        )
        hidden = dense(embedding(ids))
        self.assertAllEqual(dense.compute_mask(hidden, ids != 0), ids != 0)
        via_keras_mask = pooling(dense(embedding(ids)))
        explicit = pooling(hidden, mask=ids > 0)
        self.assertAllClose(via_keras_mask, explicit)
        inputs = keras.Input((None,), dtype="int32")
        model = keras.Model(inputs, pooling(dense(embedding(inputs))))
        self.assertAllClose(model(ids), explicit, atol=1e-6)

    def test_bad_arguments(self):
        with pytest.raises(ValueError, match=r"`units`.*units=0"):
            layers.ComplexDense(0)
        with pytest.raises(ValueError, match=r"`units`.*units='4'"):
            layers.ComplexDense("4")
        with pytest.raises(ValueError, match=r"even.*shape=\(2, 5\)"):
            layers.ComplexDense(3)(np.zeros((2, 5), "float32"))

    def test_saving(self):
        x = _complex_inputs()
        inputs = keras.Input((None, 8))
        hidden = layers.ComplexDense(3, activation="tanh")(inputs)
        outputs = layers.ComplexDense(2, shared_weights=True)(hidden)
        model = keras.Model(inputs, outputs)
        self.run_model_saving_test(model, x)
        self.run_weights_roundtrip_test(model, x)

    def test_golden(self):
        self.assert_golden("complex_dense")
