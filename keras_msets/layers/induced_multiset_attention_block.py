import keras

from keras_msets.layers._multiset_block import AttentionMultisetBlock
from keras_msets.layers._multiset_block import instance_suffixes
from keras_msets.layers._set_attention_layer import InducingPointsMixin


@keras.saving.register_keras_serializable(package="keras_msets")
class InducedMultisetAttentionBlock(
    InducingPointsMixin, AttentionMultisetBlock
):
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
        key_dim, ff_dim, dropout, layer_norm_epsilon, merge,
            weight_sharing, merge_activation: keyword-only, as in
            `MultisetAttentionBlock`.
        cross_only: if True, drops the self terms (Cross-Only). The
            summaries of every set are still computed (other sets read
            them).
        inducing_points_initializer: initializer of the inducing points.
            Defaults to `"glorot_uniform"`.
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs, masks, mask, training: as in `MultisetAttentionBlock`.

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

    def _summary_index(self, j):
        return 0 if self.weight_sharing == "symmetric" else j

    def build(self, input_shape):
        shapes = self._check_shapes(input_shape)
        m = self.num_inducing_points
        summary_shapes = [(s[0], m, s[-1]) for s in shapes]
        # The pair blocks read the summaries H_l, not the sets.
        self.build_blocks(shapes, summary_shapes)
        suffixes = instance_suffixes(
            len(shapes), self.weight_sharing == "symmetric"
        )
        self.inducing_blocks = []
        self.inducing_points = []
        for j, suffix in enumerate(suffixes):
            self.inducing_points.append(
                self.add_inducing_points(
                    f"inducing_points{suffix}", shapes[j][-1]
                )
            )
            # The summary block H_j = MAB(I_j, X_j): a copy of the pair block.
            block = self.make_pair_block(f"inducing_block{suffix}")
            block.build(summary_shapes[j], shapes[j])
            self.inducing_blocks.append(block)

    def call(self, inputs, masks=None, mask=None, training=None):
        sets, set_masks = self.prepare_sets(inputs, masks, mask)
        summaries = []
        for j, (x, set_mask) in enumerate(zip(sets, set_masks, strict=True)):
            index = self._summary_index(j)
            summaries.append(
                self.summarize(
                    self.inducing_blocks[index],
                    self.inducing_points[index],
                    x,
                    set_mask,
                    training,
                )
            )
        # The summaries have no padding: no value masks.
        return self.merge_pairs(
            sets, summaries, [None] * len(sets), training=training
        )
