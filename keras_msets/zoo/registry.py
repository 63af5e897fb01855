"""Finding, describing, verifying and loading zoo presets.

A preset is a folder `<name>/` in the format of
`keras_msets.training.preset_io` (`config.json`, `model.weights.h5`,
`metadata.json`, `README.md`, `recipe.py`, sometimes `vocabulary.txt`).
Presets live in the repository's top-level `zoo/` folder, which the wheel
installs as `keras_msets._presets`; `$KERAS_MSETS_ZOO_DIR` points to
another folder of presets. `load` also takes the path of a preset folder
(what `save_preset` writes). Nothing here touches the network.

Every file that affects a model's output is checked against the sha256
its metadata records before anything is loaded. `list()` only looks at
folder names, so a broken preset is listed like the others; `info` and
`load` then say which of its files is wrong.
"""

import builtins
import inspect
import os
from pathlib import Path

import keras

from keras_msets.training import preset_io
from keras_msets.training.preset_io import CARD_FILE
from keras_msets.training.preset_io import CONFIG_FILE
from keras_msets.training.preset_io import METADATA_FILE
from keras_msets.training.preset_io import RECIPE_FILE
from keras_msets.training.preset_io import VERIFIED_FILES
from keras_msets.training.preset_io import VOCABULARY_FILE
from keras_msets.training.preset_io import WEIGHTS_FILE
from keras_msets.training.preset_io import example_input
from keras_msets.training.preset_io import example_outputs
from keras_msets.training.preset_io import save_preset
from keras_msets.training.preset_io import sha256_of
from keras_msets.training.recipe import check_serves_only_options
from keras_msets.training.recipe import default_output_dir
from keras_msets.utils.scripts import load_script

# Names kept importable from here: the file names, the examples and
# `save_preset` (which the training code owns).
__all__ = [
    "CARD_FILE",
    "CONFIG_FILE",
    "METADATA_FILE",
    "RECIPE_FILE",
    "VOCABULARY_FILE",
    "WEIGHTS_FILE",
    "ZOO_DIR_ENV",
    "evaluate",
    "example_input",
    "example_outputs",
    "info",
    "list",
    "load",
    "load_recipe",
    "preset_dir",
    "presets_root",
    "save_preset",
    "sha256_of",
    "train",
    "verify",
    "verify_weights",
]

ZOO_DIR_ENV = "KERAS_MSETS_ZOO_DIR"
# Model hubs keras_msets does not read from (KerasHub's handles).
HUB_PREFIXES = ("hf://", "kaggle://")
# The repository's own presets folder (a source checkout).
REPOSITORY_ZOO = Path(__file__).resolve().parents[2] / "zoo"


def presets_root():
    """The folder that holds the presets.

    `$KERAS_MSETS_ZOO_DIR` if set; else the installed `keras_msets._presets`
    package (a wheel install); else the `zoo/` folder of a source checkout.
    """
    import importlib.util

    if os.environ.get(ZOO_DIR_ENV):
        return Path(os.environ[ZOO_DIR_ENV])
    spec = importlib.util.find_spec("keras_msets._presets")
    if spec is not None and spec.submodule_search_locations:
        return Path(builtins.list(spec.submodule_search_locations)[0])
    return REPOSITORY_ZOO


def list():  # noqa: A001 - the public name the issue asks for.
    """Names of the available presets, sorted.

    Every folder of `presets_root()` holding a `config.json` or a
    `metadata.json`. Nothing is read here, so a broken preset is listed
    too; `info(name)` or `load(name)` says what is wrong with it.
    """
    root = presets_root()
    if not root.is_dir():
        return []
    return sorted(
        p.name
        for p in root.iterdir()
        if p.is_dir()
        and ((p / CONFIG_FILE).is_file() or (p / METADATA_FILE).is_file())
    )


def _is_path(value):
    if isinstance(value, os.PathLike):
        return True
    return (
        os.sep in value
        or "/" in value
        or value.startswith((".", "~"))
        or (os.altsep is not None and os.altsep in value)
    )


