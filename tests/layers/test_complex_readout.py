import keras
import numpy as np
import pytest

from keras_msets import testing
from keras_msets.layers.complex_dense import ComplexDense
from keras_msets.layers.complex_readout import ComplexReadout


def _complex_inputs(shape=(3, 5), units=4, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=shape + (units,)) + 1j * rng.normal(
        size=shape + (units,)
    )
    return np.concatenate([z.real, z.imag], -1).astype("float32"), z


class ComplexReadoutTest(testing.TestCase):
    def test_layer_basics(self):
        x, _ = _complex_inputs()
        mask = np.random.default_rng(1).random((3, 5)) < 0.6
        for mode, size in (("modulus", 4), ("l2", 1), ("concat", 8)):
            self.run_layer_test(
                ComplexReadout,
                {"mode": mode},
                x,
                input_mask=mask,
                expected_output_shape=(3, 5, size),
                expected_num_trainable_weights=0,
                expected_num_non_trainable_weights=0,
                supports_masking=True,
                expected_output_mask=mask,
                run_training_check=False,
            )

    def test_matches_numpy_complex128(self):
        x, z = _complex_inputs(seed=2)
        self.assertAllClose(
            ComplexReadout("modulus")(x), np.abs(z), atol=1e-6, rtol=1e-6
        )
        expected = np.linalg.norm(z, axis=-1, keepdims=True)
        self.assertAllClose(
            ComplexReadout("l2")(x), expected, atol=1e-5, rtol=1e-6
        )
        self.assertAllEqual(ComplexReadout("concat")(x), x)
        self.assertAllClose(ComplexReadout()(x), np.abs(z), atol=1e-6)

    def test_zero_gives_zero_and_finite_gradients(self):
        # A zero input makes every complex unit exactly 0 + 0i, where the
        # modulus and the l2 norm are not differentiable.
        x = np.zeros((4, 6), "float32")
        for mode in ("modulus", "l2"):
            readout = ComplexReadout(mode)
            self.assertAllEqual(
                readout(x), np.zeros((4, 3 if mode == "modulus" else 1))
            )
            dense = ComplexDense(3, kernel_initializer="ones")
            inputs = keras.Input((6,))
            model = keras.Model(inputs, readout(dense(inputs)))
            model.compile(optimizer="sgd", loss="mse")
            target = np.ones((4, 3 if mode == "modulus" else 1))
            history = model.fit(x, target, verbose=0)
            self.assertTrue(np.isfinite(history.history["loss"][-1]))
            for weight in dense.weights:
                value = keras.ops.convert_to_numpy(weight)
                self.assertTrue(np.isfinite(value).all(), weight.path)

    def test_bad_arguments(self):
        with pytest.raises(ValueError, match=r"`mode`.*mode='norm'"):
            ComplexReadout("norm")
        with pytest.raises(ValueError, match=r"even.*shape=\(2, 5\)"):
            ComplexReadout()(np.zeros((2, 5), "float32"))

    def test_saving(self):
        x, _ = _complex_inputs()
        inputs = keras.Input((5, 8))
        hidden = ComplexDense(3)(inputs)
        modes = ("modulus", "l2", "concat")
        outputs = [ComplexReadout(mode)(hidden) for mode in modes]
        model = keras.Model(inputs, outputs)
        self.run_model_saving_test(model, x)
        self.run_weights_roundtrip_test(model, x)
