"""Time and memory of a multi-set attention step against the total set size.

Selby et al. ("Learning Functions on Multiple Sets using Multi-Set
Transformers", UAI 2022, Sec. 5.4 and Table 5) count the operations of
their models: the Multi-Set Transformer needs
`O((n + m) d^2 + (n + m)^2 d)` for sets of sizes `n` and `m`, quadratic in
the total size, and the paper leaves linear-time attention to future work.
This script measures it, for one training step of

    two sets [batch, n, 2] -> Dense(dim) -> block -> pool per set
        -> concatenate -> Dense(1), MSE loss, Adam,

with `block` either `MultisetAttentionBlock` (`msab`, every element of
both sets attends to every element of both sets) or
`InducedMultisetAttentionBlock` (`induced`, attention onto a set goes
through `m` inducing points: linear in the total size). The pooling is
PMA with one seed per set (App. B), or a mean (`--pooling mean`). The
widths default to dim 64, 4 heads, feedforward width 128 and 16
inducing points; batch 1, both sets of size n = total / 2, total sizes
100 to 20,000 (`--sizes`).

Measured for each (block, total size), by default in a fresh subprocess:

- the training step time: median of `--repeats` `train_on_batch` calls
  after `--warmup` untimed ones (the first compiles; `train_on_batch`
  returns the loss as a Python number, so every timed step has finished);
- memory, as `benchmarks/fen_scaling.py` measures it (its helpers are
  imported): the growth of the process's peak resident set size from just
  before the first step to after the timed steps (includes compilation
  and allocator caches: an upper bound, dominated by fixed costs at small
  sizes); on jax also XLA's buffer assignment of the jitted
  loss-and-gradient (`jax_compiled_mb`, independent of what else the
  process holds); on a GPU also the device's peak allocated memory
  (`device_peak_mb`). The memory used for the verdict below is the first
  of device peak, XLA buffers, RSS growth that the run has.

A size is skipped, with the reason in the JSON, rather than run when the
block's attention probability matrices of one forward pass (one
`n_q x n_k` float32 matrix per head and attention) would exceed
`--max-attention-mb` (MSAB at 20,000: 4 attentions x 4 heads x 10,000 x
10,000 x 4 bytes = 6.1 GiB, before their gradients), when the step time
predicted from the block's last measured size (growing as N^2 for MSAB,
N for the inducing-point block) exceeds `--max-seconds`, when a smaller
size of the block was skipped, or when the subprocess fails (out of
memory) or runs past `--timeout`. The attention estimate is the same on
every backend, so that all backends measure the same sizes; on torch it
is pessimistic: `scaled_dot_product_attention` on CPU uses a fused
(flash) kernel that never stores the `n x n` matrices, so MSAB's memory
there may grow nearly linearly while its time stays quadratic.

Exponents are least-squares slopes on log-log axes (`fen_scaling`'s
`fit_exponents`): `time ~ N^a`, `memory ~ N^b`, over all measured sizes
and over the sizes from `--fit-min-size` (2,000) on, where fixed per-step
costs no longer flatten the curve. The inducing-point block is called
linear when both its time and memory exponents over those sizes are at
most `1 + --linear-tolerance` (1.25); MSAB's time exponent is expected
near 2 there. On a busy machine pass `OMP_NUM_THREADS=1` to torch (see
`complex_layer_speed.py`); the thread settings are stored in the JSON.

    KERAS_BACKEND=jax python benchmarks/mst_scaling.py
    KERAS_BACKEND=tensorflow python benchmarks/mst_scaling.py
    OMP_NUM_THREADS=1 KERAS_BACKEND=torch python benchmarks/mst_scaling.py
    KERAS_BACKEND=jax python benchmarks/mst_scaling.py --sizes 100 500 2000

Writes `benchmarks/results/mst_scaling_<backend>.json` (settings, command,
machine, one record per block and size, fits, verdict) and a PNG beside it,
and prints a markdown table and the exponents.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import keras
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from complex_layer_speed import THREAD_VARIABLES  # noqa: E402
from complex_layer_speed import machine_of  # noqa: E402
from complex_layer_speed import threads_of  # noqa: E402
from fen_scaling import fit_exponents  # noqa: E402
from fen_scaling import jax_compiled_memory  # noqa: E402
from fen_scaling import peak_rss_mb  # noqa: E402

from keras_msets import layers  # noqa: E402

BLOCKS = ("msab", "induced")
BLOCK_NAMES = {
    "msab": "MultisetAttentionBlock",
    "induced": "InducedMultisetAttentionBlock",
}
# How the step time of each block grows with the total size (Table 5):
# used to predict the next size's time for `--max-seconds`.
EXPECTED_EXPONENT = {"msab": 2.0, "induced": 1.0}
DEFAULT_SIZES = (100, 200, 500, 1000, 2000, 5000, 10000, 20000)
NUM_SETS = 2
MEMORY_KEYS = ("device_peak_mb", "jax_compiled_mb", "peak_rss_growth_mb")
MEMORY_LABELS = {
    "device_peak_mb": "device peak",
    "jax_compiled_mb": "XLA buffers (loss+grad)",
    "peak_rss_growth_mb": "peak RSS growth",
}


def attention_mb(block, total_size, args):
    """MiB of the block's attention probabilities in one forward pass.

    One float32 `n_q x n_k` matrix per head and attention. MSAB: every set
    attends to every set (`K^2` attentions of `n x n`). Inducing points:
    `K` summaries `MAB(I_l, X_l)` (`m x n`) and `K^2` pair blocks
    `MAB(X_k, H_l)` (`n x m`).
    """
    n = total_size // NUM_SETS
    if block == "msab":
        entries = NUM_SETS**2 * n * n
    else:
        m = args.num_inducing_points
        entries = (NUM_SETS + NUM_SETS**2) * m * n
    return args.num_heads * entries * 4 / 2**20


class StepModel(keras.Model):
    """A functional model whose loss computes its own prediction if needed.

    `fen_scaling.jax_compiled_memory` compiles
    `stateless_compute_loss(..., x=x, y=y)` without `y_pred` (a Fusion
    Encoder Network computes its prediction inside its loss); this makes
    a plain model do the same. Training passes `y_pred` and is unchanged.
    """

    def compute_loss(
        self, x=None, y=None, y_pred=None, sample_weight=None, training=True
    ):
        if y_pred is None:
            y_pred = self(x, training=training)
        return super().compute_loss(
            x, y, y_pred, sample_weight=sample_weight, training=training
        )


def build_model(block, set_size, args):
    """The compiled model of one step (see the module docstring)."""
    keras.utils.set_random_seed(args.seed)
    inputs = [
        keras.Input(
            (set_size, args.input_dim), batch_size=args.batch_size, name=name
        )
        for name in ("set_x", "set_y")
    ]
    projection = keras.layers.Dense(args.dim, name="projection")
    sets = [projection(x) for x in inputs]
    if block == "msab":
        layer = layers.MultisetAttentionBlock(
            num_heads=args.num_heads, name="block"
        )
    else:
        layer = layers.InducedMultisetAttentionBlock(
            args.num_inducing_points, num_heads=args.num_heads, name="block"
        )
    sets = layer(sets)
    pooled = []
    for k, z in enumerate(sets):
        if args.pooling == "pma":
            pool = layers.PoolingByMultiheadAttention(
                num_heads=args.num_heads, name=f"pool_{k}"
            )
            pooled.append(keras.layers.Flatten(name=f"flatten_{k}")(pool(z)))
        else:
            pooled.append(layers.MaskedSetPooling("mean", name=f"pool_{k}")(z))
    x = keras.layers.Concatenate(name="concatenate")(pooled)
    outputs = keras.layers.Dense(1, name="head")(x)
    model = StepModel(inputs, outputs, name=f"{block}_{set_size}")
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss="mse",
        run_eagerly=args.run_eagerly,
    )
    return model


def make_batch(set_size, args):
    rng = np.random.default_rng(args.seed)
    x = [
        rng.normal(size=(args.batch_size, set_size, args.input_dim)).astype(
            "float32"
        )
        for _ in range(NUM_SETS)
    ]
    y = rng.normal(size=(args.batch_size, 1)).astype("float32")
    return x, y


def _gpu_devices():
    """The backend's GPU devices (empty on a CPU-only machine)."""
    backend = keras.backend.backend()
    if backend == "torch":
        import torch

        return ["cuda"] if torch.cuda.is_available() else []
    if backend == "jax":
        import jax

        return [d for d in jax.devices() if d.platform == "gpu"]
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.config.list_logical_devices("GPU")
    return []


