import keras
import numpy as np
import pytest

from keras_msets import layers
from keras_msets import testing

# The key projection's bias adds the same logit `q . b_k` to every key of a
# query, which the softmax cancels: its gradient is exactly zero, so one fit
# step cannot change it.
KEY_BIAS = "attention/key/bias"


def _sets(batch=4, n=6, dim=8, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, n, dim)).astype("float32")
    mask = rng.random((batch, n)) < 0.7
    mask[:, 0] = True
    return x, mask


def _numpy(x):
    return keras.ops.convert_to_numpy(x)


def _layer_norm(x, norm):
    gamma, beta = (_numpy(w).astype("float64") for w in norm.weights)
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + norm.epsilon) * gamma + beta


def _reference_mab(block, query, value, mask):
    """numpy float64 MAB(query, value) from `block`'s weights.

    `query [b, q, d]`, `value [b, k, d]`, `mask [b, k]`; an all-masked set
    has attention term 0.
    """
    w = {
        v.path.split("/attention/")[-1]: _numpy(v).astype("float64")
        for v in block.attention.weights
    }
    key_dim = w["query/kernel"].shape[-1]
    q = np.einsum("bqd,dhk->bqhk", query, w["query/kernel"]) + w["query/bias"]
    k = np.einsum("bsd,dhk->bshk", value, w["key/kernel"]) + w["key/bias"]
    v = np.einsum("bsd,dhk->bshk", value, w["value/kernel"]) + w["value/bias"]
    logits = np.einsum("bqhk,bshk->bhqs", q, k) / np.sqrt(key_dim)
    logits = np.where(mask[:, None, None, :], logits, -np.inf)
    empty = ~mask.any(1)
    logits[empty] = 0.0
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    heads = np.einsum("bhqs,bshk->bqhk", probs, v)
    attended = (
        np.einsum("bqhk,hkd->bqd", heads, w["attention_output/kernel"])
        + w["attention_output/bias"]
    )
    attended[empty] = 0.0
    hidden = _layer_norm(query + attended, block.attention_norm)
    w1, b1, w2, b2 = (
        _numpy(v).astype("float64")
        for v in block.ff_hidden.weights + block.ff_output.weights
    )
    ff = np.maximum(hidden @ w1 + b1, 0.0) @ w2 + b2
    return _layer_norm(hidden + ff, block.output_norm)


def _randomize(layer, seed=0):
    """Non-trivial weights (LN gains/biases and attention biases included)."""
    rng = np.random.default_rng(seed)
    for w in layer.weights:
        w.assign(rng.normal(scale=0.5, size=w.shape).astype("float32"))


LAYERS = {
    "sab": (layers.SetAttentionBlock, {"num_heads": 2}),
    "isab": (
        layers.InducedSetAttentionBlock,
        {"num_inducing_points": 3, "num_heads": 2},
    ),
    "pma": (layers.PoolingByMultiheadAttention, {"num_heads": 2}),
}


