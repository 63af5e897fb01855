"""Text classifiers of Table 2 (Wang et al., ICLR 2020): 4 nets x 5 embeddings.

`TextClassifier(architecture, embedding, ...)` (or the function
`build_text_classifier`) builds FastText, CNN, LSTM or Transformer on top of
any of the five embeddings of `keras_msets.layers.position_embeddings`.
Real embeddings feed real Keras / KerasHub layers; complex embeddings feed
the complex layers of App. B (`ComplexDense`, `ComplexConv1D`,
`ComplexLSTM`, `ComplexTransformerEncoder`) and a real readout. With a
`preprocessor` (`keras_msets.models.text.TextPreprocessor`) a classifier
also takes raw sentences in `predict`, `evaluate` and `fit`.
"""

import keras
import numpy as np

from keras_msets.layers.complex_conv1d import ComplexConv1D
from keras_msets.layers.complex_dense import ComplexDense
from keras_msets.layers.complex_lstm import GATE_PRODUCTS
from keras_msets.layers.complex_lstm import ComplexLSTM
from keras_msets.layers.complex_readout import ComplexReadout
from keras_msets.layers.complex_transformer_encoder import (
    ComplexTransformerEncoder,
)
from keras_msets.layers.masked_set_pooling import MaskedSetPooling
from keras_msets.layers.position_embeddings import EMBEDDING_VARIANTS
from keras_msets.layers.position_embeddings import is_complex_variant
from keras_msets.layers.position_embeddings import make_text_embedding
from keras_msets.models._id_inputs import TokenIdInputs
from keras_msets.models._id_inputs import _arrays
from keras_msets.models.text.preprocessor import TextInputs
from keras_msets.models.text.preprocessor import deserialize_preprocessor
from keras_msets.models.text.preprocessor import serialize_preprocessor
from keras_msets.models.text.text_layers import ComplexConcatenate
from keras_msets.models.text.text_layers import MaskedConv1D
from keras_msets.utils.optional import import_optional
from keras_msets.utils.validation import check_bool
from keras_msets.utils.validation import check_choice
from keras_msets.utils.validation import check_int
from keras_msets.utils.validation import check_int_list
from keras_msets.utils.validation import check_positive_int
from keras_msets.utils.validation import check_rate

__all__ = [
    "ARCHITECTURES",
    "COMPLEX_READOUTS",
    "DEFAULT_DROPOUT",
    "DEFAULT_EMBEDDING_DIM",
    "ComplexConcatenate",
    "MaskedConv1D",
    "TextClassifier",
    "build_text_classifier",
]

ARCHITECTURES = ("fasttext", "cnn", "lstm", "transformer")
COMPLEX_READOUTS = ("modulus", "concat")
# Where the paper gives a value it is used; see `TextClassifier`.
DEFAULT_EMBEDDING_DIM = {
    "fasttext": 300,
    "cnn": 300,
    "lstm": 300,
    "transformer": 256,
}
DEFAULT_DROPOUT = {"fasttext": 0.0, "cnn": 0.5, "lstm": 0.5, "transformer": 0.1}


def _keras_hub():
    return import_optional(
        "keras_hub",
        "hub",
        "The real Transformer classifier (KerasHub's `TransformerEncoder`)",
    )


