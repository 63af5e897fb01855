import keras
import numpy as np
import pytest

from keras_msets import testing
from keras_msets.layers.complex_multi_head_attention import (
    ComplexMultiHeadAttention,
)


@keras.saving.register_keras_serializable(package="keras_msets_tests")
class SelfAttention(ComplexMultiHeadAttention):
    """`layer(x, x)` with one input and `mask=`, for `run_layer_test`."""

    def build(self, input_shape):
        super().build(input_shape, input_shape)

    def call(self, inputs, mask=None, training=None):
        return super().call(
            inputs, inputs, query_mask=mask, value_mask=mask, training=training
        )


def _complex_inputs(shape, units, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=shape + (units,)) + 1j * rng.normal(
        size=shape + (units,)
    )
    return np.concatenate([z.real, z.imag], -1).astype("float32")


def _mask(shape, seed=0):
    mask = np.random.default_rng(seed).random(shape) < 0.7
    mask[:, 0] = True
    return mask


def _numpy(x):
    return keras.ops.convert_to_numpy(x)


def _to_complex(x):
    x = np.asarray(x, "float64")
    n = x.shape[-1] // 2
    return x[..., :n] + 1j * x[..., n:]


def _dense_params(dense):
    """`(W, b)` of a ComplexDense as complex128 (`z -> z @ W + b`)."""
    a = _numpy(dense.real_kernel).astype("float64")
    b = a if dense.shared_weights else _numpy(dense.imag_kernel)
    bias = 0.0
    if dense.use_bias:
        c = _numpy(dense.real_bias).astype("float64")
        d = c if dense.shared_weights else _numpy(dense.imag_bias)
        bias = c + 1j * d.astype("float64")
    return a + 1j * b.astype("float64"), bias


def _project(dense, x, heads):
    w, b = _dense_params(dense)
    out = _to_complex(x) @ w + b
    return out.reshape(out.shape[:-1] + (heads, -1))


def _reference(layer, query, value, key=None, mask=None):
    """numpy complex128 of Eq. 13-14; returns (output, weights).

    `z_ts = q_t . conj(k_s)`, `e_ts = |z_ts| / sqrt(key_dim)`, softmax over
    the keys `s` allowed by `mask [batch, T, S]`; a query with no allowed
    key has weights 0 and output 0.
    """
    key = value if key is None else key
    heads = layer.num_heads
    q = _project(layer.query_dense, query, heads)
    k = _project(layer.key_dense, key, heads)
    v = _project(layer.value_dense, value, heads)
    z = np.einsum("bthd,bshd->bhts", q, np.conj(k))
    logits = np.abs(z) / np.sqrt(layer.key_dim)
    if mask is None:
        mask = np.ones(logits.shape[:1] + logits.shape[2:], bool)
    valid = mask.any(-1)  # [batch, T]
    logits = np.where(mask[:, None], logits, -np.inf)
    logits = np.where(valid[:, None, :, None], logits, 0.0)
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    weights = np.where(valid[:, None, :, None], weights, 0.0)
    attended = np.einsum("bhts,bshd->bthd", weights, v)
    attended = attended.reshape(attended.shape[:2] + (-1,))
    w, b = _dense_params(layer.output_dense)
    out = np.where(valid[..., None], attended @ w + b, 0.0)
    return np.concatenate([out.real, out.imag], -1), weights


def _randomize(layer, seed=0):
    """Non-trivial weights, biases included."""
    rng = np.random.default_rng(seed)
    for w in layer.weights:
        w.assign(rng.normal(scale=0.5, size=w.shape).astype("float32"))


def _built(layer, query, value, key=None, seed=0):
    layer(query, value, key=key)
    _randomize(layer, seed)
    return layer