def reset_device_peak():
    if keras.backend.backend() == "torch" and _gpu_devices():
        import torch

        torch.cuda.reset_peak_memory_stats()
    elif keras.backend.backend() == "tensorflow" and _gpu_devices():
        import tensorflow as tf

        tf.config.experimental.reset_memory_stats("GPU:0")


def device_peak_mb():
    """Peak memory allocated on the first GPU (None without a GPU).

    On jax the peak cannot be reset: it covers the whole (fresh) process.
    """
    devices = _gpu_devices()
    if not devices:
        return None
    backend = keras.backend.backend()
    if backend == "torch":
        import torch

        return torch.cuda.max_memory_allocated() / 2**20
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20
    stats = devices[0].memory_stats() or {}
    peak = stats.get("peak_bytes_in_use")
    return None if peak is None else peak / 2**20


def measure(block, total_size, args):
    """Time and memory of one block and total size, in this process."""
    set_size = total_size // NUM_SETS
    x, y = make_batch(set_size, args)
    model = build_model(block, set_size, args)
    record = {
        "block": block,
        "layer": BLOCK_NAMES[block],
        "total_size": total_size,
        "set_size": set_size,
        "params": int(model.count_params()),
        "attention_mb_estimate": attention_mb(block, total_size, args),
    }
    rss_before = peak_rss_mb()
    reset_device_peak()
    start = time.perf_counter()
    for _ in range(args.warmup):
        model.train_on_batch(x, y)
    record["warmup_seconds"] = time.perf_counter() - start
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        loss = model.train_on_batch(x, y)
        times.append(time.perf_counter() - start)
    if not math.isfinite(loss):
        raise FloatingPointError(f"{block} at {total_size}: loss {loss}")
    record["loss"] = float(loss)
    record["step_ms"] = 1000 * statistics.median(times)
    record["step_ms_min"] = 1000 * min(times)
    record["step_ms_all"] = [1000 * t for t in times]
    record["rss_before_mb"] = rss_before
    record["peak_rss_mb"] = peak_rss_mb()
    record["peak_rss_growth_mb"] = record["peak_rss_mb"] - rss_before
    device_peak = device_peak_mb()
    if device_peak is not None:
        record["device_peak_mb"] = device_peak
    record["jit_compile"] = bool(model.jit_compile)
    if keras.backend.backend() == "jax":
        compiled = jax_compiled_memory(model, x, y)
        if compiled is not None:
            record["jax_compiled"] = compiled
            record["jax_compiled_mb"] = compiled["total_mb"]
    return record


