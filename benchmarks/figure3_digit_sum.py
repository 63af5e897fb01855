"""Figure 3 of DeBenedetto & Chiang (ICML 2020): accuracy against length.

Both panels: task 1 (sum of digits) and task 2 (units digit of the sum),
for Complex DeepSets, DeepSets, LSTM and GRU. The two DeepSets models are
the zoo presets (trained by their recipes); the LSTM and GRU are trained
here with the same recipe (`keras_msets.training.tasks.DigitSumTask`), capped
at `--rnn-epochs` epochs because recurrent layers are slow on 2 CPU cores.

    KERAS_BACKEND=jax python benchmarks/figure3_digit_sum.py \
        [--rnn-epochs 10] [--num-per-length 10000]

`--rnn-results FILE` takes the LSTM and GRU rows from an earlier run's
JSON instead of training them again (the presets are always measured
anew; the file's settings are kept under `settings["rnn_results_from"]`):
that redraws the figure for a changed preset in minutes.

Writes `benchmarks/figure3_digit_sum.png` and
`benchmarks/results/figure3_digit_sum.json`, and prints a markdown table for
`benchmarks/RESULTS.md`.
"""

import argparse
import json
import time
from pathlib import Path

import keras
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from keras_msets import models
from keras_msets import zoo
from keras_msets.training.tasks import DigitSumTask
from keras_msets.training.tasks import digit_sum

HERE = Path(__file__).parent
TASKS = {"sum": "Task 1: sum", "units_digit": "Task 2: units digit"}
PRESETS = {
    "sum": {
        "Complex DeepSets": "complex_deepsets_digit_sum",
        "DeepSets": "deepsets_digit_sum",
    },
    "units_digit": {
        "Complex DeepSets": "complex_deepsets_units_digit",
        "DeepSets": "deepsets_units_digit",
    },
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rnn-epochs", type=int, default=10)
    parser.add_argument("--num-per-length", type=int, default=10_000)
    parser.add_argument(
        "--rnn-results",
        type=Path,
        default=None,
        help="JSON of an earlier run: take its LSTM and GRU rows instead of "
        "training them",
    )
    args = parser.parse_args()
    earlier = None
    if args.rnn_results is not None:
        earlier = json.loads(args.rnn_results.read_text())
        if earlier["settings"]["num_per_length"] != args.num_per_length:
            raise ValueError(
                "`--num-per-length` must equal the earlier run's "
                f"({earlier['settings']['num_per_length']}) to reuse its "
                f"rows. Received: --num-per-length {args.num_per_length}"
            )

    results = {}
    presets_sha256 = {}
    for task in TASKS:
        results[task] = {}
        digits = DigitSumTask(task, num_per_length=args.num_per_length)
        for label, preset in PRESETS[task].items():
            model = zoo.load(preset)
            results[task][label] = digits.evaluate(model, verbose=0)
            presets_sha256[preset] = zoo.info(preset)["files_sha256"]
        for rnn_type, label in (("lstm", "LSTM"), ("gru", "GRU")):
            if earlier is not None:
                results[task][label] = earlier[task][label]
                continue
            model = models.RecurrentBaseline(rnn_type)
            budget = digits.budget({"epochs": args.rnn_epochs})
            fit = digits.fit(model, budget, output_dir=None, verbose=2)
            metrics = digits.evaluate(model, verbose=0)
            metrics["epochs_run"] = fit["epochs_run"]
            metrics["train_seconds"] = fit["seconds"]
            results[task][label] = metrics
        print(f"\n{TASKS[task]} ({keras.backend.backend()})")
        print(digit_sum.format_accuracy_table(results[task]))

    out = HERE / "results"
    out.mkdir(exist_ok=True)
    results["settings"] = {
        "backend": keras.backend.backend(),
        "rnn_epochs": args.rnn_epochs,
        "num_per_length": args.num_per_length,
        "date": time.strftime("%Y-%m-%d"),
        "presets_sha256": presets_sha256,
    }
    if earlier is not None:
        results["settings"]["rnn_epochs"] = earlier["settings"]["rnn_epochs"]
        results["settings"]["rnn_results_from"] = earlier["settings"]
    (out / "figure3_digit_sum.json").write_text(json.dumps(results, indent=2))

    figure, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for axis, (task, title) in zip(axes, TASKS.items(), strict=True):
        for label, metrics in results[task].items():
            by_length = metrics["accuracy_by_length"]
            lengths = [n for n in sorted(map(int, by_length)) if n < 100]
            axis.plot(
                lengths,
                [by_length[str(n)] for n in lengths],
                marker="o",
                markersize=3,
                label=label,
            )
        axis.set_title(title)
        axis.set_xlabel("test sequence length")
        axis.set_ylim(0, 1.05)
    axes[0].set_ylabel("accuracy")
    axes[1].legend()
    figure.tight_layout()
    figure.savefig(HERE / "figure3_digit_sum.png", dpi=120)


if __name__ == "__main__":
    main()
