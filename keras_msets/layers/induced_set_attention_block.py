import keras

from keras_msets.layers._multihead_attention_block import check_set_shape
from keras_msets.layers._multihead_attention_block import run_block
from keras_msets.layers._set_attention_layer import InducingPointsMixin
from keras_msets.layers._set_attention_layer import SetAttentionLayer


@keras.saving.register_keras_serializable(package="keras_msets")
class InducedSetAttentionBlock(InducingPointsMixin, SetAttentionLayer):
    """Induced set attention block: `MAB(X, MAB(I, X))`, linear in set size.

    Lee et al.'s ISAB: `m` learned inducing points `I [m, dim]` first attend
    to the set, `H = MAB(I, X)` (a summary of the set in `m` vectors), and
    then every element attends to that summary, `ISAB(X) = MAB(X, H)`. Each
    MAB is the post-LN transformer block of Selby et al. (eq. 2) with queries
    and keys/values from different sets. The cost is `O(n m)` instead of
    SAB's `O(n^2)`, and the block is permutation equivariant.

    Padded elements are replaced by zeros and never enter `MAB(I, X)`, so
    they never change the valid outputs; the output at a padded position
    is the second block applied to a zero element (finite, not meaningful)
    and the input mask is propagated unchanged. For an all-masked set the
    attention term of `MAB(I, X)` is defined as 0 (so `H` depends on `I`
    only).

    Args:
        num_inducing_points: number `m` of learned inducing points.
        num_heads: number of attention heads (both blocks).
        key_dim, ff_dim, dropout, layer_norm_epsilon: keyword-only, as in
            `SetAttentionBlock` (both blocks).
        inducing_points_initializer: initializer of `I`. Defaults to
            `"glorot_uniform"` (Xavier, as in Lee et al.'s code).
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs, mask, training: as in `SetAttentionBlock`.

    Input shape:
        `[batch, set_size, dim]`.

    Output shape:
        `[batch, set_size, dim]`, with the input's mask.

    Example:
    >>> x = keras.random.normal((2, 50, 16))
    >>> isab = keras_msets.layers.InducedSetAttentionBlock(8, num_heads=4)
    >>> isab(x).shape
    (2, 50, 16)

    References:
        - Lee et al., "Set Transformer: A Framework for Attention-based
          Permutation-Invariant Neural Networks", ICML 2019.
        - Selby et al., "Learning Functions on Multiple Sets using
          Multi-Set Transformers", UAI 2022.
    """

    def build(self, input_shape):
        input_shape = check_set_shape(input_shape)
        dim = input_shape[-1]
        self.inducing_points = self.add_inducing_points("inducing_points", dim)
        self.inducing_block = self.make_block("inducing_block")
        self.output_block = self.make_block("output_block")
        inducing_shape = (input_shape[0], self.num_inducing_points, dim)
        self.inducing_block.build(inducing_shape, input_shape)
        self.output_block.build(input_shape, inducing_shape)

    def call(self, inputs, mask=None, training=None):
        x, mask = self.prepare_set(inputs, mask)
        summary = self.summarize(
            self.inducing_block, self.inducing_points, x, mask, training
        )
        return run_block(self.output_block, x, summary, training=training)
