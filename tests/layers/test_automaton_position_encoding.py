import keras
import keras_hub
import numpy as np
import pytest

from keras_msets import layers
from keras_msets import testing
from keras_msets.layers.automaton_position_encoding import MODES

BACKEND = keras.backend.backend()
# Trainable and non-trainable weight counts of each mode.
WEIGHT_COUNTS = {
    "diagonal_polar_fixed": (0, 0),
    "diagonal_polar_learned": (2, 2),  # phi, theta; s = r = 1 fixed
    "full_matrix_random": (0, 2),
    "full_matrix_learned": (2, 0),
    "per_position_random": (0, 1),
    "per_position_learned": (1, 0),
}


def _kwargs(mode, max_length=32):
    if mode.startswith("per_position"):
        return {"mode": mode, "max_length": max_length}
    return {"mode": mode}


def _embeddings(batch=2, length=6, hidden_dim=8, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(batch, length, hidden_dim)).astype("float32")


def _numpy(x):
    return np.asarray(keras.ops.convert_to_numpy(x), dtype="float64")


def _sine_encoding(inputs, start_index=0):
    layer = keras_hub.layers.SinePositionEncoding()
    return layer(inputs, start_index=start_index)


def _diagonal_reference(layer, positions):
    """Real and imaginary parts of lambda_j mu_j^p, in complex128."""
    scale, phase, log_modulus, angle = (
        _numpy(w)
        for w in (layer.scale, layer.phase, layer.log_modulus, layer.angle)
    )
    initial = scale * np.exp(1j * phase)
    transition = np.exp(log_modulus + 1j * angle)
    forward = initial * transition ** np.asarray(positions)[:, None]
    return np.stack([forward.real, forward.imag], -1).reshape(
        len(positions), -1
    )


def _matrix_reference(layer, positions):
    """lambda @ mu^p in float64, with numpy's own matrix powers."""
    initial = _numpy(layer.initial_weights)
    transition = _numpy(layer.transition_matrix)
    return np.stack(
        [initial @ np.linalg.matrix_power(transition, p) for p in positions]
    )


def _matrix_reference_long(layer, length):
    """lambda @ mu^p for p < length, by repeated multiplication."""
    transition = _numpy(layer.transition_matrix)
    rows = [_numpy(layer.initial_weights)]
    for _ in range(length - 1):
        rows.append(rows[-1] @ transition)
    return np.stack(rows)


def _randomize_diagonal(layer, seed=0):
    """Weights away from the sinusoids; `log r <= 0` keeps long ones finite."""
    rng = np.random.default_rng(seed)
    pairs = layer.scale.shape[0]
    layer.scale.assign(rng.uniform(0.5, 1.5, pairs).astype("float32"))
    layer.phase.assign(rng.uniform(-np.pi, np.pi, pairs).astype("float32"))
    layer.log_modulus.assign(rng.uniform(-0.05, 0, pairs).astype("float32"))
    layer.angle.assign(rng.uniform(-1.0, 1.0, pairs).astype("float32"))


def _transformer_classifier(mode):
    tokens = keras.Input((None,), dtype="int32", name="tokens")
    embedded = keras.layers.Embedding(20, 8, name="embedding")(tokens)
    encoding = layers.AutomatonPositionEncoding(
        **_kwargs(mode), name="position_encoding"
    )(embedded)
    hidden = keras_hub.layers.TransformerEncoder(
        intermediate_dim=16, num_heads=2, name="encoder"
    )(embedded + encoding)
    pooled = keras.layers.GlobalAveragePooling1D(name="pool")(hidden)
    logits = keras.layers.Dense(2, name="head")(pooled)
    return keras.Model(tokens, logits)


