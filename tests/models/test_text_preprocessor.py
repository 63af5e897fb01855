"""TextPreprocessor (raw sentences -> ids without TensorFlow), the text
models that hold one, and FenTextClassifier's two-class output."""

import json

import keras
import numpy as np
import pytest

from keras_msets.models import FusionEncoderNetwork
from keras_msets.models.text import FenTextClassifier
from keras_msets.models.text import TextPreprocessor
from keras_msets.models.text.classifiers import TextClassifier

WORDS = ["", "[UNK]", "a", "film", "É", "x\xa0y", "don't", "dont", ","]
# Sentences where a Python tokenizer easily differs from TextVectorization:
# non-ASCII capitals (tf.strings.lower keeps them), a no-break space inside
# a word, every ASCII whitespace, punctuation, more words than the length,
# and no word at all.
TRICKY = [
    "A FILM",
    "É é À",
    "x\xa0y a\u2009film",
    "a\tfilm\na\x0bfilm\x0ca\rfilm",
    "don't , dont.",
    "a film a film a film a film a film a film",
    "",
    "   ",
    "[UNK] [unk]",
]


def _preprocessor(standardize="lower", length=6):
    return TextPreprocessor(
        WORDS, sequence_length=length, standardize=standardize
    )


def _reference_ids(texts, standardize, length):
    """Keras's TextVectorization with the same vocabulary (TensorFlow)."""
    pytest.importorskip("tensorflow")
    from keras_msets.data import texts_to_ids

    layer = keras.layers.TextVectorization(
        vocabulary=WORDS[2:],
        standardize=standardize,
        split="whitespace",
        output_mode="int",
        output_sequence_length=length,
    )
    return texts_to_ids(layer, texts)


@pytest.mark.parametrize(
    "standardize",
    ["lower", "lower_and_strip_punctuation", "strip_punctuation", None],
)
def test_ids_are_text_vectorizations(standardize):
    ids = _preprocessor(standardize)(TRICKY)
    assert ids.dtype == np.int32 and ids.shape == (len(TRICKY), 6)
    np.testing.assert_array_equal(ids, _reference_ids(TRICKY, standardize, 6))


def test_ids_by_hand():
    ids = _preprocessor()(["A gorgeous FILM", "", "zzz zzz"])
    np.testing.assert_array_equal(
        ids, [[2, 1, 3, 0, 0, 0], [0] * 6, [1, 1, 0, 0, 0, 0]]
    )


@pytest.mark.parametrize(
    "texts, message",
    [
        ("a film", "not one string"),
        (np.array("a film"), "not one string"),
        (np.array([["a"], ["b"]]), "rank other than 1"),
        ([], "at least one string"),
        (["a", 3], r"texts\[1\]=3 of type int"),
        (["a", None], r"texts\[1\]=None"),
        ([b"a film"], r"decode bytes first.*texts\[0\]=b'a film'"),
        (b"a film", "not one string"),
        (5, "list of strings. Received: texts of type int"),
    ],
)
def test_bad_texts_are_refused(texts, message):
    with pytest.raises(ValueError, match=message):
        _preprocessor()(texts)


def test_numpy_and_tuple_batches():
    expected = _preprocessor()(["a film", "film"])
    for batch in (np.array(["a film", "film"]), ("a film", "film")):
        np.testing.assert_array_equal(_preprocessor()(batch), expected)
    objects = np.array(["a film", "film"], dtype=object)
    np.testing.assert_array_equal(_preprocessor()(objects), expected)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"vocabulary": ["a", "b"]}, "must start with the padding"),
        ({"vocabulary": ["", "[UNK]", "a", "a"]}, "must not repeat"),
        ({"vocabulary": ["", "[UNK]", 3]}, "list of words"),
        ({"sequence_length": 0}, "sequence_length"),
        ({"standardize": "upper"}, "standardize"),
    ],
)
def test_bad_arguments(kwargs, message):
    arguments = {"vocabulary": WORDS, "sequence_length": 4, **kwargs}
    with pytest.raises(ValueError, match=message):
        TextPreprocessor(**arguments)


def test_vocabulary_file_and_config_round_trip(tmp_path):
    path = tmp_path / "vocabulary.txt"
    path.write_text("\n".join(WORDS), encoding="utf-8")
    from_file = TextPreprocessor(path, sequence_length=6)
    assert from_file.vocabulary == WORDS and from_file.vocabulary_size == 9
    config = json.loads(
        json.dumps(keras.saving.serialize_keras_object(from_file))
    )
    again = keras.saving.deserialize_keras_object(config)
    assert isinstance(again, TextPreprocessor)
    assert again.get_config() == from_file.get_config()
    np.testing.assert_array_equal(again(TRICKY), from_file(TRICKY))


def _classifier(
    preprocessor=None, embedding="complex_order", kernel_sizes=(2,)
):
    keras.utils.set_random_seed(0)
    return TextClassifier(
        "cnn",
        embedding,
        vocabulary_size=len(WORDS),
        sequence_length=6,
        num_classes=2,
        embedding_dim=4,
        filters=2,
        kernel_sizes=kernel_sizes,
        preprocessor=preprocessor,
    )


