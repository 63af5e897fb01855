import keras
import numpy as np
import pytest

from keras_msets import testing
from keras_msets.layers.complex_lstm import ComplexLSTM
from keras_msets.layers.complex_lstm import ComplexLSTMCell

BACKEND = keras.backend.backend()


def _complex_inputs(batch=3, length=5, channels=2, seed=0):
    rng = np.random.default_rng(seed)
    shape = (batch, length, channels)
    z = rng.normal(size=shape) + 1j * rng.normal(size=shape)
    return np.concatenate([z.real, z.imag], -1).astype("float32")


def _to_complex(x):
    n = x.shape[-1] // 2
    return x[..., :n].astype("float64") + 1j * x[..., n:].astype("float64")


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _random_weights(channels, units, seed, shared=False, use_bias=True):
    """Layer weights in `layer.weights` order, and their complex values."""
    rng = np.random.default_rng(seed)
    parts = 1 if shared else 2
    kernels = rng.normal(size=(parts, channels, 4 * units)) * 0.5
    recurrent = rng.normal(size=(parts, units, 4 * units)) * 0.5
    biases = rng.normal(size=(parts, 4 * units)) * 0.5
    values = list(kernels) + list(recurrent)
    if use_bias:
        values += list(biases)
    values = [v.astype("float32") for v in values]
    k, r, b = kernels.astype("float32"), recurrent.astype("float32"), biases
    b = b.astype("float32") if use_bias else np.zeros_like(b, "float32")
    imag = 0 if shared else 1
    complex_weights = (
        k[0] + 1j * k[imag],
        r[0] + 1j * r[imag],
        b[0] + 1j * b[imag],
    )
    return values, [w.astype("complex128") for w in complex_weights]


def _reference(
    x,
    complex_weights,
    mask=None,
    gate_product="complex",
    go_backwards=False,
    return_sequences=False,
    zero_output_for_mask=False,
):
    """numpy complex128 loop over time of the complex LSTM (Eq. 12).

    Every gate is f(W^h h + W^z z + b) with f(z) = act(Re z) + i act(Im z);
    c = f . c + i . g and h = o . f_tanh(c), `.` the complex product (or
    the partwise product for gate_product="split"). A masked step keeps h
    and c and outputs the previous output (Keras' convention).
    """
    w_z, w_h, bias = complex_weights
    z = _to_complex(x)
    batch, length = z.shape[:2]
    units = w_h.shape[0]
    if mask is None:
        mask = np.ones((batch, length), bool)

    def f(act, v):
        return act(v.real) + 1j * act(v.imag)

    def product(a, b):
        if gate_product == "split":
            return a.real * b.real + 1j * a.imag * b.imag
        return a * b

    h = np.zeros((batch, units), complex)
    cell = np.zeros((batch, units), complex)
    previous = np.zeros((batch, units), complex)
    outputs = []
    steps = range(length - 1, -1, -1) if go_backwards else range(length)
    for t in steps:
        pre = z[:, t] @ w_z + h @ w_h + bias
        i, forget, g, o = np.split(pre, 4, axis=-1)
        i, forget, o = f(_sigmoid, i), f(_sigmoid, forget), f(_sigmoid, o)
        g = f(np.tanh, g)
        new_cell = product(forget, cell) + product(i, g)
        new_h = product(o, f(np.tanh, new_cell))
        valid = mask[:, t][:, None]
        cell = np.where(valid, new_cell, cell)
        h = np.where(valid, new_h, h)
        fill = 0.0 if zero_output_for_mask else previous
        previous = np.where(valid, new_h, fill)
        outputs.append(previous)
    out = np.stack(outputs, axis=1) if return_sequences else previous
    return np.concatenate([out.real, out.imag], -1)


def _layer(x, units, seed, **kwargs):
    layer = ComplexLSTM(units, **kwargs)
    layer.build(x.shape)
    values, complex_weights = _random_weights(
        x.shape[-1] // 2,
        units,
        seed,
        shared=kwargs.get("shared_weights", False),
        use_bias=kwargs.get("use_bias", True),
    )
    layer.set_weights(values)
    return layer, complex_weights


# A right-padded row, a row with a hole and a padded first step, a full row.
MASK = np.array([[1, 1, 1, 0, 0], [0, 1, 0, 1, 1], [1, 1, 1, 1, 1]], dtype=bool)