class AutomatonPositionEncodingTest(testing.TestCase):
    def test_layer_basics(self):
        for mode in MODES:
            trainable, non_trainable = WEIGHT_COUNTS[mode]
            with self.subTest(mode=mode):
                # Frozen modes have no trainable weight, so the fit step
                # only checks that training runs with a finite loss.
                self.run_layer_test(
                    layers.AutomatonPositionEncoding,
                    _kwargs(mode),
                    _embeddings(),
                    expected_output_shape=(2, 6, 8),
                    expected_num_trainable_weights=trainable,
                    expected_num_non_trainable_weights=non_trainable,
                    supports_masking=True,
                )

    def test_frozen_modes_do_not_train(self):
        for mode in ("full_matrix_random", "per_position_random"):
            layer = layers.AutomatonPositionEncoding(**_kwargs(mode))
            inputs = keras.Input((None, 8))
            model = keras.Model(inputs, layer(inputs))
            model.compile(optimizer=keras.optimizers.Adam(0.1), loss="mse")
            before = [_numpy(w) for w in layer.weights]
            x = _embeddings()
            model.fit(x, x, epochs=1, verbose=0)
            self.assertAllEqual([_numpy(w) for w in layer.weights], before)

    def test_fixed_and_initial_learned_equal_keras_hub_sinusoids(self):
        for mode in ("diagonal_polar_fixed", "diagonal_polar_learned"):
            layer = layers.AutomatonPositionEncoding(mode)
            x = _embeddings(1, 2000, 16)
            self.assertAllClose(layer(x), _sine_encoding(x), atol=1e-5, rtol=0)
            x = _embeddings(2, 9, 16)
            for start in (1, 37, keras.ops.convert_to_tensor(500)):
                self.assertAllClose(
                    layer(x, start_index=start),
                    _sine_encoding(x, start_index=start),
                    atol=1e-5,
                    rtol=0,
                )

    def test_diagonal_matches_complex128_reference(self):
        layer = layers.AutomatonPositionEncoding("diagonal_polar_learned")
        layer.build((None, None, 12))
        _randomize_diagonal(layer)
        x = _embeddings(2, 50, 12)
        out = _numpy(layer(x))
        self.assertAllClose(out[0], out[1])
        self.assertAllClose(
            out[0], _diagonal_reference(layer, range(50)), atol=1e-5
        )
        shifted = layer(x[:, :10], start_index=40)
        self.assertAllClose(
            shifted[0], _diagonal_reference(layer, range(40, 50)), atol=1e-5
        )

    def test_full_matrix_matches_numpy_matrix_power(self):
        layer = layers.AutomatonPositionEncoding("full_matrix_random")
        x = _embeddings(2, 50, 8)
        out = _numpy(layer(x))
        self.assertAllClose(out[1], out[0])
        self.assertAllClose(
            out[0], _matrix_reference(layer, range(50)), atol=1e-5
        )
        self.assertAllClose(
            layer(x[:, :7], start_index=43)[0],
            _matrix_reference(layer, range(43, 50)),
            atol=1e-5,
        )
        # Random initial weights have the sinusoids' norm, sqrt(d / 2), and
        # the orthogonal transition matrix keeps it at every position.
        self.assertAllClose(
            np.linalg.norm(out[0], axis=-1), np.full(50, 2.0), atol=1e-5
        )

    def test_lengths_longer_than_any_seen(self):
        for mode in ("diagonal_polar_learned", "full_matrix_learned"):
            layer = layers.AutomatonPositionEncoding(mode)
            layer(_embeddings(1, 16, 8))
            if mode == "diagonal_polar_learned":
                _randomize_diagonal(layer, seed=1)
            out = _numpy(layer(_embeddings(1, 2000, 8)))[0]
            assert np.all(np.isfinite(out))
            if mode == "diagonal_polar_learned":
                expected = _diagonal_reference(layer, range(2000))
            else:
                expected = _matrix_reference_long(layer, 2000)
            # float32 angles p * theta lose ~1e-4 at p = 2000.
            self.assertAllClose(out, expected, atol=5e-4, rtol=0)
        layer = layers.AutomatonPositionEncoding(
            "per_position_learned", max_length=16
        )
        layer(_embeddings(1, 16, 8))
        with pytest.raises(ValueError, match=r"max_length=16.*length=2000"):
            layer(_embeddings(1, 2000, 8))
        with pytest.raises(ValueError, match=r"max_length.*start_index=10"):
            layer(_embeddings(1, 7, 8), start_index=10)

    def test_length_known_only_at_run_time(self):
        """Inside a functional model the length is symbolic (None)."""
        for mode in ("full_matrix_learned", "diagonal_polar_learned"):
            inputs = keras.Input((None, 8))
            layer = layers.AutomatonPositionEncoding(mode)
            model = keras.Model(inputs, layer(inputs))
            self.assertEqual(tuple(model.output.shape), (None, None, 8))
            for length in (16, 300):
                x = _embeddings(2, length, 8)
                self.assertAllClose(
                    model.predict(x, verbose=0), layer(x), atol=1e-5
                )

    def test_run_time_length_and_start_index_in_a_graph(self):
        """TF graphs with a None length and JAX traces of `start_index`."""
        layer = layers.AutomatonPositionEncoding("full_matrix_learned")
        x = _embeddings(2, 20, 8)
        layer(x)
        expected = _matrix_reference(layer, range(5, 25))
        if BACKEND == "tensorflow":
            import tensorflow as tf

            spec = [
                tf.TensorSpec((None, None, 8)),
                tf.TensorSpec((), tf.int32),
            ]
            call = tf.function(
                lambda x, s: layer(x, start_index=s), input_signature=spec
            )
            self.assertAllClose(call(x, 5)[0], expected, atol=1e-5)
            # Gradients flow through the run-time loop.
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(
                    tf.function(lambda x: layer(x), input_signature=spec[:1])(x)
                )
            grads = tape.gradient(loss, layer.trainable_variables)
            assert all(g is not None for g in grads)
            # Per-position: TensorFlow's slice raises at run time.
            per_position = layers.AutomatonPositionEncoding(
                "per_position_random", max_length=10
            )
            per_position(x[:, :10])
            call = tf.function(per_position, input_signature=spec[:1])
            with pytest.raises(tf.errors.InvalidArgumentError):
                call(x)
        elif BACKEND == "jax":
            import jax

            call = jax.jit(lambda x, s: layer(x, start_index=s))
            self.assertAllClose(call(x, 5)[0], expected, atol=1e-5)
        else:
            start = keras.ops.convert_to_tensor(5)
            self.assertAllClose(
                layer(x, start_index=start)[0], expected, atol=1e-5
            )

    @pytest.mark.slow
    def test_drop_in_for_keras_hub_transformer(self):
        tokens = np.random.default_rng(0).integers(0, 20, (4, 10))
        labels = np.array([0, 1, 1, 0])
        # Two modes (trainable and frozen weights) keep the suite fast;
        # `test_saving_every_mode` saves the others without training.
        for mode in ("diagonal_polar_learned", "full_matrix_random"):
            with self.subTest(mode=mode):
                model = _transformer_classifier(mode)
                model.compile(
                    optimizer="adam",
                    loss=keras.losses.SparseCategoricalCrossentropy(True),
                )
                history = model.fit(tokens, labels, epochs=1, verbose=0)
                assert np.isfinite(history.history["loss"][-1])
                self.run_model_saving_test(model, tokens, atol=1e-5)
                self.run_weights_roundtrip_test(model, tokens, atol=1e-5)

    def test_saving_every_mode(self):
        x = _embeddings(2, 10, 8)
        for mode in MODES:
            with self.subTest(mode=mode):
                inputs = keras.Input((None, 8))
                encoding = layers.AutomatonPositionEncoding(**_kwargs(mode))
                model = keras.Model(inputs, inputs + encoding(inputs))
                self.run_model_saving_test(model, x)
                self.run_weights_roundtrip_test(model, x)

    def test_bad_arguments(self):
        with pytest.raises(ValueError, match="diagonal_polar_fixed.*Received"):
            layers.AutomatonPositionEncoding("sinusoidal")
        for mode in MODES[4:]:
            with pytest.raises(ValueError, match="max_length.*required"):
                layers.AutomatonPositionEncoding(mode)
        with pytest.raises(ValueError, match="max_length.*Received"):
            layers.AutomatonPositionEncoding(MODES[4], max_length=0)
        with pytest.raises(ValueError, match="max_wavelength.*Received"):
            layers.AutomatonPositionEncoding(MODES[0], max_wavelength=0)
        for mode in MODES[:2]:
            with pytest.raises(ValueError, match="even.*hidden_dim=7"):
                layers.AutomatonPositionEncoding(mode).build((1, 3, 7))
        # Odd widths are fine for the real modes.
        for mode in MODES[2:]:
            layer = layers.AutomatonPositionEncoding(**_kwargs(mode))
            layer.build((1, 3, 7))
            self.assertEqual(layer.compute_output_shape((1, 3, 7)), (1, 3, 7))
        with pytest.raises(ValueError, match="hidden_dim.*must be known"):
            layers.AutomatonPositionEncoding(MODES[2]).build((1, 3, None))
        # A rank-2 input has no hidden axis to add the encodings to.
        for mode in MODES[:3]:
            with pytest.raises(ValueError, match=r"inputs.shape=\(2, 6\)"):
                layers.AutomatonPositionEncoding(mode)(np.zeros((2, 6)))
            with pytest.raises(ValueError, match=r"inputs.shape=\(2, 6\)"):
                layers.AutomatonPositionEncoding(mode).build((2, 6))
        # Nor has a rank-4 or rank-5 input one hidden axis [batch, length,
        # hidden_dim]; a built layer refuses another hidden_dim.
        for mode in MODES:
            layer = layers.AutomatonPositionEncoding(**_kwargs(mode))
            layer(np.zeros((2, 3, 4), "float32"))
            for shape in [(2, 3, 4, 1), (2, 3, 4, 1, 1)]:
                with pytest.raises(ValueError, match="inputs.shape="):
                    layer(np.zeros(shape, "float32"))
            if mode != MODES[0]:
                with pytest.raises(ValueError, match="must be 4, as in build"):
                    layer(np.zeros((2, 3, 6), "float32"))
        # The fixed mode (no weights) takes any even hidden_dim once built.
        fixed = layers.AutomatonPositionEncoding(MODES[0])
        fixed(np.zeros((2, 3, 4), "float32"))
        self.assertEqual(fixed(np.zeros((2, 3, 6), "float32")).shape, (2, 3, 6))
        with pytest.raises(ValueError, match="even hidden_dim.*shape="):
            fixed(np.zeros((2, 3, 5), "float32"))

    def test_learned_angles_only_by_default(self):
        """Sec. 4.2's "learned angles": phi and theta train, s = r = 1."""
        x = _embeddings(2, 12, 8)
        for learn_modulus, trained in (
            (False, ("phase", "angle")),
            (True, ("scale", "phase", "log_modulus", "angle")),
        ):
            layer = layers.AutomatonPositionEncoding(
                "diagonal_polar_learned", learn_modulus=learn_modulus
            )
            inputs = keras.Input((None, 8))
            model = keras.Model(inputs, layer(inputs))
            model.compile(optimizer=keras.optimizers.Adam(0.1), loss="mse")
            before = {w.name: _numpy(w) for w in layer.weights}
            model.fit(x, x + 1.0, epochs=2, verbose=0)
            for w in layer.weights:
                changed = not np.array_equal(_numpy(w), before[w.name])
                self.assertEqual(changed, w.name in trained, msg=w.name)
            self.assertEqual(
                sorted(w.name for w in layer.trainable_weights), sorted(trained)
            )
            # Without a learned modulus every position keeps the
            # sinusoids' norm sqrt(d / 2); with one it moves.
            norms = np.linalg.norm(_numpy(layer(x))[0], axis=-1)
            self.assertEqual(
                np.allclose(norms, 2.0, atol=1e-5), not learn_modulus
            )

    def test_config_saved_before_learn_modulus_trains_the_modulus(self):
        layer = layers.AutomatonPositionEncoding("diagonal_polar_learned")
        config = layer.get_config()
        self.assertFalse(config["learn_modulus"])
        del config["learn_modulus"]
        old = layers.AutomatonPositionEncoding.from_config(config)
        self.assertTrue(old.learn_modulus)
        old.build((None, None, 8))
        self.assertEqual(len(old.trainable_weights), 4)
        # Other modes ignore the missing key.
        config = layers.AutomatonPositionEncoding(MODES[2]).get_config()
        del config["learn_modulus"]
        self.assertFalse(
            layers.AutomatonPositionEncoding.from_config(config).learn_modulus
        )
        with pytest.raises(ValueError, match="learn_modulus.*Received"):
            layers.AutomatonPositionEncoding(MODES[0], learn_modulus=True)
        with pytest.raises(ValueError, match="learn_modulus.*Received"):
            layers.AutomatonPositionEncoding(MODES[1], learn_modulus="yes")

    def test_golden(self):
        self.assert_golden("automaton_position_encoding_full_matrix")
        self.assert_golden("automaton_position_encoding_diagonal_polar_learned")
