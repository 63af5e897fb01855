import keras
import numpy as np
import pytest

from keras_msets import testing
from keras_msets.layers.induced_multiset_attention_block import (
    InducedMultisetAttentionBlock,
)
from keras_msets.models.mst.baselines import SingleSetBaseline
from keras_msets.models.mst.baselines import UnionTransformer
from keras_msets.models.mst.dimension_equivariant_multiset_transformer import (  # noqa: E501
    DimensionEquivariantMultiSetTransformer,
)
from keras_msets.models.mst.multiset_transformer import MULTISET_MODEL_NAMES
from keras_msets.models.mst.multiset_transformer import MultiSetTransformer
from keras_msets.models.mst.multiset_transformer import build_multiset_model
from tests.layers.test_multiset_attention_block import (
    _reference as _reference_block,
)
from tests.layers.test_set_attention_blocks import _randomize
from tests.layers.test_set_attention_blocks import _reference_mab

# Tiny models (latent 4, 2 heads, 1 block) and two input shapes for most
# tests, batch 3 and set sizes SIZES or SMALL: eager JAX compiles every op
# once per shape. Padding tests start from SMALL and append PAD elements,
# which gives SIZES again.
TINY = {"latent_dim": 4, "num_heads": 2, "num_blocks": 1}
SIZES = (5, 4)
SMALL = (3, 2)
PAD = 2
DIM = 2


def _numpy(x):
    return keras.ops.convert_to_numpy(x)


def _inputs(sizes=SIZES, batch=3, dim=DIM, seed=0):
    """Random sets and masks; row 1 of the last set is all masked."""
    rng = np.random.default_rng(seed)
    sets, masks = [], []
    for n in sizes:
        sets.append(rng.normal(size=(batch, n, dim)).astype("float32"))
        mask = rng.random((batch, n)) < 0.7
        mask[:, :2] = True
        masks.append(mask)
    masks[-1][1] = False
    return sets, masks


def _call(model):
    return lambda sets, masks: model({"sets": sets, "masks": masks})


# ---------------------------------------------------------------------------
# numpy float64 references of eq. 12 and of the baselines.
# ---------------------------------------------------------------------------


def _dense(layer, x, relu=False):
    w, b = (_numpy(v).astype("float64") for v in layer.weights)
    y = x @ w + b
    return np.maximum(y, 0.0) if relu else y


def _zeroed(x, mask):
    return np.where(mask.reshape(mask.shape + (1,) * (x.ndim - 2)), x, 0.0)


def _reference_pma(pma, z, mask):
    seeds = _numpy(pma.seeds).astype("float64")
    seeds = np.broadcast_to(seeds, (z.shape[0],) + seeds.shape)
    return _reference_mab(pma.block, seeds, _zeroed(z, mask), mask)[:, 0]


def _reference_decoder(model, pooled):
    h = np.concatenate(pooled, axis=-1)
    for dense in model.decoder_hidden:
        h = _dense(dense, h, relu=True)
    return _dense(model.decoder_output, h)


def _reference_multiset_transformer(model, sets, masks):
    """Projection, MSAB stack (eq. 10-11), per-set PMA, decoder (eq. 12)."""
    sets = [
        _zeroed(x.astype("float64"), m)
        for x, m in zip(sets, masks, strict=True)
    ]
    projection = model.input_projections[0]
    if model.dimension_equivariant:
        # Sec. 3.5: one channel per coordinate, lifted to latent_dim.
        hidden = [_dense(projection, x[..., None]) for x in sets]
    else:
        hidden = [_dense(projection, x) for x in sets]
    for block in model.blocks:
        hidden = _reference_block(block, hidden, masks)
    if model.dimension_equivariant:
        hidden = [z.max(axis=2) for z in hidden]
    pooled = [
        _reference_pma(model.poolings[k], z, m)
        for k, (z, m) in enumerate(zip(hidden, masks, strict=True))
    ]
    return _reference_decoder(model, pooled)


