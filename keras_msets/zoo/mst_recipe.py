"""The shared `model.fit` recipe of the Multi-Set Transformer presets.

Selby et al. (UAI 2022) train every model on fresh synthetic batches, one
per step (App. B: "we trained for 100,000 batches of size 64"). Here
`SetBatches`, a `keras.utils.PyDataset`, draws each batch from the
generators of `keras_msets.data` with its own seed, and `fit_estimator`
runs plain `model.fit` on it. The evaluation functions score a trained
model on a fixed test set (fixed seeds of their own, never drawn in
training) beside the classical estimators on the very same sets.

Defaults (App. B of the paper, the authors' reference code where App. B
is silent):

| task | batch | learning rate | paper's steps | loss |
|---|---|---|---|---|
| `kl_divergence` | 64 | 1e-4 | 100,000 | mean absolute error |
| `mutual_information` | 64 | 1e-4 | 100,000 | mean squared error |
| `mutual_information_joint` | 64 | 1e-4 | 100,000 | mean absolute error |
| `two_sample` | 256 | 1e-5 | 7,500 | binary cross-entropy |
| `counting` | 64 | 3e-4 | 10,000 (+1,000 encoder) | mean squared error |

Losses: App. B names the loss only for counting (mean squared error). For
the KL divergence the authors' code uses the absolute error, the paper's
metric; it also keeps the pairs whose label explodes in high `d` (Sec.
5.1.1; measured on 200 pairs of our generator at d = 16: median 11 nats,
1 % above 35, largest 43, against a median of 0.2 at d = 2) from
dominating the gradient, which the squared error would let them do, all
the more so with one model for every d. Labels are neither clipped nor
rescaled (the paper mentions neither). Mutual
information uses the squared error, as the authors' code does (its labels
are bounded: `|rho| <= 0.999`), of the MI per coordinate: the MI model
scales its output by `d` (`scale_output_by_dim=True` of
`DimensionEquivariantMultiSetTransformer`, ours) and each batch of
dimension `d` has sample weight `d**-2`
(`dim_weight_power`), so that every `d` weighs the same in the loss; the
per-coordinate MI `-(1/2) log(1 - rho^2)` of the training data does not
depend on `d`. Measured (`benchmarks/RESULTS.md`, MI section,
`benchmarks/mst_mi_ablation.py`): at the paper's learning rate 1e-4 and
with the MI itself as the target, 300 batches learned nothing (worse than
a constant at every d); at 1e-3 both targets learn d = 10 and 20 in 500
batches, the per-coordinate one better at d = 20 (1.52 against 2.04 nats).

Inputs as the models see them (the same functions prepare the inputs of
`keras_msets.estimators.pretrained`): KL and two-sample pairs go through
`whiten_pairs` (eq. 15 plus a canonical rotation); mutual-information
pairs through `standardize_pairs` (per set and coordinate). Both are ours
where the paper is silent (it whitens only the KL data, by eq. 15);
`keras_msets.estimators.pretrained` explains why.

`"mutual_information_joint"` is ours, not the paper's: the mutual
information read as `KL(P_XY || P_X P_Y)`, the joint samples `[x_j, y_j]`
against `[x_j, y_pi(j)]` (`y` permuted within the set), whitened as a KL
pair (each axis oriented by its third moment, since both sets have the
same mean) and trained with the KL task's loss (its preset is fine-tuned from
the KL preset). Unlike the paper's split sets it uses the pairing, which
is what makes d = 1..8 learnable (`benchmarks/RESULTS.md`, MI section).

Counting images: the batches, the encoder pretraining and the test sets
of the counting task take a `source` argument, `"digits"` (scikit-learn's
8x8 digits, our MNIST stand-in), `"mnist_5k"` (5,000 real MNIST images,
28x28) or `"fashion_mnist"` (28x28, our Omniglot stand-in), as
`keras_msets.data.set_counting` has them; None means `COUNTING_SOURCE`
(`"digits"`). `build_counting_model` puts App. B's MNIST or Omniglot CNN
(`image_encoder`) in front of any set model that reads encoded images
(`model_name`).

Seeds: batch `i` of epoch `e` uses the generator seed
`SeedSequence([seed, e, i])` (below 2**32); test sets use seeds from
`TEST_SEED = 2**32` up, so no test set is ever drawn in training.
"""

import json
import math
import os
import threading
import time
from pathlib import Path

import keras
import numpy as np

from keras_msets.data import mixtures
from keras_msets.data import set_counting
from keras_msets.estimators import classical
from keras_msets.estimators import pretrained
from keras_msets.models import MULTISET_MODEL_NAMES
from keras_msets.models import DimensionEquivariantMultiSetTransformer
from keras_msets.models import build_multiset_model

TASKS = (
    "kl_divergence",
    "mutual_information",
    "mutual_information_joint",
    "two_sample",
    "counting",
)

# App. B (and the reference code for the losses, see the module docstring).
DEFAULTS = {
    "kl_divergence": {
        "batch_size": 64,
        "learning_rate": 1e-4,
        "paper_steps": 100_000,
        "loss": "mean_absolute_error",
        "set_size": (100, 150),
    },
    "mutual_information": {
        "batch_size": 64,
        "learning_rate": 1e-4,
        "paper_steps": 100_000,
        "loss": "mean_squared_error",
        "set_size": (100, 150),
        # Sample weight d**-2 with a model that scales its output by d:
        # the squared error per coordinate (see the module docstring).
        "dim_weight_power": -2,
    },
    # Ours: MI read as KL(joint || product of marginals), so the KL task's
    # loss and App. B's values for KL and MI.
    "mutual_information_joint": {
        "batch_size": 64,
        "learning_rate": 1e-4,
        "paper_steps": 100_000,
        "loss": "mean_absolute_error",
        "set_size": (100, 150),
    },
    "two_sample": {
        "batch_size": 256,
        "learning_rate": 1e-5,
        "paper_steps": 7_500,
        "loss": "binary_crossentropy",
        "set_size": (10, 30),
    },
    "counting": {
        "batch_size": 64,
        "learning_rate": 3e-4,
        "paper_steps": 10_000,
        "loss": "mean_squared_error",
        "set_size": (10, 30),
    },
}

# Test sets: seeds at and above 2**32; training seeds are below it.
TEST_SEED = 2**32
TWO_SAMPLE_DIM = 8
# The default image source of the counting task (`source=None`).
COUNTING_SOURCE = "digits"
# App. B's CNNs: `build_image_encoder` (MNIST), `build_omniglot_encoder`.
IMAGE_ENCODERS = ("mnist", "omniglot")
OMNIGLOT_FILTERS = (32, 32, 64, 128)
# The set models that can read CNN embeddings: every one but the
# dimension-equivariant model, whose coordinates must be exchangeable
# (those of a CNN embedding are not; the paper's Table 2 has no such row).
COUNTING_MODEL_NAMES = tuple(
    n for n in MULTISET_MODEL_NAMES if n != "dimension_equivariant"
)

# The paper's numbers, for the model cards.
PAPER_KL_MAE = {2: 0.0726, 4: 0.1917, 8: 0.8002, 16: 4.7000}  # Table 1, Equi
PAPER_KNN_KL_MAE = {2: 0.2047, 4: 0.5662, 8: 4.0584, 16: 28.0382}  # Table 1
PAPER_TWO_SAMPLE_ACCURACY = 0.7289  # Table 4, synthetic, +- 0.0353
PAPER_COUNTING_MNIST = {"accuracy": 0.9746, "l1": 0.3136}  # Table 2


