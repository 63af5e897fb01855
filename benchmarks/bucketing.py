"""Set-size bucketing against full padding and unpadded plain code.

Training batches of the Multi-Set Transformer tasks hold sets of sizes
100-150 (Selby et al., App. B). Padding every set to 150 (what the
shipped recipes do) costs a step at width 150 whatever the sizes; sets of
their own sizes make JAX compile the step again for every new width.
`keras_msets.training.set_buckets` (and `SetBatches(bucket_multiple=16)`)
draws each batch's sizes from one bucket, `(100, 112)`, `(113, 128)`,
`(129, 144)` or `(145, 150)`, and pads to its top.

Part 1, step time (torch or jax, whichever `KERAS_BACKEND` says): a
training step (`train_on_batch`, Adam, MSE) of the Multi-Set Transformer
of `benchmarks/speed_vs_plain.py` (width 256, 4 blocks, 4 heads, PMA
pooling, sets of 8-d points, batch 16), timed interleaved (medians of
`--repeats`), on
- `padded_150`: sizes 100-150, padded to 150 with masks;
- `bucket_<top>`: each bucket's sizes, padded to its top; `bucketed` is
  their mean weighted by the buckets' probabilities (the expected step);
- `exact_125`: every set exactly 125 elements, no padding (ours);
- `plain_125`: the plain PyTorch / JAX code of `speed_vs_plain.py` on the
  same 125-element sets (no masks), the same weights.
Ours on a padded batch and on the same batch cut to its bucket are
checked to give the same outputs.

Part 2, compilations (jax only): `--compile-steps` training steps (50)
of a small Multi-Set Transformer (1 block, width 8, 1 head, mean
pooling, d = 2, batch 16: each compilation takes seconds, not the minutes
of a preset's step, see `benchmarks/compile_times.py`) on batches whose
sizes are drawn as (a) one size per batch, uniform in 100-150, no
padding (every new size is a new shape), (b) padded to 150, (c)
bucketed; the number of XLA compilations (JAX's backend-compile events,
the train step's and any other), their seconds and those of all steps.
The count depends on the shapes only, not on the model's size.

    OMP_NUM_THREADS=1 KERAS_BACKEND=torch nice -n 10 \\
        python benchmarks/bucketing.py --threads 1
    XLA_FLAGS="--xla_cpu_multi_thread_eigen=false \\
        intra_op_parallelism_threads=1" KERAS_BACKEND=jax nice -n 10 \\
        python benchmarks/bucketing.py --threads 1

Writes `benchmarks/results/bucketing_<backend>.json`.
"""

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import keras
import numpy as np

from keras_msets.training import set_buckets

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import speed_vs_plain as svp  # noqa: E402

BACKEND = keras.backend.backend()
LOW, HIGH = 100, 150


def _padded_batch(rng, batch, sizes, width, dim):
    """Two sets per pair, each `[batch, width, dim]` with its mask."""
    sets, masks = [], []
    for k in range(2):
        x = rng.normal(size=(batch, width, dim)).astype("float32")
        mask = np.arange(width)[None, :] < sizes[k][:, None]
        sets.append(np.where(mask[..., None], x, 0.0).astype("float32"))
        masks.append(mask)
    return {"sets": tuple(sets), "masks": tuple(masks)}


def _sizes(rng, batch, first, last):
    return [rng.integers(first, last + 1, batch) for _ in range(2)]


