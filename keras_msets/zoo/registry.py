"""Finding, describing, loading and saving zoo presets.

A preset is a folder `<name>/` holding `config.json` (the model's
`keras.saving.serialize_keras_object`), `model.weights.h5`, `metadata.json`
(versions, backend, parameter count, date, data, metrics, the sha256 of the
weights file), `README.md` (the model card) and `recipe.py` (the
`model.fit` script that produced it). Presets live in the repository's
top-level `zoo/` folder, which the wheel installs as `keras_msets._presets`.
Nothing here touches the network.
"""

import builtins
import datetime
import hashlib
import importlib.util
import json
import os
from pathlib import Path

import keras

from keras_msets.version import __version__

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.weights.h5"
METADATA_FILE = "metadata.json"
CARD_FILE = "README.md"
RECIPE_FILE = "recipe.py"
ZOO_DIR_ENV = "KERAS_MSETS_ZOO_DIR"


def presets_root():
    """The folder that holds the presets.

    `$KERAS_MSETS_ZOO_DIR` if set; else the installed `keras_msets._presets`
    package (a wheel install); else the `zoo/` folder of a source checkout.
    """
    if os.environ.get(ZOO_DIR_ENV):
        return Path(os.environ[ZOO_DIR_ENV])
    spec = importlib.util.find_spec("keras_msets._presets")
    if spec is not None and spec.submodule_search_locations:
        return Path(builtins.list(spec.submodule_search_locations)[0])
    return Path(__file__).resolve().parents[2] / "zoo"


