"""The digit-sum tasks: the sum of a multiset of digits, or its units digit.

Training follows DeBenedetto & Chiang (Sec. 5.1) and the reference code:
100k sequences of digits 1-9 of lengths 1-50 split 99/1 into train and dev,
mean squared error, Adam (epsilon 1e-3) with batch size 128, the learning
rate halved after 2 epochs without dev improvement, and early stopping after
10 (restoring the best weights). One deviation: the presets start from a
learning rate of 1e-3, not the reference code's 1e-4, to fit the training
budget of 2 CPU cores.
Accuracy is `round(prediction) == target` on fresh test sets of 10,000
sequences per length 5, 10, ..., 95 (seed 1, never used in training) and
1,000 of length 500.
"""

import keras
import numpy as np

from keras_msets import data
from keras_msets.data.digit_sum import TASKS as TARGETS
from keras_msets.training.task import Task
from keras_msets.utils.validation import check_choice
from keras_msets.utils.validation import check_positive_int

# The preset metadata's "task" of each target.
TASK_NAMES = {"sum": "digit_sum", "units_digit": "units_digit"}
TEST_LENGTHS = tuple(range(5, 100, 5))
LONG_LENGTH = 500
TEST_SEED = 1

# What the paper reports for each model family on each target.
PAPER_RESULT = {
    ("ComplexDeepSets", "sum"): "100% at every length 5-95 (Fig. 3, left)",
    ("ComplexDeepSets", "units_digit"): "100% at every length 5-95 "
    "(Fig. 3, right)",
    ("DeepSets", "sum"): "100% at every length 5-95 (Fig. 3, left)",
    ("DeepSets", "units_digit"): "about 10%, chance level (Fig. 3, right)",
}


def format_accuracy_table(metrics_by_model):
    """A markdown table: one row per length, one column per model."""
    names = list(metrics_by_model)
    lengths = sorted(
        int(n) for n in metrics_by_model[names[0]]["accuracy_by_length"]
    )
    lines = [
        "| length | " + " | ".join(names) + " |",
        "|---:|" + "---:|" * len(names),
    ]
    for n in lengths:
        cells = [
            f"{metrics_by_model[m]['accuracy_by_length'][str(n)]:.4f}"
            for m in names
        ]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def fit_record(metrics):
    """The "fit" record of `metrics`.

    Presets trained before the training layer existed store
    `epochs_run`, `best_val_loss` and `train_seconds` among their metrics
    instead; they are read from there.
    """
    if isinstance(metrics.get("fit"), dict):
        return metrics["fit"]
    return {
        "epochs_run": metrics.get("epochs_run"),
        "best_val_loss": metrics.get("best_val_loss"),
        "seconds": metrics.get("train_seconds"),
    }


