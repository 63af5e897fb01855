"""A serves update (`--serves-only`) rewrites a preset's serving
declaration on its existing weights, and refuses what would need new
ones."""

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from keras_msets import zoo
from keras_msets.models import QuantileRegressor
from keras_msets.training import Task
from keras_msets.training import preset_io
from keras_msets.utils.scripts import load_script

PRESET = "knn_refined_mutual_information"


class _DeclaredServes(Task):
    """A task that only declares `serves` (no training tables needed)."""

    name = "serves_declaration"

    def __init__(self, serves, features):
        self.declared = serves
        self.features = features

    def serves(self):
        return dict(self.declared)

    def example_input(self):
        return np.zeros((1, self.features), dtype="float32")


def _copy(tmp_path, root="copies"):
    source = Path(zoo.info(PRESET)["path"])
    folder = tmp_path / root / PRESET
    shutil.copytree(source, folder)
    return folder


def _recipe(folder, **serves_changes):
    recipe = load_script(folder / "recipe.py", name="test_serves_recipe").RECIPE
    serves = {**preset_io.read_metadata(folder)["serves"], **serves_changes}
    task = _DeclaredServes(serves, len(serves["features"]))
    return dataclasses.replace(recipe, task=task, source=None)


def _bytes(folder, files=(preset_io.CONFIG_FILE, preset_io.WEIGHTS_FILE)):
    return {f: (folder / f).read_bytes() for f in files}


def test_serves_update_keeps_the_weights_and_records_them(tmp_path):
    folder = _copy(tmp_path)
    before = _bytes(folder)
    check = {"from_points": 1000, "band": 4.935}
    recipe = _recipe(folder, whole_sample_check=check)
    recipe.main(["--serves-only", "--output-dir", str(folder)])
    assert _bytes(folder) == before
    metadata = preset_io.read_metadata(folder)
    assert metadata["serves"]["whole_sample_check"] == check
    record = metadata["serves_updated"]
    assert record["changed"] == ["whole_sample_check"]
    assert record["weights_sha256"] == preset_io.sha256_of(
        folder / preset_io.WEIGHTS_FILE
    )
    # Again with nothing to change: the record of the change stays.
    recipe.update_serves(folder)
    assert preset_io.read_metadata(folder)["serves_updated"] == record
    # Still a valid preset whose stored example output it reproduces.
    example = metadata["example"]
    model = zoo.load(folder)
    output = model.predict_on_batch(preset_io.example_input(example))
    np.testing.assert_allclose(output, example["output"], atol=1e-6)


def test_serves_update_refuses_what_needs_new_weights(tmp_path):
    folder = _copy(tmp_path)
    before = _bytes(folder, (*preset_io.VERIFIED_FILES[:2], "metadata.json"))
    other = dataclasses.replace(
        _recipe(folder, whole_sample_check={}),
        build_model=lambda: QuantileRegressor(
            22, (0.05, 0.5, 0.95), hidden_units=(8,), name=PRESET
        ),
    )
    with pytest.raises(ValueError, match="differs from the one stored"):
        other.update_serves(folder)
    with pytest.raises(ValueError, match="`quantiles` changed"):
        _recipe(folder, quantiles=[0.1, 0.5, 0.9]).update_serves(folder)
    with pytest.raises(ValueError, match="training options"):
        _recipe(folder).main(
            ["--serves-only", "--output-dir", str(folder), "--epochs", "3"]
        )
    assert _bytes(folder, before) == before
    (folder / preset_io.WEIGHTS_FILE).unlink()
    with pytest.raises(ValueError, match="no model.weights.h5"):
        _recipe(folder).update_serves(folder)


def test_serves_update_of_an_installed_preset_needs_overwrite(
    tmp_path, monkeypatch
):
    folder = _copy(tmp_path, root="presets")
    monkeypatch.setenv("KERAS_MSETS_ZOO_DIR", str(folder.parent))
    recipe = _recipe(folder, whole_sample_check={"from_points": 10})
    metadata = (folder / "metadata.json").read_bytes()
    with pytest.raises(ValueError, match="overwrite=False"):
        recipe.update_serves(folder)
    with pytest.raises(ValueError, match="overwrite=True"):
        zoo.train(PRESET, serves_only=True)
    assert (folder / "metadata.json").read_bytes() == metadata
    recipe.update_serves(folder, overwrite=True)
    assert preset_io.read_metadata(folder)["serves"]["whole_sample_check"]


def test_serves_update_accepts_a_config_saved_before_a_new_argument(tmp_path):
    # A preset saved before the class gained an argument (stored config
    # without it; the default keeps the old model) is the same model.
    folder = _copy(tmp_path)
    config = json.loads((folder / preset_io.CONFIG_FILE).read_text())
    assert config["config"].pop("nonnegative_middle") is False
    (folder / preset_io.CONFIG_FILE).write_text(json.dumps(config))
    metadata = preset_io.read_metadata(folder)
    metadata["files_sha256"] = preset_io.file_hashes(folder)
    preset_io.write_json(folder / "metadata.json", metadata)
    _recipe(folder, whole_sample_check={"from_points": 10}).update_serves(
        folder
    )
    assert preset_io.read_metadata(folder)["serves"]["whole_sample_check"]


def test_serves_update_keeps_the_stored_feature_ranges(tmp_path, monkeypatch):
    # The preset's own recipe: its statistics task completes `serves`
    # with the feature ranges of the training rows. A serves update keeps
    # the stored ones and never computes the training statistics.
    folder = _copy(tmp_path)
    recipe = dataclasses.replace(
        load_script(folder / "recipe.py", name="test_serves_recipe").RECIPE,
        source=None,
    )

    def no_rows(split):
        raise AssertionError(f"computed the {split!r} statistics")

    monkeypatch.setattr(recipe.task, "_rows", no_rows)
    stored = preset_io.read_metadata(folder)["serves"]
    stored["feature_ranges"][0] = [-1.0, 1.0]
    update = recipe.task.serves_update(stored)
    assert update["feature_ranges"] == stored["feature_ranges"]
    assert update["base_gate"] == recipe.task._serves["base_gate"]
    assert update["features"] == stored["features"]
    with pytest.raises(AssertionError, match="'train' statistics"):
        recipe.task.serves()
