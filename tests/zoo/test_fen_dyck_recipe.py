"""The fen_dyck_64 recipe: model options, curriculum, count readout, card."""

import dataclasses
import functools
import json
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_msets.testing import load_script
from keras_msets.training import fen_curriculum
from keras_msets.training.tasks import dyck

ZOO = Path(__file__).resolve().parents[2] / "zoo"
RECIPE = ZOO / "fen_dyck_64" / "recipe.py"


def test_build_model_options():
    recipe = load_script(RECIPE)
    preset = recipe.build_model(16)
    assert preset.segment_learning_rates is None
    assert preset.encoding_activation is keras.activations.tanh
    assert preset.token_count_loss_weight == recipe.TOKEN_COUNT_LOSS_WEIGHT > 0
    linear = recipe.build_model(
        16, encoding_activation=None, rate_power=1.0, token_count_loss_weight=0
    )
    assert linear.count_readout is None
    assert linear.encoding_activation is keras.activations.linear
    rates = np.asarray(linear.segment_learning_rates)
    lengths = np.array([j - i + 1 for i, j in linear.segments.segments])
    np.testing.assert_allclose(rates[:, 0], rates[:, 1])
    np.testing.assert_allclose(rates[:, 0], lengths / lengths.mean())
    x = np.random.default_rng(0).integers(1, 3, size=(3, 16)).astype("int32")
    assert linear(x).shape == (3, 1)
    # Unbounded encodings: the tanh model's stay in [-1, 1].
    encodings = keras.ops.convert_to_numpy(preset.encodings(x))
    assert np.abs(encodings).max() <= 1.0
    # The shipped preset's model, as declared.
    shipped = json.loads((ZOO / "fen_dyck_64" / "config.json").read_text())
    config = json.loads(json.dumps(recipe.RECIPE.build_model().get_config()))
    assert config == shipped["config"]


def test_stage_models_keep_the_options():
    recipe = load_script(RECIPE)
    model = recipe.build_model(
        64, encoding_activation=None, rate_power=1, token_count_loss_weight=0.5
    )
    for length in (8, 16):
        stage = fen_curriculum.stage_model(model, length)
        assert stage.sequence_length == length
        assert stage.encoding_activation is keras.activations.linear
        assert stage.token_count_loss_weight == 0.5
        # The rates of a model built at that length: ~ segment length.
        np.testing.assert_allclose(
            stage.segment_learning_rates,
            recipe.build_model(length, rate_power=1.0).segment_learning_rates,
        )


def test_train_passes_the_options_to_every_stage(tmp_path, monkeypatch):
    recipe = load_script(RECIPE)
    seen = {}

    def fit_stages(model, stages, make_data, **kwargs):
        seen["stages"] = stages
        seen["models"] = [
            fen_curriculum.stage_model(model, s[0]) for s in stages[:-1]
        ] + [model]
        raise RuntimeError("stop after building")

    monkeypatch.setattr(fen_curriculum, "fit_stages", fit_stages)
    with pytest.raises(RuntimeError, match="stop after building"):
        recipe.RECIPE.train(
            output_dir=tmp_path / "run",
            stages=((4, 1), (8, 1)),
            encoding_activation="linear",
            rate_power=1.0,
            token_count_loss_weight=0.5,
            last_learning_rate=1e-4,
        )
    assert seen["stages"] == [(4, 1), (8, 1, 1e-4)]
    models = seen["models"]
    assert [m.sequence_length for m in models] == [4, 64]
    for model in models:
        assert model.encoding_activation is keras.activations.linear
        assert model.segment_learning_rates is not None
        assert model.token_count_loss_weight == 0.5
    # The command line takes the same options.
    args = recipe.RECIPE.argument_parser().parse_args(
        ["--rate-power", "1", "--last-learning-rate", "1e-3"]
    )
    assert args.rate_power == 1.0 and args.last_learning_rate == 1e-3
    assert args.token_count_loss_weight is None  # the preset's default


def test_training_refuses_the_shipped_preset_folder():
    recipe = load_script(RECIPE)
    with pytest.raises(ValueError, match="Refusing to write"):
        recipe.RECIPE.train(output_dir=ZOO / "fen_dyck_64", stages=((4, 1),))


def test_count_exactness_scores_the_readout():
    recipe = load_script(RECIPE)
    model = recipe.build_model(64)
    x = np.random.default_rng(1).integers(1, 3, size=(4, 64)).astype("int32")
    model(x)
    # An untrained readout is not exact at length 64; a readout set to
    # the truth is.
    assert dyck.count_exactness(model, x)["count_exact_64"] == 0.0
    model.predicted_token_counts = model.segment_token_counts
    exact = dyck.count_exactness(model, x)
    assert exact == {f"count_exact_{n}": 1.0 for n in (8, 16, 32, 64)}


def test_card_renders_from_the_stored_metrics():
    recipe = load_script(RECIPE)
    metadata = json.loads((ZOO / "fen_dyck_64" / "metadata.json").read_text())
    metrics = metadata["metrics"]
    model = recipe.build_model()
    model(np.ones((1, 64), "int32"))
    card = recipe.RECIPE.model_card(model, metrics)
    assert card.startswith("# `fen_dyck_64`")
    assert f"accuracy: {metrics['accuracy']:.4f}" in card
    for kind in ("balanced", "flip", "swap", "equal_counts", "random"):
        assert f"| {kind} | {metrics[f'accuracy_{kind}']:.4f} |" in card
    assert "64 (15 epochs at learning rate 0.0003" in card
    assert "## Limitations" not in card  # 0.9865 reaches the target
    assert card == (ZOO / "fen_dyck_64" / "README.md").read_text()
    short = dict(metrics, accuracy=0.9)
    assert "## Limitations" in recipe.RECIPE.model_card(model, short)


@pytest.mark.slow
def test_a_tiny_curriculum_writes_a_new_preset_folder(tmp_path):
    recipe = load_script(RECIPE)
    tiny = dataclasses.replace(
        recipe.RECIPE,
        task=dyck.DyckTask(length=8, train_size=64, dev_size=32, test_size=64),
        build_model=functools.partial(recipe.build_model, 8),
    )
    path = tiny.train(
        output_dir=tmp_path / "run", stages=((4, 1), (8, 1)), verbose=0
    )
    metadata = json.loads((path / "metadata.json").read_text())
    fit = metadata["metrics"]["fit"]
    assert [s["length"] for s in fit["stages"]] == [4, 8]
    assert [s["epochs_run"] for s in fit["stages"]] == [1, 1]
    assert 0.0 <= metadata["metrics"]["accuracy"] <= 1.0
    assert metadata["task"] == "dyck1"
    assert not (path / fen_curriculum.CHECKPOINT_FILE).exists()
    card = (path / "README.md").read_text()
    assert f"{metadata['metrics']['accuracy']:.4f}" in card
    assert "stages 4 (1 epochs" in card
    # A second run into the same folder is refused.
    with pytest.raises(ValueError, match="Refusing to write"):
        tiny.train(output_dir=path, stages=((8, 1),), verbose=0)
