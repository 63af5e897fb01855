"""Fusion Encoder Network training: the paper's local training in stages.

A FEN with `sharing="all"` has one token encoder, one fusion encoder and
one decoder whatever the sequence length, so its weights trained at one
length load into the model of another. `FenCurriculumTask` uses that for a
curriculum over sequence length (our remedy, Sec. "FEN" of
benchmarks/RESULTS.md): train at a short length first, then copy the
weights into the next, longer model. Every stage is the paper's local
training (`FusionEncoderNetwork`'s `model.fit`): the algorithm is
unchanged, only the data it sees first is shorter. A single stage is plain
local training.
"""

import time
from pathlib import Path

import keras
import numpy as np

from keras_msets.models import FusionSegments
from keras_msets.models.fen.segments import padded_length
from keras_msets.training.task import Task

CHECKPOINT_FILE = "checkpoint.weights.h5"


def length_rates(length, power):
    """Per-segment learning rates proportional to segment length ** power.

    `segment_learning_rates` of a FEN of `length` tokens (Sec. 8: `eta_ij =
    eta_bar_ij`, normalised to mean 1), or `None` (uniform) for power 0.
    A positive power weights the long segments' losses.
    """
    if not power:
        return None
    spans = FusionSegments(padded_length(length)).segments
    eta = np.array([(j - i + 1) ** power for i, j in spans])
    return np.stack([eta / eta.mean()] * 2, axis=1)


def stage_model(model, length):
    """A new FEN like `model` (same config) for inputs of `length` tokens.

    Per-segment learning rates that depend on the segment's length only
    (the `rate_power` experiments) are carried over by segment length and
    normalised to mean 1 over the new model's segments.
    """
    config = model.get_config()
    config["sequence_length"] = int(length)
    rates = config.get("segment_learning_rates")
    if rates is not None:
        by_length = {
            j - i + 1: row
            for (i, j), row in zip(
                model.segments.segments, np.asarray(rates), strict=True
            )
        }
        spans = FusionSegments(padded_length(length)).segments
        rows = np.stack([by_length[j - i + 1] for i, j in spans])
        config["segment_learning_rates"] = (rows / rows.mean(axis=0)).tolist()
    return type(model).from_config(config)


def model_loss(model):
    """The cross-entropy that matches the FEN's output width."""
    width = model.compute_output_shape((None, model.sequence_length))[-1]
    if width == 1:
        return "binary_crossentropy"
    return "sparse_categorical_crossentropy"


def predict_labels(model, x, batch_size=256):
    """Class labels of a FEN's predictions (threshold 0.5 for one output)."""
    p = np.asarray(model.predict(x, batch_size=batch_size, verbose=0))
    if p.shape[-1] == 1:
        return (p[:, 0] > 0.5).astype("int32")
    return p.argmax(-1).astype("int32")


class _StopAtAccuracy(keras.callbacks.Callback):
    def __init__(self, threshold):
        super().__init__()
        self.threshold = threshold

    def on_epoch_end(self, epoch, logs=None):
        if (logs or {}).get("val_accuracy", 0.0) >= self.threshold:
            self.model.stop_training = True


