"""`matmul_last_axis` against Keras's `ops.matmul` on TensorFlow.

A set block's dense projections multiply `[batch, n, dim]` sets by a
matrix. Keras's TensorFlow `matmul` does that with `tf.tensordot`;
`keras_msets.ops.products.matmul_last_axis` reshapes to a matrix, takes
one product and reshapes back (both with `keras.ops`). Per shape and per
function, medians of `--repeats` interleaved rounds:

- `graph_ops`: ops in the graph of the product with unknown leading sizes
  (forward, and forward + gradient of a sum of squares);
- `trace_ms`: the time to trace that graph (a new `tf.function` each
  time, what every new model's first `fit`/`predict` pays per product);
- `eager_us`: one eager call;
- `graph_run_us`: one call of the traced forward + gradient function.

    KERAS_BACKEND=tensorflow python benchmarks/tensorflow_matmul_ops.py \\
        --output benchmarks/results/tensorflow_matmul_ops.json
"""

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import keras
import numpy as np
from keras import ops

from keras_msets.ops.products import matmul_last_axis

# The layer tests' sets (2 x 5, 4 features) and a set block's projection
# at the speed benchmark's width (32 sets of 100, width 128).
SHAPES = [((2, 5, 4), 8), ((32, 100, 128), 128)]


def _functions(kernel):
    return {
        "ops.matmul": lambda x: ops.matmul(x, kernel),
        "matmul_last_axis": lambda x: matmul_last_axis(x, kernel),
    }


def _measure(tf, fn, x, kernel):
    spec = tf.TensorSpec([None] * (x.ndim - 1) + [x.shape[-1]], tf.float32)

    def with_gradient(x):
        with tf.GradientTape() as tape:
            tape.watch(kernel)
            y = fn(x)
            loss = tf.reduce_sum(y * y)
        return tape.gradient(loss, kernel)

    start = time.perf_counter()
    forward = tf.function(fn, autograph=False).get_concrete_function(spec)
    trace_ms = 1e3 * (time.perf_counter() - start)
    step = tf.function(with_gradient, autograph=False)
    step_graph = step.get_concrete_function(spec)
    tensor = tf.constant(x)
    fn(tensor)
    start = time.perf_counter()
    fn(tensor)
    eager_us = 1e6 * (time.perf_counter() - start)
    step(tensor).numpy()
    start = time.perf_counter()
    step(tensor).numpy()
    run_us = 1e6 * (time.perf_counter() - start)
    return {
        "graph_ops": len(forward.graph.get_operations()),
        "graph_ops_with_gradient": len(step_graph.graph.get_operations()),
        "trace_ms": trace_ms,
        "eager_us": eager_us,
        "graph_run_us": run_us,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    if keras.backend.backend() != "tensorflow":
        parser.error("run with KERAS_BACKEND=tensorflow")
    import tensorflow as tf

    load_start = list(os.getloadavg())
    rng = np.random.default_rng(0)
    rows = []
    for shape, units in SHAPES:
        x = rng.normal(size=shape).astype("float32")
        kernel = tf.Variable(
            rng.normal(size=(shape[-1], units)), dtype="float32"
        )
        functions = _functions(kernel)
        runs = {name: [] for name in functions}
        for _ in range(args.repeats):
            for name, fn in functions.items():
                runs[name].append(_measure(tf, fn, x, kernel))
        for name, measured in runs.items():
            row = {"shape": list(shape), "units": units, "function": name}
            for key in measured[0]:
                row[key] = statistics.median(m[key] for m in measured)
            rows.append(row)
            print(json.dumps(row))
    result = {
        "command": "KERAS_BACKEND=tensorflow python "
        "benchmarks/tensorflow_matmul_ops.py",
        "repeats": args.repeats,
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "load_average_start": load_start,
        "load_average_end": list(os.getloadavg()),
        "rows": rows,
    }
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