def test_classifier_takes_raw_strings_and_ids():
    model = _classifier(_preprocessor())
    texts = ["a film", "film film a", "zzz qqq", ""]
    from_texts = model.predict(texts, verbose=0)
    from_ids = model.predict(_preprocessor()(texts), verbose=0)
    assert from_texts.shape == (4, 2)
    np.testing.assert_allclose(from_texts, from_ids, atol=1e-6)
    np.testing.assert_allclose(from_texts.sum(-1), 1.0, atol=1e-5)
    assert np.isfinite(from_texts).all()  # unknown words, no words
    np.testing.assert_allclose(
        model.predict_on_batch(np.array(texts)), from_ids, atol=1e-6
    )
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(texts, np.array([1, 1, 0, 0]), epochs=1, verbose=0)
    loss = model.evaluate(texts, np.array([1, 1, 0, 0]), verbose=0)
    assert np.isfinite(loss)
    with pytest.raises(ValueError, match="not one string"):
        model.predict("a film")
    # Calling takes ids, as every Keras layer (Keras's own error was
    # "Invalid dtype: str...").
    with pytest.raises(ValueError, match="takes token ids.*model.predict"):
        model(np.array(texts))


def test_cnn_refuses_rows_shorter_than_its_widest_kernel():
    # Before: an empty convolution, a backend error (torch, tensorflow),
    # or on jax a `predict` broken for the model's later calls.
    model = _classifier(embedding="none", kernel_sizes=(2, 3))
    short = np.ones((2, 2), "int32")
    message = r"at least 3 token ids per row.*Received: x.shape=\(2, 2\)"
    with pytest.raises(ValueError, match=message):
        model.predict(short, verbose=0)
    assert model.predict(np.ones((2, 3), "int32"), verbose=0).shape == (2, 2)


def test_classifier_without_preprocessor_says_so():
    model = _classifier()
    with pytest.raises(ValueError, match="has no `preprocessor`"):
        model.predict(["a film"], verbose=0)
    with pytest.raises(ValueError, match="has no `preprocessor`"):
        model(np.array(["a film"]))
    assert model.get_config()["preprocessor"] is None


def test_classifier_saves_its_preprocessor(tmp_path):
    model = _classifier(_preprocessor())
    expected = model.predict(["a film", "film"], verbose=0)
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.preprocessor.get_config() == model.preprocessor.get_config()
    np.testing.assert_allclose(
        loaded.predict(["a film", "film"], verbose=0), expected, atol=1e-6
    )
    # A preprocessor set after building is saved too (as training does).
    bare = _classifier()
    bare.preprocessor = _preprocessor()
    config = bare.get_config()
    assert TextClassifier.from_config(config).preprocessor.vocabulary == WORDS


def _fen_pair():
    arguments = {
        "sequence_length": 8,
        "vocabulary_size": len(WORDS),
        "sharing": "all",
        "encoding_dim": 4,
        "token_encoder_units": 3,
        "fusion_encoder_units": 3,
        "decoder_units": 3,
        "name": "fen",
    }
    keras.utils.set_random_seed(1)
    fen = FusionEncoderNetwork(output_activation="sigmoid", **arguments)
    two = FenTextClassifier(preprocessor=_preprocessor(length=8), **arguments)
    x = _preprocessor(length=8)(["a film", "film a film", "zzz", ""])
    fen(x)
    two(x)
    two.set_weights(fen.get_weights())
    return fen, two, x


def test_fen_classifier_reports_one_minus_p_and_p():
    fen, two, x = _fen_pair()
    assert [w.path for w in two.weights] == [w.path for w in fen.weights]
    p = keras.ops.convert_to_numpy(fen(x))
    out = keras.ops.convert_to_numpy(two(x))
    assert out.shape == (4, 2)
    np.testing.assert_array_equal(out[:, 1:], p)
    np.testing.assert_allclose(out[:, :1], 1.0 - p, atol=1e-7)
    np.testing.assert_allclose(
        two.predict(["a film", "film a film", "zzz", ""], verbose=0), out
    )
    segments = keras.ops.convert_to_numpy(two.segment_outputs(x))
    np.testing.assert_array_equal(
        segments[..., 1:], keras.ops.convert_to_numpy(fen.segment_outputs(x))
    )


def test_fen_classifier_local_loss_is_the_binary_one():
    # The sparse categorical cross-entropy on [1 - p, p] summed over the
    # segments is the binary cross-entropy on p: training is unchanged.
    fen, two, x = _fen_pair()
    y = np.array([1, 0, 1, 0])
    fen.compile(optimizer="adam", loss="binary_crossentropy")
    two.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    expected = fen.compute_loss(x, y.astype("float32"), training=True)
    actual = two.compute_loss(x, y, training=True)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(actual),
        keras.ops.convert_to_numpy(expected),
        rtol=1e-5,
    )


def test_fen_classifier_config_and_refusals():
    _, two, x = _fen_pair()
    config = json.loads(json.dumps(two.get_config()))
    again = FenTextClassifier.from_config(config)
    again(x)
    again.set_weights(two.get_weights())
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(again(x)),
        keras.ops.convert_to_numpy(two(x)),
    )
    assert again.preprocessor.vocabulary == WORDS
    with pytest.raises(ValueError, match="`output_dim` must be 1"):
        FenTextClassifier(8, 4, output_dim=2)
    with pytest.raises(ValueError, match="`output_activation` must be"):
        FenTextClassifier(8, 4, output_activation="softmax")
