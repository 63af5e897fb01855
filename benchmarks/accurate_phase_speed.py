"""`accurate_phase` and the `ComplexMultiplicationPooling` step, timed.

`keras_msets.ops.accurate_phase` returns every angle as a float32 pair
`hi + lo`, `lo` computed in float64 on TensorFlow and PyTorch. This script
times that computation against the formulas it replaced (kept below as
`previous_accurate_phase`: the residual `(im cos hi - re sin hi) / |z|`
with a float64 square root, on tensors that carry the gradient; and
`rotation_accurate_phase`: the quotient of the parts of `z` rotated by
`-hi`, with float64 `cos` and `sin` of `hi`, which the float64 `atan2`
replaced), all in the same run and interleaved (each repeat runs every
variant in turn), medians of `--repeats` after one warm-up:

- `phase`: `accurate_phase` alone, forward and backward of `sum(hi + lo)`
  on `[batch, n, 2 d]` (batch 32, d = 64);
- `pooling`: a training step (`train_on_batch`, Adam, MSE) of the `CMP`
  case of `benchmarks/speed_vs_plain.py`: `Dense(3 d)` of 32 features,
  then `ComplexMultiplicationPooling(use_initial_weights=True)`, with the
  layer's `accurate_phase` swapped for each variant;
- `layer`: the same training step with the current `accurate_phase`,
  the layer as it is (`current`: one split of the inputs, one guard of
  the float64 rest, the phase sum's blocks taken along the set axis)
  against the layer as it was (`previous`: two slices of the inputs, a
  second float64 guard, the angles moved to the last axis before the
  blocks; `PreviousComplexMultiplicationPooling` below). Their outputs on
  the same weights are compared (`max_output_difference`);
- `guarantees`: the `pooling` step as it is (`current`), with float32
  `atan2` angles and no float64 rest (`float32_angles`), with a plain
  float32 sum of the angles instead of the exact phase sum
  (`plain_sum`), and with neither (`neither`, the plain code's
  arithmetic inside our layer): what each accuracy guarantee costs.

The variants' angles `hi + lo` are compared in float64 with numpy's
`arctan2` of the same inputs (`max_error_*`). The load average is stored
before and after every row.

    OMP_NUM_THREADS=1 KERAS_BACKEND=torch nice -n 10 \\
        python benchmarks/accurate_phase_speed.py \\
        --output benchmarks/results/accurate_phase_speed_torch.json
"""

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import keras
import numpy as np
from keras import ops

from keras_msets import layers
from keras_msets.layers import complex_multiplication_pooling as pooling
from keras_msets.ops import log_polar
from keras_msets.ops import phase as phase_ops
from keras_msets.ops.complex import complex_phase
from keras_msets.ops.complex import complex_split

BATCH, STATES, FEATURES = 32, 64, 32


def previous_accurate_phase(x):
    """`accurate_phase` as computed before: float64 radius, with autodiff."""
    x = ops.convert_to_tensor(x)
    dtype = phase_ops._accumulation_dtype(x)
    x = ops.cast(x, dtype)
    hi = complex_phase(x)
    real, imag = complex_split(ops.cast(x, "float64"))
    hi64 = ops.cast(hi, "float64")
    radius = ops.sqrt(real * real + imag * imag)
    safe = ops.where(ops.greater(radius, 0), radius, ops.ones_like(radius))
    lo = (imag * ops.cos(hi64) - real * ops.sin(hi64)) / safe
    lo = ops.where(ops.isfinite(lo), lo, ops.zeros_like(lo))
    lo = ops.stop_gradient(ops.cast(lo, dtype))
    return hi, lo


def _rotated_by_minus_hi(x):
    """`(hi, dtype, along, across)`: `hi` and the float64 parts of `x`
    rotated by `-hi`; None where float64 is not available."""
    x = ops.convert_to_tensor(x)
    dtype = phase_ops._accumulation_dtype(x)
    x = ops.cast(x, dtype)
    hi = complex_phase(x)
    if not phase_ops._float64_available():
        return None
    real, imag = complex_split(ops.cast(ops.stop_gradient(x), "float64"))
    hi64 = ops.cast(ops.stop_gradient(hi), "float64")
    cos, sin = ops.cos(hi64), ops.sin(hi64)
    return hi, dtype, real * cos + imag * sin, imag * cos - real * sin


def guarded_accurate_phase(x):
    """`accurate_phase` with the former float64 guard of `along > 0`."""
    parts = _rotated_by_minus_hi(x)
    if parts is None:
        return phase_ops.accurate_phase(x)
    hi, dtype, along, across = parts
    safe = ops.where(ops.greater(along, 0), along, ops.ones_like(along))
    lo = ops.cast(across / safe, dtype)
    lo = ops.where(ops.isfinite(lo), lo, ops.zeros_like(lo))
    return hi, lo


