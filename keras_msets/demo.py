"""The main job: load pretrained zoo models and show them working.

    python -m keras_msets.demo [--num-per-length N]

Loads `complex_deepsets_units_digit` (and `deepsets_units_digit`, its real
DeepSets baseline, when shipped), generates fresh test sequences (seed 2,
never seen in training) and prints accuracy against sequence length side by
side: the complex multiset automaton gets the units digit of the sum right
at every length 5-95 and at 500 (ten times the longest training set), while
real DeepSets stay at chance (DeBenedetto & Chiang, Fig. 3).
"""

import argparse

import keras
import numpy as np

from keras_msets import data
from keras_msets import zoo
from keras_msets.training.tasks import digit_sum

MODELS = ("complex_deepsets_units_digit", "deepsets_units_digit")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-per-length", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=2)
    args = parser.parse_args(argv)

    names = [name for name in MODELS if name in zoo.list()]
    print(f"keras_msets demo on backend {keras.backend.backend()}")
    print("task: the units digit of a sum of digits 1-9 (fresh test data)")
    lengths = digit_sum.TEST_LENGTHS + (digit_sum.LONG_LENGTH,)
    test_sets = data.digit_sum_test_sets(
        task="units_digit",
        lengths=lengths,
        num_per_length=args.num_per_length,
        seed=args.seed,
    )
    models = {name: zoo.load(name) for name in names}
    x, y = test_sets[5]
    example = models[names[0]].predict(x[:1], verbose=0)[0, 0]
    print(
        f"example: digits {x[0][x[0] > 0].tolist()} -> units digit "
        f"{int(y[0, 0])}; {names[0]} predicts {example:.3f}"
    )
    print()
    print("length  " + "  ".join(f"{name:>30}" for name in names))
    # Sets padded (0 = padding, which the models ignore) to one of two
    # widths: two input shapes instead of one per length, so TensorFlow
    # and JAX compile `predict` twice, not twenty times.
    width = max(digit_sum.TEST_LENGTHS)
    for length in lengths:
        x, y = test_sets[length]
        if length < width:
            x = np.pad(x, ((0, 0), (0, width - length)))
        cells = []
        for name in names:
            prediction = models[name].predict(x, batch_size=1000, verbose=0)
            cells.append(f"{data.digit_sum_accuracy(y, prediction):>30.4f}")
        print(f"{length:>6}  " + "  ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
