import keras

from keras_msets.layers._multihead_attention_block import check_set_shape
from keras_msets.layers._multihead_attention_block import repeat_for_batch
from keras_msets.layers._multihead_attention_block import run_block
from keras_msets.layers._set_attention_layer import SetAttentionLayer
from keras_msets.utils.validation import check_positive_int


@keras.saving.register_keras_serializable(package="keras_msets")
class PoolingByMultiheadAttention(SetAttentionLayer):
    """Pooling by multihead attention: learned seeds attend to the set.

    Lee et al.'s PMA, the pooling Selby et al. use on top of their encoders
    (App. B): `PMA(X) = MAB(S, X)` with `k` learned seed vectors
    `S [k, dim]` as queries and the set as keys and values, where MAB is the
    post-LN transformer block of Selby et al. (eq. 2). Attention weights
    sum over the set, so the result is permutation invariant, a learned
    replacement for eq. 1's sum. Lee et al. put a row-wise feedforward layer
    on `X` first (`MAB(S, rFF(X))`); here that is left to the layer before.

    Padded elements are replaced by zeros and never attended to, so they
    never change the result. An all-masked (empty) set has no keys: its
    attention term is defined as 0, so its output is
    `LN(H + FF(H))` with `H = LN(S)`, which depends on the seeds only.

    Args:
        num_seeds: number `k` of learned seeds (outputs per set). Defaults
            to 1, as in the reference code.
        num_heads, key_dim, ff_dim, dropout, layer_norm_epsilon:
            keyword-only, as in `SetAttentionBlock`.
        seeds_initializer: initializer of `S`. Defaults to
            `"glorot_uniform"` (Xavier, as in Lee et al.'s code).
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs, mask, training: as in `SetAttentionBlock`.

    Input shape:
        `[batch, set_size, dim]`.

    Output shape:
        `[batch, num_seeds, dim]`, without a mask.

    Example:
    >>> x = keras.random.normal((2, 7, 16))
    >>> pma = keras_msets.layers.PoolingByMultiheadAttention(num_heads=4)
    >>> pma(x).shape
    (2, 1, 16)

    References:
        - Lee et al., "Set Transformer: A Framework for Attention-based
          Permutation-Invariant Neural Networks", ICML 2019.
        - Selby et al., "Learning Functions on Multiple Sets using
          Multi-Set Transformers", UAI 2022.
    """

    def __init__(
        self,
        num_seeds=1,
        *,
        num_heads,
        seeds_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(num_heads, **kwargs)
        self.num_seeds = check_positive_int("num_seeds", num_seeds)
        self.seeds_initializer = keras.initializers.get(seeds_initializer)

    def build(self, input_shape):
        input_shape = check_set_shape(input_shape)
        dim = input_shape[-1]
        self.seeds = self.add_weight(
            name="seeds",
            shape=(self.num_seeds, dim),
            initializer=self.seeds_initializer,
        )
        self.block = self.make_block("block")
        self.block.build((input_shape[0], self.num_seeds, dim), input_shape)

    def call(self, inputs, mask=None, training=None):
        x, mask = self.prepare_set(inputs, mask)
        # [batch, k, dim]: the seeds, once per set.
        seeds = repeat_for_batch(self.seeds, x)
        return run_block(
            self.block, seeds, x, value_mask=mask, training=training
        )

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        input_shape = check_set_shape(input_shape)
        return (input_shape[0], self.num_seeds, input_shape[-1])

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_seeds": self.num_seeds,
                "seeds_initializer": keras.initializers.serialize(
                    self.seeds_initializer
                ),
            }
        )
        return config
