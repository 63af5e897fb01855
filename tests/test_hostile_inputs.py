"""Bad and extreme inputs to every public layer, model and estimator.

Each property asserts "finite and correct, or a clear `ValueError` /
`TypeError`" (one that names the argument: a backquoted name or
"Received"); never NaN for finite inputs, never a backend-internal error,
never a wrong shape. Hypothesis draws the inputs (derandomized, a few
examples per test, small shapes) so the module runs on every backend in
well under a minute.

What "correct" means here, cheaply and independently of the layer:
- padding: values under the mask (NaN, inf, 1e30) give the result of
  zeros there, on the valid elements;
- permutations: a permuted set gives the same (invariant layers) or the
  permuted (equivariant layers) result;
- empty sets: a set of size 0 gives the result of a fully masked set;
- batch 0: an output of batch 0 and the right shape;
- precision: a `mixed_float16` / `mixed_bfloat16` layer with the float32
  layer's weights gives its result within a stated tolerance;
- token ids: the result of an id model is either for valid ids or a clear
  error.

NaN or inf in a *valid* element of a float input: the layers and models
of this package do not inspect float values (that would cost a device
sync on every call), so they propagate NaN, but only within the set that
holds it: the other rows of the batch keep their finite, unchanged
results. The estimators work on numpy arrays and refuse NaN and inf with
a clear error.
"""

import keras
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from keras_msets import estimators
from keras_msets import layers
from keras_msets import models
from keras_msets import zoo
from keras_msets.testing.threads import run_in_threads
from tests.hostile_strategies import BATCH
from tests.hostile_strategies import FAST
from tests.hostile_strategies import FEW
from tests.hostile_strategies import MULTI_BATCH
from tests.hostile_strategies import PAD_VALUES
from tests.hostile_strategies import SCALES
from tests.hostile_strategies import SECOND_SIZE
from tests.hostile_strategies import SIZE
from tests.hostile_strategies import assert_clear_error
from tests.hostile_strategies import assert_finite
from tests.hostile_strategies import bad_ids
from tests.hostile_strategies import masked_sets
from tests.hostile_strategies import numpy
from tests.hostile_strategies import permutations

# ---------------------------------------------------------------------------
# Set layers: one float input [batch, set_size, ...] and a boolean mask.
# `kind` is "equivariant" (one output per element) or "invariant" (one
# output per set); `dims` is the input shape after [batch, set_size].
# ---------------------------------------------------------------------------


def _self_attention(layer, x, mask=None):
    return layer(x, x, query_mask=mask, value_mask=mask)


SET_LAYERS = {
    "SetAttentionBlock": (
        lambda **kw: layers.SetAttentionBlock(num_heads=2, **kw),
        (4,),
        "equivariant",
        None,
    ),
    "InducedSetAttentionBlock": (
        lambda **kw: layers.InducedSetAttentionBlock(
            num_inducing_points=2, num_heads=2, **kw
        ),
        (4,),
        "equivariant",
        None,
    ),
    "PoolingByMultiheadAttention": (
        lambda **kw: layers.PoolingByMultiheadAttention(num_heads=2, **kw),
        (4,),
        "invariant",
        None,
    ),
    "MaskedSetPooling-sum": (
        lambda **kw: layers.MaskedSetPooling("sum", **kw),
        (3,),
        "invariant",
        None,
    ),
    "MaskedSetPooling-mean": (
        lambda **kw: layers.MaskedSetPooling("mean", **kw),
        (3,),
        "invariant",
        None,
    ),
    "MaskedSetPooling-max": (
        lambda **kw: layers.MaskedSetPooling("max", **kw),
        (3,),
        "invariant",
        None,
    ),
    "ComplexMultiplicationPooling": (
        lambda **kw: layers.ComplexMultiplicationPooling(**kw),
        (6,),
        "invariant",
        None,
    ),
    "ComplexDense": (
        lambda **kw: layers.ComplexDense(3, **kw),
        (4,),
        "equivariant",
        None,
    ),
    "ComplexReadout": (
        lambda **kw: layers.ComplexReadout("modulus", **kw),
        (4,),
        "equivariant",
        None,
    ),
    "ComplexTransformerEncoder": (
        lambda **kw: layers.ComplexTransformerEncoder(
            intermediate_dim=4, num_heads=2, **kw
        ),
        (4,),
        "equivariant",
        None,
    ),
    "ComplexMultiHeadAttention": (
        lambda **kw: layers.ComplexMultiHeadAttention(
            num_heads=2, key_dim=2, **kw
        ),
        (4,),
        "equivariant",
        _self_attention,
    ),
}

