"""How a Fusion Encoder Network's cost grows with the sequence length N.

Pasteris et al., "Fusion Encoder Networks" (arXiv:2402.15883, Sec. 11):
training touches the `|S| = N log2(N) + 1` segments, so one trial costs
O(N log N) time and space, and the trained (fused) network is a tree of
`log2(N) + 2` networks, O(N) work. This script measures, for
`FusionEncoderNetwork(sharing="all")` (O(1) parameters) on the parity task
and N = 64, 128, ..., `--max-length`:

- the training step time (`train_on_batch`, fixed batch, median after
  warm-up; `train_on_batch` returns the loss as a Python number, so every
  timed step has finished);
- memory: on jax, the peak of XLA's buffer assignment for the compiled
  loss-and-gradient function (`jax.jit(...).lower(...).compile()
  .memory_analysis()`), which does not depend on what else the process
  holds; on every backend, the growth of the process's peak resident set
  size (`ru_maxrss`) from just before the first training step to after the
  timed steps, in a fresh subprocess per N (it includes compilation and
  allocator caches, so it is an upper bound);
- the fused network's (`model.fuse()`) inference time (`predict_on_batch`,
  median) and depth.

Exponents are fitted by least squares on log-log axes: `time ~ N^a`, and the
exponent of `time / (N log2 N)` (0 when the cost grows like N log N).

    KERAS_BACKEND=jax python benchmarks/fen_scaling.py --max-length 4096

Writes `benchmarks/results/fen_scaling.json` and `fen_scaling.png` and
prints a markdown table.
"""

import argparse
import json
import os
import resource
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
import matplotlib.pyplot as plt

from keras_msets.data.monoid_tasks import TASKS
from keras_msets.data.monoid_tasks import monoid_task
from keras_msets.models.fen.fusion_encoder_network import FusionEncoderNetwork

HERE = Path(__file__).parent
DEFAULT_OUT = HERE / "results" / "fen_scaling.json"
TASK = "parity"


def peak_rss_mb():
    """The process's peak resident set size so far (Linux: KiB units)."""
    scale = 1 / 1024 if sys.platform != "darwin" else 1 / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def build(length, args):
    keras.utils.set_random_seed(args.seed)
    model = FusionEncoderNetwork(
        sequence_length=length,
        vocabulary_size=TASKS[TASK].vocab_size,
        output_dim=1,
        output_activation="sigmoid",
        encoding_dim=args.encoding_dim,
        sharing="all",
    )
    model.build()
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="bce")
    return model


def jax_compiled_memory(model, x, y):
    """XLA's memory analysis of the jitted loss and gradient (jax only)."""
    import jax

    trainable = [v.value for v in model.trainable_variables]
    non_trainable = [v.value for v in model.non_trainable_variables]
    metrics = [v.value for v in model.metrics_variables]

    def loss_fn(weights, x, y):
        loss, _ = model.stateless_compute_loss(
            weights, non_trainable, metrics, x=x, y=y, training=True
        )
        return loss

    compiled = (
        jax.jit(jax.value_and_grad(loss_fn)).lower(trainable, x, y).compile()
    )
    stats = compiled.memory_analysis()
    if stats is None:
        return None
    parts = {
        "temp_mb": stats.temp_size_in_bytes / 2**20,
        "argument_mb": stats.argument_size_in_bytes / 2**20,
        "output_mb": stats.output_size_in_bytes / 2**20,
    }
    # XLA's buffer assignment already overlaps temporaries whose lifetimes
    # do not intersect, so their sum with the arguments and outputs is the
    # memory the computation needs. (`peak_memory_in_bytes` is reported on
    # the CPU backend too, but excludes the temporaries: not used.)
    parts["total_mb"] = sum(parts.values())
    return parts


