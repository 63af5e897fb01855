import keras

from keras_msets.layers._multihead_attention_block import (
    MultiheadAttentionBlock,
)
from keras_msets.layers._multihead_attention_block import as_features
from keras_msets.layers._multihead_attention_block import block_arguments
from keras_msets.layers._multihead_attention_block import (
    check_features_argument,
)
from keras_msets.layers._multihead_attention_block import check_mask_argument
from keras_msets.layers._multihead_attention_block import check_set_shape
from keras_msets.layers._multihead_attention_block import repeat_for_batch
from keras_msets.layers._multihead_attention_block import set_mask
from keras_msets.layers._multihead_attention_block import zero_padding
from keras_msets.utils.validation import check_positive_int


@keras.saving.register_keras_serializable(package="keras_msets")
class InducedSetAttentionBlock(keras.layers.Layer):
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
        key_dim: size of each head's queries, keys and values. None (the
            default): `dim // num_heads`, which must divide evenly.
        ff_dim: hidden width of the feedforward networks. None (the
            default): `2 * dim`, the ratio of every setting in App. B of
            Selby et al.
        dropout: dropout rate on the attention probabilities. Defaults to 0.
        layer_norm_epsilon: epsilon of the layer norms. Defaults to `1e-5`.
        inducing_points_initializer: initializer of `I`. Defaults to
            `"glorot_uniform"` (Xavier, as in Lee et al.'s code).
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: `[batch, set_size, dim]`. Integer or boolean features
            are cast to the compute dtype. An empty set (`set_size` 0)
            gives the result of an all-masked set.
        mask: optional boolean `[batch, set_size]`, True for real elements.
            An upstream Keras mask is used automatically.
        training: whether dropout is active.

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

    def __init__(
        self,
        num_inducing_points,
        num_heads,
        key_dim=None,
        ff_dim=None,
        dropout=0.0,
        layer_norm_epsilon=1e-5,
        inducing_points_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_inducing_points = check_positive_int(
            "num_inducing_points", num_inducing_points
        )
        block_kwargs = {
            "num_heads": num_heads,
            "key_dim": key_dim,
            "ff_dim": ff_dim,
            "dropout": dropout,
            "layer_norm_epsilon": layer_norm_epsilon,
            "dtype": self.dtype_policy,
        }
        self.inducing_block = MultiheadAttentionBlock(
            name="inducing_block", **block_kwargs
        )
        self.output_block = MultiheadAttentionBlock(
            name="output_block", **block_kwargs
        )
        for name, value in block_arguments(self.inducing_block).items():
            setattr(self, name, value)
        self.inducing_points_initializer = keras.initializers.get(
            inducing_points_initializer
        )
        self.supports_masking = True

    def build(self, input_shape):
        input_shape = check_set_shape(input_shape)
        dim = input_shape[-1]
        self.inducing_points = self.add_weight(
            name="inducing_points",
            shape=(self.num_inducing_points, dim),
            initializer=self.inducing_points_initializer,
        )
        inducing_shape = (input_shape[0], self.num_inducing_points, dim)
        self.inducing_block.build(inducing_shape, input_shape)
        self.output_block.build(input_shape, inducing_shape)

    def __call__(self, inputs, *args, **kwargs):
        check_features_argument("inputs", inputs)
        check_mask_argument("mask", kwargs.get("mask"), inputs)
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs, mask=None, training=None):
        check_set_shape(inputs.shape)
        inputs = as_features(inputs, self.compute_dtype)
        x, mask = zero_padding(inputs, set_mask("mask", mask, inputs))
        # [batch, m, dim]: the inducing points, once per set.
        inducing = repeat_for_batch(self.inducing_points, x)
        summary = self.inducing_block(
            inducing, x, value_mask=mask, training=training
        )
        return self.output_block(x, summary, training=training)

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_shape(self, input_shape):
        return tuple(check_set_shape(input_shape))

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