# Sequence layers: order matters (no permutation property), padding and
# precision properties as for sets.
SEQUENCE_LAYERS = {
    "ComplexConv1D": (
        lambda **kw: layers.ComplexConv1D(2, 3, padding="same", **kw),
        (4,),
        "equivariant",
        None,
    ),
    "ComplexLSTM": (
        lambda **kw: layers.ComplexLSTM(3, return_sequences=False, **kw),
        (4,),
        "invariant",
        None,
    ),
    "AutomatonPositionEncoding": (
        lambda **kw: layers.AutomatonPositionEncoding(
            "diagonal_polar_fixed", **kw
        ),
        (4,),
        "equivariant",
        "no_mask",
    ),
}

FLOAT_LAYERS = {**SET_LAYERS, **SEQUENCE_LAYERS}
_BUILT = {}


def _layer(name, dtype=None):
    """The layer `name`, built once per module (float32) for speed, on
    the properties' set shape."""
    factory, dims, _, _ = FLOAT_LAYERS[name]
    if dtype is not None:
        return factory(dtype=dtype)
    if name not in _BUILT:
        keras.utils.set_random_seed(0)
        layer = factory()
        _call(name, layer, np.zeros((BATCH, SIZE, *dims), "float32"))
        _BUILT[name] = layer
    return _BUILT[name]


def _call(name, layer, x, mask=None):
    call = FLOAT_LAYERS[name][3]
    if call == "no_mask":
        if mask is not None:
            x = np.where(mask.reshape(mask.shape + (1,) * (x.ndim - 2)), x, 0)
        return numpy(layer(x))
    if call is not None:
        return numpy(call(layer, x, mask))
    if mask is None:
        return numpy(layer(x))
    return numpy(layer(x, mask=mask))


def _valid(out, mask, kind):
    """The outputs that padding must not change."""
    if kind == "equivariant":
        return out[mask]
    return out[mask.any(axis=1)]


def _broadcast(mask, x):
    return mask.reshape(mask.shape + (1,) * (x.ndim - 2))


@pytest.mark.parametrize("name", sorted(FLOAT_LAYERS))
@FAST
@given(data=st.data(), pad=PAD_VALUES)
def test_padding_never_leaks_and_all_masked_sets_are_finite(name, data, pad):
    """Padded NaN/inf/1e30 gives the result of zero padding on the valid
    elements; every output (all-masked rows included) is finite."""
    _, dims, kind, _ = FLOAT_LAYERS[name]
    x, mask = data.draw(masked_sets(dims))
    layer = _layer(name)
    clean = _call(name, layer, np.where(_broadcast(mask, x), x, 0), mask)
    dirty = _call(name, layer, np.where(_broadcast(mask, x), x, pad), mask)
    np.testing.assert_allclose(
        _valid(dirty, mask, kind), _valid(clean, mask, kind), atol=1e-5
    )
    assert_finite(_valid(dirty, mask, kind), "valid outputs")
    if kind == "invariant":
        assert_finite(dirty, "outputs of all-masked sets")


@pytest.mark.parametrize("name", sorted(SET_LAYERS))
@FAST
@given(data=st.data())
def test_permuted_sets_give_the_same_or_permuted_result(name, data):
    _, dims, kind, _ = SET_LAYERS[name]
    x, mask = data.draw(masked_sets(dims))
    order = data.draw(permutations(x.shape[1]))
    layer = _layer(name)
    out = _call(name, layer, x, mask)
    permuted = _call(name, layer, x[:, order], mask[:, order])
    if kind == "equivariant":
        out = out[:, order]
    np.testing.assert_allclose(
        _valid(permuted, mask[:, order], kind),
        _valid(out, mask[:, order], kind),
        atol=1e-4,
        rtol=1e-4,
    )


