"""The feedforward half of the post-LN transformer block (private).

`FeedForwardBlock` computes `LN(H + FF(H))` with
`FF = Dense(ff_dim, relu) -> Dense(dim)` on every element alone. It is the
one place where this half of eq. 2 of Selby et al. is written: the pair
blocks of the set and multi-set layers (attention, multichannel attention,
relation network) subclass it and put their own mixing step in front, and
the row-wise baseline block is this block alone. Its attribute names
(`ff_hidden`, `ff_output`, `output_norm`) key the weight files and are
frozen.
"""

import keras

from keras_msets.utils.validation import check_positive_float
from keras_msets.utils.validation import check_positive_int


class FeedForwardBlock(keras.layers.Layer):
    """Residual feedforward block `LN(H + FF(H))` (private base).

    Args:
        ff_dim: hidden width of `FF`. None: `2 * dim`, with `dim` the last
            axis of the input (App. B of Selby et al.).
        layer_norm_epsilon: epsilon of the layer norm(s). Defaults to
            `1e-5` (PyTorch's default, as in the reference code).
        **kwargs: base layer keyword arguments.

    Call arguments:
        inputs: `[batch, ..., dim]`.

    A subclass that mixes elements first creates its own sub-layers, then
    calls `make_feed_forward(dim)`, builds them all (the feedforward half
    with `build_feed_forward(shape)`), and ends its `call` with
    `feed_forward(hidden)`.
    """

    def __init__(self, ff_dim=None, layer_norm_epsilon=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.ff_dim = check_positive_int("ff_dim", ff_dim, allow_none=True)
        self.layer_norm_epsilon = check_positive_float(
            "layer_norm_epsilon", layer_norm_epsilon
        )

    def make_feed_forward(self, dim):
        """Creates `ff_hidden`, `ff_output` and `output_norm` for width `dim`.

        A subclass creates them right after its own sub-layers and before
        building any of them, so that seeded initial weights do not depend
        on where the feedforward half is written.
        """
        ff_dim = self.ff_dim if self.ff_dim is not None else 2 * dim
        self.ff_hidden = keras.layers.Dense(
            ff_dim, activation="relu", dtype=self.dtype_policy, name="ff_hidden"
        )
        self.ff_output = keras.layers.Dense(
            dim, dtype=self.dtype_policy, name="ff_output"
        )
        self.output_norm = self.make_norm("output_norm")

    def make_norm(self, name):
        """A new layer norm with the block's epsilon, named `name`."""
        return keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon,
            dtype=self.dtype_policy,
            name=name,
        )

    def build_feed_forward(self, shape):
        """Builds the layers made by `make_feed_forward` on `shape`."""
        shape = tuple(shape)
        self.ff_hidden.build(shape)
        self.ff_output.build(shape[:-1] + (self.ff_hidden.units,))
        self.output_norm.build(shape)

    def feed_forward(self, hidden):
        """`LN(hidden + FF(hidden))`."""
        return self.output_norm(hidden + self.ff_output(self.ff_hidden(hidden)))

    def build(self, input_shape):
        self.make_feed_forward(input_shape[-1])
        self.build_feed_forward(input_shape)

    def call(self, inputs):
        return self.feed_forward(inputs)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "ff_dim": self.ff_dim,
                "layer_norm_epsilon": self.layer_norm_epsilon,
            }
        )
        return config
