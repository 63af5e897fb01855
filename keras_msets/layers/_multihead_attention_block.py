"""The multihead attention block (MAB) shared by the set attention layers.

Private: `SetAttentionBlock`, `InducedSetAttentionBlock` and
`PoolingByMultiheadAttention` each own one or two of these blocks, and the
multi-set blocks use it as their pair block; its attribute names
(`attention`, `attention_norm`, `ff_hidden`, `ff_output`, `output_norm`)
key the weight files and are frozen.
"""

import keras
from keras import ops

from keras_msets import ops as msets_ops
from keras_msets.layers._feed_forward_block import FeedForwardBlock
from keras_msets.layers._feed_forward_block import apply_norm
from keras_msets.layers._feed_forward_block import as_compute_dtype
from keras_msets.layers._feed_forward_block import writes_out
from keras_msets.layers._set_multi_head_attention import SetMultiHeadAttention

# `as_features`, `check_features_argument` and `check_mask_argument` live in
# `keras_msets.ops.checks` and are imported from here by the set layers.
from keras_msets.ops.checks import as_features  # noqa: F401
from keras_msets.ops.checks import check_features_argument  # noqa: F401
from keras_msets.ops.checks import check_mask
from keras_msets.ops.checks import check_mask_argument  # noqa: F401
from keras_msets.utils.validation import check_positive_int
from keras_msets.utils.validation import check_rate


def check_layout(input_shape, name, axes, hint=""):
    """Checks a shape with the axes named `axes`, the last one known."""
    input_shape = tuple(input_shape)
    if len(input_shape) != len(axes) or input_shape[-1] is None:
        raise ValueError(
            f"`{name}` must have shape [{', '.join(axes)}] with a known "
            f"`{axes[-1]}`{hint}. Received: {name}.shape={input_shape}"
        )
    return input_shape


def check_set_shape(input_shape, name="inputs"):
    """Checks a `[batch, set_size, dim]` shape with a known `dim`."""
    return check_layout(input_shape, name, ("batch", "set_size", "dim"))


def set_mask(name, mask, x):
    """Checks a mask of the set `x [batch, n, ...]`; returns it as bool.

    The mask is `[batch, n]`, or covers more leading axes of `x` (Keras's
    mask over every axis but the last).
    """
    if mask is None:
        return None
    rank = len(mask.shape)
    shape = tuple(x.shape)[: min(max(rank, 2), len(x.shape) - 1)]
    return check_mask(name, mask, shape)


def repeat_for_batch(weight, x):
    """`weight [m, dim]` repeated for every set of `x`: `[batch, m, dim]`.

    Read from `x`'s batch size only, so an empty set (`n = 0`) still gets
    its `m` vectors.
    """
    weight = ops.cast(weight, x.dtype)
    return ops.broadcast_to(
        ops.expand_dims(weight, 0), (ops.shape(x)[0],) + tuple(weight.shape)
    )


def zero_padding(x, mask):
    """Replaces the padded elements of `x [batch, n, ...]` with zeros.

    Padded values (even `inf` or `NaN`) then never reach any arithmetic.
    Returns `(x, mask)` with `mask` as a boolean `[batch, n]` tensor (or
    None).
    """
    if mask is None:
        return x, None
    full_mask = msets_ops.expand_mask(mask, x)
    x = ops.where(full_mask, x, ops.zeros_like(x))
    mask = full_mask
    while len(mask.shape) > 2:
        mask = mask[..., 0]
    return x, mask


def zero_without_keys(attended, any_valid):
    """`attended [batch, ...]` with 0 for the sets whose `any_valid` is False.

    `any_valid` is a boolean `[batch]` tensor (or None: every set has a
    key).
    """
    if any_valid is None:
        return attended
    any_valid = ops.reshape(any_valid, (-1,) + (1,) * (len(attended.shape) - 1))
    return ops.where(any_valid, attended, ops.zeros_like(attended))


def run_block(block, query, value, value_mask=None, training=None):
    """`block(query, value, value_mask=..., training=...)` inside a call.

    A `MultiheadAttentionBlock` that writes out its sub-layers' arithmetic
    (`writes_out`) runs its `call` directly: it is built, holds no mask
    and shares its owner's dtype policy, so `Layer.__call__` would only
    add its cost. Any other pair block is called as a layer.
    """
    if isinstance(block, MultiheadAttentionBlock) and writes_out(block):
        return block.call(
            as_compute_dtype(block, query),
            as_compute_dtype(block, value),
            value_mask=value_mask,
            training=training,
        )
    return block(query, value, value_mask=value_mask, training=training)


BLOCK_ARGUMENTS = (
    "num_heads",
    "key_dim",
    "ff_dim",
    "dropout",
    "layer_norm_epsilon",
)


