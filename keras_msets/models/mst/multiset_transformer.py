"""Multi-Set Transformers (Selby et al., UAI 2022) and the model factory."""

import keras

from keras_msets.layers.induced_multiset_attention_block import (
    InducedMultisetAttentionBlock,
)
from keras_msets.layers.multiset_attention_block import MultisetAttentionBlock
from keras_msets.layers.multiset_relation_block import MultisetRelationBlock
from keras_msets.models.mst.baselines import SingleSetBaseline
from keras_msets.models.mst.baselines import UnionTransformer
from keras_msets.models.mst.dimension_equivariant_multiset_transformer import (  # noqa: E501
    DimensionEquivariantMultiSetTransformer,
)
from keras_msets.models.mst.multiset_block_model import MultisetBlockModel
from keras_msets.utils.validation import check_positive_int


@keras.saving.register_keras_serializable(package="keras_msets")
class MultiSetTransformer(MultisetBlockModel):
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
    set sizes; not in the paper). The model of Sec. 3.5, for inputs of
    any dimension `d`, is `DimensionEquivariantMultiSetTransformer`.

    Defaults follow App. B of the paper: 4 blocks, 4 heads, feedforward
    width twice the latent width, PMA pooling, a decoder with one hidden
    layer of the feedforward width, layer norm around every block, latent
    width 128 (the counting tasks). Dropout is 0 (the paper gives none).

    Inputs and masks (all models of `build_multiset_model`): a list of `K`
    sets `[batch, n_k, dim]`, with boolean masks `[batch, n_k]` (True
    for real elements) given as `masks=[...]` or, for `model.fit` and
    saved models, in one dict `{"sets": [x, y], "masks": [x_mask, y_mask]}`.
    Padded elements never change the output; an all-masked set gives a
    finite output.

    Args:
        latent_dim: latent width. None (the default): 128.
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
            `InducedMultisetAttentionBlock`.
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
        `K` tensors `[batch, n_k, dim]`; the set sizes `n_k` may differ.

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

    # Read by code that treats both Multi-Set Transformers alike.
    dimension_equivariant = False

    def __init__(self, num_inducing_points=None, **kwargs):
        # The shared arguments and their defaults are the base's.
        super().__init__(**kwargs)
        self.num_inducing_points = check_positive_int(
            "num_inducing_points", num_inducing_points, allow_none=True
        )
        self._check_heads()

    def make_block(self, name):
        if self.num_inducing_points:
            return InducedMultisetAttentionBlock(
                self.num_inducing_points,
                name=name,
                **self._attention_arguments(),
                **self._block_arguments(),
            )
        return MultisetAttentionBlock(
            name=name, **self._attention_arguments(), **self._block_arguments()
        )

    def _model_arguments(self):
        config = super()._model_arguments()
        config["num_inducing_points"] = self.num_inducing_points
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        # Configs written while one class held both models (the shipped
        # presets among them) carry `dimension_equivariant`: True gives
        # the dimension-equivariant model, False the plain one.
        if config.pop("dimension_equivariant", False):
            if config.pop("num_inducing_points", None) is not None:
                raise ValueError(
                    "`num_inducing_points` is not available with "
                    "`dimension_equivariant=True`. Received: "
                    f"config={config}"
                )
            return DimensionEquivariantMultiSetTransformer.from_config(config)
        if config.pop("scale_output_by_dim", False):
            raise ValueError(
                "`scale_output_by_dim=True` needs `dimension_equivariant="
                "True` (only that model takes inputs of any dimension d). "
                f"Received: config={config}"
            )
        return super().from_config(config)


@keras.saving.register_keras_serializable(package="keras_msets")
class MultiSetRelationNetwork(MultisetBlockModel):
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
        `K` tensors `[batch, n_k, dim]`; each block holds
        `[batch, n_k, n_l, relation_dim]` pair tensors.

    Output shape:
        `[batch, output_dim]`.

    Example:
    >>> model = keras_msets.models.MultiSetRelationNetwork(
    ...     latent_dim=16, num_blocks=2, relation_dim=8)
    >>> x_mask = np.arange(5) < np.array([[5], [3]])  # 5 and 3 elements
    >>> x, y = np.ones((2, 5, 3)), np.ones((2, 4, 3))
    >>> model([x, y], masks=[x_mask, None]).shape
    (2, 1)

    References:
        - Selby et al., "Learning Functions on Multiple Sets using
          Multi-Set Transformers", UAI 2022.
        - Santoro et al., "A simple neural network module for relational
          reasoning", NeurIPS 2017.
    """

    def __init__(self, relation_dim=None, pooling="max", **kwargs):
        super().__init__(pooling=pooling, **kwargs)
        self.relation_dim = check_positive_int(
            "relation_dim", relation_dim, allow_none=True
        )
        if self.pooling == "pma":
            self._check_heads("`pooling='pma'` and ")

    def make_block(self, name):
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
    "dimension_equivariant": (DimensionEquivariantMultiSetTransformer, {}),
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
      (Multi-Set-Transformer-Equi), `DimensionEquivariantMultiSetTransformer`.
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
