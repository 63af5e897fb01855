"""Where the complex-order embedding's JAX step goes: `cos` and `sin`.

Times jitted JAX functions on the shapes of `complex_layer_speed.py`'s
embedding pair (batch 64, length 40, d = 64, 10,000 ids), medians of
`--repeats` calls after one warm-up: element-wise functions of
`[64, 40, 64]` angles (XLA's `cos`, `sin`, `exp`, and
`keras_msets.ops.phase.cos_sin`), `position_phase`, and the gradient of
the layer's output (a fixed linear read-out) against that of a plain
lookup of one table. The load average and `XLA_FLAGS` are stored. One
thread: `XLA_FLAGS` set to `--xla_cpu_multi_thread_eigen=false
intra_op_parallelism_threads=1`, then

    KERAS_BACKEND=jax nice -n 10 python benchmarks/cos_sin_speed.py \\
        --output benchmarks/results/cos_sin_speed_jax.json
"""

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import keras
import numpy as np

from keras_msets.layers import ComplexOrderEmbedding
from keras_msets.ops import position_phase
from keras_msets.ops.phase import cos_sin

VOCABULARY, DIM, BATCH, LENGTH = 10000, 64, 64, 40


def _median_ms(fn, args, repeats):
    import jax

    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def run(repeats):
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(0)
    ids = jnp.asarray(rng.integers(1, VOCABULARY, (BATCH, LENGTH)), "int32")
    angles = jnp.asarray(
        rng.uniform(-3 * np.pi, 3 * np.pi, (BATCH, LENGTH, DIM)), "float32"
    )
    frequencies = jnp.asarray(rng.normal(size=(BATCH, LENGTH, DIM)), "float32")
    positions = jnp.arange(1, LENGTH + 1, dtype="int32")[:, None]
    readout = jnp.asarray(rng.normal(size=(2 * DIM,)), "float32")
    layer = ComplexOrderEmbedding(VOCABULARY, DIM)
    layer.build((BATCH, LENGTH))
    tables = [jnp.asarray(v.value) for v in layer.trainable_variables]

    def layer_loss(tables, ids):
        outputs, _ = layer.stateless_call(tables, [], ids)
        return jnp.mean(outputs @ readout)

    def lookup_loss(table, ids):
        return jnp.mean(jnp.take(table, ids, axis=0) @ readout[:DIM])

    def phase(f):
        return position_phase(f, positions, max_position=LENGTH)

    jit = jax.jit
    rows = {
        "cos": (jit(jnp.cos), (angles,)),
        "sin": (jit(jnp.sin), (angles,)),
        "exp": (jit(jnp.exp), (angles,)),
        "cos_sin": (jit(cos_sin), (angles,)),
        "position_phase": (jit(phase), (frequencies,)),
        "layer_gradient": (jit(jax.grad(layer_loss)), (tables, ids)),
        "lookup_gradient": (jit(jax.grad(lookup_loss)), (tables[0], ids)),
    }
    return {name: _median_ms(fn, a, repeats) for name, (fn, a) in rows.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    if keras.backend.backend() != "jax":
        raise ValueError(
            "Run with KERAS_BACKEND=jax (this measures XLA's CPU cos and "
            f"sin). Received: {keras.backend.backend()}"
        )
    if args.repeats < 1:
        parser.error(f"--repeats must be positive. Received: {args.repeats}")
    load_start = list(os.getloadavg())
    ms = run(args.repeats)
    result = {
        "backend": "jax",
        "xla_flags": os.environ.get("XLA_FLAGS"),
        "shape": [BATCH, LENGTH, DIM],
        "repeats": args.repeats,
        "load_average_start": load_start,
        "load_average_end": list(os.getloadavg()),
        "ms": ms,
    }
    for name, value in ms.items():
        print(f"{name}: {value:.3f} ms", flush=True)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
