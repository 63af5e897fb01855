"""Which seed of `complex_deepsets_units_digit` to ship, and why seed 0 fails.

Two seeds of the preset's recipe were trained: seed 0 (shipped first, kept
in git at commit 633d104^) and seed 1 (shipped now). Both are exact on
lengths 5-95. This script loads both (seed 0's config and weights from
git) and

- chooses between them on development data only: 1,000 sequences per
  length at `DEV_LENGTHS` (150, 250, 400: longer than any training
  sequence, none of them a test length), data seed `DEV_SEED`; the seed
  with the higher mean accuracy there is chosen (ties: the lower seed);
- reports both on untouched test data, never used for a choice: the
  card's lengths (5, 10, ..., 95 and 500), 1,000 sequences per length,
  data seed `UNTOUCHED_TEST_SEED` (the cards' own test data, seed 1, was
  used to choose the seed when it was first shipped, so it is not
  untouched);
- measures both on 300 fresh sequences per length (seed 5) at lengths
  200 to 5,000, and reads the states of each: for state `j`, the turn
  per element that does not depend on the digit (`b_j` in
  `theta_j(v) = a_j v + b_j`, fitted to the angles of the digits 1-9
  with `a_j` a multiple of 2 pi / 10) and the state's readout weight
  (the norm of its `cos` and `sin` weights). This part explains the
  failure; it chooses nothing.

    KERAS_BACKEND=jax python benchmarks/units_digit_seeds.py

Writes `benchmarks/results/complex_deepsets_units_digit_seeds.json` and
prints it. Needs the repository's git history for seed 0.
"""

import argparse
import json
import sys
from pathlib import Path

import keras
import numpy as np

from keras_msets import data
from keras_msets import zoo

sys.path.insert(0, str(Path(__file__).resolve().parent))

from preset_history import preset_at_revision  # noqa: E402

HERE = Path(__file__).parent
SCRIPT = Path(__file__).name
SEED0_COMMIT = "633d104^"
PRESET_NAME = "complex_deepsets_units_digit"
LENGTHS = (200, 300, 500, 1000, 2000, 5000)
# The card's test lengths (training lengths are 1-50).
TEST_LENGTHS = tuple(range(5, 100, 5)) + (500,)
# Development data for the choice of seed: lengths that no test uses, and
# a data seed that no test uses (the cards: 1; tests/zoo: 3; above: 5).
DEV_LENGTHS = (150, 250, 400)
DEV_SEED = 11
UNTOUCHED_TEST_SEED = 12
NUM_PER_LENGTH = 1000
SHIPPED = "seed 1 (shipped)"


def _seed0_model(repository):
    folder = preset_at_revision(PRESET_NAME, SEED0_COMMIT, repository)
    config = json.loads((folder / "config.json").read_text())
    model = keras.saving.deserialize_keras_object(config)
    model.load_weights(folder / "model.weights.h5")
    return model


def _states(model):
    """Digit-independent turn per element and readout weight, per state."""
    automaton = model.get_layer("automaton")
    real = keras.ops.convert_to_numpy(automaton.real_embedding.embeddings)
    imag = keras.ops.convert_to_numpy(automaton.imag_embedding.embeddings)
    angles = np.arctan2(imag[1:10], real[1:10])  # digits 1-9, [9, states]
    digits = np.arange(1, 10)[:, None]
    best = []
    for j in range(angles.shape[1]):
        # theta_j(v) = a v + b (mod 2 pi) with a = 2 pi k / 10: fit k, b.
        fits = []
        for k in range(10):
            rest = angles[:, j] - 2 * np.pi * k / 10 * digits[:, 0]
            b = np.angle(np.mean(np.exp(1j * rest)))
            error = np.abs(np.angle(np.exp(1j * (rest - b)))).max()
            fits.append((error, k, b))
        best.append(min(fits))
    kernel = keras.ops.convert_to_numpy(model.get_layer("readout").kernel)
    num_states = angles.shape[1]
    readout = np.hypot(kernel[:num_states, 0], kernel[num_states:, 0])
    order = np.argsort(-readout)
    return [
        {
            "state": int(j),
            "readout_weight": float(readout[j]),
            "turns_per_unit_of_digit_k": int(best[j][1]),
            "digit_independent_turn_per_element_rad": float(best[j][2]),
            "max_fit_error_rad": float(best[j][0]),
        }
        for j in order[:5]
    ]


