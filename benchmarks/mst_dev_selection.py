"""Multi-Set Transformer presets: choices on dev pairs, untouched test pairs.

The runs behind the `mst_*` presets were chosen (shipped or "not shipped")
on the pairs their cards report (seed `2**32 + d`), and `mst_two_sample`'s
architecture was picked on the same pairs (Table 4 of
`benchmarks/mst_tables.py` uses them too). Those pairs are therefore
development pairs in effect, and the cards' numbers are optimistic by the
choice. This script separates the two:

- development pairs, for choosing: seed `DEV_SEED + d`;
- untouched test pairs, for reporting only, never used for a choice:
  seed `UNTOUCHED_TEST_SEED + d`.

Both are fresh draws of each preset's own task (`recipe.task`), above the
training seeds (below 2**32) and apart from every other fixed set of the
project (the cards: `2**32 + d`; examples `+ 1000`; Fig. 2 `+ 2000`; the
KL cards' Gaussians `+ 3000`; `tests/zoo`: `+ 5000`).

For each preset: every candidate that still has weights (the shipped
preset, earlier presets kept in git as `git:REV`, run folders given with
`--candidate`) is measured on the development pairs, the best is chosen
(`SCORES`: the two-sample accuracy; for the regression presets the mean
over the card's dimensions of the error divided by the best constant's),
and the chosen one, and the shipped preset where they differ, are
measured on the untouched test pairs. Candidates whose weights are gone
(the runs RESULTS.md lists as "not shipped") cannot be re-chosen here:
retrain them with the command RESULTS.md gives, then pass the run folder,

    KERAS_BACKEND=tensorflow python benchmarks/mst_dev_selection.py \\
        --presets mst_kl_divergence --candidate "run6=run6/mst_kl_divergence"

The commands that made the stored file:

    KERAS_BACKEND=jax python benchmarks/mst_dev_selection.py \\
        --presets mst_two_sample
    KERAS_BACKEND=jax python benchmarks/mst_dev_selection.py \\
        --presets mst_kl_divergence mst_mutual_information \\
        mst_kl_divergence_low_d --num-dev 300

Writes `benchmarks/results/mst_dev_selection.json` after every
measurement (one per candidate, split and d); a rerun skips the
measurements already there (same preset, candidate, split, number of
pairs, sha256 of the weights and d).
"""

import argparse
import hashlib
import importlib.util
import json
import sys
import time
from pathlib import Path

import keras
import numpy as np

from keras_msets import zoo
from keras_msets.training.tasks import mst

sys.path.insert(0, str(Path(__file__).resolve().parent))

from preset_history import preset_at_revision  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SCRIPT = Path(__file__).name
OUTPUT = HERE / "results" / "mst_dev_selection.json"

DEV_SEED = mst.TEST_SEED + 8000
UNTOUCHED_TEST_SEED = mst.TEST_SEED + 9000
# Seeds of the other fixed sets (each plus d or a small offset): a dev or
# test seed must stay clear of them.
OTHER_SEEDS = {
    "cards": mst.TEST_SEED,
    "example inputs": mst.TEST_SEED + 1000,
    "Fig. 2": mst.TEST_SEED + 2000,
    "KL Gaussians": mst.TEST_SEED + 3000,
    "tests/zoo": mst.TEST_SEED + 5000,
}

# Preset -> the dimensions measured, the earlier presets kept in git
# (label -> revision) and the kind of score.
PRESETS = {
    "mst_two_sample": {
        "dims": (8,),
        "git": {"plain MST, 6,000 batches (preset before 7464d81)": "28ec2aa"},
        "score": "accuracy",
    },
    "mst_kl_divergence": {
        "dims": (2, 4, 8, 16),
        "git": {"2,700 batches (preset at 801fca7)": "801fca7"},
        "score": "mae",
    },
    "mst_kl_divergence_low_d": {"dims": (1, 2, 3), "git": {}, "score": "mae"},
    "mst_mutual_information": {
        "dims": (2, 10, 20),
        "git": {"2,000 batches (preset at 0d45f75)": "0d45f75"},
        "score": "mae",
    },
}
SHIPPED = "shipped"
NUM = {"mst_two_sample": 2000}  # pairs per d; the others: --num-*


def check_seeds():
    """Dev and test seeds differ from each other and from every other set."""
    starts = dict(OTHER_SEEDS, dev=DEV_SEED, test=UNTOUCHED_TEST_SEED)
    values = sorted(starts.values())
    # Each set uses seed + d with d <= 20 (+ a few for the KL Gaussians).
    gaps = np.diff(values)
    if np.any(gaps < 100):
        raise ValueError(f"Fixed-set seeds overlap: {starts}")


