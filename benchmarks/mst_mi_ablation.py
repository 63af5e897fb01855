"""What the mutual-information model needs to learn in a short run.

The first `mst_mutual_information` preset (App. B settings: the MI itself
as the target, learning rate 1e-4, 300 batches) learned nothing: at
d = 2, 10 and 20 it was worse than always answering the median label.
This script trains the App. B model (`mst.build_model`) from the
same initial weights on the same batches in each of these variants and
scores it on fresh test pairs:

- `total`: the model's output is the MI (the paper's set-up);
- `per_coordinate`: the model's output is its decoder's times d
  (`MultiSetTransformer(scale_output_by_dim=True)`) and the squared error
  has sample weight d**-2, i.e. the decoder is trained on the MI per
  coordinate, `-(1/2) log(1 - rho^2)`, which does not depend on d. The
  max over coordinates (Sec. 3.5) leaves the model nearly blind to d, so
  it can hardly answer a quantity proportional to d otherwise;

each at every learning rate of `--learning-rates`. Training: batches of
64 pairs in d = 2..20 (`mst.fit_estimator`, seed 0), as the
recipe. Test: `--test-pairs` fresh pairs per d of `--eval-dims` (the
recipe's test sets, seed 2**32 + d), mean absolute error in nats beside
KSG (k = 3) on the same pairs and the best constant (always the median
test label), as `mst.evaluate_mutual_information` reports them.

    KERAS_BACKEND=tensorflow python benchmarks/mst_mi_ablation.py \
        --steps 100 --variants per_coordinate total \
        --learning-rates 0.001 0.0001

Rows already in the output file (same variant, learning rate and steps)
are kept and skipped, so a stopped run resumes, and several processes can
run with their own `--output` and be merged by hand. Writes
`benchmarks/results/mst_mi_ablation.json` and prints a markdown table.
"""

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import keras
import numpy as np

from keras_msets.training.tasks import mst

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "results" / "mst_mi_ablation.json"
VARIANTS = {
    # name: (scale_output_by_dim, dim_weight_power)
    "total": (False, 0),
    "per_coordinate": (True, -2),
}
TRAIN_DIMS = tuple(range(2, 21))
EVAL_DIMS = (2, 10, 20)


def _parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument(
        "--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS
    )
    parser.add_argument(
        "--learning-rates", nargs="+", type=float, default=[1e-3, 1e-4]
    )
    parser.add_argument("--test-pairs", type=int, default=200)
    parser.add_argument(
        "--train-dims", nargs="+", type=int, default=list(TRAIN_DIMS)
    )
    parser.add_argument(
        "--eval-dims", nargs="+", type=int, default=list(EVAL_DIMS)
    )
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--output", default=str(OUTPUT))
    return parser.parse_args(argv)


def _key(row):
    return (row["variant"], row["learning_rate"], row["steps"])


def run_variant(variant, learning_rate, args, model_overrides=None):
    """Trains one variant from seed 0 and returns its row."""
    scale, power = VARIANTS[variant]
    keras.utils.set_random_seed(0)
    model = mst.build_model(
        "mutual_information",
        scale_output_by_dim=scale,
        **(model_overrides or {}),
    )
    fit = mst.fit_estimator(
        model,
        "mutual_information",
        list(args.train_dims),
        steps=args.steps,
        batch_size=args.batch_size,
        learning_rate=learning_rate,
        dim_weight_power=power,
        epoch_steps=args.steps,
        seed=0,
        verbose=0,
    )
    metrics = mst.evaluate_mutual_information(
        model, dims=tuple(args.eval_dims), num=args.test_pairs
    )
    return {
        "variant": variant,
        "learning_rate": learning_rate,
        "steps": fit["steps"],
        "seconds": fit["seconds"],
        "final_loss": fit["loss"][-1],
        "metrics": metrics,
    }


def table(rows, dims):
    head = "| variant | learning rate | steps | " + " | ".join(
        f"d = {d}: ours / KSG / constant" for d in dims
    )
    lines = [head + " |", "|---" * (3 + len(dims)) + "|"]
    for row in rows:
        m = row["metrics"]
        cells = [
            f"{m[f'mae_d{d}']:.3f} / {m[f'ksg_mae_d{d}']:.3f} / "
            f"{m[f'median_mae_d{d}']:.3f}"
            for d in dims
        ]
        lines.append(
            f"| {row['variant']} | {row['learning_rate']:g} | "
            f"{row['steps']} | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines)


def main(argv=None, model_overrides=None):
    args = _parse(argv)
    output = Path(args.output)
    results = {"rows": []}
    if output.is_file():
        results = json.loads(output.read_text())
    done = {_key(r) for r in results["rows"]}
    for variant in args.variants:
        for learning_rate in args.learning_rates:
            key = (variant, learning_rate, args.steps)
            if key in done:
                print(f"kept: {key}")
                continue
            start = time.time()
            row = run_variant(variant, learning_rate, args, model_overrides)
            print(f"{key}: {time.time() - start:.0f} s", flush=True)
            results["rows"].append(row)
            results.update(
                {
                    "backend": keras.backend.backend(),
                    "python": sys.version.split()[0],
                    "machine": platform.machine(),
                    "test_pairs": args.test_pairs,
                    "train_dims": list(args.train_dims),
                    "eval_dims": list(args.eval_dims),
                    "batch_size": args.batch_size,
                    "command": "python benchmarks/mst_mi_ablation.py "
                    + " ".join(argv if argv is not None else sys.argv[1:]),
                }
            )
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text(json.dumps(results, indent=1) + "\n")
    print(table(results["rows"], args.eval_dims))
    return results


if __name__ == "__main__":
    np.set_printoptions(precision=4)
    main()
