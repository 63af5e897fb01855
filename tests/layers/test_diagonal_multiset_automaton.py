import keras
import numpy as np
import pytest

from keras_msets import layers
from keras_msets import testing


def _ids(batch=4, length=9, alphabet=7, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, alphabet, size=(batch, length))
    lengths = rng.integers(1, length + 1, size=batch)
    ids[np.arange(length)[None, :] >= lengths[:, None]] = 0
    return ids.astype("int32")


def _reference(layer, ids, mask=None):
    """numpy complex128 forward weights prod_k mu(a_k), from the weights."""
    r, x, y = (
        keras.ops.convert_to_numpy(e.embeddings).astype("float64")
        for e in (
            layer.log_modulus_embedding,
            layer.real_embedding,
            layer.imag_embedding,
        )
    )
    mu = np.exp(r) * (x + 1j * y) / np.abs(x + 1j * y)
    valid = ids > 0 if mask is None else (ids > 0) & mask
    factors = np.where(valid[..., None], mu[ids], 1.0 + 0j)
    return np.prod(factors, axis=1)


class DiagonalMultisetAutomatonTest(testing.TestCase):
    def test_layer_basics(self):
        self.run_layer_test(
            layers.DiagonalMultisetAutomaton,
            {"alphabet_size": 7, "num_states": 5, "use_initial_weights": True},
            _ids(),
            expected_output_shape=(4, 15),
            expected_num_trainable_weights=5,
            expected_num_non_trainable_weights=0,
            supports_masking=True,
            expected_output_mask=None,
        )

    def test_forward_weights_match_numpy(self):
        ids = _ids()
        layer = layers.DiagonalMultisetAutomaton(7, 5, output_format="complex")
        out = layer(ids)
        forward = _reference(layer, ids)
        expected = np.concatenate([forward.real, forward.imag], -1)
        self.assertAllClose(out, expected, atol=1e-5, rtol=1e-5)
        # The log-polar output describes the same numbers.
        log_polar = keras.ops.convert_to_numpy(
            layers.DiagonalMultisetAutomaton.from_config(
                {**layer.get_config(), "output_format": "log_polar"}
            )(ids)
        )
        assert log_polar.shape == (4, 15)

    def test_unit_modulus(self):
        ids = _ids()
        self.run_layer_test(
            layers.DiagonalMultisetAutomaton,
            {"alphabet_size": 7, "num_states": 5, "unit_modulus": True},
            ids,
            expected_output_shape=(4, 10),
            expected_num_trainable_weights=2,
        )
        layer = layers.DiagonalMultisetAutomaton(
            7, 5, unit_modulus=True, output_format="complex"
        )
        out = keras.ops.convert_to_numpy(layer(ids))
        x, y = (
            keras.ops.convert_to_numpy(e.embeddings).astype("float64")
            for e in (layer.real_embedding, layer.imag_embedding)
        )
        mu = (x + 1j * y) / np.abs(x + 1j * y)
        forward = np.prod(np.where((ids > 0)[..., None], mu[ids], 1.0), 1)
        self.assertAllClose(
            out, np.concatenate([forward.real, forward.imag], -1), atol=1e-5
        )
        np.testing.assert_allclose(np.abs(forward), 1.0, atol=1e-6)

    def test_explicit_mask_combines_with_padding(self):
        ids = _ids()
        mask = np.random.default_rng(1).random(ids.shape) < 0.6
        layer = layers.DiagonalMultisetAutomaton(7, 3, output_format="complex")
        out = layer(ids, mask=mask)
        forward = _reference(layer, ids, mask)
        self.assertAllClose(
            out, np.concatenate([forward.real, forward.imag], -1), atol=1e-5
        )

    def test_order_of_tokens_cannot_change_the_output(self):
        layer = layers.DiagonalMultisetAutomaton(10, 6)
        for seed in range(3):
            ids = _ids(batch=5, length=12, alphabet=10, seed=seed)
            self.assert_permutation_invariant(
                lambda x: layer(x), ids, num_draws=4, atol=1e-5, seed=seed
            )

    def test_padding_anywhere_changes_nothing(self):
        layer = layers.DiagonalMultisetAutomaton(10, 6)
        ids = _ids(alphabet=10)
        base = layer(ids)
        padded = np.concatenate([np.zeros((4, 5), "int32"), ids, ids * 0], 1)
        self.assertAllClose(layer(padded), base, atol=1e-5)
        # Real tokens hidden by an explicit mask act as padding too.
        noise = np.random.default_rng(0).integers(1, 10, size=(4, 3))
        extended = np.concatenate([ids, noise.astype("int32")], 1)
        mask = np.concatenate([ids > 0, np.zeros((4, 3), bool)], 1)
        self.assertAllClose(layer(extended, mask=mask), base, atol=1e-5)

    def test_empty_set_and_long_sets_are_finite(self):
        layer = layers.DiagonalMultisetAutomaton(10, 4)
        out = keras.ops.convert_to_numpy(layer(np.zeros((2, 6), "int32")))
        self.assertAllClose(out, np.tile([1.0] * 4 + [0.0] * 8, (2, 1)))
        long_ids = np.random.default_rng(0).integers(1, 10, size=(2, 20_000))
        out = keras.ops.convert_to_numpy(layer(long_ids.astype("int32")))
        assert np.all(np.isfinite(out))

    def test_mixed_precision_over_1e5_tokens(self):
        # float16 embeddings and sums gave cos/sin errors of 1-2 (NaN on
        # PyTorch) at 1e5 tokens; everything is float32 inside now.
        ids = np.random.default_rng(2).integers(1, 10, size=(1, 100_000))
        ids = ids.astype("int32")
        reference = layers.DiagonalMultisetAutomaton(10, 3)
        reference.build(ids.shape)
        layer = layers.DiagonalMultisetAutomaton(10, 3, dtype="mixed_float16")
        layer.build(ids.shape)
        layer.set_weights(reference.get_weights())
        out = layer(ids)
        self.assertEqual(keras.backend.standardize_dtype(out.dtype), "float16")
        out = keras.ops.convert_to_numpy(out).astype("float64")
        r, x, y = (w.astype("float64") for w in reference.get_weights())
        angle = np.arctan2(y, x)[ids[0]].sum(0)
        got = np.arctan2(out[0, 3:6], out[0, :3])
        error = np.abs(np.angle(np.exp(1j * (got - angle))))
        assert error.max() < 2e-3, error  # float16 cos and sin outputs
        self.assertAllClose(out[0, 6:], r[ids[0]].sum(0), rtol=1e-3)

    def test_bad_arguments(self):
        with pytest.raises(ValueError, match="alphabet_size.*Received"):
            layers.DiagonalMultisetAutomaton(0, 4)
        with pytest.raises(ValueError, match="num_states.*Received"):
            layers.DiagonalMultisetAutomaton(5, 2.5)
        with pytest.raises(ValueError, match="output_format"):
            layers.DiagonalMultisetAutomaton(5, 2, output_format="polar")
        with pytest.raises(ValueError, match=r"\[batch, length\]"):
            layers.DiagonalMultisetAutomaton(5, 2)(np.zeros((2, 3, 1), "int32"))

    def test_bad_token_ids_and_masks(self):
        layer = layers.DiagonalMultisetAutomaton(10, 4)
        # An id equal to the alphabet size would give NaN (JAX) or an index
        # error; -1 would silently read the last symbol.
        for bad in (10, -1):
            ids = np.array([[3, bad]], "int32")
            with pytest.raises(
                ValueError, match=rf"alphabet_size=10.*from {min(3, bad)}"
            ):
                layer(ids)
        # Float ids would be truncated (3.9 -> 3).
        with pytest.raises(TypeError, match="inputs.*dtype=float32"):
            layer(np.array([[3.9, 1.0]], "float32"))
        with pytest.raises(ValueError, match=r"mask.*Received: mask.shape"):
            layer(np.array([[1, 2, 3]], "int32"), mask=np.ones((1, 4), bool))
        # Ids at both ends of the range are fine.
        out = layer(np.array([[0, 9]], "int32"), mask=np.ones((1, 2), bool))
        self.assertEqual(tuple(out.shape), (1, 12))

    def test_saving(self):
        ids = _ids()
        tokens = keras.Input((None,), dtype="int32")
        features = layers.DiagonalMultisetAutomaton(7, 5)(tokens)
        model = keras.Model(tokens, keras.layers.Dense(1)(features))
        self.run_model_saving_test(model, ids)
        self.run_weights_roundtrip_test(model, ids)

    def test_golden(self):
        self.assert_golden("diagonal_multiset_automaton")