def _child_argv(args):
    """The settings a subprocess needs to measure one size as we would."""
    argv = [
        f"--dim={args.dim}",
        f"--num-heads={args.num_heads}",
        f"--num-inducing-points={args.num_inducing_points}",
        f"--input-dim={args.input_dim}",
        f"--batch-size={args.batch_size}",
        f"--pooling={args.pooling}",
        f"--warmup={args.warmup}",
        f"--repeats={args.repeats}",
        f"--seed={args.seed}",
    ]
    if args.run_eagerly:
        argv.append("--run-eagerly")
    return argv


def measure_in_subprocess(block, total_size, args):
    """`measure` in a fresh process, so that its peak RSS is its own.

    Returns `{"skipped": reason}` when the process fails or times out.
    """
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "one.json"
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            f"--single-block={block}",
            f"--single-size={total_size}",
            f"--single-out={out}",
            *_child_argv(args),
        ]
        try:
            done = subprocess.run(
                command,
                env=os.environ.copy(),
                capture_output=True,
                text=True,
                timeout=args.timeout,
            )
        except subprocess.TimeoutExpired:
            return {"skipped": f"ran past --timeout {args.timeout:g} s"}
        if done.returncode != 0 or not out.exists():
            tail = " | ".join(done.stderr.strip().splitlines()[-3:])
            killed = " (killed: out of memory?)" if done.returncode < 0 else ""
            return {
                "skipped": f"subprocess failed with exit code "
                f"{done.returncode}{killed}: {tail}"
            }
        return json.loads(out.read_text())


def skip_reason(block, total_size, args, last):
    """Why this size is not run (None: run it).

    `last` is the block's latest record (None before the first size).
    """
    estimate = attention_mb(block, total_size, args)
    if estimate > args.max_attention_mb:
        return (
            f"estimated attention matrices {estimate:,.4g} MiB (float32, "
            f"{args.num_heads} heads) exceed --max-attention-mb "
            f"{args.max_attention_mb:g}"
        )
    if last is None:
        return None
    if "skipped" in last:
        return f"a smaller size was skipped ({last['total_size']})"
    exponent = EXPECTED_EXPONENT[block]
    ratio = total_size / last["total_size"]
    predicted = last["step_ms"] / 1000 * ratio**exponent
    if predicted > args.max_seconds:
        return (
            f"predicted step time {predicted:,.3g} s ({last['step_ms']:,.0f} "
            f"ms at {last['total_size']}, growing as N^{exponent:g}) exceeds "
            f"--max-seconds {args.max_seconds:g}"
        )
    return None