class ComplexMultiHeadAttentionTest(testing.TestCase):
    def test_layer_basics(self):
        x = _complex_inputs((3, 5), 4)
        mask = _mask((3, 5))
        for kwargs, count in (
            ({"dropout": 0.1}, 16),
            (
                {
                    "shared_weights": True,
                    "use_bias": False,
                    "value_dim": 2,
                    "output_dim": 3,
                },
                5,
            ),
        ):
            self.run_layer_test(
                SelfAttention,
                {"num_heads": 2, "key_dim": 3, **kwargs},
                x,
                input_mask=mask,
                expected_output_shape=(
                    3,
                    5,
                    2 * kwargs.get("output_dim", 4),
                ),
                expected_num_trainable_weights=count,
                expected_num_non_trainable_weights=0,
                expected_num_seed_generators=1 if "dropout" in kwargs else 0,
                supports_masking=True,
                expected_output_mask=mask,
                registered_package="keras_msets_tests",
            )

    def test_serialization_of_the_layer_itself(self):
        layer = ComplexMultiHeadAttention(
            3,
            2,
            value_dim=5,
            output_dim=4,
            dropout=0.2,
            use_bias=False,
            shared_weights=True,
            name="attention",
        )
        config = layer.get_config()
        self.assertEqual(
            ComplexMultiHeadAttention.from_config(config).get_config(), config
        )
        revived = keras.saving.deserialize_keras_object(
            keras.saving.serialize_keras_object(layer)
        )
        self.assertIsInstance(revived, ComplexMultiHeadAttention)
        self.assertEqual(revived.get_config(), config)
        self.assertEqual(
            keras.saving.get_registered_name(ComplexMultiHeadAttention),
            "keras_msets>ComplexMultiHeadAttention",
        )

    def test_parameter_counts(self):
        shapes = ((None, 6, 14), (None, 4, 16), (None, 4, 18))
        # Q: 7 -> 2 * 3, K: 9 -> 2 * 3, V: 8 -> 2 * 4, O: 2 * 4 -> 5.
        kernels = 7 * 6 + 9 * 6 + 8 * 8 + 8 * 5
        biases = 6 + 6 + 8 + 5
        output = 8 * 5 + 5
        for kwargs, expected in (
            ({}, 2 * kernels + 2 * biases),
            ({"use_bias": False}, 2 * kernels),
            # Q, K, V share Re(W) = Im(W); the output projection does not.
            ({"shared_weights": True}, kernels + biases - output + 2 * output),
        ):
            layer = ComplexMultiHeadAttention(
                2, 3, value_dim=4, output_dim=5, **kwargs
            )
            layer.build(*shapes)
            self.assertEqual(layer.count_params(), expected)

    def test_matches_numpy_complex128_one_head(self):
        x = _complex_inputs((2, 5), 3, seed=1)
        layer = _built(ComplexMultiHeadAttention(1, 4), x, x, seed=1)
        expected, weights = _reference(layer, x, x)
        out, scores = layer(x, x, return_attention_scores=True)
        self.assertAllClose(out, expected, atol=1e-5, rtol=1e-5)
        self.assertAllClose(scores, weights, atol=1e-5, rtol=1e-5)

    def test_matches_numpy_complex128_multi_head_cross_attention(self):
        query = _complex_inputs((3, 4), 3, seed=2)
        value = _complex_inputs((3, 6), 5, seed=3)
        key = _complex_inputs((3, 6), 2, seed=4)
        for kwargs in ({}, {"shared_weights": True}, {"use_bias": False}):
            layer = ComplexMultiHeadAttention(
                3, 2, value_dim=4, output_dim=2, **kwargs
            )
            _built(layer, query, value, key, seed=5)
            expected, weights = _reference(layer, query, value, key)
            out, scores = layer(query, value, key, return_attention_scores=True)
            self.assertEqual(tuple(scores.shape), (3, 3, 4, 6))
            self.assertAllClose(out, expected, atol=1e-5, rtol=1e-5)
            self.assertAllClose(scores, weights, atol=1e-5, rtol=1e-5)

    def test_matches_numpy_with_masks(self):
        query = _complex_inputs((3, 4), 3, seed=6)
        value = _complex_inputs((3, 5), 3, seed=7)
        query_mask = _mask((3, 4), seed=8)
        value_mask = _mask((3, 5), seed=9)
        value_mask[2] = False  # a fully masked key set
        attention_mask = np.random.default_rng(10).random((3, 4, 5)) < 0.8
        layer = _built(ComplexMultiHeadAttention(2, 3), query, value, seed=11)
        mask = query_mask[:, :, None] & value_mask[:, None, :] & attention_mask
        expected, weights = _reference(layer, query, value, mask=mask)
        out, scores = layer(
            query,
            value,
            query_mask=query_mask,
            value_mask=value_mask,
            attention_mask=attention_mask,
            return_attention_scores=True,
        )
        self.assertAllClose(out, expected, atol=1e-5, rtol=1e-5)
        self.assertAllClose(scores, weights, atol=1e-5, rtol=1e-5)
        scores = _numpy(scores)
        # Masked keys get exactly zero weight; rows with a key sum to 1.
        allowed = np.broadcast_to(mask[:, None], scores.shape)
        self.assertTrue(np.all(scores[~allowed] == 0))
        valid = mask.any(-1)
        sums_shape = scores.shape[:-1]
        sums = scores.sum(-1)[np.broadcast_to(valid[:, None], sums_shape)]
        self.assertAllClose(sums, np.ones_like(sums), atol=1e-6)
        out = _numpy(out)
        self.assertTrue(np.all(out[~valid] == 0))
        self.assertTrue(np.all(out[2] == 0))

    def test_key_mask_and_keras_masks(self):
        query = _complex_inputs((2, 4), 3, seed=12)
        value = _complex_inputs((2, 5), 3, seed=13)
        query_mask = np.array([[1, 1, 1, 0], [1, 1, 0, 0]], bool)
        value_mask = np.array([[1, 1, 0, 0, 0], [1, 1, 1, 1, 0]], bool)
        layer = _built(ComplexMultiHeadAttention(2, 2), query, value, seed=14)
        explicit = layer(
            query, value, query_mask=query_mask, value_mask=value_mask
        )
        via_key_mask = layer(
            query, value, value, query_mask=query_mask, key_mask=value_mask
        )
        self.assertAllClose(via_key_mask, explicit, atol=1e-6)
        # Keras masks: all-zero rows masked by `keras.layers.Masking`.
        masking = keras.layers.Masking(0.0)
        masked_query = masking(np.where(query_mask[..., None], query, 0.0))
        masked_value = masking(np.where(value_mask[..., None], value, 0.0))
        self.assertAllClose(layer(masked_query, masked_value), explicit, 1e-6)
        q_in = keras.Input((4, 6))
        v_in = keras.Input((5, 6))
        out = layer(masking(q_in), masking(v_in))
        model = keras.Model([q_in, v_in], out)
        zeroed = [
            np.where(query_mask[..., None], query, 0.0),
            np.where(value_mask[..., None], value, 0.0),
        ]
        self.assertAllClose(model(zeroed), explicit, atol=1e-6)

    def test_set_properties(self):
        x = _complex_inputs((3, 6), 3, seed=15)
        mask = _mask((3, 6), seed=16)
        layer = _built(ComplexMultiHeadAttention(2, 3), x, x, seed=17)

        def fn(inputs, masks):
            return layer(inputs, inputs, value_mask=masks)

        self.assert_permutation_equivariant(fn, x, mask, num_draws=2)
        self.assert_padding_invariant(fn, x, mask, equivariant=True)

    def test_padded_keys_never_change_cross_attention(self):
        query = _complex_inputs((3, 4), 3, seed=18)
        value = _complex_inputs((3, 5), 3, seed=19)
        value_mask = _mask((3, 5), seed=20)
        layer = _built(ComplexMultiHeadAttention(2, 3), query, value, seed=21)
        reference = _numpy(layer(query, value, value_mask=value_mask))
        garbage = np.random.default_rng(22).uniform(-1e3, 1e3, value.shape)
        padded = np.where(value_mask[..., None], value, garbage)
        padded = np.concatenate([padded, garbage[:, :2]], 1).astype("float32")
        padded_mask = np.concatenate([value_mask, np.zeros((3, 2), bool)], 1)
        out = layer(query, padded, value_mask=padded_mask)
        self.assertAllClose(out, reference, atol=1e-5, rtol=1e-5)
        # Garbage at padded queries gives anything finite there.
        query_mask = _mask((3, 4), seed=23)
        query_garbage = np.where(query_mask[..., None], query, 1e4)
        out = _numpy(layer(query_garbage, value, query_mask=query_mask))
        self.assertTrue(np.isfinite(out).all())

    def test_all_masked_is_finite_with_finite_gradients(self):
        query = _complex_inputs((2, 3), 2, seed=24)
        value = _complex_inputs((2, 4), 2, seed=25)
        value_mask = np.array([[0, 0, 0, 0], [1, 1, 0, 0]], bool)
        value[~value_mask] = 1e3
        layer = ComplexMultiHeadAttention(2, 2, dropout=0.1)
        out, scores = layer(
            query, value, value_mask=value_mask, return_attention_scores=True
        )
        self.assertAllEqual(_numpy(out)[0], np.zeros((3, 4), "float32"))
        self.assertAllEqual(_numpy(scores)[0], np.zeros((2, 3, 4), "float32"))
        q_in = keras.Input((3, 4))
        v_in = keras.Input((4, 4))
        m_in = keras.Input((4,), dtype="bool")
        model = keras.Model(
            [q_in, v_in, m_in], layer(q_in, v_in, value_mask=m_in)
        )
        model.compile(optimizer="sgd", loss="mse")
        # The zero query of the first row has |z| = 0 for every key.
        query[0] = 0.0
        history = model.fit(
            [query, value, value_mask],
            np.ones((2, 3, 4), "float32"),
            epochs=1,
            verbose=0,
        )
        self.assertTrue(np.isfinite(history.history["loss"][-1]))
        for weight in layer.weights:
            self.assertTrue(np.isfinite(_numpy(weight)).all(), weight.path)

    def test_symbolic_shapes(self):
        q_in = keras.Input((None, 6))
        v_in = keras.Input((None, 10))
        layer = ComplexMultiHeadAttention(2, 3, value_dim=4)
        out, scores = layer(q_in, v_in, return_attention_scores=True)
        self.assertEqual(tuple(out.shape), (None, None, 6))
        self.assertEqual(tuple(scores.shape), (None, 2, None, None))

    def test_bad_arguments(self):
        with pytest.raises(ValueError, match=r"`num_heads`.*num_heads=0"):
            ComplexMultiHeadAttention(0, 2)
        with pytest.raises(ValueError, match=r"`key_dim`.*key_dim='4'"):
            ComplexMultiHeadAttention(2, "4")
        with pytest.raises(ValueError, match=r"`value_dim`.*value_dim=-1"):
            ComplexMultiHeadAttention(2, 2, value_dim=-1)
        with pytest.raises(ValueError, match=r"`dropout`.*dropout=1.5"):
            ComplexMultiHeadAttention(2, 2, dropout=1.5)
        with pytest.raises(ValueError, match=r"`use_bias`.*use_bias='yes'"):
            ComplexMultiHeadAttention(2, 2, use_bias="yes")
        x = np.zeros((2, 3, 5), "float32")
        with pytest.raises(ValueError, match=r"`query`.*even.*\(2, 3, 5\)"):
            ComplexMultiHeadAttention(2, 2)(x, np.zeros((2, 3, 4), "float32"))

    def test_saving(self):
        query = _complex_inputs((3, 4), 3, seed=26)
        value = _complex_inputs((3, 5), 2, seed=27)
        mask = _mask((3, 5), seed=28)
        q_in = keras.Input((4, 6))
        v_in = keras.Input((5, 4))
        m_in = keras.Input((5,), dtype="bool")
        out = ComplexMultiHeadAttention(2, 3, value_dim=2, dropout=0.1)(
            q_in, v_in, value_mask=m_in
        )
        model = keras.Model([q_in, v_in, m_in], out)
        self.run_model_saving_test(model, [query, value, mask])
        self.run_weights_roundtrip_test(model, [query, value, mask])

    def test_golden(self):
        self.assert_golden("complex_multi_head_attention")