class ComplexLSTMTest(testing.TestCase):
    def test_layer_basics(self):
        x = _complex_inputs()
        for kwargs, count, shape, out_mask in (
            (
                {
                    "return_sequences": True,
                    "shared_weights": True,
                    "go_backwards": True,
                },
                3,
                (3, 5, 6),
                MASK[:, ::-1],
            ),
            ({"use_bias": False, "gate_product": "split"}, 4, (3, 6), None),
        ):
            self.run_layer_test(
                ComplexLSTM,
                {"units": 3, **kwargs},
                x,
                input_mask=MASK,
                expected_output_shape=shape,
                expected_num_trainable_weights=count,
                expected_num_non_trainable_weights=0,
                supports_masking=True,
                expected_output_mask=out_mask,
            )

    def test_parameter_counts(self):
        # Four gates, each with complex W^z [in, u], W^h [u, u], b [u]:
        # 2 * 4u * (in + u + 1) real numbers; shared weights halve it.
        units, channels = 3, 4
        full = 2 * 4 * units * (channels + units + 1)
        for kwargs, expected in (
            ({}, full),
            ({"shared_weights": True}, full // 2),
            ({"use_bias": False}, 2 * 4 * units * (channels + units)),
        ):
            layer = ComplexLSTM(units, **kwargs)
            layer.build((None, 5, 2 * channels))
            self.assertEqual(layer.count_params(), expected)

    def test_matches_numpy_complex128(self):
        x = _complex_inputs(seed=1)
        for kwargs, masks in (
            ({}, (None, MASK)),
            ({"return_sequences": True}, (MASK,)),
            ({"gate_product": "split", "return_sequences": True}, (MASK,)),
            ({"shared_weights": True}, (MASK,)),
            ({"go_backwards": True, "return_sequences": True}, (None, MASK)),
            ({"use_bias": False, "gate_product": "split"}, (MASK,)),
        ):
            layer, complex_weights = _layer(x, 4, seed=2, **kwargs)
            reference_kwargs = {
                k: v
                for k, v in kwargs.items()
                if k in ("gate_product", "go_backwards", "return_sequences")
            }
            for mask in masks:
                expected = _reference(
                    x, complex_weights, mask=mask, **reference_kwargs
                )
                self.assertAllClose(
                    layer(x, mask=mask),
                    expected,
                    atol=1e-5,
                    rtol=1e-5,
                    msg=f"{kwargs}, mask={mask is not None}",
                )

    def test_gate_products_differ(self):
        # The test above would not notice if "split" were ignored.
        x = _complex_inputs(seed=3)
        complex_layer, _ = _layer(x, 3, seed=4)
        split_layer, _ = _layer(x, 3, seed=4, gate_product="split")
        self.assertNotAllClose(complex_layer(x), split_layer(x), atol=1e-3)

    def test_masked_steps_output_previous_or_zeros(self):
        x = _complex_inputs(seed=5)
        layer, complex_weights = _layer(x, 2, seed=6, return_sequences=True)
        out = keras.ops.convert_to_numpy(layer(x, mask=MASK))
        self.assertAllClose(out[0, 3], out[0, 2])
        self.assertAllClose(out[0, 4], out[0, 2])
        self.assertAllClose(out[1, 0], np.zeros(4))
        self.assertAllClose(out[1, 2], out[1, 1])
        zeros_layer, _ = _layer(
            x, 2, seed=6, return_sequences=True, zero_output_for_mask=True
        )
        out = zeros_layer(x, mask=MASK)
        expected = _reference(
            x,
            complex_weights,
            mask=MASK,
            return_sequences=True,
            zero_output_for_mask=True,
        )
        self.assertAllClose(out, expected, atol=1e-5, rtol=1e-5)
        self.assertAllClose(
            keras.ops.convert_to_numpy(out)[~MASK], np.zeros((4, 4))
        )

    def test_padding_invariance(self):
        x = _complex_inputs(seed=7)
        last, _ = _layer(x, 3, seed=8)
        sequences, _ = _layer(x, 3, seed=8, return_sequences=True)
        self.assert_padding_invariant(
            lambda x, m: last(x, mask=m), x, MASK, atol=1e-5
        )
        self.assert_padding_invariant(
            lambda x, m: sequences(x, mask=m),
            x,
            MASK,
            equivariant=True,
            atol=1e-5,
        )

    def test_nan_in_padding_is_harmless(self):
        x = _complex_inputs(seed=9)
        layer, _ = _layer(x, 3, seed=10)
        garbage = np.where(MASK[..., None], x, np.nan).astype("float32")
        self.assertAllClose(
            layer(garbage, mask=MASK), layer(x, mask=MASK), atol=1e-6
        )

    def test_right_padded_equals_unpadded(self):
        x = _complex_inputs(batch=2, seed=11)
        mask = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], bool)
        layer, _ = _layer(x, 3, seed=12)
        out = keras.ops.convert_to_numpy(layer(x, mask=mask))
        self.assertAllClose(out[1], layer(x[1:, :2])[0], atol=1e-6)

    def test_all_masked_outputs_zeros(self):
        x = _complex_inputs(batch=2, seed=13)
        mask = np.array([[1, 1, 0, 0, 0], [0, 0, 0, 0, 0]], bool)
        layer, _ = _layer(x, 3, seed=14, return_sequences=True)
        out = keras.ops.convert_to_numpy(layer(x * 1e3, mask=mask))
        self.assertTrue(np.all(np.isfinite(out)))
        self.assertAllClose(out[1], np.zeros((5, 6)))

    def test_compiled_predict_matches_eager(self):
        x = _complex_inputs(seed=15)
        inputs = keras.Input((5, 4))
        mask = keras.Input((5,), dtype="bool")
        layer = ComplexLSTM(3, return_sequences=True)
        model = keras.Model([inputs, mask], layer(inputs, mask=mask))
        # jit_compile=True is XLA on TensorFlow and JAX; on PyTorch it would
        # be torch.compile, too slow for a unit test.
        model.compile(jit_compile=BACKEND != "torch")
        compiled = model.predict([x, MASK], verbose=0, batch_size=3)
        self.assertAllClose(compiled, layer(x, mask=MASK), atol=1e-5)

    def test_cell_in_keras_rnn(self):
        x = _complex_inputs(seed=16)
        layer, _ = _layer(
            x, 3, seed=17, gate_product="split", return_sequences=True
        )
        rnn = keras.layers.RNN(
            ComplexLSTMCell(3, gate_product="split"), return_sequences=True
        )
        rnn.build(x.shape)
        rnn.set_weights(layer.get_weights())
        self.assertAllClose(rnn(x), layer(x), atol=1e-6)
        cell = rnn.cell
        config = cell.get_config()
        self.assertEqual(
            ComplexLSTMCell.from_config(config).get_config(), config
        )

    def test_return_state_and_initial_state(self):
        x = _complex_inputs(seed=18)
        layer, complex_weights = _layer(x, 2, seed=19, return_state=True)
        output, h, c = layer(x, mask=MASK)
        self.assertAllClose(output, h)
        self.assertEqual(tuple(c.shape), (3, 4))
        # Continuing from the returned state equals one long sequence.
        long_x = np.concatenate([x, x[:, ::-1]], axis=1)
        long_mask = np.concatenate([MASK, MASK[:, ::-1]], axis=1)
        expected = _reference(long_x, complex_weights, mask=long_mask)
        second, _, _ = layer(
            x[:, ::-1], initial_state=[h, c], mask=MASK[:, ::-1]
        )
        self.assertAllClose(second, expected, atol=1e-5, rtol=1e-5)

    def test_bidirectional(self):
        x = _complex_inputs(seed=20)
        wrapper = keras.layers.Bidirectional(
            ComplexLSTM(2, return_sequences=True)
        )
        out = keras.ops.convert_to_numpy(wrapper(x, mask=MASK))
        self.assertEqual(out.shape, (3, 5, 8))
        backward = wrapper.backward_layer
        self.assertTrue(backward.go_backwards)
        self.assertAllClose(
            out[..., 4:],
            keras.ops.convert_to_numpy(backward(x, mask=MASK))[:, ::-1],
            atol=1e-6,
        )

    def test_unit_forget_bias(self):
        layer = ComplexLSTM(2, bias_initializer="zeros")
        layer.build((None, 3, 4))
        expected = np.array([0, 0, 1, 1, 0, 0, 0, 0], "float32")
        real_bias, imag_bias = layer.get_weights()[-2:]
        self.assertAllEqual(real_bias, expected)
        self.assertAllEqual(imag_bias, expected)
        layer = ComplexLSTM(2, unit_forget_bias=False, shared_weights=True)
        layer.build((None, 3, 4))
        self.assertAllEqual(layer.get_weights()[-1], np.zeros(8, "float32"))

    def test_bad_arguments(self):
        with pytest.raises(ValueError, match=r"`units`.*units=0"):
            ComplexLSTM(0)
        with pytest.raises(ValueError, match=r"`units`.*units=True"):
            ComplexLSTMCell(True)
        with pytest.raises(ValueError, match=r"`gate_product`.*'modulus'"):
            ComplexLSTM(2, gate_product="modulus")
        with pytest.raises(ValueError, match=r"even.*shape=\(2, 5\)"):
            ComplexLSTM(2)(np.zeros((2, 4, 5), "float32"))
        # Any rank but 3, built or not, before Keras's input-spec check.
        layer = ComplexLSTM(2)
        for shape in [(2, 4), (2, 4, 6, 1), (2, 4, 6, 1, 1)]:
            with pytest.raises(ValueError, match=r"`sequences` must have rank"):
                layer(np.zeros(shape, "float32"))
        layer(np.zeros((2, 4, 6), "float32"))
        with pytest.raises(ValueError, match=r"sequences.shape=\(2, 4\)"):
            layer(np.zeros((2, 4), "float32"))

    def test_saving(self):
        x = _complex_inputs(seed=21)
        x[1, 3:] = 0.0
        inputs = keras.Input((None, 4))
        masked = keras.layers.Masking(0.0)(inputs)
        hidden = ComplexLSTM(3, return_sequences=True, gate_product="split")(
            masked
        )
        outputs = ComplexLSTM(2, shared_weights=True, go_backwards=True)(hidden)
        model = keras.Model(inputs, outputs)
        self.run_model_saving_test(model, x)
        self.run_weights_roundtrip_test(model, x)

    def test_golden(self):
        self.assert_golden("complex_lstm")
