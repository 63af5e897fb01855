"""The baselines of Selby et al. (UAI 2022, Sec. 5) for multi-set tasks."""

import keras
from keras import ops

from keras_msets.layers._feed_forward_block import FeedForwardBlock
from keras_msets.layers._multihead_attention_block import check_set_shape
from keras_msets.layers.induced_set_attention_block import (
    InducedSetAttentionBlock,
)
from keras_msets.layers.multiset_relation_block import RelationBlock
from keras_msets.layers.set_attention_block import SetAttentionBlock
from keras_msets.models.mst.multiset_model import MultisetModel
from keras_msets.utils.validation import check_bool
from keras_msets.utils.validation import check_choice
from keras_msets.utils.validation import check_positive_int

ENCODERS = ("transformer", "relation", "rff")


@keras.saving.register_keras_serializable(package="keras_msets")
class RowwiseFeedForwardBlock(FeedForwardBlock):
    """Row-wise feedforward block: `LN(X + FF(X))` on every element alone.

    The encoder block of the Single-Set RFF (Deep Sets) baseline of Selby
    et al.: the post-LN transformer block of eq. 2 without its attention,
    `FF = Dense(ff_dim, relu) -> Dense(dim)`. Elements never interact, so
    the block is permutation equivariant and padded elements cannot change
    the valid ones; the mask is passed through.

    Args:
        ff_dim: hidden width. None (the default): `2 * dim`.
        layer_norm_epsilon: epsilon of the layer norm. Defaults to 1e-5.
        **kwargs: base layer keyword arguments.

    Input shape:
        `[batch, set_size, dim]`.

    Output shape:
        `[batch, set_size, dim]`, with the input's mask.
    """

    def __init__(self, ff_dim=None, layer_norm_epsilon=1e-5, **kwargs):
        super().__init__(
            ff_dim=ff_dim, layer_norm_epsilon=layer_norm_epsilon, **kwargs
        )
        self.supports_masking = True

    def build(self, input_shape):
        super().build(check_set_shape(input_shape))

    def compute_mask(self, inputs, mask=None):
        return mask


def _set_attention_block(model, name):
    kwargs = {
        "num_heads": model.num_heads,
        "key_dim": model.key_dim,
        "ff_dim": model.ff_dim,
        "dropout": model.dropout,
        "layer_norm_epsilon": model.layer_norm_epsilon,
        "dtype": model.dtype_policy,
        "name": name,
    }
    if model.num_inducing_points:
        return InducedSetAttentionBlock(model.num_inducing_points, **kwargs)
    return SetAttentionBlock(**kwargs)


