import keras
import numpy as np
import pytest

from keras_msets import testing
from keras_msets.layers.complex_conv1d import ComplexConv1D


def _complex_inputs(batch=3, length=7, channels=2, seed=0):
    rng = np.random.default_rng(seed)
    shape = (batch, length, channels)
    z = rng.normal(size=shape) + 1j * rng.normal(size=shape)
    return np.concatenate([z.real, z.imag], -1).astype("float32")


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _reference(x, a, b, c, d, kernel_size, strides, padding, activation=None):
    """numpy complex128 of the complex convolution (App. B, Eq. 10).

    out[t] = sum_j z[t * strides + j] W[j] + (c + id), W = A + iB, with the
    TensorFlow "same" zero padding (extra zero on the right when odd).
    """
    n = x.shape[-1] // 2
    z = x[..., :n].astype("float64") + 1j * x[..., n:].astype("float64")
    w = a.astype("float64") + 1j * b.astype("float64")
    length = z.shape[1]
    if padding == "same":
        out_len = -(-length // strides)
        total = max((out_len - 1) * strides + kernel_size - length, 0)
        left = total // 2
        z = np.pad(z, ((0, 0), (left, total - left), (0, 0)))
    else:
        out_len = (length - kernel_size) // strides + 1
    out = np.stack(
        [
            np.einsum(
                "bjc,jcf->bf",
                z[:, t * strides : t * strides + kernel_size],
                w,
            )
            for t in range(out_len)
        ],
        axis=1,
    )
    out = out + (c.astype("float64") + 1j * d.astype("float64"))
    real, imag = out.real, out.imag
    if activation is not None:
        real, imag = activation(real), activation(imag)
    return np.concatenate([real, imag], -1)


def _reference_mask(mask, kernel_size, strides, padding):
    """Expected output mask, written with plain loops."""
    length = mask.shape[1]
    if padding == "same":
        return np.stack([mask[:, t] for t in range(0, length, strides)], axis=1)
    out_len = (length - kernel_size) // strides + 1
    return np.stack(
        [
            mask[:, t * strides : t * strides + kernel_size].all(axis=1)
            for t in range(out_len)
        ],
        axis=1,
    )


def _random_weights(kernel_size, channels, filters, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(2, kernel_size, channels, filters))
    c, d = rng.normal(size=(2, filters))
    return [v.astype("float32") for v in (a, b, c, d)]


CONFIGS = [
    (3, 1, "valid"),
    (3, 2, "valid"),
    (2, 1, "same"),
    (3, 1, "same"),
    (3, 2, "same"),
    (4, 3, "same"),
]


class ComplexConv1DTest(testing.TestCase):
    def test_layer_basics(self):
        x = _complex_inputs()
        mask = np.random.default_rng(1).random((3, 7)) < 0.7
        for kwargs, count in (
            ({}, 4),
            ({"shared_weights": True, "activation": "tanh"}, 2),
            ({"padding": "same", "strides": 2, "use_bias": False}, 2),
            ({"padding": "same", "use_bias": False, "shared_weights": True}, 1),
        ):
            strides = kwargs.get("strides", 1)
            padding = kwargs.get("padding", "valid")
            if padding == "same":
                out_len = -(-7 // strides)
            else:
                out_len = (7 - 3) // strides + 1
            self.run_layer_test(
                ComplexConv1D,
                {"filters": 3, "kernel_size": 3, **kwargs},
                x,
                input_mask=mask,
                expected_output_shape=(3, out_len, 6),
                expected_num_trainable_weights=count,
                expected_num_non_trainable_weights=0,
                supports_masking=True,
                expected_output_mask=_reference_mask(mask, 3, strides, padding),
            )

    def test_parameter_counts(self):
        # k * in * f per real kernel and f per real bias; shared: halved.
        for kwargs, expected in (
            ({}, 2 * 3 * 4 * 5 + 2 * 5),
            ({"shared_weights": True}, 3 * 4 * 5 + 5),
            ({"use_bias": False}, 2 * 3 * 4 * 5),
            ({"use_bias": False, "shared_weights": True}, 3 * 4 * 5),
        ):
            layer = ComplexConv1D(5, 3, **kwargs)
            layer.build((None, 9, 8))
            self.assertEqual(layer.count_params(), expected)

    def test_matches_numpy_complex128(self):
        x = _complex_inputs(batch=2, length=8, channels=3)
        for kernel_size, strides, padding in CONFIGS:
            a, b, c, d = _random_weights(kernel_size, 3, 4, seed=kernel_size)
            layer = ComplexConv1D(
                4, kernel_size, strides=strides, padding=padding
            )
            layer.build(x.shape)
            layer.set_weights([a, b, c, d])
            expected = _reference(x, a, b, c, d, kernel_size, strides, padding)
            self.assertAllClose(
                layer(x),
                expected,
                atol=1e-5,
                rtol=1e-5,
                msg=f"kernel_size={kernel_size}, strides={strides}, "
                f"padding={padding}",
            )
        layer = ComplexConv1D(4, 3, padding="same", activation="sigmoid")
        layer.build(x.shape)
        a, b, c, d = _random_weights(3, 3, 4, seed=9)
        layer.set_weights([a, b, c, d])
        expected = _reference(x, a, b, c, d, 3, 1, "same", _sigmoid)
        self.assertAllClose(layer(x), expected, atol=1e-5, rtol=1e-5)

    def test_shared_weights_matches_numpy(self):
        # A = B, c = d: W = A + iA, bias c + ic.
        x = _complex_inputs(batch=2, length=6, channels=2, seed=3)
        a, _, c, _ = _random_weights(2, 2, 3, seed=4)
        layer = ComplexConv1D(3, 2, shared_weights=True, activation="tanh")
        layer.build(x.shape)
        layer.set_weights([a, c])
        expected = _reference(x, a, a, c, c, 2, 1, "valid", np.tanh)
        self.assertAllClose(layer(x), expected, atol=1e-5, rtol=1e-5)

    def test_equals_keras_conv1d_on_real_inputs(self):
        # Imaginary inputs 0 and B = 0: the real part is a real Conv1D, the
        # imaginary part is sigma(d) everywhere.
        rng = np.random.default_rng(5)
        real = rng.normal(size=(2, 9, 3)).astype("float32")
        x = np.concatenate([real, np.zeros_like(real)], -1)
        for kernel_size, strides, padding in (
            (3, 2, "valid"),
            (2, 1, "same"),
            (4, 3, "same"),
        ):
            a, _, c, d = _random_weights(kernel_size, 3, 4, seed=6)
            layer = ComplexConv1D(
                4,
                kernel_size,
                strides=strides,
                padding=padding,
                activation="relu",
            )
            conv = keras.layers.Conv1D(
                4,
                kernel_size,
                strides=strides,
                padding=padding,
                activation="relu",
            )
            layer.build(x.shape)
            conv.build(real.shape)
            layer.set_weights([a, np.zeros_like(a), c, d])
            conv.set_weights([a, c])
            out = keras.ops.convert_to_numpy(layer(x))
            expected = keras.ops.convert_to_numpy(conv(real))
            self.assertAllClose(out[..., :4], expected, atol=1e-5, rtol=1e-5)
            imag = np.broadcast_to(np.maximum(d, 0), expected.shape)
            self.assertAllClose(out[..., 4:], imag, atol=1e-6)

    def test_padded_steps_are_zeros(self):
        x = _complex_inputs(batch=2, length=6, channels=2, seed=7)
        mask = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 0, 1, 1, 0]], bool)
        zeroed = np.where(mask[..., None], x, 0.0).astype("float32")
        garbage = np.where(mask[..., None], x, 1e3).astype("float32")
        for kernel_size, strides, padding in CONFIGS:
            layer = ComplexConv1D(
                3, kernel_size, strides=strides, padding=padding
            )
            expected = keras.ops.convert_to_numpy(layer(zeroed))
            self.assertAllClose(
                layer(garbage, mask=mask), expected, atol=1e-5, rtol=1e-5
            )

    def test_padding_invariance(self):
        x = _complex_inputs(batch=3, length=6, channels=2, seed=8)
        mask = np.array(
            [[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1, 0, 1, 1, 0, 1]],
            bool,
        )
        layer = ComplexConv1D(3, 3, padding="same", activation="tanh")
        self.assert_padding_invariant(
            lambda x, m: layer(x, mask=m), x, mask, equivariant=True
        )

    def test_right_padded_equals_unpadded(self):
        # Valid padding (any strides) and "same" with strides 1: the valid
        # outputs of a right-padded row are those of the unpadded row.
        x = _complex_inputs(batch=2, length=8, channels=2, seed=9)
        lengths = [5, 3]
        mask = np.arange(8)[None, :] < np.array(lengths)[:, None]
        x = np.where(mask[..., None], x, -7e2).astype("float32")
        for kernel_size, strides, padding in (
            (3, 2, "valid"),
            (2, 1, "same"),
            (3, 1, "same"),
        ):
            layer = ComplexConv1D(
                2, kernel_size, strides=strides, padding=padding
            )
            out = keras.ops.convert_to_numpy(layer(x, mask=mask))
            out_mask = keras.ops.convert_to_numpy(
                layer.compute_mask(x, keras.ops.convert_to_tensor(mask))
            )
            for row, n in enumerate(lengths):
                alone = keras.ops.convert_to_numpy(layer(x[row : row + 1, :n]))
                self.assertEqual(int(out_mask[row].sum()), alone.shape[1])
                self.assertAllClose(
                    out[row][out_mask[row]], alone[0], atol=1e-5, rtol=1e-5
                )

    def test_all_masked_row(self):
        x = _complex_inputs(batch=2, length=5, channels=2, seed=10)
        mask = np.array([[1, 1, 1, 0, 0], [0, 0, 0, 0, 0]], bool)
        layer = ComplexConv1D(3, 2, padding="same", activation="tanh")
        layer.build(x.shape)
        a, b, c, d = _random_weights(2, 2, 3, seed=11)
        layer.set_weights([a, b, c, d])
        out = keras.ops.convert_to_numpy(layer(x * 1e3, mask=mask))
        expected = np.concatenate([np.tanh(c), np.tanh(d)])
        self.assertAllClose(out[1], np.tile(expected, (5, 1)), atol=1e-6)
        out_mask = layer.compute_mask(x, keras.ops.convert_to_tensor(mask))
        self.assertAllEqual(out_mask, mask)

    def test_mask_propagates_in_model(self):
        x = _complex_inputs(batch=2, length=6, channels=2, seed=12)
        x[1, 4:] = 0.0
        inputs = keras.Input((None, 4))
        masked = keras.layers.Masking(0.0)(inputs)
        conv = ComplexConv1D(2, 3, strides=2)
        hidden = conv(masked)
        model = keras.Model(inputs, hidden)
        mask = np.any(x != 0, axis=-1)
        self.assertAllClose(model(x), conv(x, mask=mask), atol=1e-6)
        # The symbolic output carries the computed mask.
        expected_mask = _reference_mask(mask, 3, 2, "valid")
        mask_model = keras.Model(
            inputs, keras.ops.cast(hidden._keras_mask, "int32")
        )
        self.assertAllEqual(mask_model(x), expected_mask.astype("int32"))

    def test_bad_arguments(self):
        with pytest.raises(ValueError, match=r"`filters`.*filters=0"):
            ComplexConv1D(0, 3)
        with pytest.raises(ValueError, match=r"`kernel_size`.*=2.5"):
            ComplexConv1D(2, 2.5)
        with pytest.raises(ValueError, match=r"`strides`.*strides=0"):
            ComplexConv1D(2, 3, strides=0)
        with pytest.raises(ValueError, match=r"`padding`.*'causal'"):
            ComplexConv1D(2, 3, padding="causal")
        with pytest.raises(ValueError, match=r"even.*shape=\(2, 5, 5\)"):
            ComplexConv1D(2, 3)(np.zeros((2, 5, 5), "float32"))
        # Shorter than the window: was a backend error (torch's
        # RuntimeError, tensorflow's InvalidArgumentError).
        with pytest.raises(ValueError, match=r"`kernel_size`=3 steps long"):
            ComplexConv1D(2, 3)(np.zeros((2, 2, 4), "float32"))
        layer = ComplexConv1D(2, (3,), strides=(2,), padding="SAME")
        self.assertEqual(
            (layer.kernel_size, layer.strides, layer.padding), (3, 2, "same")
        )

    def test_saving(self):
        x = _complex_inputs(batch=2, length=7, channels=2, seed=13)
        inputs = keras.Input((None, 4))
        masked = keras.layers.Masking(0.0)(inputs)
        hidden = ComplexConv1D(3, 3, padding="same", activation="tanh")(masked)
        outputs = ComplexConv1D(2, 2, strides=2, shared_weights=True)(hidden)
        model = keras.Model(inputs, outputs)
        self.run_model_saving_test(model, x)
        self.run_weights_roundtrip_test(model, x)

    def test_golden(self):
        self.assert_golden("complex_conv1d")
