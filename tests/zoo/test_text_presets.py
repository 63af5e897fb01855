"""The MR text presets' recipes: declared model, card, command line."""

import json
from pathlib import Path

import pytest

from keras_msets import zoo
from keras_msets.testing import load_script

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
    assert budget["max_tokens"] == settings["max_tokens"]
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
