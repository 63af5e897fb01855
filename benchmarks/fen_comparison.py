"""Fusion Encoder Networks against LSTM, GRU and a Transformer.

Pasteris et al., "Fusion Encoder Networks" (arXiv:2402.15883), propose a
log-depth sequence model trained segment by segment (Sec. 7-11) but report
no experiments. This script trains, on the five tasks of
`keras_msets.data.monoid_tasks` and for each length N:

- `FEN-none`, `FEN-level`, `FEN-all`: `FusionEncoderNetwork` with
  `sharing="none"` (the paper's default: one parameterisation per segment),
  `"level"` and `"all"`, trained by `model.fit` with the paper's local
  (segment-by-segment) updates;
- `LSTM`, `GRU`: `Embedding` + recurrent layer + `Dense` head;
- `Transformer`: `keras_hub` `TokenAndPositionEmbedding` +
  `TransformerEncoder` blocks + mean pooling + `Dense` head;
- `FEN-all+curriculum` (with `--curriculum`): `FEN-all` trained first on
  shorter sequences (default N/4), then its weights (whose shapes do not
  depend on N with `sharing="all"`) copied into the length-N model, which
  is trained for the remaining steps; the total number of steps is the
  same as for every other model;
- `FEN-all-e2e` (only when named in `--models`): an ablation, `FEN-all`
  with `gradient="end_to_end"` (the same summed segment losses, but
  back-propagated through the whole tree instead of the paper's local
  updates), to tell the architecture from the training rule.

The recurrent and Transformer widths are chosen so that their parameter
counts are as close as possible to `FEN-all`'s (`FEN-none` and `FEN-level`
have more parameters by design: they grow like N log N and log N).
Every model of one (task, N) sees the same training set, in the same
order, and is tested on the same fresh test set (another seed) through
its root/final output; optimiser Adam 1e-3, batch 64, a fixed number of
steps. Time per step is the median over the steps after the warm-up,
measured by a callback that waits for each step's loss.

    KERAS_BACKEND=jax python benchmarks/fen_comparison.py \
        --tasks parity,dyck1 --lengths 16,64 --steps 1000 --curriculum

Writes (after every run, so that a killed run keeps what finished)
`benchmarks/results/fen_comparison.json` and prints a markdown table.
"""

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import keras
import keras_hub
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from keras_msets.data.monoid_tasks import TASKS
from keras_msets.data.monoid_tasks import monoid_task
from keras_msets.models.fen.fusion_encoder_network import FusionEncoderNetwork

HERE = Path(__file__).parent
DEFAULT_OUT = HERE / "results" / "fen_comparison.json"
FEN_MODELS = {"FEN-none": "none", "FEN-level": "level", "FEN-all": "all"}
# An ablation, not part of the comparison by default: the same FEN-all
# trained end to end (the summed loss back-propagated through the tree).
END_TO_END = "FEN-all-e2e"
BASELINES = ("LSTM", "GRU", "Transformer")
CURRICULUM = "FEN-all+curriculum"
DEFAULT_MODELS = tuple(FEN_MODELS) + BASELINES
MODELS = DEFAULT_MODELS + (CURRICULUM, END_TO_END)
RNN_EMBEDDING_DIM = 16
TRANSFORMER_HEADS = 2


# -- tasks and data -------------------------------------------------------


def task_spec(task, length):
    """Output width, activation, loss and vocabulary of a task."""
    info = TASKS[task]
    binary = info.loss == "binary"
    classes = info.classes(length)
    return {
        "binary": binary,
        "num_classes": classes,
        "output_dim": 1 if binary else classes,
        "output_activation": "sigmoid" if binary else "softmax",
        "loss": (
            "binary_crossentropy"
            if binary
            else "sparse_categorical_crossentropy"
        ),
        # `vocab_size` is the largest token id + 1: it already covers the
        # (unused) padding id 0.
        "vocabulary_size": info.vocab_size,
    }


def make_data(task, length, train_size, test_size, seed):
    x_train, y_train = monoid_task(task, train_size, length, seed=seed)
    x_test, y_test = monoid_task(task, test_size, length, seed=seed + 1)
    seen = {row.tobytes() for row in x_train}
    unseen = np.array([row.tobytes() not in seen for row in x_test])
    return x_train, y_train, x_test, y_test, unseen