def block_arguments(layer):
    """The attention-block arguments held by `layer`, as a config dict."""
    return {name: getattr(layer, name) for name in BLOCK_ARGUMENTS}


@keras.saving.register_keras_serializable(package="keras_msets")
class MultiheadAttentionBlock(FeedForwardBlock):
    """Post-LN multihead attention block `MAB(X, Y)` (private).

    `H = LN(X + Multihead(X, Y, Y))`, `MAB(X, Y) = LN(H + FF(H))`, with
    `FF = Dense(ff_dim, relu) -> Dense(dim)` applied to each element and
    `dim` the feature size of the queries `X` (Selby et al., eq. 2; Lee et
    al., eq. 6-7). Padded keys (`value_mask` False) get exactly zero
    attention. When every key of a set is padded, the attention term is
    defined as 0, so `H = LN(X)`: finite, and independent of the padded
    values (Keras would otherwise attend uniformly to the padding, or give
    `NaN` through torch's fused attention).

    Args:
        num_heads: number of attention heads.
        key_dim: size of each head's queries and keys (and values). None:
            `dim // num_heads`, which must then divide evenly.
        ff_dim: hidden width of FF. None: `2 * dim` (App. B of Selby et
            al. uses a feedforward width twice the latent width).
        dropout: dropout rate on the attention probabilities.
        layer_norm_epsilon: epsilon of both layer norms (1e-5, PyTorch's
            default, as in the reference code).
        **kwargs: base layer keyword arguments.

    Call arguments:
        query: `[batch, n_q, dim]`.
        value: `[batch, n_k, dim_k]`, the keys and values.
        value_mask: optional boolean `[batch, n_k]`, True for real keys.
        training: whether dropout is active.
    """

    # The input contract of a pair block of `MultisetBlock`.
    check_shape = staticmethod(check_set_shape)

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
        # Sub-layers are created in build(): their widths depend on `dim`.

    def _key_dim(self, dim):
        if self.key_dim is not None:
            return self.key_dim
        if dim % self.num_heads:
            raise ValueError(
                "With `key_dim=None` the feature size (the last axis) must "
                f"be divisible by `num_heads`. Received: dim={dim}, "
                f"num_heads={self.num_heads}"
            )
        return dim // self.num_heads

    def make_attention(self, key_dim):
        """The unbuilt attention layer `Multihead(X, Y, Y)`.

        `SetMultiHeadAttention`: `keras.layers.MultiHeadAttention`'s
        weights and results, its kernel chosen by shape (fused
        `keras.ops.dot_product_attention`, or matmul + softmax where that
        is faster on torch).
        """
        return SetMultiHeadAttention(
            num_heads=self.num_heads,
            key_dim=key_dim,
            dropout=self.dropout,
            dtype=self.dtype_policy,
            name="attention",
        )

    def build(self, query_shape, value_shape):
        query_shape = self.check_shape(query_shape, "query")
        value_shape = self.check_shape(value_shape, "value")
        self.attention = self.make_attention(self._key_dim(query_shape[-1]))
        self.attention_norm = self.make_norm("attention_norm")
        self.make_feed_forward(query_shape[-1])
        self.attention.build(query_shape, value_shape)
        self.attention_norm.build(query_shape)
        self.build_feed_forward(query_shape)

    def attend(self, query, value, value_mask=None, training=None):
        """The attention term `Multihead(X, Y, Y)`, 0 for a set with no key."""
        if value.shape[1] == 0 or 0 in tuple(query.shape[:2]):
            # No keys at all: the attention term of an all-masked set. No
            # queries (or batch 0): an empty result, of the same shape
            # (TensorFlow's einsum refuses some empty operands).
            return ops.zeros_like(query)
        attention_mask = None
        any_valid = None
        if value_mask is not None:
            value_mask = ops.cast(value_mask, "bool")
            any_valid = ops.any(value_mask, axis=1)
            # An all-masked set attends to everything (then the result is
            # replaced by 0 below), so no softmax row is ever fully masked.
            value_mask = ops.logical_or(
                value_mask, ops.logical_not(any_valid[:, None])
            )
            # A key mask `[batch, 1, n_k]`, broadcast over the queries.
            attention_mask = ops.expand_dims(value_mask, 1)
        attended = self.attention.attend(
            query, value, attention_mask=attention_mask, training=training
        )
        return zero_without_keys(attended, any_valid)

    def call(self, query, value, value_mask=None, training=None):
        attended = self.attend(
            query, value, value_mask=value_mask, training=training
        )
        hidden = query + attended
        if writes_out(self.attention_norm):
            hidden = apply_norm(self.attention_norm, hidden)
        else:
            hidden = self.attention_norm(hidden)
        return self.feed_forward(hidden)

    def compute_output_shape(self, query_shape, value_shape):
        return tuple(query_shape)

    def get_config(self):
        config = super().get_config()
        config.update(block_arguments(self))
        return config