def _reference_union(model, sets, masks):
    """One-hot set indicator, shared projection, SABs on the union, PMA."""
    num_sets = len(sets)
    hidden = []
    for k, (x, m) in enumerate(zip(sets, masks, strict=True)):
        x = _zeroed(x.astype("float64"), m)
        indicator = np.zeros(x.shape[:2] + (num_sets,))
        indicator[..., k] = 1.0
        x = np.concatenate([x, indicator], axis=-1)
        hidden.append(_dense(model.input_projections[0], x))
    union = np.concatenate(hidden, axis=1)
    mask = np.concatenate(masks, axis=1)
    for block in model.blocks:
        union = _zeroed(union, mask)
        union = _reference_mab(block.block, union, union, mask)
    return _reference_decoder(
        model, [_reference_pma(model.poolings[0], union, mask)]
    )


def _reference_deepsets(model, sets, masks):
    """Single-Set RFF: LN(x + FF(x)) per element and set, masked sum."""
    pooled = []
    for k, (x, m) in enumerate(zip(sets, masks, strict=True)):
        h = _dense(model.input_projections[0], x.astype("float64"))
        for block in model._blocks_of(k):
            ff = _dense(block.ff_output, _dense(block.ff_hidden, h, True))
            h = h + ff
            mean = h.mean(-1, keepdims=True)
            var = ((h - mean) ** 2).mean(-1, keepdims=True)
            gamma, beta = (_numpy(w) for w in block.output_norm.weights)
            h = (h - mean) / np.sqrt(var + 1e-5) * gamma + beta
        pooled.append((h * m[..., None]).sum(axis=1))
    return _reference_decoder(model, pooled)


# ---------------------------------------------------------------------------
# Hand-derived parameter counts.
# ---------------------------------------------------------------------------


def _mab_params(d, heads, ff):
    """Post-LN MAB on width d: MHA (4 projections), 2 LNs, FF."""
    key_dim = d // heads
    attention = 3 * (d * heads * key_dim + heads * key_dim)  # q, k, v
    attention += heads * key_dim * d + d  # output projection
    return attention + 2 * 2 * d + (d * ff + ff) + (ff * d + d)


def _msab_params(d, heads, ff, num_sets=2):
    """K self + K(K-1) cross MABs, K merges Dense(2d -> d), K merge LNs."""
    pairs = num_sets * num_sets
    return pairs * _mab_params(d, heads, ff) + num_sets * (
        (2 * d * d + d) + 2 * d
    )


def _relation_block_params(d, relation, ff):
    """theta: Dense(2d -> r) + Dense(r -> d); 2 LNs; FF."""
    return (
        (2 * d * relation + relation)
        + (relation * d + d)
        + 2 * 2 * d
        + (d * ff + ff)
        + (ff * d + d)
    )


def _expected_params(name):
    d, heads, ff, dim, k = 4, 2, 8, DIM, 2
    projection = dim * d + d
    pma = d + _mab_params(d, heads, ff)  # seeds + MAB
    linear_decoder = k * d + 1
    if name == "multiset_transformer":
        return (
            projection + _msab_params(d, heads, ff) + k * pma + (linear_decoder)
        )
    if name == "dimension_equivariant":
        # Dense(1 -> channels); the multichannel block has MSAB's weights.
        return 2 * d + _msab_params(d, heads, ff) + k * pma + linear_decoder
    if name == "multiset_rn":
        # Four relation blocks, two merges; max pooling has no weights.
        blocks = 4 * _relation_block_params(d, 2 * d, ff)
        merges = k * ((2 * d * d + d) + 2 * d)
        return projection + blocks + merges + linear_decoder
    if name == "union_transformer":
        # Projection of [x || one-hot(k)]; one SAB; one PMA; decoder d -> 1.
        union_projection = (dim + k) * d + d
        return union_projection + _mab_params(d, heads, ff) + pma + d + 1
    if name == "single_set_deepsets":
        # One FF block (Dense, Dense, LN) per set; sum pooling.
        rff = (d * ff + ff) + (ff * d + d) + 2 * d
        return projection + k * rff + linear_decoder
    if name == "single_set_transformer":
        return (
            projection + k * (_mab_params(d, heads, ff) + pma) + linear_decoder
        )
    raise KeyError(name)


# Parametrized tests (pytest cannot parametrize unittest methods) get a
# TestCase through this fixture, for its helpers and temporary directories.
@pytest.fixture
def case():
    test = testing.TestCase()
    yield test
    test.doCleanups()


