"""What the attention layers on one set share (private).

`SetAttentionLayer` is the base of `SetAttentionBlock`,
`InducedSetAttentionBlock` and `PoolingByMultiheadAttention`: it holds the
arguments of their `MultiheadAttentionBlock`s, makes those blocks, and
reads a set `[batch, set_size, dim]` and its mask the same way for all
three. `InducingPointsMixin` holds the `m` learned inducing points of
`InducedSetAttentionBlock` and `InducedMultisetAttentionBlock`.
"""

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
from keras_msets.layers._multihead_attention_block import run_block
from keras_msets.layers._multihead_attention_block import set_mask
from keras_msets.layers._multihead_attention_block import zero_padding
from keras_msets.utils.validation import check_positive_int


class SetAttentionLayer(keras.layers.Layer):
    """Base of the attention layers on one set (private).

    Args:
        num_heads, key_dim, ff_dim, dropout, layer_norm_epsilon: the
            arguments of every `MultiheadAttentionBlock` of the layer,
            checked by that block and kept as attributes.
        **kwargs: base layer keyword arguments.

    A subclass makes its blocks with `make_block(name)` in `build()` and
    starts its `call` with `prepare_set(inputs, mask)`. The input mask is
    propagated unchanged unless the subclass says otherwise.
    """

    def __init__(
        self,
        num_heads,
        key_dim=None,
        ff_dim=None,
        dropout=0.0,
        layer_norm_epsilon=1e-5,
        **kwargs,
    ):
        super().__init__(**kwargs)
        # The block checks its arguments; this one is never built.
        template = MultiheadAttentionBlock(
            num_heads, key_dim, ff_dim, dropout, layer_norm_epsilon
        )
        for name, value in block_arguments(template).items():
            setattr(self, name, value)
        self.supports_masking = True

    def make_block(self, name):
        """A new, unbuilt `MultiheadAttentionBlock` named `name`."""
        return MultiheadAttentionBlock(
            **block_arguments(self), dtype=self.dtype_policy, name=name
        )

    def __call__(self, inputs, *args, **kwargs):
        check_features_argument("inputs", inputs)
        check_mask_argument("mask", kwargs.get("mask"), inputs)
        return super().__call__(inputs, *args, **kwargs)

    def prepare_set(self, inputs, mask=None):
        """Checks the set; returns it zero-filled, and a `[batch, n]` mask."""
        check_set_shape(inputs.shape)
        inputs = as_features(inputs, self.compute_dtype)
        return zero_padding(inputs, set_mask("mask", mask, inputs))

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_shape(self, input_shape):
        return tuple(check_set_shape(input_shape))

    def get_config(self):
        config = super().get_config()
        config.update(block_arguments(self))
        return config


class InducingPointsMixin:
    """The learned inducing points `I [m, dim]` of an induced layer.

    Mixed in before an attention layer base (`SetAttentionLayer` or
    `AttentionMultisetBlock`), it adds the arguments `num_inducing_points`
    (first) and `inducing_points_initializer` (keyword-only) and passes the
    others on. The layer creates each set of points with
    `add_inducing_points(name, dim)` and summarises a set with
    `summarize(block, points, x, mask)`, `MAB(I, X)`.
    """

    def __init__(
        self,
        num_inducing_points,
        num_heads,
        *,
        inducing_points_initializer="glorot_uniform",
        **kwargs,
    ):
        num_inducing_points = check_positive_int(
            "num_inducing_points", num_inducing_points
        )
        super().__init__(num_heads, **kwargs)
        self.num_inducing_points = num_inducing_points
        self.inducing_points_initializer = keras.initializers.get(
            inducing_points_initializer
        )

    def add_inducing_points(self, name, dim):
        """Creates the weight `I [m, dim]` named `name`."""
        return self.add_weight(
            name=name,
            shape=(self.num_inducing_points, dim),
            initializer=self.inducing_points_initializer,
        )

    def summarize(self, block, points, x, mask=None, training=None):
        """`MAB(I, X)`: the `m` points attend to the set `x`."""
        # [batch, m, dim]: the inducing points, once per set.
        inducing = repeat_for_batch(points, x)
        return run_block(block, inducing, x, value_mask=mask, training=training)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_inducing_points": self.num_inducing_points,
                "inducing_points_initializer": keras.initializers.serialize(
                    self.inducing_points_initializer
                ),
            }
        )
        return config