@pytest.mark.parametrize("name", sorted(SET_LAYERS))
@pytest.mark.parametrize("batch", [0, BATCH])
def test_empty_sets_and_batch_zero(name, batch):
    """A set of size 0 gives the result of a fully masked set (finite, the
    right shape); batch 0 gives an output of batch 0."""
    _, dims, kind, _ = SET_LAYERS[name]
    layer = _layer(name)
    empty = _call(name, layer, np.zeros((batch, 0, *dims), "float32"))
    x = np.ones((batch, SIZE, *dims), "float32")
    masked = _call(name, layer, x, np.zeros((batch, SIZE), bool))
    assert_finite(empty)
    if kind == "invariant":
        assert empty.shape == masked.shape
        np.testing.assert_allclose(empty, masked, atol=1e-6)
    else:
        assert empty.shape == (batch, 0) + masked.shape[2:]
    if batch == 0:
        assert masked.shape[0] == 0


@pytest.mark.parametrize("name", sorted(FLOAT_LAYERS))
@FAST
@given(data=st.data(), scale=SCALES)
def test_huge_and_tiny_magnitudes_stay_finite(name, data, scale):
    _, dims, _, _ = FLOAT_LAYERS[name]
    x, _ = data.draw(masked_sets(dims))
    out = _call(name, _layer(name), x * np.float32(scale))
    assert_finite(out)


@pytest.mark.parametrize("name", sorted(FLOAT_LAYERS))
@FAST
@given(data=st.data())
def test_nan_in_one_set_stays_in_that_set(name, data):
    """NaN in a valid element propagates (documented above), but only
    within its own row of the batch."""
    _, dims, _, _ = FLOAT_LAYERS[name]
    x, _ = data.draw(masked_sets(dims))
    row = data.draw(st.integers(0, BATCH - 1))
    position = data.draw(st.integers(0, x.shape[1] - 1))
    layer = _layer(name)
    clean = _call(name, layer, x)
    x[row, position] = np.nan
    poisoned = _call(name, layer, x)
    others = [i for i in range(BATCH) if i != row]
    np.testing.assert_allclose(poisoned[others], clean[others], atol=1e-5)


# MaskedSetPooling takes any rank >= 2 ([batch, set_size, ...]).
@pytest.mark.parametrize(
    "name", sorted(n for n in FLOAT_LAYERS if "MaskedSetPooling" not in n)
)
@pytest.mark.parametrize("rank", [2, 5])
def test_wrong_rank_is_a_clear_error(name, rank):
    _, dims, _, _ = FLOAT_LAYERS[name]
    shape = (2, 3, *dims)
    shape = shape[:rank] if rank < len(shape) else shape + (1,) * (rank - 3)
    layer = _layer(name)
    assert_clear_error(_call, name, layer, np.ones(shape, "float32"))


@pytest.mark.parametrize("name", sorted(SET_LAYERS))
def test_mask_of_the_wrong_shape_or_dtype_is_a_clear_error(name):
    _, dims, _, _ = SET_LAYERS[name]
    layer = _layer(name)
    x = np.ones((2, 3, *dims), "float32")
    assert_clear_error(_call, name, layer, x, np.ones((2, 4), bool))
    assert_clear_error(_call, name, layer, x, np.array([["a", "b", "c"]] * 2))


@pytest.mark.parametrize("name", sorted(FLOAT_LAYERS))
def test_integer_features_give_the_float_result(name):
    _, dims, _, _ = FLOAT_LAYERS[name]
    x = np.arange(BATCH * SIZE * int(np.prod(dims)))
    x = x.reshape(BATCH, SIZE, *dims) % 5
    layer = _layer(name)
    np.testing.assert_allclose(
        _call(name, layer, x.astype("int32")),
        _call(name, layer, x.astype("float32")),
        atol=1e-6,
    )


@pytest.mark.parametrize("name", sorted(FLOAT_LAYERS))
@pytest.mark.parametrize(
    "policy, atol", [("mixed_float16", 2e-2), ("mixed_bfloat16", 8e-2)]
)
def test_mixed_precision_matches_float32(name, policy, atol):
    """The same weights under a mixed policy: finite, within `atol` (plus
    the same relative tolerance) of the float32 result."""
    _, dims, _, _ = FLOAT_LAYERS[name]
    x, mask = _fixed_sets(dims)
    reference = _layer(name)
    expected = _call(name, reference, x, mask)
    layer = _layer(name, dtype=policy)
    _call(name, layer, np.zeros_like(x), mask)
    layer.set_weights(reference.get_weights())
    got = _call(name, layer, x, mask)
    assert_finite(got)
    np.testing.assert_allclose(got, expected, atol=atol, rtol=atol)


