"""The preset file format: what a preset folder holds, writing and reading it.

A preset is a folder named after it, holding:

- `config.json`: the model, `keras.saving.serialize_keras_object` (no
  compile configuration);
- `model.weights.h5`: the model's weights only (no optimizer state);
- `metadata.json`: `name` (the folder name), versions, backend, parameter
  count, date, data, metrics, `task` or `serves` (below), `example` (a
  small input and the model's output on it), `compile` (the loss and
  metrics, when the model was saved compiled) and `files_sha256`, the
  sha256 of every file that affects the model's output (`config.json`,
  `model.weights.h5` and, where present, `vocabulary.txt`);
- `README.md`: the model card; `recipe.py`: the script that made it.

The training code writes presets (`save_preset`); the zoo only reads and
verifies them (`read_metadata`, `read_config`, `verify_files`).

An estimator preset says what it serves in its metadata, and the
estimators route by it (`check_serves` documents the schema):

```
"serves": {"estimator": "kl_divergence", "dims": [2, 16],
           "set_size": [100, 150], "preprocessing": "whiten",
           "paired": false, "symmetric": false, "joint": false,
           "default_dims": [4, 16]}
```
"""

import builtins
import datetime
import hashlib
import json
import tempfile
from pathlib import Path

import keras
import numpy as np

from keras_msets.stats.preprocessing import PREPROCESSING
from keras_msets.utils import validation
from keras_msets.version import __version__

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.weights.h5"
METADATA_FILE = "metadata.json"
CARD_FILE = "README.md"
RECIPE_FILE = "recipe.py"
VOCABULARY_FILE = "vocabulary.txt"
# The files whose content changes what a preset computes: each one present
# is recorded in `files_sha256` and checked before loading.
VERIFIED_FILES = (CONFIG_FILE, WEIGHTS_FILE, VOCABULARY_FILE)
# What `serves["estimator"]` may name.
ESTIMATORS = (
    "kl_divergence",
    "mutual_information",
    "same_distribution_probability",
)
# What `serves["preprocessing"]` may name: one of the set preprocessings,
# or "statistics" (a model over a vector of statistics of the pair,
# `keras_msets.models.QuantileRegressor`; `serves["statistics"]` names
# the statistics function).
SERVES_PREPROCESSING = (*PREPROCESSING, "statistics")
_REINSTALL = (
    "Reinstall keras-msets (or copy the preset folder again), or write "
    "the preset again with its recipe."
)


