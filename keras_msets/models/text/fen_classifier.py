"""A Fusion Encoder Network that classifies sentences into two classes."""

import keras
from keras import ops

from keras_msets.models.fen.fusion_encoder_network import FusionEncoderNetwork
from keras_msets.models.text.preprocessor import TextInputs
from keras_msets.models.text.preprocessor import deserialize_preprocessor
from keras_msets.models.text.preprocessor import serialize_preprocessor


def _two_classes(p):
    """`[..., 1]` probabilities of class 1 -> `[..., 2]`: `[1 - p, p]`."""
    return ops.concatenate([1.0 - p, p], axis=-1)


@keras.saving.register_keras_serializable(package="keras_msets")
class FenTextClassifier(TextInputs, FusionEncoderNetwork):
    """A `FusionEncoderNetwork` giving two class probabilities per sentence.

    The network is a `FusionEncoderNetwork` whose decoders have one sigmoid
    output `p`, the probability of class 1 (its weights and their names are
    that model's); this class reports `[1 - p, p]`, for the root (`call`,
    `predict`) and for every segment's decoder (`segment_outputs`, which
    the local training reads). The output format is then the one of the
    other text classifiers (`TextClassifier`), and a sparse categorical
    cross-entropy on `[1 - p, p]` is the binary cross-entropy on `p`: the
    paper's local training is unchanged. `fuse()` returns the network of
    `p` alone (`[batch, 1]`).

    Args:
        sequence_length: positive integer, the input length.
        vocabulary_size: positive integer, token ids lie in
            `[0, vocabulary_size)`.
        preprocessor: optional `TextPreprocessor`; with it `predict`,
            `evaluate` and `fit` also take a list of raw sentences.
        **kwargs: the other `FusionEncoderNetwork` arguments;
            `output_dim` must be 1 and `output_activation` `"sigmoid"`
            (the defaults here).

    Call arguments:
        inputs: int token ids `[batch, sequence_length]`.

    Output shape:
        `[batch, 2]`: the probabilities of class 0 and of class 1.

    Example:
    >>> model = keras_msets.models.text.FenTextClassifier(
    ...     sequence_length=8, vocabulary_size=10, sharing="all")
    >>> model(np.ones((3, 8), "int32")).shape
    (3, 2)

    References:
        - Pasteris et al., "Fusion Encoder Networks", arXiv:2402.15883.
    """

    def __init__(self, *args, preprocessor=None, **kwargs):
        output_dim = kwargs.setdefault("output_dim", 1)
        output_activation = kwargs.setdefault("output_activation", "sigmoid")
        if output_dim != 1:
            raise ValueError(
                "`output_dim` must be 1 (the probability of class 1) for a "
                f"FenTextClassifier. Received: output_dim={output_dim!r}"
            )
        if keras.activations.get(output_activation) is not (
            keras.activations.sigmoid
        ):
            raise ValueError(
                "`output_activation` must be 'sigmoid' for a "
                "FenTextClassifier. Received: "
                f"output_activation={output_activation!r}"
            )
        super().__init__(*args, **kwargs)
        self.preprocessor = deserialize_preprocessor(preprocessor)

    def decode_segments(self, before, own, after):
        return _two_classes(super().decode_segments(before, own, after))

    def call(self, inputs):
        return _two_classes(super().call(inputs))

    def compute_output_shape(self, input_shape):
        return (input_shape[0], 2)

    def get_config(self):
        config = super().get_config()
        config["preprocessor"] = serialize_preprocessor(self.preprocessor)
        return config