class BatchStream(keras.utils.PyDataset):
    """`steps` batches drawn epoch by epoch from seeded permutations."""

    def __init__(self, x, y, batch_size, steps, seed):
        super().__init__()
        rng = np.random.default_rng(seed)
        need = steps * batch_size
        blocks = [rng.permutation(len(x)) for _ in range(-(-need // len(x)))]
        self.order = np.concatenate(blocks)[:need]
        self.x, self.y = x, y
        self.batch_size = batch_size
        self.steps = steps

    def __len__(self):
        return self.steps

    def __getitem__(self, index):
        rows = self.order[
            index * self.batch_size : (index + 1) * self.batch_size
        ]
        return self.x[rows], self.y[rows]


class StepTimer(keras.callbacks.Callback):
    """Wall time of every training step (waits for the step's loss)."""

    def __init__(self):
        super().__init__()
        self.times = []
        self.losses = []

    def on_train_batch_begin(self, batch, logs=None):
        self._start = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self.losses.append(float(logs["loss"]))
        self.times.append(time.perf_counter() - self._start)


# -- models ---------------------------------------------------------------


def fen_depth(model):
    """Sequential dense layers of the fused network (Sec. 11)."""
    token = len(model.token_encoder_units) + 1
    fusion = len(model.fusion_encoder_units) + 1
    decoder = len(model.decoder_units) + 1
    return token + model.segments.depth * fusion + decoder


def build_fen(spec, length, sharing, args, gradient="local"):
    return FusionEncoderNetwork(
        sequence_length=length,
        vocabulary_size=spec["vocabulary_size"],
        output_dim=spec["output_dim"],
        output_activation=spec["output_activation"],
        encoding_dim=args.encoding_dim,
        sharing=sharing,
        gradient=gradient,
        name=f"fen_{sharing}",
    )


def build_rnn(kind, spec, length, units):
    inputs = keras.Input((length,), dtype="int32", name="ids")
    x = keras.layers.Embedding(
        spec["vocabulary_size"], RNN_EMBEDDING_DIM, name="embedding"
    )(inputs)
    layer = keras.layers.LSTM if kind == "LSTM" else keras.layers.GRU
    x = layer(units, name=kind.lower())(x)
    outputs = keras.layers.Dense(
        spec["output_dim"], spec["output_activation"], name="head"
    )(x)
    return keras.Model(inputs, outputs, name=kind.lower())


def build_transformer(spec, length, dim, num_layers):
    inputs = keras.Input((length,), dtype="int32", name="ids")
    x = keras_hub.layers.TokenAndPositionEmbedding(
        spec["vocabulary_size"], length, dim, name="embedding"
    )(inputs)
    for k in range(num_layers):
        x = keras_hub.layers.TransformerEncoder(
            2 * dim, TRANSFORMER_HEADS, name=f"encoder_{k}"
        )(x)
    x = keras.layers.GlobalAveragePooling1D(name="mean_pool")(x)
    outputs = keras.layers.Dense(
        spec["output_dim"], spec["output_activation"], name="head"
    )(x)
    return keras.Model(inputs, outputs, name="transformer")


def rnn_params(kind, spec, units):
    """Parameter count of `build_rnn` (Keras LSTM; GRU with reset_after)."""
    e, u, out = RNN_EMBEDDING_DIM, units, spec["output_dim"]
    cell = 4 * (u * (e + u) + u) if kind == "LSTM" else 3 * u * (e + u + 2)
    return spec["vocabulary_size"] * e + cell + (u + 1) * out


def transformer_params(spec, length, dim, num_layers):
    """Parameter count of `build_transformer`."""
    d, out = dim, spec["output_dim"]
    attention = 4 * (d * d + d)
    feedforward = 2 * (d * 2 * d) + 2 * d + d
    layer_norms = 2 * 2 * d
    block = attention + feedforward + layer_norms
    embedding = (spec["vocabulary_size"] + length) * d
    return embedding + num_layers * block + (d + 1) * out


def closest_width(count, candidates, target):
    """The candidate width whose parameter count is nearest `target`."""
    return min(candidates, key=lambda w: (abs(count(w) - target), w))


def build_model(name, spec, length, target_params, args):
    """A model, its depth and the unit of that depth."""
    if name in FEN_MODELS:
        model = build_fen(spec, length, FEN_MODELS[name], args)
        model.build()
        return model, fen_depth(model), "dense layers (fused network)"
    if name == END_TO_END:
        model = build_fen(spec, length, "all", args, gradient="end_to_end")
        model.build()
        return model, fen_depth(model), "dense layers (fused network)"
    if name in ("LSTM", "GRU"):
        units = closest_width(
            lambda u: rnn_params(name, spec, u), range(2, 513), target_params
        )
        model = build_rnn(name, spec, length, units)
        return model, length, "recurrent steps"
    layers = args.transformer_layers
    dim = closest_width(
        lambda d: transformer_params(spec, length, d, layers),
        range(TRANSFORMER_HEADS, 513, TRANSFORMER_HEADS),
        target_params,
    )
    model = build_transformer(spec, length, dim, layers)
    return model, layers, "encoder blocks"


def widths(model):
    """A short description of a model's widths."""
    if isinstance(model, FusionEncoderNetwork):
        return {
            "encoding_dim": model.encoding_dim,
            "hidden": model.fusion_encoder_units,
        }
    if model.name in ("lstm", "gru"):
        units = model.get_layer(model.name).units
        return {"embedding_dim": RNN_EMBEDDING_DIM, "units": units}
    dim = model.get_layer("embedding").embedding_dim
    return {"embedding_dim": dim, "intermediate_dim": 2 * dim}


def copy_weights(source, target):
    """Copy a `sharing="all"` FEN into one of another length."""
    for name in ("token_encoder", "fusion_encoder", "decoder"):
        getattr(target, name).set_weights(getattr(source, name).get_weights())


# -- training and evaluation ----------------------------------------------


def train(model, spec, x, y, steps, args, seed):
    model.compile(
        optimizer=keras.optimizers.Adam(args.learning_rate), loss=spec["loss"]
    )
    timer = StepTimer()
    stream = BatchStream(x, y, args.batch_size, steps, seed)
    start = time.perf_counter()
    model.fit(stream, epochs=1, verbose=0, callbacks=[timer])
    return timer, time.perf_counter() - start


def predictions(spec, probabilities):
    p = np.asarray(probabilities, "float64")
    if spec["binary"]:
        return (p[:, 0] > 0.5).astype("int32")
    return np.argmax(p, axis=-1).astype("int32")


def cross_entropy(spec, probabilities, y):
    p = np.clip(np.asarray(probabilities, "float64"), 1e-7, 1 - 1e-7)
    if spec["binary"]:
        q = p[:, 0]
        return float(-np.mean(y * np.log(q) + (1 - y) * np.log(1 - q)))
    return float(-np.mean(np.log(p[np.arange(len(y)), y])))


def run_one(name, task, length, data, target_params, args):
    x_train, y_train, x_test, y_test, unseen = data
    spec = task_spec(task, length)
    keras.utils.set_random_seed(args.seed)
    base = "FEN-all" if name == CURRICULUM else name
    model, depth, depth_unit = build_model(
        base, spec, length, target_params, args
    )
    record = {
        "task": task,
        "length": length,
        "model": name,
        "backend": keras.backend.backend(),
        "steps": args.steps,
        "batch_size": args.batch_size,
        "train_size": args.train_size,
        "test_size": args.test_size,
        "seed": args.seed,
        "params": int(model.count_params()),
        "depth": int(depth),
        "depth_unit": depth_unit,
        "widths": widths(model),
    }
    stages = []
    steps_left = args.steps
    if name == CURRICULUM:
        shorter = [length // d for d in args.curriculum_divisors]
        shorter = [m for m in shorter if 2 <= m < length]
        if task == "dyck1":
            shorter = [m for m in shorter if m % 2 == 0]
        short_steps = int(args.steps * args.curriculum_fraction)
        previous = None
        for k, m in enumerate(shorter):
            stage_steps = short_steps // len(shorter)
            keras.utils.set_random_seed(args.seed)
            small = build_fen(spec, m, "all", args)
            small.build()
            if previous is not None:
                copy_weights(previous, small)
            xs, ys = monoid_task(
                task, args.train_size, m, seed=args.seed + 1000 * (k + 1)
            )
            timer, seconds = train(
                small, spec, xs, ys, stage_steps, args, args.seed + k + 1
            )
            stages.append(
                {
                    "length": m,
                    "steps": stage_steps,
                    "seconds": round(seconds, 2),
                    "final_loss": float(np.mean(timer.losses[-20:])),
                }
            )
            steps_left -= stage_steps
            previous = small
        if previous is not None:
            copy_weights(previous, model)
        stages.append({"length": length, "steps": steps_left})
        record["curriculum"] = stages
    timer, seconds = train(
        model, spec, x_train, y_train, steps_left, args, args.seed
    )
    warm = timer.times[args.warmup :] or timer.times
    probabilities = model.predict(x_test, batch_size=500, verbose=0)
    predicted = predictions(spec, probabilities)
    correct = predicted == y_test
    record.update(
        {
            "accuracy": float(np.mean(correct)),
            "accuracy_unseen": (
                float(np.mean(correct[unseen])) if unseen.any() else None
            ),
            "test_unseen_fraction": float(np.mean(unseen)),
            "test_cross_entropy": cross_entropy(spec, probabilities, y_test),
            "chance_accuracy": float(np.max(np.bincount(y_test)) / len(y_test)),
            "ms_per_step": 1000 * statistics.median(warm),
            "first_step_s": timer.times[0],
            "train_seconds": seconds + sum(s.get("seconds", 0) for s in stages),
            "final_train_loss": float(np.mean(timer.losses[-20:])),
        }
    )
    if isinstance(model, FusionEncoderNetwork):
        fused = model.fuse()
        fused_p = fused.predict(x_test, batch_size=500, verbose=0)
        record["fused_accuracy"] = float(
            np.mean(predictions(spec, fused_p) == y_test)
        )
        record["fused_params"] = int(fused.count_params())
        record["final_train_loss_note"] = (
            f"sum over |S| = {model.segments.num_segments} segment losses"
        )
    return record


# -- results --------------------------------------------------------------


def key(record):
    return (record["task"], record["length"], record["model"])


def write(results, path):
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(results, indent=1))
    os.replace(tmp, path)


def markdown_table(runs):
    lines = [
        "| task | N | model | accuracy | time/step (ms) | params | depth |",
        "|---|---:|---|---:|---:|---:|---|",
    ]
    order = {m: k for k, m in enumerate(MODELS)}
    runs = sorted(
        runs,
        key=lambda r: (r["task"], r["length"], order.get(r["model"], 99)),
    )
    for r in runs:
        if "skipped" in r:
            lines.append(
                f"| {r['task']} | {r['length']} | {r['model']} | skipped: "
                f"{r['skipped']} | | | |"
            )
            continue
        lines.append(
            f"| {r['task']} | {r['length']} | {r['model']} | "
            f"{r['accuracy']:.4f} | {r['ms_per_step']:.1f} | "
            f"{r['params']:,} | {r['depth']} {r['depth_unit']} |"
        )
    return "\n".join(lines)


def plot(runs, path):
    """Test accuracy per task and model, one panel per length."""
    runs = [r for r in runs if "skipped" not in r]
    lengths = sorted({r["length"] for r in runs})
    tasks = [t for t in TASKS if any(r["task"] == t for r in runs)]
    models = [m for m in MODELS if any(r["model"] == m for r in runs)]
    figure, axes = plt.subplots(
        1, len(lengths), figsize=(5 * len(lengths), 3.8), squeeze=False
    )
    width = 0.8 / max(len(models), 1)
    for axis, length in zip(axes[0], lengths, strict=True):
        for k, model in enumerate(models):
            values = [
                next(
                    (
                        r["accuracy"]
                        for r in runs
                        if (r["task"], r["length"], r["model"])
                        == (task, length, model)
                    ),
                    np.nan,
                )
                for task in tasks
            ]
            axis.bar(
                np.arange(len(tasks)) + (k - len(models) / 2 + 0.5) * width,
                values,
                width,
                label=model,
            )
        for t, task in enumerate(tasks):
            chance = [
                r["chance_accuracy"]
                for r in runs
                if (r["task"], r["length"]) == (task, length)
            ]
            if chance:
                axis.hlines(
                    chance[0], t - 0.45, t + 0.45, colors="k", linestyles=":"
                )
        axis.set_xticks(range(len(tasks)))
        axis.set_xticklabels(
            [t.replace("_", "\n", 1) for t in tasks], fontsize=8
        )
        axis.set_ylim(0, 1.02)
        axis.set_title(f"N = {length}")
    axes[0][0].set_ylabel("test accuracy (dotted: majority class)")
    axes[0][-1].legend(fontsize=7, loc="upper right")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tasks", default=",".join(TASKS), help="comma-separated task names"
    )
    parser.add_argument("--lengths", default="16,64")
    parser.add_argument(
        "--models",
        default=",".join(DEFAULT_MODELS),
        help=f"comma-separated, from {', '.join(MODELS)}",
    )
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--train-size", type=int, default=20_000)
    parser.add_argument("--test-size", type=int, default=2_000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--encoding-dim", type=int, default=32)
    parser.add_argument("--transformer-layers", type=int, default=2)
    parser.add_argument(
        "--max-none-length",
        type=int,
        default=128,
        help="skip FEN-none above this length (N log N parameter sets)",
    )
    parser.add_argument(
        "--curriculum",
        action="store_true",
        help=f"also run {CURRICULUM}",
    )
    parser.add_argument(
        "--curriculum-divisors",
        default="4",
        help="shorter stages N/d, in order (e.g. '16,4')",
    )
    parser.add_argument(
        "--curriculum-fraction",
        type=float,
        default=0.5,
        help="fraction of --steps spent on the shorter stages",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep the runs already in --out and skip them",
    )
    parser.add_argument(
        "--png",
        type=Path,
        default=None,
        help="accuracy plot of every run in --out (default: --out with "
        "the suffix .png; 'none' for no plot)",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if args.png is None:
        args.png = args.out.with_suffix(".png")
    elif str(args.png) == "none":
        args.png = None
    args.tasks = [t for t in args.tasks.split(",") if t]
    args.lengths = [int(n) for n in args.lengths.split(",") if n]
    args.models = [m for m in args.models.split(",") if m]
    if args.curriculum and CURRICULUM not in args.models:
        args.models.append(CURRICULUM)
    args.curriculum_divisors = [
        int(d) for d in args.curriculum_divisors.split(",") if d
    ]
    for task in args.tasks:
        if task not in TASKS:
            parser.error(f"unknown task {task!r}; choose from {list(TASKS)}")
    for name in args.models:
        if name not in MODELS:
            parser.error(f"unknown model {name!r}; choose from {MODELS}")
    for n in args.lengths:
        if n < 1 or n & (n - 1):
            parser.error(f"lengths must be powers of two, got {n}")
    return args


def main(argv=None):
    args = parse_args(argv)
    results = {"runs": []}
    if args.resume and args.out.exists():
        results = json.loads(args.out.read_text())
    done = {key(r) for r in results["runs"]}
    results["settings"] = {
        "backend": keras.backend.backend(),
        "keras": keras.__version__,
        "optimizer": f"Adam({args.learning_rate})",
        "cpu_count": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d"),
        "timing": (
            "median wall time of fit's steps after the first "
            f"{args.warmup}, each step waited for"
        ),
    }
    for task in args.tasks:
        for length in args.lengths:
            todo = [m for m in args.models if (task, length, m) not in done]
            if not todo:
                continue
            data = make_data(
                task, length, args.train_size, args.test_size, args.seed
            )
            spec = task_spec(task, length)
            keras.utils.set_random_seed(args.seed)
            reference = build_fen(spec, length, "all", args)
            reference.build()
            target = reference.count_params()
            for name in todo:
                if name == "FEN-none" and length > args.max_none_length:
                    sets = reference.segments.num_segments
                    record = {
                        "task": task,
                        "length": length,
                        "model": name,
                        "skipped": (
                            f"N={length} > {args.max_none_length}: "
                            f"{sets:,} decoders and {sets - length:,} fusion "
                            "encoders with their own parameters are too "
                            "many for 2 CPU cores"
                        ),
                    }
                else:
                    record = run_one(name, task, length, data, target, args)
                    print(
                        f"{task} N={length} {name}: accuracy "
                        f"{record['accuracy']:.4f}, "
                        f"{record['ms_per_step']:.1f} ms/step, "
                        f"{record['params']:,} params, "
                        f"{record['train_seconds']:.0f} s",
                        flush=True,
                    )
                results["runs"].append(record)
                write(results, args.out)
    print(markdown_table(results["runs"]))
    if args.png is not None:
        plot(results["runs"], args.png)
    return results


if __name__ == "__main__":
    main()