def sha256_of(path):
    """Hex sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def list():  # noqa: A001 - the public name the issue asks for.
    """Names of the available presets, sorted."""
    root = presets_root()
    if not root.is_dir():
        return []
    return sorted(
        p.name
        for p in root.iterdir()
        if p.is_dir() and (p / CONFIG_FILE).is_file()
    )


def preset_dir(name):
    """The folder of preset `name`; a `ValueError` lists the known names."""
    names = list()
    if not isinstance(name, str) or name not in names:
        raise ValueError(
            f"Unknown zoo preset `name`. Received: name={name!r}. "
            f"Available presets: {', '.join(names) or '(none)'}"
        )
    return presets_root() / name


def info(name):
    """The metadata of preset `name` as a dict (plus `path` and `card`)."""
    folder = preset_dir(name)
    with open(folder / METADATA_FILE) as f:
        metadata = json.load(f)
    metadata["path"] = str(folder)
    card = folder / CARD_FILE
    metadata["card"] = card.read_text() if card.is_file() else ""
    return metadata


def verify_weights(name):
    """Raise a `ValueError` unless the weights file matches its sha256."""
    folder = preset_dir(name)
    with open(folder / METADATA_FILE) as f:
        expected = json.load(f).get("weights_sha256")
    weights = folder / WEIGHTS_FILE
    if not weights.is_file():
        raise ValueError(
            f"Preset {name!r} has no weights file: {weights} is missing."
        )
    actual = sha256_of(weights)
    if actual != expected:
        raise ValueError(
            f"The weights file of preset {name!r} ({weights}) is corrupt or "
            f"was changed: its sha256 is {actual}, expected {expected} "
            f"(metadata.json). Reinstall keras-msets or re-run the preset's "
            "recipe."
        )
    return weights


def load(name, load_weights=True):
    """Build preset `name` and load its trained weights.

    Args:
        name: a preset name from `keras_msets.zoo.list()`.
        load_weights: if False, returns the freshly initialised model.

    Returns:
        An uncompiled `keras.Model`. Deserialisation uses Keras safe mode;
        the weights' sha256 is checked before anything is loaded, so a
        corrupt file raises and no half-loaded model is returned.

    Example:
    >>> model = keras_msets.zoo.load("complex_deepsets_units_digit")
    """
    import keras_msets.layers  # noqa: F401 - registers the classes.
    import keras_msets.models  # noqa: F401

    folder = preset_dir(name)
    weights = verify_weights(name) if load_weights else None
    with open(folder / CONFIG_FILE) as f:
        config = json.load(f)
    # A preset is returned uncompiled, whatever the recipe compiled it with.
    config.pop("compile_config", None)
    model = keras.saving.deserialize_keras_object(config, safe_mode=True)
    if weights is not None:
        model.load_weights(weights)
    return model


def load_recipe(name):
    """Import the `recipe.py` module of preset `name`."""
    path = preset_dir(name) / RECIPE_FILE
    from keras_msets.testing.scripts import load_script

    return load_script(path, name=f"keras_msets_recipe_{name}")


def evaluate(name, verbose=1, update_card=False):
    """Re-measure the card's metrics of preset `name` on its test data.

    With `update_card=True` the measured metrics replace the stored ones
    of the same name in `metadata.json` (the training records, such as
    `fit`, stay) and the recipe's `model_card(model, metrics)` writes the
    card again: for a card whose evaluation gained a column after
    training. The weights are not touched.
    """
    import inspect

    recipe = load_recipe(name)
    model = load(name)
    if update_card:
        card = getattr(recipe, "model_card", None)
        if card is None or len(inspect.signature(card).parameters) != 2:
            raise ValueError(
                f"`update_card` needs a recipe with `model_card(model, "
                f"metrics)`; the recipe of {name!r} has none. Received: "
                f"name={name!r}"
            )
    metrics = recipe.evaluate(model, verbose=verbose)
    if update_card:
        folder = preset_dir(name)
        with open(folder / METADATA_FILE) as f:
            metadata = json.load(f)
        metadata["metrics"].update(metrics)
        with open(folder / METADATA_FILE, "w") as f:
            json.dump(metadata, f, indent=2)
            f.write("\n")
        (folder / CARD_FILE).write_text(
            recipe.model_card(model, metadata["metrics"])
        )
    return metrics


def train(name, output_dir=None, **kwargs):
    """Run the recipe of preset `name` (writes into `output_dir`)."""
    return load_recipe(name).train(output_dir=output_dir, **kwargs)


def _encode(value):
    """A tree of arrays as (a tree of lists, the same tree of dtypes)."""
    import numpy as np

    if isinstance(value, dict):
        pairs = {k: _encode(v) for k, v in value.items()}
        return (
            {k: v[0] for k, v in pairs.items()},
            {k: v[1] for k, v in pairs.items()},
        )
    if isinstance(value, (builtins.list, tuple)):
        pairs = [_encode(v) for v in value]
        return [v[0] for v in pairs], [v[1] for v in pairs]
    value = np.asarray(value)
    return value.tolist(), str(value.dtype)


def _decode(value, dtype):
    import numpy as np

    if isinstance(dtype, dict):
        return {k: _decode(value[k], d) for k, d in dtype.items()}
    if isinstance(dtype, builtins.list):
        return tuple(_decode(v, d) for v, d in zip(value, dtype, strict=True))
    return np.asarray(value, dtype=dtype)


def example_outputs(model, example_input):
    """`{"input": ..., "input_dtype": ..., "output": ...}` for metadata.json.

    `example_input` is an array or a nest of arrays (dicts, lists and
    tuples, as `model.predict` takes them); `input_dtype` mirrors its
    structure with one dtype name per array. `example_input(example)`
    rebuilds the arrays.
    """
    import numpy as np

    if isinstance(example_input, builtins.list):
        example_input = tuple(example_input)
    output = model.predict_on_batch(example_input)
    values, dtypes = _encode(example_input)
    return {
        "input": values,
        "input_dtype": dtypes,
        "output": np.asarray(output, dtype="float64").tolist(),
    }


def example_input(example):
    """The model input stored by `example_outputs`, as numpy arrays.

    Lists in the stored structure come back as tuples (Keras reads a
    tuple of arrays as several inputs, a list possibly as one stacked
    array).
    """
    return _decode(example["input"], example["input_dtype"])


def save_preset(
    model, output_dir, *, data, metrics, card, example_input=None, extra=None
):
    """Write a preset folder: config, weights, metadata and model card.

    Args:
        model: the trained Keras model.
        output_dir: the preset folder (created if needed).
        data: a short description of the training data.
        metrics: a dict of the metrics the model reached.
        card: the model card (markdown) text.
        example_input: optional small input; it and the model's output on
            it are stored in the metadata (`"example"`), so that every
            backend can check it reproduces the trained model.
        extra: optional dict merged into the metadata.
    """
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    config = keras.saving.serialize_keras_object(model)
    config.pop("compile_config", None)  # presets load uncompiled
    with open(output_dir / CONFIG_FILE, "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    weights = output_dir / WEIGHTS_FILE
    model.save_weights(weights)
    metadata = {
        "name": output_dir.name,
        "keras_version": keras.__version__,
        "keras_msets_version": __version__,
        "backend": keras.backend.backend(),
        "parameter_count": int(model.count_params()),
        "date": datetime.date.today().isoformat(),
        "data": data,
        "metrics": metrics,
        "weights_sha256": sha256_of(weights),
    }
    if example_input is not None:
        metadata["example"] = example_outputs(model, example_input)
    metadata.update(extra or {})
    with open(output_dir / METADATA_FILE, "w") as f:
        json.dump(metadata, f, indent=2)
        f.write("\n")
    (output_dir / CARD_FILE).write_text(card)
    return metadata
