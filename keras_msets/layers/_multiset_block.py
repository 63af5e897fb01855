"""The multi-set structure of eq. 10-11 around any pair block (private).

`MultisetBlock` wraps a pair block `T(query, value)` the way
`keras.layers.Bidirectional` wraps a recurrent layer: it is given one
unbuilt pair block and makes the copies it needs from that block's config.
The public multi-set layers are this wrapper around a given pair block:

- `MultisetAttentionBlock`: `MultiheadAttentionBlock` (eq. 2);
- `DimensionEquivariantMultisetAttentionBlock`: the multichannel
  attention block of Sec. 3.5;
- `MultisetRelationBlock`: a relation-network block (eq. 4, 6);
- `InducedMultisetAttentionBlock`: `MultiheadAttentionBlock` reading a
  per-set summary through inducing points instead of the set itself.

The three attention layers share `AttentionMultisetBlock`, which takes the
attention block's arguments and makes their pair block.

A pair block is a layer called as `T(query, value, value_mask=None,
training=None)` that returns a tensor shaped like `query`, built with
`T.build(query_shape, value_shape)`, and whose class has a static
`check_shape(shape, name)` (the shape of one set it accepts).
"""

import keras
from keras import ops

from keras_msets.layers._feed_forward_block import apply_dense
from keras_msets.layers._feed_forward_block import apply_norm
from keras_msets.layers._feed_forward_block import writes_out
from keras_msets.layers._multihead_attention_block import BLOCK_ARGUMENTS
from keras_msets.layers._multihead_attention_block import (
    MultiheadAttentionBlock,
)
from keras_msets.layers._multihead_attention_block import as_features
from keras_msets.layers._multihead_attention_block import (
    check_features_argument,
)
from keras_msets.layers._multihead_attention_block import check_mask_argument
from keras_msets.layers._multihead_attention_block import run_block
from keras_msets.layers._multihead_attention_block import set_mask
from keras_msets.layers._multihead_attention_block import zero_padding
from keras_msets.utils.validation import check_bool
from keras_msets.utils.validation import check_choice
from keras_msets.utils.validation import check_positive_float

MERGES = ("concat", "sum")
WEIGHT_SHARINGS = ("none", "cross", "symmetric")


def describe(value):
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


def check_set_list(
    input_shape, owner, num_sets=None, what="`inputs`", other_forms=""
):
    """Checks a list of at least 2 set shapes; returns it as tuples.

    `owner` (e.g. "Layer 'msab'") names the layer or model, built for
    `num_sets` sets (None: not built yet); `what` names the list and
    `other_forms` says what else may stand for it.
    """
    if _is_shape(input_shape) or not isinstance(input_shape, (list, tuple)):
        raise ValueError(
            f"{what} must be a list of at least 2 sets{other_forms}, not a "
            f"single tensor. Received: inputs of shape {input_shape}"
        )
    shapes = [tuple(s) for s in input_shape]
    if len(shapes) < 2:
        raise ValueError(
            f"{what} must be a list of at least 2 sets. Received: inputs "
            f"with {len(shapes)} set(s) of shapes {shapes}"
        )
    if num_sets is not None and len(shapes) != num_sets:
        raise ValueError(
            f"{owner} was built for {num_sets} sets. Received: "
            f"{len(shapes)} sets"
        )
    return shapes


def instance_suffixes(count, shared):
    """Name suffixes of per-set sub-layers: `[""]` if shared, else `_{k}`."""
    return [""] if shared else [f"_{k}" for k in range(count)]


def _set_mask(mask):
    """A mask over `[batch, n, ...]` as a boolean `[batch, n]` mask."""
    mask = ops.cast(mask, "bool")
    if len(mask.shape) > 2:
        mask = ops.any(mask, axis=tuple(range(2, len(mask.shape))))
    return mask