def _fixed_sets(dims):
    rng = np.random.default_rng(7)
    x = rng.normal(size=(BATCH, SIZE, *dims)).astype("float32")
    mask = np.array([[1, 1, 0, 1, 1], [1, 0, 0, 0, 0], [0, 1, 1, 1, 0]], bool)
    return x, mask


# ---------------------------------------------------------------------------
# Multi-set layers: a list of K sets [batch, n_k, dim] and `masks=`.
# ---------------------------------------------------------------------------

MULTISET_LAYERS = {
    "MultisetAttentionBlock": (
        lambda: layers.MultisetAttentionBlock(num_heads=2),
        (4,),
    ),
    "InducedMultisetAttentionBlock": (
        lambda: layers.InducedMultisetAttentionBlock(
            num_inducing_points=2, num_heads=2
        ),
        (4,),
    ),
    "MultisetRelationBlock": (lambda: layers.MultisetRelationBlock(), (4,)),
    "DimensionEquivariantMultisetAttentionBlock": (
        lambda: layers.DimensionEquivariantMultisetAttentionBlock(num_heads=2),
        (3, 2),
    ),
}


def _multiset_layer(name):
    key = "multiset:" + name
    if key not in _BUILT:
        keras.utils.set_random_seed(0)
        factory, dims = MULTISET_LAYERS[name]
        layer = factory()
        shapes = [(MULTI_BATCH, SIZE), (MULTI_BATCH, SECOND_SIZE)]
        layer(
            [np.zeros((*s, *dims), "float32") for s in shapes],
            masks=[np.ones(s, bool) for s in shapes],
        )
        _BUILT[key] = layer
    return _BUILT[key]


@pytest.mark.parametrize("name", sorted(MULTISET_LAYERS))
@FEW
@given(data=st.data(), pad=PAD_VALUES)
def test_multiset_padding_permutation_and_all_masked(name, data, pad):
    dims = MULTISET_LAYERS[name][1]
    layer = _multiset_layer(name)
    x, m = data.draw(masked_sets(dims, batches=(MULTI_BATCH,)))
    y, n = data.draw(
        masked_sets(dims, batches=(MULTI_BATCH,), sizes=(SECOND_SIZE,))
    )
    order = data.draw(permutations(x.shape[1]))
    clean = numpy(
        layer(
            [
                np.where(_broadcast(m, x), x, 0),
                np.where(_broadcast(n, y), y, 0),
            ],
            masks=[m, n],
        )
    )
    dirty = numpy(
        layer(
            [
                np.where(_broadcast(m, x), x, pad),
                np.where(_broadcast(n, y), y, pad),
            ],
            masks=[m, n],
        )
    )
    permuted = numpy(layer([x[:, order], y], masks=[m[:, order], n]))
    for k, valid in enumerate([m, n]):
        assert_finite(dirty[k][valid], f"set {k}")
        np.testing.assert_allclose(dirty[k][valid], clean[k][valid], atol=1e-5)
    reference = numpy(layer([x, y], masks=[m, n]))
    np.testing.assert_allclose(
        permuted[0][m[:, order]],
        reference[0][:, order][m[:, order]],
        atol=1e-4,
    )
    np.testing.assert_allclose(permuted[1][n], reference[1][n], atol=1e-4)


@pytest.mark.parametrize("name", sorted(MULTISET_LAYERS))
def test_multiset_empty_set_and_wrong_inputs(name):
    dims = MULTISET_LAYERS[name][1]
    layer = _multiset_layer(name)
    b = MULTI_BATCH
    full = np.ones((b, SECOND_SIZE, *dims), "float32")
    out = numpy(layer([np.zeros((b, 0, *dims), "float32"), full]))
    assert out[0].shape[:2] == (b, 0)
    masked = numpy(
        layer(
            [np.ones((b, SIZE, *dims), "float32"), full],
            masks=[np.zeros((b, SIZE), bool), np.ones((b, SECOND_SIZE), bool)],
        )
    )
    assert_finite(out)
    np.testing.assert_allclose(out[1], masked[1], atol=1e-5)
    assert_clear_error(layer, [full])
    assert_clear_error(layer, [full, np.ones((b, SECOND_SIZE), "float32")])
    assert_clear_error(
        layer, [full, full], masks=[np.ones((b, SECOND_SIZE + 1), bool)] * 2
    )


# ---------------------------------------------------------------------------
# Token-id layers and models: ids out of range and float ids are refused.
# ---------------------------------------------------------------------------

VOCAB = 10

