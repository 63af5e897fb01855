"""Multi-Set Transformers (Selby et al., UAI 2022) and the model factory."""

import keras
from keras import ops

from keras_msets.layers._multihead_attention_block import check_positive_int
from keras_msets.layers.dimension_equivariant_multiset_attention_block import (  # noqa: E501
    DimensionEquivariantMultisetAttentionBlock,
)
from keras_msets.layers.induced_multiset_attention_block import (
    InducedMultisetAttentionBlock,
)
from keras_msets.layers.multiset_attention_block import MERGES
from keras_msets.layers.multiset_attention_block import WEIGHT_SHARINGS
from keras_msets.layers.multiset_attention_block import MultisetAttentionBlock
from keras_msets.layers.multiset_relation_block import MultisetRelationBlock
from keras_msets.models.mst.baselines import SingleSetBaseline
from keras_msets.models.mst.baselines import UnionTransformer
from keras_msets.models.mst.multiset_model import DEFAULT_CHANNELS
from keras_msets.models.mst.multiset_model import MultisetModel
from keras_msets.models.mst.multiset_model import check_bool
from keras_msets.models.mst.multiset_model import check_choice


class _MultisetBlockModel(MultisetModel):
    """A stack of `num_blocks` multi-set blocks as the encoder (internal)."""

    def __init__(
        self,
        num_blocks=4,
        merge="concat",
        cross_only=False,
        weight_sharing="none",
        merge_activation="relu",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_blocks = check_positive_int("num_blocks", num_blocks)
        self.merge = check_choice("merge", merge, MERGES)
        self.cross_only = check_bool("cross_only", cross_only)
        self.weight_sharing = check_choice(
            "weight_sharing", weight_sharing, WEIGHT_SHARINGS
        )
        self.merge_activation = keras.activations.get(merge_activation)

    def _make_block(self, name):
        raise NotImplementedError

    def _pooled_shape(self, shape):
        return shape

    def _build_encoder(self, latent_shapes):
        self.blocks = []
        for i in range(self.num_blocks):
            block = self._make_block(f"block_{i}")
            block.build(latent_shapes)
            self.blocks.append(block)
        return [self._pooled_shape(s) for s in latent_shapes]

    def _encode(self, hidden, masks, training):
        for block in self.blocks:
            hidden = block(hidden, masks=masks, training=training)
        return list(hidden), masks

    def _block_arguments(self):
        return {
            "merge": self.merge,
            "cross_only": self.cross_only,
            "weight_sharing": self.weight_sharing,
            "merge_activation": self.merge_activation,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "dtype": self.dtype_policy,
        }

    def _model_arguments(self):
        return {
            "num_blocks": self.num_blocks,
            "merge": self.merge,
            "cross_only": self.cross_only,
            "weight_sharing": self.weight_sharing,
            "merge_activation": keras.activations.serialize(
                self.merge_activation
            ),
            "share_input_projection": self.share_input_projection,
        }


@keras.saving.register_keras_serializable(package="keras_msets")
class MultiSetTransformer(_MultisetBlockModel):
    """Multi-Set Transformer: a partially permutation invariant model.

    The model of eq. 12 of Selby et al. on `K >= 2` sets: each set is
    projected to the latent size, a stack of `num_blocks` multi-set
    attention blocks (MSAB, eq. 10-11: every set attends to itself and to
    every other set, `Z_X = LN(X + g([T_xx(X, X) || T_xy(X, Y)]))`) encodes
    all sets together, each encoded set is pooled on its own (PMA by
    default, App. B) and a feedforward decoder `rho` reads the
    concatenation of the pooled vectors:
    `f(X, Y) = rho([Gamma_X phi_x(X, Y) || Gamma_Y phi_y(X, Y)])`. The
    output is unchanged when the elements of any one set are reordered
    (partial permutation invariance), but the sets themselves are ordered:
    `f(X, Y) != f(Y, X)` in general.

    The ablations of Sec. 5 are options: `merge="sum"` (Sum-Merge,
    `Z_X = LN(X + T_xx + T_xy)`), `cross_only=True` (Cross-Only, no
    `T_xx`, `T_yy`), and `num_inducing_points` routes all attention through
    learned inducing points (`InducedMultisetAttentionBlock`, linear in the
    set sizes; not in the paper). With `dimension_equivariant=True` this is
    the model of Sec. 3.5: every coordinate of every element is lifted
    from one channel to `latent_dim` channels by one shared `Dense`
    (`[batch, n, d] -> [batch, n, d, latent_dim]`), the blocks are
    `DimensionEquivariantMultisetAttentionBlock`s (attention logits summed
    over the `d` coordinates), and a max over the coordinates follows the
    last block. No weight then depends on `d`: the same model accepts
    inputs of any dimension `d` (all sets of a call share `d`) and is
    invariant to a permutation of the coordinates applied to every set.

    Defaults follow App. B of the paper: 4 blocks, 4 heads, feedforward
    width twice the latent width, PMA pooling, a decoder with one hidden
    layer of the feedforward width, layer norm around every block; latent
    width 128 (the counting tasks) or, for the dimension-equivariant model,
    16 channels per coordinate (the KL / MI tasks). Dropout is 0 (the paper
    gives none).

    Inputs and masks (all models of `build_multiset_model`): a list of `K`
    sets `[batch, n_k, dim]` (`[batch, n_k, d]` for the
    dimension-equivariant model), with boolean masks `[batch, n_k]` (True
    for real elements) given as `masks=[...]` or, for `model.fit` and
    saved models, in one dict `{"sets": [x, y], "masks": [x_mask, y_mask]}`.
    Padded elements never change the output; an all-masked set gives a
    finite output.

    Args:
        latent_dim: latent width (channels per coordinate when
            `dimension_equivariant`). None (the default): 128, or 16 when
            `dimension_equivariant`.
        num_blocks: number of multi-set blocks. Defaults to 4.
        num_heads: attention heads of the blocks and of PMA. Defaults to 4.
        key_dim: size of each head. None: `latent_dim // num_heads`.
        ff_dim: hidden width of the blocks' (and PMA's) feedforward
            networks and of the default decoder. None: `2 * latent_dim`.
        dropout: dropout on the attention probabilities. Defaults to 0.
        layer_norm_epsilon: epsilon of every layer norm. Defaults to 1e-5.
        merge: `"concat"` (the default, eq. 10-11) or `"sum"` (Sum-Merge).
        cross_only: drop the same-set blocks (Cross-Only). Defaults to
            False.
        weight_sharing: `"none"` (the default), `"cross"` or `"symmetric"`
            (see `MultisetAttentionBlock`).
        merge_activation: activation of the merge `g`. Defaults to
            `"relu"` (as the paper states).
        num_inducing_points: None (the default, full attention) or the
            number of inducing points per set of
            `InducedMultisetAttentionBlock`. Not available with
            `dimension_equivariant`.
        dimension_equivariant: the model of Sec. 3.5. Defaults to False.
        pooling: pooling of each set: `"pma"` (the default), `"mean"`,
            `"max"` or `"sum"`. PMA uses one seed and its own weights per
            set.
        decoder_units: widths of the decoder's hidden layers. None (the
            default): one hidden layer of `ff_dim` units; `[]`: a linear
            decoder (App. B, counting tasks).
        decoder_activation: activation of the decoder's hidden layers.
        output_dim: output width. Defaults to 1.
        output_activation: activation of the output layer (e.g.
            `"sigmoid"`). Defaults to None.
        share_input_projection: one input projection for all sets (the
            default, as in the authors' code), or one per set (which
            allows sets with different feature sizes).
        scale_output_by_dim: multiply the output by the input dimension
            `d` (only with `dimension_equivariant`). Defaults to False.
            Not in the paper: after the max over the coordinates the
            decoder cannot see `d` directly (only indirectly, e.g.
            through attention logits summed over the coordinates), which
            makes a quantity that grows in proportion to `d`, such as the
            mutual information of `d` independent coordinate pairs, hard
            to output; with this option the decoder answers per
            coordinate and the model answers in total
            (`mst_mutual_information` uses it).
        **kwargs: `keras.Model` keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: a list of `K >= 2` sets, or a dict with keys `"sets"` and
            (optionally) `"masks"`.
        masks: optional list of `K` boolean masks `[batch, n_k]` (or None
            entries); not together with a dict's `"masks"`.
        mask: Keras masks of the sets (filled automatically), used for sets
            without an explicit mask.
        training: whether dropout is active.

    Input shape:
        `K` tensors `[batch, n_k, dim]` (`[batch, n_k, d]` for the
        dimension-equivariant model, any `d`); the set sizes `n_k` may
        differ.

    Output shape:
        `[batch, output_dim]`.

    Example:
    >>> x = np.random.normal(size=(8, 10, 3)).astype("float32")
    >>> y = np.random.normal(size=(8, 12, 3)).astype("float32")
    >>> model = keras_msets.models.MultiSetTransformer(
    ...     latent_dim=16, num_blocks=2)
    >>> model([x, y]).shape
    (8, 1)
    >>> y_mask = np.tile(np.arange(12) < 7, (8, 1))  # 7 real elements
    >>> x_mask = np.ones((8, 10), bool)
    >>> model({"sets": [x, y], "masks": [x_mask, y_mask]}).shape
    (8, 1)

    References:
        - Selby et al., "Learning Functions on Multiple Sets using
          Multi-Set Transformers", UAI 2022.
        - Lee et al., "Set Transformer: A Framework for Attention-based
          Permutation-Invariant Neural Networks", ICML 2019.
    """

    def __init__(
        self,
        latent_dim=None,
        num_blocks=4,
        num_heads=4,
        key_dim=None,
        ff_dim=None,
        dropout=0.0,
        layer_norm_epsilon=1e-5,
        merge="concat",
        cross_only=False,
        weight_sharing="none",
        merge_activation="relu",
        num_inducing_points=None,
        dimension_equivariant=False,
        pooling="pma",
        decoder_units=None,
        decoder_activation="relu",
        output_dim=1,
        output_activation=None,
        share_input_projection=True,
        scale_output_by_dim=False,
        **kwargs,
    ):
        super().__init__(
            latent_dim=latent_dim,
            num_blocks=num_blocks,
            num_heads=num_heads,
            key_dim=key_dim,
            ff_dim=ff_dim,
            dropout=dropout,
            layer_norm_epsilon=layer_norm_epsilon,
            merge=merge,
            cross_only=cross_only,
            weight_sharing=weight_sharing,
            merge_activation=merge_activation,
            pooling=pooling,
            decoder_units=decoder_units,
            decoder_activation=decoder_activation,
            output_dim=output_dim,
            output_activation=output_activation,
            share_input_projection=share_input_projection,
            **kwargs,
        )
        self.num_inducing_points = check_positive_int(
            "num_inducing_points", num_inducing_points, allow_none=True
        )
        self.dimension_equivariant = check_bool(
            "dimension_equivariant", dimension_equivariant
        )
        self.scale_output_by_dim = check_bool(
            "scale_output_by_dim", scale_output_by_dim
        )
        if self.scale_output_by_dim and not self.dimension_equivariant:
            raise ValueError(
                "`scale_output_by_dim=True` needs `dimension_equivariant="
                "True` (only that model takes inputs of any dimension d). "
                f"Received: scale_output_by_dim={scale_output_by_dim}, "
                f"dimension_equivariant={dimension_equivariant}"
            )
        if self.dimension_equivariant and self.num_inducing_points:
            raise ValueError(
                "`num_inducing_points` is not available with "
                "`dimension_equivariant=True`. Received: num_inducing_points="
                f"{num_inducing_points}, dimension_equivariant=True"
            )
        if self.key_dim is None and self.resolved_latent_dim % self.num_heads:
            raise ValueError(
                "With `key_dim=None`, `latent_dim` must be divisible by "
                f"`num_heads`. Received: latent_dim={self.resolved_latent_dim}"
                f", num_heads={self.num_heads}"
            )

    # Dimension equivariance ------------------------------------------------

    def _default_latent_dim(self):
        if self.dimension_equivariant:
            return DEFAULT_CHANNELS
        return super()._default_latent_dim()

    def _check_set_shapes(self, shapes):
        if not self.dimension_equivariant:
            return super()._check_set_shapes(shapes)
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
        if self.dimension_equivariant:
            return tuple(shape) + (1,)
        return shape

    def _latent_shape(self, shape):
        if self.dimension_equivariant:
            return tuple(shape) + (self.resolved_latent_dim,)
        return super()._latent_shape(shape)

    def _lift(self, k, x):
        if self.dimension_equivariant:
            # [batch, n, d] -> [batch, n, d, 1]: one channel per coordinate.
            return ops.expand_dims(x, -1)
        return x

    def _pooled_shape(self, shape):
        if self.dimension_equivariant:
            return tuple(shape[:2]) + (shape[-1],)
        return shape

    def _encode(self, hidden, masks, training):
        encoded, masks = super()._encode(hidden, masks, training)
        if self.dimension_equivariant:
            # Sec. 3.5: max pooling over the input dimensions.
            encoded = [ops.max(z, axis=2) for z in encoded]
        return encoded, masks

    def _scale_output(self, outputs, sets):
        if not self.scale_output_by_dim:
            return outputs
        d = ops.cast(ops.shape(sets[0])[-1], outputs.dtype)
        return outputs * d

    # Blocks ----------------------------------------------------------------

    def _make_block(self, name):
        attention = {
            "num_heads": self.num_heads,
            "key_dim": self.key_dim,
            "ff_dim": self.ff_dim,
            "dropout": self.dropout,
        }
        attention.update(self._block_arguments())
        if self.dimension_equivariant:
            return DimensionEquivariantMultisetAttentionBlock(
                name=name, **attention
            )
        if self.num_inducing_points:
            return InducedMultisetAttentionBlock(
                self.num_inducing_points, name=name, **attention
            )
        return MultisetAttentionBlock(name=name, **attention)

    def _model_arguments(self):
        config = super()._model_arguments()
        config.update(
            {
                "num_inducing_points": self.num_inducing_points,
                "dimension_equivariant": self.dimension_equivariant,
                "scale_output_by_dim": self.scale_output_by_dim,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="keras_msets")
class MultiSetRelationNetwork(_MultisetBlockModel):
    """Multi-Set RN: the Multi-Set Transformer with relation-network blocks.

    The variant of Selby et al. (Sec. 5) in which the four transformer
    blocks of every multi-set block are replaced by relation-network blocks
    (`MultisetRelationBlock`: `R_xy(X, Y)_i = max_j theta_xy([x_i || y_j])`,
    eq. 4 and 6 with a max for Lambda, inside the post-LN block of eq. 2),
    merged as in eq. 10-11; each set is then pooled and the pooled vectors
    are decoded as in eq. 12. Sec. 5 states "max pooling operations for
    both Lambda and Gamma", so the final pooling `Gamma` defaults to a
    masked max (App. B mentions PMA for every model: `pooling="pma"`). The
    pair tensors cost `O(n_k n_l relation_dim)` memory per block (Table 5).

    Inputs, masks, outputs and the shared arguments are those of
    `MultiSetTransformer`; `num_heads`, `key_dim` and `dropout` only
    matter with `pooling="pma"`.

    Args:
        latent_dim: latent width. None (the default): 128.
        num_blocks: number of blocks. Defaults to 4.
        relation_dim: hidden width of the pairwise encoders `theta`. None:
            `2 * latent_dim`.
        ff_dim: hidden width of the feedforward networks and of the default
            decoder. None: `2 * latent_dim`.
        layer_norm_epsilon: epsilon of every layer norm. Defaults to 1e-5.
        merge: `"concat"` (the default) or `"sum"`.
        cross_only: drop the same-set blocks. Defaults to False.
        weight_sharing: `"none"` (the default), `"cross"` or `"symmetric"`.
        merge_activation: activation of the merge. Defaults to `"relu"`.
        pooling: `"max"` (the default, Sec. 5), `"pma"`, `"mean"` or
            `"sum"`.
        num_heads, key_dim, dropout: PMA's, with `pooling="pma"`.
        decoder_units, decoder_activation, output_dim, output_activation,
        share_input_projection: as in `MultiSetTransformer`.
        **kwargs: `keras.Model` keyword arguments.

    Call arguments:
        inputs, masks, mask, training: as in `MultiSetTransformer`.

    Input shape:
        `K` tensors `[batch, n_k, dim]`.

    Output shape:
        `[batch, output_dim]`.

    Example:
    >>> model = keras_msets.models.MultiSetRelationNetwork(
    ...     latent_dim=16, num_blocks=2)
    >>> model([np.ones((2, 5, 3)), np.ones((2, 4, 3))]).shape
    (2, 1)

    References:
        - Selby et al., "Learning Functions on Multiple Sets using
          Multi-Set Transformers", UAI 2022.
        - Santoro et al., "A simple neural network module for relational
          reasoning", NeurIPS 2017.
    """

    def __init__(
        self,
        latent_dim=None,
        num_blocks=4,
        relation_dim=None,
        ff_dim=None,
        layer_norm_epsilon=1e-5,
        merge="concat",
        cross_only=False,
        weight_sharing="none",
        merge_activation="relu",
        pooling="max",
        num_heads=4,
        key_dim=None,
        dropout=0.0,
        decoder_units=None,
        decoder_activation="relu",
        output_dim=1,
        output_activation=None,
        share_input_projection=True,
        **kwargs,
    ):
        super().__init__(
            latent_dim=latent_dim,
            num_blocks=num_blocks,
            num_heads=num_heads,
            key_dim=key_dim,
            ff_dim=ff_dim,
            dropout=dropout,
            layer_norm_epsilon=layer_norm_epsilon,
            merge=merge,
            cross_only=cross_only,
            weight_sharing=weight_sharing,
            merge_activation=merge_activation,
            pooling=pooling,
            decoder_units=decoder_units,
            decoder_activation=decoder_activation,
            output_dim=output_dim,
            output_activation=output_activation,
            share_input_projection=share_input_projection,
            **kwargs,
        )
        self.relation_dim = check_positive_int(
            "relation_dim", relation_dim, allow_none=True
        )
        if (
            self.pooling == "pma"
            and self.key_dim is None
            and self.resolved_latent_dim % self.num_heads
        ):
            raise ValueError(
                "With `pooling='pma'` and `key_dim=None`, `latent_dim` must "
                "be divisible by `num_heads`. Received: latent_dim="
                f"{self.resolved_latent_dim}, num_heads={self.num_heads}"
            )

    def _make_block(self, name):
        return MultisetRelationBlock(
            relation_dim=self.relation_dim,
            ff_dim=self.ff_dim,
            name=name,
            **self._block_arguments(),
        )

    def _model_arguments(self):
        config = super()._model_arguments()
        config["relation_dim"] = self.relation_dim
        return config


# ---------------------------------------------------------------------------
# Factory.
# ---------------------------------------------------------------------------

# name -> (class, arguments fixed by the name)
_MODELS = {
    "multiset_transformer": (MultiSetTransformer, {}),
    "cross_only": (MultiSetTransformer, {"cross_only": True}),
    "sum_merge": (MultiSetTransformer, {"merge": "sum"}),
    "multiset_rn": (MultiSetRelationNetwork, {}),
    "dimension_equivariant": (
        MultiSetTransformer,
        {"dimension_equivariant": True},
    ),
    "union_transformer": (UnionTransformer, {}),
    "single_set_transformer": (SingleSetBaseline, {"encoder": "transformer"}),
    "single_set_rn": (SingleSetBaseline, {"encoder": "relation"}),
    "single_set_deepsets": (SingleSetBaseline, {"encoder": "rff"}),
}

MULTISET_MODEL_NAMES = tuple(_MODELS)


def build_multiset_model(name, **kwargs):
    """Builds one of the multi-set models of Selby et al. by name.

    The models and baselines of Sec. 5 (Tables 1-4), all with the same
    inputs (a list of sets, or `{"sets": [...], "masks": [...]}`) and a
    `[batch, output_dim]` output:

    - `"multiset_transformer"`: `MultiSetTransformer` (eq. 12).
    - `"cross_only"`: the Cross-Only ablation,
      `MultiSetTransformer(cross_only=True)`.
    - `"sum_merge"`: the Sum-Merge ablation,
      `MultiSetTransformer(merge="sum")`.
    - `"multiset_rn"`: `MultiSetRelationNetwork` (Multi-Set RN).
    - `"dimension_equivariant"`: the model of Sec. 3.5
      (Multi-Set-Transformer-Equi),
      `MultiSetTransformer(dimension_equivariant=True)`.
    - `"union_transformer"`: `UnionTransformer`, a Set Transformer on the
      union of the sets (with a set-indicator feature by default).
    - `"single_set_transformer"`: `SingleSetBaseline(encoder=
      "transformer")`, a Set Transformer per set, pooled, concatenated,
      decoded.
    - `"single_set_rn"`: `SingleSetBaseline(encoder="relation")`, a
      relation network per set.
    - `"single_set_deepsets"`: `SingleSetBaseline(encoder="rff")`, the
      Single-Set RFF (Deep Sets): row-wise feedforward blocks, then a sum.

    Args:
        name: one of `MULTISET_MODEL_NAMES` above.
        **kwargs: arguments of the model's class. An argument that the name
            fixes (e.g. `cross_only` for `"cross_only"`) may be repeated
            only with the same value. `name=` defaults to the model name.

    Returns:
        An unbuilt `keras.Model` (built on its first call).

    Example:
    >>> model = keras_msets.models.build_multiset_model(
    ...     "cross_only", latent_dim=16, num_blocks=2)
    >>> model.cross_only
    True
    """
    if name not in _MODELS:
        raise ValueError(
            f"`name` must be one of {MULTISET_MODEL_NAMES}. Received: "
            f"name={name!r}"
        )
    cls, fixed = _MODELS[name]
    for key, value in fixed.items():
        if key in kwargs and kwargs[key] != value:
            raise ValueError(
                f"Model {name!r} has `{key}={value!r}`. Received: "
                f"{key}={kwargs[key]!r}"
            )
    arguments = dict(fixed)
    arguments.update(kwargs)
    arguments.setdefault("name", name)
    return cls(**arguments)