def _accuracies(model, lengths, seed, num_per_length=NUM_PER_LENGTH):
    sets = data.digit_sum_test_sets(
        task="units_digit",
        lengths=lengths,
        num_per_length=num_per_length,
        seed=seed,
    )
    return {
        str(n): data.digit_sum_accuracy(
            y, model.predict(x, batch_size=100, verbose=0)
        )
        for n, (x, y) in sets.items()
    }


def select_on_dev(models):
    """Dev accuracies of every candidate and the one chosen on them."""
    if set(DEV_LENGTHS) & set(TEST_LENGTHS + LENGTHS):
        raise ValueError("Development lengths overlap the test lengths.")
    dev = {}
    for name, model in models.items():
        by_length = _accuracies(model, DEV_LENGTHS, DEV_SEED)
        dev[name] = {
            "by_length": by_length,
            "mean_accuracy": float(np.mean(list(by_length.values()))),
        }
    # `models` is in seed order: max() keeps the first of equal means.
    chosen = max(dev, key=lambda name: dev[name]["mean_accuracy"])
    return {
        "data": f"digit_sum_test_sets(task='units_digit', lengths="
        f"{DEV_LENGTHS}, num_per_length={NUM_PER_LENGTH}, seed={DEV_SEED})",
        "rule": "highest mean accuracy over the development lengths; "
        "ties: the lower seed",
        "dev": dev,
        "chosen": chosen,
        "chosen_is_shipped": chosen == SHIPPED,
    }


def untouched_test(models):
    """Every candidate on test data that no choice has seen."""
    results = {}
    for name, model in models.items():
        by_length = _accuracies(model, TEST_LENGTHS, UNTOUCHED_TEST_SEED)
        short = [by_length[str(n)] for n in TEST_LENGTHS if n < 100]
        results[name] = {
            "by_length": by_length,
            "min_accuracy_5_95": float(min(short)),
            "mean_accuracy_5_95": float(np.mean(short)),
            "accuracy_len_500": by_length["500"],
        }
    return {
        "data": "digit_sum_test_sets(task='units_digit', lengths=5, 10, "
        f"..., 95 and 500, num_per_length={NUM_PER_LENGTH}, "
        f"seed={UNTOUCHED_TEST_SEED})",
        "models": results,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--repository",
        type=Path,
        default=HERE.parent,
        help="the git checkout to read seed 0 from (default: this one)",
    )
    args = parser.parse_args()
    models = {"seed 0 (git 633d104^)": _seed0_model(args.repository)}
    models[SHIPPED] = zoo.load("complex_deepsets_units_digit")
    backend = keras.backend.backend()
    results = {
        "command": f"KERAS_BACKEND={backend} python benchmarks/{SCRIPT}",
        "selection": select_on_dev(models),
        "untouched_test": untouched_test(models),
        "test": "digit_sum_test_sets(task='units_digit', "
        "num_per_length=300, seed=5)",
        "models": {},
    }
    for name, model in models.items():
        by_length = {}
        for n in LENGTHS:
            x, y = data.digit_sum_test_sets(
                task="units_digit", lengths=(n,), num_per_length=300, seed=5
            )[n]
            p = model.predict(x, batch_size=100, verbose=0)
            by_length[str(n)] = {
                "accuracy": data.digit_sum_accuracy(y, p),
                "mean_offset": float(np.mean(p - y)),
            }
        results["models"][name] = {
            "by_length": by_length,
            "states_with_largest_readout_weight": _states(model),
        }
    out = HERE / "results" / "complex_deepsets_units_digit_seeds.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
