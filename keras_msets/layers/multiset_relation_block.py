import keras
from keras import ops

from keras_msets import ops as msets_ops
from keras_msets.layers._feed_forward_block import FeedForwardBlock
from keras_msets.layers._multihead_attention_block import check_set_shape
from keras_msets.layers._multiset_block import MultisetBlock
from keras_msets.ops.products import matmul_last_axis
from keras_msets.utils.validation import check_positive_int


class RelationBlock(FeedForwardBlock):
    """Post-LN relation network block `RB(X, Y)` (internal).

    The transformer block of eq. 2 with the attention replaced by a
    relation network (Santoro et al.; Selby et al., eq. 4 and 6) pooled by
    a max: `R(X, Y)_i = max_j theta([x_i || y_j])` over the valid `y_j`,
    with `theta = Dense(relation_dim, relu) -> Dense(dim)` on each pair;
    then `H = LN(X + R(X, Y))` and `RB(X, Y) = LN(H + FF(H))` with
    `FF = Dense(ff_dim, relu) -> Dense(dim)`. The first layer of `theta`
    is split, `[x || y] W = x W_x + y W_y`, so it costs `O((n + m) d h)`
    instead of `O(n m d h)`; the pair tensor `[batch, n, m, relation_dim]`
    remains (Table 5: the RN variant is the most memory hungry).

    Padded keys never win the max; with no valid key, `R` is defined as 0
    (so `H = LN(X)`), finite.
    """

    # The input contract of a pair block of `MultisetBlock`.
    check_shape = staticmethod(check_set_shape)

    def __init__(
        self, relation_dim=None, ff_dim=None, layer_norm_epsilon=1e-5, **kwargs
    ):
        relation_dim = check_positive_int(
            "relation_dim", relation_dim, allow_none=True
        )
        super().__init__(
            ff_dim=ff_dim, layer_norm_epsilon=layer_norm_epsilon, **kwargs
        )
        self.relation_dim = relation_dim

    def build(self, query_shape, value_shape):
        query_shape = check_set_shape(query_shape, "query")
        value_shape = check_set_shape(value_shape, "value")
        dim = query_shape[-1]
        relation_dim = self.relation_dim or 2 * dim
        # theta's first layer on [x || y]: rows [:dim] read x, [dim:] read y.
        self.pair_kernel = self.add_weight(
            name="pair_kernel",
            shape=(2 * dim, relation_dim),
            initializer="glorot_uniform",
        )
        self.pair_bias = self.add_weight(
            name="pair_bias", shape=(relation_dim,), initializer="zeros"
        )
        self.relation_output = keras.layers.Dense(
            dim, dtype=self.dtype_policy, name="relation_output"
        )
        self.relation_norm = self.make_norm("relation_norm")
        self.make_feed_forward(dim)
        pair_shape = query_shape[:2] + (value_shape[1], relation_dim)
        self.relation_output.build(pair_shape)
        self.relation_norm.build(query_shape)
        self.build_feed_forward(query_shape)

    def call(self, query, value, value_mask=None, training=None):
        if 0 in tuple(query.shape)[:2]:
            # No query at all: the output is empty, and so is every pair.
            return self.feed_forward(self.relation_norm(query))
        dim = query.shape[-1]
        from_query = matmul_last_axis(query, self.pair_kernel[:dim])
        from_value = matmul_last_axis(value, self.pair_kernel[dim:])
        # [batch, n, m, relation_dim]: theta's hidden layer for every pair.
        pairs = ops.relu(
            ops.expand_dims(from_query, 2)
            + ops.expand_dims(from_value, 1)
            + self.pair_bias
        )
        pairs = self.relation_output(pairs)
        pair_mask = None
        if value_mask is not None:
            pair_mask = ops.logical_and(
                ops.expand_dims(ops.ones_like(query[..., 0], "bool"), -1),
                ops.expand_dims(ops.cast(value_mask, "bool"), 1),
            )
        relation = msets_ops.masked_max(pairs, pair_mask, axis=2)
        return self.feed_forward(self.relation_norm(query + relation))

    def compute_output_shape(self, query_shape, value_shape):
        return tuple(query_shape)

    def get_config(self):
        config = super().get_config()
        config["relation_dim"] = self.relation_dim
        return config


@keras.saving.register_keras_serializable(package="keras_msets")
class MultisetRelationBlock(MultisetBlock):
    """Multi-set relation network block (the Multi-Set RN of Selby et al.).

    The paper's RN variant (Sec. 5): the multi-set attention block of eq.
    10-11 with its transformer blocks replaced by relation network blocks,
    "with max pooling operations for both Lambda and Gamma". Each ordered
    pair of sets gets a pairwise encoder `theta_kl` (eq. 4, 6) on every
    pair `(x_i, y_j)`, max-pooled over the other set's elements (Lambda):
    `R_kl(X_k, X_l)_i = max_j theta_kl([x_i || y_j])`, inside the post-LN
    block of eq. 2 (`H = LN(X_k + R_kl)`, `T_kl = LN(H + FF(H))`), and the
    results are merged as in `MultisetAttentionBlock`:
    `Z_k = LN(X_k + g([T_kk || mean_{l != k} T_kl]))`. The other pooling,
    Gamma, is the model's final pooling over each set (a max for this
    variant, e.g. `keras_msets.ops.masked_max`); it is not part of the
    block.

    Masked pairs are excluded from the max (padded elements never win),
    and padded elements are replaced by zeros first, so they never change
    the valid outputs. With no valid element in set `l`, `R_kl` is defined
    as 0, so results stay finite. Cost is `O(n_k n_l relation_dim d)` per
    pair of sets (Table 5): keep sets small.

    Args:
        relation_dim: hidden width of the pairwise encoders `theta`. None
            (the default): `2 * dim`.
        ff_dim: hidden width of the blocks' feedforward networks. None (the
            default): `2 * dim`.
        layer_norm_epsilon: epsilon of every layer norm. Defaults to `1e-5`.
        merge, cross_only, weight_sharing: keyword-only, as in
            `MultisetAttentionBlock`.
        merge_activation: keyword-only, the activation of the merge `g`.
            Defaults to `"relu"` (as in the paper and in the authors' RN
            code).
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs, masks, mask: as in `MultisetAttentionBlock`.

    Input shape:
        A list of `K` tensors `[batch, n_k, dim]`.

    Output shape:
        A list of `K` tensors `[batch, n_k, dim]`, with the inputs' masks.

    Example:
    >>> x = keras.random.normal((2, 5, 8))
    >>> y = keras.random.normal((2, 6, 8))
    >>> block = keras_msets.layers.MultisetRelationBlock()
    >>> [z.shape for z in block([x, y])]
    [(2, 5, 8), (2, 6, 8)]

    References:
        - Selby et al., "Learning Functions on Multiple Sets using
          Multi-Set Transformers", UAI 2022.
        - Santoro et al., "A simple neural network module for relational
          reasoning", NeurIPS 2017.
    """

    pair_arguments = ("relation_dim", "ff_dim")

    def __init__(
        self, relation_dim=None, ff_dim=None, layer_norm_epsilon=1e-5, **kwargs
    ):
        # The pair block T_kl: the relation-network block.
        pair_block = RelationBlock(
            relation_dim=relation_dim,
            ff_dim=ff_dim,
            layer_norm_epsilon=layer_norm_epsilon,
        )
        super().__init__(
            pair_block, layer_norm_epsilon=layer_norm_epsilon, **kwargs
        )
