"""Re-export `mst_count_shared_digits` as a `GuardedFunctional`, without
training.

The preset's model (`set_models.build_counting_model`) was written as a
plain `keras.Model` (Keras's `Functional`), so it lacked the package's
`TrainerGuards`: on JAX a `fit`, `evaluate` or `predict` that raised
inside its step left it without weights, and its `predict` of no rows
raised `UnboundLocalError`. `build_counting_model` now returns a
`GuardedFunctional` (the same layers, names and weights). This script
builds the model by the recipe, gives it the shipped weights and writes
it (uncompiled, as before) with the preset writer (`Recipe.write_preset`)
and the stored metrics and metadata.
Before writing it checks that every weight is bit-identical to the
shipped one and that the outputs on the stored example are the shipped
model's; after writing, that the weights read back bit-identical and the
loaded model is a `GuardedFunctional`. It records what it measured in
`benchmarks/results/guarded_preset_reexport.json`.

    KERAS_BACKEND=torch python benchmarks/guarded_preset_reexport.py [--write]

Without `--write` it writes into a temporary copy (nothing in `zoo/`).
"""

import argparse
import json
from pathlib import Path

import keras
import numpy as np
from mr_presets_reexport import write_again

from keras_msets import zoo
from keras_msets.models import GuardedFunctional
from keras_msets.training import preset_io
from keras_msets.utils.scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
NAME = "mst_count_shared_digits"
RESULT = ROOT / "benchmarks" / "results" / "guarded_preset_reexport.json"


def _weights(model):
    """The weights in order (a model built beside the loaded one gets
    other automatic path suffixes; `set_weights` goes by order)."""
    return [np.asarray(w.numpy()) for w in model.weights]


def _same_weights(a, b):
    return len(a) == len(b) and all(
        u.dtype == v.dtype and np.array_equal(u, v)
        for u, v in zip(a, b, strict=True)
    )


def reexport(folder, write):
    recipe = load_script(folder / "recipe.py", name=f"reexport_{NAME}")
    old = zoo.load(folder)
    metadata = preset_io.read_metadata(folder)
    example = metadata["example"]
    x = preset_io.example_input(example)
    old_out = np.asarray(old.predict_on_batch(x), "float64")
    stored = np.asarray(example["output"], "float64")
    model = recipe.RECIPE.build_model()
    model.set_weights(old.get_weights())
    new_out = np.asarray(model.predict_on_batch(x), "float64")
    budget = recipe.RECIPE.full_budget()
    record = {
        "old_class": type(old).__name__,
        "new_class": type(model).__name__,
        "weights_bit_identical_before_writing": _same_weights(
            _weights(old), _weights(model)
        ),
        "max_abs_diff_old_output_vs_stored_example": float(
            np.abs(old_out - stored).max()
        ),
        "max_abs_diff_new_output_vs_old": float(
            np.abs(new_out - old_out).max()
        ),
        "old_sha256": metadata["files_sha256"],
    }
    target = write_again(recipe.RECIPE, model, folder, metadata, budget, write)
    written = preset_io.read_metadata(target)
    # The writer names the task by the recipe's task object ("counting");
    # the preset's metadata has always said "shared_class_count", which
    # `zoo.describe` reads (outside the files' hashes).
    written["task"] = metadata["task"]
    preset_io.write_json(target / preset_io.METADATA_FILE, written)
    again = zoo.load(target)
    record.update(
        loaded_class=type(again).__name__,
        loaded_is_guarded=isinstance(again, GuardedFunctional),
        weights_bit_identical_after_writing=_same_weights(
            _weights(old), _weights(again)
        ),
        new_sha256=written["files_sha256"],
        example_output_max_abs_diff_vs_old=float(
            np.abs(np.asarray(written["example"]["output"]) - old_out).max()
        ),
    )
    return record


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    record = reexport(ROOT / "zoo" / NAME, args.write)
    results = {
        "backend": keras.backend.backend(),
        "written": args.write,
        NAME: record,
    }
    print(json.dumps(results, indent=1), flush=True)
    checks = (
        record["weights_bit_identical_before_writing"],
        record["weights_bit_identical_after_writing"],
        record["loaded_is_guarded"],
        record["max_abs_diff_new_output_vs_old"] == 0.0,
    )
    if not all(checks):
        raise SystemExit("a check failed; see the record above")
    if args.write:
        RESULT.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