def step_times(args):
    """Part 1: step times of the padding policies and the plain code."""
    _, batch, dim, heads = svp.CASES["MST"]
    features = svp.MST_INPUT_DIM
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    model, weights = svp.build_ours("MST", dim, heads)
    model.compile(keras.optimizers.Adam(1e-3), "mse")
    buckets = set_buckets.bucket_ranges(LOW, HIGH, args.multiple)
    inputs = {
        "padded_150": _padded_batch(
            rng, batch, _sizes(rng, batch, LOW, HIGH), HIGH, features
        )
    }
    for first, last in buckets:
        sizes = _sizes(rng, batch, first, last)
        inputs[f"bucket_{last}"] = _padded_batch(
            rng, batch, sizes, last, features
        )
    exact = [np.full(batch, 125)] * 2
    inputs["exact_125"] = _padded_batch(rng, batch, exact, 125, features)
    target = np.zeros((batch, 1), "float32")
    # Padding invariance: a padded batch and the same batch cut to its
    # bucket give the same outputs.
    padded = inputs["padded_150"]
    cut = set_buckets.trim_to_bucket(padded, args.multiple)
    difference = float(
        np.max(
            np.abs(
                np.asarray(model.predict_on_batch(padded))
                - np.asarray(model.predict_on_batch(cut))
            )
        )
    )
    plain = svp.plain_torch if BACKEND == "torch" else svp.plain_jax
    train, infer, convert, plain_params = plain("MST", weights(), heads)
    if plain_params != model.count_params():
        raise AssertionError("plain and ours differ in parameter count")
    plain_inputs = convert(list(inputs["exact_125"]["sets"]))
    plain_target = convert([target])[0]
    plain_difference = float(
        np.max(
            np.abs(
                np.asarray(model.predict_on_batch(inputs["exact_125"]))
                - infer(plain_inputs)
            )
        )
    )
    fns = {
        name: (lambda x=x: model.train_on_batch(x, target))
        for name, x in inputs.items()
    }
    fns["plain_125"] = lambda: train(plain_inputs, plain_target)
    load_before = os.getloadavg()
    times = svp._median_times(fns, args.warmup, args.repeats)
    weights_of = {
        f"bucket_{last}": (last - first + 1) / (HIGH - LOW + 1)
        for first, last in buckets
    }
    times["bucketed"] = sum(times[k] * w for k, w in weights_of.items())
    return {
        "batch": batch,
        "width": dim,
        "heads": heads,
        "blocks": svp.MST_BLOCKS,
        "point_dim": features,
        "buckets": buckets,
        "bucket_probabilities": weights_of,
        "padded_vs_trimmed_output_difference": difference,
        "ours_vs_plain_output_difference": plain_difference,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "seconds": {k: round(v, 6) for k, v in times.items()},
        "ratios_to_plain_125": {
            k: round(v / times["plain_125"], 3) for k, v in times.items()
        },
    }


def compilations(args):
    """Part 2 (jax): XLA compilations over steps of random set sizes."""
    import jax

    from keras_msets.models import MultiSetTransformer

    events = []

    def listen(event, duration, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            events.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listen)
    batch, dim = 16, 2
    target = np.zeros((batch, 1), "float32")
    result = {}
    for policy in ("own_size", "padded_150", "bucketed"):
        keras.backend.clear_session()
        keras.utils.set_random_seed(0)
        model = MultiSetTransformer(
            latent_dim=8,
            ff_dim=8,
            num_blocks=1,
            num_heads=1,
            pooling="mean",
            decoder_units=[],
        )
        model.compile(keras.optimizers.Adam(1e-3), "mse")
        rng = np.random.default_rng(1)
        before = len(events)
        widths = []
        start = time.perf_counter()
        for _ in range(args.compile_steps):
            if policy == "own_size":
                n = int(rng.integers(LOW, HIGH + 1))
                sizes, width = [np.full(batch, n)] * 2, n
            elif policy == "padded_150":
                sizes, width = _sizes(rng, batch, LOW, HIGH), HIGH
            else:
                first, last = set_buckets.draw_bucket(
                    rng, LOW, HIGH, args.multiple
                )
                sizes, width = _sizes(rng, batch, first, last), last
            widths.append(width)
            x = _padded_batch(rng, batch, sizes, width, dim)
            model.train_on_batch(x, target)
        seconds = time.perf_counter() - start
        result[policy] = {
            "steps": args.compile_steps,
            "distinct_widths": len(set(widths)),
            "compilations": len(events) - before,
            "compile_seconds": round(sum(events[before:]), 2),
            "seconds": round(seconds, 2),
        }
        print(policy, result[policy], flush=True)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--multiple", type=int, default=16)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--compile-steps", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--skip-steps", action="store_true")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a tiny model, batch 2, 3 steps per policy (a check)",
    )
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    if BACKEND not in ("torch", "jax"):
        parser.error("run with KERAS_BACKEND=torch or KERAS_BACKEND=jax")
    if args.quick:
        svp.CASES["MST"] = ((125,), 2, 16, 2)
        args.compile_steps, args.repeats, args.warmup = 3, 1, 1
    if BACKEND == "torch":
        import torch

        torch.set_num_threads(args.threads)
    output = args.output or HERE / "results" / f"bucketing_{BACKEND}.json"
    result = {
        "backend": BACKEND,
        "keras": keras.__version__,
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "threads": args.threads,
        "multiple": args.multiple,
        "warmup": args.warmup,
        "repeats": args.repeats,
    }
    if output.is_file():  # resume: keep the parts already measured
        result.update(json.loads(output.read_text()))
    if "step_times" not in result and not args.skip_steps:
        result["step_times"] = step_times(args)
        print(json.dumps(result["step_times"]["ratios_to_plain_125"]))
        _write(output, result)
    if BACKEND == "jax" and "compilations" not in result:
        result["compilations"] = compilations(args)
        _write(output, result)
    return result


def _write(path, result):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
