import keras
from keras import ops

from keras_msets import ops as msets_ops
from keras_msets.layers._complex_weights import complex_units
from keras_msets.layers._layer_base import arguments_config
from keras_msets.layers.complex_dense import ComplexDense
from keras_msets.layers.complex_multi_head_attention import (
    ComplexMultiHeadAttention,
)
from keras_msets.ops.checks import as_features
from keras_msets.ops.checks import check_features_argument
from keras_msets.ops.checks import check_mask_argument
from keras_msets.utils.validation import check_bool
from keras_msets.utils.validation import check_positive_float
from keras_msets.utils.validation import check_positive_int
from keras_msets.utils.validation import check_rate


@keras.saving.register_keras_serializable(package="keras_msets")
class ComplexTransformerEncoder(keras.layers.Layer):
    """Transformer encoder block on complex sequences (Wang et al., App. B).

    The complex-valued Transformer layer of Wang et al.: complex
    multi-head self-attention (`ComplexMultiHeadAttention`, Eq. 13-14), a
    residual connection and a normalisation, then a position-wise complex
    feed-forward network, a residual connection and a normalisation. The
    feed-forward network is two `ComplexDense` layers (Eq. 10-11); the
    first applies `activation` (ReLU by default) to the real parts and to
    the imaginary parts separately. The layout follows KerasHub's
    `TransformerEncoder`: post-LN by default (`normalize_first=False`:
    `x = LN(x + Attention(x))`, `x = LN(x + FF(x))`), pre-LN with
    `normalize_first=True` (`x = x + Attention(LN(x))`,
    `x = x + FF(LN(x))`).

    Normalisation: the paper says "We use batch-normalization separately
    for the real and imaginary parts". This layer normalises the real parts
    and the imaginary parts separately too, but with layer normalisation,
    as the authors' released Transformer code and KerasHub do (batch
    statistics over padded sequences would let padding change the valid
    outputs). Each normalisation point has two `LayerNormalization`
    sub-layers, one for the real parts and one for the imaginary parts,
    each with its own gain and bias (the released code shares one gain and
    bias between the two parts).

    Masking: the padding mask (`padding_mask`, or the Keras mask of
    `inputs`) marks valid positions. Padded positions are replaced by zeros
    before anything else and are never attended to, so their values never
    change the valid outputs; the output at a padded position is the block
    applied to a zero element (finite, not meaningful). A sequence with no
    valid position has attention term 0 at every position (see
    `ComplexMultiHeadAttention`), so its output is finite.

    Args:
        intermediate_dim: positive integer, complex width of the
            feed-forward hidden layer.
        num_heads: positive integer, number of attention heads.
        dropout: dropout rate of the attention weights, of the attention
            output and of the feed-forward output. Defaults to 0.
        activation: activation of the feed-forward hidden layer, applied to
            real and imaginary parts separately. Defaults to `"relu"`.
        layer_norm_epsilon: epsilon of the layer norms. Defaults to `1e-5`.
        kernel_initializer: initializer of every complex kernel.
        bias_initializer: initializer of every complex bias.
        normalize_first: if True, normalise before the attention and the
            feed-forward network (pre-LN) instead of after (post-LN, the
            default, as in Vaswani et al. and the paper's code).
        key_dim: positive integer, complex size of each attention head.
            None (the default): `d // num_heads` (`d`, the complex size of
            the inputs, must then be divisible by `num_heads`).
        shared_weights: if True, the attention's query, key and value
            projections use `Re(W) = Im(W)` (the paper's Table 4).
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: complex tensor `[batch, length, 2 * d]`.
        padding_mask: optional boolean `[batch, length]`, True at valid
            positions. When given it replaces the Keras mask of `inputs`.
        attention_mask: optional boolean `[batch, length, length]`; False
            blocks the attention of a position to another.
        mask: the Keras mask of `inputs` (filled in by Keras).
        training: whether dropout is active.
        return_attention_scores: if True, also returns the attention
            weights `[batch, num_heads, length, length]`.

    Input shape:
        `[batch, length, 2 * d]`: real parts, then imaginary parts.

    Output shape:
        `[batch, length, 2 * d]`, with the Keras mask of `inputs`; with
        `return_attention_scores=True` the tuple `(output, scores)`.

    Example:
    >>> x = keras.random.normal((2, 5, 2 * 8))
    >>> encoder = keras_msets.layers.ComplexTransformerEncoder(
    ...     intermediate_dim=16, num_heads=2
    ... )
    >>> encoder(x).shape
    (2, 5, 16)

    References:
        - Wang et al., "Encoding word order in complex embeddings",
          ICLR 2020.
        - Vaswani et al., "Attention Is All You Need", NeurIPS 2017.
    """

    def __init__(
        self,
        intermediate_dim,
        num_heads,
        dropout=0.0,
        activation="relu",
        layer_norm_epsilon=1e-5,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        normalize_first=False,
        key_dim=None,
        shared_weights=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.intermediate_dim = check_positive_int(
            "intermediate_dim", intermediate_dim
        )
        self.num_heads = check_positive_int("num_heads", num_heads)
        self.dropout = check_rate("dropout", dropout)
        self.activation = keras.activations.get(activation)
        self.layer_norm_epsilon = check_positive_float(
            "layer_norm_epsilon", layer_norm_epsilon
        )
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.normalize_first = check_bool("normalize_first", normalize_first)
        self.key_dim = check_positive_int("key_dim", key_dim, allow_none=True)
        self.shared_weights = check_bool("shared_weights", shared_weights)
        self.supports_masking = True

    def _key_dim(self, units):
        if self.key_dim is not None:
            return self.key_dim
        if units % self.num_heads:
            raise ValueError(
                "With `key_dim=None` the complex size of the inputs must be "
                f"divisible by `num_heads`. Received: d={units}, "
                f"num_heads={self.num_heads}"
            )
        return units // self.num_heads

    def _dense(self, units, name, activation=None):
        return ComplexDense(
            units,
            activation=activation,
            kernel_initializer=self.kernel_initializer,
            bias_initializer=self.bias_initializer,
            dtype=self.dtype_policy,
            name=name,
        )

    def _add_norms_and_dropout(self, block):
        """`<block>_layer_norm_real`, `..._imag` and `<block>_dropout`."""
        for part in ("real", "imag"):
            name = f"{block}_layer_norm_{part}"
            norm = keras.layers.LayerNormalization(
                epsilon=self.layer_norm_epsilon,
                dtype=self.dtype_policy,
                name=name,
            )
            setattr(self, name, norm)
        dropout = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name=f"{block}_dropout"
        )
        setattr(self, f"{block}_dropout", dropout)

    def build(self, inputs_shape):
        inputs_shape = tuple(inputs_shape)
        units = complex_units(inputs_shape, rank=3)
        key_dim = self._key_dim(units)
        self.self_attention_layer = ComplexMultiHeadAttention(
            num_heads=self.num_heads,
            key_dim=key_dim,
            output_dim=units,
            dropout=self.dropout,
            shared_weights=self.shared_weights,
            kernel_initializer=self.kernel_initializer,
            bias_initializer=self.bias_initializer,
            dtype=self.dtype_policy,
            name="self_attention_layer",
        )
        self.self_attention_layer.build(inputs_shape, inputs_shape)
        self._add_norms_and_dropout("self_attention")
        self.feedforward_intermediate_dense = self._dense(
            self.intermediate_dim,
            "feedforward_intermediate_dense",
            activation=self.activation,
        )
        self.feedforward_output_dense = self._dense(
            units, "feedforward_output_dense"
        )
        self._add_norms_and_dropout("feedforward")
        part_shape = inputs_shape[:-1] + (units,)
        for block in ("self_attention", "feedforward"):
            for part in ("real", "imag"):
                getattr(self, f"{block}_layer_norm_{part}").build(part_shape)
        self.feedforward_intermediate_dense.build(inputs_shape)
        self.feedforward_output_dense.build(
            inputs_shape[:-1] + (2 * self.intermediate_dim,)
        )

    def _normalize(self, x, block):
        """Layer-normalises the real parts and the imaginary parts apart.

        One normalisation of `x` seen as `[..., 2, d]` (each part over its
        own `d` values), then the gains and biases of the two
        `LayerNormalization` layers (whose weights they remain): the
        same values as calling the two layers on the split parts, with one
        call instead of a split, two layer calls and a concatenation.
        """
        real_norm = getattr(self, f"{block}_layer_norm_real")
        imag_norm = getattr(self, f"{block}_layer_norm_imag")
        shape = ops.shape(x)
        units = x.shape[-1] // 2
        parts = ops.reshape(x, shape[:-1] + (2, units))
        parts = ops.layer_normalization(
            parts, axis=-1, epsilon=self.layer_norm_epsilon
        )
        dtype = parts.dtype
        gamma = [ops.cast(n.gamma, dtype) for n in (real_norm, imag_norm)]
        beta = [ops.cast(n.beta, dtype) for n in (real_norm, imag_norm)]
        parts = parts * ops.stack(gamma) + ops.stack(beta)
        return ops.reshape(parts, shape)

    def _residual(self, x, block, sublayer, training):
        """`x + dropout(sublayer(x))`, normalised first or last."""
        residual = x
        if self.normalize_first:
            x = self._normalize(x, block)
        x = sublayer(x)
        dropout = getattr(self, f"{block}_dropout")
        x = residual + dropout(x, training=training)
        if not self.normalize_first:
            x = self._normalize(x, block)
        return x

    def __call__(self, inputs, *args, **kwargs):
        # Before Keras converts the arguments to tensors: a string mask
        # would otherwise fail there with a backend error.
        check_features_argument("inputs", inputs)
        for name in ("padding_mask", "mask"):
            check_mask_argument(name, kwargs.get(name), inputs)
        check_mask_argument("attention_mask", kwargs.get("attention_mask"))
        return super().__call__(inputs, *args, **kwargs)

    def call(
        self,
        inputs,
        padding_mask=None,
        attention_mask=None,
        mask=None,
        training=None,
        return_attention_scores=False,
    ):
        complex_units(inputs.shape, rank=3)
        inputs = as_features(inputs, self.compute_dtype)
        valid = padding_mask if padding_mask is not None else mask
        x = inputs
        if valid is not None:
            valid = ops.cast(valid, "bool")
            x = ops.where(msets_ops.expand_mask(valid, x), x, ops.zeros_like(x))
        if attention_mask is not None:
            attention_mask = ops.cast(attention_mask, "bool")

        scores = None

        def attend(x):
            nonlocal scores
            attended = self.self_attention_layer(
                x,
                x,
                query_mask=None,
                value_mask=valid,
                attention_mask=attention_mask,
                return_attention_scores=return_attention_scores,
                training=training,
            )
            if return_attention_scores:
                attended, scores = attended
            return attended

        def feedforward(x):
            x = self.feedforward_intermediate_dense(x)
            return self.feedforward_output_dense(x)

        x = self._residual(x, "self_attention", attend, training)
        x = self._residual(x, "feedforward", feedforward, training)
        if return_attention_scores:
            return x, scores
        return x

    def compute_mask(self, inputs, mask=None):
        return mask

    def get_config(self):
        config = super().get_config()
        config.update(
            arguments_config(
                self,
                (
                    "intermediate_dim",
                    "num_heads",
                    "dropout",
                    "activation",
                    "layer_norm_epsilon",
                    "kernel_initializer",
                    "bias_initializer",
                    "normalize_first",
                    "key_dim",
                    "shared_weights",
                ),
            )
        )
        return config