def fit_stages(
    model,
    stages,
    make_data,
    *,
    learning_rate,
    batch_size=64,
    seed=0,
    verbose=2,
    checkpoint=None,
    advance_at=0.995,
):
    """Train `model` through `stages` of `(length, epochs[, rate])`.

    `make_data(length, split)` returns `(x, y)` for split "train" / "dev".
    Each stage but the last fits a new model of its length
    (`stage_model`); the last stage fits `model` itself. Each stage starts
    from the previous stage's weights and fits with Adam at a constant
    learning rate (the stage's own `rate`, else `learning_rate`), best dev
    weights restored, early stopping after 6 epochs without dev
    improvement. A stage that is not the last one ends as soon as its dev
    accuracy reaches `advance_at` (the curriculum moves on once a length
    is mastered). Measured on dyck1: halving the learning rate on plateaus
    slowed the sudden jump to full accuracy that local training makes at
    length 16, so it is not used. With `checkpoint` (a `.weights.h5`
    path), the best dev weights so far are also written there after every
    epoch, so a long run that is stopped still leaves its best model.

    Returns:
        `(history, seconds)`: one record per stage, and the wall time.
    """
    keras.utils.set_random_seed(seed)
    weights = None
    history = []
    start = time.time()
    for stage, (length, epochs, *rate) in enumerate(stages):
        last = stage == len(stages) - 1
        rate = float(rate[0]) if rate else learning_rate
        current = model if last else stage_model(model, length)
        (x, y), (x_dev, y_dev) = (
            make_data(length, "train"),
            make_data(length, "dev"),
        )
        current(x[:2])
        if weights is not None:
            current.set_weights(weights)
        current.compile(
            optimizer=keras.optimizers.Adam(rate),
            loss=model_loss(current),
            metrics=["accuracy"],
        )
        callbacks = [
            keras.callbacks.EarlyStopping(
                monitor="val_loss", patience=6, restore_best_weights=True
            )
        ]
        if checkpoint:
            callbacks.append(
                keras.callbacks.ModelCheckpoint(
                    str(checkpoint),
                    monitor="val_loss",
                    save_best_only=True,
                    save_weights_only=True,
                )
            )
        if not last:
            callbacks.append(_StopAtAccuracy(advance_at))
        result = current.fit(
            x,
            y,
            batch_size=batch_size,
            epochs=epochs,
            validation_data=(x_dev, y_dev),
            callbacks=callbacks,
            verbose=verbose,
        )
        history.append(
            {
                "length": int(length),
                "epochs_run": len(result.history["loss"]),
                "learning_rate": rate,
                "best_val_loss": float(min(result.history["val_loss"])),
                "best_val_accuracy": float(max(result.history["val_accuracy"])),
            }
        )
        weights = current.get_weights()
    return history, time.time() - start


def fit_record(metrics):
    """The training record of `metrics`: its "fit", else `metrics` itself.

    Presets trained before the training layer existed keep `stages` and
    `train_seconds` among their metrics.
    """
    fit = metrics.get("fit")
    return fit if isinstance(fit, dict) else metrics


class FenCurriculumTask(Task):
    """A task trained by `fit_stages`; subclasses give `make_data`.

    Budget keys: `stages` (`(length, epochs[, learning_rate])` tuples),
    `learning_rate`, `batch_size`, `seed`; `epochs` and
    `last_learning_rate` override the last stage's; `checkpoint_dir`
    (default: the output folder) holds the best weights while training
    runs (removed at the end).
    """

    loss = "binary_crossentropy"
    metrics = ("accuracy",)
    defaults = {"batch_size": 64, "epochs": None}

    def make_data(self, length, split):
        """`(x, y)` of `split` ("train" or "dev") at `length` tokens."""
        raise NotImplementedError

    def stages(self, budget):
        """The budget's stages, its last one overridden as asked."""
        stages = [tuple(s) for s in budget["stages"]]
        length, epochs, *rate = stages[-1]
        if budget.get("epochs") is not None:
            epochs = budget["epochs"]
        if budget.get("last_learning_rate") is not None:
            rate = [budget["last_learning_rate"]]
        return stages[:-1] + [(length, epochs, *rate)]

    def fit(self, model, budget, output_dir, verbose=2):
        folder = Path(budget.get("checkpoint_dir") or output_dir)
        folder.mkdir(parents=True, exist_ok=True)
        checkpoint = folder / CHECKPOINT_FILE
        history, seconds = fit_stages(
            model,
            self.stages(budget),
            self.make_data,
            learning_rate=budget["learning_rate"],
            batch_size=budget["batch_size"],
            seed=budget["seed"],
            verbose=verbose,
            checkpoint=checkpoint,
        )
        checkpoint.unlink(missing_ok=True)
        return {
            "backend": keras.backend.backend(),
            "learning_rate": budget["learning_rate"],
            "batch_size": budget["batch_size"],
            "seed": budget["seed"],
            "stages": history,
            "train_seconds": round(seconds, 1),
        }

    def stages_text(self, metrics, learning_rate):
        """The stages that ran, in words, for the card."""
        return ", ".join(
            f"{s['length']} ({s['epochs_run']} epochs at learning rate "
            f"{s.get('learning_rate', learning_rate):g}, best dev accuracy "
            f"{s['best_val_accuracy']:.4f})"
            for s in fit_record(metrics)["stages"]
        )
