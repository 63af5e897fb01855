"""The dimension-equivariant Multi-Set Transformer (Selby et al., Sec. 3.5)."""

import keras
from keras import ops

from keras_msets import ops as msets_ops
from keras_msets.layers.dimension_equivariant_multiset_attention_block import (  # noqa: E501
    DimensionEquivariantMultisetAttentionBlock,
)
from keras_msets.models.mst.multiset_block_model import MultisetBlockModel
from keras_msets.models.mst.multiset_model import DEFAULT_CHANNELS
from keras_msets.utils.validation import check_bool


@keras.saving.register_keras_serializable(package="keras_msets")
class DimensionEquivariantMultiSetTransformer(MultisetBlockModel):
    """Multi-Set Transformer for inputs of any dimension `d` (Sec. 3.5).

    The model of Sec. 3.5 of Selby et al. (Multi-Set-Transformer-Equi):
    every coordinate of every element is lifted from one channel to
    `latent_dim` channels by one shared `Dense`
    (`[batch, n, d] -> [batch, n, d, latent_dim]`), a stack of
    `DimensionEquivariantMultisetAttentionBlock`s (eq. 10-11 with attention
    logits summed over the `d` coordinates) encodes all sets together, a
    max over the coordinates follows the last block, and each set is then
    pooled and decoded as in eq. 12:
    `f(X, Y) = rho([Gamma_X phi_x(X, Y) || Gamma_Y phi_y(X, Y)])`. No weight
    depends on `d`: the same model accepts inputs of any dimension (all
    sets of a call share `d`) and is invariant to a permutation of the
    coordinates applied to every set, as well as to the order of the
    elements of each set.

    Defaults follow App. B for the KL / MI tasks: 4 blocks, 4 heads,
    16 channels per coordinate, feedforward width twice that, PMA pooling,
    a decoder with one hidden layer of the feedforward width. Inputs,
    masks and outputs are those of `MultiSetTransformer`, with sets
    `[batch, n_k, d]`.

    Args:
        latent_dim: channels per coordinate. None (the default): 16.
        num_blocks: number of blocks. Defaults to 4.
        num_heads: attention heads of the blocks and of PMA. Defaults to 4.
        key_dim: size of each head. None: `latent_dim // num_heads`.
        ff_dim: hidden width of the feedforward networks and of the default
            decoder. None: `2 * latent_dim`.
        dropout: dropout on the attention probabilities. Defaults to 0.
        layer_norm_epsilon: epsilon of every layer norm. Defaults to 1e-5.
        merge, cross_only, weight_sharing, merge_activation: as in
            `MultiSetTransformer`.
        pooling: `"pma"` (the default), `"mean"`, `"max"` or `"sum"`.
        decoder_units, decoder_activation, output_dim, output_activation,
        share_input_projection: as in `MultiSetTransformer`.
        scale_output_by_dim: multiply the output by the input dimension
            `d`. Defaults to False. Not in the paper: after the max over
            the coordinates the decoder cannot see `d` directly (only
            indirectly, e.g. through attention logits summed over the
            coordinates), which makes a quantity that grows in proportion
            to `d`, such as the mutual information of `d` independent
            coordinate pairs, hard to output; with this option the decoder
            answers per coordinate and the model answers in total
            (`mst_mutual_information` uses it).
        **kwargs: `keras.Model` keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs, masks, mask, training: as in `MultiSetTransformer`.

    Input shape:
        `K` tensors `[batch, n_k, d]`, any `d` (the same for all sets).

    Output shape:
        `[batch, output_dim]`.

    Example:
    >>> model = keras_msets.models.DimensionEquivariantMultiSetTransformer(
    ...     latent_dim=8, num_blocks=2, num_heads=2)
    >>> x = np.random.normal(size=(4, 10, 3)).astype("float32")
    >>> y = np.random.normal(size=(4, 12, 3)).astype("float32")
    >>> model([x, y]).shape
    (4, 1)
    >>> model([x[..., :2], y[..., :2]]).shape  # d = 2, the same weights
    (4, 1)

    References:
        - Selby et al., "Learning Functions on Multiple Sets using
          Multi-Set Transformers", UAI 2022.
        - Lee et al., "Set Transformer: A Framework for Attention-based
          Permutation-Invariant Neural Networks", ICML 2019.
    """

    # Read by code that treats both Multi-Set Transformers alike.
    dimension_equivariant = True

    def __init__(self, scale_output_by_dim=False, **kwargs):
        super().__init__(**kwargs)
        self.scale_output_by_dim = check_bool(
            "scale_output_by_dim", scale_output_by_dim
        )
        self._check_heads()

    def _default_latent_dim(self):
        return DEFAULT_CHANNELS

    def _check_set_shapes(self, shapes):
        for k, shape in enumerate(shapes):
            if len(shape) != 3:
                raise ValueError(
                    f"Set {k} must have shape [batch, set_size, d] (the "
                    "dimension-equivariant model takes any d). Received: "
                    f"shape={shape}"
                )
        dims = {s[-1] for s in shapes if s[-1] is not None}
        if len(dims) > 1:
            raise ValueError(
                "All sets must have the same number of dimensions `d` (the "
                f"last axis). Received: set shapes={shapes}"
            )

    def _projection_input_shape(self, shape):
        return tuple(shape) + (1,)

    def _latent_shape(self, shape):
        return tuple(shape) + (self.resolved_latent_dim,)

    def _lift(self, k, x):
        # [batch, n, d] -> [batch, n, d, 1]: one channel per coordinate.
        return ops.expand_dims(x, -1)

    def make_block(self, name):
        return DimensionEquivariantMultisetAttentionBlock(
            name=name, **self._attention_arguments(), **self._block_arguments()
        )

    def _build_encoder(self, latent_shapes):
        shapes = super()._build_encoder(latent_shapes)
        # What is pooled: [batch, n, channels], after the max over d.
        return [tuple(s[:2]) + (s[-1],) for s in shapes]

    def _encode(self, hidden, masks, training):
        encoded, masks = super()._encode(hidden, masks, training)
        # Sec. 3.5: max pooling over the input dimensions (an empty set,
        # n = 0, gives an empty result, not a backend error).
        return [msets_ops.masked_max(z, axis=2) for z in encoded], masks

    def _scale_output(self, outputs, sets):
        if not self.scale_output_by_dim:
            return outputs
        d = ops.cast(ops.shape(sets[0])[-1], outputs.dtype)
        return outputs * d

    def _model_arguments(self):
        config = super()._model_arguments()
        config["scale_output_by_dim"] = self.scale_output_by_dim
        return config
