"""The shared `model.fit` recipe of the digit-sum presets.

Training follows DeBenedetto & Chiang (Sec. 5.1) and the reference code:
100k sequences of digits 1-9 of lengths 1-50 split 99/1 into train and dev,
mean squared error, Adam (epsilon 1e-3) with batch size 128, the learning
rate halved after 2 epochs without dev improvement, and early stopping after
10 (restoring the best weights). One deviation: the presets start from a
learning rate of 1e-3, not the reference code's 1e-4, which needed about ten
times more epochs to reach the same dev loss on 2 CPU cores (measured: dev
MSE 7.7 against 0.07 after 10 epochs of Complex DeepSets on task 2).
Accuracy is `round(prediction) == target` on fresh test sets of 10,000
sequences per length 5, 10, ..., 95.
"""

import time

import keras
import numpy as np

from keras_msets import data

TEST_LENGTHS = tuple(range(5, 100, 5))
LONG_LENGTH = 500


def fit(
    model,
    task,
    *,
    epochs=300,
    batch_size=128,
    learning_rate=1e-3,
    seed=0,
    verbose=2,
    readout_weight_decay=None,
):
    """Train `model` on digit-sum `task` ("sum" or "units_digit").

    `readout_weight_decay`, if given, uses AdamW with that decoupled weight
    decay on the readout layer's weights only (not in the paper; an
    experiment against states that only cancel each other, see
    benchmarks/RESULTS.md). Returns the `keras.callbacks.History` and the
    wall time in seconds.
    """
    keras.utils.set_random_seed(seed)
    (x_train, y_train), (x_dev, y_dev) = data.digit_sum_train_dev(
        task=task, seed=seed
    )
    if readout_weight_decay:
        optimizer = keras.optimizers.AdamW(
            learning_rate, weight_decay=readout_weight_decay, epsilon=1e-3
        )
        optimizer.exclude_from_weight_decay(
            var_list=[
                w for w in model.trainable_weights if "readout" not in w.path
            ]
        )
    else:
        optimizer = keras.optimizers.Adam(learning_rate, epsilon=1e-3)
    model.compile(optimizer=optimizer, loss="mse")
    callbacks = [
        keras.callbacks.ReduceLROnPlateau(
            monitor="val_loss", factor=0.5, patience=2, verbose=verbose
        ),
        keras.callbacks.EarlyStopping(
            monitor="val_loss",
            patience=10,
            restore_best_weights=True,
            verbose=verbose,
        ),
    ]
    start = time.time()
    history = model.fit(
        x_train,
        y_train,
        validation_data=(x_dev, y_dev),
        epochs=epochs,
        batch_size=batch_size,
        callbacks=callbacks,
        verbose=verbose,
    )
    return history, time.time() - start


