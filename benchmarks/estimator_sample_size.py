"""Does the estimators' error grow outside the set sizes they were trained on?

KERAS_BACKEND=torch python benchmarks/estimator_sample_size.py \
    [--pairs 40] [--sizes 50 200 1000]
python benchmarks/estimator_sample_size.py \
    --ranges-from benchmarks/results/estimator_sample_size_torch.json

The estimator presets were trained on sets of 100-150 points (KL
divergence, mutual information) or 10-30 (two-sample). Here each
estimator, as a user calls it (default presets), reads pairs drawn from
its training distribution at several set sizes `n`, the same
distributions at every `n` (paired comparison):

- `kl_divergence`, d = 2 and 8: two random Gaussian mixtures per pair
  (Sec. 5.1.1), the truth `KL(P || Q)` from 20,000 Monte-Carlo samples of
  the exact densities;
- `mutual_information`, d = 2 (the joint preset) and 10 (the split one):
  correlated Gaussians with `rho` uniform in [-0.999, 0.999] (Sec. 5.1.2),
  the exact mutual information;
- `same_distribution_probability`, d = 8: one mixture or two, half and
  half (Sec. 5.2.3); accuracy of `p > 0.5`.

Each estimator reads the model's answer (`out_of_distribution="warn"`,
warnings silenced), so the numbers measure the model. The mean absolute
error (accuracy for the two-sample test) at each `n` is compared with the
one at a size inside the training range (`reference_size`). Writes
`benchmarks/results/estimator_sample_size_<backend>.json`.

`--ranges-from` turns such a result into the set sizes where each
preset's error does not grow (`set_size_ranges`), which the estimators
read (`keras_msets/estimators/set_size_ranges.json`): they warn about
set sizes outside those, not about every size outside the trained ones.
"""

import argparse
import json
import pathlib
import time
import warnings

import keras
import numpy as np

from keras_msets import estimators
from keras_msets.data.mixtures import gaussian_mutual_information
from keras_msets.data.mixtures import random_gaussian_mixture

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
MC_SAMPLES = 20_000
# Pairs per model call: sets of 1,000 points (eight readings each for the
# joint mutual information) fill the memory at the default 64.
BATCH_SIZE = 8
CASES = (
    # (estimator, d, size inside the training range)
    ("kl_divergence", 2, 125),
    ("kl_divergence", 8, 125),
    ("mutual_information", 2, 125),
    ("mutual_information", 10, 125),
    ("same_distribution_probability", 8, 20),
)


def _kl_draws(d, pairs, rng):
    draws = []
    for _ in range(pairs):
        p = random_gaussian_mixture(d, rng)
        q = random_gaussian_mixture(d, rng)
        s = p.sample(MC_SAMPLES, rng)
        truth = float(np.mean(p.logpdf(s) - q.logpdf(s)))
        draws.append((p, q, truth))
    return draws


def _mi_draws(d, pairs, rng):
    rho = rng.uniform(-0.999, 0.999, size=pairs)
    return [(r, float(gaussian_mutual_information(r, d))) for r in rho]


def _two_sample_draws(d, pairs, rng):
    draws = []
    for _ in range(pairs):
        p = random_gaussian_mixture(d, rng)
        other = random_gaussian_mixture(d, rng)
        same = bool(rng.random() < 0.5)
        draws.append((p, p if same else other, float(same)))
    return draws


def _sets(estimator, d, draws, n, rng):
    xs, ys = [], []
    for draw in draws:
        if estimator == "mutual_information":
            rho = draw[0]
            x = rng.normal(size=(n, d))
            y = rho * x + np.sqrt(1 - rho**2) * rng.normal(size=(n, d))
        else:
            x, y = draw[0].sample(n, rng), draw[1].sample(n, rng)
        xs.append(x)
        ys.append(y)
    return xs, ys


def _measure(estimator, d, reference, sizes, pairs, seed):
    rng = np.random.default_rng(seed)
    draw = {
        "kl_divergence": _kl_draws,
        "mutual_information": _mi_draws,
        "same_distribution_probability": _two_sample_draws,
    }[estimator]
    draws = draw(d, pairs, rng)
    truth = np.array([t[-1] for t in draws])
    function = getattr(estimators, estimator)
    rows = {}
    for n in sorted({reference, *sizes}):
        xs, ys = _sets(estimator, d, draws, n, np.random.default_rng(n))
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = function(
                xs, ys, batch_size=BATCH_SIZE, out_of_distribution="warn"
            )
        seconds = time.perf_counter() - start
        if estimator == "same_distribution_probability":
            score = {"accuracy": float(np.mean((out > 0.5) == truth))}
        else:
            errors = np.abs(out - truth)
            score = {
                "mae": float(np.mean(errors)),
                "mae_stderr": float(np.std(errors) / np.sqrt(len(errors))),
                "relative_mae": float(
                    np.mean(errors / np.maximum(truth, 0.05))
                ),
            }
        rows[str(n)] = {**score, "seconds": round(seconds, 1)}
        print(estimator, f"d={d}", f"n={n}", rows[str(n)], flush=True)
    return {
        "estimator": estimator,
        "d": d,
        "reference_size": reference,
        "mean_truth": float(np.mean(truth)),
        "by_size": rows,
    }


