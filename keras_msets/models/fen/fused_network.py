"""`FusionEncoderNetwork.fuse()`: the trained network of Sec. 11 alone."""

import keras
import numpy as np

from keras_msets.layers.grouped_mlp import GroupedMLP
from keras_msets.models._id_inputs import TokenIdInputs


def _copy_mlp(mlp, weights, **config):
    """A built `GroupedMLP` like `mlp` (config changes aside) with `weights`."""
    copy = GroupedMLP.from_config({**mlp.get_config(), **config})
    copy.build()
    copy.set_weights(weights)
    return copy


@keras.saving.register_keras_serializable(package="keras_msets")
class FusedNetwork(TokenIdInputs, keras.Model):
    """The functional model that `FusionEncoderNetwork.fuse()` returns.

    An ordinary functional `keras.Model` of token ids whose `predict`,
    `evaluate` and `fit` check the ids (`TokenIdInputs`) against the
    vocabulary of its token encoder (the layer named `token_encoder`).
    """

    def __init__(self, inputs, outputs, name=None, **kwargs):
        super().__init__(inputs, outputs, name=name, **kwargs)

    @property
    def vocabulary_size(self):
        return self.get_layer("token_encoder").vocabulary_size


def fused_network(fen, name=None):
    """The `FusedNetwork` of a `FusionEncoderNetwork` `fen` (`fen.fuse()`)."""
    if not fen.built:
        fen.build()
    e = fen.encoding_dim
    inputs = keras.Input((fen.sequence_length,), dtype="int32", name="ids")
    token_encoder = fen.token_encoder
    x = _copy_mlp(token_encoder, token_encoder.get_weights())(inputs)
    shared = {}  # one layer per parameter group shared across levels
    for height in range(1, fen.segments.depth + 1):
        width = fen.padded_length >> height
        x = keras.layers.Reshape((width, 2 * e), name=f"pairs_{height}")(x)
        groups = fen._vertex_groups(height)
        unique = np.unique(groups)
        key = int(unique[0]) if len(unique) == 1 else None
        fusion = shared.get(key) if key is not None else None
        if fusion is None:
            layer = f"fusion_{height}" if key is None else f"fusion_g{key}"
            chosen = groups if len(unique) > 1 else unique
            fusion = _copy_mlp(
                fen.fusion_encoder,
                [w[chosen] for w in fen.fusion_encoder.get_weights()],
                num_groups=len(unique),
                name=layer,
            )
            if key is not None:
                shared[key] = fusion
        x = fusion(x)
    root = fen.segments.index[(1, fen.padded_length)]
    group = fen._decoder_groups[root - 1]
    weights = [w[[group]] for w in fen.decoder.get_weights()]
    weights[0] = weights[0][:, e : 2 * e]
    root_decoder = {"num_groups": 1, "input_dim": e, "name": "root_decoder"}
    y = _copy_mlp(fen.decoder, weights, **root_decoder)(x)
    y = keras.layers.Reshape((fen.output_dim,), name="output")(y)
    return FusedNetwork(inputs, y, name=name or f"{fen.name}_fused")
