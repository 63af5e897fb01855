"""Public keras_msets layers."""

from keras_msets.layers.automaton_position_encoding import (
    AutomatonPositionEncoding,
)
from keras_msets.layers.automaton_rotary_embedding import (
    AutomatonRotaryEmbedding,
)
from keras_msets.layers.complex_conv1d import ComplexConv1D
from keras_msets.layers.complex_dense import ComplexDense
from keras_msets.layers.complex_lstm import ComplexLSTM
from keras_msets.layers.complex_lstm import ComplexLSTMCell
from keras_msets.layers.complex_multi_head_attention import (
    ComplexMultiHeadAttention,
)
from keras_msets.layers.complex_multiplication_pooling import (
    ComplexMultiplicationPooling,
)
from keras_msets.layers.complex_order_embedding import ComplexOrderEmbedding
from keras_msets.layers.complex_readout import ComplexReadout
from keras_msets.layers.complex_transformer_encoder import (
    ComplexTransformerEncoder,
)
from keras_msets.layers.diagonal_multiset_automaton import (
    DiagonalMultisetAutomaton,
)
from keras_msets.layers.dimension_equivariant_multiset_attention_block import (  # noqa: E501
    DimensionEquivariantMultisetAttentionBlock,
)
from keras_msets.layers.grouped_mlp import GroupedMLP
from keras_msets.layers.induced_multiset_attention_block import (
    InducedMultisetAttentionBlock,
)
from keras_msets.layers.induced_set_attention_block import (
    InducedSetAttentionBlock,
)
from keras_msets.layers.masked_set_pooling import MaskedSetPooling
from keras_msets.layers.multiset_attention_block import MultisetAttentionBlock
from keras_msets.layers.multiset_relation_block import MultisetRelationBlock
from keras_msets.layers.pooling_by_multihead_attention import (
    PoolingByMultiheadAttention,
)
from keras_msets.layers.position_embeddings import EMBEDDING_VARIANTS
from keras_msets.layers.position_embeddings import ComplexVanillaEmbedding
from keras_msets.layers.position_embeddings import WordPositionEmbedding
from keras_msets.layers.position_embeddings import make_text_embedding
from keras_msets.layers.set_attention_block import SetAttentionBlock

__all__ = [
    "EMBEDDING_VARIANTS",
    "AutomatonPositionEncoding",
    "AutomatonRotaryEmbedding",
    "ComplexConv1D",
    "ComplexDense",
    "ComplexLSTM",
    "ComplexLSTMCell",
    "ComplexMultiHeadAttention",
    "ComplexMultiplicationPooling",
    "ComplexOrderEmbedding",
    "ComplexVanillaEmbedding",
    "ComplexReadout",
    "ComplexTransformerEncoder",
    "DiagonalMultisetAutomaton",
    "DimensionEquivariantMultisetAttentionBlock",
    "GroupedMLP",
    "InducedMultisetAttentionBlock",
    "InducedSetAttentionBlock",
    "MaskedSetPooling",
    "MultisetAttentionBlock",
    "MultisetRelationBlock",
    "PoolingByMultiheadAttention",
    "SetAttentionBlock",
    "WordPositionEmbedding",
    "make_text_embedding",
]
