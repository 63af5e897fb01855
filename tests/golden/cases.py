"""Golden cases: fixed inputs whose outputs every backend must reproduce.

Each case returns `(build_fn, inputs)` or `(build_fn, inputs, call_kwargs)`;
`build_fn()` returns an unbuilt layer or model and inputs come from a fixed
numpy seed. Write a new case's files with (then commit them):

    python -m keras_msets.testing.golden write NAME
    for b in tensorflow jax torch; do
        KERAS_BACKEND=$b python -m keras_msets.testing.golden write NAME --saved
    done
"""

import keras
import numpy as np

from keras_msets.testing import golden_case


@golden_case("stock_dense")
def stock_dense():
    rng = np.random.default_rng(0)
    inputs = rng.normal(size=(3, 5, 4)).astype("float32")

    def build():
        return keras.layers.Dense(6, activation="tanh", name="dense")

    return build, inputs


@golden_case("stock_attention_model")
def stock_attention_model():
    rng = np.random.default_rng(1)
    inputs = rng.normal(size=(2, 7, 8)).astype("float32")

    def build():
        x = keras.Input(shape=(7, 8), name="x")
        h = keras.layers.MultiHeadAttention(
            num_heads=2, key_dim=4, name="attention"
        )(x, x)
        h = keras.layers.LayerNormalization(name="norm")(h + x)
        pooled = keras.layers.GlobalAveragePooling1D(name="pool")(h)
        out = keras.layers.Dense(3, name="head")(pooled)
        return keras.Model(x, [out, h], name="attention_model")

    return build, inputs


def _digit_ids(seed, batch=4, length=9, alphabet=10):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, alphabet, size=(batch, length))
    lengths = rng.integers(1, length + 1, size=batch)
    ids[np.arange(length)[None, :] >= lengths[:, None]] = 0
    return ids.astype("int32")


@golden_case("complex_multiplication_pooling")
def complex_multiplication_pooling():
    from keras_msets import layers

    rng = np.random.default_rng(10)
    inputs = rng.normal(size=(3, 6, 3 * 4)).astype("float32")
    mask = rng.random((3, 6)) < 0.7

    def build():
        return layers.ComplexMultiplicationPooling(
            use_initial_weights=True, name="pooling"
        )

    return build, inputs, {"mask": mask}


@golden_case("diagonal_multiset_automaton")
def diagonal_multiset_automaton():
    from keras_msets import layers

    def build():
        return layers.DiagonalMultisetAutomaton(
            10, 5, use_initial_weights=True, name="automaton"
        )

    return build, _digit_ids(11)


@golden_case("masked_set_pooling")
def masked_set_pooling():
    from keras_msets import layers

    rng = np.random.default_rng(12)
    inputs = rng.normal(size=(4, 5, 3)).astype("float32")
    mask = rng.random((4, 5)) < 0.6

    def build():
        x = keras.Input((5, 3), name="x")
        m = keras.Input((5,), dtype="bool", name="m")
        pooled = [
            layers.MaskedSetPooling(r, name=r)(x, mask=m)
            for r in ("sum", "mean", "max", "product")
        ]
        return keras.Model([x, m], pooled, name="poolings")

    return build, [inputs, mask]


@golden_case("complex_deepsets")
def complex_deepsets():
    from keras_msets import models

    def build():
        return models.ComplexDeepSets(num_states=6, name="complex_deepsets")

    return build, _digit_ids(13)


@golden_case("deepsets")
def deepsets():
    from keras_msets import models

    def build():
        return models.DeepSets(embedding_dim=8, hidden_units=4, name="deepsets")

    return build, _digit_ids(14)


@golden_case("automaton_position_encoding_full_matrix")
def automaton_position_encoding_full_matrix():
    from keras_msets import layers

    rng = np.random.default_rng(15)
    inputs = rng.normal(size=(2, 6, 8)).astype("float32")

    def build():
        return layers.AutomatonPositionEncoding(
            "full_matrix_learned", name="position_encoding"
        )

    return build, inputs, {"start_index": np.array(3, dtype="int32")}


@golden_case("automaton_position_encoding_diagonal_polar_learned")
def automaton_position_encoding_diagonal_polar_learned():
    from keras_msets import layers

    rng = np.random.default_rng(16)
    inputs = rng.normal(size=(2, 7, 8)).astype("float32")

    def build():
        return layers.AutomatonPositionEncoding(
            "diagonal_polar_learned",
            learn_modulus=True,
            name="position_encoding",
        )

    return build, inputs


