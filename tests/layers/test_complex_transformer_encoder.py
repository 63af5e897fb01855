import keras
import numpy as np
import pytest

from keras_msets import testing
from keras_msets.layers.complex_transformer_encoder import (
    ComplexTransformerEncoder,
)
from tests.layers.test_complex_multi_head_attention import _complex_inputs
from tests.layers.test_complex_multi_head_attention import _dense_params
from tests.layers.test_complex_multi_head_attention import _mask
from tests.layers.test_complex_multi_head_attention import _numpy
from tests.layers.test_complex_multi_head_attention import _randomize
from tests.layers.test_complex_multi_head_attention import (
    _reference as _attention_reference,
)
from tests.layers.test_complex_multi_head_attention import _to_complex


def _layer_norm(x, norm):
    gamma, beta = (_numpy(w).astype("float64") for w in norm.weights)
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + norm.epsilon) * gamma + beta


def _complex_norm(x, norm_real, norm_imag):
    """Layer norm of the real parts and of the imaginary parts, apart."""
    n = x.shape[-1] // 2
    return np.concatenate(
        [
            _layer_norm(x[..., :n], norm_real),
            _layer_norm(x[..., n:], norm_imag),
        ],
        -1,
    )


def _complex_dense(dense, x, activation=None):
    w, b = _dense_params(dense)
    z = _to_complex(x) @ w + b
    real, imag = z.real, z.imag
    if activation is not None:
        real, imag = activation(real), activation(imag)
    return np.concatenate([real, imag], -1)


def _reference(encoder, x, mask=None, attention_mask=None):
    """numpy float64 / complex128 encoder block (post-LN or pre-LN)."""
    x = np.asarray(x, "float64")
    batch, length = x.shape[:2]
    if mask is None:
        mask = np.ones((batch, length), bool)
    x = np.where(mask[..., None], x, 0.0)
    full = np.broadcast_to(mask[:, None, :], (batch, length, length))
    if attention_mask is not None:
        full = full & attention_mask

    def attention(h):
        out, _ = _attention_reference(
            encoder.self_attention_layer, h, h, mask=full
        )
        return out

    def feedforward(h):
        hidden = _complex_dense(
            encoder.feedforward_intermediate_dense,
            h,
            lambda v: np.maximum(v, 0.0),
        )
        return _complex_dense(encoder.feedforward_output_dense, hidden)

    def norm1(h):
        return _complex_norm(
            h,
            encoder.self_attention_layer_norm_real,
            encoder.self_attention_layer_norm_imag,
        )

    def norm2(h):
        return _complex_norm(
            h,
            encoder.feedforward_layer_norm_real,
            encoder.feedforward_layer_norm_imag,
        )

    if encoder.normalize_first:
        h = x + attention(norm1(x))
        return h + feedforward(norm2(h))
    h = norm1(x + attention(x))
    return norm2(h + feedforward(h))