def evaluate(
    model,
    task,
    lengths=TEST_LENGTHS,
    num_per_length=10_000,
    long_num=1_000,
    seed=1,
    verbose=1,
):
    """Accuracy per test length, plus the minimum over 5-95 and length 500.

    Returns a dict: `{"accuracy_by_length": {length: acc}, "min_accuracy":
    float, "accuracy_len_500": float}`. The test seed differs from the
    training seed, so these sequences were never seen in training.
    """
    test_sets = data.digit_sum_test_sets(
        task=task,
        lengths=tuple(lengths),
        num_per_length=num_per_length,
        seed=seed,
    )
    test_sets.update(
        data.digit_sum_test_sets(
            task=task,
            lengths=(LONG_LENGTH,),
            num_per_length=long_num,
            seed=seed,
        )
    )
    progress = keras.utils.Progbar(len(test_sets), verbose=verbose)
    accuracy = {}
    for i, (length, (x, y)) in enumerate(sorted(test_sets.items())):
        prediction = model.predict(x, batch_size=1000, verbose=0)
        accuracy[int(length)] = data.digit_sum_accuracy(y, prediction)
        progress.update(i + 1, [("accuracy", accuracy[int(length)])])
    in_range = [accuracy[int(n)] for n in lengths]
    return {
        "accuracy_by_length": {str(k): float(v) for k, v in accuracy.items()},
        "min_accuracy_5_95": float(np.min(in_range)),
        "mean_accuracy_5_95": float(np.mean(in_range)),
        f"accuracy_len_{LONG_LENGTH}": float(accuracy[LONG_LENGTH]),
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


def data_description(task, seed):
    """What a preset was trained and measured on, for its metadata."""
    return (
        f"keras_msets.data.digit_sum_train_dev(task={task!r}, seed={seed}): "
        "100,000 sequences of digits 1-9, lengths 1-50, split 99,000 train /"
        " 1,000 dev; test: digit_sum_test_sets(seed=1), 10,000 sequences per "
        "length 5, 10, ..., 95 and 1,000 of length 500"
    )


_TASK_TEXT = {
    "sum": "the sum of a multiset of digits 1-9 (task 1)",
    "units_digit": "the units digit of the sum of a multiset of digits 1-9 "
    "(task 2)",
}

_PAPER_RESULT = {
    ("ComplexDeepSets", "sum"): "100% at every length 5-95 (Fig. 3, left)",
    ("ComplexDeepSets", "units_digit"): "100% at every length 5-95 "
    "(Fig. 3, right)",
    ("DeepSets", "sum"): "100% at every length 5-95 (Fig. 3, left)",
    ("DeepSets", "units_digit"): "about 10%, chance level (Fig. 3, right)",
}


def train_preset(
    name,
    task,
    build_model,
    output_dir,
    *,
    epochs=300,
    learning_rate=1e-3,
    seed=0,
    verbose=2,
    **fit_kwargs,
):
    """Fit `build_model()` on `task`, evaluate it, write the preset folder."""
    model = build_model()
    history, seconds = fit(
        model,
        task,
        epochs=epochs,
        learning_rate=learning_rate,
        seed=seed,
        verbose=verbose,
        **fit_kwargs,
    )
    metrics = evaluate(model, task, verbose=verbose)
    metrics["epochs_run"] = len(history.history["loss"])
    metrics["best_val_loss"] = float(min(history.history["val_loss"]))
    metrics["train_seconds"] = round(seconds, 1)
    card = model_card(name, task, model, metrics, learning_rate, seed)
    # Imported here: the registry imports nothing from the recipes.
    from keras_msets.zoo import registry

    registry.save_preset(
        model,
        output_dir,
        data=data_description(task, seed),
        metrics=metrics,
        card=card,
        example_input=example_input(),
        extra={"task": task, "recipe_seed": seed},
    )
    return metrics


def example_input():
    """A fixed batch of 8 digit sets (lengths 1-60, padded) for metadata."""
    x, _ = data.make_digit_sum(8, min_length=1, max_length=60, seed=1234)
    return x


def model_card(name, task, model, metrics, learning_rate, seed):
    """The preset's README.md, filled with the metrics it reached."""
    family = type(model).__name__
    table = format_accuracy_table({name: metrics})
    variant = ""
    if getattr(model, "unit_modulus", False):
        variant = (
            "\nVariant: `unit_modulus=True`, transition weights on the unit "
            "circle, read out as `[cos, sin]` only (not the paper's readout, "
            "which also sees the sum of log-moduli and, trained by this "
            "recipe, was right only up to length 70; see the `ComplexDeepSets`"
            " docstring and benchmarks/RESULTS.md).\n"
        )
    return f"""# `{name}`

{family} trained to predict {_TASK_TEXT[task]}
(DeBenedetto & Chiang, "Representing Unordered Data Using Complex-Weighted
Multiset Automata", ICML 2020, Sec. 5).
{variant}
## Use

```python
import keras_msets

model = keras_msets.zoo.load("{name}")
prediction = model.predict(digits)  # round() it for the integer answer
```

- Input: int32 `[batch, length]`, digits 1-9, `0` = padding, any length
  (padding may sit anywhere: it is masked).
- Output: float32 `[batch, 1]`, a real-valued prediction of the target;
  accuracy is `round(prediction) == target`.
- Parameters: {model.count_params():,}; backend it was trained on:
  {keras.backend.backend()}; it loads on tensorflow, jax and torch.

## Training

`zoo/{name}/recipe.py` (re-run: `keras-msets zoo train {name}`):
{data_description(task, seed)}. Mean squared error, Adam (learning rate
{learning_rate}, epsilon 1e-3), batch 128, learning rate x0.5 after 2 epochs
without dev improvement, early stopping after 10 (best weights restored);
seed {seed}. It ran {metrics["epochs_run"]} epochs in
{metrics["train_seconds"]:.0f} s (best dev MSE {metrics["best_val_loss"]:.4g}).

## Results

Measured on fresh test data (seed 1, never seen in training). Re-measure
with `keras-msets zoo evaluate {name}`.

- minimum accuracy over lengths 5-95: {metrics["min_accuracy_5_95"]:.4f}
- mean accuracy over lengths 5-95: {metrics["mean_accuracy_5_95"]:.4f}
- accuracy at length {LONG_LENGTH} (1,000 sequences, ten times longer than
  any training sequence): {metrics[f"accuracy_len_{LONG_LENGTH}"]:.4f}
- the paper: {_PAPER_RESULT[(family, task)]}

{table}
"""


def run_from_command_line(train, description, flags=()):
    """The `python recipe.py [--output-dir DIR] [--epochs N]` entry point.

    `flags` lists extra boolean options `(flag, help)`; each is passed to
    `train` as a keyword (`--paper-readout` -> `paper_readout=True`).
    """
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--output-dir", default=None)
    parser.add_argument("--epochs", type=int, default=300)
    for flag, text in flags:
        parser.add_argument(flag, action="store_true", help=text)
    args = vars(parser.parse_args())
    print(train(args.pop("output_dir"), args.pop("epochs"), **args))


def recipe_functions(name, task, build_model, preset_dir, seed=0):
    """The `evaluate(model)` and `train(output_dir, epochs)` of a recipe.

    Every digit-sum recipe is this shared `model.fit` recipe applied to its
    own `build_model`; `train` writes into `preset_dir` unless told
    otherwise, and passes extra keywords to `build_model`.
    """

    def evaluate_preset(model, verbose=1):
        return evaluate(model, task, verbose=verbose)

    def train(output_dir=None, epochs=300, verbose=2, **model_kwargs):
        return train_preset(
            name,
            task,
            lambda: build_model(**model_kwargs),
            output_dir or preset_dir,
            epochs=epochs,
            seed=seed,
            verbose=verbose,
        )

    return evaluate_preset, train
