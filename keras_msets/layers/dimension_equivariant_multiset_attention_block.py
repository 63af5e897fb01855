import math

import keras
from keras import ops

from keras_msets import ops as msets_ops
from keras_msets.layers._multihead_attention_block import (
    MultiheadAttentionBlock,
)
from keras_msets.layers._multihead_attention_block import check_layout
from keras_msets.layers._multihead_attention_block import zero_without_keys
from keras_msets.layers._multiset_block import AttentionMultisetBlock


def check_multichannel_shape(input_shape, name="inputs"):
    """Checks a `[batch, set_size, d, channels]` shape, `channels` known."""
    return check_layout(
        input_shape,
        name,
        ("batch", "set_size", "d", "channels"),
        hint=" (lift each coordinate to `channels` first, e.g. "
        "Dense(channels) on x[..., None])",
    )


class MultichannelMultiHeadAttention(keras.layers.Layer):
    """Multichannel multi-head attention of Sec. 3.5 (internal).

    `A = softmax(sum_i (X_{:,i} W_Q)(Y_{:,i} W_K)^T / sqrt(key_dim))` and
    `MHA(X, Y)_{:,i} = A Y_{:,i} W_V W_O`, per head, on
    `X [batch, n, d, channels]` and `Y [batch, m, d, channels]`: the
    projections act on the channel axis of each coordinate `i` with the
    same weights, and one attention matrix per head, from the logits summed
    over the `d` coordinates, mixes the elements of every coordinate. The
    weights have the shapes and names of `keras.layers.MultiHeadAttention`
    (`query`, `key`, `value`, `attention_output`), so for `d = 1` this is
    that layer. The `1 / sqrt(key_dim)` scale is Keras's (the paper writes
    no scale). Padded keys get exactly zero weight; with no valid key the
    result is 0.
    """

    def __init__(self, num_heads, key_dim, dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.dropout = dropout
        self.dropout_layer = keras.layers.Dropout(
            dropout, dtype=self.dtype_policy, name="dropout"
        )

    def _projection(self, name):
        return keras.layers.EinsumDense(
            "bndc,chk->bndhk",
            output_shape=(None, None, self.num_heads, self.key_dim),
            bias_axes="hk",
            dtype=self.dtype_policy,
            name=name,
        )

    def build(self, query_shape, value_shape):
        channels = query_shape[-1]
        self.query_dense = self._projection("query")
        self.key_dense = self._projection("key")
        self.value_dense = self._projection("value")
        self.output_dense = keras.layers.EinsumDense(
            "bndhk,hkc->bndc",
            output_shape=(None, None, channels),
            bias_axes="c",
            dtype=self.dtype_policy,
            name="attention_output",
        )
        self.query_dense.build(query_shape)
        self.key_dense.build(value_shape)
        self.value_dense.build(value_shape)
        self.output_dense.build(
            tuple(query_shape[:3]) + (self.num_heads, self.key_dim)
        )

    def call(self, query, value, value_mask=None, training=None):
        if value.shape[1] == 0:
            # No keys at all: the attention term of an all-masked set.
            return ops.zeros_like(query)
        q = self.query_dense(query) * (1.0 / math.sqrt(self.key_dim))
        k = self.key_dense(value)
        v = self.value_dense(value)
        # [batch, heads, n, m]: logits summed over the d coordinates.
        logits = ops.einsum("bndhk,bmdhk->bhnm", q, k)
        any_valid = None
        if value_mask is not None:
            value_mask = ops.cast(value_mask, "bool")
            any_valid = ops.any(value_mask, axis=1)
            logits = msets_ops.mask_logits(logits, value_mask[:, None, None, :])
        probs = ops.softmax(logits, axis=-1)
        probs = self.dropout_layer(probs, training=training)
        attended = self.output_dense(ops.einsum("bhnm,bmdhk->bndhk", probs, v))
        return zero_without_keys(attended, any_valid)

    def compute_output_shape(self, query_shape, value_shape):
        return tuple(query_shape)


class MultichannelAttentionBlock(MultiheadAttentionBlock):
    """Post-LN multichannel transformer block of Sec. 3.5 (internal).

    `H = LN(X + MHA(X, Y))`, `out = LN(H + FF(H))` on sets of multichannel
    coordinates `[batch, n, d, channels]`, where `MHA` is
    `MultichannelMultiHeadAttention` and the layer norms and
    `FF = Dense(ff_dim, relu) -> Dense(channels)` act on the channels of
    each (element, coordinate) with weights shared by all coordinates.
    `MultiheadAttentionBlock` with the multichannel attention: the same
    arguments, attribute names and weight names.
    """

    # The input contract of a pair block of `MultisetBlock`.
    check_shape = staticmethod(check_multichannel_shape)

    def make_attention(self, key_dim):
        return MultichannelMultiHeadAttention(
            self.num_heads,
            key_dim,
            dropout=self.dropout,
            dtype=self.dtype_policy,
            name="attention",
        )

    def attend(self, query, value, value_mask=None, training=None):
        return self.attention(
            query, value, value_mask=value_mask, training=training
        )


@keras.saving.register_keras_serializable(package="keras_msets")
class DimensionEquivariantMultisetAttentionBlock(AttentionMultisetBlock):
    """Multi-set attention block equivariant to the input dimensions.

    The multichannel multi-set attention block of Selby et al. (Sec. 3.5):
    the model lifts every input coordinate of every element to `channels`
    features (`[batch, n, d] -> [batch, n, d, channels]`, one projection
    shared by the coordinates), and this block treats the `d` coordinates
    like a batch axis: every projection, feedforward network and layer norm
    acts on the channels of one (element, coordinate) with weights shared
    by all coordinates, and attention has one matrix per head for all
    coordinates, from logits summed over them:
    `A = softmax(sum_{i=1}^d (X_{:,i} W_Q)(Y_{:,i} W_K)^T / sqrt(key_dim))`,
    `MHA(X, Y)_{:,i} = A Y_{:,i} W_V W_O`. Around these multichannel
    transformer blocks the multi-set structure is the one of
    `MultisetAttentionBlock` (eq. 10-11: self and cross blocks, merge `g`,
    residual layer norm, `merge`, `cross_only`, `weight_sharing` and the
    mean over the other sets when `K > 2`).

    No weight depends on `d`: the same layer accepts any number of input
    dimensions, and permuting the coordinates of every set permutes the
    outputs' coordinates the same way. After the last block the model
    max-pools over the coordinate axis (`ops.max(z, axis=2)`, giving
    `[batch, n, channels]`) and then pools each set (e.g. PMA), as in the
    paper's dimension-equivariant model; all sets of a batch must share
    `d` (there is no coordinate mask). For `d = 1` the block is
    `MultisetAttentionBlock` on `[batch, n, channels]` (same weight
    shapes and names). The logits are summed, not averaged, over the
    coordinates, as in the paper, so their scale grows with `d`.

    Padded elements (set masks `[batch, n_k]`) are replaced by zeros and
    never attended to, so they never change the valid outputs; an
    all-masked set gives attention terms of 0 onto it, so results stay
    finite.

    Args:
        num_heads: number of attention heads of every block.
        key_dim: size of each head's queries, keys and values per
            coordinate. None (the default): `channels // num_heads`, which
            must divide evenly.
        ff_dim: hidden width of the feedforward networks. None (the
            default): `2 * channels` (App. B: latent 16 and feedforward 32
            per input dimension).
        dropout, layer_norm_epsilon, merge, cross_only, weight_sharing,
            merge_activation: as in `MultisetAttentionBlock` (all but
            `dropout` and `layer_norm_epsilon` keyword-only).
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: a list of `K >= 2` sets, each `[batch, n_k, d, channels]`
            (the same `d` and `channels` for all sets).
        masks: optional list of `K` boolean masks `[batch, n_k]` (or None
            entries); `[batch, n_k, d]` masks (the same for every
            coordinate, as this layer outputs) are accepted too.
        mask, training: as in `MultisetAttentionBlock`.

    Input shape:
        A list of `K` tensors `[batch, n_k, d, channels]`; `d` may be
        unknown (None) when building.

    Output shape:
        A list of `K` tensors `[batch, n_k, d, channels]`. Each carries its
        input's mask broadcast to `[batch, n_k, d]` (Keras's convention of
        a mask over every axis but the last, so that losses and the next
        block can read it).

    Example:
    >>> x = keras.random.normal((2, 10, 3))  # [batch, n, d]
    >>> y = keras.random.normal((2, 12, 3))
    >>> lift = keras.layers.Dense(16)  # one channel -> 16, per coordinate
    >>> hx = lift(keras.ops.expand_dims(x, -1))  # [2, 10, 3, 16]
    >>> hy = lift(keras.ops.expand_dims(y, -1))
    >>> block = keras_msets.layers.DimensionEquivariantMultisetAttentionBlock(
    ...     num_heads=4)
    >>> zx, zy = block([hx, hy])
    >>> keras.ops.max(zx, axis=2).shape  # pooled over the d coordinates
    (2, 10, 16)

    References:
        - Selby et al., "Learning Functions on Multiple Sets using
          Multi-Set Transformers", UAI 2022.
        - Zaheer et al., "Deep Sets", NeurIPS 2017.
    """

    # The pair block T_kl: the multichannel transformer block.
    pair_class = MultichannelAttentionBlock