class ComplexTransformerEncoderTest(testing.TestCase):
    def test_layer_basics(self):
        x = _complex_inputs((3, 5), 4)
        mask = _mask((3, 5))
        # Shared Q/K/V weights: 3 * 2 + 4 (output) + 8 (norms) + 8 (FF).
        self.run_layer_test(
            ComplexTransformerEncoder,
            {
                "intermediate_dim": 6,
                "num_heads": 2,
                "dropout": 0.1,
                "normalize_first": True,
                "shared_weights": True,
            },
            x,
            input_mask=mask,
            expected_output_shape=(3, 5, 8),
            expected_num_trainable_weights=26,
            expected_num_non_trainable_weights=0,
            expected_num_seed_generators=3,
            supports_masking=True,
            expected_output_mask=mask,
        )
        encoder = ComplexTransformerEncoder(6, 2)
        encoder.build(x.shape)
        self.assertEqual(len(encoder.trainable_weights), 32)

    def test_parameter_count(self):
        d, ff, heads, key_dim = 4, 6, 2, 3
        encoder = ComplexTransformerEncoder(ff, heads, key_dim=key_dim)
        encoder.build((None, 5, 2 * d))
        hk = heads * key_dim
        attention = 3 * (2 * d * hk + 2 * hk) + 2 * hk * d + 2 * d
        feedforward = (2 * d * ff + 2 * ff) + (2 * ff * d + 2 * d)
        norms = 4 * 2 * d
        self.assertEqual(
            encoder.count_params(), attention + feedforward + norms
        )

    def test_matches_numpy_reference(self):
        x = _complex_inputs((3, 5), 4, seed=1)
        mask = _mask((3, 5), seed=2)
        mask[2] = False  # an all-masked sequence
        attention_mask = np.random.default_rng(3).random((3, 5, 5)) < 0.8
        for normalize_first in (False, True):
            encoder = ComplexTransformerEncoder(
                6, 2, normalize_first=normalize_first
            )
            encoder(x)
            _randomize(encoder, seed=4)
            with self.subTest(normalize_first=normalize_first):
                expected = _reference(encoder, x)
                self.assertAllClose(encoder(x), expected, atol=1e-5, rtol=1e-5)
                expected = _reference(encoder, x, mask, attention_mask)
                out = _numpy(
                    encoder(x, padding_mask=mask, attention_mask=attention_mask)
                )
                self.assertTrue(np.isfinite(out).all())
                self.assertAllClose(out, expected, atol=1e-5, rtol=1e-5)

    def test_attention_scores(self):
        x = _complex_inputs((2, 4), 4, seed=5)
        mask = np.array([[1, 1, 1, 0], [1, 1, 0, 0]], bool)
        encoder = ComplexTransformerEncoder(6, 2)
        out, scores = encoder(
            x, padding_mask=mask, return_attention_scores=True
        )
        self.assertAllClose(out, encoder(x, padding_mask=mask), atol=1e-6)
        scores = _numpy(scores)
        self.assertEqual(scores.shape, (2, 2, 4, 4))
        allowed = np.broadcast_to(mask[:, None, None], scores.shape)
        self.assertTrue(np.all(scores[~allowed] == 0))
        inputs = keras.Input((None, 8))
        out, scores = encoder(inputs, return_attention_scores=True)
        self.assertEqual(tuple(scores.shape), (None, 2, None, None))

    def test_keras_mask_and_padding_mask(self):
        ids = np.array([[3, 1, 2, 0, 0], [2, 2, 2, 1, 0]], "int32")
        embedding = keras.layers.Embedding(4, 8, mask_zero=True)
        encoder = ComplexTransformerEncoder(6, 2)
        hidden = embedding(ids)
        explicit = encoder(hidden, padding_mask=ids != 0)
        via_keras_mask = encoder(embedding(ids))
        self.assertAllClose(via_keras_mask, explicit, atol=1e-6)
        self.assertAllEqual(encoder.compute_mask(hidden, ids != 0), ids != 0)
        inputs = keras.Input((None,), dtype="int32")
        model = keras.Model(inputs, encoder(embedding(inputs)))
        self.assertAllClose(model(ids), explicit, atol=1e-6)

    def test_set_properties(self):
        x = _complex_inputs((3, 6), 4, seed=6)
        mask = _mask((3, 6), seed=7)
        encoder = ComplexTransformerEncoder(6, 2)
        encoder(x)
        _randomize(encoder, seed=8)

        def fn(inputs, masks):
            return encoder(inputs, padding_mask=masks)

        self.assert_permutation_equivariant(fn, x, mask, num_draws=2)
        self.assert_padding_invariant(fn, x, mask, equivariant=True)

    def test_bad_arguments(self):
        with pytest.raises(ValueError, match=r"`intermediate_dim`.*=0"):
            ComplexTransformerEncoder(0, 2)
        with pytest.raises(ValueError, match=r"`num_heads`.*num_heads=2.5"):
            ComplexTransformerEncoder(4, 2.5)
        with pytest.raises(ValueError, match=r"`normalize_first`.*=1"):
            ComplexTransformerEncoder(4, 2, normalize_first=1)
        with pytest.raises(ValueError, match=r"divisible.*d=3, num_heads=2"):
            ComplexTransformerEncoder(4, 2)(np.zeros((1, 2, 6), "float32"))
        with pytest.raises(ValueError, match=r"`inputs`.*\(1, 2, 7\)"):
            ComplexTransformerEncoder(4, 1)(np.zeros((1, 2, 7), "float32"))

    def test_saving(self):
        x = _complex_inputs((3, 5), 4, seed=9)
        mask = _mask((3, 5), seed=10)
        inputs = keras.Input((5, 8))
        padding = keras.Input((5,), dtype="bool")
        hidden = ComplexTransformerEncoder(6, 2, dropout=0.1)(
            inputs, padding_mask=padding
        )
        outputs = ComplexTransformerEncoder(4, 1, normalize_first=True)(
            hidden, padding_mask=padding
        )
        model = keras.Model([inputs, padding], outputs)
        self.run_model_saving_test(model, [x, mask])
        self.run_weights_roundtrip_test(model, [x, mask])

    def test_golden(self):
        self.assert_golden("complex_transformer_encoder")
