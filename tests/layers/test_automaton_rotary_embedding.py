import keras
import numpy as np
import pytest

from keras_msets import layers
from keras_msets import testing
from keras_msets.layers.automaton_rotary_embedding import (
    AutomatonRotaryEmbedding,
)


def _reference(x, frequency, positions, log_modulus=None):
    """numpy: z_j = x_j + i x_{j + d/2} times mu_j ** p, float64."""
    half = x.shape[-1] // 2
    z = x[..., :half] + 1j * x[..., half:]
    p = positions.astype("float64")[..., None]
    weight = np.exp(1j * p * frequency)
    if log_modulus is not None:
        weight = weight * np.exp(p * log_modulus)
    out = z * weight
    return np.concatenate([out.real, out.imag], -1)


class AutomatonRotaryEmbeddingTest(testing.TestCase):
    def test_layer_contract(self):
        x = np.random.default_rng(0).normal(size=(2, 5, 6)).astype("float32")
        self.run_layer_test(
            AutomatonRotaryEmbedding,
            {"learn_angles": True, "learn_modulus": True},
            x,
            expected_output_shape=(2, 5, 6),
            expected_num_trainable_weights=2,
        )

    def test_matches_keras_hub_rotary_embedding(self):
        keras_hub = pytest.importorskip("keras_hub")
        rng = np.random.default_rng(1)
        x = rng.uniform(-1, 1, (2, 200, 3, 16)).astype("float32")
        for kwargs in ({}, {"max_wavelength": 500, "scaling_factor": 2.0}):
            ours = AutomatonRotaryEmbedding(**kwargs)(x)
            theirs = keras_hub.layers.RotaryEmbedding(**kwargs)(x)
            self.assertAllClose(ours, theirs, atol=1e-5, rtol=0)
        # start_index, and other axes.
        ours = AutomatonRotaryEmbedding()(x, start_index=7)
        theirs = keras_hub.layers.RotaryEmbedding()(x, start_index=7)
        self.assertAllClose(ours, theirs, atol=1e-5, rtol=0)
        xt = np.swapaxes(x, 1, 3)  # features on axis 1, sequence on -1
        kwargs = {"sequence_axis": -1, "feature_axis": 1}
        ours = AutomatonRotaryEmbedding(**kwargs)(xt)
        theirs = keras_hub.layers.RotaryEmbedding(**kwargs)(xt)
        self.assertAllClose(ours, theirs, atol=1e-5, rtol=0)

    def test_is_the_forward_weight_of_a_unary_automaton(self):
        # float64 reference for the layer's float32 frequencies, at
        # positions up to 10**5 where a float32 product p * omega would be
        # off by up to 4e-3 rad.
        layer = AutomatonRotaryEmbedding()
        rng = np.random.default_rng(2)
        x = rng.uniform(-1, 1, (2, 4, 8)).astype("float32")
        positions = np.array([[0, 1, 99_999, 100_000], [5, 6, 7, 50_000]])
        out = layer(x, positions=positions.astype("int32"))
        frequency = layer.fixed_frequencies(4).astype("float32")
        expected = _reference(x.astype("float64"), frequency, positions)
        self.assertAllClose(out, expected, atol=2e-6, rtol=0)

    def test_learned_modulus_is_clamped_and_angles_train(self):
        layer = AutomatonRotaryEmbedding(
            learn_angles=True, learn_modulus=True, max_log_decay=0.05
        )
        x = np.ones((1, 6, 4), "float32")
        layer.build(x.shape)
        layer.log_modulus.assign(np.array([0.5, -1.0], "float32"))
        out = keras.ops.convert_to_numpy(layer(x))
        positions = np.arange(6)[None]
        frequency = keras.ops.convert_to_numpy(layer.frequency)
        clamped = np.array([0.0, -0.05])
        expected = _reference(x, frequency, positions, clamped)
        self.assertAllClose(out, expected, atol=1e-6, rtol=0)
        # A modulus never above 1: no growth at long positions.
        far = keras.ops.convert_to_numpy(layer(x, start_index=100_000))
        modulus = np.hypot(far[..., :2], far[..., 2:])  # |z| = sqrt(2)
        self.assertAllClose(modulus[0, :, 0], np.full(6, np.sqrt(2)))
        self.assertAllClose(modulus[0, :, 1], np.zeros(6), atol=1e-30)

        # The frequencies and moduli get gradients through a fit step.
        inputs = keras.Input((6, 4))
        model = keras.Model(inputs, layer(inputs))
        model.compile("adam", "mse")
        before = keras.ops.convert_to_numpy(layer.frequency).copy()
        model.fit(x, np.zeros_like(x), epochs=1, verbose=0)
        after = keras.ops.convert_to_numpy(layer.frequency)
        self.assertGreater(float(np.max(np.abs(after - before))), 0.0)

    def test_golden(self):
        # Same weights, same outputs on every backend; `.keras` files saved
        # on each backend load here.
        self.assert_golden("automaton_rotary_embedding")
        self.assert_cross_backend_load("automaton_rotary_embedding")

    def test_serialization_keeps_learned_weights(self):
        layer = AutomatonRotaryEmbedding(learn_angles=True)
        x = np.random.default_rng(3).normal(size=(1, 3, 4)).astype("float32")
        out = layer(x)
        clone = AutomatonRotaryEmbedding.from_config(layer.get_config())
        clone.build(x.shape)
        clone.set_weights(layer.get_weights())
        self.assertAllClose(clone(x), out)
        self.assertIs(layers.AutomatonRotaryEmbedding, AutomatonRotaryEmbedding)

    def test_bad_arguments_and_inputs(self):
        with pytest.raises(ValueError, match="max_wavelength"):
            AutomatonRotaryEmbedding(max_wavelength=0)
        with pytest.raises(ValueError, match="scaling_factor"):
            AutomatonRotaryEmbedding(scaling_factor=-1.0)
        with pytest.raises(ValueError, match="learn_modulus"):
            AutomatonRotaryEmbedding(learn_modulus=True)
        layer = AutomatonRotaryEmbedding()
        with pytest.raises(ValueError, match="even"):
            layer(np.ones((1, 3, 5), "float32"))
        with pytest.raises(ValueError, match="sequence_axis"):
            AutomatonRotaryEmbedding(sequence_axis=4)(np.ones((1, 3, 4)))
        with pytest.raises(TypeError, match="positions"):
            layer(np.ones((1, 3, 4)), positions=np.array([0.0, 1.5, 2.0]))
        with pytest.raises(ValueError, match="non-negative"):
            layer(np.ones((1, 3, 4)), positions=np.array([0, -1, 2]))
