"""Where a torch training step of a set block spends its time.

For each case of `benchmarks/speed_vs_plain.py` (same model, weights and
inputs) this times `model.train_on_batch` with the blocks' sub-layers
called as layers (`layer_calls`) and with their arithmetic written out
(`written_out`, the default), beside the plain PyTorch step of the same
equations, and splits each step into:

- `math_ms`: the self time of the ATen operators (forward, backward and
  the optimizer's updates), from `torch.profiler`;
- `other_ms`: the rest of the step's wall time (Python: Keras's trainer,
  layer calls, `keras.ops` dispatch, autograd bookkeeping);
- `layer_calls`: `Layer.__call__` invocations per step, and
  `convert_to_tensor` calls (from `cProfile`);
- `top_aten_ms`: the ATen operators with the largest self time per step.

`step_ms` is the median of `--repeats` interleaved steps without a
profiler; the profiled steps are slower, so the split is given per step
of the profiled run.

    KERAS_BACKEND=torch python benchmarks/torch_step_overhead.py \\
        --cases PMA SAB --n 100 --threads 1 \\
        --output benchmarks/results/torch_step_overhead.json
"""

import argparse
import cProfile
import json
import os
import pstats
import sys
from pathlib import Path

import keras
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import speed_vs_plain as bench  # noqa: E402

TOP_OPS = 8


def _aten_ms(fn, steps):
    """ATen self time and wall time (ms per step), and the largest ops."""
    import time

    from torch.profiler import ProfilerActivity
    from torch.profiler import profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        for _ in range(steps):
            fn()
        wall = time.perf_counter() - start
    events = [e for e in prof.key_averages() if e.key.startswith("aten::")]
    aten = sum(event.self_cpu_time_total for event in events)
    events.sort(key=lambda e: e.self_cpu_time_total, reverse=True)
    top = {
        e.key: round(e.self_cpu_time_total / 1e3 / steps, 3)
        for e in events[:TOP_OPS]
    }
    return aten / 1e3 / steps, wall * 1e3 / steps, top


def _python_counts(fn, steps):
    """`Layer.__call__` and `convert_to_tensor` calls per step."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(steps):
        fn()
    profiler.disable()
    counts = {"layer_calls": 0, "convert_to_tensor": 0}
    for (path, _, name), row in pstats.Stats(profiler).stats.items():
        calls = row[1]  # all calls, recursive ones included
        if name == "__call__" and path.endswith("keras/src/layers/layer.py"):
            counts["layer_calls"] += calls
        if name == "convert_to_tensor" and "backend/torch" in path:
            counts["convert_to_tensor"] += calls
    return {k: v / steps for k, v in counts.items()}


def run(case, n, repeats, steps):
    _, batch, dim, heads = bench.CASES[case]
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    sets = 2 if case in bench.TWO_SETS else 1
    arrays = bench._case_inputs(rng, batch, n, dim, sets)
    layer, weights = bench.build_ours(case, dim, heads)
    model = bench._ours_model(layer, case, n, dim)
    x = arrays if sets > 1 else arrays[0]
    target = np.zeros_like(np.asarray(model.predict_on_batch(x)))
    train, _, convert, _ = bench.plain_torch(case, weights(), heads)
    plain_inputs = convert(arrays)
    plain_target = convert([target])[0]

    def ours():
        return model.train_on_batch(x, target)

    fns = {
        "written_out": ours,
        "layer_calls": bench._layer_calls(ours),
        "plain": lambda: train(plain_inputs, plain_target),
    }
    times = bench._median_times(fns, 2, repeats)
    row = {"case": case, "n": n, "load_average": os.getloadavg()}
    for name, fn in fns.items():
        math_ms, profiled_ms, top = _aten_ms(fn, steps)
        row[name] = {
            "step_ms": round(times[name] * 1e3, 3),
            "profiled_step_ms": round(profiled_ms, 3),
            "math_ms": round(math_ms, 3),
            "other_ms": round(profiled_ms - math_ms, 3),
            **_python_counts(fn, steps),
            "top_aten_ms": top,
        }
        print(case, n, name, row[name], flush=True)
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=["PMA", "SAB"])
    parser.add_argument("--n", type=int, nargs="+", default=[100])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--output")
    args = parser.parse_args(argv)
    if keras.backend.backend() != "torch":
        parser.error("run with KERAS_BACKEND=torch")
    import torch

    torch.set_num_threads(args.threads)
    result = {"threads": args.threads, "keras": keras.__version__, "rows": []}
    for case in args.cases:
        for n in args.n:
            result["rows"].append(run(case, n, args.repeats, args.steps))
    if args.output:
        Path(args.output).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