@golden_case("automaton_rotary_embedding")
def automaton_rotary_embedding():
    from keras_msets import layers

    rng = np.random.default_rng(17)
    inputs = rng.normal(size=(2, 9, 3, 8)).astype("float32")

    def build():
        return layers.AutomatonRotaryEmbedding(
            learn_angles=True,
            learn_modulus=True,
            name="rotary",
        )

    return build, inputs, {"start_index": 1000}


@golden_case("complex_order_embedding")
def complex_order_embedding():
    from keras_msets import layers

    def build():
        return layers.ComplexOrderEmbedding(
            10,
            4,
            frequency_sharing="word",
            use_initial_phase=True,
            mask_zero=True,
            name="complex_order_embedding",
        )

    return build, _digit_ids(17)


@golden_case("complex_dense")
def complex_dense():
    from keras_msets import layers

    rng = np.random.default_rng(18)
    inputs = rng.normal(size=(3, 5, 2 * 4)).astype("float32")

    def build():
        return layers.ComplexDense(3, activation="tanh", name="complex_dense")

    return build, inputs


@golden_case("set_attention_block")
def set_attention_block():
    from keras_msets import layers

    rng = np.random.default_rng(17)
    inputs = rng.normal(size=(3, 6, 8)).astype("float32")
    mask = rng.random((3, 6)) < 0.7
    mask[:, 0] = True

    def build():
        return layers.SetAttentionBlock(
            num_heads=2, ff_dim=12, name="set_attention_block"
        )

    return build, inputs, {"mask": mask}


@golden_case("induced_set_attention_block")
def induced_set_attention_block():
    from keras_msets import layers

    rng = np.random.default_rng(18)
    inputs = rng.normal(size=(3, 7, 8)).astype("float32")
    mask = rng.random((3, 7)) < 0.7
    mask[:, 0] = True

    def build():
        return layers.InducedSetAttentionBlock(
            num_inducing_points=3, num_heads=2, name="isab"
        )

    return build, inputs, {"mask": mask}


@golden_case("pooling_by_multihead_attention")
def pooling_by_multihead_attention():
    from keras_msets import layers

    rng = np.random.default_rng(19)
    inputs = rng.normal(size=(4, 6, 8)).astype("float32")
    mask = rng.random((4, 6)) < 0.7
    mask[:, 0] = True
    mask[3] = False  # an all-masked set

    def build():
        return layers.PoolingByMultiheadAttention(
            num_seeds=2, num_heads=4, name="pma"
        )

    return build, inputs, {"mask": mask}


@golden_case("fusion_encoder_network")
def fusion_encoder_network():
    from keras_msets.models.fen.fusion_encoder_network import (
        FusionEncoderNetwork,
    )

    rng = np.random.default_rng(40)
    inputs = rng.integers(0, 3, size=(4, 6)).astype("int32")

    def build():
        return FusionEncoderNetwork(
            sequence_length=6,
            vocabulary_size=3,
            output_dim=2,
            encoding_dim=4,
            token_encoder_units=[5],
            fusion_encoder_units=[6],
            decoder_units=[7],
            sharing="level",
            name="fen",
        )

    return build, inputs


@golden_case("complex_conv1d")
def complex_conv1d():
    from keras_msets.layers.complex_conv1d import ComplexConv1D

    rng = np.random.default_rng(41)
    inputs = rng.normal(size=(3, 8, 2 * 3)).astype("float32")
    mask = np.arange(8)[None, :] < np.array([[8], [5], [2]])

    def build():
        return ComplexConv1D(
            4, 3, padding="same", activation="tanh", name="complex_conv1d"
        )

    return build, inputs, {"mask": mask}


@golden_case("complex_lstm")
def complex_lstm():
    from keras_msets.layers.complex_lstm import ComplexLSTM

    rng = np.random.default_rng(42)
    inputs = rng.normal(size=(3, 6, 2 * 3)).astype("float32")
    mask = rng.random((3, 6)) < 0.7
    mask[:, 0] = True

    def build():
        return ComplexLSTM(4, return_sequences=True, name="complex_lstm")

    return build, inputs, {"mask": mask}


