"""`TextVectorization`'s tokenisation in plain Python, without TensorFlow.

The rules of `keras.layers.TextVectorization(split="whitespace")` with a
fixed vocabulary, so that presets read raw text on every backend with the
ids they were trained on (`keras_msets.data.text.build_vectorizer` makes
the vocabulary with TensorFlow at training time).
"""

import re
import string

import numpy as np

from keras_msets.utils.validation import check_choice
from keras_msets.utils.validation import check_positive_int

# TextVectorization's reserved vocabulary entries (ids 0 and 1).
PADDING_TOKEN = ""
OOV_TOKEN = "[UNK]"

# TextVectorization's standardisations, rule for rule. `tf.strings.lower`
# lowercases the ASCII letters only ("É" stays), its punctuation is this
# ASCII class, and its whitespace split cuts at ASCII whitespace only (a
# no-break space stays inside a word).
STANDARDIZE_MODES = (
    "lower",
    "lower_and_strip_punctuation",
    "strip_punctuation",
    None,
)
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_PUNCTUATION = re.compile(r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']')
_WHITESPACE = re.compile(r"[ \t\n\v\f\r]+")


def standardize_text(text, standardize="lower_and_strip_punctuation"):
    """`TextVectorization`'s standardisation of one string, in Python.

    `"lower"` lowercases the ASCII letters A-Z only (as `tf.strings.lower`
    does); `"strip_punctuation"` deletes the ASCII punctuation
    `!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~'`; `"lower_and_strip_punctuation"`
    does both; None leaves the text as it is.
    """
    check_choice("standardize", standardize, STANDARDIZE_MODES)
    if standardize in ("lower", "lower_and_strip_punctuation"):
        text = text.translate(_ASCII_LOWER)
    if standardize in ("strip_punctuation", "lower_and_strip_punctuation"):
        text = _PUNCTUATION.sub("", text)
    return text


def split_words(text):
    """`TextVectorization`'s `split="whitespace"`: the words of a string.

    Runs of ASCII whitespace (space, tab, newline, vertical tab, form feed,
    carriage return) separate words; other characters, a no-break space
    included, belong to words. An empty or all-space string has no words.
    """
    return [word for word in _WHITESPACE.split(text) if word]


def encode_texts(texts, vocabulary, sequence_length, standardize="lower"):
    """Token ids of strings with a fixed vocabulary, without TensorFlow.

    The ids `TextVectorization(vocabulary=vocabulary[2:], standardize=...,
    split="whitespace", output_sequence_length=sequence_length)` gives
    (`texts_to_ids` of the layer `build_vectorizer` adapted): each text is
    standardised (`standardize_text`), split at whitespace (`split_words`),
    its first `sequence_length` words mapped to their ids, 1 for a word
    outside the vocabulary, then padded with 0.

    Args:
        texts: a list of strings (checked by the caller).
        vocabulary: a dict `{word: id}` or the words by id (id 0 the
            padding `""`, id 1 the out-of-vocabulary `"[UNK]"`).
        sequence_length: positive integer, the length of every row.
        standardize: one of `STANDARDIZE_MODES`.

    Returns:
        An int32 array `[len(texts), sequence_length]`.
    """
    sequence_length = check_positive_int("sequence_length", sequence_length)
    if not isinstance(vocabulary, dict):
        vocabulary = {word: i for i, word in enumerate(vocabulary)}
    ids = np.zeros((len(texts), sequence_length), dtype=np.int32)
    for row, text in enumerate(texts):
        words = split_words(standardize_text(text, standardize))
        words = words[:sequence_length]
        ids[row, : len(words)] = [vocabulary.get(w, 1) for w in words]
    return ids