def _grows(row, reference, pairs):
    """Whether the error at a size is clearly above the reference's: by
    more than 10 % and more than two standard errors (accuracy: lower by
    more than 0.02 and two binomial standard errors)."""
    if "accuracy" in row:
        a, b = row["accuracy"], reference["accuracy"]
        se = np.sqrt((a * (1 - a) + b * (1 - b)) / pairs)
        return b - a > max(0.02, 2 * se)
    se = np.hypot(row["mae_stderr"], reference["mae_stderr"])
    return row["mae"] - reference["mae"] > max(0.1 * reference["mae"], 2 * se)


def _preset_of(estimator, d):
    from keras_msets.estimators import routing

    for name, first, last in routing.route_spans(estimator):
        if first <= d <= last:
            return name
    raise ValueError(f"no preset serves {estimator} at d = {d}")


def set_size_ranges(record):
    """`{preset: {"low", "high", ...}}`: the sizes where each preset's
    error does not grow (`_grows`) from its measurement in `record`.

    Below the reference size: down to the smallest measured size that
    does not grow, else the trained low end. Above: up to the largest
    size before the first that grows, else the trained high end.
    """
    from keras_msets import zoo
    from keras_msets.estimators import routing

    presets = {}
    for case in record["cases"]:
        name = _preset_of(case["estimator"], case["d"])
        trained = routing.preset_spec(name).set_size
        rows = {int(n): row for n, row in case["by_size"].items()}
        reference = rows[case["reference_size"]]
        grows = {
            n: bool(_grows(row, reference, record["pairs"]))
            for n, row in rows.items()
        }
        low, high = trained
        for n in sorted(n for n in rows if n < trained[0]):
            if all(not grows[m] for m in rows if n <= m < trained[0]):
                low = min(low, n)
        for n in sorted(n for n in rows if n > trained[1]):
            if grows[n]:
                break
            high = n
        entry = presets.setdefault(
            name,
            {
                "low": low,
                "high": high,
                "trained": list(trained),
                "measured": {},
                "weights_sha256": zoo.info(name)["files_sha256"][
                    "model.weights.h5"
                ],
            },
        )
        entry["low"] = max(entry["low"], low)
        entry["high"] = min(entry["high"], high)
        entry["measured"][f"d{case['d']}"] = {
            str(n): {"grows": grows[n], **rows[n]} for n in sorted(rows)
        }
    return presets


def write_ranges(result_paths, output):
    records = [json.loads(pathlib.Path(p).read_text()) for p in result_paths]
    record = {
        "pairs": min(r["pairs"] for r in records),
        "cases": [case for r in records for case in r["cases"]],
    }
    ranges = {
        "source": [r["command"] for r in records],
        "rule": "the error at a size grows when it exceeds the error at a "
        "size inside the training range by more than 10 % and two "
        "standard errors (accuracy: lower by more than 0.02 and two "
        "standard errors)",
        "presets": set_size_ranges(record),
    }
    pathlib.Path(output).write_text(json.dumps(ranges, indent=2) + "\n")
    print(f"wrote {output}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 200, 1000])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--cases",
        nargs="+",
        default=None,
        help="ESTIMATOR:D cases to run (default: all of CASES)",
    )
    parser.add_argument(
        "--output", default=None, help="the result file (default: above)"
    )
    parser.add_argument(
        "--ranges-from",
        nargs="+",
        default=None,
        help="only write the estimators' set size ranges "
        "(keras_msets/estimators/set_size_ranges.json) from these result "
        "files",
    )
    args = parser.parse_args()
    if args.ranges_from:
        from keras_msets.estimators import out_of_distribution

        write_ranges(args.ranges_from, out_of_distribution.SET_SIZE_RANGES_PATH)
        return
    backend = keras.backend.backend()
    cases = CASES
    if args.cases:
        chosen = {tuple(c.split(":")) for c in args.cases}
        cases = [c for c in CASES if (c[0], str(c[1])) in chosen]
    RESULTS.mkdir(exist_ok=True)
    path = pathlib.Path(
        args.output or RESULTS / f"estimator_sample_size_{backend}.json"
    )
    command = (
        f"KERAS_BACKEND={backend} python benchmarks/estimator_sample_size.py "
        f"--pairs {args.pairs} --sizes {' '.join(map(str, args.sizes))} "
        f"--seed {args.seed}"
    )
    if args.cases:
        command += f" --cases {' '.join(args.cases)} --output {path}"
    record = {
        "command": command,
        "backend": backend,
        "pairs": args.pairs,
        "cases": [],
    }
    for estimator, d, reference in cases:
        record["cases"].append(
            _measure(estimator, d, reference, args.sizes, args.pairs, args.seed)
        )
        # Written after every case.
        path.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