ID_LAYERS = {
    "DiagonalMultisetAutomaton": lambda: layers.DiagonalMultisetAutomaton(
        alphabet_size=VOCAB, num_states=3
    ),
    "ComplexOrderEmbedding": lambda: layers.ComplexOrderEmbedding(VOCAB, 4),
    "ComplexVanillaEmbedding": lambda: layers.ComplexVanillaEmbedding(VOCAB, 4),
    "WordPositionEmbedding": lambda: layers.WordPositionEmbedding(
        VOCAB, 4, position="learned", sequence_length=4
    ),
    "GroupedMLP": lambda: layers.GroupedMLP([3], vocabulary_size=VOCAB),
}

ID_MODELS = {
    "DeepSets": lambda: models.DeepSets(
        vocabulary_size=VOCAB, embedding_dim=4, hidden_units=3
    ),
    "ComplexDeepSets": lambda: models.ComplexDeepSets(
        vocabulary_size=VOCAB, num_states=4
    ),
    "RecurrentBaseline": lambda: models.RecurrentBaseline(
        "gru", vocabulary_size=VOCAB, embedding_dim=4, units=3
    ),
    "FusionEncoderNetwork": lambda: models.FusionEncoderNetwork(
        sequence_length=4,
        vocabulary_size=VOCAB,
        encoding_dim=4,
        token_encoder_units=[5],
        fusion_encoder_units=[6],
        decoder_units=[7],
    ),
    "TextClassifier": lambda: models.TextClassifier(
        "fasttext", "none", VOCAB, 4, 2, embedding_dim=4
    ),
}


def _id_object(name):
    key = "ids:" + name
    if key not in _BUILT:
        keras.utils.set_random_seed(0)
        factory = {**ID_LAYERS, **ID_MODELS}[name]
        obj = factory()
        obj(np.ones((2, 4), "int32"))
        _BUILT[key] = obj
    return _BUILT[key]


@pytest.mark.parametrize("name", sorted({**ID_LAYERS, **ID_MODELS}))
@FAST
@given(data=st.data())
def test_out_of_range_ids_are_a_clear_error(name, data):
    ids = data.draw(bad_ids(VOCAB))
    obj = _id_object(name)
    error = assert_clear_error(obj, ids)
    assert isinstance(error, ValueError)
    if name in ID_MODELS:
        assert_clear_error(obj.predict, ids, verbose=0)


@pytest.mark.parametrize("name", sorted({**ID_LAYERS, **ID_MODELS}))
@pytest.mark.parametrize("dtype", ["float32", "float16", "bool"])
def test_non_integer_ids_are_a_clear_type_error(name, dtype):
    ids = np.array([[3.9, 1.0, 2.0, 1.0]]).astype(dtype)
    error = assert_clear_error(_id_object(name), ids)
    assert isinstance(error, TypeError)


@pytest.mark.parametrize("name", sorted(ID_MODELS))
@pytest.mark.parametrize("shape", [(0, 4), (2, 4)])
def test_batch_zero_and_all_padding_ids(name, shape):
    """Batch 0 gives a batch-0 output; sequences of padding only (id 0,
    where 0 is a valid id or the padding id) give finite outputs."""
    obj = _id_object(name)
    ids = np.zeros(shape, "int32")
    if name == "FusionEncoderNetwork":
        ids = np.ones(shape, "int32")  # the FEN's padding id is not an input
    out = numpy(obj(ids))
    assert out.shape[0] == shape[0]
    assert_finite(out)


# Order-free id encoders: a long sequence and its reverse give the same
# result (a reference that needs no model of the layer).
LONG_ID_OBJECTS = ["DiagonalMultisetAutomaton", "ComplexDeepSets", "DeepSets"]


@pytest.mark.parametrize("name", LONG_ID_OBJECTS)
@FEW
@given(data=st.data())
def test_long_sequences_are_finite_and_order_free(name, data):
    length = 10_000
    seed = data.draw(st.integers(0, 2**16))
    ids = np.random.default_rng(seed).integers(1, VOCAB, (1, length))
    ids = ids.astype("int32")
    obj = _id_object(name)
    out = numpy(obj(ids))
    assert_finite(out)
    reversed_out = numpy(obj(ids[:, ::-1].copy()))
    np.testing.assert_allclose(reversed_out, out, atol=1e-3, rtol=1e-3)


