"""The shared `model.fit` recipe of the Fusion Encoder Network presets.

A FEN with `sharing="all"` has one token encoder, one fusion encoder and one
decoder whatever the sequence length, so its weights trained at one length
load into the model of another. The recipes use that for a curriculum over
sequence length (our remedy, Sec. "FEN" of benchmarks/RESULTS.md): train at
a short length first, then copy the weights into the next, longer model.
Every stage is the paper's local training (`FusionEncoderNetwork.fit`): the
algorithm is unchanged, only the data it sees first is shorter.
"""

import time

import keras
import numpy as np


def fit_stages(
    build_model,
    stages,
    make_data,
    *,
    learning_rate,
    seed,
    verbose,
    checkpoint=None,
    advance_at=0.995,
):
    """Train `build_model(length)` through `stages` of `(length, epochs)`.

    A stage may be `(length, epochs, stage_learning_rate)` to override
    `learning_rate` for that stage.
    `make_data(length, split)` returns `(x, y)` for split "train" / "dev".
    Each stage compiles a fresh model of its length, loads the previous
    stage's weights, and fits with Adam at a constant learning rate (best
    dev weights restored; early stopping after 6 epochs without dev
    improvement). A stage that is not the last one ends as soon as its dev
    accuracy reaches `advance_at` (the curriculum moves on once a length is
    mastered). Measured on dyck1: halving the learning rate on plateaus
    slowed the sudden jump to full accuracy that local training makes at
    length 16, so it is not used. Returns the
    last model, the per-stage history and the wall time. With
    `checkpoint` (a `.weights.h5` path), the best dev weights so far are
    also written there after every epoch, so a long run that is stopped
    still leaves its best model behind.
    """
    keras.utils.set_random_seed(seed)
    weights = None
    history = []
    start = time.time()
    model = None
    for stage, (length, epochs, *rate) in enumerate(stages):
        last = stage == len(stages) - 1
        rate = float(rate[0]) if rate else learning_rate
        model = build_model(length)
        (x, y), (x_dev, y_dev) = (
            make_data(length, "train"),
            make_data(length, "dev"),
        )
        model(x[:2])
        if weights is not None:
            model.set_weights(weights)
        model.compile(
            optimizer=keras.optimizers.Adam(rate),
            loss=model_loss(model),
            metrics=["accuracy"],
        )
        result = model.fit(
            x,
            y,
            batch_size=64,
            epochs=epochs,
            validation_data=(x_dev, y_dev),
            callbacks=[
                keras.callbacks.EarlyStopping(
                    monitor="val_loss",
                    patience=6,
                    restore_best_weights=True,
                ),
            ]
            + (
                [
                    keras.callbacks.ModelCheckpoint(
                        str(checkpoint),
                        monitor="val_loss",
                        save_best_only=True,
                        save_weights_only=True,
                    )
                ]
                if checkpoint
                else []
            )
            + ([] if last else [_StopAtAccuracy(advance_at)]),
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
        weights = model.get_weights()
    return model, history, time.time() - start


class _StopAtAccuracy(keras.callbacks.Callback):
    def __init__(self, threshold):
        super().__init__()
        self.threshold = threshold

    def on_epoch_end(self, epoch, logs=None):
        if (logs or {}).get("val_accuracy", 0.0) >= self.threshold:
            self.model.stop_training = True


def model_loss(model):
    if model.output_dim == 1:
        return "binary_crossentropy"
    return "sparse_categorical_crossentropy"


def predict_labels(model, x, batch_size=256):
    p = np.asarray(model.predict(x, batch_size=batch_size, verbose=0))
    if p.shape[-1] == 1:
        return (p[:, 0] > 0.5).astype("int32")
    return p.argmax(-1).astype("int32")
