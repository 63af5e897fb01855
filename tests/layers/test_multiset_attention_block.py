import keras
import numpy as np
import pytest

from keras_msets import testing
from keras_msets.layers._multihead_attention_block import (
    MultiheadAttentionBlock,
)
from keras_msets.layers._multiset_block import MultisetBlock
from keras_msets.layers.dimension_equivariant_multiset_attention_block import (
    DimensionEquivariantMultisetAttentionBlock,
)
from keras_msets.layers.induced_multiset_attention_block import (
    InducedMultisetAttentionBlock,
)
from keras_msets.layers.multiset_attention_block import MultisetAttentionBlock
from keras_msets.layers.multiset_relation_block import MultisetRelationBlock
from tests.layers.test_set_attention_blocks import _layer_norm
from tests.layers.test_set_attention_blocks import _randomize
from tests.layers.test_set_attention_blocks import _reference_mab

# The key projection's bias adds the same logit to every key of a query,
# which the softmax cancels: its gradient is exactly zero.
KEY_BIAS = "attention/key/bias"

MSAB = MultisetAttentionBlock
IMSAB = InducedMultisetAttentionBlock
MSRB = MultisetRelationBlock
DEMSAB = DimensionEquivariantMultisetAttentionBlock

LAYERS = {
    "msab": (MSAB, {"num_heads": 2}),
    "induced": (IMSAB, {"num_inducing_points": 3, "num_heads": 2}),
    "relation": (MSRB, {"relation_dim": 6}),
    "dimension_equivariant": (DEMSAB, {"num_heads": 2}),
}


def _numpy(x):
    return keras.ops.convert_to_numpy(x)


# One set of shapes for (almost) every test: eager JAX compiles each op once
# per shape (seconds per layer call), so new shapes cost time.
SIZES = (5, 4)
SIZES3 = (5, 4, 3)
COORDS = 2


def _sets(sizes=SIZES, batch=3, dim=4, coords=None, seed=0):
    """Random sets of the given sizes (one all-masked row in the last set).

    Other rows have at least two valid elements (with one, a softmax over
    one key gives no gradient to the query and key weights).

    With `coords`, sets are multichannel `[batch, n, coords, dim]`.
    """
    rng = np.random.default_rng(seed)
    sets, masks = [], []
    for n in sizes:
        shape = (batch, n, dim) if coords is None else (batch, n, coords, dim)
        sets.append(rng.normal(size=shape).astype("float32"))
        mask = rng.random((batch, n)) < 0.7
        mask[:, :2] = True
        masks.append(mask)
    masks[-1][1] = False  # an all-masked set in row 1
    return sets, masks


def _inputs_for(key, sizes=SIZES, seed=0):
    coords = COORDS if key == "dimension_equivariant" else None
    return _sets(sizes, coords=coords, seed=seed)


def _sublayers(layer):
    return {s.name: s for s in layer._flatten_layers(include_self=False)}


def _weights(layer):
    return [_numpy(w).astype("float64") for w in layer.weights]


def _reference_relation(block, query, value, mask):
    """numpy float64 relation block: max_j theta([x_i || y_j]), post-LN."""
    n, m = query.shape[1], value.shape[1]
    kernel, bias = _numpy(block.pair_kernel), _numpy(block.pair_bias)
    w_out, b_out = _weights(block.relation_output)
    pairs = np.concatenate(
        [
            np.repeat(query[:, :, None], m, axis=2),
            np.repeat(value[:, None], n, axis=1),
        ],
        axis=-1,
    )
    theta = np.maximum(pairs @ kernel + bias, 0.0) @ w_out + b_out
    theta = np.where(mask[:, None, :, None], theta, -np.inf)
    relation = theta.max(axis=2)
    relation[~mask.any(1)] = 0.0
    hidden = _layer_norm(query + relation, block.relation_norm)
    w1, b1, w2, b2 = _weights(block.ff_hidden) + _weights(block.ff_output)
    ff = np.maximum(hidden @ w1 + b1, 0.0) @ w2 + b2
    return _layer_norm(hidden + ff, block.output_norm)


