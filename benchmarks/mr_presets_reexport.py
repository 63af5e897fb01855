"""Re-export the MR text presets with their preprocessor, without training.

Each preset's model is built by its recipe (now holding the
`TextPreprocessor` of the shipped vocabulary; `fen_mr_polarity` as a
`FenTextClassifier`, outputs `[1 - p, p]`), given the shipped weights,
compiled with the task's loss and metrics, and written by the preset
writer (`Recipe.write_preset`, i.e. `preset_io.save_preset`) with the
stored metrics and metadata. Before writing, the script checks that every
weight is bit-identical to the shipped one and that the token-id outputs
on the stored example are those of the shipped model (`[1 - p, p]` for
the FEN); after writing, that the weights read back bit-identical. It
records what it measured in `benchmarks/results/mr_presets_reexport.json`.

    KERAS_BACKEND=jax python benchmarks/mr_presets_reexport.py [--write]

Without `--write` it only checks (and records nothing in `zoo/`).
"""

import argparse
import json
import shutil
import tempfile
from pathlib import Path

import keras
import numpy as np

from keras_msets import zoo
from keras_msets.training import preset_io
from keras_msets.utils.scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
PRESETS = ("complex_order_cnn_mr", "complex_order_transformer_mr")
FEN = "fen_mr_polarity"
RESULT = ROOT / "benchmarks" / "results" / "mr_presets_reexport.json"
# Metadata keys `save_preset` writes itself; the others (the training's
# date, backend and data) are carried over.
WRITTEN = {
    "name",
    "keras_version",
    "keras_msets_version",
    "parameter_count",
    "metrics",
    "task",
    "compile",
    "example",
    "files_sha256",
    "recipe_seed",
}


def _weights(model):
    return {w.path: np.asarray(w.numpy()) for w in model.weights}


def _same_weights(a, b):
    return sorted(a) == sorted(b) and all(
        a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]) for k in a
    )


def write_again(recipe, model, folder, metadata, budget, write):
    """Writes `model` by `recipe`'s preset writer with the stored metrics,
    seed and metadata of the preset in `folder`: into `folder` itself
    (`write`) or into a temporary copy of it. Returns the folder written."""
    target = folder if write else Path(tempfile.mkdtemp()) / folder.name
    if not write:
        shutil.copytree(folder, target)
    extra = {k: v for k, v in metadata.items() if k not in WRITTEN}
    seed = metadata.get("recipe_seed", budget["seed"])
    recipe.write_preset(
        model, target, dict(budget, seed=seed), metadata["metrics"], **extra
    )
    return target


def reexport(name, folder, write):
    recipe = load_script(folder / "recipe.py", name=f"reexport_{name}")
    old = zoo.load(folder)
    metadata = preset_io.read_metadata(folder)
    example = metadata["example"]
    x = preset_io.example_input(example)
    old_out = np.asarray(old.predict_on_batch(x), "float64")
    stored = np.asarray(example["output"], "float64")
    model = recipe.RECIPE.build_model()
    model(x[:1])
    model.set_weights(old.get_weights())
    new_out = np.asarray(model.predict_on_batch(x), "float64")
    expected = (
        np.concatenate([1 - old_out, old_out], -1) if name == FEN else old_out
    )
    budget = recipe.RECIPE.full_budget()
    model.compile(**recipe.TASK.compile_arguments(budget))
    record = {
        "weights_bit_identical_before_writing": _same_weights(
            _weights(old), _weights(model)
        ),
        "max_abs_diff_old_output_vs_stored_example": float(
            np.abs(old_out - stored).max()
        ),
        "max_abs_diff_new_output_vs_old": float(
            np.abs(new_out - expected).max()
        ),
        "max_abs_diff_new_p_vs_old_p": float(
            np.abs(new_out[:, -old_out.shape[1] :] - old_out).max()
        ),
        "new_output_shape": list(new_out.shape),
        "old_sha256": metadata["files_sha256"],
    }
    record["example_input_is_the_preprocessors_ids"] = bool(
        np.array_equal(recipe.TASK.example_input(), x)
    )
    target = write_again(recipe.RECIPE, model, folder, metadata, budget, write)
    written = preset_io.read_metadata(target)
    again = zoo.load(target)
    record.update(
        weights_bit_identical_after_writing=_same_weights(
            _weights(old), _weights(again)
        ),
        new_sha256=written["files_sha256"],
        compile=written.get("compile"),
        example_output_max_abs_diff_vs_old=float(
            np.abs(np.asarray(written["example"]["output"]) - expected).max()
        ),
        raw_strings=np.asarray(
            again.predict(
                ["a gorgeous , witty , seductive movie .", "dull and lifeless"],
                verbose=0,
            )
        ).tolist(),
    )
    return record


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    results = {"backend": keras.backend.backend(), "written": args.write}
    for name in (*PRESETS, FEN):
        results[name] = reexport(name, ROOT / "zoo" / name, args.write)
        print(name, json.dumps(results[name], indent=1)[:2000], flush=True)
    RESULT.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