@pytest.mark.parametrize("name", sorted(ID_LAYERS))
@pytest.mark.parametrize(
    "policy, atol", [("mixed_float16", 2e-2), ("mixed_bfloat16", 8e-2)]
)
def test_id_layers_under_mixed_precision_match_float32(name, policy, atol):
    ids = (np.arange(8) % (VOCAB - 1) + 1).reshape(2, 4).astype("int32")
    reference = _id_object(name)
    expected = numpy(reference(ids))
    keras.utils.set_random_seed(0)
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        layer = ID_LAYERS[name]()
        layer(ids)
    finally:
        keras.config.set_dtype_policy(previous)
    layer.set_weights(reference.get_weights())
    got = numpy(layer(ids))
    assert_finite(got)
    np.testing.assert_allclose(got, expected, atol=atol, rtol=atol)


# ---------------------------------------------------------------------------
# Multi-set models: dict inputs {"sets": [...], "masks": [...]}.
# ---------------------------------------------------------------------------

TINY = {"latent_dim": 4, "num_heads": 2, "num_blocks": 1}
SET_MODELS = {
    "MultiSetTransformer": lambda: models.MultiSetTransformer(**TINY),
    "DimensionEquivariantMultiSetTransformer": lambda: (
        models.DimensionEquivariantMultiSetTransformer(**TINY)
    ),
    "union_transformer": lambda: models.build_multiset_model(
        "union_transformer", **TINY
    ),
    "multiset_rn": lambda: models.build_multiset_model(
        "multiset_rn", latent_dim=4, num_blocks=1
    ),
}


def _set_model(name):
    key = "model:" + name
    if key not in _BUILT:
        keras.utils.set_random_seed(0)
        model = SET_MODELS[name]()
        model(
            [
                np.zeros((MULTI_BATCH, SIZE, 2), "float32"),
                np.zeros((MULTI_BATCH, SECOND_SIZE, 2), "float32"),
            ]
        )
        _BUILT[key] = model
    return _BUILT[key]


@pytest.mark.parametrize("name", sorted(SET_MODELS))
@FEW
@given(data=st.data(), pad=PAD_VALUES, scale=SCALES)
def test_set_models_padding_permutation_and_magnitudes(name, data, pad, scale):
    """Padding never leaks, permuting a set leaves the output unchanged,
    huge and tiny magnitudes give finite outputs."""
    model = _set_model(name)
    x, m = data.draw(masked_sets((2,), batches=(MULTI_BATCH,)))
    y, n = data.draw(
        masked_sets((2,), batches=(MULTI_BATCH,), sizes=(SECOND_SIZE,))
    )
    order = data.draw(permutations(x.shape[1]))
    clean = numpy(model({"sets": [x, y], "masks": [m, n]}))
    dirty = numpy(
        model(
            {
                "sets": [np.where(m[..., None], x, pad), y],
                "masks": [m, n],
            }
        )
    )
    permuted = numpy(
        model({"sets": [x[:, order], y], "masks": [m[:, order], n]})
    )
    assert_finite(dirty)
    np.testing.assert_allclose(dirty, clean, atol=1e-5)
    np.testing.assert_allclose(permuted, clean, atol=1e-4, rtol=1e-4)
    scaled = numpy(model([x * np.float32(scale), y * np.float32(scale)]))
    assert_finite(scaled)


@pytest.mark.parametrize("name", sorted(SET_MODELS))
def test_set_models_empty_sets_batch_zero_and_bad_inputs(name):
    model = _set_model(name)
    b = MULTI_BATCH
    full = np.ones((b, SECOND_SIZE, 2), "float32")
    empty = numpy(model([np.zeros((b, 0, 2), "float32"), full]))
    masked = numpy(
        model(
            {
                "sets": [np.ones((b, SIZE, 2), "float32"), full],
                "masks": [
                    np.zeros((b, SIZE), bool),
                    np.ones((b, SECOND_SIZE), bool),
                ],
            }
        )
    )
    assert_finite(empty)
    np.testing.assert_allclose(empty, masked, atol=1e-5)
    out = numpy(model([np.zeros((0, SECOND_SIZE, 2), "float32")] * 2))
    assert out.shape[0] == 0
    assert_clear_error(model, [full])
    assert_clear_error(model, [full, np.ones((b, SECOND_SIZE), "float32")])
    assert_clear_error(model, [full, np.ones((b, SECOND_SIZE, 3), "float32")])
    assert_clear_error(
        model,
        {
            "sets": [full, full],
            "masks": [np.ones((b, SECOND_SIZE + 1), bool)] * 2,
        },
    )


