"""Fresh synthetic batches for `model.fit`, and training in resumable pieces.

Selby et al. (UAI 2022) train every model on fresh synthetic batches, one
per step (App. B: "we trained for 100,000 batches of size 64"). Here
`SetBatches`, a `keras.utils.PyDataset`, draws each batch from a task's
`make_batch` with its own seed, and `fit_sets` runs plain `model.fit` on
it, optionally in pieces that save the weights and optimizer state to a
checkpoint folder and resume from it.

Seeds: batch `i` of epoch `e` uses the generator seed
`SeedSequence([seed, e, i])` (below 2**32); the tasks' test sets use
seeds from 2**32 up, so no test set is ever drawn in training.
"""

import math
import threading
import time

import keras
import numpy as np

from keras_msets.training.chunked_fit import fit_in_chunks
from keras_msets.training.set_buckets import draw_bucket
from keras_msets.utils.validation import check_positive_int


def batch_seed(*entropy):
    """The generator seed of one batch, below 2**32."""
    return int(np.random.SeedSequence(list(entropy)).generate_state(1)[0])


class SetBatches(keras.utils.PyDataset):
    """Fresh training batches of one task, drawn on demand.

    Batch `index` of epoch `e` is `task.make_batch(batch_size, d,
    SeedSequence([seed, e, index]), set_size)`, so a run is reproducible
    and every epoch sees new data. The dimension `d` of each batch comes
    from `dims` in random order, each `d` once per block of `len(dims)`
    consecutive batches (balanced, and consecutive batches differ in `d`,
    which lets TensorFlow's input signature, inferred from the first two
    batches, leave `d` free).

    Args:
        task: a set task (`keras_msets.training.tasks.SetTask`).
        batch_size: pairs per batch.
        steps_per_epoch: batches per epoch (`len()`).
        dims: the dimensions to draw from; None: the task's training
            dimensions (None for tasks without one, such as counting).
        seed: non-negative integer.
        set_size: `(low, high)`; None: the task's.
        dim_weight_power: 0 (the default): batches are `(inputs,
            targets)`; otherwise `(inputs, targets, weights)` with every
            sample weight `d**dim_weight_power`.
        bucket_multiple: None (the default: every batch drawn from the
            whole `set_size` range and padded to its top), or a positive
            integer: each batch draws its sizes from one bucket of
            `keras_msets.training.set_buckets.bucket_ranges(low, high,
            bucket_multiple)` (seeded by `[seed, 2, epoch, index]`) and
            is padded to the bucket's top, so JAX compiles one step per
            bucket and no batch pays for the full width. Each set's size
            keeps its uniform distribution on `set_size`.
        micro_batches: 1 (the default), or a divisor `k` of `batch_size`:
            each batch is served as `k` consecutive slices of
            `batch_size // k` pairs (`len()` is then `k *
            steps_per_epoch`), the same pairs in the same order, for
            training with `gradient_accumulation_steps=k`.
        **kwargs: `keras.utils.PyDataset` arguments (`workers`, ...).
    """

    def __init__(
        self,
        task,
        batch_size,
        steps_per_epoch,
        dims=None,
        seed=0,
        set_size=None,
        dim_weight_power=0,
        micro_batches=1,
        bucket_multiple=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.bucket_multiple = check_positive_int(
            "bucket_multiple", bucket_multiple, allow_none=True
        )
        self.task = task
        self.batch_size = check_positive_int("batch_size", batch_size)
        self.micro_batches = check_positive_int("micro_batches", micro_batches)
        if self.batch_size % self.micro_batches:
            raise ValueError(
                "`micro_batches` must divide `batch_size` (every slice of a "
                "batch the same size, so that the mean of their losses is "
                f"the batch's). Received: micro_batches={micro_batches}, "
                f"batch_size={batch_size}"
            )
        # The last whole batch drawn, sliced by the next micro-batches.
        self._cached = (None, None)
        self._lock = threading.Lock()
        self.steps_per_epoch = check_positive_int(
            "steps_per_epoch", steps_per_epoch
        )
        self.dims = task.check_dims(dims)
        self.seed = int(seed)
        self.set_size = set_size
        if (
            isinstance(dim_weight_power, bool)
            or not isinstance(dim_weight_power, (int, float))
            or not math.isfinite(dim_weight_power)
        ):
            raise ValueError(
                "`dim_weight_power` must be a finite number. Received: "
                f"dim_weight_power={dim_weight_power!r}"
            )
        if dim_weight_power and self.dims is None:
            raise ValueError(
                "`dim_weight_power` needs batches with a dimension d; task "
                f"{task.name!r} has none. Received: dim_weight_power="
                f"{dim_weight_power}"
            )
        self.dim_weight_power = dim_weight_power
        self.epoch = 0

    def __len__(self):
        return self.steps_per_epoch * self.micro_batches

    def dim_of(self, epoch, index):
        """The dimension of batch `index` of `epoch` (None without one)."""
        if self.dims is None:
            return None
        step = epoch * self.steps_per_epoch + index
        block, position = divmod(step, len(self.dims))
        order = np.random.default_rng([self.seed, 1, block]).permutation(
            len(self.dims)
        )
        return self.dims[order[position]]

    def batch(self, epoch, index):
        dim = self.dim_of(epoch, index)
        set_size = self.set_size
        if self.bucket_multiple:
            low, high = set_size or self.task.set_size
            rng = np.random.default_rng([self.seed, 2, epoch, index])
            set_size = draw_bucket(rng, low, high, self.bucket_multiple)
        inputs, targets = self.task.make_batch(
            self.batch_size,
            dim,
            batch_seed(self.seed, epoch, index),
            set_size,
        )
        if not self.dim_weight_power:
            return inputs, targets
        weight = float(dim) ** self.dim_weight_power
        return inputs, targets, np.full(len(targets), weight, np.float32)

    def __getitem__(self, index):
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self.item(self.epoch, index)

    def item(self, epoch, index):
        """Item `index` of `epoch` (a batch, or a slice of one)."""
        if self.micro_batches == 1:
            return self.batch(epoch, index)
        step, part = divmod(index, self.micro_batches)
        key = (epoch, step)
        with self._lock:
            cached_key, batch = self._cached
            if cached_key != key:
                batch = self.batch(*key)
                self._cached = (key, batch)
        size = self.batch_size // self.micro_batches
        return keras.tree.map_structure(
            lambda a: a[part * size : (part + 1) * size], batch
        )

    def on_epoch_end(self):
        self.epoch += 1


def fit_sets(
    model,
    task,
    dims=None,
    steps=1000,
    batch_size=None,
    learning_rate=None,
    *,
    loss=None,
    seed=0,
    set_size=None,
    epoch_steps=500,
    callbacks=None,
    verbose=2,
    workers=1,
    dim_weight_power=None,
    gradient_accumulation_steps=None,
    shuffle=None,
    checkpoint_dir=None,
    checkpoint_steps=None,
    bucket_multiple=None,
):
    """Trains `model` on `task` with fresh batches and plain `model.fit`.

    Adam at a constant learning rate (App. B gives no schedule), one new
    batch per step from `SetBatches`.

    Args:
        model: a model taking the task's inputs.
        task: a set task (`keras_msets.training.tasks.SetTask`): its
            batches, and the defaults of the arguments left None.
        dims: the dimension(s) to train on: an int or a sequence drawn
            from in balanced random order; None: the task's.
        steps: number of training batches (rounded up to whole epochs:
            `epochs = ceil(steps / max(epoch_steps, 2))` epochs of
            `ceil(steps / epochs)` batches).
        batch_size: None: the task's (App. B).
        learning_rate: None: the task's (App. B).
        loss: None: the task's.
        seed: seeds the batches and `keras.utils.set_random_seed`.
        set_size: `(low, high)`; None: the task's.
        epoch_steps: batches per Keras epoch (one log line each).
        callbacks: extra Keras callbacks.
        verbose: `model.fit` verbosity.
        workers: `PyDataset` workers (threads) preparing batches.
        dim_weight_power: sample weight `d**dim_weight_power` for every
            pair of a batch of dimension `d`; None: the task's.
        gradient_accumulation_steps: None or 1: one Adam step per batch.
            An integer `k >= 2` dividing `batch_size`: each batch runs as
            `k` slices and Adam applies the mean of their gradients once
            (the gradient of the whole batch in a `k`-th of the
            activation memory). On TensorFlow only with a single
            dimension.
        shuffle: `model.fit`'s `shuffle`. None: True without gradient
            accumulation or checkpoints (what the shipped presets were
            trained with), False with either (True is then an error).
        checkpoint_dir: None, or a folder (never a preset folder) in
            which to save the weights and optimizer state every
            `checkpoint_steps` batches, and from which a call with the
            same arguments resumes; the batches are those of the
            uninterrupted run. A folder saved with other arguments is an
            error.
        checkpoint_steps: batches between checkpoints; None: one per
            epoch. Only with `checkpoint_dir`.
        bucket_multiple: None (every batch padded to the top of
            `set_size`, as the shipped presets were trained) or a positive
            integer: batches drawn by set-size bucket (`SetBatches`).

    Returns:
        A dict for the preset's metadata: `"loss"` (per epoch), `"steps"`,
        `"seconds"`, `"steps_per_second"` and the settings used (with a
        checkpoint, also `"checkpoint_steps"` and `"resumed_chunks"`).
    """
    steps = check_positive_int("steps", steps)
    epoch_steps = check_positive_int("epoch_steps", epoch_steps)
    batch_size = batch_size or task.batch_size
    learning_rate = learning_rate or task.learning_rate
    loss = loss or task.loss
    if dim_weight_power is None:
        dim_weight_power = task.dim_weight_power
    dims = task.check_dims(dims)
    accumulate = 1
    if gradient_accumulation_steps is not None:
        accumulate = check_positive_int(
            "gradient_accumulation_steps", gradient_accumulation_steps
        )
    if shuffle is None:
        shuffle = accumulate == 1 and checkpoint_dir is None
    if shuffle and checkpoint_dir is not None:
        raise ValueError(
            "`shuffle=True` would shuffle the batches within each piece "
            "between checkpoints only, an order no uninterrupted run has; "
            f"pass shuffle=False or None. Received: shuffle={shuffle}, "
            f"checkpoint_dir={str(checkpoint_dir)!r}"
        )
    if shuffle and accumulate > 1:
        raise ValueError(
            "`shuffle=True` would separate the slices of a batch that "
            "gradient accumulation adds up; pass shuffle=False or None. "
            f"Received: shuffle={shuffle}, gradient_accumulation_steps="
            f"{accumulate}"
        )
    if (
        (accumulate > 1 or steps < 2)
        and dims is not None
        and len(dims) > 1
        and keras.backend.backend() == "tensorflow"
    ):
        # Keras infers TensorFlow's input signature from the first two
        # items of an epoch; they must be two batches of different d.
        raise ValueError(
            "On TensorFlow, training on several dimensions needs at least "
            "2 steps and no gradient accumulation (the input signature "
            "comes from the first two items of an epoch, which must be two "
            f"batches of different d). Received: steps={steps}, "
            f"dims={dims}, gradient_accumulation_steps={accumulate}"
        )
    if checkpoint_steps is not None:
        if checkpoint_dir is None:
            raise ValueError(
                "`checkpoint_steps` needs a `checkpoint_dir`. Received: "
                f"checkpoint_steps={checkpoint_steps}, checkpoint_dir=None"
            )
        checkpoint_steps = check_positive_int(
            "checkpoint_steps", checkpoint_steps
        )
    if batch_size % accumulate:
        raise ValueError(
            "`gradient_accumulation_steps` must divide the batch size (equal "
            "slices, so that the mean of their gradients is the batch's). "
            f"Received: gradient_accumulation_steps={accumulate}, "
            f"batch_size={batch_size}"
        )
    keras.utils.set_random_seed(seed)
    # At least 2 batches per epoch: TensorFlow infers the input signature
    # from the first two batches, which then differ in `d`.
    epochs = math.ceil(steps / max(epoch_steps, 2))
    per_epoch = math.ceil(steps / epochs)
    dataset = SetBatches(
        task,
        batch_size,
        per_epoch,
        dims=dims,
        seed=seed,
        set_size=set_size,
        dim_weight_power=dim_weight_power,
        micro_batches=accumulate,
        bucket_multiple=bucket_multiple,
        workers=workers,
    )
    model.compile(
        optimizer=keras.optimizers.Adam(
            learning_rate,
            gradient_accumulation_steps=accumulate if accumulate > 1 else None,
        ),
        loss=loss,
        metrics=task.metrics,
    )
    fit_kwargs = dict(
        callbacks=callbacks, verbose=verbose, shuffle=bool(shuffle)
    )
    resumed = None
    if checkpoint_dir is None:
        if model.built:
            # Adam's state made before `fit`: on TensorFlow the first step
            # is then traced once, not a second time for new variables.
            model.optimizer.build(model.trainable_variables)
        start = time.time()
        history = model.fit(dataset, epochs=epochs, **fit_kwargs)
        seconds = time.time() - start
        losses = [float(v) for v in history.history["loss"]]
    else:
        # What determines the result: a checkpoint resumes only a run of
        # the same settings.
        settings = {
            "task": task.name,
            "steps": steps,
            "epoch_steps": epoch_steps,
            "batch_size": batch_size,
            "learning_rate": learning_rate,
            "loss": loss if isinstance(loss, str) else repr(loss),
            "seed": seed,
            "set_size": None if set_size is None else list(set_size),
            "dims": None if dims is None else list(dims),
            "source": getattr(task, "source", None),
            "dim_weight_power": dim_weight_power,
            "gradient_accumulation_steps": accumulate,
            "shuffle": bool(shuffle),
            "model": model.name,
        }
        if bucket_multiple:
            settings["bucket_multiple"] = bucket_multiple
        losses, seconds, resumed = fit_in_chunks(
            model,
            dataset,
            epochs,
            per_epoch,
            checkpoint_steps or per_epoch,
            checkpoint_dir,
            settings,
            fit_kwargs,
        )
    total = epochs * per_epoch
    record = {
        "loss": losses,
        "steps": total,
        "seconds": round(seconds, 1),
        "steps_per_second": round(total / max(seconds, 1e-9), 4),
        "batch_size": batch_size,
        "learning_rate": learning_rate,
        "loss_function": loss,
        "dim_weight_power": dim_weight_power,
        "dims": None if dims is None else list(dims),
        "seed": seed,
        "gradient_accumulation_steps": accumulate,
        "backend": keras.backend.backend(),
    }
    if bucket_multiple:
        record["bucket_multiple"] = bucket_multiple
    if checkpoint_dir is not None:
        record["checkpoint_steps"] = checkpoint_steps or per_epoch
        record["resumed_chunks"] = resumed
    return record