def memory_key(records):
    """The best memory measure every measured record has."""
    measured = [r for r in records if "skipped" not in r]
    for key in MEMORY_KEYS:
        if measured and all(r.get(key) is not None for r in measured):
            return key
    return "peak_rss_growth_mb"


def fit_block(records, block, key, min_size):
    """Log-log fits of `key` against the total size for one block.

    `"all"`: every measured size; `"large"`: the sizes from `min_size` on
    (or the largest three when fewer than two reach it), with `"sizes"`.
    """
    points = [
        (r["total_size"], r[key])
        for r in records
        if r["block"] == block and "skipped" not in r and r.get(key) is not None
    ]
    points.sort()
    large = [p for p in points if p[0] >= min_size]
    if len(large) < 2:
        large = points[-3:]
    fits = {}
    for name, chosen in (("all", points), ("large", large)):
        fit = fit_exponents([p[0] for p in chosen], [p[1] for p in chosen])
        if fit is not None:
            fit["sizes"] = [p[0] for p in chosen]
        fits[name] = fit
    return fits


def verdict(fits, block, key, tolerance):
    """Whether time and memory grow at most linearly over the large sizes."""
    time_fit = fits[block]["step_ms"]["large"]
    memory_fit = fits[block][key]["large"]
    result = {
        "memory_measure": key,
        "tolerance": tolerance,
        "time_exponent": time_fit and time_fit["exponent"],
        "memory_exponent": memory_fit and memory_fit["exponent"],
        "sizes": time_fit and time_fit["sizes"],
    }
    exponents = [result["time_exponent"], result["memory_exponent"]]
    if None in exponents:
        result["linear"] = None
    else:
        result["linear"] = all(e <= 1 + tolerance for e in exponents)
    return result


def summarise(results, args):
    records = results["runs"]
    key = memory_key(records)
    keys = ["step_ms"] + [
        k
        for k in MEMORY_KEYS
        if k == key
        or any(r.get(k) is not None for r in records if "skipped" not in r)
    ]
    blocks = [b for b in BLOCKS if any(r["block"] == b for r in records)]
    fits = {
        block: {
            name: fit_block(records, block, name, args.fit_min_size)
            for name in keys
        }
        for block in blocks
    }
    results["fits"] = fits
    results["memory_measure"] = key
    results["verdict"] = {
        block: verdict(fits, block, key, args.linear_tolerance)
        for block in blocks
    }
    return results


def markdown_table(records, key):
    """One row per record; `key` is the memory column (RSS growth too)."""
    columns = [key] if key == "peak_rss_growth_mb" else [key, MEMORY_KEYS[-1]]
    lines = [
        "| block | total size | per set | parameters | step (ms) | "
        + " | ".join(f"{MEMORY_LABELS[c]} (MiB)" for c in columns)
        + " |",
        "|---|---:|---:|---:|---:|" + "---:|" * len(columns),
    ]
    for r in records:
        head = f"| {r['layer']} | {r['total_size']:,} | "
        head += f"{r['total_size'] // NUM_SETS:,} | "
        if "skipped" in r:
            empty = " |" * (1 + len(columns))
            lines.append(head + f"skipped: {r['skipped']} |" + empty)
            continue
        cells = [f"{r['params']:,}", f"{r['step_ms']:,.1f}"]
        for c in columns:
            cells.append("n/a" if r.get(c) is None else f"{r[c]:,.1f}")
        lines.append(head + " | ".join(cells) + " |")
    return "\n".join(lines)


def exponent_lines(results):
    lines = []
    for block, fits in results["fits"].items():
        for key, fit in fits.items():
            parts = []
            for part in ("all", "large"):
                f = fit[part]
                if f is not None:
                    sizes = f"{f['sizes'][0]}-{f['sizes'][-1]}"
                    parts.append(f"N^{f['exponent']:.2f} over {sizes}")
            if parts:
                lines.append(f"{BLOCK_NAMES[block]} {key}: " + ", ".join(parts))
    for block, v in results["verdict"].items():
        if v["linear"] is None:
            state = "undetermined (too few measured sizes)"
        else:
            state = "linear" if v["linear"] else "not linear"
            state += f" (linear: both exponents <= {1 + v['tolerance']:g})"
        time_exponent = v["time_exponent"]
        memory_exponent = v["memory_exponent"]
        lines.append(
            f"{BLOCK_NAMES[block]}: time N^"
            + ("?" if time_exponent is None else f"{time_exponent:.2f}")
            + f", memory ({v['memory_measure']}) N^"
            + ("?" if memory_exponent is None else f"{memory_exponent:.2f}")
            + f" over the large sizes {v['sizes'] or []}: {state}"
        )
    return lines


