import json
import os
import re
import shutil
from pathlib import Path

import h5py
import keras
import numpy as np
import pytest

import keras_msets
from keras_msets import zoo
from keras_msets.cli import main as cli_main
from keras_msets.training import preset_io
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
    "files_sha256",
    "task",
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
    assert metadata["name"] == name
    assert "weights_sha256" not in metadata
    hashes = metadata["files_sha256"]
    for file in ("config.json", "model.weights.h5", "vocabulary.txt"):
        if (folder / file).is_file():
            assert hashes.pop(file) == registry.sha256_of(folder / file)
    assert hashes == {}, f"{name} records hashes of files it lacks"
    with h5py.File(folder / "model.weights.h5", "r") as weights:
        assert "optimizer" not in weights, f"{name} ships optimizer state"
    if "serves" in metadata:
        assert preset_io.check_serves(metadata["serves"]) == metadata["serves"]
    assert metadata["backend"] in ("tensorflow", "jax", "torch")
    card = metadata["card"]
    assert f"keras-msets zoo evaluate {name}" in card
    assert f"keras-msets zoo train {name}" in card


# The Multi-Set Transformer presets share one model class; `make test-fast`
# reproduces two of them (the KL and the MI model), `make test` all.
SLOW_TO_REPRODUCE = (
    "mst_count_shared_digits",
    "mst_kl_divergence_low_d",
    "mst_mutual_information_joint",
    "mst_two_sample",
)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(
            name, marks=pytest.mark.slow if name in SLOW_TO_REPRODUCE else ()
        )
        for name in PRESETS
    ],
)
def test_load_gives_an_uncompiled_model_that_reproduces_its_outputs(name):
    model = zoo.load(name)
    assert model.count_params() == zoo.info(name)["parameter_count"]
    assert not model.compiled
    assert getattr(model, "optimizer", None) is None
    assert "compile_config" not in json.loads(
        (registry.presets_root() / name / "config.json").read_text()
    )
    # The trained outputs must match the stored ones (to 1e-5), which a
    # fresh initialisation cannot: the weights were loaded.
    # test_load_without_weights_is_a_fresh_initialisation checks
    # `load_weights=False` (the same code for every preset).
    example = zoo.info(name)["example"]
    x = registry.example_input(example)
    trained_out = np.asarray(model.predict_on_batch(x))
    assert np.all(np.isfinite(trained_out))
    # Every backend reproduces the trained model: the preset was saved on
    # one backend; this one must agree to 1e-5.
    np.testing.assert_allclose(
        trained_out, example["output"], atol=1e-5, rtol=1e-5
    )


def test_load_without_weights_is_a_fresh_initialisation():
    name = "complex_deepsets_units_digit"
    trained = zoo.load(name).get_weights()
    for seed in (0, 1):
        keras.utils.set_random_seed(seed)
        fresh = zoo.load(name, load_weights=False).get_weights()
        assert len(fresh) == len(trained)
        assert not any(
            np.array_equal(a, b) for a, b in zip(fresh, trained, strict=True)
        )


def test_unknown_name_lists_the_available_presets():
    with pytest.raises(ValueError) as error:
        zoo.load("no_such_model")
    message = str(error.value)
    assert "no_such_model" in message
    for name in PRESETS:
        assert name in message


def _copy_zoo(tmp_path, monkeypatch, name, *more):
    """Copies shipped presets into `tmp_path` and points the zoo there;
    returns the first one's folder."""
    root = registry.presets_root()
    for each in (name, *more):
        shutil.copytree(root / each, tmp_path / each)
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
    # Its sha256 recorded too, so only safe mode stands in the way.
    metadata = json.loads((folder / "metadata.json").read_text())
    metadata["files_sha256"]["config.json"] = registry.sha256_of(
        folder / "config.json"
    )
    (folder / "metadata.json").write_text(json.dumps(metadata))
    with pytest.raises(ValueError, match="(?i)safe"):
        zoo.load(name, load_weights=False)


