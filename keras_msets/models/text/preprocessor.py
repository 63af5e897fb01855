"""Raw sentences in: the preprocessor a text preset ships with.

`TextPreprocessor` maps strings to the token ids a text model reads, with
the vocabulary and the rules its training used; `TextInputs` lets a model
holding one (`model.preprocessor`) take raw strings in `predict`,
`evaluate` and `fit`, as a KerasHub `Task` applies its `preprocessor`.
Both are plain Python and numpy: no TensorFlow on any backend.
"""

from pathlib import Path

import keras
import numpy as np

from keras_msets.data.text import OOV_TOKEN
from keras_msets.data.text import PADDING_TOKEN
from keras_msets.data.text import STANDARDIZE_MODES
from keras_msets.data.text import encode_texts
from keras_msets.utils.validation import check_choice
from keras_msets.utils.validation import check_positive_int


def read_vocabulary(path):
    """The words by id of a vocabulary file (one word per line)."""
    return Path(path).read_text(encoding="utf-8").split("\n")


def _check_vocabulary(vocabulary):
    if isinstance(vocabulary, (str, Path)):
        vocabulary = read_vocabulary(vocabulary)
    if not isinstance(vocabulary, (list, tuple)) or not all(
        isinstance(word, str) for word in vocabulary
    ):
        raise ValueError(
            "`vocabulary` must be a list of words (strings) by id, or the "
            "path of a vocabulary file. Received: vocabulary of type "
            f"{type(vocabulary).__name__}"
        )
    vocabulary = list(vocabulary)
    if vocabulary[:2] != [PADDING_TOKEN, OOV_TOKEN]:
        raise ValueError(
            f"`vocabulary` must start with the padding {PADDING_TOKEN!r} "
            f"(id 0) and the out-of-vocabulary token {OOV_TOKEN!r} (id 1). "
            f"Received: vocabulary starting with {vocabulary[:2]!r}"
        )
    if len(set(vocabulary)) != len(vocabulary):
        raise ValueError(
            "`vocabulary` must not repeat a word. Received: "
            f"{len(vocabulary) - len(set(vocabulary))} repeated entries"
        )
    return vocabulary


def check_texts(texts, name="texts"):
    """`texts` as a list of `str`, or a `ValueError` naming what is wrong.

    A list, tuple or 1-D numpy array of strings is accepted. One string
    (also a 0-d array), bytes, an empty batch and any element that is not
    a `str` are refused: decode bytes first (`b.decode("utf-8")`).
    """
    if isinstance(texts, (str, bytes)) or (
        isinstance(texts, np.ndarray) and texts.ndim != 1
    ):
        raise ValueError(
            f"`{name}` must be a list of strings (a batch), not one "
            f"string or an array of rank other than 1: wrap one sentence "
            f"in a list. Received: {name}={texts!r}"
        )
    try:
        texts = list(texts)
    except TypeError:
        raise ValueError(
            f"`{name}` must be a list of strings. Received: {name} of type "
            f"{type(texts).__name__}"
        ) from None
    if not texts:
        raise ValueError(
            f"`{name}` must hold at least one string. Received: {name}=[]"
        )
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            hint = " (decode bytes first)" if isinstance(text, bytes) else ""
            raise ValueError(
                f"`{name}` must hold strings only{hint}. Received: "
                f"{name}[{i}]={text!r} of type {type(text).__name__}"
            )
    return [str(text) for text in texts]


def is_text(x):
    """Whether a model input is raw text rather than token ids."""
    if isinstance(x, (str, bytes)):
        return True
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "OSU"
    if isinstance(x, (list, tuple)):
        return any(isinstance(v, (str, bytes)) for v in x)
    return False


