"""Training an epoch of `SetBatches` in resumable pieces.

`fit_in_chunks` runs plain `model.fit` on consecutive runs of one epoch's
batches and, after each piece, saves the weights and the optimizer state
to a checkpoint folder (atomic renames), so that an interrupted run
resumes where it stopped with the batches it would have seen. Used by
`set_batches.fit_sets`.
"""

import json
import os
import time
from pathlib import Path

import keras

CHECKPOINT_WEIGHTS = "model.weights.h5"
CHECKPOINT_PROGRESS = "progress.json"


class _Chunk(keras.utils.PyDataset):
    """Batches `start .. start + count - 1` of one epoch of a `SetBatches`.

    The same items (every micro-batch) as the whole epoch serves at those
    places, for training an epoch in pieces (`fit_in_chunks`).
    """

    def __init__(self, batches, epoch, start, count):
        super().__init__(workers=batches.workers)
        self.batches = batches
        self.epoch = epoch
        self.first = start * batches.micro_batches
        self.count = count * batches.micro_batches

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        if not 0 <= index < self.count:
            raise IndexError(index)
        return self.batches.item(self.epoch, self.first + index)


def _load_checkpoint(model, folder, settings):
    """The chunks `folder` records (restoring its weights), or []."""
    progress_path = folder / CHECKPOINT_PROGRESS
    if not progress_path.is_file():
        return []
    progress = json.loads(progress_path.read_text())
    if progress.get("settings") != settings:
        differ = sorted(
            key
            for key in set(settings) | set(progress.get("settings") or {})
            if settings.get(key) != (progress.get("settings") or {}).get(key)
        )
        raise ValueError(
            f"`checkpoint_dir` {str(folder)!r} holds a run with other "
            f"settings (they differ in {differ}): {progress.get('settings')}"
            f"; expected {settings}. Pass another folder, or delete this "
            "one to start afresh."
        )
    # Adam's moments and step count are in the weights file: build the
    # optimizer's variables so that they load too.
    model.optimizer.build(model.trainable_variables)
    model.load_weights(folder / CHECKPOINT_WEIGHTS)
    return progress["chunks"]


def _save_checkpoint(model, folder, settings, chunks):
    """Writes weights then progress, each by an atomic rename."""
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f"partial.{CHECKPOINT_WEIGHTS}"
    model.save_weights(partial)
    os.replace(partial, folder / CHECKPOINT_WEIGHTS)
    partial = folder / f"{CHECKPOINT_PROGRESS}.partial"
    partial.write_text(
        json.dumps({"settings": settings, "chunks": chunks}, indent=1)
    )
    os.replace(partial, folder / CHECKPOINT_PROGRESS)


def fit_in_chunks(
    model, dataset, epochs, per_epoch, every, folder, settings, fit_kwargs
):
    """Trains `epochs` x `per_epoch` batches, `every` at a time, saving
    the weights and optimizer state into `folder` after each piece and
    resuming from it. Returns (loss per epoch, seconds, chunks resumed)."""
    folder = Path(folder)
    if not model.built:
        # Loading weights needs them built: one pair of the first batch.
        inputs = dataset.batch(1, 0)[0]
        model(keras.tree.map_structure(lambda a: a[:1], inputs))
    chunks = _load_checkpoint(model, folder, settings)
    resumed = len(chunks)
    done = {(c["epoch"], c["start"]) for c in chunks}
    for epoch in range(epochs):
        for start in range(0, per_epoch, every):
            if (epoch, start) in done:
                continue
            count = min(every, per_epoch - start)
            begin = time.time()
            # `fit` advances a PyDataset's epoch once before it trains
            # (`EpochIterator.reset`), so the batches of an uninterrupted
            # run's epoch `e` are those of `SetBatches` epoch `e + 1`.
            history = model.fit(
                _Chunk(dataset, epoch + 1, start, count),
                epochs=1,
                **fit_kwargs,
            )
            chunks.append(
                {
                    "epoch": epoch,
                    "start": start,
                    "count": count,
                    "loss": float(history.history["loss"][-1]),
                    "seconds": round(time.time() - begin, 1),
                }
            )
            _save_checkpoint(model, folder, settings, chunks)
    losses = []
    for epoch in range(epochs):
        parts = [c for c in chunks if c["epoch"] == epoch]
        total = sum(c["count"] for c in parts)
        losses.append(sum(c["loss"] * c["count"] for c in parts) / total)
    seconds = sum(c["seconds"] for c in chunks)
    return losses, seconds, resumed
