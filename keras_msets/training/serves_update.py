"""A preset's serving declaration rewritten on its existing weights.

What an estimator preset serves (`metadata.json` "serves": its range of
`d` and `n`, a gate or a rule applied after the model) is part of its
recipe's declaration, and a recipe run writes it. A change of that
declaration alone does not need new weights: `update_serves(recipe,
folder)` (`python zoo/<name>/recipe.py --serves-only`, `keras-msets zoo
train NAME --serves-only`) writes the recipe's current `serves` into the
metadata of an existing preset folder (keeping what the stored serves
derived from the training rows, such as a statistics preset's
`feature_ranges`: `Task.serves_update`) and renders its card again from
the stored metrics, and leaves `config.json` and `model.weights.h5`
byte-identical (checked against their recorded sha256 before and after).
It refuses a folder without weights, a stored model whose architecture
differs from the recipe's, and a `serves` whose model-reading entries
(`features`, `quantiles`, `target`) differ from the stored ones. Inside
the installed presets or the repository's `zoo/` folder it needs
`overwrite=True`, as training does. The metadata records the update in
`serves_updated`: the date, the package version, the `serves` keys that
changed and the sha256 of the weights it was made on.
"""

import datetime
import shutil
from pathlib import Path

import keras

from keras_msets.training import preset_io
from keras_msets.version import __version__

# `serves` entries that say how the model's outputs are read: a serves
# update must leave them as the weights were trained for.
MODEL_READING = ("features", "quantiles", "target")


def _architecture(config):
    config = dict(config)
    config.pop("build_config", None)
    config.pop("compile_config", None)
    return config


def _check_folder(folder, overwrite, inside_presets):
    if not folder.is_dir():
        raise ValueError(
            "`output_dir` must be an existing preset folder for a serves "
            f"update. Received: output_dir={str(folder)!r}"
        )
    if inside_presets(folder) and not overwrite:
        raise ValueError(
            f"Refusing to update the serves of {folder}: it is inside the "
            "installed presets. Pass `overwrite=True` (`--overwrite`) to "
            "change a shipped preset. Received: "
            f"output_dir={str(folder)!r}, overwrite=False"
        )
    if not (folder / preset_io.WEIGHTS_FILE).is_file():
        raise ValueError(
            f"A serves update keeps a preset's weights, but {folder} has "
            f"no {preset_io.WEIGHTS_FILE}: train the preset instead. "
            f"Received: output_dir={str(folder)!r}"
        )


def _check_architecture(recipe, model, folder):
    # The stored config as the model's class writes it today: arguments
    # added to the class since the preset was saved get their defaults.
    stored = keras.saving.deserialize_keras_object(
        preset_io.read_config(folder)
    )
    stored = _architecture(preset_io.model_config(stored))
    declared = _architecture(preset_io.model_config(model))
    if stored != declared:
        inner_s, inner_d = stored.get("config", {}), declared.get("config", {})
        keys = sorted(
            k
            for k in set(inner_s) | set(inner_d)
            if inner_s.get(k) != inner_d.get(k)
        ) or sorted(
            k
            for k in set(stored) | set(declared)
            if stored.get(k) != declared.get(k)
        )
        raise ValueError(
            f"The model of recipe {recipe.name!r} differs from the one "
            f"stored in {folder / preset_io.CONFIG_FILE} (in "
            f"{', '.join(keys)}): its weights cannot serve the recipe's "
            "declaration. Train the preset instead. Received: "
            f"output_dir={str(folder)!r}"
        )


def _check_reading(old, new, folder):
    changed = [k for k in MODEL_READING if k in old and old[k] != new.get(k)]
    if changed:
        raise ValueError(
            f"The recipe's `serves` reads the model differently from the "
            f"preset in {folder} (`{'`, `'.join(changed)}` changed): that "
            "needs new weights. Train the preset instead. Received: "
            + ", ".join(f"{k}={new.get(k)!r}" for k in changed)
        )


def update_serves(recipe, folder, inside_presets, overwrite=False):
    """Writes `recipe`'s current `serves` into the preset in `folder`.

    Args:
        recipe: a `keras_msets.training.Recipe` whose task declares
            `serves`.
        folder: an existing preset folder (with its weights).
        inside_presets: `folder -> bool`, whether `folder` is inside the
            installed presets or the repository's `zoo/` folder
            (`keras_msets.training.recipe.inside_presets`).
        overwrite: needed where `inside_presets(folder)`.

    Returns:
        The metadata written (a dict).
    """
    folder = Path(folder).expanduser().resolve()
    _check_folder(folder, overwrite, inside_presets)
    metadata = preset_io.read_metadata(folder)
    preset_io.verify_files(folder, metadata)
    before = preset_io.file_hashes(folder)
    model = recipe.build_model()
    _check_architecture(recipe, model, folder)
    recipe._load_start(model, folder)
    old = metadata.get("serves") or {}
    serves = recipe.task.serves_update(old)
    if serves is None:
        raise ValueError(
            f"Recipe {recipe.name!r} declares no `serves`: only estimator "
            "presets have a serves update. Received: "
            f"output_dir={str(folder)!r}"
        )
    serves = preset_io.check_serves(serves, recipe.name)
    _check_reading(old, serves, folder)
    metadata["task"] = metadata.get("task") or serves["estimator"]
    metadata["serves"] = serves
    changed = sorted(
        k for k in set(old) | set(serves) if old.get(k) != serves.get(k)
    )
    if changed or "serves_updated" not in metadata:
        # An update that changes nothing keeps the last record.
        metadata["serves_updated"] = {
            "date": datetime.date.today().isoformat(),
            "keras_msets_version": __version__,
            "changed": changed,
            "weights_sha256": before[preset_io.WEIGHTS_FILE],
        }
    card = recipe.model_card(model, metadata.get("metrics") or {})
    preset_io.write_json(folder / preset_io.METADATA_FILE, metadata)
    (folder / preset_io.CARD_FILE).write_text(card)
    recipe_file = folder / preset_io.RECIPE_FILE
    if recipe.source is not None and not (
        recipe_file.exists() and recipe_file.samefile(recipe.source)
    ):
        shutil.copyfile(recipe.source, recipe_file)
    if preset_io.file_hashes(folder) != before:
        raise RuntimeError(
            f"The files of the preset in {folder} changed during a serves "
            "update; restore the folder from a copy."
        )
    return metadata