def _check_task(task):
    if task not in TASKS:
        raise ValueError(f"`task` must be one of {TASKS}. Received: {task!r}")
    return task


def _check_positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"`{name}` must be a positive integer. Received: {name}={value!r}"
        )
    return int(value)


def _check_source(task, source):
    """The counting task's image source (`COUNTING_SOURCE` for None)."""
    if task != "counting":
        if source is not None:
            raise ValueError(
                "`source` (the image source) applies to the counting task "
                f"only; task {task!r} takes source=None. Received: "
                f"source={source!r}"
            )
        return None
    if source is None:
        return COUNTING_SOURCE
    if source not in set_counting.SOURCES:
        raise ValueError(
            f"`source` must be None or one of {set_counting.SOURCES}. "
            f"Received: source={source!r}"
        )
    return source


def _check_dims(task, dims):
    """`dims` as a tuple of positive ints (None for counting)."""
    if task == "counting":
        if dims is not None:
            raise ValueError(
                "The counting task has no dimension: `dim_sampler` must be "
                f"None. Received: dim_sampler={dims!r}"
            )
        return None
    if task == "two_sample" and dims is None:
        dims = TWO_SAMPLE_DIM
    if isinstance(dims, int) and not isinstance(dims, bool):
        dims = (dims,)
    if (
        not isinstance(dims, (list, tuple, range))
        or len(dims) == 0
        or any(isinstance(d, bool) or not isinstance(d, int) for d in dims)
        or min(dims) < 1
    ):
        raise ValueError(
            "`dim_sampler` must be a positive integer or a non-empty "
            "sequence of them (the dimensions to draw from). Received: "
            f"dim_sampler={dims!r}"
        )
    return tuple(int(d) for d in dims)


def _seed(*entropy):
    return int(np.random.SeedSequence(list(entropy)).generate_state(1)[0])


def make_batch(task, batch_size, dim, seed, set_size=None, source=None):
    """One batch of `task`: `(inputs, targets)` as the models take them.

    `inputs` is `{"sets": [x, y], "masks": [x_mask, y_mask]}` (float32
    sets padded to `set_size[1]`, boolean masks), preprocessed as the
    pretrained estimators do; `targets` is float32 `[batch_size, 1]`.
    `set_size` None means the paper's range: `DEFAULTS[task]["set_size"]`,
    for counting the range of the data set that `source` stands in for
    (10-30 for `"digits"` and `"mnist_5k"`, 6-10 for `"fashion_mnist"`, as
    `set_counting.counting_shared_classes` has them).

    - `"kl_divergence"`: `mixtures.kl_divergence_pairs` (Monte-Carlo KL
      label over the points of `X`, Sec. 5.1.1), then `whiten_pairs`.
    - `"mutual_information"`: `mixtures.mutual_information_sets` in the
      paper's `"split"` mode (exact label), then `standardize_pairs`.
    - `"mutual_information_joint"` (ours): the same generator in its
      `"joint_vs_product"` mode (joint samples `[x_j, y_j]` against
      `[x_j, y_pi(j)]`, dimension `2 * dim`), then `whiten_pairs` with
      `sign="third_moment"`.
    - `"two_sample"`: `mixtures.two_sample_pairs` (label 1 = same
      mixture), then `whiten_pairs`.
    - `"counting"`: `set_counting.counting_shared_classes` on the
      training split of `source` (`dim` must be None; `source` None means
      `COUNTING_SOURCE`); images `[batch, 30, 8, 8, 1]` for `"digits"`,
      `[batch, 30, 28, 28, 1]` for `"mnist_5k"`, `[batch, 10, 28, 28, 1]`
      for `"fashion_mnist"`.

    `source` must be None for the other tasks.
    """
    _check_task(task)
    source = _check_source(task, source)
    if task == "counting":
        (x, y, x_mask, y_mask), targets = set_counting.counting_shared_classes(
            batch_size,
            source=source,
            split="train",
            seed=seed,
            set_size=None if set_size is None else tuple(set_size),
        )
        return {"sets": (x, y), "masks": (x_mask, y_mask)}, targets
    set_size = tuple(set_size or DEFAULTS[task]["set_size"])
    if task == "kl_divergence":
        generate = mixtures.kl_divergence_pairs
        spec = pretrained.SPECS["kl_divergence"]
        kwargs = {"whiten": False}
    elif task in ("mutual_information", "mutual_information_joint"):
        generate = mixtures.mutual_information_sets
        spec = pretrained.SPECS[task]
        joint = task == "mutual_information_joint"
        kwargs = {"mode": "joint_vs_product" if joint else "split"}
    else:
        generate = mixtures.two_sample_pairs
        spec = pretrained.SPECS["same_distribution_probability"]
        kwargs = {}
    (x, y, x_mask, y_mask), targets = generate(
        batch_size, dim, seed=seed, set_size=set_size, **kwargs
    )
    x, y = pretrained.preprocess(spec, x, y, x_mask, y_mask)
    return {"sets": (x, y), "masks": (x_mask, y_mask)}, targets


class SetBatches(keras.utils.PyDataset):
    """Fresh training batches of one task, drawn on demand.

    Batch `index` of epoch `e` is `make_batch(task, batch_size, d,
    SeedSequence([seed, e, index]))`, so a run is reproducible and every
    epoch sees new data. The dimension `d` of each batch comes from
    `dims` in random order, each `d` once per block of `len(dims)`
    consecutive batches (balanced, and consecutive batches differ in `d`,
    which lets TensorFlow's input signature, inferred from the first two
    batches, leave `d` free).

    Args:
        task: one of `TASKS`.
        batch_size: pairs per batch.
        steps_per_epoch: batches per epoch (`len()`).
        dims: the dimensions to draw from (None for counting).
        seed: non-negative integer.
        set_size: `(low, high)`; None: the paper's range for the task.
        source: counting only: the image source, `"digits"`,
            `"mnist_5k"` or `"fashion_mnist"`; None: `COUNTING_SOURCE`.
            Must be None for the other tasks.
        dim_weight_power: 0 (the default): batches are `(inputs,
            targets)`; otherwise `(inputs, targets, weights)` with every
            sample weight `d**dim_weight_power` (not for counting).
        micro_batches: 1 (the default), or a divisor `k` of `batch_size`:
            each batch is served as `k` consecutive slices of
            `batch_size // k` pairs (`len()` is then `k *
            steps_per_epoch`), the same pairs in the same order, for
            training with `gradient_accumulation_steps=k` (see
            `fit_estimator`).
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
        source=None,
        dim_weight_power=0,
        micro_batches=1,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.task = _check_task(task)
        self.source = _check_source(task, source)
        self.batch_size = _check_positive_int("batch_size", batch_size)
        self.micro_batches = _check_positive_int("micro_batches", micro_batches)
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
        self.steps_per_epoch = _check_positive_int(
            "steps_per_epoch", steps_per_epoch
        )
        self.dims = _check_dims(task, dims)
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
                f"`dim_weight_power` needs batches with a dimension d; task "
                f"{task!r} has none. Received: dim_weight_power="
                f"{dim_weight_power}"
            )
        self.dim_weight_power = dim_weight_power
        self.epoch = 0

    def __len__(self):
        return self.steps_per_epoch * self.micro_batches

    def dim_of(self, epoch, index):
        """The dimension of batch `index` of `epoch` (None for counting)."""
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
        inputs, targets = make_batch(
            self.task,
            self.batch_size,
            dim,
            _seed(self.seed, epoch, index),
            self.set_size,
            source=self.source,
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


class _Chunk(keras.utils.PyDataset):
    """Batches `start .. start + count - 1` of one epoch of a `SetBatches`.

    The same items (every micro-batch) as the whole epoch serves at those
    places, for training an epoch in pieces (`fit_estimator`'s
    `checkpoint_dir`).
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