def sha256_of(path):
    """Hex sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_hashes(folder):
    """`{file name: sha256}` of the `VERIFIED_FILES` present in `folder`."""
    folder = Path(folder)
    return {
        file: sha256_of(folder / file)
        for file in VERIFIED_FILES
        if (folder / file).is_file()
    }


def _read_json(folder, file, name):
    path = Path(folder) / file
    name = Path(folder).name if name is None else name
    if not path.is_file():
        raise ValueError(
            f"Preset {name!r} has no {file}: {path} is missing. {_REINSTALL}"
        )
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(
            f"Preset {name!r}: {file} ({path}) cannot be read as JSON "
            f"({error}). {_REINSTALL}"
        ) from None
    if not isinstance(value, dict):
        raise ValueError(
            f"Preset {name!r}: {file} ({path}) must hold a JSON object. "
            f"Received a {type(value).__name__}. {_REINSTALL}"
        )
    return value


def read_metadata(folder, name=None):
    """The `metadata.json` of the preset in `folder`, as a dict.

    A missing, unreadable or malformed file raises a `ValueError` naming
    the preset (`name`, by default the folder name) and the file.
    """
    return _read_json(folder, METADATA_FILE, name)


def read_config(folder, name=None):
    """The `config.json` of the preset in `folder` (the model's config)."""
    config = _read_json(folder, CONFIG_FILE, name)
    # A preset is built uncompiled, whatever the model was compiled with.
    config.pop("compile_config", None)
    return config


def recorded_hashes(metadata):
    """`{file: sha256}` that `metadata` records.

    `files_sha256` (this format); metadata of older presets record only
    `weights_sha256`, the hash of the weights file.
    """
    hashes = metadata.get("files_sha256")
    if isinstance(hashes, dict):
        return dict(hashes)
    if isinstance(metadata.get("weights_sha256"), str):
        return {WEIGHTS_FILE: metadata["weights_sha256"]}
    return {}


def verify_files(folder, metadata=None, name=None, files=VERIFIED_FILES):
    """Checks the sha256 of the preset's `files` against its metadata.

    Every file of `files` that the metadata records must exist and match.
    With `files_sha256` (this format) a verified file the metadata does
    not record is refused too; metadata of older presets, with only
    `weights_sha256`, have their weights checked.

    Args:
        folder: the preset folder.
        metadata: its metadata (read from the folder if None).
        name: the preset's name in messages (default: the folder name).
        files: the files to check, a subset of `VERIFIED_FILES`.

    Raises:
        ValueError: naming the preset, the file and what to do.
    """
    folder = Path(folder)
    name = folder.name if name is None else name
    if metadata is None:
        metadata = read_metadata(folder, name)
    expected = recorded_hashes(metadata)
    if not expected:
        raise ValueError(
            f"Preset {name!r}: {METADATA_FILE} ({folder / METADATA_FILE}) "
            "records no sha256 of the preset's files (`files_sha256`), so "
            f"they cannot be verified. {_REINSTALL}"
        )
    new_format = "files_sha256" in metadata
    for file in files:
        path = folder / file
        if file not in expected:
            if new_format and path.is_file():
                raise ValueError(
                    f"Preset {name!r}: {file} ({path}) is not recorded in "
                    f"the `files_sha256` of its {METADATA_FILE}, so it "
                    f"cannot be verified. {_REINSTALL}"
                )
            continue
        if not path.is_file():
            raise ValueError(
                f"Preset {name!r} has no {file}: {path} is missing. "
                f"{_REINSTALL}"
            )
        actual = sha256_of(path)
        if actual != expected[file]:
            raise ValueError(
                f"Preset {name!r}: {file} ({path}) was changed or is "
                f"corrupt: its sha256 is {actual}, its {METADATA_FILE} "
                f"records {expected[file]}. {_REINSTALL}"
            )


def check_serves(serves, name=None):
    """Checks an estimator preset's `serves` record; returns it normalised.

    Keys: `estimator` (one of `ESTIMATORS`), `dims` `[low, high]` (the
    dimensions `d` it was trained on), `set_size` `[low, high]` (set sizes
    it was trained on), `preprocessing` (`"whiten"`,
    `"whiten_third_moment"` or `"standardize"`), `paired` (row `j` of both
    sets is one joint sample), `symmetric` (the answer is the mean over
    both orders of the sets), `joint` (paired samples read as joint
    samples against the product of the marginals) and `default_dims`
    (`[low, high]`, the `d` for which the estimator uses this preset by
    default, or None: only when asked for by name).
    """
    where = "`serves`" if name is None else f"`serves` of preset {name!r}"
    if not isinstance(serves, dict):
        raise ValueError(f"{where} must be a dict. Received: serves={serves!r}")
    keys = (
        "estimator",
        "dims",
        "set_size",
        "preprocessing",
        "paired",
        "symmetric",
        "joint",
        "default_dims",
    )
    missing = [key for key in keys if key not in serves]
    if missing:
        raise ValueError(
            f"{where} lacks {', '.join(missing)}. Received: serves={serves!r}"
        )
    out = dict(serves)
    out["estimator"] = validation.check_choice(
        "serves.estimator", serves["estimator"], ESTIMATORS
    )
    for key in ("dims", "set_size"):
        out[key] = list(
            validation.check_int_range(f"serves.{key}", serves[key], low=1)
        )
    if serves["default_dims"] is not None:
        low, high = validation.check_int_range(
            "serves.default_dims", serves["default_dims"], low=1
        )
        if low < out["dims"][0] or high > out["dims"][1]:
            raise ValueError(
                f"{where}: `default_dims` must lie within `dims`. "
                f"Received: default_dims={serves['default_dims']!r}, "
                f"dims={serves['dims']!r}"
            )
        out["default_dims"] = [low, high]
    out["preprocessing"] = validation.check_choice(
        "serves.preprocessing", serves["preprocessing"], SERVES_PREPROCESSING
    )
    for key in ("paired", "symmetric", "joint"):
        out[key] = validation.check_bool(f"serves.{key}", serves[key])
    return out


def _encode(value):
    """A tree of arrays as (a tree of lists, the same tree of dtypes)."""
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


def write_json(path, value):
    """Writes `value` as indented JSON with a final newline."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2)
        f.write("\n")


def model_config(model):
    """The model's `config.json` content (no compile configuration)."""
    config = keras.saving.serialize_keras_object(model)
    config.pop("compile_config", None)
    return config


def save_inference_weights(model, path):
    """Writes the model's weights to `path`, without optimizer state.

    `model.save_weights` on a compiled, trained model also writes the
    optimizer's variables (Adam's moments are twice the model's size).
    The weights are written to a temporary file first, and everything but
    its top-level `optimizer` group is copied into `path`; the file loads
    like one written from an uncompiled model.
    """
    import h5py

    path = Path(path)
    with tempfile.TemporaryDirectory() as tmp:
        full = Path(tmp) / WEIGHTS_FILE
        model.save_weights(full)
        with h5py.File(full, "r") as source, h5py.File(path, "w") as target:
            for key, value in source.attrs.items():
                target.attrs[key] = value
            for key in source:
                if key != "optimizer":
                    source.copy(source[key], target, name=key)


def compile_record(model):
    """`{"loss": ..., "metrics": [...]}` of a compiled model, else None.

    Only serializable losses and metrics are recorded (a model compiled
    with a plain Python function gives None).
    """
    if not getattr(model, "compiled", False):
        return None
    try:
        config = model.get_compile_config()
        record = {"loss": config["loss"], "metrics": config.get("metrics")}
        json.dumps(record)
    except Exception:  # noqa: BLE001 - any unserializable piece: no record.
        return None
    if record["loss"] is None:
        return None
    return record


def _check_no_preset(output_dir, overwrite):
    present = [
        file
        for file in (CONFIG_FILE, WEIGHTS_FILE, METADATA_FILE)
        if (output_dir / file).exists()
    ]
    if present and not overwrite:
        raise ValueError(
            f"`output_dir` already holds a preset ({', '.join(present)}); "
            "pass overwrite=True to replace it. Received: "
            f"output_dir={str(output_dir)!r}"
        )


def save_preset(
    model,
    output_dir,
    *,
    data,
    metrics,
    card,
    example_input=None,
    extra=None,
    serves=None,
    task=None,
    overwrite=False,
):
    """Write a preset folder: config, weights, metadata and model card.

    Files that affect the model's output and are already in `output_dir`
    (`vocabulary.txt`, written by the recipe first) are hashed into
    `files_sha256` with the config and the weights.

    Args:
        model: the trained Keras model.
        output_dir: the preset folder (created if needed); its name is the
            preset's `name`.
        data: a short description of the training data.
        metrics: a dict of the metrics the model reached.
        card: the model card (markdown) text.
        example_input: optional small input; it and the model's output on
            it are stored in the metadata (`"example"`), so that every
            backend can check it reproduces the trained model.
        extra: optional dict merged into the metadata.
        serves: for an estimator preset, what it serves (`check_serves`).
        task: a short name of the task (`"digit_sum"`, `"dyck"`, ...).
        overwrite: whether to replace a preset already in `output_dir`.

    Returns:
        The metadata written (a dict).
    """
    output_dir = Path(output_dir)
    overwrite = validation.check_bool("overwrite", overwrite)
    _check_no_preset(output_dir, overwrite)
    if serves is not None:
        serves = check_serves(serves)
    if task is not None and not isinstance(task, str):
        validation.fail("task", task, "a string or None")
    output_dir.mkdir(parents=True, exist_ok=True)
    write_json(output_dir / CONFIG_FILE, model_config(model))
    save_inference_weights(model, output_dir / WEIGHTS_FILE)
    metadata = {
        "name": output_dir.resolve().name,
        "keras_version": keras.__version__,
        "keras_msets_version": __version__,
        "backend": keras.backend.backend(),
        "parameter_count": int(model.count_params()),
        "date": datetime.date.today().isoformat(),
        "data": data,
        "metrics": metrics,
    }
    if task is not None:
        metadata["task"] = task
    if serves is not None:
        metadata["task"] = task or serves["estimator"]
        metadata["serves"] = serves
    record = compile_record(model)
    if record is not None:
        metadata["compile"] = record
    if example_input is not None:
        metadata["example"] = example_outputs(model, example_input)
    metadata.update(extra or {})
    metadata["name"] = output_dir.resolve().name
    metadata.pop("weights_sha256", None)
    metadata["files_sha256"] = file_hashes(output_dir)
    write_json(output_dir / METADATA_FILE, metadata)
    (output_dir / CARD_FILE).write_text(card)
    return metadata