@golden_case("complex_multi_head_attention")
def complex_multi_head_attention():
    from keras_msets.layers.complex_multi_head_attention import (
        ComplexMultiHeadAttention,
    )

    rng = np.random.default_rng(20)
    query = rng.normal(size=(3, 4, 2 * 3)).astype("float32")
    value = rng.normal(size=(3, 5, 2 * 4)).astype("float32")
    value_mask = rng.random((3, 5)) < 0.7
    value_mask[:, 0] = True
    value_mask[2] = False  # a fully masked key set

    def build():
        return ComplexMultiHeadAttention(
            num_heads=2, key_dim=3, value_dim=2, name="attention"
        )

    return build, query, {"value": value, "value_mask": value_mask}


@golden_case("complex_transformer_encoder")
def complex_transformer_encoder():
    from keras_msets.layers.complex_transformer_encoder import (
        ComplexTransformerEncoder,
    )

    rng = np.random.default_rng(21)
    inputs = rng.normal(size=(3, 5, 2 * 4)).astype("float32")
    padding_mask = rng.random((3, 5)) < 0.7
    padding_mask[:, 0] = True

    def build():
        return ComplexTransformerEncoder(
            intermediate_dim=6, num_heads=2, name="encoder"
        )

    return build, inputs, {"padding_mask": padding_mask}


def _multiset_inputs(seed, sizes, dim, coords=None):
    rng = np.random.default_rng(seed)
    sets, masks = [], []
    for n in sizes:
        shape = (3, n, dim) if coords is None else (3, n, coords, dim)
        sets.append(rng.normal(size=shape).astype("float32"))
        mask = rng.random((3, n)) < 0.7
        mask[:, :2] = True
        masks.append(mask)
    masks[-1][2] = False  # an all-masked set
    return sets, masks


@golden_case("multiset_attention_block")
def multiset_attention_block():
    from keras_msets.layers.multiset_attention_block import (
        MultisetAttentionBlock,
    )

    sets, masks = _multiset_inputs(20, (6, 4, 5), 8)

    def build():
        return MultisetAttentionBlock(num_heads=2, ff_dim=12, name="msab")

    return build, sets, {"masks": masks}


@golden_case("induced_multiset_attention_block")
def induced_multiset_attention_block():
    from keras_msets.layers.induced_multiset_attention_block import (
        InducedMultisetAttentionBlock,
    )

    sets, masks = _multiset_inputs(21, (7, 5), 8)

    def build():
        return InducedMultisetAttentionBlock(
            num_inducing_points=3,
            num_heads=2,
            weight_sharing="cross",
            name="imsab",
        )

    return build, sets, {"masks": masks}


@golden_case("multiset_relation_block")
def multiset_relation_block():
    from keras_msets.layers.multiset_relation_block import MultisetRelationBlock

    sets, masks = _multiset_inputs(22, (6, 4), 8)

    def build():
        return MultisetRelationBlock(relation_dim=10, name="msrb")

    return build, sets, {"masks": masks}


@golden_case("dimension_equivariant_multiset_attention_block")
def dimension_equivariant_multiset_attention_block():
    from keras_msets.layers.dimension_equivariant_multiset_attention_block import (  # noqa: E501
        DimensionEquivariantMultisetAttentionBlock,
    )

    sets, masks = _multiset_inputs(23, (5, 4), 8, coords=3)

    def build():
        return DimensionEquivariantMultisetAttentionBlock(
            num_heads=2, name="demsab"
        )

    return build, sets, {"masks": masks}


@golden_case("multiset_transformer")
def multiset_transformer():
    from keras_msets.models.mst.multiset_transformer import MultiSetTransformer

    sets, masks = _multiset_inputs(30, (6, 4), 3)

    def build():
        return MultiSetTransformer(
            latent_dim=8, num_blocks=2, num_heads=2, name="mst"
        )

    return build, {"sets": sets, "masks": masks}


@golden_case("multiset_transformer_equivariant")
def multiset_transformer_equivariant():
    from keras_msets.models.mst.dimension_equivariant_multiset_transformer import (  # noqa: E501
        DimensionEquivariantMultiSetTransformer,
    )

    # [batch, n, d] with d = 3 input dimensions.
    sets, masks = _multiset_inputs(31, (5, 4), 3)

    def build():
        return DimensionEquivariantMultiSetTransformer(
            latent_dim=8, num_blocks=2, num_heads=2, name="mst_equivariant"
        )

    return build, {"sets": sets, "masks": masks}