def _locate(name):
    """`(name, folder)` of a preset name or a preset folder's path."""
    if isinstance(name, str) and name.startswith(HUB_PREFIXES):
        raise ValueError(
            "Loading presets from a model hub is not supported: "
            "keras_msets reads its own presets and local preset folders "
            "only, offline. Download the preset folder and pass its path. "
            f"Received: name={name!r}"
        )
    if isinstance(name, (str, os.PathLike)) and _is_path(name):
        folder = Path(name).expanduser()
        if not folder.is_dir():
            raise ValueError(
                "`name` is a path, but no preset folder is there. "
                f"Received: name={os.fspath(name)!r}"
            )
        return folder.resolve().name, folder
    names = list()
    if not isinstance(name, str) or name not in names:
        raise ValueError(
            f"Unknown zoo preset `name`. Received: name={name!r}. "
            f"Available presets: {', '.join(names) or '(none)'}. A "
            "preset folder elsewhere is loaded by its path."
        )
    return name, presets_root() / name


def preset_dir(name):
    """The folder of preset `name` (a name or a preset folder's path).

    A `ValueError` lists the known names.
    """
    return _locate(name)[1]


def info(name):
    """The metadata of preset `name` as a dict (plus `path` and `card`).

    `name` is a preset name or the path of a preset folder. A missing or
    malformed `metadata.json` raises a `ValueError` naming the preset and
    the file.
    """
    name, folder = _locate(name)
    metadata = preset_io.read_metadata(folder, name)
    metadata["path"] = str(folder)
    card = folder / CARD_FILE
    metadata["card"] = card.read_text() if card.is_file() else ""
    return metadata


def verify(name, files=VERIFIED_FILES):
    """Checks the preset's files against the sha256 in its metadata.

    Raises a `ValueError` naming the preset, the file and what to do when
    a file that affects the model's output is missing or was changed.
    """
    name, folder = _locate(name)
    preset_io.verify_files(folder, name=name, files=files)
    return folder


def verify_weights(name):
    """Checks the weights file's sha256; returns its path."""
    return verify(name, files=(WEIGHTS_FILE,)) / WEIGHTS_FILE


def _recipe_compile_record(name):
    """`{"loss", "metrics"}` that the task of preset `name`'s recipe
    declares, or None (no recipe, or a recipe without a task loss)."""
    try:
        module = load_recipe(name)
    except ValueError:
        return None
    task = getattr(getattr(module, "RECIPE", None), "task", None)
    loss = getattr(task, "loss", None)
    if not isinstance(loss, str):
        return None
    # `list` is this module's preset listing: unpack instead.
    metrics = [*getattr(task, "metrics", ())]
    return {"loss": loss, "metrics": metrics or None}


def _compile_record(name, metadata):
    """The loss and metrics to compile preset `name` with: those its
    metadata records, else those its recipe's task declares (presets
    written before the metadata recorded them); raises a `ValueError`
    when neither says."""
    record = metadata.get("compile")
    if isinstance(record, dict) and record.get("loss") is not None:
        return record
    record = _recipe_compile_record(name)
    if record is None:
        raise ValueError(
            f"Preset {name!r} records no loss in its {METADATA_FILE} "
            "(`compile`) and its recipe declares none, so `compile=True` "
            "cannot compile it. Load it with compile=False and call "
            "`model.compile(...)` yourself."
        )
    return record


def _compile(model, record):
    model.compile_from_config(
        {
            "optimizer": "adam",
            "loss": record["loss"],
            "metrics": record.get("metrics"),
        }
    )


def load(name, load_weights=True, compile=False):
    """Build preset `name` and load its trained weights.

    Args:
        name: a preset name from `keras_msets.zoo.list()`, or the path of
            a preset folder (what `save_preset` writes). Model hub
            handles (`hf://`, `kaggle://`) are not supported.
        load_weights: if False, returns the freshly initialised model.
        compile: if True, compiles the model with the loss and metrics its
            metadata records (and Adam), or, where the metadata records
            none, those its recipe's task declares; a preset with
            neither raises a `ValueError`.

    Returns:
        A `keras.Model`, uncompiled unless `compile=True`.
        Deserialisation uses Keras safe mode; the sha256 of the config,
        the weights and the vocabulary (where present) are checked before
        anything is loaded, so a changed or corrupt file raises and no
        half-loaded model is returned.

    Example:
    >>> model = keras_msets.zoo.load("complex_deepsets_units_digit")
    """
    import keras_msets.layers  # noqa: F401 - registers the classes.
    import keras_msets.models  # noqa: F401

    name, folder = _locate(name)
    metadata = preset_io.read_metadata(folder, name)
    files = [f for f in VERIFIED_FILES if load_weights or f != WEIGHTS_FILE]
    preset_io.verify_files(folder, metadata, name, files=files)
    record = _compile_record(name, metadata) if compile else None
    config = preset_io.read_config(folder, name)
    model = keras.saving.deserialize_keras_object(config, safe_mode=True)
    if load_weights:
        model.load_weights(folder / WEIGHTS_FILE)
    if compile:
        _compile(model, record)
    return model