def _recipe(name):
    path = ROOT / "zoo" / name / "recipe.py"
    spec = importlib.util.spec_from_file_location(f"recipe_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.RECIPE


def _sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _from_git(name, revision, task):
    return _from_folder(preset_at_revision(name, revision, ROOT), task)


def _from_folder(folder, task):
    folder = Path(folder)
    config = json.loads((folder / "config.json").read_text())
    model = keras.saving.deserialize_keras_object(config)
    if not model.built:
        task.build(model, task.example_input())
    model.load_weights(folder / "model.weights.h5")
    return model, _sha256(folder / "model.weights.h5")


def candidates(name, extra):
    """Label -> a function giving `(model, weights sha256)`."""
    task = _recipe(name).task
    found = {
        SHIPPED: lambda: (
            zoo.load(name),
            _sha256(ROOT / "zoo" / name / "model.weights.h5"),
        )
    }
    for label, revision in PRESETS[name]["git"].items():
        found[label] = lambda r=revision: _from_git(name, r, task)
    for label, folder in extra.items():
        found[label] = lambda f=folder: _from_folder(f, task)
    return found


def measure(name, model, seed, num, d):
    """The card's metrics of `model` in dimension `d`, pairs of `seed`."""
    task = _recipe(name).task
    if PRESETS[name]["score"] == "accuracy":
        return task.evaluate_pairs(model, num=num, seed=seed)
    return task.evaluate_dims(model, dims=(d,), num=num, seed=seed)


def score(name, metrics):
    """Higher is better: the accuracy, or minus the mean relative error."""
    if PRESETS[name]["score"] == "accuracy":
        return metrics["accuracy"]
    dims = PRESETS[name]["dims"]
    ratios = [metrics[f"mae_d{d}"] / metrics[f"median_mae_d{d}"] for d in dims]
    return -float(np.mean(ratios))


def _load(path):
    if path.is_file():
        return json.loads(path.read_text())
    return {"measurements": []}


def _write(path, results):
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(results, indent=2) + "\n")
    temporary.replace(path)


class _Measurements:
    """Measures the candidates of one preset, once each (saved, resumed)."""

    def __init__(self, name, found, results, done, output):
        self.name, self.found, self.results = name, found, results
        self.done, self.output = done, output
        self.loaded = {}

    def __call__(self, label, split, seed, num):
        """The metrics of every d merged, and the score; one record per d."""
        if label not in self.loaded:
            self.loaded[label] = self.found[label]()
        model, sha = self.loaded[label]
        metrics = {}
        for d in PRESETS[self.name]["dims"]:
            key = (self.name, label, split, num, sha, d)
            if key not in self.done:
                start = time.perf_counter()
                record = {
                    "preset": self.name,
                    "candidate": label,
                    "split": split,
                    "num": num,
                    "sha256": sha,
                    "d": d,
                    "backend": keras.backend.backend(),
                    "metrics": measure(self.name, model, seed, num, d),
                    "seconds": round(time.perf_counter() - start, 1),
                }
                print(json.dumps(record), flush=True)
                self.results["measurements"].append(record)
                self.done[key] = record
                _write(self.output, self.results)
            metrics.update(self.done[key]["metrics"])
        return {"metrics": metrics, "score": score(self.name, metrics)}


def run(args):
    check_seeds()
    results = _load(args.output)
    results["settings"] = {
        "dev_seed": "2**32 + 8000 + d",
        "untouched_test_seed": "2**32 + 9000 + d",
        "cards_seed": "2**32 + d (used for the original choices)",
        "score": "two-sample: accuracy (estimator, both orders); others: "
        "mean over the card's d of MAE / MAE of the best constant "
        "(lower is better)",
    }
    done = {
        (
            m["preset"],
            m["candidate"],
            m["split"],
            m["num"],
            m["sha256"],
            m.get("d", PRESETS[m["preset"]]["dims"][0]),
        ): m
        for m in results["measurements"]
    }
    extra = {}
    for item in args.candidate or []:
        label, _, folder = item.partition("=")
        if not folder:
            raise SystemExit(f"--candidate must be LABEL=FOLDER, got {item}")
        extra[label] = folder
    backend = keras.backend.backend()
    selections = results.setdefault("selections", {})
    for name in args.presets:
        found = candidates(name, extra if len(args.presets) == 1 else {})
        num_dev = NUM.get(name, args.num_dev)
        num_test = NUM.get(name, args.num_test)
        get = _Measurements(name, found, results, done, args.output)
        dev = {}
        if len(found) > 1:
            for label in found:
                dev[label] = get(label, "dev", DEV_SEED, num_dev)["score"]
            chosen = max(dev, key=dev.get)
        else:
            chosen = SHIPPED
        chosen_test = get(
            chosen, "untouched_test", UNTOUCHED_TEST_SEED, num_test
        )
        test = {chosen: chosen_test["metrics"]}
        if chosen != SHIPPED:
            test[SHIPPED] = get(
                SHIPPED, "untouched_test", UNTOUCHED_TEST_SEED, num_test
            )["metrics"]
        selections[name] = {
            "candidates": list(found),
            "dev_scores": dev,
            "chosen_on_dev": chosen,
            "chosen_is_shipped": chosen == SHIPPED,
            "untouched_test": test,
            "num_dev": num_dev if dev else None,
            "num_test": num_test,
        }
        results.setdefault("commands", [])
        command = f"KERAS_BACKEND={backend} python benchmarks/{SCRIPT} " + (
            " ".join(sys.argv[1:])
        )
        if command not in results["commands"]:
            results["commands"].append(command)
        _write(args.output, results)
    print(json.dumps(selections, indent=2))
    return results


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--presets", nargs="+", choices=tuple(PRESETS), default=list(PRESETS)
    )
    parser.add_argument(
        "--candidate",
        action="append",
        metavar="LABEL=FOLDER",
        help="a run folder (config.json, model.weights.h5) to choose "
        "among as well (with one preset in --presets)",
    )
    parser.add_argument(
        "--num-dev", type=int, default=500, help="dev pairs per d"
    )
    parser.add_argument(
        "--num-test",
        type=int,
        default=1000,
        help="untouched test pairs per d (the cards: 1,000)",
    )
    parser.add_argument("--output", type=Path, default=OUTPUT)
    return parser.parse_args(argv)


if __name__ == "__main__":
    run(parse_args())