class DigitSumTask(Task):
    """Predict the sum (`"sum"`) or its units digit (`"units_digit"`).

    Args:
        target: `"sum"` (task 1) or `"units_digit"` (task 2); the preset
            metadata's `"task"` is `"digit_sum"` or `"units_digit"`.
        lengths: the test lengths whose accuracies the card reports.
        num_per_length: test sequences per length.
        long_num: test sequences of length 500 (ten times the longest
            training sequence).

    Budget keys besides the shared ones: `readout_weight_decay` (AdamW
    with that decoupled weight decay on the readout's weights only; an
    experiment, not in the paper, see benchmarks/RESULTS.md).
    """

    loss = "mse"
    defaults = {
        "epochs": 300,
        "batch_size": 128,
        "learning_rate": 1e-3,
        "epsilon": 1e-3,
        "seed": 0,
    }

    def __init__(
        self,
        target,
        lengths=TEST_LENGTHS,
        num_per_length=10_000,
        long_num=1_000,
    ):
        self.target = check_choice("target", target, TARGETS)
        self.name = TASK_NAMES[self.target]
        self.lengths = tuple(lengths)
        self.num_per_length = check_positive_int(
            "num_per_length", num_per_length
        )
        self.long_num = check_positive_int("long_num", long_num)
        self._no_decay = []

    def optimizer(self, budget):
        decay = budget.get("readout_weight_decay")
        if not decay:
            return super().optimizer(budget)
        optimizer = keras.optimizers.AdamW(
            budget["learning_rate"],
            weight_decay=decay,
            epsilon=budget["epsilon"],
        )
        optimizer.exclude_from_weight_decay(var_list=self._no_decay)
        return optimizer

    def fit(self, model, budget, output_dir, verbose=2):
        decay = budget.get("readout_weight_decay")
        if decay:
            # Decay only the readout's weights: build the model first (from
            # the seed, as `fit` would), so that `optimizer` can name the
            # others.
            keras.utils.set_random_seed(budget["seed"])
            model(data.make_digit_sum(2, 1, 2, seed=0)[0])
            self._no_decay = [
                w for w in model.trainable_weights if "readout" not in w.path
            ]
        try:
            record = super().fit(model, budget, output_dir, verbose=verbose)
        finally:
            self._no_decay = []
        if decay:
            record["readout_weight_decay"] = decay
        return record

    def training_data(self, budget):
        return data.digit_sum_train_dev(task=self.target, seed=budget["seed"])

    def callbacks(self, budget, output_dir):
        return [
            keras.callbacks.ReduceLROnPlateau(
                monitor="val_loss", factor=0.5, patience=2
            ),
            keras.callbacks.EarlyStopping(
                monitor="val_loss", patience=10, restore_best_weights=True
            ),
        ]

    def evaluate(self, model, verbose=1):
        """Accuracy per test length, their minimum and mean, and length 500.

        Returns `{"accuracy_by_length": {"5": acc, ...},
        "min_accuracy_5_95", "mean_accuracy_5_95", "accuracy_len_500"}`.
        """
        test_sets = data.digit_sum_test_sets(
            task=self.target,
            lengths=self.lengths,
            num_per_length=self.num_per_length,
            seed=TEST_SEED,
        )
        test_sets.update(
            data.digit_sum_test_sets(
                task=self.target,
                lengths=(LONG_LENGTH,),
                num_per_length=self.long_num,
                seed=TEST_SEED,
            )
        )
        progress = keras.utils.Progbar(len(test_sets), verbose=verbose)
        accuracy = {}
        for i, (length, (x, y)) in enumerate(sorted(test_sets.items())):
            prediction = model.predict(x, batch_size=1000, verbose=0)
            accuracy[int(length)] = data.digit_sum_accuracy(y, prediction)
            progress.update(i + 1, [("accuracy", accuracy[int(length)])])
        in_range = [accuracy[int(n)] for n in self.lengths]
        return {
            "accuracy_by_length": {
                str(k): float(v) for k, v in accuracy.items()
            },
            "min_accuracy_5_95": float(np.min(in_range)),
            "mean_accuracy_5_95": float(np.mean(in_range)),
            f"accuracy_len_{LONG_LENGTH}": float(accuracy[LONG_LENGTH]),
        }

    def example_input(self):
        """A fixed batch of 8 digit sets (lengths 1-60, padded)."""
        x, _ = data.make_digit_sum(8, min_length=1, max_length=60, seed=1234)
        return x

    def data_description(self, budget):
        return (
            f"keras_msets.data.digit_sum_train_dev(task={self.target!r}, "
            f"seed={budget['seed']}): 100,000 sequences of digits 1-9, "
            "lengths 1-50, split 99,000 train / 1,000 dev; test: "
            f"digit_sum_test_sets(seed={TEST_SEED}), "
            f"{self.num_per_length:,} sequences per length 5, 10, ..., 95 "
            f"and {self.long_num:,} of length {LONG_LENGTH}"
        )

    def use_text(self, recipe):
        return f"""```python
import keras_msets

model = keras_msets.zoo.load("{recipe.name}")
prediction = model.predict(digits)  # round() it for the integer answer
```

- Input: int32 `[batch, length]`, digits 1-9, `0` = padding, any length
  (padding may sit anywhere: it is masked).
- Output: float32 `[batch, 1]`, a real-valued prediction of the target
  ({self.target}); accuracy is `round(prediction) == target`."""

    def training_text(self, recipe, metrics):
        budget = self.budget(recipe.budget)
        fit = fit_record(metrics)
        text = (
            f"{self.data_description(budget)}. Mean squared error, Adam "
            f"(learning rate {budget['learning_rate']}, epsilon "
            f"{budget['epsilon']}), batch {budget['batch_size']}, learning "
            "rate x0.5 after 2 epochs without dev improvement, early "
            "stopping after 10 (best weights restored); seed "
            f"{budget['seed']}."
        )
        if fit.get("epochs_run") is not None:
            text += (
                f" It ran {fit['epochs_run']} epochs in "
                f"{fit['seconds']:.0f} s (best dev MSE "
                f"{fit['best_val_loss']:.4g})."
            )
        return text

    def card_sections(self, recipe, metrics):
        paper = PAPER_RESULT.get((_family(recipe), self.target))
        lines = [
            f"Measured on fresh test data (seed {TEST_SEED}, never seen in "
            "training).",
            "",
            "- minimum accuracy over lengths 5-95: "
            f"{metrics['min_accuracy_5_95']:.4f}",
            "- mean accuracy over lengths 5-95: "
            f"{metrics['mean_accuracy_5_95']:.4f}",
            f"- accuracy at length {LONG_LENGTH} ({self.long_num:,} "
            "sequences, ten times longer\n  than any training sequence): "
            f"{metrics[f'accuracy_len_{LONG_LENGTH}']:.4f}",
        ]
        if paper:
            lines.append(f"- the paper: {paper}")
        lines += ["", format_accuracy_table({recipe.name: metrics})]
        return "\n".join(lines)


def _family(recipe):
    """The model class the recipe builds (`"DeepSets"`, ...), by name."""
    return type(recipe.build_model()).__name__