CHECKPOINT_WEIGHTS = "model.weights.h5"
CHECKPOINT_PROGRESS = "progress.json"


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


def _fit_in_chunks(
    model, dataset, epochs, per_epoch, every, folder, settings, fit_kwargs
):
    """Trains `epochs` x `per_epoch` batches, `every` at a time, saving
    the weights and optimizer state into `folder` after each piece and
    resuming from it. Returns (loss per epoch, seconds, chunks resumed)."""
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


def fit_estimator(
    model,
    task,
    dim_sampler=None,
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
    source=None,
    dim_weight_power=None,
    gradient_accumulation_steps=None,
    shuffle=None,
    checkpoint_dir=None,
    checkpoint_steps=None,
):
    """Trains `model` on `task` with fresh batches and plain `model.fit`.

    Adam at a constant learning rate (App. B gives no schedule), one new
    batch per step from `SetBatches`.

    Args:
        model: a multi-set model taking `{"sets": [x, y], "masks": [...]}`
            (for counting, a model of image sets, `build_counting_model`).
        task: one of `TASKS`.
        dim_sampler: the dimension(s) to train on: an int or a sequence
            drawn from in balanced random order (e.g. `range(2, 17)`).
            None for counting; 8 for two-sample when None.
        steps: number of training batches (rounded up to whole epochs:
            `epochs = ceil(steps / max(epoch_steps, 2))` epochs of
            `ceil(steps / epochs)` batches).
        batch_size: None: App. B's (`DEFAULTS`).
        learning_rate: None: App. B's.
        loss: None: `DEFAULTS[task]["loss"]`.
        seed: seeds the batches and `keras.utils.set_random_seed`.
        set_size: `(low, high)`; None: the paper's range (for counting,
            that of the data set `source` stands in for).
        epoch_steps: batches per Keras epoch (one log line each).
        callbacks: extra Keras callbacks.
        verbose: `model.fit` verbosity.
        workers: `PyDataset` workers (threads) preparing batches.
        source: counting only: the image source, `"digits"`,
            `"mnist_5k"` or `"fashion_mnist"`; None: `COUNTING_SOURCE`.
            Must be None for the other tasks.
        dim_weight_power: sample weight `d**dim_weight_power` for every
            pair of a batch of dimension `d` (`SetBatches`). None:
            `DEFAULTS[task]`'s (-2 for mutual information, else 0).
        gradient_accumulation_steps: None or 1 (the default): one Adam
            step per batch. An integer `k >= 2` dividing `batch_size`:
            each batch runs as `k` slices of `batch_size // k` pairs and
            Adam applies the mean of their gradients once (Keras's
            `gradient_accumulation_steps`), which is the gradient of the
            whole batch (equal slices, mean losses), in a `k`-th of the
            activation memory. For the relation networks, whose
            `[batch, n, m, width]` pair tensors exceed memory at batch 64
            in higher `d`. `steps` still counts whole batches. On
            TensorFlow only with a single dimension in `dim_sampler`.
        shuffle: `model.fit`'s `shuffle`, the order in which an epoch's
            batches are drawn (every batch is fresh either way). None:
            True (Keras's default, which the shipped presets were trained
            with) without gradient accumulation or checkpoints, False
            with either: a batch's slices must follow each other, and a
            resumed run must see the batches in the order of an
            uninterrupted one (True is then an error).
        checkpoint_dir: None (the default), or a folder in which to save
            the weights and optimizer state every `checkpoint_steps`
            batches, and from which a call with the same arguments
            resumes (after an interruption, in another process or
            session). The batches are those of the uninterrupted run, so
            the result is the same up to float error. Each piece is its
            own `model.fit` call on the batches of the epoch it belongs
            to (ours, rather than `keras.callbacks.BackupAndRestore`,
            which restarts the epoch it saved in, while one epoch of a
            relation network can take hours). A folder saved with other
            arguments is an error.
        checkpoint_steps: batches between checkpoints; None: one per
            epoch (`epoch_steps`). Only with `checkpoint_dir`.

    Returns:
        A dict: `"loss"` (per epoch), `"steps"` (batches run),
        `"seconds"`, `"steps_per_second"`, and the settings used. With
        a `checkpoint_dir`, `"seconds"` adds up the training time of
        every piece, in this call or earlier ones, and
        `"resumed_chunks"` says how many pieces were loaded instead of
        trained.
    """
    _check_task(task)
    defaults = DEFAULTS[task]
    steps = _check_positive_int("steps", steps)
    epoch_steps = _check_positive_int("epoch_steps", epoch_steps)
    batch_size = batch_size or defaults["batch_size"]
    learning_rate = learning_rate or defaults["learning_rate"]
    loss = loss or defaults["loss"]
    if dim_weight_power is None:
        dim_weight_power = defaults.get("dim_weight_power", 0)
    dims = _check_dims(task, dim_sampler)
    source = _check_source(task, source)
    accumulate = 1
    if gradient_accumulation_steps is not None:
        accumulate = _check_positive_int(
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
        # items of an epoch; they must be two batches (of different d), not
        # two slices of one batch (gradient accumulation) nor one batch
        # alone (one step), which would fix `d`.
        raise ValueError(
            "On TensorFlow, training on several dimensions needs at least "
            "2 steps and no gradient accumulation (the input signature "
            "comes from the first two items of an epoch, which must be two "
            f"batches of different d). Received: steps={steps}, "
            f"dim_sampler={dims}, gradient_accumulation_steps={accumulate}"
        )
    if checkpoint_steps is not None:
        if checkpoint_dir is None:
            raise ValueError(
                "`checkpoint_steps` needs a `checkpoint_dir`. Received: "
                f"checkpoint_steps={checkpoint_steps}, checkpoint_dir=None"
            )
        checkpoint_steps = _check_positive_int(
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
        source=source,
        dim_weight_power=dim_weight_power,
        micro_batches=accumulate,
        workers=workers,
    )
    metrics = ["accuracy"] if task == "two_sample" else None
    model.compile(
        optimizer=keras.optimizers.Adam(
            learning_rate,
            gradient_accumulation_steps=accumulate if accumulate > 1 else None,
        ),
        loss=loss,
        metrics=metrics,
    )
    fit_kwargs = dict(
        callbacks=callbacks, verbose=verbose, shuffle=bool(shuffle)
    )
    resumed = None
    if checkpoint_dir is None:
        start = time.time()
        history = model.fit(dataset, epochs=epochs, **fit_kwargs)
        seconds = time.time() - start
        losses = [float(v) for v in history.history["loss"]]
    else:
        # What determines the result: a checkpoint resumes only a run of
        # the same settings.
        settings = {
            "task": task,
            "steps": steps,
            "epoch_steps": epoch_steps,
            "batch_size": batch_size,
            "learning_rate": learning_rate,
            "loss": loss if isinstance(loss, str) else repr(loss),
            "seed": seed,
            "set_size": None if set_size is None else list(set_size),
            "dims": None if dims is None else list(dims),
            "source": source,
            "dim_weight_power": dim_weight_power,
            "gradient_accumulation_steps": accumulate,
            "shuffle": bool(shuffle),
            "model": model.name,
        }
        losses, seconds, resumed = _fit_in_chunks(
            model,
            dataset,
            epochs,
            per_epoch,
            checkpoint_steps or per_epoch,
            Path(checkpoint_dir),
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
    if checkpoint_dir is not None:
        record["checkpoint_steps"] = checkpoint_steps or per_epoch
        record["resumed_chunks"] = resumed
    return record


# Models ----------------------------------------------------------------------


def build_model(task, **overrides):
    """The App. B model of `task` (counting: `build_counting_model`).

    - KL divergence and mutual information: the dimension-equivariant
      Multi-Set Transformer (Sec. 3.5) with 16 channels per input
      dimension and feedforward width 32 (App. B: "latent size of 16 per
      input dimension and feedforward size of 32 per input dimension"),
      4 blocks, 4 heads, PMA pooling, a decoder with one hidden layer.
      The mutual-information model scales its output by `d`
      (`scale_output_by_dim`, ours; see the module docstring). The
      joint mutual-information model (ours) is the KL model: it reads
      the joint samples against the product samples as a KL pair.
    - Two-sample: App. B's latent size 8 and hidden size 16 (synthetic
      distinguishability), a sigmoid output, and (ours) the
      dimension-equivariant model with those widths per coordinate: the
      paper's plain Multi-Set Transformer plateaued at 0.70 accuracy,
      this one reached 0.75 (benchmarks/RESULTS.md, Table 4).

    `overrides` replace any of these arguments (e.g. tiny sizes in tests).
    """
    _check_task(task)
    if task == "counting":
        return build_counting_model(**overrides)
    if task == "two_sample":
        kwargs = {
            "latent_dim": 8,
            "ff_dim": 16,
            "output_activation": "sigmoid",
            "name": "mst_two_sample",
        }
    else:
        kwargs = {
            "latent_dim": 16,
            "ff_dim": 32,
            "name": f"mst_{task}",
        }
        if task == "mutual_information":
            kwargs["scale_output_by_dim"] = True
    kwargs.update(num_blocks=4, num_heads=4)
    kwargs.update(overrides)
    return DimensionEquivariantMultiSetTransformer(**kwargs)


def build_image_encoder(
    image_shape=(8, 8, 1), latent_dim=128, filters=(32, 64), name="encoder"
):
    """The counting task's CNN (App. B, MNIST): one image to a vector.

    3x3 convolutions of 32 and 64 filters, each followed by a 2x2 max
    pool, then a linear projection to `latent_dim`.
    """
    layers = [keras.layers.Input(image_shape)]
    for i, f in enumerate(filters):
        layers += [
            keras.layers.Conv2D(
                f, 3, padding="same", activation="relu", name=f"conv_{i}"
            ),
            keras.layers.MaxPooling2D(name=f"pool_{i}"),
        ]
    layers += [
        keras.layers.Flatten(name="flatten"),
        keras.layers.Dense(latent_dim, name="projection"),
    ]
    return keras.Sequential(layers, name=name)


def build_omniglot_encoder(
    image_shape=(28, 28, 1),
    latent_dim=128,
    filters=OMNIGLOT_FILTERS,
    name="encoder",
):
    """App. B's Omniglot CNN: one image to a vector.

    A 7x7 convolution with stride 2 and `filters[0]` filters, then one
    block per further entry of `filters` (two 3x3 convolutions and a 2x2
    max pool), then a linear projection to `latent_dim`. On 28x28 images
    (Fashion-MNIST, our Omniglot stand-in) the default filters take the
    image to 14x14, then 7x7, 3x3 and 1x1.
    """
    layers = [
        keras.layers.Input(image_shape),
        keras.layers.Conv2D(
            filters[0],
            7,
            strides=2,
            padding="same",
            activation="relu",
            name="conv_in",
        ),
    ]
    for i, f in enumerate(filters[1:]):
        for part in ("a", "b"):
            layers.append(
                keras.layers.Conv2D(
                    f,
                    3,
                    padding="same",
                    activation="relu",
                    name=f"conv_{i}{part}",
                )
            )
        layers.append(keras.layers.MaxPooling2D(name=f"pool_{i}"))
    layers += [
        keras.layers.Flatten(name="flatten"),
        keras.layers.Dense(latent_dim, name="projection"),
    ]
    return keras.Sequential(layers, name=name)


def build_counting_model(
    image_shape=(8, 8, 1),
    latent_dim=128,
    ff_dim=256,
    filters=(32, 64),
    name="mst_counting",
    *,
    model_name="multiset_transformer",
    image_encoder="mnist",
    **mst_kwargs,
):
    """CNN encoder + a multi-set model for counting shared classes.

    App. B (MNIST): every image goes through `build_image_encoder` (the
    same encoder for both sets), then a Multi-Set Transformer with latent
    size 128, hidden size 256 and a single projection layer as decoder
    (`decoder_units=[]`). A functional model: its input is
    `{"sets": [x, y], "masks": [x_mask, y_mask]}` with images
    `[batch, n, *image_shape]`; the encoder is the layer `"encoder"`
    inside the `TimeDistributed` layer `"encode"` (where
    `pretrain_encoder` finds it), the set model the layer named
    `model_name`.

    Args:
        image_shape: one image, `(8, 8, 1)` for `"digits"`, `(28, 28, 1)`
            for `"mnist_5k"` and `"fashion_mnist"`.
        latent_dim: the encoder's output size and the set model's latent
            size.
        ff_dim: the set model's hidden size.
        filters: the CNN's filters: App. B's MNIST ones by default; pass
            `OMNIGLOT_FILTERS` for App. B's Omniglot CNN.
        name: the model's name.
        model_name: the set model, one of `COUNTING_MODEL_NAMES` (every
            name of `keras_msets.models.MULTISET_MODEL_NAMES` but
            `"dimension_equivariant"`), built by `build_multiset_model`.
        image_encoder: `"mnist"` (`build_image_encoder`) or `"omniglot"`
            (`build_omniglot_encoder`), App. B's CNNs.
        **mst_kwargs: further arguments of the set model (they replace
            `num_blocks=4` and `decoder_units=[]`).
    """
    if model_name not in COUNTING_MODEL_NAMES:
        raise ValueError(
            f"`model_name` must be one of {COUNTING_MODEL_NAMES} (the "
            "dimension-equivariant model needs exchangeable coordinates, "
            "which a CNN embedding does not have). Received: "
            f"model_name={model_name!r}"
        )
    if image_encoder not in IMAGE_ENCODERS:
        raise ValueError(
            f"`image_encoder` must be one of {IMAGE_ENCODERS}. Received: "
            f"image_encoder={image_encoder!r}"
        )
    sets = [
        keras.Input((None,) + tuple(image_shape), name=n) for n in ("x", "y")
    ]
    masks = [
        keras.Input((None,), dtype="bool", name=n) for n in ("x_mask", "y_mask")
    ]
    if image_encoder == "mnist":
        encoder = build_image_encoder(image_shape, latent_dim, filters)
    else:
        encoder = build_omniglot_encoder(image_shape, latent_dim, filters)
    encode = keras.layers.TimeDistributed(encoder, name="encode")
    kwargs = {
        "latent_dim": latent_dim,
        "ff_dim": ff_dim,
        "num_blocks": 4,
        "decoder_units": [],
    }
    kwargs.update(mst_kwargs)
    mst = build_multiset_model(model_name, **kwargs)
    output = mst({"sets": [encode(s) for s in sets], "masks": masks})
    return keras.Model({"sets": sets, "masks": masks}, output, name=name)


def pretrain_encoder(
    model,
    steps=1000,
    batch_size=64,
    learning_rate=3e-4,
    seed=0,
    verbose=0,
    source=None,
):
    """Pretrains the counting model's CNN as an image classifier (App. B).

    About `steps` batches (whole epochs: `max(1, round(steps * batch_size
    / N))` of them, `N` the number of training images) of the training
    split of `source` (`"digits"`, `"mnist_5k"` or `"fashion_mnist"`; None:
    `COUNTING_SOURCE`) through the encoder and a throwaway softmax head
    over the source's classes (sparse categorical cross-entropy, Adam).
    The encoder's weights are shared with `model`. Returns the final
    training accuracy.
    """
    source = _check_source("counting", source)
    encoder = model.get_layer("encode").layer
    images, labels = set_counting.load_images(source, "train")
    try:
        expected = tuple(encoder.input_shape[1:])
    except (AttributeError, ValueError):  # an encoder without an Input
        expected = images.shape[1:]
    if expected != images.shape[1:]:
        raise ValueError(
            f"The encoder takes images of shape {expected}, but source "
            f"{source!r} has images of shape {images.shape[1:]}. "
            f"Received: source={source!r}"
        )
    keras.utils.set_random_seed(seed)
    classifier = keras.Sequential(
        [
            keras.layers.Input(images.shape[1:]),
            encoder,
            keras.layers.Dense(
                int(labels.max()) + 1, activation="softmax", name="head"
            ),
        ]
    )
    classifier.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    epochs = max(1, round(steps * batch_size / len(images)))
    history = classifier.fit(
        images, labels, batch_size=batch_size, epochs=epochs, verbose=verbose
    )
    return float(history.history["accuracy"][-1])


# Evaluation ------------------------------------------------------------------


def _predict_sets(model, inputs, batch_size, clip=True):
    x, y = inputs["sets"]
    x_mask, y_mask = inputs["masks"]
    out = np.concatenate(
        [
            pretrained.predict_prepared(
                model,
                x[i : i + batch_size],
                y[i : i + batch_size],
                x_mask[i : i + batch_size],
                y_mask[i : i + batch_size],
            )
            for i in range(0, len(x), batch_size)
        ]
    )
    return np.maximum(out, 0.0) if clip else out


def _print(metrics, verbose):
    if verbose:
        for key, value in metrics.items():
            print(f"{key}: {value:.4f}")


def test_set(task, num, dim=None, seed=TEST_SEED, source=None):
    """The fixed test set of `task` (`dim`): raw and prepared inputs.

    Returns `(raw, inputs, targets)`: `raw` the generator's
    `(x, y, x_mask, y_mask)` before preprocessing (for the classical
    baselines), `inputs` as `make_batch` returns them. The generator seed
    is `seed + dim` (`seed` for counting), so each dimension has its own
    sets; the default `seed` is never used in training. Counting draws
    from the test split of `source` (`"digits"`, `"mnist_5k"` or
    `"fashion_mnist"`; None: `COUNTING_SOURCE`), with the set sizes of
    the data set it stands in for; `source` must be None for the other tasks.
    """
    _check_task(task)
    source = _check_source(task, source)
    seed = seed + (dim or 0)
    if task == "counting":
        (x, y, x_mask, y_mask), targets = set_counting.counting_shared_classes(
            num, source=source, split="test", seed=seed
        )
        raw = (x, y, x_mask, y_mask)
        return raw, {"sets": (x, y), "masks": (x_mask, y_mask)}, targets
    set_size = DEFAULTS[task]["set_size"]
    if task == "kl_divergence":
        raw, targets = mixtures.kl_divergence_pairs(
            num, dim, seed=seed, set_size=set_size, whiten=False
        )
        spec = pretrained.SPECS["kl_divergence"]
    elif task in ("mutual_information", "mutual_information_joint"):
        joint = task == "mutual_information_joint"
        raw, targets = mixtures.mutual_information_sets(
            num,
            dim,
            seed=seed,
            set_size=set_size,
            mode="joint_vs_product" if joint else "split",
        )
        spec = pretrained.SPECS[task]
    else:
        raw, targets = mixtures.two_sample_pairs(
            num, dim, seed=seed, set_size=set_size
        )
        spec = pretrained.SPECS["same_distribution_probability"]
    x, y = pretrained.preprocess(spec, *raw)
    return raw, {"sets": (x, y), "masks": tuple(raw[2:])}, targets


def evaluate_kl_divergence(
    model,
    dims=(2, 4, 8, 16),
    num=1000,
    seed=TEST_SEED,
    batch_size=64,
    verbose=0,
):
    """KL mean absolute error per dimension, beside the k-NN estimator.

    For each `d`, `num` fresh pairs (Sec. 5.1.1 mixtures, 100-150 points
    per set, seed `seed + d`); the model reads them as
    `keras_msets.estimators.pretrained.kl_divergence` does (whitened,
    clipped at 0).
    The k-NN estimator of Wang et al. (k = 1, the paper's baseline) runs
    on the same whitened sets. Keys: `mae_d{d}`, `knn_mae_d{d}`,
    `mean_label_d{d}`, and `median_mae_d{d}`: the error of always
    answering the median test label of that `d` (a constant that knows
    the test labels; what a model that ignored its input could reach at
    best).
    """
    metrics = {}
    for d in dims:
        _, inputs, targets = test_set("kl_divergence", num, d, seed)
        truth = targets[:, 0].astype(np.float64)
        predicted = _predict_sets(model, inputs, batch_size)
        knn = classical.knn_kl_divergence_sets(
            *inputs["sets"], *inputs["masks"], k=1
        )
        metrics[f"mae_d{d}"] = float(np.mean(np.abs(predicted - truth)))
        metrics[f"knn_mae_d{d}"] = float(np.mean(np.abs(knn - truth)))
        metrics[f"mean_label_d{d}"] = float(np.mean(truth))
        metrics[f"median_mae_d{d}"] = float(
            np.mean(np.abs(np.median(truth) - truth))
        )
    _print(metrics, verbose)
    return metrics


def evaluate_kl_gaussians(
    model,
    dims=(2, 8),
    kls=(0.0, 0.5, 1.0, 2.0),
    num=20,
    set_size=(100, 150),
    seed=TEST_SEED + 3000,
    verbose=0,
):
    """KL error on shifted unit Gaussians, off the training distribution.

    `P = N(0, I)`, `Q = N(mu, I)` with `|mu| = sqrt(2 KL)` along a random
    direction, so `KL(P || Q) = KL` exactly; `num` pairs per value of
    `kls`, `set_size` points per set. The model answers through
    `keras_msets.estimators.pretrained.kl_divergence`, the k-NN estimator
    (k = 1) reads the raw sets. Unlike the mixture pairs of training,
    these include identical distributions (KL = 0). Keys:
    `gaussian_mae_d{d}`, `gaussian_knn_mae_d{d}` and
    `gaussian_mean_estimate_d{d}_kl{KL}` (the model's mean answer).
    """
    metrics = {}
    for d in dims:
        rng = np.random.default_rng([seed, d])
        errors, knn_errors = [], []
        for kl in kls:
            xs, ys = [], []
            for _ in range(num):
                direction = rng.normal(size=d)
                mu = direction / np.linalg.norm(direction) * np.sqrt(2 * kl)
                n, m = rng.integers(set_size[0], set_size[1] + 1, size=2)
                xs.append(rng.normal(size=(n, d)))
                ys.append(rng.normal(size=(m, d)) + mu)
            estimates = pretrained.kl_divergence(xs, ys, model=model)
            knn = np.array(
                [
                    classical.knn_kl_divergence(x, y)
                    for x, y in zip(xs, ys, strict=True)
                ]
            )
            errors.append(np.abs(estimates - kl))
            knn_errors.append(np.abs(knn - kl))
            metrics[f"gaussian_mean_estimate_d{d}_kl{kl:g}"] = float(
                np.mean(estimates)
            )
        metrics[f"gaussian_mae_d{d}"] = float(np.mean(errors))
        metrics[f"gaussian_knn_mae_d{d}"] = float(np.mean(knn_errors))
    _print(metrics, verbose)
    return metrics


def evaluate_mutual_information(
    model,
    dims=(2, 10, 20),
    num=1000,
    seed=TEST_SEED,
    batch_size=64,
    verbose=0,
    task="mutual_information",
    split_model=None,
    estimator_permutations=None,
):
    """MI mean absolute error per dimension, beside the KSG estimator.

    For each `d`, `num` fresh pairs of correlated Gaussians (Sec. 5.1.2,
    `rho` uniform in `[-0.999, 0.999]`, 100-150 paired points, seed
    `seed + d`); the model reads them as `task` prepares them (the
    standardized sets for `"mutual_information"`, the whitened joint and
    product samples for `"mutual_information_joint"`: the same joint
    samples either way), the KSG estimator (k = 3) the raw paired rows.
    Keys: `mae_d{d}`, `ksg_mae_d{d}`, `median_mae_d{d}` (always answering
    the median test label, as in `evaluate_kl_divergence`), and with
    `split_model` (a model of the `"mutual_information"` task, e.g. the
    `mst_mutual_information` preset) `split_mae_d{d}`, its error on the
    same pairs (for d >= 2, the dimensions it takes). With
    `estimator_permutations` (the joint task only), `estimator_mae_d{d}`:
    the error of `keras_msets.estimators.mutual_information(...,
    mode="joint", permutations=estimator_permutations)` with `model` on the
    same joint samples (the mean over that many permutations, where
    `mae_d{d}` reads the generator's one).
    """
    if estimator_permutations is not None and task != (
        "mutual_information_joint"
    ):
        raise ValueError(
            "`estimator_permutations` is for the joint task only. Received: "
            f"task={task!r}, estimator_permutations={estimator_permutations!r}"
        )
    if task not in ("mutual_information", "mutual_information_joint"):
        raise ValueError(
            "`task` must be 'mutual_information' or "
            f"'mutual_information_joint'. Received: task={task!r}"
        )
    metrics = {}
    for d in dims:
        raw, inputs, targets = test_set(task, num, d, seed)
        truth = targets[:, 0].astype(np.float64)
        predicted = _predict_sets(model, inputs, batch_size)
        # The joint task's first set is [x_j, y_j].
        x, y, mask = raw[0][..., :d], raw[1], raw[2]
        if task == "mutual_information_joint":
            y = raw[0][..., d:]
        ksg = classical.ksg_mutual_information_sets(x, y, mask, k=3)
        metrics[f"mae_d{d}"] = float(np.mean(np.abs(predicted - truth)))
        metrics[f"ksg_mae_d{d}"] = float(np.mean(np.abs(ksg - truth)))
        metrics[f"median_mae_d{d}"] = float(
            np.mean(np.abs(np.median(truth) - truth))
        )
        if split_model is not None and d >= 2:
            _, split_inputs, _ = test_set("mutual_information", num, d, seed)
            split = _predict_sets(split_model, split_inputs, batch_size)
            metrics[f"split_mae_d{d}"] = float(np.mean(np.abs(split - truth)))
        if estimator_permutations is not None:
            rows = [m.astype(bool) for m in mask]
            answers = pretrained.mutual_information(
                [xs[keep] for xs, keep in zip(x, rows, strict=True)],
                [ys[keep] for ys, keep in zip(y, rows, strict=True)],
                model=model,
                mode="joint",
                batch_size=batch_size,
                permutations=estimator_permutations,
            )
            metrics[f"estimator_mae_d{d}"] = float(
                np.mean(np.abs(answers - truth))
            )
    _print(metrics, verbose)
    return metrics


def evaluate_two_sample(
    model, num=2000, seed=TEST_SEED, batch_size=256, verbose=0
):
    """Accuracy (`p > 0.5` against the label) on fresh 8-d mixture pairs.

    `p` is what `keras_msets.estimators.same_distribution_probability`
    answers: the mean of the model's probabilities for `(x, y)` and for
    `(y, x)`, each pair whitened in that order. Also `accuracy_same` and
    `accuracy_different` (on each half) and `accuracy_one_order` (the
    model's own answer for `(x, y)` alone).
    """
    raw, inputs, targets = test_set("two_sample", num, TWO_SAMPLE_DIM, seed)
    one_order = _predict_sets(model, inputs, batch_size, clip=False)
    x, y, x_mask, y_mask = raw
    spec = pretrained.SPECS["same_distribution_probability"]
    wy, wx = pretrained.preprocess(spec, y, x, y_mask, x_mask)
    swapped = {"sets": (wy, wx), "masks": (y_mask, x_mask)}
    p = 0.5 * (one_order + _predict_sets(model, swapped, batch_size, False))
    truth = targets[:, 0] > 0.5
    right = (p > 0.5) == truth
    metrics = {
        "accuracy": float(np.mean(right)),
        "accuracy_same": float(np.mean(right[truth])),
        "accuracy_different": float(np.mean(right[~truth])),
        "accuracy_one_order": float(np.mean((one_order > 0.5) == truth)),
    }
    _print(metrics, verbose)
    return metrics


def evaluate_counting(
    model, num=1000, seed=TEST_SEED, batch_size=64, verbose=0, source=None
):
    """Counting accuracy and L1 error on the test split of `source`.

    `source`: `"digits"`, `"mnist_5k"` or `"fashion_mnist"`; None:
    `COUNTING_SOURCE`
    (`test_set`). Accuracy: the rounded prediction equals the count; L1:
    the mean absolute error of the unrounded prediction (as in Table 2,
    where the L1 error is far above `1 - accuracy`).
    """
    _, inputs, targets = test_set("counting", num, None, seed, source)
    predicted = model.predict(inputs, batch_size=batch_size, verbose=0)
    metrics = counting_scores(predicted[:, 0], targets[:, 0])
    _print(metrics, verbose)
    return metrics


def counting_scores(predicted, truth):
    """Table 2's metrics of predicted counts against the true counts.

    Accuracy: the rounded prediction equals the count; L1: the mean
    absolute error of the unrounded prediction. Both arguments `[num]`.
    """
    predicted = np.asarray(predicted, dtype=np.float64)
    truth = np.asarray(truth, dtype=np.float64)
    return {
        "accuracy": float(np.mean(np.round(predicted) == truth)),
        "l1": float(np.mean(np.abs(predicted - truth))),
    }


# Recipes ---------------------------------------------------------------------

CHECKPOINT_FILE = "checkpoint.weights.h5"


def steps_from(steps, epochs, default):
    """`steps`, or `epochs` thousand steps (the `--epochs` of the CLI)."""
    if steps is not None and epochs is not None:
        raise ValueError(
            "Pass `steps` or `epochs`, not both. Received: "
            f"steps={steps!r}, epochs={epochs!r}"
        )
    if epochs is not None:
        return _check_positive_int("epochs", epochs) * 1000
    return _check_positive_int("steps", default if steps is None else steps)


def example_metadata(model, inputs, count=2):
    """A small JSON example of a dict-input model for `metadata.json`.

    The first `count` pairs of `inputs` as `{"sets": (x, y), "masks":
    (x_mask, y_mask)}`, stored by `keras_msets.zoo.registry.
    example_outputs`; `registry.example_input` turns it back into arrays,
    so that every backend can check that it reproduces the trained
    model's output.
    """
    from keras_msets.zoo import registry

    return registry.example_outputs(
        model,
        {
            "sets": tuple(
                np.asarray(s[:count], dtype=np.float32) for s in inputs["sets"]
            ),
            "masks": tuple(
                np.asarray(m[:count], dtype=bool) for m in inputs["masks"]
            ),
        },
    )


def run_recipe(
    *,
    name,
    task,
    build_model,
    dims,
    steps,
    evaluate,
    model_card,
    output_dir,
    data,
    batch_size=None,
    learning_rate=None,
    workers=1,
    verbose=2,
    seed=0,
    before_fit=None,
    continue_from=None,
):
    """Trains, evaluates and saves one preset; returns its metrics.

    `build_model()` makes the model after `keras.utils.set_random_seed(
    seed)`, so its initial weights are reproducible. `before_fit(model)`
    (optional) runs next and returns a dict merged into the metrics (the
    counting recipe pretrains its encoder there).
    The weights after every epoch go to `checkpoint.weights.h5` in
    `output_dir` while training runs (a long run that is stopped still
    leaves them), deleted at the end. `evaluate(model, verbose)` gives
    the card's metrics; `model_card(model, metrics)` the card; the preset
    is written by `keras_msets.zoo.save_preset` with an `example` (see
    `example_metadata`) and `extra` metadata: the task, the dimensions,
    the set sizes and the preprocessing the estimators must apply.

    `continue_from` (a preset folder written by this function, e.g. the
    shipped one) continues training: its weights are loaded instead of
    running `before_fit` (whose metrics are carried over), its earlier
    runs are kept in `metrics["earlier_fits"]` (the card lists them), and
    the batches are drawn with seed `seed + k` for the k-th continuation,
    so they are new but reproducible.
    """
    from pathlib import Path

    from keras_msets.zoo import registry

    output_dir = Path(output_dir)
    earlier, carried, example = _earlier_fits(continue_from)
    output_dir.mkdir(parents=True, exist_ok=True)
    checkpoint = output_dir / CHECKPOINT_FILE
    keras.utils.set_random_seed(seed)
    model = build_model()
    metrics = {}
    _build_for(model, task, dims, example)
    if earlier:
        model.load_weights(Path(continue_from) / registry.WEIGHTS_FILE)
        metrics.update(carried)
        metrics["earlier_fits"] = earlier
        seed += len(earlier)
    elif before_fit is not None:
        metrics.update(before_fit(model))
    fit = fit_estimator(
        model,
        task,
        dims,
        steps=steps,
        batch_size=batch_size,
        learning_rate=learning_rate,
        seed=seed,
        workers=workers,
        verbose=verbose,
        callbacks=[
            keras.callbacks.ModelCheckpoint(
                str(checkpoint), save_weights_only=True
            )
        ],
    )
    checkpoint.unlink(missing_ok=True)
    metrics.update(evaluate(model, verbose=verbose))
    metrics["fit"] = fit
    example_dim = None if dims is None else _check_dims(task, dims)[0]
    _, example, _ = test_set(task, 2, example_dim, seed=TEST_SEED + 1000)
    spec = _SPEC_OF.get(task)
    extra = {
        "task": task,
        "dims": None if dims is None else list(_check_dims(task, dims)),
        "set_size": list(DEFAULTS[task]["set_size"]),
        "preprocessing": None if spec is None else spec.preprocessing,
        "recipe_seed": seed,
        "example": example_metadata(model, example),
    }
    registry.save_preset(
        model,
        output_dir,
        data=data,
        metrics=metrics,
        card=model_card(model, metrics),
        extra=extra,
    )
    return metrics


def train_recipe(
    recipe,
    *,
    data,
    dims,
    output_dir=None,
    steps=None,
    epochs=None,
    test_size=None,
    model_kwargs=None,
    **options,
):
    """The `train()` of a `zoo/mst_*/recipe.py`: `run_recipe` with its parts.

    `recipe` is the recipe module's namespace (`globals()`), which defines
    `NAME`, `TASK`, `DEFAULT_STEPS`, `TEST_SIZE`, `SEED`, `build_model`,
    `evaluate` and `model_card`, and may define `LEARNING_RATE` (the
    default of `learning_rate` instead of the task's App. B rate). `data`
    describes the training data for the metadata, `dims` the training
    dimensions. `epochs` (the `--epochs`
    of `keras-msets zoo train`) means thousands of steps; `model_kwargs`
    override the App. B model (smoke tests); `test_size` defaults to the
    recipe's `TEST_SIZE`. `options` go to `run_recipe` (`batch_size`,
    `learning_rate`, `workers`, `verbose`, `before_fit`, `continue_from`).
    The preset is written next to the recipe unless `output_dir` is given.
    """
    from pathlib import Path

    test_size = test_size or recipe["TEST_SIZE"]
    if options.get("learning_rate") is None and "LEARNING_RATE" in recipe:
        options["learning_rate"] = recipe["LEARNING_RATE"]
    return run_recipe(
        name=recipe["NAME"],
        task=recipe["TASK"],
        build_model=lambda: recipe["build_model"](**(model_kwargs or {})),
        dims=dims,
        steps=steps_from(steps, epochs, recipe["DEFAULT_STEPS"]),
        evaluate=lambda m, verbose: recipe["evaluate"](
            m, verbose, num=test_size
        ),
        model_card=recipe["model_card"],
        output_dir=output_dir or Path(recipe["__file__"]).parent,
        data=data,
        seed=recipe["SEED"],
        **options,
    )


def _build_for(model, task, dims, example):
    """Builds `model` before training (and before loading earlier weights).

    A dimension-equivariant model trained on several `d` is built with
    `d = None`, so its saved `build_config` (and any model loaded from it)
    records no particular `d`, whichever backend or run wrote it. Other
    models are built on `example` (a preset's `example_metadata`, when
    weights are to be loaded), or else by their first batch.
    """
    from keras_msets.zoo import registry

    checked = _check_dims(task, dims)
    if (
        checked is not None
        and len(checked) > 1
        and getattr(model, "dimension_equivariant", False)
    ):
        model.build([(None, None, None)] * 2)
    elif example is not None:
        model(registry.example_input(example))


def _earlier_fits(continue_from):
    """`(fits, other metrics, example)` of preset folder `continue_from`.

    The fits oldest first; the other metrics are those `before_fit` wrote
    (e.g. the counting encoder's pretraining), evaluations are redone; the
    example is the metadata's (`example_metadata`).
    """
    import json
    from pathlib import Path

    from keras_msets.zoo import registry

    if continue_from is None:
        return [], {}, None
    metadata = Path(continue_from) / registry.METADATA_FILE
    if not metadata.is_file():
        raise FileNotFoundError(
            "`continue_from` must be a preset folder with "
            f"{registry.METADATA_FILE} and {registry.WEIGHTS_FILE}. "
            f"Received: continue_from={str(continue_from)!r}"
        )
    metadata = json.loads(metadata.read_text())
    metrics = metadata["metrics"]
    if "fit" not in metrics or "example" not in metadata:
        raise ValueError(
            f"The preset in {str(continue_from)!r} records no training run "
            "(`metrics['fit']`) or example; only presets written by "
            "`run_recipe` can be continued."
        )
    fits = [dict(f) for f in metrics.get("earlier_fits", [])]
    fits.append(dict(metrics["fit"]))
    carried = {
        key: value
        for key, value in metrics.items()
        if key.startswith("pretrain")
    }
    return fits, carried, metadata["example"]


_SPEC_OF = {
    "kl_divergence": pretrained.SPECS["kl_divergence"],
    "mutual_information": pretrained.SPECS["mutual_information"],
    "mutual_information_joint": pretrained.SPECS["mutual_information_joint"],
    "two_sample": pretrained.SPECS["same_distribution_probability"],
}


def command_line(train, description, default_steps):
    """`python recipe.py [--steps N] [--output-dir DIR] ...`."""
    import argparse
    import json

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--steps",
        type=int,
        default=default_steps,
        help=f"training batches (default {default_steps})",
    )
    parser.add_argument("--output-dir", default=None)
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--learning-rate", type=float, default=None)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--verbose", type=int, default=2)
    parser.add_argument(
        "--continue-from",
        default=None,
        help="a preset folder whose weights to train further",
    )
    args = parser.parse_args()
    metrics = train(
        output_dir=args.output_dir,
        steps=args.steps,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        workers=args.workers,
        verbose=args.verbose,
        continue_from=args.continue_from,
    )
    print(json.dumps(metrics, indent=2))


