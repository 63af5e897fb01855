"""The MR text presets: raw sentences in, two class probabilities out, on
every backend and without TensorFlow; their recipes: declared model,
card, command line."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_msets import data
from keras_msets import zoo
from keras_msets.testing import load_script
from keras_msets.training import text_classification
from keras_msets.training.text_splits import mr_fold_split

ZOO = Path(__file__).resolve().parents[2] / "zoo"
COMPLEX_ORDER = ["complex_order_cnn_mr", "complex_order_transformer_mr"]
PRESETS = ["fen_mr_polarity", *COMPLEX_ORDER]
# A positive and a negative review, words no preset knows, no words.
SENTENCES = [
    "a gorgeous , witty film",
    "dull and lifeless",
    "qwzxv plmkjnb",
    "",
]


@pytest.fixture(scope="module")
def models():
    """Each MR preset, loaded once for the module."""
    return {name: zoo.load(name) for name in PRESETS}


@pytest.mark.parametrize("name", PRESETS)
def test_raw_sentences_give_two_class_probabilities(name, models):
    model = models[name]
    p = np.asarray(model.predict(SENTENCES, verbose=0))
    assert p.shape == (len(SENTENCES), 2) and p.dtype == np.float32
    assert np.isfinite(p).all() and (p >= 0).all()
    np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-5)
    # The same numbers as the token ids of the training-time encoding.
    ids = zoo.load_recipe(name).encode(SENTENCES)
    assert (ids[2, :2] == 1).all() and (ids[2, 2:] == 0).all()  # [UNK]
    assert (ids[3] == 0).all()
    np.testing.assert_allclose(
        p, model.predict(ids, verbose=0), atol=1e-6, rtol=1e-6
    )
    # Not a batch of strings: a clear error naming the argument.
    for bad, message in (
        ("dull and lifeless", "not one string"),
        ([], "at least one string"),
        (["fine", 7], r"x\[1\]=7 of type int"),
        ([b"dull"], "decode bytes first"),
    ):
        with pytest.raises(ValueError, match=message):
            model.predict(bad, verbose=0)


@pytest.mark.parametrize("name", PRESETS)
def test_the_preprocessor_is_the_shipped_vocabulary(name, models):
    preprocessor = models[name].preprocessor
    words = (ZOO / name / "vocabulary.txt").read_text(encoding="utf-8")
    assert preprocessor.vocabulary == words.split("\n")
    assert preprocessor.vocabulary_size == models[name].vocabulary_size
    task = zoo.load_recipe(name).TASK
    assert preprocessor.sequence_length == task.sequence_length
    assert preprocessor.standardize == task.standardize


@pytest.mark.parametrize("name", PRESETS)
def test_the_preprocessor_gives_the_training_ids_on_all_of_mr(name, models):
    # Training encoded MR with Keras's TextVectorization (TensorFlow),
    # adapted on the preset's training sentences: the same vocabulary, and
    # the same ids for all 4,000 sentences.
    pytest.importorskip("tensorflow")
    task = zoo.load_recipe(name).TASK
    texts, _, train, _ = mr_fold_split(0)
    if name == "fen_mr_polarity":
        vectorizer = task.training_vectorizer()
    else:
        vectorizer = data.build_vectorizer(
            [texts[i] for i in train],
            max_tokens=task.max_tokens,
            sequence_length=task.sequence_length,
            standardize=task.standardize,
        )
    preprocessor = models[name].preprocessor
    assert vectorizer.get_vocabulary() == preprocessor.vocabulary
    np.testing.assert_array_equal(
        preprocessor(texts), data.texts_to_ids(vectorizer, texts)
    )


# A new process with TensorFlow hidden; test_raw_sentences_give_two_class_
# probabilities checks the same presets in this one.
@pytest.mark.slow
def test_raw_sentences_without_tensorflow():
    if keras.backend.backend() == "tensorflow":
        pytest.skip("the TensorFlow backend needs TensorFlow")
    code = f"""