def test_cli_list_and_info(capsys):
    assert cli_main(["zoo", "list"]) == 0
    out = capsys.readouterr().out
    for name in PRESETS:
        assert name in out
    assert cli_main(["zoo", "info", "complex_deepsets_units_digit"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("complex_deepsets_units_digit: ComplexDeepSets")
    assert "zoo evaluate complex_deepsets_units_digit" in out
    assert (
        cli_main(["zoo", "info", "complex_deepsets_units_digit", "--json"]) == 0
    )
    out = capsys.readouterr().out
    assert '"files_sha256"' in out and "# `complex_deepsets" not in out
    assert cli_main(["zoo", "info", "nope"]) == 2
    assert "Available presets" in capsys.readouterr().err


def test_version_and_namespaces():
    assert isinstance(keras_msets.__version__, str)
    for namespace in ("layers", "models", "zoo", "data", "ops"):
        assert hasattr(keras_msets, namespace)


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


def test_a_changed_config_is_refused(tmp_path, monkeypatch):
    name = "complex_deepsets_units_digit"
    folder = _copy_zoo(tmp_path, monkeypatch, name)
    config = json.loads((folder / "config.json").read_text())
    config["config"]["name"] = "renamed"
    (folder / "config.json").write_text(json.dumps(config))
    for load_weights in (True, False):
        with pytest.raises(ValueError) as error:
            zoo.load(name, load_weights=load_weights)
        message = str(error.value)
        assert name in message and "config.json" in message
        assert "sha256" in message and "Reinstall" in message


def test_a_changed_vocabulary_is_refused(tmp_path, monkeypatch):
    name = "fen_mr_polarity"
    folder = _copy_zoo(tmp_path, monkeypatch, name)
    vocabulary = folder / "vocabulary.txt"
    vocabulary.write_text(vocabulary.read_text() + "\nextra")
    with pytest.raises(ValueError, match="vocabulary.txt"):
        zoo.load(name, load_weights=False)


@pytest.mark.parametrize("file", ["metadata.json", "config.json"])
@pytest.mark.parametrize("damage", ["missing", "malformed", "not_an_object"])
def test_a_broken_file_names_the_preset_and_the_file(
    tmp_path, monkeypatch, file, damage
):
    broken = "complex_deepsets_units_digit"
    folder = _copy_zoo(tmp_path, monkeypatch, broken, "deepsets_units_digit")
    path = folder / file
    if damage == "missing":
        path.unlink()
    elif damage == "malformed":
        path.write_text('{"name": ')
    else:
        path.write_text("[1, 2]")
    if file == "config.json" and damage != "missing":
        # Recorded, so that the reading itself must fail.
        metadata = json.loads((folder / "metadata.json").read_text())
        metadata["files_sha256"][file] = registry.sha256_of(path)
        (folder / "metadata.json").write_text(json.dumps(metadata))
    with pytest.raises(ValueError) as error:
        zoo.load(broken)
    assert broken in str(error.value) and file in str(error.value)
    if file == "metadata.json":
        with pytest.raises(ValueError, match=file):
            zoo.info(broken)
    # The other preset is listed and loads; the broken one is listed.
    assert zoo.list() == [broken, "deepsets_units_digit"]
    assert zoo.load("deepsets_units_digit") is not None


def test_cli_list_survives_a_broken_preset(tmp_path, monkeypatch, capsys):
    broken = "complex_deepsets_units_digit"
    folder = _copy_zoo(tmp_path, monkeypatch, broken, "deepsets_units_digit")
    (folder / "metadata.json").write_text("{")
    assert cli_main(["zoo", "list"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^deepsets_units_digit +DeepSets trained", out, re.M)
    assert re.search(rf"^{broken} +broken:", out, re.M)
    assert "metadata.json" in out
    assert cli_main(["zoo", "info", broken]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and broken in err[0] and "metadata.json" in err[0]


def test_old_metadata_with_only_the_weights_hash_still_loads(
    tmp_path, monkeypatch
):
    name = "complex_deepsets_units_digit"
    folder = _copy_zoo(tmp_path, monkeypatch, name)
    metadata = json.loads((folder / "metadata.json").read_text())
    hashes = metadata.pop("files_sha256")
    metadata["weights_sha256"] = hashes["model.weights.h5"]
    (folder / "metadata.json").write_text(json.dumps(metadata))
    example = metadata["example"]
    np.testing.assert_allclose(
        zoo.load(name).predict_on_batch(registry.example_input(example)),
        example["output"],
        atol=1e-5,
        rtol=1e-5,
    )
    metadata["weights_sha256"] = "0" * 64
    (folder / "metadata.json").write_text(json.dumps(metadata))
    with pytest.raises(ValueError, match="model.weights.h5"):
        zoo.load(name)
    del metadata["weights_sha256"]
    (folder / "metadata.json").write_text(json.dumps(metadata))
    with pytest.raises(ValueError, match="records no sha256"):
        zoo.load(name)


def test_load_takes_a_preset_folder_path(tmp_path):
    name = "complex_deepsets_units_digit"
    folder = tmp_path / "my_copy"
    shutil.copytree(registry.presets_root() / name, folder)
    example = zoo.info(name)["example"]
    for handle in (folder, str(folder)):
        output = zoo.load(handle).predict_on_batch(
            registry.example_input(example)
        )
        np.testing.assert_allclose(output, example["output"], atol=1e-5)
    assert zoo.info(folder)["path"] == str(folder)
    weights = folder / "model.weights.h5"
    raw = bytearray(weights.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    weights.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="my_copy.*model.weights.h5"):
        zoo.load(folder)
    with pytest.raises(ValueError, match="no preset folder"):
        zoo.load(str(tmp_path / "nowhere"))


@pytest.mark.parametrize(
    "handle", ["hf://keras/some_model", "kaggle://keras/x/keras/y"]
)
def test_hub_handles_are_not_supported(handle):
    with pytest.raises(ValueError, match="not supported"):
        zoo.load(handle)


def _small_model(compiled):
    import keras

    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(2, name="dense")(inputs))
    if compiled:
        model.compile(optimizer="adam", loss="mse", metrics=["mae"])
        x = np.ones((4, 3), "float32")
        model.fit(x, np.zeros((4, 2), "float32"), epochs=1, verbose=0)
    return model


def test_save_preset_writes_inference_weights_and_the_contract(tmp_path):
    model = _small_model(compiled=True)
    folder = tmp_path / "tiny_preset"
    (folder).mkdir()
    (folder / "vocabulary.txt").write_text("a\nb\n")
    x = np.arange(6, dtype="float32").reshape(2, 3)
    metadata = zoo.save_preset(
        model,
        folder,
        data="ones",
        metrics={"mae": 0.5},
        card="# tiny\n",
        example_input=x,
        task="tiny",
        extra={"name": "something_else", "weights_sha256": "stale"},
    )
    with h5py.File(folder / "model.weights.h5", "r") as weights:
        assert "optimizer" not in weights
        assert "layers" in weights
    stored = json.loads((folder / "metadata.json").read_text())
    assert stored == metadata
    assert stored["name"] == "tiny_preset" and stored["task"] == "tiny"
    assert "weights_sha256" not in stored
    assert sorted(stored["files_sha256"]) == [
        "config.json",
        "model.weights.h5",
        "vocabulary.txt",
    ]
    assert stored["compile"]["loss"] == "mse"
    loaded = zoo.load(folder)
    np.testing.assert_allclose(
        loaded.predict_on_batch(x), model.predict_on_batch(x), atol=1e-6
    )
    assert not loaded.compiled
    compiled = zoo.load(folder, compile=True)
    assert compiled.compiled
    compiled.evaluate(x, np.zeros((2, 2), "float32"), verbose=0)
    with pytest.raises(ValueError, match="overwrite=True"):
        zoo.save_preset(model, folder, data="", metrics={}, card="")
    again = zoo.save_preset(
        _small_model(compiled=False),
        folder,
        data="",
        metrics={},
        card="",
        overwrite=True,
    )
    assert "compile" not in again
    with pytest.raises(ValueError, match="records no loss"):
        zoo.load(folder, compile=True)


def test_save_preset_checks_serves(tmp_path):
    serves = {
        "estimator": "kl_divergence",
        "dims": [2, 4],
        "set_size": [10, 20],
        "preprocessing": "whiten",
        "paired": False,
        "symmetric": False,
        "joint": False,
        "default_dims": None,
    }
    metadata = zoo.save_preset(
        _small_model(compiled=False),
        tmp_path / "kl",
        data="",
        metrics={},
        card="",
        serves=serves,
    )
    assert metadata["serves"] == serves
    assert metadata["task"] == "kl_divergence"
    for key, value in (
        ("estimator", "entropy"),
        ("dims", [4, 2]),
        ("preprocessing", "scale"),
        ("default_dims", [1, 4]),
    ):
        with pytest.raises(ValueError, match=key):
            zoo.save_preset(
                _small_model(compiled=False),
                tmp_path / f"bad_{key}",
                data="",
                metrics={},
                card="",
                serves=dict(serves, **{key: value}),
            )


_RECIPE_OBJECT = """
from pathlib import Path


class _Recipe:
    def evaluate(self, model, verbose=1):
        return {"score": 1.0}

    def model_card(self, model, metrics):
        return f"# card {metrics['score']}\\n"

    def train(self, output_dir=None, overwrite=False, **options):
        Path(output_dir).mkdir(parents=True, exist_ok=True)
        (Path(output_dir) / "options.txt").write_text(
            f"{overwrite} {sorted(options.items())}"
        )
        return output_dir


RECIPE = _Recipe()
"""

_RECIPE_FUNCTIONS = """
def evaluate(model, verbose=1):
    return {"score": 2.0}


def model_card(model, metrics):
    return f"# old card {metrics['score']}\\n"


def train(output_dir=None, epochs=1):
    return {"output_dir": output_dir, "epochs": epochs}
"""


@pytest.mark.parametrize("style", ["object", "functions"])
def test_evaluate_and_train_use_either_recipe_style(
    tmp_path, monkeypatch, capsys, style
):
    name = "complex_deepsets_units_digit"
    zoo_dir = tmp_path / "presets"
    zoo_dir.mkdir()
    folder = _copy_zoo(zoo_dir, monkeypatch, name)
    source = _RECIPE_OBJECT if style == "object" else _RECIPE_FUNCTIONS
    (folder / "recipe.py").write_text(source)
    score = 1.0 if style == "object" else 2.0
    assert zoo.evaluate(name, verbose=0, update_card=True) == {"score": score}
    assert (
        json.loads((folder / "metadata.json").read_text())["metrics"]["score"]
        == score
    )
    assert (folder / "README.md").read_text().endswith(f"card {score}\n")
    zoo.load(name)  # the metadata and card are not verified files
    monkeypatch.chdir(tmp_path)
    first = zoo.train(name, epochs=3)
    second = zoo.train(name, epochs=3)
    if style == "object":
        for run in (first, second):
            assert Path(run).name == name
            assert Path(run).parent.parent == tmp_path / "runs"
        assert Path(first) != Path(second)
        assert (Path(first) / "options.txt").read_text() == (
            "False [('epochs', 3)]"
        )
    else:
        assert first["epochs"] == 3
        assert Path(first["output_dir"]).name == name
        assert Path(first["output_dir"]).parent.parent == tmp_path / "runs"
    assert f"runs{os.sep}" in capsys.readouterr().out
    for inside in (zoo_dir / name, zoo_dir / "new"):
        with pytest.raises(ValueError, match="overwrite=True"):
            zoo.train(name, output_dir=inside)
    if style == "object":
        out = zoo.train(name, output_dir=zoo_dir / name, overwrite=True)
        assert (Path(out) / "options.txt").read_text().startswith("True")


def test_cli_train_refuses_the_presets_folder(tmp_path, monkeypatch, capsys):
    name = "complex_deepsets_units_digit"
    folder = _copy_zoo(tmp_path, monkeypatch, name)
    (folder / "recipe.py").write_text(_RECIPE_OBJECT)
    code = cli_main(["zoo", "train", name, "--output-dir", str(folder)])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--overwrite" in err[0]
    code = cli_main(
        ["zoo", "train", name, "--output-dir", str(folder), "--overwrite"]
    )
    assert code == 0
    assert "True" in (folder / "options.txt").read_text()