@pytest.mark.parametrize("name", MULTISET_MODEL_NAMES)
def test_every_model(case, name):
    sets, masks = _inputs()
    model = build_multiset_model(name, **TINY)
    out = _numpy(model({"sets": sets, "masks": masks}))
    assert out.shape == (3, 1)
    assert np.isfinite(out).all()  # row 1 has an all-masked set
    # get_config / from_config / registration.
    config = model.get_config()
    clone = type(model).from_config(config)
    assert clone.get_config() == config
    assert keras.saving.get_registered_name(type(model)).startswith(
        "keras_msets>"
    )
    revived = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(model)
    )
    assert type(revived) is type(model)
    assert revived.get_config() == config
    # Partial permutation invariance and padding invariance.
    case.assert_permutation_invariant(
        _call(model), sets, masks, num_draws=2, atol=1e-5
    )
    small, small_masks = _inputs(SMALL, seed=1)
    case.assert_padding_invariant(
        _call(model), small, small_masks, extra=PAD, atol=1e-5
    )


@pytest.mark.parametrize(
    "name",
    [
        "multiset_transformer",
        "dimension_equivariant",
        "multiset_rn",
        "union_transformer",
        "single_set_deepsets",
        "single_set_transformer",
    ],
)
def test_parameter_counts(case, name):
    model = build_multiset_model(name, decoder_units=[], **TINY)
    model(_inputs()[0])
    assert model.count_params() == _expected_params(name)


@pytest.mark.parametrize(
    "name",
    [
        "multiset_transformer",
        "dimension_equivariant",
        "multiset_rn",
        "union_transformer",
        "single_set_rn",
        "single_set_deepsets",
    ],
)
def test_saving(case, name):
    # The other names are these classes with other arguments (their config
    # round trip is checked in test_every_model).
    sets, masks = _inputs()
    model = build_multiset_model(name, **TINY)
    data = {"sets": sets, "masks": masks}
    model(data)
    case.run_model_saving_test(model, data, atol=1e-5)
    if name in ("multiset_transformer", "dimension_equivariant"):
        case.run_weights_roundtrip_test(model, data, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["multiset_transformer", "dimension_equivariant"]
)
def test_fit_learns_the_difference_of_means(case, name):
    sets, masks = _inputs(batch=16, seed=7)
    sets[1] = sets[1] + 0.5
    masks[1][1] = True  # no empty set: its mean is undefined
    means = [
        (x * m[..., None]).sum(1) / m.sum(1, keepdims=True)
        for x, m in zip(sets, masks, strict=True)
    ]
    target = (means[0] - means[1])[:, :1]
    model = build_multiset_model(name, latent_dim=8, num_heads=2, num_blocks=1)
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse")
    history = model.fit(
        {"sets": sets, "masks": masks},
        target,
        batch_size=16,
        epochs=3,
        verbose=0,
    ).history["loss"]
    assert np.isfinite(history).all()
    assert history[-1] < 0.8 * history[0], history