import sys
sys.modules["tensorflow"] = None  # `import tensorflow` fails: not installed
from keras_msets import zoo
for name in {PRESETS!r}:
    model = zoo.load(name)
    p = model.predict(["a gorgeous, witty film", "dull and lifeless"])
    assert p.shape == (2, 2), (name, p.shape)
    print(name, p.round(4).tolist())
"""
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert all(name in result.stdout for name in PRESETS)


# `make test-fast` compiles one preset (the three share the compile code
# path); `make test` all three.
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(
            name,
            marks=() if name == "complex_order_cnn_mr" else pytest.mark.slow,
        )
        for name in PRESETS
    ],
)
def test_compiled_with_the_recipes_loss(name):
    model = zoo.load(name, compile=True)
    assert model.compiled
    texts, labels = SENTENCES[:2], np.array([1, 0])
    p = np.asarray(model.predict(texts, verbose=0))
    # A sparse categorical cross-entropy on the two probabilities.
    expected = -np.mean(np.log(p[np.arange(2), labels]))
    loss = model.evaluate(texts, labels, verbose=0, return_dict=True)
    np.testing.assert_allclose(loss["loss"], expected, rtol=1e-4)
    assert 0.0 <= loss["accuracy"] <= 1.0
    model.fit(texts, labels, epochs=1, verbose=0)  # fine-tunes at once


def test_a_changed_vocabulary_in_the_preprocessor_is_refused(tmp_path):
    name = "complex_order_cnn_mr"
    folder = tmp_path / name
    shutil.copytree(ZOO / name, folder)
    path = folder / "config.json"
    config = json.loads(path.read_text())
    words = config["config"]["preprocessor"]["config"]["vocabulary"]
    words[2], words[3] = words[3], words[2]
    path.write_text(json.dumps(config))
    with pytest.raises(ValueError, match="config.json.*sha256"):
        zoo.load(folder)
    shutil.copyfile(ZOO / name / "config.json", path)
    vocabulary = folder / "vocabulary.txt"
    vocabulary.write_text(vocabulary.read_text().replace("\nthe\n", "\nThe\n"))
    with pytest.raises(ValueError, match="vocabulary.txt.*sha256"):
        zoo.load(folder)


def _stored(name):
    return json.loads((ZOO / name / "metadata.json").read_text())


@pytest.mark.parametrize("name", COMPLEX_ORDER)
def test_complex_order_recipe_declares_the_shipped_model(name):
    recipe = load_script(ZOO / name / "recipe.py")
    config = json.loads(json.dumps(recipe.RECIPE.build_model().get_config()))
    shipped = json.loads((ZOO / name / "config.json").read_text())
    assert config == shipped["config"]
    # The budget is the Table 2 run's (the settings stored at training).
    budget = recipe.RECIPE.full_budget()
    settings = _stored(name)["settings"]
    for key in ("epochs", "batch_size", "learning_rate", "patience", "seed"):
        assert budget[key] == settings[key], key
    assert recipe.TASK.max_tokens == settings["max_tokens"]
    args = recipe.RECIPE.argument_parser().parse_args(["--folds", "0", "3"])
    assert args.folds == [0, 3]


@pytest.mark.parametrize("name", COMPLEX_ORDER)
def test_complex_order_card_from_the_stored_metrics(name):
    recipe = load_script(ZOO / name / "recipe.py")
    metrics = _stored(name)["metrics"]
    card = recipe.RECIPE.model_card(zoo.load(name), metrics)
    assert card.startswith(f"# `{name}`")
    cv = metrics["cross_validation"]
    for embedding, label in (
        ("complex_order", "Complex-order"),
        ("pe", "PE"),
        ("tpe", "TPE"),
    ):
        result = cv[embedding]
        row = f"| {label} | {result['mean']:.4f} ± {result['std']:.4f} |"
        assert row in card
    assert f"{metrics['test_accuracy']:.4f}" in card
    assert "## Limitations" in card
    assert card == (ZOO / name / "README.md").read_text()


def test_fen_mr_polarity_card_from_the_stored_metrics():
    recipe = load_script(ZOO / "fen_mr_polarity" / "recipe.py")
    metrics = _stored("fen_mr_polarity")["metrics"]
    card = recipe.RECIPE.model_card(zoo.load("fen_mr_polarity"), metrics)
    assert "accuracy 0.6150" in card
    assert "10 epochs, best dev accuracy 0.6472" in " ".join(card.split())
    assert card == (ZOO / "fen_mr_polarity" / "README.md").read_text()
    # Raw sentences go through the shipped vocabulary (64 tokens).
    ids = recipe.encode(["a gorgeous, witty, seductive movie.", ""])
    assert ids.shape == (2, 64) and ids[0, 0] > 1 and (ids[1] == 0).all()
    with pytest.raises(ValueError, match="list of strings"):
        recipe.encode("one sentence")


@pytest.mark.parametrize("name", ["fen_mr_polarity", *COMPLEX_ORDER])
def test_training_never_writes_into_the_shipped_preset(name):
    recipe = load_script(ZOO / name / "recipe.py")
    with pytest.raises(ValueError, match="Refusing to write"):
        recipe.RECIPE.train(output_dir=ZOO / name)


@pytest.mark.slow
def test_complex_order_train_keeps_fold_0s_model(tmp_path, monkeypatch):
    # The cross validation is replaced by one that hands back the shipped
    # model and vocabulary as "fold 0's": training copies the weights into
    # the declared model, ships the vocabulary and checks that the folder
    # reproduces the fold's accuracy.
    name = "complex_order_cnn_mr"
    recipe = load_script(ZOO / name / "recipe.py")
    stored = _stored(name)["metrics"]
    words = (ZOO / name / "vocabulary.txt").read_text().split("\n")
    calls = []

    def cross_validate(architecture, embedding, texts, labels, **kwargs):
        calls.append((architecture, embedding, kwargs["folds"]))
        return {
            "mean": stored["test_accuracy"],
            "std": 0.0,
            "fold_accuracies": [stored["test_accuracy"]],
            "folds": kwargs["folds"],
            "epochs_trained": [1],
            "params": 1,
            "seconds": 0.0,
            "model": zoo.load(name),
            "vocabulary": words,
        }

    monkeypatch.setattr(text_classification, "cross_validate", cross_validate)
    path = recipe.RECIPE.train(output_dir=tmp_path / "run", folds=[0])
    assert [c[1] for c in calls] == ["complex_order", "pe", "tpe"]
    assert all(c[0] == "cnn" and c[2] == [0] for c in calls)
    assert (path / "vocabulary.txt").read_text().split("\n") == words
    metadata = json.loads((path / "metadata.json").read_text())
    assert metadata["metrics"]["test_accuracy"] == stored["test_accuracy"]
    assert metadata["metrics"]["fit"]["preset_fold"] == 0
    assert metadata["task"] == "mr_polarity"
    shipped = _stored(name)["example"]["output"]
    np.testing.assert_allclose(
        metadata["example"]["output"], shipped, atol=1e-5
    )
    card = (path / "README.md").read_text()
    assert "mean ± std over 1 folds" in card


@pytest.mark.slow
def test_fen_mr_polarity_trains_with_its_own_vocabulary(tmp_path):
    recipe = load_script(ZOO / "fen_mr_polarity" / "recipe.py")
    task = recipe.TASK
    texts, labels, train, dev, test = task.split()
    # A small training set: its vocabulary is much smaller than the
    # shipped one, so the run must encode with its own.
    task.split = lambda: (texts, labels, train[:96], dev[:32], test[:64])
    path = recipe.RECIPE.train(
        output_dir=tmp_path / "run", stages=((64, 1),), verbose=0
    )
    words = (path / "vocabulary.txt").read_text().split("\n")
    shipped = (ZOO / "fen_mr_polarity" / "vocabulary.txt").read_text()
    assert words[:2] == ["", "[UNK]"] and len(words) < len(shipped.split())
    metadata = json.loads((path / "metadata.json").read_text())
    assert json.loads((path / "config.json").read_text())["config"][
        "vocabulary_size"
    ] == len(words)
    assert 0.0 <= metadata["metrics"]["test_accuracy"] <= 1.0
    assert metadata["metrics"]["fit"]["stages"][0]["epochs_run"] == 1
    assert task.encode(["a movie"]).max() < len(words)