@keras.saving.register_keras_serializable(package="keras_msets")
class UnionTransformer(MultisetModel):
    """Union Transformer: one Set Transformer on the union of the sets.

    The baseline of Selby et al. (Sec. 5) that applies a Set Transformer to
    the union `X ⊔ Y`: the sets are projected by one shared `Dense`,
    concatenated along the set axis, encoded by `num_blocks` set attention
    blocks (SAB, eq. 2; ISAB with `num_inducing_points`), pooled once (PMA
    by default) and decoded. Without more, elements of different sets are
    indistinguishable, so the model is invariant to any permutation of the
    union (it cannot tell `f(X, Y)` from `f(Y, X)`, nor compute e.g. an
    asymmetric divergence). With `set_indicator=True` (the default) each
    element carries a one-hot feature of its set, `[x || e_k]`, before the
    projection; this equals adding a learned embedding of the set to the
    projected element (the authors' code's `set_encoding`). The paper does
    not say whether its Union Transformer had it; `set_indicator=False`
    gives the plain union.

    Inputs, masks and outputs are those of `MultiSetTransformer`; the sets
    must share their feature size.

    Args:
        latent_dim: latent width. None (the default): 128.
        num_blocks: number of set attention blocks. Defaults to 4.
        num_heads: attention heads. Defaults to 4.
        key_dim: size of each head. None: `latent_dim // num_heads`.
        ff_dim: hidden width of the feedforward networks and of the default
            decoder. None: `2 * latent_dim`.
        dropout: dropout on the attention probabilities. Defaults to 0.
        layer_norm_epsilon: epsilon of the layer norms. Defaults to 1e-5.
        num_inducing_points: None (SAB) or the number of inducing points
            of `InducedSetAttentionBlock`.
        set_indicator: append the one-hot set indicator. Defaults to True.
        pooling: `"pma"` (the default), `"mean"`, `"max"` or `"sum"`, over
            the whole union.
        decoder_units, decoder_activation, output_dim, output_activation:
            as in `MultiSetTransformer`.
        **kwargs: `keras.Model` keyword arguments.

    Call arguments:
        inputs, masks, mask, training: as in `MultiSetTransformer`.

    Input shape:
        `K` tensors `[batch, n_k, dim]`, the same `dim` for every set.

    Output shape:
        `[batch, output_dim]`.

    Example:
    >>> x = np.random.normal(size=(2, 5, 3)).astype("float32")
    >>> y = np.random.normal(size=(2, 4, 3)).astype("float32")
    >>> union = keras_msets.models.UnionTransformer(
    ...     latent_dim=16, num_blocks=2, set_indicator=False)
    >>> z_xy = keras.ops.convert_to_numpy(union([x, y]))
    >>> z_yx = keras.ops.convert_to_numpy(union([y, x]))
    >>> bool(np.allclose(z_xy, z_yx, atol=1e-5))  # f(X, Y) = f(Y, X)
    True

    References:
        - Selby et al., "Learning Functions on Multiple Sets using
          Multi-Set Transformers", UAI 2022.
        - Lee et al., "Set Transformer: A Framework for Attention-based
          Permutation-Invariant Neural Networks", ICML 2019.
    """

    def __init__(
        self,
        num_blocks=4,
        num_inducing_points=None,
        set_indicator=True,
        **kwargs,
    ):
        # The other arguments and their defaults are `MultisetModel`'s.
        super().__init__(share_input_projection=True, **kwargs)
        self.num_blocks = check_positive_int("num_blocks", num_blocks)
        self.num_inducing_points = check_positive_int(
            "num_inducing_points", num_inducing_points, allow_none=True
        )
        self.set_indicator = check_bool("set_indicator", set_indicator)
        self._check_heads()

    def _projection_input_shape(self, shape):
        if self.set_indicator:
            return tuple(shape[:-1]) + (shape[-1] + self.num_sets,)
        return shape

    def _lift(self, k, x):
        if not self.set_indicator:
            return x
        indicator = ops.cast(ops.one_hot(k, self.num_sets), x.dtype)
        # [batch, n_k, K]: the one-hot indicator of set k on every element.
        indicator = ops.zeros_like(x[..., :1]) + indicator
        return ops.concatenate([x, indicator], axis=-1)

    def _num_pooled_sets(self):
        return 1

    def _build_encoder(self, latent_shapes):
        sizes = [s[1] for s in latent_shapes]
        union_size = None if None in sizes else sum(sizes)
        union_shape = (latent_shapes[0][0], union_size, latent_shapes[0][-1])
        self.blocks = []
        for i in range(self.num_blocks):
            block = _set_attention_block(self, f"block_{i}")
            block.build(union_shape)
            self.blocks.append(block)
        return [union_shape]

    def _encode(self, hidden, masks, training):
        union = ops.concatenate(hidden, axis=1)
        union_mask = None
        if any(m is not None for m in masks):
            union_mask = ops.concatenate(
                [
                    ops.ones_like(h[..., 0], dtype="bool") if m is None else m
                    for h, m in zip(hidden, masks, strict=True)
                ],
                axis=1,
            )
        for block in self.blocks:
            union = block(union, mask=union_mask, training=training)
        return [union], [union_mask]

    def _model_arguments(self):
        return {
            "num_blocks": self.num_blocks,
            "num_inducing_points": self.num_inducing_points,
            "set_indicator": self.set_indicator,
        }


