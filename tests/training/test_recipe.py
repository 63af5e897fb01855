"""`Recipe` and `Task`: declared presets that train into a new folder.

The digit-sum presets are the example: their cards re-render from their
stored metrics, their metrics re-measure, and a training run of two
batches writes a complete preset folder under `runs/` while every file of
the installed presets stays byte-identical.
"""

import dataclasses
import hashlib
import json
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_msets import zoo
from keras_msets.training import Recipe
from keras_msets.training import Task
from keras_msets.training import recipe as recipe_lib
from keras_msets.training.tasks import DigitSumTask
from keras_msets.utils.scripts import load_script

DIGIT_SUM_PRESETS = (
    "complex_deepsets_digit_sum",
    "complex_deepsets_units_digit",
    "deepsets_digit_sum",
    "deepsets_units_digit",
)


def _recipe(name):
    folder = Path(zoo.info(name)["path"])
    module = load_script(folder / "recipe.py", name=f"test_recipe_{name}")
    return module.RECIPE


def _small(recipe):
    """The recipe with a test set small enough for a test."""
    task = DigitSumTask(
        recipe.task.target, lengths=(5,), num_per_length=20, long_num=10
    )
    return dataclasses.replace(recipe, task=task)


def _hashes(roots):
    hashes = {}
    for root in roots:
        for path in sorted(Path(root).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                hashes[str(path)] = hashlib.sha256(
                    path.read_bytes()
                ).hexdigest()
    return hashes


@pytest.mark.parametrize("name", DIGIT_SUM_PRESETS)
def test_recipe_is_a_short_declaration(name):
    source = Path(zoo.info(name)["path"]) / "recipe.py"
    assert len(source.read_text().splitlines()) <= 40
    recipe = _recipe(name)
    assert isinstance(recipe, Recipe)
    assert recipe.name == name
    assert recipe.task.name == zoo.info(name)["task"]


@pytest.mark.parametrize("name", DIGIT_SUM_PRESETS)
def test_card_renders_from_the_stored_metrics(name):
    info = zoo.info(name)
    card = _recipe(name).model_card(zoo.load(name), info["metrics"])
    assert card == info["card"]
    assert f"trained on the {info['backend']} backend" in card


@pytest.mark.slow
@pytest.mark.parametrize("name", DIGIT_SUM_PRESETS)
def test_evaluate_re_measures_the_stored_metrics(name):
    # The test sets are drawn per length, so length 5 and the length-500
    # set are those of the card.
    recipe = _recipe(name)
    task = DigitSumTask(recipe.task.target, lengths=(5,))
    measured = dataclasses.replace(recipe, task=task).evaluate(
        zoo.load(name), verbose=0
    )
    stored = zoo.info(name)["metrics"]["accuracy_by_length"]
    for length in ("5", "500"):
        # Two sequences in 10,000 may round the other way on another
        # backend.
        assert abs(measured["accuracy_by_length"][length] - stored[length]) < (
            3e-4
        ), (length, measured, stored)


def test_training_writes_a_new_folder_and_never_an_installed_preset(
    tmp_path, monkeypatch
):
    roots = recipe_lib.preset_roots()
    assert roots
    before = _hashes(roots)
    monkeypatch.chdir(tmp_path)
    recipe = _small(_recipe("deepsets_digit_sum"))
    path = recipe.train(epochs=1, steps=2, verbose=0)

    assert path.parent.parent == tmp_path.resolve() / "runs"
    assert path.name == "deepsets_digit_sum"
    for file in ("config.json", "model.weights.h5", "metadata.json"):
        assert (path / file).is_file(), file
    assert (path / "recipe.py").read_text() == Path(recipe.source).read_text()
    metadata = json.loads((path / "metadata.json").read_text())
    assert metadata["name"] == "deepsets_digit_sum"
    assert metadata["task"] == "digit_sum"
    assert metadata["recipe_seed"] == 0
    fit = metadata["metrics"]["fit"]
    assert fit["epochs_run"] == 1 and fit["steps"] == 2
    assert set(metadata["metrics"]["accuracy_by_length"]) == {"5", "500"}
    card = (path / "README.md").read_text()
    assert card.startswith("# `deepsets_digit_sum`")
    assert "| 5 | " in card and "| 500 | " in card
    assert f"trained on the {fit['backend']} backend" in card

    assert _hashes(roots) == before


def test_training_refuses_to_write_into_a_preset_without_overwrite(
    tmp_path,
):
    recipe = _recipe("deepsets_digit_sum")
    installed = Path(zoo.info("deepsets_digit_sum")["path"])
    for folder in (installed, installed.parent, installed / "new"):
        with pytest.raises(ValueError, match="installed presets"):
            recipe.train(output_dir=folder, epochs=1, steps=1)
    old_run = tmp_path / "old_run"
    old_run.mkdir()
    (old_run / "metadata.json").write_text("{}")
    with pytest.raises(ValueError, match="overwrite=True"):
        recipe.train(output_dir=old_run, epochs=1, steps=1)
    assert [p.name for p in old_run.iterdir()] == ["metadata.json"]
    # Only with `overwrite=True` explicitly.
    assert recipe_lib.check_output_dir(installed, overwrite=True) == (
        installed.resolve()
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    assert recipe_lib.check_output_dir(empty) == empty.resolve()


class _RecordingTask(DigitSumTask):
    """Records the folder `fit` may keep a checkpoint in."""

    def fit(self, model, budget, output_dir, verbose=2):
        self.work_dir = Path(output_dir)
        return super().fit(model, budget, output_dir, verbose)


def test_checkpoints_never_go_into_a_preset(tmp_path, monkeypatch):
    task = _RecordingTask("sum", lengths=(5,), num_per_length=20, long_num=10)
    recipe = dataclasses.replace(_recipe("deepsets_digit_sum"), task=task)
    presets = tmp_path / "presets"
    preset = presets / "deepsets_digit_sum"
    preset.mkdir(parents=True)
    (preset / "metadata.json").write_text("{}")
    monkeypatch.setenv("KERAS_MSETS_ZOO_DIR", str(presets))
    monkeypatch.chdir(tmp_path)
    for folder in (presets, preset, preset / "checkpoint"):
        with pytest.raises(ValueError, match="checkpoint_dir"):
            recipe.train(
                output_dir=tmp_path / "run", checkpoint_dir=folder, epochs=1
            )
    assert not (tmp_path / "run").exists()
    # Replacing a preset (overwrite=True): the task trains in a new
    # folder under runs/, and the preset folder gets the preset files.
    path = recipe.train(
        output_dir=preset, overwrite=True, epochs=1, steps=1, verbose=0
    )
    assert path == preset.resolve()
    assert task.work_dir.parent.parent == tmp_path.resolve() / "runs"
    assert (preset / "recipe.py").is_file()
    assert json.loads((preset / "metadata.json").read_text())["name"] == (
        "deepsets_digit_sum"
    )


class _NoTraining(DigitSumTask):
    """Fits nothing: the model keeps the weights it starts from."""

    def fit(self, model, budget, output_dir, verbose=2):
        return {"backend": keras.backend.backend()}


def test_start_from_a_preset_loads_its_weights(tmp_path):
    recipe = dataclasses.replace(
        _recipe("deepsets_digit_sum"),
        task=_NoTraining("sum", lengths=(5,), num_per_length=20, long_num=10),
        start_from="deepsets_digit_sum",
    )
    path = recipe.train(output_dir=tmp_path / "run", verbose=0)
    metadata = json.loads((path / "metadata.json").read_text())
    assert metadata["metrics"]["fit"]["start_from"] == "deepsets_digit_sum"
    shipped = zoo.info("deepsets_digit_sum")["example"]
    assert metadata["example"]["input"] == shipped["input"]
    np.testing.assert_allclose(
        metadata["example"]["output"], shipped["output"], atol=1e-5
    )
    with pytest.raises(ValueError, match="start_from"):
        dataclasses.replace(recipe, start_from="no_such_preset").train(
            output_dir=tmp_path / "run2", verbose=0
        )
    assert not (tmp_path / "run2").exists()


@pytest.mark.slow
def test_command_line_trains_into_the_given_folder(tmp_path):
    recipe = _small(_recipe("complex_deepsets_units_digit"))
    output = tmp_path / "out" / recipe.name
    path = recipe.main(
        [
            "--epochs",
            "1",
            "--steps",
            "1",
            "--seed",
            "3",
            "--paper-readout",
            "--output-dir",
            str(output),
            "--verbose",
            "0",
        ]
    )
    assert path == output.resolve()
    metadata = json.loads((output / "metadata.json").read_text())
    assert metadata["recipe_seed"] == 3
    assert metadata["task"] == "units_digit"
    config = json.loads((output / "config.json").read_text())
    assert config["config"]["unit_modulus"] is False
    with pytest.raises(ValueError, match="overwrite=True"):
        recipe.main(["--output-dir", str(output)])


def test_data_parallel_on_jax_and_a_clear_error_elsewhere(tmp_path):
    recipe = _small(_recipe("deepsets_digit_sum"))
    options = {"epochs": 1, "steps": 1, "verbose": 0, "data_parallel": True}
    if keras.backend.backend() != "jax":
        with pytest.raises(ValueError, match="JAX backend"):
            recipe.train(output_dir=tmp_path / "run", **options)
        return
    path = recipe.train(output_dir=tmp_path / "run", **options)
    metadata = json.loads((path / "metadata.json").read_text())
    devices = metadata["metrics"]["fit"]["data_parallel_devices"]
    assert devices == len(keras.distribution.list_devices())


def test_budget_layers_shared_task_and_recipe_values():
    task = DigitSumTask("sum")
    recipe = Recipe(
        name="x", task=task, build_model=lambda: None, budget={"seed": 5}
    )
    budget = recipe.full_budget(epochs=2, steps=None)
    assert budget["epochs"] == 2  # the call
    assert budget["seed"] == 5  # the recipe
    assert budget["batch_size"] == 128  # the task
    assert budget["optimizer"] == "adam"  # shared
    assert budget["steps"] is None


def test_task_base_class():
    task = Task()
    with pytest.raises(NotImplementedError, match="training_data"):
        task.training_data(task.budget())
    with pytest.raises(NotImplementedError, match="evaluate"):
        task.evaluate(None)
    with pytest.raises(ValueError, match="`optimizer` must be one of"):
        task.optimizer(task.budget({"optimizer": "sgd"}))
    assert task.serves() is None and task.example_input() is None
    table = task.card_sections(None, {"mae": 0.125, "note": "x"})
    assert "| mae | 0.125 |" in table and "note" not in table


def test_digit_sum_task_checks_its_arguments():
    with pytest.raises(ValueError, match="target"):
        DigitSumTask("product")
    with pytest.raises(ValueError, match="num_per_length"):
        DigitSumTask("sum", num_per_length=0)
