import keras

from keras_msets.layers._multihead_attention_block import check_set_shape
from keras_msets.layers._multihead_attention_block import run_block
from keras_msets.layers._set_attention_layer import SetAttentionLayer


@keras.saving.register_keras_serializable(package="keras_msets")
class SetAttentionBlock(SetAttentionLayer):
    """Set attention block: post-LN self-attention over the set, `MAB(X, X)`.

    The transformer block of Selby et al. (eq. 2) and Lee et al.'s SAB:
    `H = LN(X + Multihead(X, X, X))`, `SAB(X) = LN(H + FF(H))`, with
    `FF = Dense(ff_dim, relu) -> Dense(dim)` applied to each element. It has
    no position encoding, so it is permutation equivariant; stacked and
    followed by a pooling (eq. 1's sum, or `PoolingByMultiheadAttention`) it
    gives an attention model on sets. Cost is quadratic in the set size.

    Padded elements never change the valid outputs: they are replaced by
    zeros before anything else and are never attended to. The output at a
    padded position is the block applied to a zero element (finite, not
    meaningful) and the input mask is propagated unchanged. An all-masked
    set has no keys: its attention term is defined as 0.

    Args:
        num_heads: number of attention heads.
        key_dim: size of each head's queries, keys and values. None (the
            default): `dim // num_heads`, which must divide evenly (`dim` is
            the last axis of the inputs, kept by the block).
        ff_dim: hidden width of the feedforward network. None (the default):
            `2 * dim`, the ratio of every setting in App. B of Selby et al.
            (e.g. latent 128, hidden 256).
        dropout: dropout rate on the attention probabilities. Defaults to 0.
        layer_norm_epsilon: epsilon of the layer norms. Defaults to `1e-5`
            (PyTorch's default, as in the reference implementations).
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: `[batch, set_size, dim]`. Integer or boolean features
            are cast to the compute dtype. An empty set (`set_size` 0)
            gives the result of an all-masked set.
        mask: optional boolean `[batch, set_size]`, True for real elements.
            An upstream Keras mask (e.g. from `Embedding(mask_zero=True)`)
            is used automatically.
        training: whether dropout is active.

    Input shape:
        `[batch, set_size, dim]`.

    Output shape:
        `[batch, set_size, dim]`, with the input's mask.

    Example:
    >>> x = keras.random.normal((2, 7, 16))
    >>> y = keras_msets.layers.SetAttentionBlock(num_heads=4)(x)
    >>> y.shape
    (2, 7, 16)

    References:
        - Lee et al., "Set Transformer: A Framework for Attention-based
          Permutation-Invariant Neural Networks", ICML 2019.
        - Selby et al., "Learning Functions on Multiple Sets using
          Multi-Set Transformers", UAI 2022.
    """

    def build(self, input_shape):
        input_shape = check_set_shape(input_shape)
        self.block = self.make_block("block")
        self.block.build(input_shape, input_shape)

    def call(self, inputs, mask=None, training=None):
        x, mask = self.prepare_set(inputs, mask)
        return run_block(self.block, x, x, value_mask=mask, training=training)