def measure(length, args):
    """Time and memory of one length, in this process."""
    x, y = monoid_task(TASK, args.batch_size, length, seed=args.seed)
    y = y.astype("float32")
    model = build(length, args)
    record = {
        "length": length,
        "batch_size": args.batch_size,
        "num_segments": model.segments.num_segments,
        "params": int(model.count_params()),
    }
    rss_before = peak_rss_mb()
    for _ in range(args.warmup):
        model.train_on_batch(x, y)
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        model.train_on_batch(x, y)
        times.append(time.perf_counter() - start)
    record["train_step_ms"] = 1000 * statistics.median(times)
    record["train_step_ms_all"] = [1000 * t for t in times]
    record["rss_before_mb"] = rss_before
    record["peak_rss_mb"] = peak_rss_mb()
    record["peak_rss_growth_mb"] = record["peak_rss_mb"] - rss_before
    if keras.backend.backend() == "jax":
        record["jax_compiled"] = jax_compiled_memory(model, x, y[:, None])

    fused = model.fuse()
    for _ in range(args.warmup):
        fused.predict_on_batch(x)
    times = []
    for _ in range(args.inference_repeats):
        start = time.perf_counter()
        np.asarray(fused.predict_on_batch(x))
        times.append(time.perf_counter() - start)
    record["fused_inference_ms"] = 1000 * statistics.median(times)
    record["fused_params"] = int(fused.count_params())
    record["fused_depth_networks"] = model.segments.depth + 2
    record["fused_depth_dense_layers"] = (
        len(model.token_encoder_units)
        + 1
        + model.segments.depth * (len(model.fusion_encoder_units) + 1)
        + len(model.decoder_units)
        + 1
    )
    return record


def measure_in_subprocess(length, args):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "one.json"
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--single",
            str(length),
            "--single-out",
            str(out),
            "--batch-size",
            str(args.batch_size),
            "--warmup",
            str(args.warmup),
            "--repeats",
            str(args.repeats),
            "--inference-repeats",
            str(args.inference_repeats),
            "--encoding-dim",
            str(args.encoding_dim),
            "--seed",
            str(args.seed),
        ]
        subprocess.run(command, check=True, env=os.environ.copy())
        return json.loads(out.read_text())


def fit_exponents(lengths, values):
    """Least-squares slopes on log-log axes."""
    n = np.asarray(lengths, "float64")
    v = np.asarray(values, "float64")
    keep = np.isfinite(v) & (v > 0)
    n, v = n[keep], v[keep]
    if len(n) < 2:
        return None
    slope, intercept = np.polyfit(np.log(n), np.log(v), 1)
    nlogn, _ = np.polyfit(np.log(n), np.log(v / (n * np.log2(n))), 1)
    per_n, _ = np.polyfit(np.log(n), np.log(v / n), 1)
    return {
        "exponent": float(slope),
        "log_intercept": float(intercept),
        "exponent_of_value_over_n_log2_n": float(nlogn),
        "exponent_of_value_over_n": float(per_n),
        "points": len(n),
    }


def summarise(records):
    lengths = [r["length"] for r in records]
    series = {
        "train_step_ms": [r["train_step_ms"] for r in records],
        "fused_inference_ms": [r["fused_inference_ms"] for r in records],
        "peak_rss_growth_mb": [r["peak_rss_growth_mb"] for r in records],
    }
    if all(r.get("jax_compiled") for r in records):
        series["jax_compiled_total_mb"] = [
            r["jax_compiled"]["total_mb"] for r in records
        ]
    fits = {}
    for name, values in series.items():
        fits[name] = {"all": fit_exponents(lengths, values)}
        if len(lengths) >= 6:
            fits[name]["largest_4"] = fit_exponents(lengths[-4:], values[-4:])
    return fits