def _reference_multichannel_mab(block, query, value, mask):
    """numpy float64 multichannel block: logits summed over coordinates."""
    w = {
        v.path.split("/attention/")[-1]: _numpy(v).astype("float64")
        for v in block.attention.weights
    }
    key_dim = w["query/kernel"].shape[-1]
    q = np.einsum("bnic,chk->bnihk", query, w["query/kernel"])
    q = q + w["query/bias"]
    k = np.einsum("bmic,chk->bmihk", value, w["key/kernel"]) + w["key/bias"]
    v = np.einsum("bmic,chk->bmihk", value, w["value/kernel"])
    v = v + w["value/bias"]
    logits = np.zeros((query.shape[0], q.shape[3], query.shape[1], k.shape[1]))
    for i in range(query.shape[2]):  # sum over the input dimensions
        logits += np.einsum("bnhk,bmhk->bhnm", q[:, :, i], k[:, :, i])
    logits /= np.sqrt(key_dim)
    logits = np.where(mask[:, None, None, :], logits, -np.inf)
    empty = ~mask.any(1)
    logits[empty] = 0.0
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    heads = np.einsum("bhnm,bmihk->bnihk", probs, v)
    attended = np.einsum("bnihk,hkc->bnic", heads, w["attention_output/kernel"])
    attended = attended + w["attention_output/bias"]
    attended[empty] = 0.0
    hidden = _layer_norm(query + attended, block.attention_norm)
    w1, b1, w2, b2 = _weights(block.ff_hidden) + _weights(block.ff_output)
    ff = np.maximum(hidden @ w1 + b1, 0.0) @ w2 + b2
    return _layer_norm(hidden + ff, block.output_norm)


def _reference(layer, sets, masks):
    """numpy float64 eq. 10-11 (mean of cross terms when K > 2).

    Blocks are looked up by their documented names, not by the layer's own
    indexing.
    """
    subs = _sublayers(layer)
    num_sets = len(sets)
    sets = [
        np.where(m.reshape(m.shape + (1,) * (x.ndim - 2)), x, 0.0).astype(
            "float64"
        )
        for x, m in zip(sets, masks, strict=True)
    ]
    sharing = layer.weight_sharing

    def pair_block(k, j):
        if k == j:
            return subs[
                "self_block" if sharing == "symmetric" else f"self_block_{k}"
            ]
        return subs[
            "cross_block" if sharing != "none" else f"cross_block_{k}_{j}"
        ]

    summaries = None
    if isinstance(layer, IMSAB):
        summaries = []
        for j, (x, m) in enumerate(zip(sets, masks, strict=True)):
            suffix = "" if sharing == "symmetric" else f"_{j}"
            inducing = next(
                w
                for w in layer.weights
                if w.path.endswith(f"inducing_points{suffix}")
            )
            inducing = np.broadcast_to(
                _numpy(inducing).astype("float64"),
                (x.shape[0],) + tuple(inducing.shape),
            )
            summaries.append(
                _reference_mab(subs[f"inducing_block{suffix}"], inducing, x, m)
            )

    def pair(k, j):
        block = pair_block(k, j)
        if isinstance(layer, IMSAB):
            ones = np.ones(summaries[j].shape[:2], bool)
            return _reference_mab(block, sets[k], summaries[j], ones)
        if isinstance(layer, MSRB):
            return _reference_relation(block, sets[k], sets[j], masks[j])
        if isinstance(layer, DEMSAB):
            return _reference_multichannel_mab(
                block, sets[k], sets[j], masks[j]
            )
        return _reference_mab(block, sets[k], sets[j], masks[j])

    outputs = []
    for k in range(num_sets):
        cross = np.mean([pair(k, j) for j in range(num_sets) if j != k], axis=0)
        terms = [cross] if layer.cross_only else [pair(k, k), cross]
        suffix = "" if sharing == "symmetric" else f"_{k}"
        if layer.merge == "concat":
            w, b = _weights(subs[f"merge_dense{suffix}"])
            merged = np.maximum(np.concatenate(terms, -1) @ w + b, 0.0)
        else:
            merged = sum(terms)
        norm = subs[f"merge_norm{suffix}"]
        outputs.append(_layer_norm(sets[k] + merged, norm))
    return outputs