def total_steps(metrics):
    """Training batches of a preset's metrics, continued runs included."""
    fits = [*metrics.get("earlier_fits", ()), metrics["fit"]]
    return sum(f["steps"] for f in fits)


def _rerun_arguments(task, fit):
    """The recipe's command-line arguments that repeat `fit`.

    The learning rate is always given: a recipe may have its own default
    (`LEARNING_RATE`), so leaving out App. B's would not repeat the run.
    """
    arguments = f"--steps {fit['steps']}"
    if fit["batch_size"] != DEFAULTS[task]["batch_size"]:
        arguments += f" --batch-size {fit['batch_size']}"
    return arguments + f" --learning-rate {fit['learning_rate']:g}"


def start_from_preset(preset):
    """A `before_fit` for `run_recipe`: copies the weights of zoo preset
    `preset` (the same architecture) into the model before training."""

    def before_fit(model):
        from keras_msets import zoo

        model.set_weights(zoo.load(preset).get_weights())
        return {"pretrain_from": preset}

    return before_fit


def start_text(metrics):
    """The card's sentence on a fine-tuned preset's first weights."""
    start = metrics.get("pretrain_from")
    if start:
        return f" The first run starts from the weights of `{start}`."
    return " The first run starts from random weights."


def kl_gaussians_table(metrics, dims, kls):
    """The card's table of `evaluate_kl_gaussians` metrics."""
    header = (
        "| d | "
        + " | ".join(f"mean answer, KL = {kl:g}" for kl in kls)
        + " | MAE | k-NN MAE |\n|"
        + "---|" * (len(kls) + 3)
    )
    rows = [
        f"| {d} | "
        + " | ".join(
            f"{metrics[f'gaussian_mean_estimate_d{d}_kl{kl:g}']:.2f}"
            for kl in kls
        )
        + f" | {metrics[f'gaussian_mae_d{d}']:.3f}"
        f" | {metrics[f'gaussian_knn_mae_d{d}']:.3f} |"
        for d in dims
    ]
    return "\n".join([header, *rows])