class SetAttentionBlocksTest(testing.TestCase):
    def test_set_attention_block_basics(self):
        x, mask = _sets()
        self.run_layer_test(
            layers.SetAttentionBlock,
            {"num_heads": 2, "key_dim": 3, "ff_dim": 5, "dropout": 0.1},
            x,
            input_mask=mask,
            expected_output_shape=(4, 6, 8),
            expected_num_trainable_weights=16,
            expected_num_non_trainable_weights=0,
            expected_num_seed_generators=1,
            supports_masking=True,
            expected_output_mask=mask,
            allow_unchanged_weights=(f"set_attention_block/block/{KEY_BIAS}",),
        )

    def test_induced_set_attention_block_basics(self):
        x, mask = _sets()
        self.run_layer_test(
            layers.InducedSetAttentionBlock,
            {"num_inducing_points": 3, "num_heads": 4, "ff_dim": 6},
            x,
            input_mask=mask,
            expected_output_shape=(4, 6, 8),
            expected_num_trainable_weights=33,
            expected_num_non_trainable_weights=0,
            supports_masking=True,
            expected_output_mask=mask,
            allow_unchanged_weights=tuple(
                f"induced_set_attention_block/{block}/{KEY_BIAS}"
                for block in ("inducing_block", "output_block")
            ),
        )

    def test_pooling_by_multihead_attention_basics(self):
        x, mask = _sets()
        self.run_layer_test(
            layers.PoolingByMultiheadAttention,
            {"num_seeds": 2, "num_heads": 2},
            x,
            input_mask=mask,
            expected_output_shape=(4, 2, 8),
            expected_num_trainable_weights=17,
            expected_num_non_trainable_weights=0,
            supports_masking=True,
            expected_output_mask=None,
            allow_unchanged_weights=(
                f"pooling_by_multihead_attention/block/{KEY_BIAS}",
            ),
        )

    def test_matches_numpy_float64(self):
        x, mask = _sets(batch=3, n=5, dim=4, seed=1)
        mask[1] = False  # one all-masked set
        x64 = np.where(mask[..., None], x, 0.0).astype("float64")

        sab = layers.SetAttentionBlock(num_heads=2, ff_dim=6)
        sab(x, mask=mask)
        _randomize(sab, 1)
        expected = _reference_mab(sab.block, x64, x64, mask)
        out = _numpy(sab(x, mask=mask))
        self.assertAllClose(out[mask], expected[mask], atol=1e-5, rtol=1e-5)

        pma = layers.PoolingByMultiheadAttention(num_seeds=2, num_heads=2)
        pma(x, mask=mask)
        _randomize(pma, 2)
        seeds = np.broadcast_to(_numpy(pma.seeds).astype("float64"), (3, 2, 4))
        expected = _reference_mab(pma.block, seeds, x64, mask)
        self.assertAllClose(pma(x, mask=mask), expected, atol=1e-5, rtol=1e-5)

        isab = layers.InducedSetAttentionBlock(3, num_heads=1)
        isab(x, mask=mask)
        _randomize(isab, 3)
        inducing = np.broadcast_to(
            _numpy(isab.inducing_points).astype("float64"), (3, 3, 4)
        )
        summary = _reference_mab(isab.inducing_block, inducing, x64, mask)
        expected = _reference_mab(
            isab.output_block, x64, summary, np.ones((3, 3), bool)
        )
        out = _numpy(isab(x, mask=mask))
        self.assertAllClose(out[mask], expected[mask], atol=1e-5, rtol=1e-5)

    def test_set_properties(self):
        x, mask = _sets(batch=3, n=7, seed=2)
        for key, (cls, kwargs) in LAYERS.items():
            layer = cls(**kwargs)

            def fn(inputs, masks, layer=layer):
                return layer(inputs, mask=masks)

            equivariant = key != "pma"
            with self.subTest(key):
                if equivariant:
                    self.assert_permutation_equivariant(
                        fn, x, mask, num_draws=2, atol=1e-4
                    )
                else:
                    self.assert_permutation_invariant(
                        fn, x, mask, num_draws=2, atol=1e-4
                    )
                self.assert_padding_invariant(
                    fn, x, mask, equivariant=equivariant, atol=1e-4
                )

    def test_all_masked_set_is_finite_and_ignores_padding(self):
        x, _ = _sets(batch=2, n=5, seed=3)
        mask = np.array([[0] * 5, [1] * 5], bool)
        garbage = x.copy()
        garbage[0] = 1e30
        for key, (cls, kwargs) in LAYERS.items():
            layer = cls(**kwargs)
            with self.subTest(key):
                out = _numpy(layer(x, mask=mask))
                self.assertTrue(np.isfinite(out).all())
                self.assertAllClose(
                    layer(garbage, mask=mask), out, atol=1e-5, rtol=1e-5
                )
                if key == "pma":  # MAB(S, {}) = LN(H + FF(H)), H = LN(S).
                    seeds = _numpy(layer.seeds).astype("float64")[None]
                    expected = _reference_mab(
                        layer.block, seeds, x[:1] * 0.0, mask[:1]
                    )
                    self.assertAllClose(out[:1], expected, atol=1e-5)
        # Gradients stay finite too: one step of SAB -> ISAB -> PMA.
        inputs = keras.Input((5, 8))
        masks = keras.Input((5,), dtype="bool")
        h = layers.SetAttentionBlock(2)(inputs, mask=masks)
        h = layers.InducedSetAttentionBlock(3, num_heads=2)(h, mask=masks)
        h = layers.PoolingByMultiheadAttention(num_heads=2)(h, mask=masks)
        model = keras.Model([inputs, masks], h)
        model.compile(optimizer="sgd", loss="mse")
        loss = model.train_on_batch([garbage, mask], np.ones((2, 1, 8)))
        self.assertTrue(np.isfinite(loss))
        for w in model.weights:
            self.assertTrue(np.isfinite(_numpy(w)).all(), w.path)

    def test_keras_mask_is_used(self):
        ids = np.array([[3, 1, 0, 0], [2, 2, 2, 1]], "int32")
        embedded = keras.layers.Embedding(4, 8, mask_zero=True)
        for key, (cls, kwargs) in LAYERS.items():
            layer = cls(**kwargs)
            with self.subTest(key):
                via_keras_mask = layer(embedded(ids))
                explicit = layer(embedded(ids), mask=ids > 0)
                self.assertAllClose(via_keras_mask, explicit, atol=1e-6)

    def test_bad_arguments(self):
        with pytest.raises(ValueError, match="Received: num_heads=0"):
            layers.SetAttentionBlock(num_heads=0)
        with pytest.raises(ValueError, match="Received: key_dim=-1"):
            layers.SetAttentionBlock(2, key_dim=-1)
        with pytest.raises(ValueError, match="Received: ff_dim=2.5"):
            layers.PoolingByMultiheadAttention(num_heads=2, ff_dim=2.5)
        with pytest.raises(ValueError, match="Received: dropout=1.0"):
            layers.SetAttentionBlock(2, dropout=1.0)
        with pytest.raises(ValueError, match="num_inducing_points=0"):
            layers.InducedSetAttentionBlock(0, num_heads=2)
        with pytest.raises(ValueError, match="Received: num_seeds=0"):
            layers.PoolingByMultiheadAttention(num_seeds=0, num_heads=2)
        with pytest.raises(ValueError, match="divisible by `num_heads`"):
            layers.SetAttentionBlock(3)(np.zeros((2, 4, 8), "float32"))
        with pytest.raises(ValueError, match=r"\[batch, set_size, dim\]"):
            layers.SetAttentionBlock(2)(np.zeros((2, 8), "float32"))

    def test_saving(self):
        x, mask = _sets()
        inputs = keras.Input((None, 8))
        masks = keras.Input((None,), dtype="bool")
        h = layers.SetAttentionBlock(2, name="sab")(inputs, mask=masks)
        h = layers.InducedSetAttentionBlock(3, num_heads=2, name="isab")(
            h, mask=masks
        )
        h = layers.PoolingByMultiheadAttention(
            num_seeds=2, num_heads=2, name="pma"
        )(h, mask=masks)
        model = keras.Model([inputs, masks], keras.layers.Dense(2)(h))
        self.run_model_saving_test(model, [x, mask], atol=1e-5)
        self.run_weights_roundtrip_test(model, [x, mask], atol=1e-5)

    # The golden cases set_attention_block, induced_set_attention_block and
    # pooling_by_multihead_attention (tests/golden/cases.py) are checked,
    # with their cross-backend .keras loads, by tests/testing/test_golden.py.

    def test_empty_set_is_the_all_masked_set(self):
        x, _ = _sets(batch=2, n=5, seed=4)
        no_mask = np.zeros((2, 5), bool)
        for key, (cls, kwargs) in LAYERS.items():
            layer = cls(**kwargs)
            with self.subTest(key):
                masked = _numpy(layer(x, mask=no_mask))
                _randomize(layer, seed=1)
                empty = _numpy(layer(np.zeros((2, 0, 8), "float32")))
                self.assertTrue(np.isfinite(empty).all())
                if key != "pma":  # Equivariant: one output per element.
                    self.assertEqual(empty.shape, (2, 0, 8))
                    continue
                self.assertEqual(empty.shape, masked.shape)
                # MAB(S, {}) = LN(H + FF(H)), H = LN(S), in numpy float64.
                seeds = _numpy(layer.seeds).astype("float64")[None]
                expected = _reference_mab(
                    layer.block, seeds, x[:1] * 0.0, no_mask[:1]
                )
                self.assertAllClose(empty, np.repeat(expected, 2, 0), 1e-5)
                self.assertAllClose(
                    empty, layer(x, mask=no_mask), atol=1e-6, rtol=1e-6
                )

    def test_batch_zero(self):
        for key, (cls, kwargs) in LAYERS.items():
            layer = cls(**kwargs)
            with self.subTest(key):
                out = layer(np.zeros((0, 5, 8), "float32"))
                expected = (0, 1, 8) if key == "pma" else (0, 5, 8)
                self.assertEqual(tuple(out.shape), expected)

    def test_integer_features_are_cast(self):
        ids = np.arange(2 * 5 * 8).reshape(2, 5, 8) % 7
        mask = np.array([[1, 1, 1, 0, 0], [1] * 5], bool)
        for key, (cls, kwargs) in LAYERS.items():
            layer = cls(**kwargs)
            with self.subTest(key):
                out = layer(ids.astype("int32"), mask=mask)
                self.assertEqual(
                    keras.backend.standardize_dtype(out.dtype), "float32"
                )
                self.assertAllClose(
                    out, layer(ids.astype("float32"), mask=mask), atol=1e-6
                )
                if key == "sab":
                    expected = _reference_mab(
                        layer.block,
                        ids.astype("float64") * mask[..., None],
                        ids.astype("float64"),
                        mask,
                    )
                    self.assertAllClose(out[mask], expected[mask], atol=1e-5)
        # Symbolic integer inputs build a functional model.
        inputs = keras.Input((None, 8), dtype="int32")
        outputs = layers.SetAttentionBlock(2)(inputs)
        self.assertEqual(tuple(outputs.shape), (None, None, 8))
        with pytest.raises(TypeError, match="`inputs`"):
            layers.SetAttentionBlock(2)(keras.Input((5, 8), dtype="string"))

    def test_bad_masks(self):
        x = np.zeros((1, 3, 8), "float32")
        for key, (cls, kwargs) in LAYERS.items():
            layer = cls(**kwargs)
            with self.subTest(key):
                with pytest.raises(TypeError, match="`mask`.*Received"):
                    layer(x, mask=np.array([["a", "b", "c"]]))
                with pytest.raises(ValueError, match=r"\(1, 3\).*\(1, 4\)"):
                    layer(x, mask=np.ones((1, 4), bool))
                with pytest.raises(ValueError, match="Received: mask.shape"):
                    layer(x, mask=np.ones((3,), bool))
                # Static shapes are checked on symbolic inputs too.
                with pytest.raises(ValueError, match="Received: mask.shape"):
                    layer(
                        keras.Input((3, 8)),
                        mask=keras.Input((4,), dtype="bool"),
                    )
