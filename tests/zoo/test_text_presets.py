"""The MR text presets' recipes: declared model, card, command line."""

import json
from pathlib import Path

import numpy as np
import pytest

from keras_msets import zoo
from keras_msets.testing import load_script
from keras_msets.training import text_classification

ZOO = Path(__file__).resolve().parents[2] / "zoo"
COMPLEX_ORDER = ["complex_order_cnn_mr", "complex_order_transformer_mr"]


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