def plot(results, path):
    records = results["runs"]
    key = results["memory_measure"]
    figure, axes = plt.subplots(1, 2, figsize=(10, 4))
    for axis, name, ylabel in (
        (axes[0], "step_ms", "training step (ms)"),
        (axes[1], key, f"{MEMORY_LABELS[key]} (MiB)"),
    ):
        for block, fits in results["fits"].items():
            points = sorted(
                (r["total_size"], r[name])
                for r in records
                if r["block"] == block
                and "skipped" not in r
                and r.get(name) is not None
                and r[name] > 0
            )
            if not points:
                continue
            n = np.array([p[0] for p in points], "float64")
            fit = fits[name]["large"]
            label = BLOCK_NAMES[block]
            if fit is not None:
                label += f": N^{fit['exponent']:.2f} (large sizes)"
            line = axis.loglog(n, [p[1] for p in points], "o-", label=label)[0]
            if fit is not None:
                sizes = np.array(fit["sizes"], "float64")
                axis.loglog(
                    sizes,
                    np.exp(fit["log_intercept"]) * sizes ** fit["exponent"],
                    "--",
                    color=line.get_color(),
                )
        axis.set_xlabel("total set size N = n + m")
        axis.set_ylabel(ylabel)
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=8)
    backend = results["settings"]["backend"]
    axes[0].set_title(f"one training step, {backend}")
    axes[1].set_title(f"memory, {backend}")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def report(results, args):
    """Fits, JSON, plot, and the printed table and exponents."""
    summarise(results, args)
    args.output.write_text(json.dumps(results, indent=1) + "\n")
    plot(results, args.png)
    print()
    print(results["command"])
    print()
    print(markdown_table(results["runs"], results["memory_measure"]))
    print()
    for line in exponent_lines(results):
        print(line)
    return results