def load_recipe(name):
    """Import the `recipe.py` module of preset `name`."""
    name, folder = _locate(name)
    path = folder / RECIPE_FILE
    if not path.is_file():
        raise ValueError(
            f"Preset {name!r} has no {RECIPE_FILE}: {path} is missing."
        )
    return load_script(path, name=f"keras_msets_recipe_{name}")


def _recipe_api(module):
    """The object with `evaluate`, `model_card` and `train` of a recipe.

    Recipes declare a module-level `RECIPE` (a
    `keras_msets.training.Recipe`); older ones define module functions of
    the same names.
    """
    recipe = getattr(module, "RECIPE", None)
    return module if recipe is None else recipe


def evaluate(name, verbose=1, update_card=False):
    """Re-measure the card's metrics of preset `name` on its test data.

    With `update_card=True` the measured metrics replace the stored ones
    of the same name in `metadata.json` (the training records, such as
    `fit`, stay) and the recipe's `model_card(model, metrics)` writes the
    card again: for a card whose evaluation gained a column after
    training. The model's files are not touched.
    """
    name, folder = _locate(name)
    recipe = _recipe_api(load_recipe(folder))
    model = load(folder)
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
        metadata = preset_io.read_metadata(folder, name)
        metadata.setdefault("metrics", {}).update(metrics)
        preset_io.write_json(folder / METADATA_FILE, metadata)
        (folder / CARD_FILE).write_text(
            recipe.model_card(model, metadata["metrics"])
        )
    return metrics


def _inside(path, folder):
    try:
        path.relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def train(name, output_dir=None, overwrite=False, serves_only=False, **options):
    """Run the recipe of preset `name`; returns the folder it wrote.

    Training never writes into an installed preset or the repository's
    `zoo/` folder unless asked: the default `output_dir` is a new folder
    `./runs/<date>-<time>/<name>` in the current directory
    (`keras_msets.training.recipe.default_output_dir`), and an
    `output_dir` inside the presets folder needs
    `overwrite=True`. The folder is printed at the end.

    Args:
        name: a preset name.
        output_dir: where to write the new preset (None: see above).
        overwrite: allow replacing a preset (and writing into the
            presets folder).
        serves_only: do not train; write the recipe's current `serves`
            into the existing preset `output_dir` (default: the preset
            `name` itself), weights untouched
            (`keras_msets.training.serves_update`).
        **options: passed to the recipe's `train` (e.g. `epochs`).
    """
    name, folder = _locate(name)
    module = load_recipe(folder)
    recipe = _recipe_api(module)
    if serves_only:
        output_dir = folder if output_dir is None else output_dir
    if output_dir is None:
        output_dir = default_output_dir(name)
    output_dir = Path(output_dir).expanduser().resolve()
    protected = [presets_root(), REPOSITORY_ZOO]
    if not overwrite and any(_inside(output_dir, p) for p in protected):
        raise ValueError(
            f"`output_dir` is inside the presets folder ({output_dir}): "
            "training would replace an installed preset. Choose another "
            "folder, or pass overwrite=True (`--overwrite` on the command "
            f"line) to write there. Received: output_dir={str(output_dir)!r}"
        )
    if serves_only:
        if not hasattr(recipe, "update_serves"):
            raise ValueError(
                f"The recipe of {name!r} is not a `Recipe`: it has no serves "
                f"update. Received: name={name!r}, serves_only=True"
            )
        check_serves_only_options(options)
        recipe.update_serves(output_dir, overwrite=overwrite)
        print(f"The serves of the preset in {output_dir} were updated")
        return output_dir
    if "overwrite" in inspect.signature(recipe.train).parameters:
        options["overwrite"] = overwrite
    result = recipe.train(output_dir=str(output_dir), **options)
    print(f"The trained preset is in {output_dir}")
    return output_dir if result is None else result