def rotation_accurate_phase(x):
    """`accurate_phase` with the float64 rest of the rotation by `-hi`:
    `(im cos hi - re sin hi) / (re cos hi + im sin hi)`."""
    parts = _rotated_by_minus_hi(x)
    if parts is None:
        return phase_ops.accurate_phase(x)
    hi, dtype, along, across = parts
    lo = ops.cast(across / along, dtype)
    lo = ops.where(ops.isfinite(lo), lo, ops.zeros_like(lo))
    return hi, lo


def _previous_block_sums(hi, lo, length):
    """Sums blocks of 64 along the last axis (zero padded)."""
    if length is None:
        length = ops.shape(hi)[-1]
    block = phase_ops._PHASE_BLOCK
    padding = [[0, 0]] * (len(hi.shape) - 1) + [[0, -length % block]]
    sums = []
    for part in (hi, lo):
        part = ops.pad(part, padding)
        shape = tuple(ops.shape(part)[:-1]) + (-1, block)
        sums.append(ops.sum(ops.reshape(part, shape), axis=-1))
    return sums


def previous_phase_sum(phase, axis, wrap_phase, phase_lo=None):
    """The exact phase sum as computed before: angles moved to the last
    axis, then blocks of 64 (static lengths only, as in this script)."""
    phase = ops.moveaxis(phase, axis, -1)
    hi, lo = phase_ops._split_phase(phase)
    if phase_lo is not None:
        lo = lo + ops.moveaxis(phase_lo, axis, -1)
    length = phase.shape[-1]
    while length > phase_ops._PHASE_BLOCK:
        hi, lo = phase_ops._reduce_turns(*_previous_block_sums(hi, lo, length))
        length = -(-length // phase_ops._PHASE_BLOCK)
    hi, lo = ops.sum(hi, axis=-1), ops.sum(lo, axis=-1)
    if wrap_phase:
        turns = ops.ceil((hi + lo - math.pi) / phase_ops._TWO_PI)
        hi, lo = phase_ops._reduce_turns(hi, lo, turns)
    return hi + lo


class PreviousComplexMultiplicationPooling(layers.ComplexMultiplicationPooling):
    """The layer as it was: two slices of the inputs, the float64 guard
    of `guarded_accurate_phase`, `previous_phase_sum`."""

    def call(self, inputs, mask=None):
        num_states = self._num_states(inputs.shape)
        inputs = ops.cast(inputs, "float32")
        log_modulus = inputs[..., :num_states]
        direction = inputs[..., num_states:]
        phase, phase_lo = guarded_accurate_phase(direction)
        current = log_polar._phase_sum
        log_polar._phase_sum = previous_phase_sum
        try:
            log_modulus, phase = log_polar.log_polar_product(
                log_modulus, phase, mask=mask, axis=-2, phase_lo=phase_lo
            )
        finally:
            log_polar._phase_sum = current
        log_modulus = log_modulus + self.initial_log_modulus
        phase = phase + self.initial_phase
        return ops.concatenate(
            [ops.cos(phase), ops.sin(phase), log_modulus], axis=-1
        )


LAYERS = {
    "current": layers.ComplexMultiplicationPooling,
    "previous": PreviousComplexMultiplicationPooling,
}
KINDS = ("phase", "pooling", "layer", "guarantees")


def float32_phase(x):
    """`complex_phase` in float32 and no rest: the plain code's angles."""
    hi = complex_phase(ops.cast(x, "float32"))
    return hi, ops.zeros_like(hi)


def plain_phase_sum(phase, axis, wrap_phase, phase_lo=None):
    """A plain float32 sum of the angles (no blocks, no reduction)."""
    if phase_lo is not None:
        phase = phase + phase_lo
    return ops.sum(phase, axis=axis)


def _guarantee_step(n, exact_angles, exact_sum):
    """The `CMP` pooling step with or without each accuracy guarantee."""
    fn = phase_ops.accurate_phase if exact_angles else float32_phase
    step = _pooling_step(fn, n, np.random.default_rng(0))
    if exact_sum:
        return step

    def plain_sum_step():
        current = log_polar._phase_sum
        log_polar._phase_sum = plain_phase_sum
        try:
            step()
        finally:
            log_polar._phase_sum = current

    return plain_sum_step


GUARANTEES = {
    "current": (True, True),
    "float32_angles": (False, True),
    "plain_sum": (True, False),
    "neither": (False, False),
}

VARIANTS = {
    "current": phase_ops.accurate_phase,
    "previous": previous_accurate_phase,
    "rotation": rotation_accurate_phase,
}


def _phase_step(fn, x):
    """Forward and backward of `sum(hi + lo)` (backend autodiff)."""
    backend = keras.backend.backend()
    if backend == "torch":
        import torch

        tensor = torch.tensor(x, requires_grad=True)

        def step():
            hi, lo = fn(tensor)
            (hi + lo).sum().backward()
            tensor.grad = None

        return step
    if backend == "tensorflow":
        import tensorflow as tf

        tensor = tf.constant(x)

        def step():
            with tf.GradientTape() as tape:
                tape.watch(tensor)
                hi, lo = fn(tensor)
                total = tf.reduce_sum(hi + lo)
            tape.gradient(total, tensor).numpy()

        return step
    raise ValueError(
        "run with KERAS_BACKEND=torch or tensorflow (JAX takes its float32 "
        f"refinement, unchanged). Received: {backend}"
    )


def _pooling_step(fn, n, rng, layer=layers.ComplexMultiplicationPooling):
    """One `train_on_batch` of Dense + pooling with `fn` as the phase."""
    keras.utils.set_random_seed(0)
    inputs = keras.Input((n, FEATURES))
    hidden = keras.layers.Dense(3 * STATES)(inputs)
    outputs = layer(use_initial_weights=True)(hidden)
    model = keras.Model(inputs, outputs)
    model.compile(keras.optimizers.Adam(1e-3), "mse")
    x = rng.normal(size=(BATCH, n, FEATURES)).astype("float32")
    y = np.zeros((BATCH, 3 * STATES), "float32")

    def step():
        saved = pooling.msets_ops.accurate_phase
        pooling.msets_ops.accurate_phase = fn
        try:
            model.train_on_batch(x, y)
        finally:
            pooling.msets_ops.accurate_phase = saved

    step.initial_output = ops.convert_to_numpy(model.predict_on_batch(x))
    return step


def _max_error(fn, x):
    hi, lo = fn(ops.convert_to_tensor(x))
    total = ops.convert_to_numpy(hi).astype("float64")
    total = total + ops.convert_to_numpy(lo).astype("float64")
    real, imag = np.split(x.astype("float64"), 2, axis=-1)
    return float(np.max(np.abs(total - np.arctan2(imag, real))))


def _medians(steps, repeats):
    for step in steps.values():
        step()  # warm-up (tracing, first allocations)
    times = {name: [] for name in steps}
    for _ in range(repeats):
        for name, step in steps.items():
            start = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def run_row(kind, n, repeats, rng):
    x = rng.normal(size=(BATCH, n, 2 * STATES)).astype("float32")
    if kind == "phase":
        steps = {name: _phase_step(fn, x) for name, fn in VARIANTS.items()}
    elif kind == "guarantees":
        steps = {
            name: _guarantee_step(n, *flags)
            for name, flags in GUARANTEES.items()
        }
    elif kind == "layer":
        steps = {
            name: _pooling_step(
                phase_ops.accurate_phase, n, np.random.default_rng(0), layer
            )
            for name, layer in LAYERS.items()
        }
    else:
        steps = {
            name: _pooling_step(fn, n, np.random.default_rng(0))
            for name, fn in VARIANTS.items()
        }
    load_before = os.getloadavg()
    times = _medians(steps, repeats)
    row = {
        "kind": kind,
        "n": n,
        "batch": BATCH,
        "states": STATES,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        **{f"ms_{name}": 1e3 * t for name, t in times.items()},
    }
    if kind == "guarantees":
        for name in GUARANTEES:
            row[f"ratio_{name}_over_current"] = times[name] / times["current"]
        return row
    row["ratio_current_over_previous"] = times["current"] / times["previous"]
    if "rotation" in times:
        row["ratio_current_over_rotation"] = (
            times["current"] / times["rotation"]
        )
    if kind == "phase":
        for name, fn in VARIANTS.items():
            row[f"max_error_{name}"] = _max_error(fn, x)
    if kind == "layer":
        # The same initial weights (same seed) and inputs.
        current, previous = (s.initial_output for s in steps.values())
        row["max_output_difference"] = float(np.max(np.abs(current - previous)))
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--kinds",
        nargs="+",
        choices=KINDS,
        default=list(KINDS),
        help="rows to time (`layer` runs on jax too)",
    )
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.repeats < 1 or min(args.sizes) < 1:
        parser.error(
            "--repeats and --sizes must be positive integers. Received: "
            f"repeats={args.repeats}, sizes={args.sizes}"
        )
    backend = keras.backend.backend()
    if backend == "torch":
        import torch

        torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    result = {
        "backend": backend,
        "keras": keras.__version__,
        "cpu_count": os.cpu_count(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "repeats": args.repeats,
        "command": " ".join(
            ["python benchmarks/accurate_phase_speed.py"]
            + (sys.argv[1:] if argv is None else list(argv))
        ),
        "load_average_start": os.getloadavg(),
        "rows": [],
    }
    for kind in args.kinds:
        for n in args.sizes:
            row = run_row(kind, n, args.repeats, rng)
            result["rows"].append(row)
            if kind == "guarantees":
                print(
                    f"{kind:8s} n={n:6d}  "
                    + ", ".join(
                        f"{name} {row[f'ms_{name}']:.1f} ms"
                        for name in GUARANTEES
                    ),
                    flush=True,
                )
                continue
            print(
                f"{kind:8s} n={n:6d}  current {row['ms_current']:.1f} ms, "
                f"previous {row['ms_previous']:.1f} ms, ratio "
                f"{row['ratio_current_over_previous']:.2f}",
                flush=True,
            )
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