class MultiSetTransformerTest(testing.TestCase):
    # Parameters ------------------------------------------------------------

    def test_default_decoder_and_shared_encoder_counts(self):
        d, ff = 4, 8
        sets = _inputs()[0]
        model = build_multiset_model("multiset_transformer", **TINY)
        model(sets)
        # Default decoder: one hidden layer of ff_dim units (App. B).
        hidden = (2 * d * ff + ff) + (ff + 1)
        expected = _expected_params("multiset_transformer") - (2 * d + 1)
        assert model.count_params() == expected + hidden
        shared = SingleSetBaseline(share_encoder=True, decoder_units=[], **TINY)
        shared(sets)
        # One SAB and one PMA (seeds d + MAB) for both sets.
        separate = _expected_params("single_set_transformer")
        mab = _mab_params(d, 2, ff)
        assert shared.count_params() == separate - (mab + d + mab)

    def test_app_b_defaults(self):
        model = MultiSetTransformer()
        assert (model.num_blocks, model.num_heads) == (4, 4)
        assert model.resolved_latent_dim == 128
        assert model.pooling == "pma" and model.merge == "concat"
        equivariant = DimensionEquivariantMultiSetTransformer()
        assert equivariant.resolved_latent_dim == 16
        assert equivariant.dimension_equivariant
        assert not model.dimension_equivariant

    # Numerics against numpy -------------------------------------------------

    def test_multiset_transformer_matches_numpy(self):
        sets, masks = _inputs()
        model = MultiSetTransformer(
            latent_dim=4, num_heads=2, num_blocks=2, decoder_units=[3]
        )
        model(sets, masks=masks)
        _randomize(model, 3)
        self.assertAllClose(
            model(sets, masks=masks),
            _reference_multiset_transformer(model, sets, masks),
            atol=1e-4,
            rtol=1e-4,
        )

    def test_dimension_equivariant_matches_numpy(self):
        sets, masks = _inputs()
        model = build_multiset_model("dimension_equivariant", **TINY)
        model(sets, masks=masks)
        _randomize(model, 4)
        self.assertAllClose(
            model(sets, masks=masks),
            _reference_multiset_transformer(model, sets, masks),
            atol=1e-4,
            rtol=1e-4,
        )

    def test_baselines_match_numpy(self):
        sets, masks = _inputs()
        union = build_multiset_model("union_transformer", **TINY)
        union(sets, masks=masks)
        _randomize(union, 5)
        self.assertAllClose(
            union(sets, masks=masks),
            _reference_union(union, sets, masks),
            atol=1e-4,
            rtol=1e-4,
        )
        deepsets = build_multiset_model("single_set_deepsets", **TINY)
        deepsets(sets, masks=masks)
        _randomize(deepsets, 6)
        self.assertAllClose(
            deepsets(sets, masks=masks),
            _reference_deepsets(deepsets, sets, masks),
            atol=1e-4,
            rtol=1e-4,
        )

    # Set properties -------------------------------------------------------

    def test_swapping_the_sets_changes_the_output(self):
        (x, y), _ = _inputs()
        model = build_multiset_model("multiset_transformer", **TINY)
        self.assertNotAllClose(model([x, y]), model([y, x]), atol=1e-3)
        # The union without indicator cannot tell the sets apart; with it,
        # it can.
        plain = UnionTransformer(set_indicator=False, **TINY)
        self.assertAllClose(plain([x, y]), plain([y, x]), atol=1e-5)
        union = UnionTransformer(**TINY)
        self.assertNotAllClose(union([x, y]), union([y, x]), atol=1e-3)

    def test_sets_of_different_sizes_in_one_batch(self):
        # Rows 0 and 2 hold sets of 3 and 2 elements at different positions,
        # row 1 sets of 5 and 4: padded to one batch, each row must give
        # what its unpadded sets give alone (rows are repeated to keep the
        # batch size, and so the shapes, of the other tests).
        sets, _ = _inputs()
        masks = [np.ones((3, 5), bool), np.ones((3, 4), bool)]
        masks[0][0, 3:] = masks[0][2, [0, 2]] = False
        masks[1][0, 2:] = masks[1][2, [1, 3]] = False
        model = build_multiset_model("multiset_transformer", **TINY)
        batched = _numpy(model(sets, masks=masks))
        small = [
            np.stack([x[row][m[row]] for row in (0, 2, 0)])
            for x, m in zip(sets, masks, strict=True)
        ]
        self.assertAllClose(
            model(small), batched[[0, 2, 0]], atol=1e-5, rtol=1e-5
        )
        full = [x[[1, 1, 1]] for x in sets]
        self.assertAllClose(
            model(full), batched[[1, 1, 1]], atol=1e-5, rtol=1e-5
        )

    def test_mask_conventions_agree(self):
        sets, masks = _inputs()
        model = build_multiset_model("multiset_transformer", **TINY)
        expected = _numpy(model({"sets": sets, "masks": masks}))
        self.assertAllClose(model(sets, masks=masks), expected)
        self.assertAllClose(model(sets, mask=masks), expected)
        self.assertAllClose(
            model(sets, masks=[None, masks[1]], mask=masks), expected
        )
        # No masks at all: every element counts.
        ones = [np.ones(m.shape, bool) for m in masks]
        self.assertAllClose(model(sets), model(sets, masks=ones))

    def test_options(self):
        sets, masks = _inputs()
        variants = [
            {"num_inducing_points": 2, "pooling": "max"},
            {
                "weight_sharing": "symmetric",
                "pooling": "mean",
                "share_input_projection": False,
            },
        ]
        for kwargs in variants:
            model = MultiSetTransformer(**TINY, **kwargs)
            out = _numpy(model({"sets": sets, "masks": masks}))
            assert out.shape == (3, 1) and np.isfinite(out).all()
            self.assert_permutation_invariant(
                _call(model), sets, masks, num_draws=1
            )
            small, small_masks = _inputs(SMALL, seed=1)
            self.assert_padding_invariant(
                _call(model), small, small_masks, extra=PAD
            )
        induced = MultiSetTransformer(num_inducing_points=2, **TINY)
        induced(sets)
        assert isinstance(induced.blocks[0], InducedMultisetAttentionBlock)

    def test_three_sets(self):
        # A third set of the second one's size: no new shapes to compile.
        sets, masks = _inputs(sizes=(5, 4, 4))
        for name in ("multiset_transformer", "union_transformer"):
            model = build_multiset_model(name, **TINY)
            out = _numpy(model({"sets": sets, "masks": masks}))
            assert out.shape == (3, 1) and np.isfinite(out).all()
            self.assert_permutation_invariant(
                _call(model), sets, masks, num_draws=1
            )

    def test_per_set_projections_accept_different_feature_sizes(self):
        rng = np.random.default_rng(1)
        x = rng.normal(size=(3, 5, 2)).astype("float32")
        y = rng.normal(size=(3, 4, 3)).astype("float32")
        model = MultiSetTransformer(share_input_projection=False, **TINY)
        assert tuple(model([x, y]).shape) == (3, 1)
        names = {layer.name for layer in model.input_projections}
        assert names == {"input_projection_0", "input_projection_1"}

    def test_dimension_equivariant_any_d_and_permuted_dimensions(self):
        model = build_multiset_model("dimension_equivariant", **TINY)
        small, small_masks = _inputs(dim=2)
        out_small = _numpy(model(small, masks=small_masks))
        count = model.count_params()
        sets, masks = _inputs(dim=5, seed=3)
        out = _numpy(model(sets, masks=masks))
        assert model.count_params() == count  # same weights for d = 5
        assert out.shape == out_small.shape == (3, 1)
        perm = np.array([3, 0, 4, 1, 2])
        permuted = [x[..., perm] for x in sets]
        self.assertAllClose(
            model(permuted, masks=masks), out, atol=1e-5, rtol=1e-5
        )
        # A permutation of one set's coordinates only is a different input.
        mixed = [permuted[0], sets[1]]
        self.assertNotAllClose(model(mixed, masks=masks), out, atol=1e-4)

    def test_scale_output_by_dim(self):
        scaled = build_multiset_model(
            "dimension_equivariant", scale_output_by_dim=True, **TINY
        )
        plain = build_multiset_model("dimension_equivariant", **TINY)
        for d in (2, 5):
            sets, masks = _inputs(dim=d, seed=d)
            out = _numpy(scaled(sets, masks=masks))
            if d == 2:
                plain(sets, masks=masks)
                plain.set_weights(scaled.get_weights())
            expected = d * _numpy(plain(sets, masks=masks))
            self.assertAllClose(out, expected, atol=1e-6, rtol=1e-6)
            assert np.all(np.abs(expected) > 1e-3)  # a real check of d
        config = scaled.get_config()
        assert config["scale_output_by_dim"] is True
        clone = DimensionEquivariantMultiSetTransformer.from_config(config)
        assert clone.scale_output_by_dim
        data = {"sets": sets, "masks": masks}
        self.run_model_saving_test(scaled, data, atol=1e-5)

    def test_configs_from_before_the_split_still_load(self):
        # Until the dimension-equivariant model had its own class, one
        # `MultiSetTransformer` config held both, with these keys.
        sets, masks = _inputs()
        cases = [
            (build_multiset_model("multiset_transformer", **TINY), False),
            (build_multiset_model("dimension_equivariant", **TINY), True),
        ]
        for model, equivariant in cases:
            expected = _numpy(model(sets, masks=masks))
            old = dict(model.get_config())
            old.setdefault("num_inducing_points", None)
            old.setdefault("scale_output_by_dim", False)
            old["dimension_equivariant"] = equivariant
            serialized = keras.saving.serialize_keras_object(model)
            serialized["class_name"] = "MultiSetTransformer"
            serialized["registered_name"] = "keras_msets>MultiSetTransformer"
            serialized["config"] = old
            for revived in (
                MultiSetTransformer.from_config(old),
                keras.saving.deserialize_keras_object(serialized),
            ):
                assert type(revived) is type(model)
                assert revived.get_config() == model.get_config()
                revived(sets, masks=masks)
                revived.set_weights(model.get_weights())
                self.assertAllClose(
                    revived(sets, masks=masks), expected, atol=1e-6
                )

    # Argument validation ---------------------------------------------------

    def test_bad_arguments(self):
        with pytest.raises(ValueError, match="`name` must be one of"):
            build_multiset_model("transformer")
        with pytest.raises(ValueError, match="has `cross_only=True`"):
            build_multiset_model("cross_only", cross_only=False)
        with pytest.raises(
            ValueError, match="`num_blocks` must be a positive integer"
        ):
            MultiSetTransformer(num_blocks=0)
        with pytest.raises(ValueError, match="`pooling` must be one of"):
            MultiSetTransformer(pooling="median")
        with pytest.raises(ValueError, match="`merge` must be one of"):
            MultiSetTransformer(merge="mean")
        with pytest.raises(ValueError, match="`weight_sharing` must be one"):
            MultiSetTransformer(weight_sharing="all")
        with pytest.raises(ValueError, match="divisible by `num_heads`"):
            MultiSetTransformer(latent_dim=6, num_heads=4)
        # The two models have their own arguments; configs written when
        # one class held both are checked as they were then.
        with pytest.raises(ValueError, match="Unrecognized.*num_inducing"):
            DimensionEquivariantMultiSetTransformer(num_inducing_points=4)
        with pytest.raises(ValueError, match="Unrecognized.*scale_output"):
            MultiSetTransformer(scale_output_by_dim=True)
        with pytest.raises(ValueError, match="not available with"):
            MultiSetTransformer.from_config(
                {"dimension_equivariant": True, "num_inducing_points": 4}
            )
        with pytest.raises(ValueError, match="needs `dimension_equivariant"):
            MultiSetTransformer.from_config({"scale_output_by_dim": True})
        with pytest.raises(ValueError, match="`scale_output_by_dim` must be"):
            DimensionEquivariantMultiSetTransformer(scale_output_by_dim="yes")
        with pytest.raises(ValueError, match="`decoder_units` must be a list"):
            MultiSetTransformer(decoder_units=[4, 0])
        with pytest.raises(ValueError, match="`cross_only` must be a bool"):
            MultiSetTransformer(cross_only=1)
        with pytest.raises(ValueError, match="`encoder` must be one of"):
            SingleSetBaseline(encoder="cnn")
        with pytest.raises(ValueError, match="needs `encoder='transformer'`"):
            SingleSetBaseline(encoder="rff", num_inducing_points=2)
        with pytest.raises(ValueError, match="needs `encoder='relation'`"):
            SingleSetBaseline(relation_dim=3)

    def test_bad_inputs(self):
        (x, y), (mx, my) = _inputs()
        model = MultiSetTransformer(**TINY)
        with pytest.raises(ValueError, match="list of at least 2 sets"):
            model(x)
        with pytest.raises(ValueError, match="list of at least 2 sets"):
            MultiSetTransformer(**TINY)([x])
        with pytest.raises(ValueError, match="'sets'"):
            MultiSetTransformer(**TINY)({"sets": [x, y], "mask": [mx, my]})
        with pytest.raises(ValueError, match="same feature size"):
            MultiSetTransformer(**TINY)([x, np.zeros((3, 4, 5), "float32")])
        model([x, y])
        with pytest.raises(ValueError, match="Masks were given twice"):
            model({"sets": [x, y], "masks": [mx, my]}, masks=[mx, my])
        with pytest.raises(ValueError, match="one boolean mask"):
            model([x, y], masks=[mx])
        with pytest.raises(ValueError, match=r"mask of set 1 must have shape"):
            model([x, y], masks=[mx, mx])
        with pytest.raises(ValueError, match="was built for 2 sets"):
            model([x, y, y])
