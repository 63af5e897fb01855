import keras

from keras_msets.layers._multihead_attention_block import BLOCK_ARGUMENTS
from keras_msets.layers._multihead_attention_block import (
    MultiheadAttentionBlock,
)
from keras_msets.layers._multihead_attention_block import block_arguments
from keras_msets.layers._multihead_attention_block import repeat_for_batch
from keras_msets.layers._multiset_block import MultisetBlock
from keras_msets.utils.validation import check_positive_int


@keras.saving.register_keras_serializable(package="keras_msets")
class InducedMultisetAttentionBlock(MultisetBlock):
    """Multi-set attention block through inducing points: linear in set size.

    The multi-set attention block of Selby et al. (eq. 10-11) with every
    attention onto a set routed through `m` learned inducing points, as in
    Lee et al.'s ISAB. Each set `X_l` is first summarised by its own
    inducing points `I_l [m, dim]`, `H_l = MAB(I_l, X_l)` (`m` vectors), and
    each pair encoder then attends to that summary instead of the set:
    `T_kl = MAB(X_k, H_l)`. The self term `T_kk = MAB(X_k, MAB(I_k, X_k))`
    is exactly ISAB, and the merge is the one of `MultisetAttentionBlock`:
    `Z_k = LN(X_k + g([T_kk || mean_{l != k} T_kl]))`. The paper notes
    that its blocks cost `O((sum_k n_k)^2 d)` and leaves linear-time
    variants to future work (Sec. 5.4); here the cost is
    `O(K m sum_k n_k d)`.

    Design: the summary `H_l` describes set `l` whatever set asks, so it is
    computed once per set and shared by all `K` pair encoders that read set
    `l` (`K` summaries instead of `K^2`); the query-specific part is the
    second block `MAB(X_k, H_l)`, one per ordered pair. Each set has its own
    inducing points and summary block, except with
    `weight_sharing="symmetric"`, where all sets share one (as they share
    the self block, the cross block and the merge). Partial permutation
    equivariance holds exactly: `H_l` does not depend on the order of `X_l`.

    Padded elements are replaced by zeros and never enter `MAB(I_l, X_l)`,
    so they never change the valid outputs; outputs at padded positions
    are finite and not meaningful. For an all-masked set the attention term
    of `MAB(I_l, X_l)` is defined as 0, so `H_l` depends on `I_l` only.

    Args:
        num_inducing_points: number `m` of inducing points per set.
        num_heads: number of attention heads of every block.
        key_dim: size of each head's queries, keys and values. None (the
            default): `dim // num_heads`, which must divide evenly.
        ff_dim: hidden width of the blocks' feedforward networks. None (the
            default): `2 * dim`.
        dropout: dropout rate on the attention probabilities. Defaults to 0.
        layer_norm_epsilon: epsilon of every layer norm. Defaults to `1e-5`.
        merge: `"concat"` (the default) or `"sum"` (Sum-Merge).
        cross_only: if True, drops the self terms (Cross-Only). The
            summaries of every set are still computed (other sets read
            them).
        weight_sharing: `"none"` (the default), `"cross"` or `"symmetric"`,
            as in `MultisetAttentionBlock`.
        merge_activation: activation of the merge `g`. Defaults to
            `"relu"`.
        inducing_points_initializer: initializer of the inducing points.
            Defaults to `"glorot_uniform"`.
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: a list of `K >= 2` sets, each `[batch, n_k, dim]`.
        masks: optional list of `K` boolean masks `[batch, n_k]` (or None
            entries).
        mask: the same under Keras's name, filled from the inputs' Keras
            masks; an entry of `masks` that is not None wins. Masks given
            as `masks=` are not attached to the outputs: pass them to
            the next block too.
        training: whether dropout is active.

    Input shape:
        A list of `K` tensors `[batch, n_k, dim]`.

    Output shape:
        A list of `K` tensors `[batch, n_k, dim]`, with the inputs' masks.

    Example:
    >>> x = keras.random.normal((2, 50, 16))
    >>> y = keras.random.normal((2, 70, 16))
    >>> block = keras_msets.layers.InducedMultisetAttentionBlock(
    ...     8, num_heads=4)
    >>> [z.shape for z in block([x, y])]
    [(2, 50, 16), (2, 70, 16)]

    References:
        - Selby et al., "Learning Functions on Multiple Sets using
          Multi-Set Transformers", UAI 2022.
        - Lee et al., "Set Transformer: A Framework for Attention-based
          Permutation-Invariant Neural Networks", ICML 2019.
    """

    def __init__(
        self,
        num_inducing_points,
        num_heads,
        key_dim=None,
        ff_dim=None,
        dropout=0.0,
        layer_norm_epsilon=1e-5,
        merge="concat",
        cross_only=False,
        weight_sharing="none",
        merge_activation="relu",
        inducing_points_initializer="glorot_uniform",
        **kwargs,
    ):
        num_inducing_points = check_positive_int(
            "num_inducing_points", num_inducing_points
        )
        # The pair block T_kl = MAB(X_k, H_l) and the summary block
        # H_l = MAB(I_l, X_l) are both copies of this block.
        pair_block = MultiheadAttentionBlock(
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
        self.num_inducing_points = num_inducing_points
        for name in BLOCK_ARGUMENTS:
            setattr(self, name, getattr(pair_block, name))
        self.inducing_points_initializer = keras.initializers.get(
            inducing_points_initializer
        )

    def _summary_index(self, j):
        return 0 if self.weight_sharing == "symmetric" else j

    def build(self, input_shape):
        shapes = self._check_shapes(input_shape)
        m = self.num_inducing_points
        summary_shapes = [(s[0], m, s[-1]) for s in shapes]
        # The pair blocks read the summaries H_l, not the sets.
        self.build_blocks(shapes, summary_shapes)
        shared = self.weight_sharing == "symmetric"
        suffixes = [""] if shared else [f"_{j}" for j in range(len(shapes))]
        self.inducing_blocks = []
        self.inducing_points = []
        for j, suffix in enumerate(suffixes):
            self.inducing_points.append(
                self.add_weight(
                    name=f"inducing_points{suffix}",
                    shape=(m, shapes[j][-1]),
                    initializer=self.inducing_points_initializer,
                )
            )
            block = self.make_pair_block(f"inducing_block{suffix}")
            block.build(summary_shapes[j], shapes[j])
            self.inducing_blocks.append(block)

    def call(self, inputs, masks=None, mask=None, training=None):
        sets, set_masks = self.prepare_sets(inputs, masks, mask)
        summaries = []
        for j, (x, set_mask) in enumerate(zip(sets, set_masks, strict=True)):
            index = self._summary_index(j)
            # [batch, m, dim]: the inducing points, once per set.
            inducing = repeat_for_batch(self.inducing_points[index], x)
            summaries.append(
                self.inducing_blocks[index](
                    inducing, x, value_mask=set_mask, training=training
                )
            )
        # The summaries have no padding: no value masks.
        return self.merge_pairs(
            sets, summaries, [None] * len(sets), training=training
        )

    def get_config(self):
        config = super().get_config()
        config.update(block_arguments(self))
        config.update(
            {
                "num_inducing_points": self.num_inducing_points,
                "inducing_points_initializer": keras.initializers.serialize(
                    self.inducing_points_initializer
                ),
            }
        )
        return config
