import itertools
import re

import keras
import numpy as np
import pytest

from keras_msets import testing
from keras_msets.layers.complex_conv1d import ComplexConv1D
from keras_msets.layers.complex_dense import ComplexDense
from keras_msets.layers.complex_lstm import ComplexLSTM
from keras_msets.layers.complex_transformer_encoder import (
    ComplexTransformerEncoder,
)
from keras_msets.layers.position_embeddings import EMBEDDING_VARIANTS
from keras_msets.layers.position_embeddings import is_complex_variant
from keras_msets.models.text.classifiers import ARCHITECTURES
from keras_msets.models.text.classifiers import DEFAULT_DROPOUT
from keras_msets.models.text.classifiers import DEFAULT_EMBEDDING_DIM
from keras_msets.models.text.classifiers import ComplexConcatenate
from keras_msets.models.text.classifiers import MaskedConv1D
from keras_msets.models.text.classifiers import TextClassifier
from keras_msets.models.text.classifiers import build_text_classifier

VOCAB, CLASSES = 12, 3
TINY = {
    "embedding_dim": 4,
    "hidden_units": 3,
    "filters": 2,
    "kernel_sizes": (2, 3),
    "num_heads": 2,
    "intermediate_dim": 4,
}


def _ids(batch=5, length=7, seed=0):
    """Right-padded ids; row 2 is shorter than every CNN kernel, row 4 is
    all padding."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, VOCAB, size=(batch, length))
    lengths = np.array([length, 4, 1, 5, 0])[:batch]
    ids[np.arange(length)[None, :] >= lengths[:, None]] = 0
    return ids.astype("int32")


def _tiny(architecture, embedding, **kwargs):
    keras.utils.set_random_seed(0)
    return build_text_classifier(
        architecture,
        embedding,
        VOCAB,
        sequence_length=10,
        num_classes=CLASSES,
        **dict(TINY, **kwargs),
    )


def _id_error(name, low, high):
    return re.escape(
        f"`{name}` must hold token ids in [0, {VOCAB - 1}] "
        f"(vocabulary_size={VOCAB}). Received: {name} with ids from {low} "
        f"to {high}"
    )


@pytest.mark.parametrize("embedding", ["none", "complex_order"])
def test_token_ids_are_checked_before_every_step(embedding):
    # Compiled steps (TensorFlow, JAX) cannot check values: without the
    # model's own check an id >= VOCAB would be clipped or fail in the
    # backend, and a negative id wrap around to another word.
    model = _tiny("fasttext", embedding)
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    y = np.zeros((1,), "int32")
    good = _ids(batch=1)
    before = [keras.ops.convert_to_numpy(w) for w in model.weights]
    for bad, low, high in (([[5, VOCAB, 0]], 0, VOCAB), ([[5, -2, 0]], -2, 5)):
        bad = np.array(bad, "int32")
        with pytest.raises(ValueError, match=_id_error("inputs", low, high)):
            model(bad)
        for step in (
            lambda bad=bad: model.predict(bad, verbose=0),
            lambda bad=bad: model.predict_on_batch(bad),
            lambda bad=bad: model.evaluate(bad, y, verbose=0),
            lambda bad=bad: model.test_on_batch(bad, y),
            lambda bad=bad: model.train_on_batch(bad, y),
            lambda bad=bad: model.fit(bad, y, verbose=0),
        ):
            with pytest.raises(ValueError, match=_id_error("x", low, high)):
                step()
        with pytest.raises(
            ValueError, match=_id_error("x['token_ids']", low, high)
        ):
            model.predict({"token_ids": bad}, verbose=0)
        with pytest.raises(
            ValueError, match=_id_error("validation_data", low, high)
        ):
            model.fit(good, y, validation_data=(bad, y), verbose=0)
    for old, new in zip(before, model.weights, strict=True):
        np.testing.assert_array_equal(old, keras.ops.convert_to_numpy(new))
    with pytest.raises(TypeError, match="`x` must hold integer"):
        model.predict(good.astype("float32"), verbose=0)
    np.testing.assert_allclose(
        model.predict(good, verbose=0),
        keras.ops.convert_to_numpy(model(good)),
        atol=1e-6,
    )


# `make test-fast` runs 7 of the 20 combinations: every architecture with
# a complex embedding (both complex variants, and so ComplexDense,
# ComplexConv1D, ComplexLSTM and ComplexTransformerEncoder, each once) and
# each real embedding once; `make test` runs all 20.
FAST_COMBINATIONS = (
    ("fasttext", "complex_vanilla"),
    ("cnn", "complex_order"),
    ("lstm", "complex_vanilla"),
    ("transformer", "complex_order"),
    ("fasttext", "none"),
    ("cnn", "pe"),
    ("transformer", "tpe"),
)


@pytest.mark.parametrize(
    "architecture, embedding",
    [
        pytest.param(
            *pair,
            marks=() if pair in FAST_COMBINATIONS else pytest.mark.slow,
        )
        for pair in itertools.product(ARCHITECTURES, EMBEDDING_VARIANTS)
    ],
)
def test_every_combination(architecture, embedding, tmp_path):
    """Fit step, output, padding invariance and .keras round trip."""
    model = _tiny(architecture, embedding)
    ids = _ids()
    # The network is complex exactly when the embedding is.
    complex_layers = (
        ComplexDense,
        ComplexConv1D,
        ComplexLSTM,
        ComplexTransformerEncoder,
    )
    has_complex = any(isinstance(x, complex_layers) for x in model.layers)
    assert has_complex == is_complex_variant(embedding)
    # One fit step: finite loss, and every trainable weight moves (a ReLU
    # convolution of this tiny size may be dead on the whole batch).
    before = [keras.ops.convert_to_numpy(w) for w in model.trainable_weights]
    model.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss="sparse_categorical_crossentropy",
        run_eagerly=True,
    )
    history = model.fit(
        ids, np.array([0, 1, 2, 1, 0]), batch_size=5, epochs=1, verbose=0
    )
    assert np.isfinite(history.history["loss"][0])
    for old, weight in zip(before, model.trainable_weights, strict=True):
        if weight.path.startswith("conv_"):
            continue
        moved = not np.array_equal(old, keras.ops.convert_to_numpy(weight))
        assert moved, weight.path
    probabilities = keras.ops.convert_to_numpy(model(ids))
    assert probabilities.shape == (5, CLASSES)
    # Finite everywhere, the all-padding row included.
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-5)
    # .keras round trip (safe mode); the reloaded model is called with
    # three more padding columns, which must not change any prediction.
    path = str(tmp_path / "model.keras")
    model.save(path)
    reloaded = keras.saving.load_model(path, safe_mode=True)
    assert isinstance(reloaded, TextClassifier)
    assert reloaded.get_config() == model.get_config()
    padded = np.concatenate([ids, np.zeros((5, 3), "int32")], 1)
    testing.assert_all_close(reloaded(padded), probabilities, atol=1e-5)


class TextClassifierTest(testing.TestCase):
    def test_parameter_counts(self):
        v, d, c = VOCAB, 4, CLASSES
        # FastText: embedding + Dense(c); complex: amplitude + frequency
        # + ComplexDense(c) (A, B, c, d).
        fasttext = _tiny("fasttext", "none")
        assert fasttext.count_params() == v * d + d * c + c
        fasttext = _tiny("fasttext", "complex_order")
        assert fasttext.count_params() == 2 * v * d + 2 * (d * c + c)
        vanilla = _tiny("fasttext", "complex_vanilla")
        assert vanilla.count_params() == 2 * v * d + 2 * (d * c + c)
        trainable = sum(
            int(np.prod(w.shape)) for w in vanilla.trainable_weights
        )
        assert trainable == v * d + 2 * (d * c + c)  # the phases are fixed
        # CNN: per kernel k, k*d*f + f; then Dense(2f -> c).
        f = TINY["filters"]
        cnn = _tiny("cnn", "pe")
        conv = sum(k * d * f + f for k in (2, 3))
        assert cnn.count_params() == v * d + 10 * d + conv + 2 * f * c + c
        cnn = _tiny("cnn", "complex_order")
        head = 2 * (2 * f * c + c)
        assert cnn.count_params() == 2 * v * d + 2 * conv + head
        # LSTM: 4 u (d + u + 1); complex: twice that.
        u = TINY["hidden_units"]
        lstm = _tiny("lstm", "tpe")
        assert lstm.count_params() == v * d + 4 * u * (d + u + 1) + u * c + c
        lstm = _tiny("lstm", "complex_vanilla", shared_weights=True)
        cell = 4 * u * (d + u + 1)
        assert lstm.count_params() == 2 * v * d + cell + u * c + c

    def test_complex_readout_modes(self):
        ids = _ids()
        model = _tiny("fasttext", "complex_order")
        names = [layer.name for layer in model.layers]
        assert names[-3:] == ["classifier", "modulus", "probabilities"]
        # modulus: the probabilities are the softmax of |ComplexDense(x)|.
        features = keras.Model(model.input, model.get_layer("pooling").output)(
            ids
        )
        logits = keras.ops.convert_to_numpy(
            model.get_layer("classifier")(features)
        ).astype("float64")
        modulus = np.abs(logits[:, :CLASSES] + 1j * logits[:, CLASSES:])
        expected = np.exp(modulus) / np.exp(modulus).sum(-1, keepdims=True)
        self.assertAllClose(model(ids), expected, atol=1e-6)
        concat = _tiny("cnn", "complex_vanilla", complex_readout="concat")
        assert isinstance(concat.get_layer("classifier"), keras.layers.Dense)
        assert concat(ids).shape == (5, CLASSES)

    def test_pretrained_embeddings_initialise_the_words(self):
        pretrained = np.random.default_rng(5).normal(size=(VOCAB, 4))
        for embedding, weight in (
            ("none", "embeddings"),
            ("complex_vanilla", "amplitude"),
            ("complex_order", "amplitude"),
        ):
            model = _tiny(
                "fasttext", embedding, pretrained_embeddings=pretrained
            )
            layer = model.get_layer("embedding")
            self.assertAllClose(getattr(layer, weight), pretrained, atol=1e-6)
            assert "pretrained_embeddings" not in model.get_config()

    def test_defaults_are_the_papers(self):
        assert DEFAULT_EMBEDDING_DIM == {
            "fasttext": 300,
            "cnn": 300,
            "lstm": 300,
            "transformer": 256,
        }
        model = TextClassifier("fasttext", "none", 5, None, 2)
        assert model.embedding_dim == 300 and model.dropout == 0.0
        assert model.kernel_sizes == (3, 4, 5) and model.filters == 128
        assert model.hidden_units == 128
        assert (model.num_heads, model.intermediate_dim) == (8, 512)
        assert model.num_layers == 1
        assert model.complex_readout == "modulus"
        assert not model.shared_weights
        assert DEFAULT_DROPOUT == {
            "fasttext": 0.0,
            "cnn": 0.5,
            "lstm": 0.5,
            "transformer": 0.1,
        }

    def test_embedding_options_reach_the_embedding(self):
        model = _tiny(
            "fasttext",
            "complex_vanilla",
            embedding_options={"trainable_phase": True},
        )
        names = [w.name for w in model.get_layer("embedding").trainable_weights]
        assert names == ["amplitude", "phase"]
        model = _tiny(
            "fasttext",
            "complex_order",
            embedding_options={"frequency_sharing": "word"},
        )
        assert tuple(model.get_layer("embedding").frequency.shape) == (4,)
        clone = TextClassifier.from_config(model.get_config())
        assert clone.get_config() == model.get_config()
        with pytest.raises(ValueError, match="`embedding_options` must be"):
            _tiny("fasttext", "none", embedding_options=["x"])

    def test_clone_and_weights_roundtrip(self):
        ids = _ids()
        model = _tiny("cnn", "complex_order")
        clone = TextClassifier.from_config(model.get_config())
        assert clone.get_config() == model.get_config()
        self.run_weights_roundtrip_test(model, ids)

    def test_bad_arguments(self):
        with pytest.raises(ValueError, match="`architecture` must be one of"):
            TextClassifier("gru", "none", VOCAB, 10, 2)
        with pytest.raises(ValueError, match="`embedding` must be one of"):
            TextClassifier("cnn", "rope", VOCAB, 10, 2)
        with pytest.raises(ValueError, match="`sequence_length` must be"):
            TextClassifier("cnn", "pe", VOCAB, None, 2)
        with pytest.raises(ValueError, match="`num_classes` must be"):
            TextClassifier("cnn", "none", VOCAB, 10, 1)
        with pytest.raises(ValueError, match="`dropout` must be"):
            TextClassifier("cnn", "none", VOCAB, 10, 2, dropout=1.0)
        with pytest.raises(ValueError, match="`complex_readout` must be"):
            TextClassifier("cnn", "none", VOCAB, 10, 2, complex_readout="abs")
        with pytest.raises(ValueError, match="divisible by `num_heads`"):
            TextClassifier("transformer", "none", VOCAB, 10, 2, embedding_dim=6)
        with pytest.raises(ValueError, match="`kernel_sizes` must be"):
            TextClassifier("cnn", "none", VOCAB, 10, 2, kernel_sizes=())


def _conv1d_numpy(x, kernel, bias):
    """Valid cross-correlation: x [b, n, c], kernel [k, c, f]."""
    k = kernel.shape[0]
    steps = x.shape[1] - k + 1
    return (
        np.stack(
            [
                np.einsum("bkc,kcf->bf", x[:, t : t + k], kernel)
                for t in range(steps)
            ],
            axis=1,
        )
        + bias
    )


class HelperLayersTest(testing.TestCase):
    def test_masked_conv1d(self):
        rng = np.random.default_rng(0)
        x = rng.normal(size=(3, 6, 2)).astype("float32")
        mask = np.arange(6)[None, :] < np.array([[6], [4], [2]])
        self.run_layer_test(
            MaskedConv1D,
            {"filters": 3, "kernel_size": (3,)},
            x,
            input_mask=mask,
            expected_output_shape=(3, 4, 3),
            supports_masking=True,
            expected_output_mask=np.array(
                [[1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 0, 0]], bool
            ),
        )
        layer = MaskedConv1D(3, 3)
        garbage = np.where(mask[..., None], x, 1e3).astype("float32")
        out = keras.ops.convert_to_numpy(layer(garbage, mask=mask))
        kernel = keras.ops.convert_to_numpy(layer.kernel)
        bias = keras.ops.convert_to_numpy(layer.bias)
        expected = _conv1d_numpy(np.where(mask[..., None], x, 0), kernel, bias)
        self.assertAllClose(out, expected, atol=1e-5)
        same = MaskedConv1D(2, 3, padding="same", strides=2)
        out_mask = same.compute_mask(x, keras.ops.convert_to_tensor(mask))
        self.assertAllEqual(out_mask, mask[:, ::2])
        with pytest.raises(ValueError, match="`padding` must be"):
            MaskedConv1D(2, 3, padding="causal")
        with pytest.raises(ValueError, match="`dilation_rate` must be 1"):
            MaskedConv1D(2, 3, dilation_rate=2)

    def test_complex_concatenate(self):
        rng = np.random.default_rng(1)
        a = rng.normal(size=(2, 4)).astype("float32")  # 2 complex units
        b = rng.normal(size=(2, 6)).astype("float32")  # 3 complex units
        out = keras.ops.convert_to_numpy(ComplexConcatenate()([a, b]))
        za = a[:, :2] + 1j * a[:, 2:]
        zb = b[:, :3] + 1j * b[:, 3:]
        z = np.concatenate([za, zb], -1)
        self.assertAllClose(out, np.concatenate([z.real, z.imag], -1), 1e-7)
        self.run_layer_test(
            ComplexConcatenate,
            {},
            [a, b],
            expected_output_shape=(2, 10),
            expected_num_trainable_weights=0,
            run_training_check=False,
        )
        with pytest.raises(ValueError, match="known, even last axis"):
            ComplexConcatenate()([a, np.zeros((2, 3), "float32")])


# jax compiles every op of an eager step: one compiled step is cheaper.
_EAGER = keras.backend.backend() != "jax"


def _mr_fixture():
    from pathlib import Path

    from keras_msets.data import text

    path = Path(__file__).resolve().parents[1] / "data" / "fixtures"
    return text.load_mr(str(path / "mr_sample.csv"))


class RecipeTest(testing.TestCase):
    def test_stratified_split(self):
        from keras_msets.training.text_classification import stratified_split

        labels = np.array([0] * 20 + [1] * 10 + [2] * 1)
        keep, held = stratified_split(labels, 0.1, seed=3)
        assert sorted(np.concatenate([keep, held]).tolist()) == list(range(31))
        assert np.bincount(labels[held], minlength=3).tolist() == [2, 1, 0]
        again, _ = stratified_split(labels, 0.1, seed=3)
        self.assertAllEqual(keep, again)
        with pytest.raises(ValueError, match="`fraction` must be"):
            stratified_split(labels, 1.5)

    def test_cross_validate_with_glove(self):
        from keras_msets.training.text_classification import cross_validate

        texts, labels = _mr_fixture()
        result = cross_validate(
            "fasttext",
            "complex_order",
            texts,
            labels,
            n_folds=2,
            folds=[1],
            epochs=1,
            sequence_length=12,
            run_eagerly=_EAGER,
        )
        assert result["folds"] == [1] and len(result["fold_accuracies"]) == 1
        assert 0.0 <= result["mean"] <= 1.0 and result["std"] == 0.0
        # GloVe 50-d amplitudes: most words of the fixture are in GloVe.
        assert result["glove_coverage"][0] > 0.8
        vocabulary = result["params"] // (2 * 50)  # amplitude + frequency
        assert 20 < vocabulary < len(texts) * 30
        with pytest.raises(ValueError, match="`folds` must hold"):
            cross_validate("cnn", "none", texts, labels, n_folds=2, folds=[2])

    def test_train_final(self):
        from keras_msets.training.text_classification import train_final

        texts, labels = _mr_fixture()  # 12 positive, then 12 negative
        test = np.isin(np.arange(len(texts)), [0, 1, 12, 13])
        texts = np.asarray(texts, dtype=object)
        result = train_final(
            "lstm",
            "pe",
            list(texts[~test]),
            labels[~test],
            epochs=1,
            glove=False,
            embedding_dim=4,
            hidden_units=2,
            sequence_length=12,
            test_texts=list(texts[test]),
            test_labels=labels[test],
            run_eagerly=_EAGER,
        )
        model = result["model"]
        assert isinstance(model, TextClassifier)
        assert result["vocabulary"][:2] == ["", "[UNK]"]
        assert model.vocabulary_size == len(result["vocabulary"])
        metrics = result["metrics"]
        assert 0.0 <= metrics["test_accuracy"] <= 1.0
        assert metrics["epochs_trained"] == 1
        with pytest.raises(ValueError, match="Pass both"):
            train_final("lstm", "pe", list(texts), labels, test_texts=["a"])
