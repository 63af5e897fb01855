"""The base of the models whose encoder is a stack of multi-set blocks.

`MultiSetTransformer`, `DimensionEquivariantMultiSetTransformer` and
`MultiSetRelationNetwork` differ only in the block they stack (and, for the
dimension-equivariant model, in how the sets are lifted and pooled); this
base holds the stack and the arguments of the multi-set structure (eq.
10-11). Not exported.
"""

import keras

from keras_msets.layers._multiset_block import MERGES
from keras_msets.layers._multiset_block import WEIGHT_SHARINGS
from keras_msets.models.mst.multiset_model import MultisetModel
from keras_msets.utils.validation import check_bool
from keras_msets.utils.validation import check_choice
from keras_msets.utils.validation import check_positive_int


class MultisetBlockModel(MultisetModel):
    """A stack of `num_blocks` multi-set blocks as the encoder (internal).

    A subclass says which block it stacks (`make_block(name)`); the blocks
    are `block_{i}` in `self.blocks` (names frozen: they key the weight
    files). The other arguments are those of `MultisetModel`.
    """

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

    def make_block(self, name):
        """One unbuilt multi-set block of the stack."""
        raise NotImplementedError

    def _attention_arguments(self):
        """The attention blocks' arguments held by the model."""
        return {
            "num_heads": self.num_heads,
            "key_dim": self.key_dim,
            "ff_dim": self.ff_dim,
            "dropout": self.dropout,
        }

    def _block_arguments(self):
        """The multi-set structure's arguments of every block."""
        return {
            "merge": self.merge,
            "cross_only": self.cross_only,
            "weight_sharing": self.weight_sharing,
            "merge_activation": self.merge_activation,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "dtype": self.dtype_policy,
        }

    def _build_encoder(self, latent_shapes):
        self.blocks = []
        for i in range(self.num_blocks):
            block = self.make_block(f"block_{i}")
            block.build(latent_shapes)
            self.blocks.append(block)
        return list(latent_shapes)

    def _encode(self, hidden, masks, training):
        for block in self.blocks:
            hidden = block(hidden, masks=masks, training=training)
        return list(hidden), masks

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
