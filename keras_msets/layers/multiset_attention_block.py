import keras
from keras import ops

from keras_msets.layers._multihead_attention_block import (
    MultiheadAttentionBlock,
)
from keras_msets.layers._multihead_attention_block import block_arguments
from keras_msets.layers._multihead_attention_block import check_dropout
from keras_msets.layers._multihead_attention_block import check_epsilon
from keras_msets.layers._multihead_attention_block import check_positive_int
from keras_msets.layers._multihead_attention_block import check_set_shape
from keras_msets.layers._multihead_attention_block import zero_padding

MERGES = ("concat", "sum")
WEIGHT_SHARINGS = ("none", "cross", "symmetric")


def _describe(value):
    """A short description of a call argument for error messages."""
    shape = getattr(value, "shape", None)
    if shape is not None:
        return f"a {type(value).__name__} of shape {tuple(shape)}"
    return repr(value)


def _is_shape(value):
    return isinstance(value, (list, tuple)) and all(
        v is None or (isinstance(v, int) and not isinstance(v, bool))
        for v in value
    )


class BaseMultisetBlock(keras.layers.Layer):
    """Shared machinery of the multi-set blocks (internal, not exported).

    Holds what Selby et al.'s multi-set attention block (eq. 10-11) does
    around its pair encoders `T_kl`: validating a list of `K >= 2` sets,
    zero-filling padded elements, creating one pair encoder per ordered
    pair of sets (or sharing them, `weight_sharing`), averaging the cross
    results of a set over the other sets, the merge `g` and the residual
    layer norm `Z_k = LN(X_k + g(T_kk, mean_l T_kl))`. A subclass chooses
    the pair encoder through `_make_pair_block`, `_build_pair_block` and
    `_call_pair`, and may add per-set state through `_build_extra` and
    `_prepare`.

    Sub-layers are created in `build()`, where the number of sets is
    known, with stable names: `self_block_{k}` and `cross_block_{k}_{l}`
    (unshared), `self_block` and `cross_block` (shared), `merge_dense_{k}`
    and `merge_norm_{k}` (or `merge_dense` and `merge_norm` when shared).
    """

    def __init__(
        self,
        merge="concat",
        cross_only=False,
        weight_sharing="none",
        merge_activation="relu",
        layer_norm_epsilon=1e-5,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if merge not in MERGES:
            raise ValueError(
                f"`merge` must be one of {MERGES}. Received: merge={merge!r}"
            )
        if not isinstance(cross_only, bool):
            raise ValueError(
                "`cross_only` must be a bool. Received: "
                f"cross_only={cross_only!r}"
            )
        if weight_sharing not in WEIGHT_SHARINGS:
            raise ValueError(
                f"`weight_sharing` must be one of {WEIGHT_SHARINGS}. "
                f"Received: weight_sharing={weight_sharing!r}"
            )
        self.merge = merge
        self.cross_only = cross_only
        self.weight_sharing = weight_sharing
        self.merge_activation = keras.activations.get(merge_activation)
        self.layer_norm_epsilon = check_epsilon(layer_norm_epsilon)
        self.num_sets = None
        self.supports_masking = True

    # Hooks ---------------------------------------------------------------

    def _check_one_shape(self, shape, name):
        return check_set_shape(shape, name)

    def _make_pair_block(self, name):
        raise NotImplementedError

    def _build_pair_block(self, block, query_shape, value_shape):
        block.build(query_shape, value_shape)

    def _build_extra(self, shapes):
        """Creates per-set state (e.g. inducing points) after the blocks."""

    def _prepare(self, sets, masks, training):
        """Per-call state shared by the pair encoders (None by default)."""
        return None

    def _call_pair(self, block, k, j, sets, masks, context, training):
        raise NotImplementedError

    def _normalize_mask(self, mask, x):
        """Turns a mask given for set `x` into `[batch, n]` (or None)."""
        return mask

    def _pair_config(self):
        raise NotImplementedError

    # Structure -----------------------------------------------------------

    def _check_shapes(self, input_shape):
        """Validates a list of set shapes; returns it as a list of tuples."""
        if _is_shape(input_shape) or not isinstance(input_shape, (list, tuple)):
            raise ValueError(
                "`inputs` must be a list of at least 2 sets, not a single "
                f"tensor. Received: inputs of shape {input_shape}"
            )
        shapes = [tuple(s) for s in input_shape]
        if len(shapes) < 2:
            raise ValueError(
                "`inputs` must be a list of at least 2 sets. Received: "
                f"inputs with {len(shapes)} set(s) of shapes {shapes}"
            )
        shapes = [
            self._check_one_shape(s, f"inputs[{k}]")
            for k, s in enumerate(shapes)
        ]
        dims = [s[-1] for s in shapes]
        if len(set(dims)) != 1:
            raise ValueError(
                "All sets in `inputs` must have the same feature size (the "
                f"last axis). Received: inputs shapes={shapes}"
            )
        batches = {s[0] for s in shapes if s[0] is not None}
        if len(batches) > 1:
            raise ValueError(
                "All sets in `inputs` must have the same batch size. "
                f"Received: inputs shapes={shapes}"
            )
        if self.num_sets is not None and len(shapes) != self.num_sets:
            raise ValueError(
                f"Layer '{self.name}' was built for {self.num_sets} sets. "
                f"Received: inputs with {len(shapes)} sets"
            )
        return shapes

    def _self_index(self, k):
        return 0 if self.weight_sharing == "symmetric" else k

    def _cross_index(self, k, j):
        if self.weight_sharing != "none":
            return 0
        # Ordered pairs (k, j), j != k, in row-major order.
        return k * (self.num_sets - 1) + (j if j < k else j - 1)

    def _merge_index(self, k):
        return 0 if self.weight_sharing == "symmetric" else k

    def build(self, input_shape):
        shapes = self._check_shapes(input_shape)
        num_sets = len(shapes)
        self.num_sets = num_sets
        dim = shapes[0][-1]
        shared = self.weight_sharing == "symmetric"
        self.self_blocks = []
        if not self.cross_only:
            if shared:
                self.self_blocks.append(self._make_pair_block("self_block"))
            else:
                self.self_blocks.extend(
                    self._make_pair_block(f"self_block_{k}")
                    for k in range(num_sets)
                )
        if self.weight_sharing == "none":
            self.cross_blocks = [
                self._make_pair_block(f"cross_block_{k}_{j}")
                for k in range(num_sets)
                for j in range(num_sets)
                if j != k
            ]
        else:
            self.cross_blocks = [self._make_pair_block("cross_block")]
        merge_names = [""] if shared else [f"_{k}" for k in range(num_sets)]
        self.merge_denses = []
        if self.merge == "concat":
            self.merge_denses = [
                keras.layers.Dense(
                    dim,
                    activation=self.merge_activation,
                    dtype=self.dtype_policy,
                    name=f"merge_dense{suffix}",
                )
                for suffix in merge_names
            ]
        self.merge_norms = [
            keras.layers.LayerNormalization(
                epsilon=self.layer_norm_epsilon,
                dtype=self.dtype_policy,
                name=f"merge_norm{suffix}",
            )
            for suffix in merge_names
        ]
        built = set()
        for k in range(num_sets):
            pairs = [(k, j) for j in range(num_sets) if j != k]
            if not self.cross_only:
                pairs.append((k, k))
            for q, v in pairs:
                block = self._block(q, v)
                if id(block) not in built:
                    self._build_pair_block(block, shapes[q], shapes[v])
                    built.add(id(block))
        num_terms = 1 if self.cross_only else 2
        for k in range(len(merge_names)):
            if self.merge_denses:
                self.merge_denses[k].build(shapes[k][:-1] + (num_terms * dim,))
            self.merge_norms[k].build(shapes[k])
        self._build_extra(shapes)

    def _block(self, k, j):
        if k == j:
            return self.self_blocks[self._self_index(k)]
        return self.cross_blocks[self._cross_index(k, j)]

    # Call ----------------------------------------------------------------

    def _resolve_masks(self, masks, mask, num_sets):
        resolved = []
        for name, given in (("masks", masks), ("mask", mask)):
            if given is None:
                resolved.append([None] * num_sets)
                continue
            if not isinstance(given, (list, tuple)):
                raise ValueError(
                    f"`{name}` must be a list with one mask (or None) per "
                    f"set. Received: {name}={_describe(given)}"
                )
            if len(given) != num_sets:
                raise ValueError(
                    f"`{name}` must have one entry per set ({num_sets}). "
                    f"Received: {name} with {len(given)} entries"
                )
            resolved.append(list(given))
        explicit, keras_masks = resolved
        return [
            e if e is not None else m
            for e, m in zip(explicit, keras_masks, strict=True)
        ]

    def call(self, inputs, masks=None, mask=None, training=None):
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(
                "`inputs` must be a list of at least 2 sets. Received: "
                f"inputs={_describe(inputs)}"
            )
        self._check_shapes([tuple(x.shape) for x in inputs])
        num_sets = len(inputs)
        masks = self._resolve_masks(masks, mask, num_sets)
        sets, set_masks = [], []
        for x, m in zip(inputs, masks, strict=True):
            if m is not None:
                m = self._normalize_mask(m, x)
                x, m = zero_padding(x, m)
                while len(m.shape) > 2:  # [batch, n, 1] for rank-4 sets
                    m = m[..., 0]
            sets.append(x)
            set_masks.append(m)
        context = self._prepare(sets, set_masks, training)
        outputs = []
        for k in range(num_sets):
            cross = [
                self._call_pair(
                    self._block(k, j), k, j, sets, set_masks, context, training
                )
                for j in range(num_sets)
                if j != k
            ]
            # The mean over the other sets: for K = 2 this is eq. 10-11.
            cross_term = cross[0]
            for term in cross[1:]:
                cross_term = cross_term + term
            if len(cross) > 1:
                cross_term = cross_term / float(len(cross))
            terms = [cross_term]
            if not self.cross_only:
                self_term = self._call_pair(
                    self._block(k, k), k, k, sets, set_masks, context, training
                )
                terms = [self_term, cross_term]
            if self.merge == "concat":
                dense = self.merge_denses[self._merge_index(k)]
                merged = dense(ops.concatenate(terms, axis=-1))
            else:
                merged = terms[0]
                for term in terms[1:]:
                    merged = merged + term
            norm = self.merge_norms[self._merge_index(k)]
            outputs.append(norm(sets[k] + merged))
        return outputs

    def compute_mask(self, inputs, mask=None):
        if mask is None or all(m is None for m in mask):
            return None
        return list(mask)

    def compute_output_shape(self, input_shape):
        return [tuple(s) for s in self._check_shapes(input_shape)]

    def get_config(self):
        config = super().get_config()
        config.update(self._pair_config())
        config.update(
            {
                "merge": self.merge,
                "cross_only": self.cross_only,
                "weight_sharing": self.weight_sharing,
                "merge_activation": keras.activations.serialize(
                    self.merge_activation
                ),
                "layer_norm_epsilon": self.layer_norm_epsilon,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="keras_msets")
class MultisetAttentionBlock(BaseMultisetBlock):
    """Multi-set attention block (MSAB): every set attends to every set.

    Selby et al.'s block on `K >= 2` sets `X_1, ..., X_K` (eq. 10-11):
    each set attends to itself with its own transformer block (eq. 2),
    `T_kk(X_k, X_k)`, and to every other set, `T_kl(X_k, X_l)`, and the two
    results are merged per element by `g`, a one-layer ReLU feedforward
    network on their concatenation:
    `Z_k = LN(X_k + g([T_kk(X_k, X_k) || T_kl(X_k, X_l)]))`. The layer norm
    around the block is the one of App. B ("layer norm around each encoder
    block"). Each output set is permutation equivariant in its own set and
    invariant to the order of the other sets' elements (partial permutation
    equivariance), so stacked MSABs followed by pooling over each set
    (eq. 12) give partially permutation invariant models.

    For `K > 2` sets (Sec. 5.4 only says the cost becomes quadratic in the
    union of the sets) the cross results of set `k` are averaged over the
    other sets, `C_k = mean_{l != k} T_kl(X_k, X_l)`, and `g` merges
    `[T_kk || C_k]` exactly as for two sets. This keeps eq. 10-11 unchanged
    for `K = 2`, keeps `g`'s size independent of `K`, keeps the merged
    term's scale independent of `K` (which matters for `merge="sum"`), and
    with shared cross blocks makes `Z_k` symmetric in the other sets. With
    unshared blocks each ordered pair still has its own `T_kl`, so the sets
    stay distinguishable; the set order matters only through those blocks.

    Ablations of Sec. 5: `merge="sum"` is Sum-Merge,
    `Z_k = LN(X_k + T_kk + C_k)` (no merge weights), and `cross_only=True`
    is Cross-Only, without the self blocks: `Z_k = LN(X_k + g(C_k))`, so an
    element of set `k` sees the other elements of its own set only through
    earlier blocks. Weight sharing (as in the authors' code):
    `"none"` gives every ordered pair its own block (`K` self blocks and
    `K (K - 1)` cross blocks, `K` merges); `"cross"` shares one cross block
    by all ordered pairs (so `T_xy = T_yx`), self blocks and merges stay
    per set; `"symmetric"` also shares one self block and one merge (and
    norm) by all sets, so the block treats the sets symmetrically:
    reordering the input sets reorders the outputs the same way.

    Padded elements are replaced by zeros and are never attended to, so
    they never change the valid outputs; the output at a padded position is
    finite and not meaningful. An all-masked set has no keys: every
    attention term onto it is defined as 0 (its block gives
    `LN(H + FF(H))` with `H = LN(X_k)`), so the result stays finite.

    Args:
        num_heads: number of attention heads of every block.
        key_dim: size of each head's queries, keys and values. None (the
            default): `dim // num_heads`, which must divide evenly.
        ff_dim: hidden width of the blocks' feedforward networks. None (the
            default): `2 * dim` (App. B: hidden size twice the latent one).
        dropout: dropout rate on the attention probabilities. Defaults to 0.
        layer_norm_epsilon: epsilon of every layer norm. Defaults to `1e-5`.
        merge: `"concat"` (the default, `g` on the concatenation) or
            `"sum"` (the Sum-Merge ablation).
        cross_only: if True, drops the self blocks (the Cross-Only
            ablation). Defaults to False.
        weight_sharing: `"none"` (the default), `"cross"` or `"symmetric"`,
            see above.
        merge_activation: activation of `g` (`merge="concat"` only).
            Defaults to `"relu"`, as the paper states; the authors' code
            uses a linear merge (`None`).
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: a list of `K >= 2` sets, each `[batch, n_k, dim]`; the set
            sizes `n_k` may differ, `batch` and `dim` may not.
        masks: optional list of `K` boolean masks `[batch, n_k]` (True for
            real elements), or None entries for sets without padding.
        mask: the same under Keras's name; filled automatically from the
            inputs' Keras masks. An entry of `masks` that is not None wins.
            Masks given as `masks=` are not attached to the outputs: pass
            them to the next block too.
        training: whether dropout is active.

    Input shape:
        A list of `K` tensors `[batch, n_k, dim]`.

    Output shape:
        A list of `K` tensors `[batch, n_k, dim]`, each with its input's
        Keras mask (or the one passed as `mask=`).

    Example:
    >>> x = keras.random.normal((2, 5, 16))
    >>> y = keras.random.normal((2, 7, 16))
    >>> msab = keras_msets.layers.MultisetAttentionBlock(num_heads=4)
    >>> zx, zy = msab([x, y])
    >>> zx.shape, zy.shape
    ((2, 5, 16), (2, 7, 16))

    References:
        - Selby et al., "Learning Functions on Multiple Sets using
          Multi-Set Transformers", UAI 2022.
        - Lee et al., "Set Transformer: A Framework for Attention-based
          Permutation-Invariant Neural Networks", ICML 2019.
    """

    def __init__(
        self,
        num_heads,
        key_dim=None,
        ff_dim=None,
        dropout=0.0,
        layer_norm_epsilon=1e-5,
        merge="concat",
        cross_only=False,
        weight_sharing="none",
        merge_activation="relu",
        **kwargs,
    ):
        super().__init__(
            merge=merge,
            cross_only=cross_only,
            weight_sharing=weight_sharing,
            merge_activation=merge_activation,
            layer_norm_epsilon=layer_norm_epsilon,
            **kwargs,
        )
        # The blocks are made in build(), once the number of sets is known.
        self.num_heads = check_positive_int("num_heads", num_heads)
        self.key_dim = check_positive_int("key_dim", key_dim, allow_none=True)
        self.ff_dim = check_positive_int("ff_dim", ff_dim, allow_none=True)
        self.dropout = check_dropout(dropout)

    def _make_pair_block(self, name):
        return MultiheadAttentionBlock(
            **block_arguments(self), dtype=self.dtype_policy, name=name
        )

    def _call_pair(self, block, k, j, sets, masks, context, training):
        return block(sets[k], sets[j], value_mask=masks[j], training=training)

    def _pair_config(self):
        return block_arguments(self)