def _positive(type_):
    def parse(value):
        number = type_(value)
        if not number > 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {value}")
        return number

    return parse


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        type=_positive(int),
        nargs="+",
        default=list(DEFAULT_SIZES),
        help="total set sizes n + m (even: two sets of equal size)",
    )
    parser.add_argument("--blocks", nargs="+", choices=BLOCKS, default=None)
    parser.add_argument("--dim", type=_positive(int), default=64)
    parser.add_argument("--num-heads", type=_positive(int), default=4)
    parser.add_argument(
        "--num-inducing-points", type=_positive(int), default=16
    )
    parser.add_argument("--input-dim", type=_positive(int), default=2)
    parser.add_argument("--batch-size", type=_positive(int), default=1)
    parser.add_argument("--pooling", choices=("pma", "mean"), default="pma")
    parser.add_argument(
        "--warmup",
        type=_positive(int),
        default=2,
        help="untimed steps first (the first one compiles)",
    )
    parser.add_argument("--repeats", type=_positive(int), default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--max-seconds",
        type=_positive(float),
        default=60.0,
        help="skip a size whose predicted step time exceeds this",
    )
    parser.add_argument(
        "--max-attention-mb",
        type=_positive(float),
        default=4096.0,
        help="skip a size whose attention matrices (one float32 n_q x n_k "
        "per head and attention, forward pass) exceed this many MiB",
    )
    parser.add_argument(
        "--timeout",
        type=_positive(float),
        default=1800.0,
        help="seconds one size's subprocess may run",
    )
    parser.add_argument(
        "--fit-min-size",
        type=_positive(int),
        default=2000,
        help="the 'large' fits and the verdict use sizes from this on",
    )
    parser.add_argument("--linear-tolerance", type=float, default=0.25)
    parser.add_argument(
        "--no-subprocess",
        action="store_true",
        help="measure every size in this process (the RSS growth then is "
        "not per size: the peak is a high-water mark)",
    )
    parser.add_argument("--run-eagerly", action="store_true")
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--png", type=Path, default=None)
    parser.add_argument(
        "--refit",
        action="store_true",
        help="measure nothing: recompute the fits, table and plot of --output",
    )
    parser.add_argument(
        "--single-block", choices=BLOCKS, help=argparse.SUPPRESS
    )
    parser.add_argument("--single-size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--single-out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.blocks = args.blocks or list(BLOCKS)
    odd = [n for n in args.sizes if n % NUM_SETS]
    if odd:
        parser.error(f"--sizes must be even (two equal sets). Received {odd}")
    args.sizes = sorted(set(args.sizes))
    if args.dim % args.num_heads:
        parser.error("--dim must be divisible by --num-heads")
    if args.output is None:
        name = f"mst_scaling_{keras.backend.backend()}.json"
        args.output = HERE / "results" / name
    if args.png is None:
        args.png = args.output.with_suffix(".png")
    return args


def settings_of(args):
    return {
        "backend": keras.backend.backend(),
        "keras_version": keras.__version__,
        "blocks": {b: BLOCK_NAMES[b] for b in args.blocks},
        "sizes": args.sizes,
        "num_sets": NUM_SETS,
        "model": "two sets [batch, n, input_dim] -> Dense(dim) -> block -> "
        f"{'PMA (1 seed)' if args.pooling == 'pma' else 'mean'} per set -> "
        "concatenate -> Dense(1); Adam(1e-3), MSE, train_on_batch",
        "dim": args.dim,
        "num_heads": args.num_heads,
        "ff_dim": 2 * args.dim,
        "num_inducing_points": args.num_inducing_points,
        "input_dim": args.input_dim,
        "batch_size": args.batch_size,
        "pooling": args.pooling,
        "warmup": args.warmup,
        "repeats": args.repeats,
        "seed": args.seed,
        "max_seconds": args.max_seconds,
        "max_attention_mb": args.max_attention_mb,
        "timeout": args.timeout,
        "fit_min_size": args.fit_min_size,
        "linear_tolerance": args.linear_tolerance,
        "subprocess_per_size": not args.no_subprocess,
        "run_eagerly": args.run_eagerly,
        "memory": (
            "peak_rss_growth_mb: ru_maxrss after the timed steps minus "
            "before the first step (includes compilation); jax_compiled_mb "
            "(jax): XLA buffer assignment of the jitted loss+gradient, "
            "temp + arguments + outputs; device_peak_mb (GPU only): peak "
            "allocated device memory"
        ),
        "date": time.strftime("%Y-%m-%d"),
    }


def command_of(argv):
    environment = "".join(
        f"{name}={os.environ[name]} "
        for name in THREAD_VARIABLES
        if name in os.environ
    )
    arguments = " ".join(sys.argv[1:] if argv is None else argv)
    return (
        f"{environment}KERAS_BACKEND={keras.backend.backend()} python "
        f"benchmarks/mst_scaling.py {arguments}"
    ).strip()


def main(argv=None):
    args = parse_args(argv)
    if args.single_block:
        record = measure(args.single_block, args.single_size, args)
        args.single_out.write_text(json.dumps(record))
        return record
    if args.refit:
        results = json.loads(args.output.read_text())
        results["settings"]["fit_min_size"] = args.fit_min_size
        results["settings"]["linear_tolerance"] = args.linear_tolerance
        return report(results, args)
    results = {
        "backend": keras.backend.backend(),
        "command": command_of(argv),
        "settings": settings_of(args),
        "machine": machine_of(),
        "threads": threads_of(),
        "load_average_start": list(os.getloadavg()),
        "runs": [],
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    last = {}
    for total_size in args.sizes:
        for block in args.blocks:
            reason = skip_reason(block, total_size, args, last.get(block))
            if reason is not None:
                record = {"skipped": reason}
            elif args.no_subprocess:
                record = measure(block, total_size, args)
            else:
                record = measure_in_subprocess(block, total_size, args)
            record.update(
                block=block, layer=BLOCK_NAMES[block], total_size=total_size
            )
            results["runs"].append(record)
            last[block] = record
            if "skipped" in record:
                print(f"{block} N={total_size}: skipped: {record['skipped']}")
            else:
                print(
                    f"{block} N={total_size}: {record['step_ms']:,.1f} "
                    f"ms/step, peak RSS growth "
                    f"{record['peak_rss_growth_mb']:,.0f} MiB",
                    flush=True,
                )
            results["seconds"] = time.perf_counter() - start
            args.output.write_text(json.dumps(results, indent=1) + "\n")
    results["load_average_end"] = list(os.getloadavg())
    return report(results, args)


if __name__ == "__main__":
    main()
