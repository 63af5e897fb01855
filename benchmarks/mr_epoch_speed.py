"""Seconds per MR training epoch: complex-order against PE embeddings.

Wang et al. (ICLR 2020, Sec. 3.1, Fig. 2) report that complex-order
embeddings cost a "negligible (or non-existent)" amount of extra time per
epoch of a whole classifier. This script times one training epoch of the
MR classifiers of our zoo recipes (`keras_msets.training.tasks
.complex_order_mr`: `complex_order_cnn_mr` and `complex_order_transformer_mr`)
with complex-order embeddings (the complex network) and the same
architecture with learned position embeddings (PE, the real network), as
`keras_msets.training.text_classification` trains them: Adam (1e-3),
sparse categorical cross-entropy, accuracy, batch 64, 40 tokens, a
vocabulary of 10,000 ids, `model.fit(..., epochs=1, validation_data=...)`.

An epoch has the size of one cross-validation fold of the recipes: 3,240
training sentences (9 of 10 folds of the 4,000 MR sentences, less the 10 %
held out for early stopping; 51 batches) and 360 validation sentences.
The token ids are drawn uniformly from the vocabulary (every sentence is
40 ids, as padded MR sentences are): the time of a step does not depend
on the words. The word vectors start from random values (the CNN recipe
starts its amplitudes from GloVe; the values do not change the time).

Each model first trains one untimed epoch (tracing and compilation), then
`--repeats` rounds each time one epoch of every model in turn (the order
alternates from round to round), so that the models share the machine's
load; the median seconds per epoch and the ratio complex-order / PE of
each architecture are reported, with the per-round ratios. The load
average is stored before and after every round.

    OMP_NUM_THREADS=1 KERAS_BACKEND=torch nice -n 10 \\
        python benchmarks/mr_epoch_speed.py \\
        --output benchmarks/results/mr_epoch_speed_torch.json

`--smoke` runs tiny sizes (a check, not a result).
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import keras
import numpy as np

from keras_msets.models.text.classifiers import build_text_classifier

HERE = Path(__file__).parent
EMBEDDINGS = ("complex_order", "pe")
# The recipes' classifiers (zoo/complex_order_{cnn,transformer}_mr): the
# CNN reads 50-d vectors (GloVe 6B 50-d) with 64 filters per kernel size,
# the Transformer 64 units, 4 heads, inner size 128.
ARCHITECTURES = {
    "cnn": {"embedding_dim": 50, "filters": 64},
    "transformer": {
        "embedding_dim": 64,
        "num_heads": 4,
        "intermediate_dim": 128,
    },
}
SMOKE_ARCHITECTURES = {
    "cnn": {"embedding_dim": 4, "filters": 4},
    "transformer": {"embedding_dim": 4, "num_heads": 2, "intermediate_dim": 8},
}
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "XLA_FLAGS")


def build(architecture, embedding, args):
    """One compiled classifier of the recipes' settings."""
    sizes = SMOKE_ARCHITECTURES if args.smoke else ARCHITECTURES
    model = build_text_classifier(
        architecture,
        embedding,
        vocabulary_size=args.vocabulary_size,
        sequence_length=args.sequence_length,
        num_classes=2,
        name=f"{architecture}_{embedding}",
        **sizes[architecture],
    )
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model


def make_data(args, rng):
    """`(x, y)` of training and of validation: uniform ids, 2 classes."""

    def part(count):
        x = rng.integers(2, args.vocabulary_size, (count, args.sequence_length))
        y = rng.integers(0, 2, count)
        return x.astype("int32"), y.astype("int32")

    return part(args.train_size), part(args.validation_size)


def epoch_seconds(model, train, validation, batch_size):
    """Wall time of one `fit` epoch with validation."""
    start = time.perf_counter()
    history = model.fit(
        *train,
        validation_data=validation,
        epochs=1,
        batch_size=batch_size,
        shuffle=True,
        verbose=0,
    )
    seconds = time.perf_counter() - start
    loss = history.history["loss"][-1]
    if not np.isfinite(loss):
        raise FloatingPointError(f"{model.name}: loss {loss}")
    return seconds