def plot(records, fits, path):
    n = np.array([r["length"] for r in records], "float64")
    figure, axes = plt.subplots(1, 2, figsize=(10, 4))
    panels = [
        (
            axes[0],
            "time (ms)",
            [
                ("train_step_ms", "training step (batch)"),
                ("fused_inference_ms", "fused network inference"),
            ],
        ),
        (
            axes[1],
            "memory (MiB)",
            [
                ("jax_compiled_total_mb", "XLA buffers (loss+grad)"),
                ("peak_rss_growth_mb", "peak RSS growth"),
            ],
        ),
    ]
    for axis, ylabel, series in panels:
        for name, label in series:
            if name not in fits or fits[name]["all"] is None:
                continue
            if name.startswith("jax"):
                values = [r["jax_compiled"]["total_mb"] for r in records]
            else:
                values = [r[name] for r in records]
            fit = fits[name]["all"]
            line = axis.loglog(
                n, values, "o", label=f"{label}: N^{fit['exponent']:.2f}"
            )[0]
            axis.loglog(
                n,
                np.exp(fit["log_intercept"]) * n ** fit["exponent"],
                "--",
                color=line.get_color(),
            )
        axis.set_xlabel("sequence length N")
        axis.set_ylabel(ylabel)
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=8)
        axis.set_xscale("log", base=2)
    axes[0].set_title("FEN (sharing='all'): time")
    axes[1].set_title("FEN (sharing='all'): memory")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def markdown_table(records):
    lines = [
        "| N | segments | train step (ms) | XLA buffers (MiB) | "
        "peak RSS growth (MiB) | fused inference (ms) | fused depth |",
        "|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in records:
        compiled = r.get("jax_compiled")
        xla = f"{compiled['total_mb']:.1f}" if compiled else "n/a"
        lines.append(
            f"| {r['length']} | {r['num_segments']:,} | "
            f"{r['train_step_ms']:.1f} | {xla} | "
            f"{r['peak_rss_growth_mb']:.0f} | "
            f"{r['fused_inference_ms']:.2f} | "
            f"{r['fused_depth_networks']} networks, "
            f"{r['fused_depth_dense_layers']} dense layers |"
        )
    return "\n".join(lines)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-length", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=4096)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--inference-repeats", type=int, default=20)
    parser.add_argument("--encoding-dim", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--no-subprocess",
        action="store_true",
        help="measure every N in this process (RSS growth then is not "
        "per N: the peak is a high-water mark)",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--png", type=Path, default=None)
    parser.add_argument(
        "--refit",
        action="store_true",
        help="measure nothing: recompute the fits, table and plot of --out",
    )
    parser.add_argument("--single", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--single-out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ("min_length", "max_length"):
        n = getattr(args, name)
        if n < 2 or n & (n - 1):
            parser.error(f"--{name.replace('_', '-')} must be a power of two")
    if args.png is None:
        args.png = args.out.with_suffix(".png")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.single:
        args.single_out.write_text(json.dumps(measure(args.single, args)))
        return None
    if args.refit:
        results = json.loads(args.out.read_text())
        for record in results["runs"]:
            compiled = record.get("jax_compiled")
            if compiled:
                compiled.pop("peak_mb", None)
                compiled["total_mb"] = (
                    compiled["temp_mb"]
                    + compiled["argument_mb"]
                    + compiled["output_mb"]
                )
        return report(results, args)
    lengths = []
    n = args.min_length
    while n <= args.max_length:
        lengths.append(n)
        n *= 2
    results = {
        "settings": {
            "backend": keras.backend.backend(),
            "keras": keras.__version__,
            "task": TASK,
            "model": "FusionEncoderNetwork(sharing='all', encoding_dim="
            f"{args.encoding_dim}, hidden widths 64)",
            "batch_size": args.batch_size,
            "warmup": args.warmup,
            "repeats": args.repeats,
            "inference_repeats": args.inference_repeats,
            "subprocess_per_length": not args.no_subprocess,
            "cpu_count": os.cpu_count(),
            "date": time.strftime("%Y-%m-%d"),
            "memory": (
                "jax_compiled: XLA buffer assignment of the jitted "
                "loss+gradient, total_mb = temp + arguments + outputs (jax "
                "only); peak_rss_growth_mb: ru_maxrss "
                "after the timed steps minus before the first step "
                "(includes compilation)"
            ),
        },
        "runs": [],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for length in lengths:
        if args.no_subprocess:
            record = measure(length, args)
        else:
            record = measure_in_subprocess(length, args)
        results["runs"].append(record)
        print(
            f"N={length}: train {record['train_step_ms']:.1f} ms/step, "
            f"fused {record['fused_inference_ms']:.2f} ms, peak RSS growth "
            f"{record['peak_rss_growth_mb']:.0f} MiB",
            flush=True,
        )
        results["fits"] = summarise(results["runs"])
        args.out.write_text(json.dumps(results, indent=1))
    return report(results, args)


def report(results, args):
    """Fits, JSON, plot and the printed table."""
    results["fits"] = summarise(results["runs"])
    args.out.write_text(json.dumps(results, indent=1))
    plot(results["runs"], results["fits"], args.png)
    print(markdown_table(results["runs"]))
    for name, fit in results["fits"].items():
        for part, f in fit.items():
            if f:
                print(
                    f"{name} ({part}): N^{f['exponent']:.2f}; "
                    "/(N log2 N): "
                    f"N^{f['exponent_of_value_over_n_log2_n']:.2f}; "
                    f"/N: N^{f['exponent_of_value_over_n']:.2f}"
                )
    return results


if __name__ == "__main__":
    main()