class MultisetBlock(keras.layers.Layer):
    """Multi-set block: a pair block per ordered pair of sets, merged.

    Selby et al.'s multi-set attention block (eq. 10-11) with the pair
    encoder `T_kl` left open: on `K >= 2` sets, each set `X_k` is encoded
    against itself, `T_kk(X_k, X_k)`, and against every other set,
    `T_kl(X_k, X_l)`; the cross results are averaged over the other sets,
    `C_k = mean_{l != k} T_kl` (eq. 10-11 as written for `K = 2`), and
    merged: `Z_k = LN(X_k + g([T_kk || C_k]))`, with
    `g = Dense(dim, merge_activation)` (`merge="concat"`) or a sum
    (`merge="sum"`). `cross_only=True` drops `T_kk`.

    Weight sharing: `"none"` makes one pair block per ordered pair
    (`self_block_{k}`, `cross_block_{k}_{l}`) and one merge per set
    (`merge_dense_{k}`, `merge_norm_{k}`); `"cross"` shares one
    `cross_block`; `"symmetric"` also shares one `self_block`,
    `merge_dense` and `merge_norm`. These names are frozen (weight files
    are keyed by them).

    The wrapper zero-fills padded elements, resolves the masks (`masks=`
    before the Keras masks), checks the list of sets and returns each
    input's mask over every axis of its output but the last. It is not
    serializable on its own: each public subclass builds its pair block
    from its own arguments and writes them in its config.

    A subclass lists in `pair_arguments` the pair block's arguments that
    it takes itself: they are kept as its attributes and written in its
    config after the multi-set structure's.

    Args:
        pair_block: an unbuilt pair block (see the module docstring). Its
            copies are made with `from_config`, renamed, and given this
            layer's dtype policy.
        merge: `"concat"` or `"sum"`.
        cross_only: drop the self terms.
        weight_sharing: `"none"`, `"cross"` or `"symmetric"`.
        merge_activation: activation of `g`.
        layer_norm_epsilon: epsilon of the merge layer norms.
        **kwargs: base layer keyword arguments.
    """

    pair_arguments = ()

    def __init__(
        self,
        pair_block,
        merge="concat",
        cross_only=False,
        weight_sharing="none",
        merge_activation="relu",
        layer_norm_epsilon=1e-5,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.merge = check_choice("merge", merge, MERGES)
        self.cross_only = check_bool("cross_only", cross_only)
        self.weight_sharing = check_choice(
            "weight_sharing", weight_sharing, WEIGHT_SHARINGS
        )
        self.merge_activation = keras.activations.get(merge_activation)
        self.layer_norm_epsilon = check_positive_float(
            "layer_norm_epsilon", layer_norm_epsilon
        )
        # The template has no weights: it is kept as its class and config,
        # so that it is never tracked (nor saved) as a sub-layer.
        self._pair_class = type(pair_block)
        self._pair_config = pair_block.get_config()
        for name in self.pair_arguments:
            setattr(self, name, getattr(pair_block, name))
        self.num_sets = None
        self.supports_masking = True

    def make_pair_block(self, name):
        """A new copy of the pair block, named `name`."""
        config = dict(self._pair_config)
        config.update({"name": name, "dtype": self.dtype_policy})
        return self._pair_class.from_config(config)

    # Shapes --------------------------------------------------------------

    def _check_shapes(self, input_shape):
        """Validates a list of set shapes; returns it as a list of tuples."""
        shapes = check_set_list(
            input_shape, f"Layer '{self.name}'", self.num_sets
        )
        shapes = [
            tuple(self._pair_class.check_shape(s, f"inputs[{k}]"))
            for k, s in enumerate(shapes)
        ]
        if len({s[-1] for s in shapes}) != 1:
            raise ValueError(
                "All sets in `inputs` must have the same feature size (the "
                f"last axis). Received: inputs shapes={shapes}"
            )
        for axis in range(2, len(shapes[0]) - 1):
            if len({s[axis] for s in shapes if s[axis] is not None}) > 1:
                raise ValueError(
                    "All sets in `inputs` must have the same number of input "
                    f"dimensions `d` (axis {axis}). Received: inputs "
                    f"shapes={shapes}"
                )
        if len({s[0] for s in shapes if s[0] is not None}) > 1:
            raise ValueError(
                "All sets in `inputs` must have the same batch size. "
                f"Received: inputs shapes={shapes}"
            )
        return shapes

    # Structure -----------------------------------------------------------

    def _self_index(self, k):
        return 0 if self.weight_sharing == "symmetric" else k

    def _cross_index(self, k, j):
        if self.weight_sharing != "none":
            return 0
        # Ordered pairs (k, j), j != k, in row-major order.
        return k * (self.num_sets - 1) + (j if j < k else j - 1)

    def _merge_index(self, k):
        return 0 if self.weight_sharing == "symmetric" else k

    def _block(self, k, j):
        if k == j:
            return self.self_blocks[self._self_index(k)]
        return self.cross_blocks[self._cross_index(k, j)]

    def build(self, input_shape):
        shapes = self._check_shapes(input_shape)
        self.build_blocks(shapes, shapes)

    def build_blocks(self, query_shapes, value_shapes):
        """Creates and builds the pair blocks and the merges.

        Pair block `T_kl` is built on `query_shapes[k]` and
        `value_shapes[l]`: the sets themselves, or what stands for them as
        keys and values (the summaries of `InducedMultisetAttentionBlock`).
        """
        num_sets = len(query_shapes)
        self.num_sets = num_sets
        dim = query_shapes[0][-1]
        suffixes = instance_suffixes(
            num_sets, self.weight_sharing == "symmetric"
        )
        self.self_blocks = []
        if not self.cross_only:
            self.self_blocks.extend(
                self.make_pair_block(f"self_block{suffix}")
                for suffix in suffixes
            )
        if self.weight_sharing == "none":
            self.cross_blocks = [
                self.make_pair_block(f"cross_block_{k}_{j}")
                for k in range(num_sets)
                for j in range(num_sets)
                if j != k
            ]
        else:
            self.cross_blocks = [self.make_pair_block("cross_block")]
        self.merge_denses = []
        if self.merge == "concat":
            self.merge_denses = [
                keras.layers.Dense(
                    dim,
                    activation=self.merge_activation,
                    dtype=self.dtype_policy,
                    name=f"merge_dense{suffix}",
                )
                for suffix in suffixes
            ]
        self.merge_norms = [
            keras.layers.LayerNormalization(
                epsilon=self.layer_norm_epsilon,
                dtype=self.dtype_policy,
                name=f"merge_norm{suffix}",
            )
            for suffix in suffixes
        ]
        built = set()
        for k in range(num_sets):
            pairs = [(k, j) for j in range(num_sets) if j != k]
            if not self.cross_only:
                pairs.append((k, k))
            for q, v in pairs:
                block = self._block(q, v)
                if id(block) not in built:
                    block.build(query_shapes[q], value_shapes[v])
                    built.add(id(block))
        num_terms = 1 if self.cross_only else 2
        for k in range(len(suffixes)):
            shape = query_shapes[k]
            if self.merge_denses:
                self.merge_denses[k].build(shape[:-1] + (num_terms * dim,))
            self.merge_norms[k].build(shape)

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
                    f"set. Received: {name}={describe(given)}"
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

    def prepare_sets(self, inputs, masks=None, mask=None):
        """Checks the sets; returns them zero-filled, and `[batch, n]` masks."""
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(
                "`inputs` must be a list of at least 2 sets. Received: "
                f"inputs={describe(inputs)}"
            )
        self._check_shapes([tuple(x.shape) for x in inputs])
        masks = self._resolve_masks(masks, mask, len(inputs))
        sets, set_masks = [], []
        for k, (x, m) in enumerate(zip(inputs, masks, strict=True)):
            x = as_features(x, self.compute_dtype, f"inputs[{k}]")
            if m is not None:
                m = set_mask(f"masks[{k}]", m, x)
                x, m = zero_padding(x, _set_mask(m))
            sets.append(x)
            set_masks.append(m)
        return sets, set_masks

    def merge_pairs(self, sets, values, value_masks, training=None):
        """`Z_k = LN(X_k + g([T_kk(X_k, V_k) || mean_l T_kl(X_k, V_l)]))`.

        `values[l]` (with `value_masks[l]`) is what the pair blocks read
        for set `l`: the set itself, or a summary of it.
        """
        num_sets = len(sets)
        outputs = []
        for k in range(num_sets):
            cross = [
                run_block(
                    self._block(k, j),
                    sets[k],
                    values[j],
                    value_mask=value_masks[j],
                    training=training,
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
                self_term = run_block(
                    self._block(k, k),
                    sets[k],
                    values[k],
                    value_mask=value_masks[k],
                    training=training,
                )
                terms = [self_term, cross_term]
            if self.merge == "concat":
                dense = self.merge_denses[self._merge_index(k)]
                merged = ops.concatenate(terms, axis=-1)
                if writes_out(dense):
                    merged = apply_dense(dense, merged)
                else:
                    merged = dense(merged)
            else:
                merged = terms[0]
                for term in terms[1:]:
                    merged = merged + term
            norm = self.merge_norms[self._merge_index(k)]
            merged = sets[k] + merged
            if writes_out(norm):
                outputs.append(apply_norm(norm, merged))
            else:
                outputs.append(norm(merged))
        return outputs

    def __call__(self, inputs, *args, **kwargs):
        check_features_argument("inputs", inputs)
        check_mask_argument("masks", kwargs.get("masks"), inputs)
        check_mask_argument("mask", kwargs.get("mask"), inputs)
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs, masks=None, mask=None, training=None):
        sets, set_masks = self.prepare_sets(inputs, masks, mask)
        return self.merge_pairs(sets, sets, set_masks, training=training)

    def compute_mask(self, inputs, mask=None):
        if mask is None or all(m is None for m in mask):
            return None
        # Keras's convention: a mask over every axis but the last one.
        if inputs is None:
            return list(mask)
        outputs = []
        for x, m in zip(inputs, mask, strict=True):
            if m is not None and len(x.shape) > 3:
                m = _set_mask(m)
                for _ in range(len(x.shape) - 3):
                    m = ops.expand_dims(m, -1)
                m = ops.logical_and(m, ops.ones_like(x[..., 0], dtype="bool"))
            outputs.append(m)
        return outputs

    def compute_output_shape(self, input_shape):
        return [tuple(s) for s in self._check_shapes(input_shape)]

    def get_config(self):
        config = super().get_config()
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
        config.update(
            {name: getattr(self, name) for name in self.pair_arguments}
        )
        return config


class AttentionMultisetBlock(MultisetBlock):
    """A `MultisetBlock` whose pair block is an attention block (private).

    The base of the public multi-set attention layers: it takes the
    attention block's arguments, makes the pair block of class
    `pair_class` from them, and passes the other keyword arguments
    (`merge`, `cross_only`, `weight_sharing`, `merge_activation`, base
    layer arguments) to `MultisetBlock`.
    """

    pair_class = MultiheadAttentionBlock
    pair_arguments = BLOCK_ARGUMENTS

    def __init__(
        self,
        num_heads,
        key_dim=None,
        ff_dim=None,
        dropout=0.0,
        layer_norm_epsilon=1e-5,
        **kwargs,
    ):
        pair_block = self.pair_class(
            num_heads, key_dim, ff_dim, dropout, layer_norm_epsilon
        )
        super().__init__(
            pair_block, layer_norm_epsilon=layer_norm_epsilon, **kwargs
        )