def run(args):
    keras.utils.set_random_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    train, validation = make_data(args, rng)
    models, warmup = {}, {}
    for architecture in args.architectures:
        for embedding in EMBEDDINGS:
            key = (architecture, embedding)
            models[key] = build(architecture, embedding, args)
            warmup[key] = epoch_seconds(
                models[key], train, validation, args.batch_size
            )
    times = {key: [] for key in models}
    loads = []
    for repeat in range(args.repeats):
        keys = list(models) if repeat % 2 == 0 else list(models)[::-1]
        load_before = os.getloadavg()
        for key in keys:
            times[key].append(
                epoch_seconds(models[key], train, validation, args.batch_size)
            )
        loads.append([load_before, os.getloadavg()])
    rows = []
    for architecture in args.architectures:
        ours = times[(architecture, "complex_order")]
        base = times[(architecture, "pe")]
        per_round = [c / p for c, p in zip(ours, base, strict=True)]
        rows.append(
            {
                "architecture": architecture,
                "params_complex_order": models[
                    (architecture, "complex_order")
                ].count_params(),
                "params_pe": models[(architecture, "pe")].count_params(),
                "seconds_complex_order": statistics.median(ours),
                "seconds_pe": statistics.median(base),
                "ratio": statistics.median(ours) / statistics.median(base),
                "ratio_per_round_median": statistics.median(per_round),
                "ratio_per_round": per_round,
                "seconds_complex_order_rounds": ours,
                "seconds_pe_rounds": base,
                "warmup_seconds_complex_order": warmup[
                    (architecture, "complex_order")
                ],
                "warmup_seconds_pe": warmup[(architecture, "pe")],
            }
        )
    return rows, loads


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--architectures",
        nargs="+",
        choices=tuple(ARCHITECTURES),
        default=list(ARCHITECTURES),
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--train-size", type=int, default=3240)
    parser.add_argument("--validation-size", type=int, default=360)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--sequence-length", type=int, default=40)
    parser.add_argument("--vocabulary-size", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes (seconds)"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.repeats, args.train_size, args.validation_size = 1, 8, 4
        args.batch_size, args.sequence_length, args.vocabulary_size = 4, 6, 20
    for name in ("repeats", "train_size", "validation_size", "batch_size"):
        if getattr(args, name) < 1:
            parser.error(
                f"--{name.replace('_', '-')} must be a positive integer. "
                f"Received: {getattr(args, name)}"
            )
    if args.output is None:
        smoke = "smoke_" if args.smoke else ""
        name = f"mr_epoch_speed_{smoke}{keras.backend.backend()}.json"
        args.output = HERE / "results" / name
    return args


def main(argv=None):
    args = parse_args(argv)
    backend = keras.backend.backend()
    environment = "".join(
        f"{name}={os.environ[name]} "
        for name in THREAD_VARIABLES
        if name in os.environ
    )
    arguments = " ".join(sys.argv[1:] if argv is None else argv)
    command = (
        f"{environment}KERAS_BACKEND={backend} python "
        f"benchmarks/mr_epoch_speed.py {arguments}"
    ).strip()
    load_start = list(os.getloadavg())
    start = time.perf_counter()
    rows, loads = run(args)
    payload = {
        "backend": backend,
        "keras_version": keras.__version__,
        "command": command,
        "settings": {
            key: value for key, value in vars(args).items() if key != "output"
        },
        "cpu_count": os.cpu_count(),
        "threads": {name: os.environ.get(name) for name in THREAD_VARIABLES},
        "load_average_start": load_start,
        "load_average_rounds": loads,
        "load_average_end": list(os.getloadavg()),
        "rows": rows,
        "seconds": time.perf_counter() - start,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(payload, indent=2) + "\n")
    for row in rows:
        print(
            f"{backend} {row['architecture']}: complex-order "
            f"{row['seconds_complex_order']:.2f} s, PE "
            f"{row['seconds_pe']:.2f} s per epoch, ratio {row['ratio']:.2f}",
            flush=True,
        )
    return payload


if __name__ == "__main__":
    main()
