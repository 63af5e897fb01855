import math

import keras
from keras import ops

from keras_msets import ops as msets_ops
from keras_msets.layers._feed_forward_block import FeedForwardBlock
from keras_msets.layers._multihead_attention_block import BLOCK_ARGUMENTS
from keras_msets.layers._multihead_attention_block import block_arguments
from keras_msets.layers._multiset_block import MultisetBlock
from keras_msets.utils.validation import check_positive_int
from keras_msets.utils.validation import check_rate


def check_multichannel_shape(input_shape, name="inputs"):
    """Checks a `[batch, set_size, d, channels]` shape, `channels` known."""
    input_shape = tuple(input_shape)
    if len(input_shape) != 4 or input_shape[-1] is None:
        raise ValueError(
            f"`{name}` must have shape [batch, set_size, d, channels] with "
            f"a known `channels` (lift each coordinate to `channels` first, "
            f"e.g. Dense(channels) on x[..., None]). Received: "
            f"{name}.shape={input_shape}"
        )
    return input_shape


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
        if any_valid is not None:
            attended = ops.where(
                any_valid[:, None, None, None],
                attended,
                ops.zeros_like(attended),
            )
        return attended

    def compute_output_shape(self, query_shape, value_shape):
        return tuple(query_shape)


class MultichannelAttentionBlock(FeedForwardBlock):
    """Post-LN multichannel transformer block of Sec. 3.5 (internal).

    `H = LN(X + MHA(X, Y))`, `out = LN(H + FF(H))` on sets of multichannel
    coordinates `[batch, n, d, channels]`, where `MHA` is
    `MultichannelMultiHeadAttention` and the layer norms and
    `FF = Dense(ff_dim, relu) -> Dense(channels)` act on the channels of
    each (element, coordinate) with weights shared by all coordinates. The
    attribute names mirror `MultiheadAttentionBlock`.
    """

    # The input contract of a pair block of `MultisetBlock`.
    check_shape = staticmethod(check_multichannel_shape)

    def __init__(
        self,
        num_heads,
        key_dim=None,
        ff_dim=None,
        dropout=0.0,
        layer_norm_epsilon=1e-5,
        **kwargs,
    ):
        num_heads = check_positive_int("num_heads", num_heads)
        super().__init__(
            ff_dim=ff_dim, layer_norm_epsilon=layer_norm_epsilon, **kwargs
        )
        self.num_heads = num_heads
        self.key_dim = check_positive_int("key_dim", key_dim, allow_none=True)
        self.dropout = check_rate("dropout", dropout)

    def build(self, query_shape, value_shape):
        query_shape = check_multichannel_shape(query_shape, "query")
        value_shape = check_multichannel_shape(value_shape, "value")
        channels = query_shape[-1]
        key_dim = self.key_dim
        if key_dim is None:
            if channels % self.num_heads:
                raise ValueError(
                    "With `key_dim=None` the number of channels must be "
                    f"divisible by `num_heads`. Received: channels="
                    f"{channels}, num_heads={self.num_heads}"
                )
            key_dim = channels // self.num_heads
        self.attention = MultichannelMultiHeadAttention(
            self.num_heads,
            key_dim,
            dropout=self.dropout,
            dtype=self.dtype_policy,
            name="attention",
        )
        self.attention_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon,
            dtype=self.dtype_policy,
            name="attention_norm",
        )
        self.make_feed_forward(channels)
        self.attention.build(query_shape, value_shape)
        self.attention_norm.build(query_shape)
        self.build_feed_forward(query_shape)

    def call(self, query, value, value_mask=None, training=None):
        attended = self.attention(
            query, value, value_mask=value_mask, training=training
        )
        return self.feed_forward(self.attention_norm(query + attended))

    def compute_output_shape(self, query_shape, value_shape):
        return tuple(query_shape)

    def get_config(self):
        config = super().get_config()
        config.update(block_arguments(self))
        return config


@keras.saving.register_keras_serializable(package="keras_msets")
class DimensionEquivariantMultisetAttentionBlock(MultisetBlock):
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
        dropout: dropout rate on the attention probabilities. Defaults to 0.
        layer_norm_epsilon: epsilon of every layer norm. Defaults to `1e-5`.
        merge: `"concat"` (the default) or `"sum"` (Sum-Merge).
        cross_only: if True, drops the self blocks (Cross-Only).
        weight_sharing: `"none"` (the default), `"cross"` or `"symmetric"`,
            as in `MultisetAttentionBlock`.
        merge_activation: activation of the merge `g`. Defaults to
            `"relu"`.
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: a list of `K >= 2` sets, each `[batch, n_k, d, channels]`
            (the same `d` and `channels` for all sets).
        masks: optional list of `K` boolean masks `[batch, n_k]` (or None
            entries); `[batch, n_k, d]` masks (the same for every
            coordinate, as this layer outputs) are accepted too.
        mask: the same under Keras's name, filled from the inputs' Keras
            masks; an entry of `masks` that is not None wins. Masks given
            as `masks=` are not attached to the outputs: pass them to
            the next block too.
        training: whether dropout is active.

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

    def __init__(
        self,
        num_heads,
        key_dim=None,
        ff_dim=None,
        dropout=0.0,
        layer_norm_epsilon=1e-5,
        merge="concat",
        cross_only=False,
        weight_sharing="none",
        merge_activation="relu",
        **kwargs,
    ):
        # The pair block T_kl: the multichannel transformer block.
        pair_block = MultichannelAttentionBlock(
            num_heads=num_heads,
            key_dim=key_dim,
            ff_dim=ff_dim,
            dropout=dropout,
            layer_norm_epsilon=layer_norm_epsilon,
        )
        super().__init__(
            pair_block,
            merge=merge,
            cross_only=cross_only,
            weight_sharing=weight_sharing,
            merge_activation=merge_activation,
            layer_norm_epsilon=layer_norm_epsilon,
            **kwargs,
        )
        for name in BLOCK_ARGUMENTS:
            setattr(self, name, getattr(pair_block, name))

    def get_config(self):
        config = super().get_config()
        config.update(block_arguments(self))
        return config