def training_text(name, task, fit, extra="", earlier=()):
    """The "Training" section of a model card.

    `earlier`: the fits this one continued (`metrics["earlier_fits"]`),
    oldest first; the card then lists every run and the chain of commands
    that repeats them.
    """
    paper = DEFAULTS[task]["paper_steps"]
    paper_rate = DEFAULTS[task]["learning_rate"]
    fits = [*earlier, fit]
    total = total_steps({"earlier_fits": earlier, "fit": fit})
    # The backend the run was trained on (a card may be re-rendered on
    # another: `keras-msets zoo evaluate --update-card`).
    backend = fit.get("backend", keras.backend.backend())
    if all(f["learning_rate"] == paper_rate for f in fits):
        rate_text = "(App. B)"
    elif earlier:
        rate_text = f"(App. B: {paper_rate:g}; each run's rate is below)"
    else:
        change = "raised" if fit["learning_rate"] > paper_rate else "lowered"
        rate_text = (
            f"(App. B: {paper_rate:g}; {change} for a run of "
            f"{total / paper:.0%} of the paper's batches)"
        )
    dims = fit.get("dims")
    if not dims:
        dims_text = ""
    elif len(dims) == 1:
        dims_text = f" All pairs are in d = {dims[0]}."
    else:
        dims_text = (
            f" Each batch is in one dimension d, drawn from {dims[0]}.."
            f"{dims[-1]} in balanced random order (each d once in every "
            f"{len(dims)} batches)."
        )
    rerun = _rerun_arguments(task, fit)
    if not earlier:
        return f"""## Training

`zoo/{name}/recipe.py` through
`keras_msets.zoo.mst_recipe.fit_estimator`: {fit["steps"]:,} batches of
{fit["batch_size"]} fresh pairs (the paper: {paper:,}), Adam at a constant
learning rate {fit["learning_rate"]:g} {rate_text}, loss
`{fit["loss_function"]}`, seed {fit["seed"]}.{dims_text}{extra}
Wall time {fit["seconds"]:.0f} s ({fit["steps_per_second"]:.3f} steps/s)
on {backend}. This run again:

    KERAS_BACKEND={backend} python zoo/{name}/recipe.py {rerun}

(`keras-msets zoo train {name}` runs the recipe's defaults; `--steps N`
trains longer.)
"""
    runs = "\n".join(
        f"{k}. {f['steps']:,} batches of {f['batch_size']} fresh pairs, "
        f"learning rate {f['learning_rate']:g}, batch seed {f['seed']}, "
        f"{f['seconds']:.0f} s ({f['steps_per_second']:.3f} steps/s) on "
        f"{f.get('backend', backend)}"
        for k, f in enumerate(fits, 1)
    )
    commands = []
    for k, f in enumerate(fits, 1):
        command = (
            f"    KERAS_BACKEND={f.get('backend', backend)} python "
            f"zoo/{name}/recipe.py {_rerun_arguments(task, f)}"
        )
        if k > 1:
            command += f" --continue-from run{k - 1}"
        commands.append(command + f" --output-dir run{k}")
    commands = "\n".join(commands)
    return f"""## Training

`zoo/{name}/recipe.py` through
`keras_msets.zoo.mst_recipe.fit_estimator`, in {len(fits)} runs, each
continuing the weights of the one before (`--continue-from`; Adam starts
afresh in every run): {total:,} batches in all (the paper: {paper:,}),
Adam at a constant learning rate in each run {rate_text}, loss
`{fit["loss_function"]}`.{dims_text}{extra}

{runs}

These runs again (the last folder is the preset):

{commands}

(`keras-msets zoo train {name}` runs the recipe's defaults; `--steps N`
trains longer.)
"""