# ---------------------------------------------------------------------------
# Estimators: numpy arrays of samples in, a float out.
# ---------------------------------------------------------------------------

ESTIMATORS = {
    "kl_divergence": estimators.kl_divergence,
    "mutual_information": estimators.mutual_information,
    "same_distribution_probability": estimators.same_distribution_probability,
    "knn_kl_divergence": estimators.knn_kl_divergence,
    "ksg_mutual_information": estimators.ksg_mutual_information,
}


def _samples(n, d, seed):
    return np.random.default_rng(seed).normal(size=(n, d))


@st.composite
def bad_sample_pairs(draw):
    """A pair `(x, y)` of sample arrays with one defect."""
    n = 25
    x, y = _samples(n, 8, 0), _samples(n, 8, 1)
    defect = draw(
        st.sampled_from(
            ["nan", "inf", "complex", "rank1", "rank3", "dims", "few", "str"]
        )
    )
    i, j = draw(st.integers(0, n - 1)), draw(st.integers(0, 7))
    if defect in ("nan", "inf"):
        x[i, j] = np.nan if defect == "nan" else -np.inf
    elif defect == "complex":
        x = x + 1j
    elif defect == "rank1":
        x = x[:, 0]
    elif defect == "rank3":
        x = x[None]
    elif defect == "dims":
        y = y[:, :5]
    elif defect == "few":
        x = x[:1]
    else:
        x = x.astype(object)
        x[i, j] = "a"
    if draw(st.booleans()):
        x, y = y, x
    return x, y


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@FAST
@given(pair=bad_sample_pairs())
def test_estimators_refuse_bad_samples_clearly(name, pair):
    x, y = pair
    valid_paired = (
        x.ndim == y.ndim == 2
        and x.shape[0] == y.shape[0]
        and x.dtype.kind == y.dtype.kind == "f"
        and np.isfinite(x).all()
        and np.isfinite(y).all()
    )
    if name.endswith("mutual_information") and valid_paired:
        # `dim x != dim y` is a valid mutual-information input.
        return
    if (
        name == "knn_kl_divergence"
        and x.ndim == y.ndim == 2
        and x.shape[1] == y.shape[1]
        and x.dtype.kind == y.dtype.kind == "f"
        and np.isfinite(x).all()
        and np.isfinite(y).all()
        and len(x) >= 2
    ):
        # One point of `Q` is enough for k = 1 (m >= k, its docstring).
        return
    assert_clear_error(ESTIMATORS[name], *pair)


def test_estimators_from_four_threads_give_the_serial_answers():
    """`kl_divergence` in threads is tested in tests/estimators; here the
    other two pretrained estimators (each thread on its own data, through
    a tiny model so the test stays fast) and the two classical ones."""
    model = models.build_multiset_model("dimension_equivariant", **TINY)
    model([np.zeros((1, 4, 3), "float32")] * 2)
    pairs = [(_samples(25, 8, s), _samples(25, 8, s + 10)) for s in range(4)]
    for fn in (
        estimators.same_distribution_probability,
        estimators.mutual_information,
    ):
        serial = [fn(x, y, model=model) for x, y in pairs]
        parallel = run_in_threads(lambda i, fn=fn: fn(*pairs[i], model=model))
        np.testing.assert_allclose(parallel, serial, rtol=1e-6)
    for fn in (estimators.knn_kl_divergence, estimators.ksg_mutual_information):
        serial = [fn(x, y) for x, y in pairs]
        parallel = run_in_threads(lambda i, fn=fn: fn(*pairs[i]))
        np.testing.assert_allclose(parallel, serial, rtol=1e-12)


def test_zoo_load_of_different_presets_from_four_threads():
    """Two presets loaded at once, two threads each, give the serial
    predictions (the loader's cache and registry under contention)."""
    names = ["complex_deepsets_units_digit", "deepsets_units_digit"]
    ids = np.array([[3, 4, 5, 0]], "int32")
    serial = {n: zoo.load(n).predict(ids, verbose=0) for n in names}
    parallel = run_in_threads(
        lambda i: zoo.load(names[i % 2]).predict(ids, verbose=0)
    )
    for i, out in enumerate(parallel):
        np.testing.assert_allclose(out, serial[names[i % 2]], rtol=1e-6)
