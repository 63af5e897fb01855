"""The KSG estimator on discrete and rounded data, with and without the
noise that breaks its exact ties.

`keras_msets.stats.classical.ksg_mutual_information` adds noise of
relative amplitude `TIE_NOISE` to samples where at least `k` other points
coincide with one (Kraskov et al.'s suggestion); before, it used the
tied values as they were. Both in the same run (the noise switched off
by patching `_tie_noise` to return the samples unchanged, which is the
former code path), on pairs with a known value or bound:

- a discrete pair: `x` uniform on 0..2, `y = x + b` with a fair bit `b`
  (I = H(Y) - log 2 = 0.637 nats), n = 500 and 2,000;
- three sparse binary coordinates (probability 0.1), each bit of `y`
  flipped with probability 0.1 (I = 3 (h(0.18) - h(0.1)) = 0.439),
  n = 2,000;
- Gaussians `y = x + 0.5 z` in d = 1 (I = 0.805) rounded to grids 0 to
  1, n = 1,000: rounding only loses information, so the truth of a
  rounded pair is at most 0.805;
- the same unrounded pair, which has no ties (both answers equal).

One draw per pair (seed 0, the rows in this order). For comparison,
`knn_kl_divergence` (k = 1), which keeps the tied values and uses the
adaptive form of Wang et al. where points coincide, on a Gaussian shift
in d = 2 (KL = 0.125) rounded to 0.5 and unrounded, and on three sparse
binary coordinates (probability 0.1 against 0.2: KL = 0.110), n = 2,000.

    python benchmarks/ksg_ties.py --output benchmarks/results/ksg_ties.json
"""

import argparse
import json
from pathlib import Path

import numpy as np

from keras_msets.stats import classical

GRIDS = (0.0, 0.01, 0.1, 0.5, 1.0)


def _entropy(p):
    return -(p * np.log(p) + (1 - p) * np.log(1 - p))


def pairs():
    """`(name, truth, bound, x, y)` of every pair."""
    rng = np.random.default_rng(0)
    discrete = np.log(6) / 3 + 2 * np.log(3) / 3 - np.log(2)
    for n in (500, 2000):
        x = rng.integers(0, 3, size=(n, 1)).astype(float)
        y = x + rng.integers(0, 2, size=(n, 1))
        yield f"discrete 0..2, n = {n}", discrete, False, x, y
    bits = (rng.random((2000, 3)) < 0.1).astype(float)
    flipped = np.where(rng.random((2000, 3)) < 0.1, 1 - bits, bits)
    truth = 3 * (_entropy(0.18) - _entropy(0.1))
    yield "sparse binary 3 + 3, n = 2000", truth, False, bits, flipped
    x = rng.normal(size=(1000, 1))
    y = x + 0.5 * rng.normal(size=(1000, 1))
    gaussian = 0.5 * np.log(1 + 1 / 0.25)
    for step in GRIDS:
        name = f"Gaussian, grid {step}, n = 1000"
        yield name, gaussian, step > 0, _grid(x, step), _grid(y, step)


def _grid(values, step):
    return values if step == 0 else np.round(values / step) * step


def kl_pairs():
    """`(name, truth, bound, x, y)` of the k-NN KL pairs."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2000, 2))
    y = rng.normal(size=(2000, 2)) + 0.5 / np.sqrt(2)
    yield "Gaussian shift, unrounded, n = 2000", 0.125, False, x, y
    yield "the same rounded to 0.5", 0.125, True, _grid(x, 0.5), _grid(y, 0.5)
    p = (rng.random((2000, 3)) < 0.1).astype(float)
    q = (rng.random((2000, 3)) < 0.2).astype(float)
    truth = 3 * (0.1 * np.log(0.1 / 0.2) + 0.9 * np.log(0.9 / 0.8))
    yield "sparse binary 3-d, n = 2000", truth, False, p, q


def _without_noise(x, y):
    saved = classical._tie_noise
    classical._tie_noise = lambda a, seed: a
    try:
        return classical.ksg_mutual_information(x, y)
    finally:
        classical._tie_noise = saved


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    rows = []
    for name, truth, bound, x, y in pairs():
        row = {
            "pair": name,
            "truth": float(truth),
            "truth_is_a_bound": bound,
            "with_noise": classical.ksg_mutual_information(x, y),
            "without_noise": _without_noise(x, y),
        }
        rows.append(row)
        print(
            f"{name}: truth {'<= ' if bound else ''}{truth:.3f}, "
            f"KSG {row['with_noise']:.3f} (without the noise "
            f"{row['without_noise']:.3f})",
            flush=True,
        )
    kl_rows = []
    for name, truth, bound, x, y in kl_pairs():
        value = classical.knn_kl_divergence(x, y)
        kl_rows.append(
            {
                "pair": name,
                "truth": float(truth),
                "truth_is_a_bound": bound,
                "knn_kl": value,
            }
        )
        print(
            f"k-NN KL, {name}: truth {'<= ' if bound else ''}{truth:.3f}, "
            f"{value:.3f}",
            flush=True,
        )
    if args.output is not None:
        result = {
            "tie_noise": classical.TIE_NOISE,
            "k": 3,
            "rows": rows,
            "knn_kl_rows": kl_rows,
        }
        args.output.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