@keras.saving.register_keras_serializable(package="keras_msets")
class SingleSetBaseline(MultisetModel):
    """Single-set baselines: encode and pool each set alone, then decode.

    The single-set baselines of Selby et al. (Sec. 5): a single-set
    architecture encodes and pools each set on its own, without any
    interaction between the sets, and a feedforward decoder reads the
    concatenation of the pooled vectors (the partially permutation
    invariant model of eq. 7 with a richer encoder). `encoder` picks the
    architecture:

    - `"transformer"` (Single-Set Transformer): set attention blocks
      (eq. 2; ISAB with `num_inducing_points`), PMA pooling. This is also
      the ablation of the Multi-Set Transformer without cross-set blocks.
    - `"relation"` (Single-Set RN): relation-network blocks on the pairs
      of one set (eq. 4 and 6, max-pooled `Lambda` as in the Multi-Set
      RN's blocks), PMA pooling.
    - `"rff"` (Single-Set RFF, Deep Sets, eq. 1): row-wise feedforward
      blocks `LN(X + FF(X))`, then a sum over the set.

    Each set has its own encoder and pooling (`share_encoder=False`, the
    default, as in the authors' code) or all sets share them.

    Inputs, masks and outputs are those of `MultiSetTransformer`.

    Args:
        encoder: `"transformer"` (the default), `"relation"` or `"rff"`.
        latent_dim: latent width. None (the default): 128.
        num_blocks: number of encoder blocks per set. Defaults to 4.
        num_heads: attention heads (SAB and PMA). Defaults to 4.
        key_dim: size of each head. None: `latent_dim // num_heads`.
        ff_dim: hidden width of the feedforward networks and of the default
            decoder. None: `2 * latent_dim`.
        dropout: dropout on the attention probabilities. Defaults to 0.
        layer_norm_epsilon: epsilon of the layer norms. Defaults to 1e-5.
        num_inducing_points: `"transformer"` only: None (SAB) or the number
            of inducing points of `InducedSetAttentionBlock`.
        relation_dim: `"relation"` only: hidden width of the pairwise
            encoder. None: `2 * latent_dim`.
        share_encoder: one encoder and pooling for all sets. Defaults to
            False.
        pooling: None (the default: `"sum"` for `"rff"`, `"pma"`
            otherwise), `"pma"`, `"mean"`, `"max"` or `"sum"`.
        decoder_units, decoder_activation, output_dim, output_activation,
        share_input_projection: as in `MultiSetTransformer`.
        **kwargs: `keras.Model` keyword arguments.

    Call arguments:
        inputs, masks, mask, training: as in `MultiSetTransformer`.

    Input shape:
        `K` tensors `[batch, n_k, dim_k]`; the sizes `dim_k` may differ
        with `share_input_projection=False`.

    Output shape:
        `[batch, output_dim]`.

    Example:
    >>> model = keras_msets.models.SingleSetBaseline(
    ...     "rff", latent_dim=16, num_blocks=2, share_input_projection=False)
    >>> model([np.ones((2, 5, 3)), np.ones((2, 4, 7))]).shape
    (2, 1)
    >>> len(model.blocks)  # 2 blocks per set, no weights shared
    4

    References:
        - Selby et al., "Learning Functions on Multiple Sets using
          Multi-Set Transformers", UAI 2022.
        - Zaheer et al., "Deep Sets", NeurIPS 2017.
        - Santoro et al., "A simple neural network module for relational
          reasoning", NeurIPS 2017.
        - Lee et al., "Set Transformer: A Framework for Attention-based
          Permutation-Invariant Neural Networks", ICML 2019.
    """

    def __init__(
        self,
        encoder="transformer",
        num_blocks=4,
        num_inducing_points=None,
        relation_dim=None,
        share_encoder=False,
        pooling=None,
        **kwargs,
    ):
        encoder = check_choice("encoder", encoder, ENCODERS)
        if pooling is None:
            pooling = "sum" if encoder == "rff" else "pma"
        super().__init__(pooling=pooling, **kwargs)
        self.encoder = encoder
        self.num_blocks = check_positive_int("num_blocks", num_blocks)
        self.num_inducing_points = check_positive_int(
            "num_inducing_points", num_inducing_points, allow_none=True
        )
        self.relation_dim = check_positive_int(
            "relation_dim", relation_dim, allow_none=True
        )
        self.share_encoder = check_bool("share_encoder", share_encoder)
        if self.num_inducing_points and encoder != "transformer":
            raise ValueError(
                "`num_inducing_points` needs `encoder='transformer'`. "
                f"Received: num_inducing_points={num_inducing_points}, "
                f"encoder={encoder!r}"
            )
        if self.relation_dim and encoder != "relation":
            raise ValueError(
                "`relation_dim` needs `encoder='relation'`. Received: "
                f"relation_dim={relation_dim}, encoder={encoder!r}"
            )
        if encoder == "transformer" or self.pooling == "pma":
            self._check_heads()

    def _share_pooling(self):
        return self.share_encoder

    def _make_block(self, name):
        if self.encoder == "transformer":
            return _set_attention_block(self, name)
        if self.encoder == "relation":
            return RelationBlock(
                relation_dim=self.relation_dim,
                ff_dim=self.ff_dim,
                layer_norm_epsilon=self.layer_norm_epsilon,
                dtype=self.dtype_policy,
                name=name,
            )
        return RowwiseFeedForwardBlock(
            ff_dim=self.ff_dim,
            layer_norm_epsilon=self.layer_norm_epsilon,
            dtype=self.dtype_policy,
            name=name,
        )

    def _blocks_of(self, k):
        """The encoder blocks of set `k` (shared: the same for every set)."""
        if self.share_encoder:
            return self.blocks
        return self.blocks[k * self.num_blocks : (k + 1) * self.num_blocks]

    def _build_encoder(self, latent_shapes):
        if self.share_encoder:
            names = [f"block_{i}" for i in range(self.num_blocks)]
        else:
            names = [
                f"set_{k}_block_{i}"
                for k in range(len(latent_shapes))
                for i in range(self.num_blocks)
            ]
        self.blocks = [self._make_block(name) for name in names]
        for k, shape in enumerate(latent_shapes):
            for block in self._blocks_of(k):
                if block.built:
                    continue
                if self.encoder == "relation":
                    block.build(shape, shape)
                else:
                    block.build(shape)
        return latent_shapes

    def _encode(self, hidden, masks, training):
        encoded = []
        for k, (h, m) in enumerate(zip(hidden, masks, strict=True)):
            for block in self._blocks_of(k):
                if self.encoder == "transformer":
                    h = block(h, mask=m, training=training)
                elif self.encoder == "relation":
                    h = block(h, h, value_mask=m)
                else:
                    h = block(h)
            encoded.append(h)
        return encoded, masks

    def _model_arguments(self):
        return {
            "encoder": self.encoder,
            "num_blocks": self.num_blocks,
            "num_inducing_points": self.num_inducing_points,
            "relation_dim": self.relation_dim,
            "share_encoder": self.share_encoder,
            "share_input_projection": self.share_input_projection,
        }