def _check_reference(test, layer, sets, masks, atol=2e-5):
    layer(sets, masks=masks)
    _randomize(layer, 7)
    outputs = layer(sets, masks=masks)
    expected = _reference(layer, sets, masks)
    test.assertEqual(len(outputs), len(sets))
    pairs = zip(outputs, expected, masks, strict=True)
    for k, (out, exp, m) in enumerate(pairs):
        out = _numpy(out)
        test.assertTrue(np.isfinite(out).all(), f"output {k} not finite")
        test.assertAllClose(
            out[m], exp[m], atol=atol, rtol=atol, msg=f"output {k}"
        )


def _key_biases(layer):
    return tuple(w.path for w in layer.weights if w.path.endswith(KEY_BIAS))


def _coordinate_mask(mask, coords=COORDS):
    return np.repeat(mask[:, :, None], coords, axis=2)


class MultisetAttentionBlockTest(testing.TestCase):
    # Serialization, weights, symbolic call, fit step, masks --------------

    def _basics(self, cls, kwargs, sets, masks, num_weights, out_masks=None):
        kwargs = dict(kwargs, name="block_under_test")
        layer = cls(**kwargs)
        layer(sets, masks=masks)
        self.run_layer_test(
            cls,
            kwargs,
            sets,
            input_mask=masks,
            expected_output_shape=[s.shape for s in sets],
            expected_num_trainable_weights=num_weights,
            expected_num_non_trainable_weights=0,
            supports_masking=True,
            expected_output_mask=masks if out_masks is None else out_masks,
            allow_unchanged_weights=_key_biases(layer),
        )

    def test_multiset_attention_block_basics(self):
        sets, masks = _sets()
        # 4 blocks x 16 weights + 2 x (merge Dense + LayerNorm).
        self._basics(MSAB, {"num_heads": 2, "dropout": 0.1}, sets, masks, 72)

    def test_induced_multiset_attention_block_basics(self):
        sets, masks = _sets()
        # 4 output blocks + 2 inducing blocks (16 each), 2 inducing point
        # tensors, 2 merge norms (no merge Dense with merge="sum").
        self._basics(
            IMSAB,
            {"num_inducing_points": 3, "num_heads": 2, "merge": "sum"},
            sets,
            masks,
            6 * 16 + 2 + 2 * 2,
        )

    def test_multiset_relation_block_basics(self):
        sets, masks = _sets()
        # 4 relation blocks (pair kernel and bias, 3 Dense, 2 LayerNorm:
        # 12 weights each) + 2 merges.
        self._basics(MSRB, {"relation_dim": 6, "ff_dim": 4}, sets, masks, 56)

    def test_dimension_equivariant_block_basics(self):
        sets, masks = _sets(coords=COORDS)
        # One shared cross block, 2 merges; the output masks cover the
        # coordinates too.
        self._basics(
            DEMSAB,
            {"num_heads": 2, "weight_sharing": "cross", "cross_only": True},
            sets,
            masks,
            16 + 2 * 4,
            out_masks=[_coordinate_mask(m) for m in masks],
        )

    # Numerics against numpy ----------------------------------------------

    def test_msab_matches_numpy(self):
        configs = [
            {},
            {"merge": "sum"},
            {"cross_only": True},
            {"weight_sharing": "cross"},
            {"weight_sharing": "symmetric", "merge": "sum"},
        ]
        sets, masks = _sets(seed=1)
        for config in configs:
            with self.subTest(**config):
                layer = MSAB(num_heads=2, **config)
                _check_reference(self, layer, sets, masks)

    def test_variants_match_numpy(self):
        for key in ("induced", "relation", "dimension_equivariant"):
            cls, kwargs = LAYERS[key]
            sets, masks = _inputs_for(key, seed=3)
            for config in ({}, {"weight_sharing": "symmetric"}):
                with self.subTest(key, **config):
                    _check_reference(self, cls(**kwargs, **config), sets, masks)

    def test_three_sets_match_numpy(self):
        for key, (cls, kwargs) in LAYERS.items():
            sets, masks = _inputs_for(key, sizes=SIZES3, seed=2)
            with self.subTest(key):
                layer = cls(**kwargs)
                _check_reference(self, layer, sets, masks)
                self.assertEqual(layer.num_sets, 3)

    # Set properties ------------------------------------------------------

    def test_partial_permutation_equivariance_and_padding(self):
        # Each set is permuted independently (per batch row), so output k
        # must follow set k's permutation and ignore the others'. Sets of
        # sizes (4, 3), padded by one to SIZES: shapes other tests compile
        # too (on JAX every new shape is a new compile).
        for key, (cls, kwargs) in LAYERS.items():
            sets, masks = _inputs_for(key, sizes=SIZES3[1:], seed=4)
            layer = cls(**kwargs)

            def fn(inputs, masks, layer=layer):
                return layer(inputs, masks=masks)

            with self.subTest(key):
                self.assert_permutation_equivariant(
                    fn, sets, masks, num_draws=1, atol=1e-4
                )
                self.assert_padding_invariant(
                    fn, sets, masks, extra=1, equivariant=True, atol=1e-4
                )

    def test_permuting_one_set_leaves_the_others_unchanged(self):
        rng = np.random.default_rng(5)
        for key, (cls, kwargs) in LAYERS.items():
            sets, masks = _inputs_for(key, seed=5)
            layer = cls(**kwargs)
            reference = [_numpy(o) for o in layer(sets, masks=masks)]
            perm = rng.permutation(sets[0].shape[1])
            permuted = [sets[0][:, perm]] + sets[1:]
            permuted_masks = [masks[0][:, perm]] + masks[1:]
            out = [_numpy(o) for o in layer(permuted, masks=permuted_masks)]
            with self.subTest(key):
                m0 = permuted_masks[0]
                self.assertAllClose(
                    out[0][m0], reference[0][:, perm][m0], atol=1e-5
                )
                self.assertAllClose(
                    out[1][masks[1]], reference[1][masks[1]], atol=1e-5
                )

    def test_all_masked_sets_with_garbage_stay_finite(self):
        # Set 0 is all masked in row 0, set 1 in row 1 (see _sets); padded
        # slots hold 1e30. Outputs, loss and updated weights stay finite,
        # and the valid outputs ignore the garbage. The attention blocks'
        # masking is the shared MAB's (tested with SetAttentionBlock); this
        # covers the shared multi-set code, the relation block's masked max
        # and the multichannel attention.
        sets, masks = _sets(seed=6)
        masks[0][0] = False
        garbage = [x.copy() for x in sets]
        for x, m in zip(garbage, masks, strict=True):
            x[~m] = 1e30
        inputs = [keras.Input(x.shape[1:]) for x in sets]
        mask_inputs = [keras.Input(m.shape[1:], dtype="bool") for m in masks]
        h = MSRB(weight_sharing="symmetric")(inputs, masks=mask_inputs)
        # [batch, n, 4] -> [batch, n, COORDS, 2] -> 4 channels per coordinate.
        lift = keras.layers.Dense(4)
        h = [
            lift(keras.layers.Reshape((n, COORDS, 4 // COORDS))(x))
            for x, n in zip(h, SIZES, strict=True)
        ]
        h = DEMSAB(num_heads=2, weight_sharing="symmetric")(
            h, masks=mask_inputs
        )
        model = keras.Model(inputs + mask_inputs, h)
        clean = model(sets + masks)
        dirty = model(garbage + masks)
        for c, d, m in zip(clean, dirty, masks, strict=True):
            self.assertTrue(np.isfinite(_numpy(d)).all())
            self.assertAllClose(_numpy(d)[m], _numpy(c)[m], atol=1e-5)
        model.compile(optimizer="sgd", loss="mse")
        targets = [np.ones(_numpy(o).shape, "float32") for o in clean]
        loss = model.train_on_batch(garbage + masks, targets)
        self.assertTrue(np.isfinite(loss).all())
        for w in model.weights:
            self.assertTrue(np.isfinite(_numpy(w)).all(), w.path)

    def test_keras_masks_are_used(self):
        ids = [
            np.array([[3, 1, 0, 0, 2], [2, 2, 2, 1, 0], [1] * 5], "int32"),
            np.array([[1, 0, 0, 0], [0, 0, 0, 0], [3, 3, 0, 0]], "int32"),
        ]
        embedding = keras.layers.Embedding(4, 4, mask_zero=True)
        for key in ("msab", "induced", "relation"):
            cls, kwargs = LAYERS[key]
            layer = cls(**kwargs)
            with self.subTest(key):
                via_keras = layer([embedding(i) for i in ids])
                explicit = layer(
                    [embedding(i) for i in ids], masks=[i > 0 for i in ids]
                )
                for a, b, i in zip(via_keras, explicit, ids, strict=True):
                    self.assertAllClose(
                        _numpy(a)[i > 0], _numpy(b)[i > 0], atol=1e-6
                    )
                # The output masks are the input masks.
                self.assertAllEqual(
                    layer.compute_mask(None, [i > 0 for i in ids]),
                    [i > 0 for i in ids],
                )

    # Ablations and weight sharing ----------------------------------------

    def test_cross_only_ignores_the_rest_of_its_own_set(self):
        # Cross-Only: Z_k[i] = LN(x_ki + g(T_kl(x_ki, X_l))) depends on its
        # own element and on the other set only, not on the rest of X_k.
        rng = np.random.default_rng(7)
        for key, (cls, kwargs) in LAYERS.items():
            sets, masks = _inputs_for(key, seed=7)
            changed = [sets[0].copy(), sets[1]]
            changed[0][:, 1:] = rng.normal(size=changed[0][:, 1:].shape)
            modes = (True, False) if key == "msab" else (True,)
            for cross_only in modes:
                layer = cls(cross_only=cross_only, **kwargs)
                before = _numpy(layer(sets, masks=masks)[0])[:, 0]
                after = _numpy(layer(changed, masks=masks)[0])[:, 0]
                with self.subTest(key, cross_only=cross_only):
                    if cross_only:
                        self.assertAllClose(after, before, atol=1e-5)
                        self.assertEqual(len(layer.self_blocks), 0)
                    else:  # the test can fail: the self block sees X_0
                        self.assertNotAllClose(after, before, atol=1e-3)

    def test_weight_counts_per_sharing_mode(self):
        # {(weight_sharing, cross_only, merge): (K=2 count, K=3 count)}:
        # 16 weights per block, merge Dense 2 + LayerNorm 2 per set.
        expected = {
            ("none", False, "concat"): (4 * 16 + 8, 9 * 16 + 12),
            ("none", False, "sum"): (4 * 16 + 4, 9 * 16 + 6),
            ("none", True, "concat"): (2 * 16 + 8, 6 * 16 + 12),
            ("cross", False, "concat"): (3 * 16 + 8, 4 * 16 + 12),
            ("cross", True, "concat"): (16 + 8, 16 + 12),
            ("symmetric", False, "concat"): (2 * 16 + 4, 2 * 16 + 4),
            ("symmetric", True, "sum"): (16 + 2, 16 + 2),
        }
        for (sharing, cross_only, merge), counts in expected.items():
            for num_sets, count in zip((2, 3), counts, strict=True):
                layer = MSAB(
                    num_heads=2,
                    weight_sharing=sharing,
                    cross_only=cross_only,
                    merge=merge,
                )
                layer.build([(None, n, 4) for n in SIZES3[:num_sets]])
                name = f"{sharing}, cross_only={cross_only}, {merge}"
                with self.subTest(name, K=num_sets):
                    self.assertEqual(len(layer.trainable_weights), count)
        shapes = [(None, n, 4) for n in SIZES]
        layer = IMSAB(2, num_heads=2, weight_sharing="symmetric")
        layer.build(shapes)  # self, cross, inducing blocks + points, merge
        self.assertEqual(len(layer.trainable_weights), 3 * 16 + 1 + 4)
        layer = MSRB(weight_sharing="cross")
        layer.build(shapes)  # 3 relation blocks of 12 weights, 2 merges
        self.assertEqual(len(layer.trainable_weights), 3 * 12 + 8)
        # The block arguments reach every block.
        layer = MSAB(num_heads=2, key_dim=3, ff_dim=5, weight_sharing="cross")
        layer.build(shapes)
        subs = _sublayers(layer)
        for name in ("self_block_0", "self_block_1", "cross_block"):
            self.assertEqual(tuple(subs[name].ff_hidden.kernel.shape), (4, 5))
            query = subs[name].attention.weights[0]
            self.assertEqual(tuple(query.shape), (4, 2, 3))
        # "cross": one block serves both directions.
        layer = MSAB(num_heads=2, weight_sharing="cross")
        layer.build(shapes)
        names = set(_sublayers(layer))
        self.assertTrue(
            {"cross_block", "self_block_0", "self_block_1"} <= names
        )
        self.assertNotIn("cross_block_0_1", names)

    def test_multiset_block_wraps_the_given_pair_block(self):
        sets, masks = _sets()
        shapes = [tuple(x.shape) for x in sets]
        pair = MultiheadAttentionBlock(num_heads=2, ff_dim=6)
        wrapper = MultisetBlock(pair, weight_sharing="cross", dtype="float64")
        # The template is not a sub-layer: only its copies hold weights.
        self.assertEqual(wrapper.weights, [])
        wrapper.build(shapes)
        self.assertFalse(pair.built)
        public = MSAB(num_heads=2, ff_dim=6, weight_sharing="cross")
        public.build(shapes)
        self.assertEqual(
            [w.path.split("/", 1)[1] for w in wrapper.weights],
            [w.path.split("/", 1)[1] for w in public.weights],
        )
        for name in ("self_block_0", "self_block_1", "cross_block"):
            copy = _sublayers(wrapper)[name]
            self.assertIsInstance(copy, MultiheadAttentionBlock)
            self.assertEqual(copy.dtype_policy.name, "float64")
            self.assertEqual(tuple(copy.ff_hidden.kernel.shape), (4, 6))
        _randomize(public, 5)
        wrapper.set_weights(public.get_weights())
        for a, b, m in zip(
            wrapper(sets, masks=masks),
            public(sets, masks=masks),
            masks,
            strict=True,
        ):
            self.assertAllClose(_numpy(a)[m], _numpy(b)[m], atol=1e-5)

    def test_symmetric_sharing_is_equivariant_to_the_set_order(self):
        for key, (cls, kwargs) in LAYERS.items():
            # Three sets rotated for MSAB, two swapped for the variants
            # (they share the multi-set code; shapes already compiled).
            sizes = SIZES3 if key == "msab" else SIZES
            order = [2, 0, 1] if key == "msab" else [1, 0]
            sets, masks = _inputs_for(key, sizes=sizes, seed=8)
            modes = ("symmetric", "none") if key == "msab" else ("symmetric",)
            for sharing in modes:
                layer = cls(weight_sharing=sharing, **kwargs)
                out = layer(sets, masks=masks)
                reordered = layer(
                    [sets[i] for i in order], masks=[masks[i] for i in order]
                )
                with self.subTest(key, sharing=sharing):
                    expected = [_numpy(out[i]) for i in order]
                    actual = [_numpy(o) for o in reordered]
                    if sharing == "symmetric":
                        self.assertAllClose(actual, expected, atol=1e-5)
                    else:  # unshared blocks tell the sets apart
                        self.assertNotAllClose(actual, expected, atol=1e-3)

    # Dimension equivariance ----------------------------------------------

    def test_dimension_equivariant_any_d_and_permuted_coordinates(self):
        layer = DEMSAB(num_heads=2)
        rng = np.random.default_rng(9)
        for coords in (2, 5):
            sets, masks = _sets(coords=coords, seed=coords)
            out = [_numpy(o) for o in layer(sets, masks=masks)]
            perm = rng.permutation(coords)
            permuted = layer([x[:, :, perm] for x in sets], masks=masks)
            with self.subTest(coords=coords):
                self.assertEqual(out[0].shape, sets[0].shape)
                for o, p, m in zip(out, permuted, masks, strict=True):
                    self.assertTrue(np.isfinite(o).all())
                    self.assertAllClose(
                        _numpy(p)[m], o[:, :, perm][m], atol=1e-5
                    )
        # Built once: the same 72 weights served d = 2 and d = 5.
        self.assertEqual(len(layer.trainable_weights), 72)

    def test_dimension_equivariant_with_one_coordinate_is_msab(self):
        sets, masks = _sets(seed=10)
        msab = MSAB(num_heads=2)
        msab(sets, masks=masks)
        _randomize(msab, 11)
        block = DEMSAB(num_heads=2)
        lifted = [x[:, :, None] for x in sets]
        block(lifted, masks=masks)
        for source, target in zip(msab.weights, block.weights, strict=True):
            self.assertEqual(
                source.path.split("/", 1)[1], target.path.split("/", 1)[1]
            )
            target.assign(source)
        expected = msab(sets, masks=masks)
        actual = block(lifted, masks=masks)
        for a, e, m in zip(actual, expected, masks, strict=True):
            self.assertAllClose(_numpy(a)[:, :, 0][m], _numpy(e)[m], atol=1e-5)

    # Saving ----------------------------------------------------------------

    def test_saving(self):
        sets, masks = _sets()
        inputs = [keras.Input((None, 4)) for _ in sets]
        mask_inputs = [keras.Input((None,), dtype="bool") for _ in masks]
        h = MSAB(num_heads=2, name="msab")(inputs, masks=mask_inputs)
        h = IMSAB(2, num_heads=2, name="induced")(h, masks=mask_inputs)
        h = MSRB(weight_sharing="symmetric", name="relation")(
            h, masks=mask_inputs
        )
        model = keras.Model(inputs + mask_inputs, h)
        self.run_model_saving_test(model, sets + masks, atol=1e-5)
        self.run_weights_roundtrip_test(model, sets + masks, atol=1e-5)

    def test_dimension_equivariant_saving(self):
        sets, masks = _sets(coords=COORDS)
        inputs = [keras.Input((None, None, 4)) for _ in sets]
        mask_inputs = [keras.Input((None,), dtype="bool") for _ in masks]
        h = DEMSAB(num_heads=2, merge="sum", name="demsab")(
            inputs, masks=mask_inputs
        )
        model = keras.Model(inputs + mask_inputs, h)
        self.run_model_saving_test(model, sets + masks, atol=1e-5)
        self.run_weights_roundtrip_test(model, sets + masks, atol=1e-5)

    # Validation ------------------------------------------------------------

    def test_bad_arguments(self):
        x = np.zeros((2, 3, 4), "float32")
        with pytest.raises(ValueError, match="Received: merge='mean'"):
            MSAB(2, merge="mean")
        with pytest.raises(ValueError, match="weight_sharing='sym'"):
            MSAB(2, weight_sharing="sym")
        with pytest.raises(ValueError, match="Received: cross_only=1"):
            MSAB(2, cross_only=1)
        with pytest.raises(ValueError, match="Received: num_heads=0"):
            MSAB(0)
        with pytest.raises(ValueError, match="num_inducing_points=0"):
            IMSAB(0, num_heads=2)
        with pytest.raises(ValueError, match="Received: relation_dim=0"):
            MSRB(relation_dim=0)
        with pytest.raises(ValueError, match="Received: dropout=1.5"):
            DEMSAB(2, dropout=1.5)
        with pytest.raises(ValueError, match="list of at least 2 sets"):
            MSAB(2)(x)
        with pytest.raises(ValueError, match="inputs with 1 set"):
            MSAB(2)([x])
        with pytest.raises(ValueError, match="same feature size"):
            MSAB(2).build([(2, 3, 4), (2, 3, 6)])
        with pytest.raises(ValueError, match="same batch size"):
            MSAB(2).build([(2, 3, 4), (3, 3, 4)])
        with pytest.raises(ValueError, match=r"\[batch, set_size, dim\]"):
            MSAB(2).build([(2, 3, 4), (2, 3)])
        with pytest.raises(ValueError, match="set_size, d, channels"):
            DEMSAB(2).build([(2, 3, 4), (2, 3, 4)])
        with pytest.raises(ValueError, match="same number of input dim"):
            DEMSAB(2).build([(2, 3, 2, 4), (2, 3, 5, 4)])
        layer = MSAB(2)
        layer([x, x])
        with pytest.raises(ValueError, match="`masks` must have one entry"):
            layer([x, x], masks=[np.ones((2, 3), bool)])
        with pytest.raises(ValueError, match="built for 2 sets"):
            layer([x, x, x])

    # The golden cases multiset_attention_block,
    # induced_multiset_attention_block, multiset_relation_block and
    # dimension_equivariant_multiset_attention_block (tests/golden/cases.py)
    # are checked on every backend by tests/testing/test_golden.py.

    def test_empty_set_is_the_all_masked_set(self):
        for key, (cls, kwargs) in LAYERS.items():
            sets, masks = _inputs_for(key, seed=7)
            layer = cls(**kwargs)
            layer(sets)
            _randomize(layer, seed=2)
            for k in range(2):
                with self.subTest(key=key, empty=k):
                    no_mask = np.zeros_like(masks[k])
                    full = list(masks)
                    full[k] = no_mask
                    masked = layer(sets, masks=full)
                    empty_sets = list(sets)
                    empty_sets[k] = sets[k][:, :0]
                    empty_masks = list(masks)
                    empty_masks[k] = None
                    out = layer(empty_sets, masks=empty_masks)
                    self.assertEqual(
                        tuple(out[k].shape), tuple(sets[k][:, :0].shape)
                    )
                    other = 1 - k
                    self.assertTrue(np.isfinite(_numpy(out[other])).all())
                    self.assertAllClose(
                        out[other], masked[other], atol=1e-5, rtol=1e-5
                    )

    def test_batch_zero(self):
        for key, (cls, kwargs) in LAYERS.items():
            sets, _ = _inputs_for(key)
            with self.subTest(key):
                out = cls(**kwargs)([x[:0] for x in sets])
                for x, o in zip(sets, out, strict=True):
                    self.assertEqual(tuple(o.shape), tuple(x[:0].shape))

    def test_integer_features_are_cast(self):
        for key, (cls, kwargs) in LAYERS.items():
            sets, masks = _inputs_for(key, seed=3)
            ints = [np.round(3 * x).astype("int32") for x in sets]
            layer = cls(**kwargs)
            with self.subTest(key):
                out = layer(ints, masks=masks)
                floats = layer([x.astype("float32") for x in ints], masks=masks)
                for o, f in zip(out, floats, strict=True):
                    self.assertEqual(
                        keras.backend.standardize_dtype(o.dtype), "float32"
                    )
                    self.assertAllClose(o, f, atol=1e-6)
        # msab against numpy float64 on integer features: T_00 and T_01 of
        # a layer with merge="sum" and cross_only=False.
        sets, masks = _sets(seed=5)
        ints = [np.round(3 * x).astype("int32") for x in sets]
        layer = MSAB(2, merge="sum", weight_sharing="symmetric")
        out = layer(ints, masks=masks)
        x = [
            i.astype("float64") * m[..., None]
            for i, m in zip(ints, masks, strict=True)
        ]
        terms = _reference_mab(
            layer.self_blocks[0], x[0], x[0], masks[0]
        ) + _reference_mab(layer.cross_blocks[0], x[0], x[1], masks[1])
        expected = _layer_norm(x[0] + terms, layer.merge_norms[0])
        self.assertAllClose(
            _numpy(out[0])[masks[0]], expected[masks[0]], atol=1e-5
        )

    def test_bad_masks(self):
        x = np.zeros((2, 3, 4), "float32")
        y = np.zeros((2, 5, 4), "float32")
        ok = np.ones((2, 3), bool)
        layer = MSAB(2)
        with pytest.raises(TypeError, match="`masks\\[1\\]`.*Received"):
            layer([x, y], masks=[ok, np.full((2, 5), "a")])
        with pytest.raises(TypeError, match="`mask\\[0\\]`.*Received"):
            layer([x, y], mask=[np.full((2, 3), "a"), None])
        with pytest.raises(ValueError, match=r"\(2, 5\).*\(2, 3\)"):
            layer([x, y], masks=[ok, ok])
        with pytest.raises(TypeError, match="`inputs\\[0\\]`"):
            layer([np.full((2, 3, 4), "a"), y])
        # Static shapes and dtypes are checked on symbolic inputs too.
        a, b = keras.Input((3, 4)), keras.Input((5, 4))
        with pytest.raises(ValueError, match=r"masks\[1\].shape=\(None, 3\)"):
            layer([a, b], masks=[None, keras.Input((3,), dtype="bool")])
        with pytest.raises(TypeError, match="`inputs\\[1\\]`"):
            layer([a, keras.Input((5, 4), dtype="string")])
