import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import keras_msets
from keras_msets import zoo
from keras_msets.cli import main as cli_main
from keras_msets.zoo import registry

PRESETS = zoo.list()
REQUIRED_FILES = (
    "config.json",
    "model.weights.h5",
    "metadata.json",
    "README.md",
    "recipe.py",
)
METADATA_KEYS = (
    "keras_version",
    "keras_msets_version",
    "backend",
    "parameter_count",
    "date",
    "data",
    "metrics",
    "weights_sha256",
)


def _digits(seed=0, batch=8, length=12):
    rng = np.random.default_rng(seed)
    x = rng.integers(1, 10, size=(batch, length)).astype("int32")
    x[:, length // 2 :] *= rng.random((batch, 1)) < 0.5  # some padding
    return x


def test_there_are_presets():
    assert "complex_deepsets_units_digit" in PRESETS


@pytest.mark.parametrize("name", PRESETS)
def test_preset_folder_is_complete(name):
    folder = registry.presets_root() / name
    for file in REQUIRED_FILES:
        assert (folder / file).is_file(), f"{name} lacks {file}"
    metadata = zoo.info(name)
    for key in METADATA_KEYS:
        assert key in metadata, f"{name}/metadata.json lacks {key}"
    assert metadata["weights_sha256"] == registry.sha256_of(
        folder / "model.weights.h5"
    )
    assert metadata["backend"] in ("tensorflow", "jax", "torch")
    card = metadata["card"]
    assert f"keras-msets zoo evaluate {name}" in card
    assert f"keras-msets zoo train {name}" in card


@pytest.mark.parametrize("name", PRESETS)
def test_load_gives_an_uncompiled_model_with_the_recorded_size(name):
    model = zoo.load(name)
    assert model.count_params() == zoo.info(name)["parameter_count"]
    assert not model.compiled
    assert getattr(model, "optimizer", None) is None
    assert "compile_config" not in json.loads(
        (registry.presets_root() / name / "config.json").read_text()
    )
    untrained = zoo.load(name, load_weights=False)
    example = zoo.info(name)["example"]
    x = registry.example_input(example)
    trained_out = np.asarray(model.predict_on_batch(x))
    assert np.all(np.isfinite(trained_out))
    assert not np.allclose(
        trained_out, np.asarray(untrained.predict_on_batch(x))
    )


def test_unknown_name_lists_the_available_presets():
    with pytest.raises(ValueError) as error:
        zoo.load("no_such_model")
    message = str(error.value)
    assert "no_such_model" in message
    for name in PRESETS:
        assert name in message


def _copy_zoo(tmp_path, monkeypatch, name):
    shutil.copytree(registry.presets_root() / name, tmp_path / name)
    monkeypatch.setenv(registry.ZOO_DIR_ENV, str(tmp_path))
    return tmp_path / name


def test_corrupt_weights_are_refused(tmp_path, monkeypatch):
    name = "complex_deepsets_units_digit"
    folder = _copy_zoo(tmp_path, monkeypatch, name)
    assert zoo.load(name) is not None  # the copy itself is fine
    weights = folder / "model.weights.h5"
    raw = bytearray(weights.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    weights.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="sha256"):
        zoo.load(name)
    # Without weights nothing is read from the corrupt file.
    assert zoo.load(name, load_weights=False) is not None


def test_load_uses_safe_mode(tmp_path, monkeypatch):
    """A config smuggling a lambda must not be deserialised."""
    name = "complex_deepsets_units_digit"
    folder = _copy_zoo(tmp_path, monkeypatch, name)
    config = {
        "module": "keras.layers",
        "class_name": "Lambda",
        "config": {
            "name": "evil",
            "function": {
                "class_name": "__lambda__",
                "config": {"code": "", "defaults": None, "closure": None},
            },
        },
        "registered_name": None,
    }
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="(?i)safe"):
        zoo.load(name, load_weights=False)


def test_cli_list_and_info(capsys):
    assert cli_main(["zoo", "list"]) == 0
    out = capsys.readouterr().out
    for name in PRESETS:
        assert name in out
    assert cli_main(["zoo", "info", "complex_deepsets_units_digit"]) == 0
    out = capsys.readouterr().out
    assert '"weights_sha256"' in out and "# `complex_deepsets" in out
    assert cli_main(["zoo", "info", "nope"]) == 2
    assert "Available presets" in capsys.readouterr().err


def test_version_and_namespaces():
    assert isinstance(keras_msets.__version__, str)
    for namespace in ("layers", "models", "zoo", "data", "ops"):
        assert hasattr(keras_msets, namespace)


@pytest.mark.parametrize("name", PRESETS)
def test_every_backend_reproduces_the_trained_model(name):
    """The preset was saved on one backend; this one must agree to 1e-5."""
    example = zoo.info(name)["example"]
    x = registry.example_input(example)
    output = zoo.load(name).predict_on_batch(x)
    np.testing.assert_allclose(output, example["output"], atol=1e-5, rtol=1e-5)


def test_examples_of_nested_inputs_round_trip_through_json():
    import keras

    x = keras.Input((3,), name="x")
    mask = keras.Input((3,), name="mask", dtype="bool")
    y = keras.layers.Lambda(
        lambda t: keras.ops.sum(t[0] * keras.ops.cast(t[1], t[0].dtype), 1)
    )([x, mask])
    model = keras.Model({"x": x, "mask": mask}, y)
    inputs = {
        "x": np.arange(6, dtype="float32").reshape(2, 3),
        "mask": np.array([[1, 0, 1], [0, 1, 1]], dtype=bool),
    }
    example = json.loads(json.dumps(registry.example_outputs(model, inputs)))
    assert example["input_dtype"] == {"x": "float32", "mask": "bool"}
    rebuilt = registry.example_input(example)
    for key in inputs:
        np.testing.assert_array_equal(rebuilt[key], inputs[key])
        assert rebuilt[key].dtype == inputs[key].dtype
    np.testing.assert_allclose(example["output"], [2.0, 9.0])
    sets = registry.example_input(
        {"input": [[1.0], [2.0, 3.0]], "input_dtype": ["float32", "int32"]}
    )
    assert isinstance(sets, tuple)
    assert [s.dtype for s in sets] == [np.float32, np.int32]


def _readme_zoo_rows():
    """The zoo table of the project README: preset name -> result cell."""
    readme = Path(__file__).resolve().parents[2] / "README.md"
    rows = {}
    for line in readme.read_text().splitlines():
        match = re.match(r"\| `(\w+)` \|.*\| ([^|]+) \|$", line)
        if match and match.group(1) in PRESETS:
            rows[match.group(1)] = match.group(2)
    return rows


def test_readme_lists_every_preset_with_its_cards_own_numbers():
    rows = _readme_zoo_rows()
    assert sorted(rows) == sorted(PRESETS)
    for name, result in rows.items():
        # The preset's own numbers: those before the first parenthesis
        # (baselines and the paper's numbers come after it). Each must be
        # a number of the card, rounded to the README's decimals.
        own = re.findall(r"(?<![\d.])\d+\.\d+", result.split("(")[0])
        assert own, f"{name}: no number in {result!r}"
        card = (registry.preset_dir(name) / "README.md").read_text()
        numbers = [float(v) for v in re.findall(r"\d+\.\d+", card)]
        for value in own:
            places = len(value.split(".")[1])
            assert any(
                round(number, places) == float(value) for number in numbers
            ), f"README says {value} for {name}; its card does not"