@keras.saving.register_keras_serializable(package="keras_msets")
class TextPreprocessor:
    """Maps raw sentences to token ids, as the model's training did.

    The rules of Keras's `TextVectorization` with a fixed vocabulary,
    written in Python (`keras_msets.data.text.encode_texts`), so the ids
    are the same without TensorFlow: each sentence is standardised
    (`"lower"` lowercases ASCII letters; `"lower_and_strip_punctuation"`
    also deletes ASCII punctuation), split at whitespace, and its first
    `sequence_length` words become their ids. A word outside the
    vocabulary is id 1 (`"[UNK]"`, the id every unknown word had in
    training), padding is id 0: an empty sentence or one of unknown words
    only still gives a row of ids the model reads.

    Args:
        vocabulary: the words by id (`vocabulary[0] == ""`,
            `vocabulary[1] == "[UNK]"`), or the path of a vocabulary file
            holding one word per line.
        sequence_length: positive integer, the length of every row of ids.
        standardize: `"lower"`, `"lower_and_strip_punctuation"`,
            `"strip_punctuation"` or None.

    Call arguments:
        texts: a list (or 1-D array) of strings. One string, bytes, an
            empty list or a non-string element raise a `ValueError`.

    Output:
        int32 numpy array `[len(texts), sequence_length]`.

    Example:
    >>> preprocessor = keras_msets.models.text.TextPreprocessor(
    ...     ["", "[UNK]", "a", "film"], sequence_length=4
    ... )
    >>> preprocessor(["A film", "a gorgeous film"])
    array([[2, 3, 0, 0],
           [2, 1, 3, 0]], dtype=int32)
    """

    def __init__(self, vocabulary, sequence_length, standardize="lower"):
        self.vocabulary = _check_vocabulary(vocabulary)
        self.sequence_length = check_positive_int(
            "sequence_length", sequence_length
        )
        self.standardize = check_choice(
            "standardize", standardize, STANDARDIZE_MODES
        )
        self._index = {word: i for i, word in enumerate(self.vocabulary)}

    @property
    def vocabulary_size(self):
        """Number of ids, padding and `"[UNK]"` included."""
        return len(self.vocabulary)

    def __call__(self, texts):
        return encode_texts(
            check_texts(texts),
            self._index,
            self.sequence_length,
            self.standardize,
        )

    def get_config(self):
        return {
            "vocabulary": list(self.vocabulary),
            "sequence_length": self.sequence_length,
            "standardize": self.standardize,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return (
            f"TextPreprocessor({self.vocabulary_size} words, "
            f"sequence_length={self.sequence_length}, "
            f"standardize={self.standardize!r})"
        )


def serialize_preprocessor(preprocessor):
    """The `get_config` entry of a model's preprocessor (None stays None)."""
    if preprocessor is None:
        return None
    return keras.saving.serialize_keras_object(preprocessor)


def deserialize_preprocessor(config):
    """A `TextPreprocessor` from `serialize_preprocessor`'s output."""
    if config is None or isinstance(config, TextPreprocessor):
        return config
    preprocessor = keras.saving.deserialize_keras_object(config)
    if not isinstance(preprocessor, TextPreprocessor):
        raise ValueError(
            "`preprocessor` must be a TextPreprocessor or None. Received: "
            f"preprocessor of type {type(preprocessor).__name__}"
        )
    return preprocessor


class TextInputs:
    """Mixin: `predict`, `evaluate` and `fit` also take raw strings.

    A model with a `preprocessor` (a `TextPreprocessor`, or None) maps a
    batch of strings to token ids with it before Keras sees the batch,
    as a KerasHub `Task` runs its `preprocessor`; token ids go through
    unchanged. Calling the model (`model(x)`) takes token ids only. List
    it first: `class M(TextInputs, TokenIdInputs, keras.Model)`.
    """

    def _ids(self, x, name="x"):
        if isinstance(x, (list, tuple)) and not len(x):
            raise ValueError(
                f"`{name}` must hold at least one string (or one row of "
                f"token ids). Received: {name}={x!r}"
            )
        if not is_text(x):
            return x
        if getattr(self, "preprocessor", None) is None:
            raise ValueError(
                f"This {type(self).__name__} has no `preprocessor`, so it "
                "reads token ids only. Pass int token ids, or set "
                "`model.preprocessor = TextPreprocessor(...)`. Received: "
                f"{name} holding strings"
            )
        texts = x.tolist() if isinstance(x, np.ndarray) else x
        return self.preprocessor(check_texts(texts, name))

    def __call__(self, *args, **kwargs):
        inputs = args[0] if args else kwargs.get("inputs")
        if is_text(inputs):
            if getattr(self, "preprocessor", None) is None:
                self._ids(inputs, "inputs")  # raises: no preprocessor
            raise ValueError(
                f"Calling a {type(self).__name__} (`model(x)`) takes token "
                "ids, as every Keras layer takes tensors. For raw strings "
                "use `model.predict(x)` (also `evaluate` and `fit`), or "
                "`model(model.preprocessor(x))`. Received: strings"
            )
        return super().__call__(*args, **kwargs)

    def predict(self, x, *args, **kwargs):
        return super().predict(self._ids(x), *args, **kwargs)

    def predict_on_batch(self, x):
        return super().predict_on_batch(self._ids(x))

    def evaluate(self, x=None, *args, **kwargs):
        return super().evaluate(self._ids(x), *args, **kwargs)

    def test_on_batch(self, x, *args, **kwargs):
        return super().test_on_batch(self._ids(x), *args, **kwargs)

    def train_on_batch(self, x, *args, **kwargs):
        return super().train_on_batch(self._ids(x), *args, **kwargs)

    def fit(self, x=None, *args, **kwargs):
        validation = kwargs.get("validation_data")
        if isinstance(validation, (list, tuple)) and validation:
            kwargs["validation_data"] = (
                self._ids(validation[0], "validation_data"),
                *validation[1:],
            )
        return super().fit(self._ids(x), *args, **kwargs)