@keras.saving.register_keras_serializable(package="keras_msets")
class TextClassifier(TextInputs, TokenIdInputs, keras.Model):
    """FastText, CNN, LSTM or Transformer on a real or complex embedding.

    The text classifiers of Wang et al. (Sec. 3.1, Table 2): four network
    architectures, each with five word embeddings (`embedding`):
    `"none"` (word vectors only), `"pe"` (plus learned position vectors),
    `"tpe"` (plus the sinusoids of Eq. 7), `"complex_vanilla"` (complex
    word vectors with a random phase, no position) and `"complex_order"`
    (the complex-order embedding, Eq. 5). Real embeddings feed real layers;
    complex embeddings feed the complex-valued networks of App. B:

    - `"fasttext"`: masked mean of the word vectors, then the readout
      (`Dense` softmax; complex: the mean of the real and of the imaginary
      parts, then `ComplexDense`).
    - `"cnn"` (Kim, 2014): one narrow convolution per kernel size with ReLU
      (`MaskedConv1D`; complex: `ComplexConv1D`, ReLU on the real and the
      imaginary parts), masked max over time (of each part), concatenation
      (`ComplexConcatenate` for complex features), dropout, readout.
    - `"lstm"`: `keras.layers.LSTM` (complex: `ComplexLSTM`), its last
      valid state, dropout, readout.
    - `"transformer"`: `num_layers` x `keras_hub.layers.TransformerEncoder`
      (complex: `ComplexTransformerEncoder`), masked mean over positions,
      dropout, readout.

    Readout of the complex networks (`complex_readout`): the paper takes
    "their norm as the final prediction in the last layer" (CNN) and "a
    l2-norm operation ... to obtain a real-valued loss" (RNN), so by default
    (`"modulus"`) the last layer is `ComplexDense(num_classes)` and the
    modulus of each of its complex outputs is that class's logit, followed
    by a softmax. `"concat"` (the authors' released CNN and Transformer
    code) instead feeds the real and imaginary parts of the pooled features
    to a real `Dense` softmax.

    Hyper-parameters. Where the paper gives them they are the defaults:
    `embedding_dim` 300 for FastText, CNN and LSTM (their pre-trained
    300-d word2vec vectors) and 256 for the Transformer; Transformer: one
    encoder layer, 8 heads, inner size 512; CNN: narrow convolutions with
    kernel sizes 3, 4, 5 and 128 filters each (the paper's pools are
    filters {64, 128}, sizes {3, 4, 5}; all three sizes together is Kim's
    CNN); LSTM: 128 units (pool {120, 128}). Where the paper is silent we
    chose: dropout (before the last layer; also inside the encoder for the
    Transformer) 0.5 for CNN and LSTM (Kim, 2014), 0.1 for the Transformer
    (Vaswani et al.), none for FastText; mean pooling of the Transformer
    outputs; the complex networks keep separate real and imaginary weights
    (`shared_weights=False`, the setting of Table 2's Transformer, Table 4
    first row) and the same number of (complex) units as the real ones.
    The paper does not say how the complex LSTM's gates multiply its cell;
    we use `gate_product="split"` (each gate acts on the real and on the
    imaginary parts like a real LSTM gate, so a gate in [0, 1] scales the
    cell without rotating it); the complex product gives gates of modulus
    up to sqrt(2) that also rotate the cell.

    Padding: id 0 is padding; every layer honours the mask, so appending or
    removing padding never changes a prediction. Texts are right-padded:
    position-aware embeddings count positions from the first index. A text
    shorter than the smallest CNN kernel has no valid window; its pooled
    features are then 0 (see `MaskedSetPooling`). An all-padding row gives
    finite outputs.

    Args:
        architecture: `"fasttext"`, `"cnn"`, `"lstm"` or `"transformer"`.
        embedding: `"none"`, `"pe"`, `"tpe"`, `"complex_vanilla"` or
            `"complex_order"`.
        vocabulary_size: positive integer, number of token ids including
            the padding id 0 (and the out-of-vocabulary id 1 of
            `TextVectorization`).
        sequence_length: positive integer, the longest input (required for
            `embedding="pe"`, which learns one vector per position; may be
            None otherwise).
        num_classes: integer >= 2, number of classes.
        embedding_dim: positive integer, real size (real embeddings) or
            complex size (complex embeddings) of the word vectors. None: the
            default above.
        pretrained_embeddings: optional array `(vocabulary_size,
            embedding_dim)` that initialises the word vectors (real
            embeddings) or the amplitudes (complex embeddings), e.g. from
            `keras_msets.data.text.load_glove`. It only builds the weights;
            it is not part of `get_config()` (the values travel with the
            saved weights).
        hidden_units: positive integer, LSTM units (complex units for the
            complex LSTM). Defaults to 128.
        filters: positive integer, CNN filters per kernel size. Defaults to
            128.
        kernel_sizes: tuple of positive integers, the CNN kernel sizes.
            Defaults to `(3, 4, 5)`.
        num_heads: positive integer, Transformer heads. Defaults to 8.
        intermediate_dim: positive integer, Transformer feed-forward size.
            Defaults to 512.
        num_layers: positive integer, Transformer encoder layers. Defaults
            to 1.
        dropout: float in `[0, 1)`; None: the architecture's default above.
        shared_weights: if True, the complex layers use `Re(W) = Im(W)`
            (App. B's parameter-saving option). Defaults to False.
        complex_readout: `"modulus"` (default) or `"concat"`, see above.
        gate_product: how the complex LSTM's gates multiply its cell,
            `"split"` (default) or `"complex"`, see above and
            `ComplexLSTM`. Used by `architecture="lstm"` with a complex
            embedding only.
        embedding_options: optional dict of further arguments of the
            embedding layer (see `make_text_embedding`), e.g.
            `{"trainable_phase": True}` for `"complex_vanilla"` or
            `{"frequency_sharing": "word"}` for `"complex_order"` (Table 4).
            Values must be serializable (no arrays).
        preprocessor: optional `TextPreprocessor` (the vocabulary and the
            tokenisation of the model's training), held as
            `model.preprocessor` and saved in its config. With it,
            `predict`, `evaluate` and `fit` also take a list of raw
            sentences. It has no weights.
        **kwargs: `keras.Model` keyword arguments (`name`, ...).

    Call arguments:
        inputs: int token ids `[batch, length]`, 0 = padding. Ids must lie in
            `[0, vocabulary_size)` with an int dtype: `model(x)`,
            `predict`, `evaluate` and `fit` raise an error otherwise (for
            arrays and tensors; a dataset's ids are checked only where the
            step runs eagerly, see `keras_msets.models._id_inputs`).
            `predict`, `evaluate` and `fit` also take a list of strings
            when the model has a `preprocessor`.

    Input shape:
        `[batch, length]`, any length (at most `sequence_length` for
        `"pe"`).

    Output shape:
        `[batch, num_classes]`: class probabilities.

    Example:
    >>> model = keras_msets.models.TextClassifier(
    ...     "cnn", "complex_order", vocabulary_size=100, sequence_length=20,
    ...     num_classes=2, embedding_dim=8, filters=4,
    ... )
    >>> model(np.array([[5, 7, 9, 11, 2, 0, 0]])).shape
    (1, 2)

    References:
        - Wang et al., "Encoding word order in complex embeddings",
          ICLR 2020.
        - Joulin et al., "Bag of Tricks for Efficient Text Classification",
          EACL 2017.
        - Kim, "Convolutional Neural Networks for Sentence Classification",
          EMNLP 2014.
        - Vaswani et al., "Attention Is All You Need", NeurIPS 2017.
    """

    def __init__(
        self,
        architecture,
        embedding,
        vocabulary_size,
        sequence_length,
        num_classes,
        embedding_dim=None,
        pretrained_embeddings=None,
        hidden_units=128,
        filters=128,
        kernel_sizes=(3, 4, 5),
        num_heads=8,
        intermediate_dim=512,
        num_layers=1,
        dropout=None,
        shared_weights=False,
        complex_readout="modulus",
        gate_product="split",
        embedding_options=None,
        preprocessor=None,
        **kwargs,
    ):
        architecture = check_choice("architecture", architecture, ARCHITECTURES)
        embedding = check_choice("embedding", embedding, EMBEDDING_VARIANTS)
        vocabulary_size = check_positive_int("vocabulary_size", vocabulary_size)
        if sequence_length is not None:
            sequence_length = check_positive_int(
                "sequence_length", sequence_length
            )
        elif embedding == "pe":
            raise ValueError(
                "`sequence_length` must be a positive integer for "
                "embedding='pe' (one learned vector per position). "
                "Received: sequence_length=None"
            )
        num_classes = check_int("num_classes", num_classes, low=2)
        if embedding_dim is None:
            embedding_dim = DEFAULT_EMBEDDING_DIM[architecture]
        embedding_dim = check_positive_int("embedding_dim", embedding_dim)
        hidden_units = check_positive_int("hidden_units", hidden_units)
        filters = check_positive_int("filters", filters)
        if isinstance(kernel_sizes, (int, np.integer)):
            kernel_sizes = (kernel_sizes,)
        kernel_sizes = tuple(
            check_int_list("kernel_sizes", kernel_sizes, allow_empty=False)
        )
        num_heads = check_positive_int("num_heads", num_heads)
        intermediate_dim = check_positive_int(
            "intermediate_dim", intermediate_dim
        )
        num_layers = check_positive_int("num_layers", num_layers)
        if dropout is None:
            dropout = DEFAULT_DROPOUT[architecture]
        dropout = check_rate("dropout", dropout)
        shared_weights = check_bool("shared_weights", shared_weights)
        complex_readout = check_choice(
            "complex_readout", complex_readout, COMPLEX_READOUTS
        )
        gate_product = check_choice("gate_product", gate_product, GATE_PRODUCTS)
        if embedding_options is None:
            embedding_options = {}
        if not isinstance(embedding_options, dict):
            raise ValueError(
                "`embedding_options` must be a dict or None. Received: "
                f"embedding_options={embedding_options!r}"
            )
        embedding_options = dict(embedding_options)
        is_complex = is_complex_variant(embedding)
        if architecture == "transformer" and embedding_dim % num_heads:
            raise ValueError(
                "For the Transformer `embedding_dim` must be divisible by "
                f"`num_heads`. Received: embedding_dim={embedding_dim}, "
                f"num_heads={num_heads}"
            )

        inputs = keras.Input(shape=(None,), dtype="int32", name="token_ids")
        x = make_text_embedding(
            embedding,
            vocabulary_size,
            embedding_dim,
            sequence_length=sequence_length,
            pretrained_embeddings=pretrained_embeddings,
            mask_zero=True,
            name="embedding",
            **embedding_options,
        )(inputs)
        if architecture == "fasttext":
            x = MaskedSetPooling("mean", name="pooling")(x)
        elif architecture == "cnn":
            branches = []
            for k in kernel_sizes:
                if is_complex:
                    conv = ComplexConv1D(
                        filters,
                        k,
                        activation="relu",
                        shared_weights=shared_weights,
                        name=f"conv_{k}",
                    )
                else:
                    conv = MaskedConv1D(
                        filters, k, activation="relu", name=f"conv_{k}"
                    )
                branches.append(
                    MaskedSetPooling("max", name=f"pooling_{k}")(conv(x))
                )
            if len(branches) == 1:
                x = branches[0]
            elif is_complex:
                x = ComplexConcatenate(name="concatenate")(branches)
            else:
                x = keras.layers.Concatenate(name="concatenate")(branches)
        elif architecture == "lstm":
            if is_complex:
                x = ComplexLSTM(
                    hidden_units,
                    shared_weights=shared_weights,
                    gate_product=gate_product,
                    name="lstm",
                )(x)
            else:
                x = keras.layers.LSTM(hidden_units, name="lstm")(x)
        else:
            for index in range(num_layers):
                if is_complex:
                    encoder = ComplexTransformerEncoder(
                        intermediate_dim=intermediate_dim,
                        num_heads=num_heads,
                        dropout=dropout,
                        shared_weights=shared_weights,
                        name=f"encoder_{index}",
                    )
                else:
                    encoder = _keras_hub().layers.TransformerEncoder(
                        intermediate_dim=intermediate_dim,
                        num_heads=num_heads,
                        dropout=dropout,
                        name=f"encoder_{index}",
                    )
                x = encoder(x)
            x = MaskedSetPooling("mean", name="pooling")(x)
        if dropout > 0:
            x = keras.layers.Dropout(dropout, name="dropout")(x)
        if is_complex and complex_readout == "modulus":
            x = ComplexDense(
                num_classes, shared_weights=shared_weights, name="classifier"
            )(x)
            x = ComplexReadout("modulus", name="modulus")(x)
            outputs = keras.layers.Activation("softmax", name="probabilities")(
                x
            )
        else:
            if is_complex:
                x = ComplexReadout("concat", name="real_features")(x)
            outputs = keras.layers.Dense(
                num_classes, activation="softmax", name="classifier"
            )(x)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.architecture = architecture
        self.embedding = embedding
        self.vocabulary_size = vocabulary_size
        self.sequence_length = sequence_length
        self.num_classes = num_classes
        self.embedding_dim = embedding_dim
        self.hidden_units = hidden_units
        self.filters = filters
        self.kernel_sizes = kernel_sizes
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.num_layers = num_layers
        self.dropout = dropout
        self.shared_weights = shared_weights
        self.complex_readout = complex_readout
        self.gate_product = gate_product
        self.embedding_options = embedding_options
        self.preprocessor = deserialize_preprocessor(preprocessor)

    def _check_token_id_inputs(self, x, name="x"):
        super()._check_token_id_inputs(x, name=name)
        if getattr(self, "architecture", None) != "cnn":
            return
        # A narrow convolution of a row shorter than its kernel is empty.
        # The convolution layers refuse it where the length is known; a
        # step traced for any length (tensorflow) only fails inside the
        # backend, so the concrete inputs are checked here, before Keras.
        shortest = max(self.kernel_sizes)
        for entry, array in _arrays(name, x):
            length = array.shape[-1] if len(array.shape) else None
            if length is not None and length < shortest:
                raise ValueError(
                    f"`{entry}` must have at least {shortest} token ids per "
                    f"row, the widest kernel of the CNN (kernel_sizes="
                    f"{list(self.kernel_sizes)}; pad with id 0). Received: "
                    f"{entry}.shape={tuple(array.shape)}"
                )

    @property
    def is_complex(self):
        """True when the embedding (and so the network) is complex."""
        return is_complex_variant(self.embedding)

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "architecture": self.architecture,
            "embedding": self.embedding,
            "vocabulary_size": self.vocabulary_size,
            "sequence_length": self.sequence_length,
            "num_classes": self.num_classes,
            "embedding_dim": self.embedding_dim,
            "hidden_units": self.hidden_units,
            "filters": self.filters,
            "kernel_sizes": list(self.kernel_sizes),
            "num_heads": self.num_heads,
            "intermediate_dim": self.intermediate_dim,
            "num_layers": self.num_layers,
            "dropout": self.dropout,
            "shared_weights": self.shared_weights,
            "complex_readout": self.complex_readout,
            "gate_product": self.gate_product,
            "embedding_options": dict(self.embedding_options),
            "preprocessor": serialize_preprocessor(self.preprocessor),
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def build_text_classifier(architecture, embedding, *args, **kwargs):
    """Builds a Table 2 text classifier: `TextClassifier(...)`.

    Args:
        architecture: `"fasttext"`, `"cnn"`, `"lstm"` or `"transformer"`.
        embedding: `"none"`, `"pe"`, `"tpe"`, `"complex_vanilla"` or
            `"complex_order"`.
        *args, **kwargs: the other `TextClassifier` arguments
            (`vocabulary_size`, `sequence_length`, `num_classes`, then
            the optional ones).

    Returns:
        An uncompiled `TextClassifier` mapping int ids `[batch, length]`
        to class probabilities `[batch, num_classes]`. It is a registered
        subclass of `keras.Model` (not a plain functional model), so its
        `predict`, `evaluate` and `fit` check the ids before a compiled
        step, and a saved one reloads as a `TextClassifier`.
    """
    return TextClassifier(architecture, embedding, *args, **kwargs)
