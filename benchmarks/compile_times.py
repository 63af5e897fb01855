"""First-call (compile) time of every zoo preset, per backend.

For each preset of `keras_msets.zoo.list()` the model is loaded with its
trained weights and compiled as the zoo compiles it (`zoo.load(name,
compile=True)`: the loss and metrics its metadata or recipe records,
Adam), then on the example input stored in its `metadata.json` (a small
fixed batch) the script times:

- `load`: `zoo.load` (deserialisation, weight loading, file checks);
- `predict_first` / `predict_second`: the first and the second
  `predict_on_batch` call;
- `train_first` / `train_second`: the first and the second
  `train_on_batch` call on the same input (targets: the class with the
  largest output for a sparse categorical loss, else zeros shaped like
  the output).

The first call of each includes tracing and compilation (XLA on jax, a
`tf.function` graph on TensorFlow, nothing on torch, which runs eagerly);
`*_compile_s` is first minus second. A preset that fails is recorded with
its error and the run goes on. The JSON is rewritten after every preset
and a rerun skips presets already stored (delete the file to start over).

    OMP_NUM_THREADS=1 KERAS_BACKEND=torch nice -n 10 \\
        python benchmarks/compile_times.py
    XLA_FLAGS="--xla_cpu_multi_thread_eigen=false \\
        intra_op_parallelism_threads=1" KERAS_BACKEND=jax nice -n 10 \\
        python benchmarks/compile_times.py
    TF_NUM_INTRAOP_THREADS=1 TF_NUM_INTEROP_THREADS=1 \\
        KERAS_BACKEND=tensorflow nice -n 10 python benchmarks/compile_times.py

Writes `benchmarks/results/compile_times_<backend>.json` (`--output`
overrides; `--presets` picks some).
"""

import argparse
import json
import os
import platform
import time
from pathlib import Path

import keras
import numpy as np

from keras_msets import zoo
from keras_msets.training.preset_io import example_input

HERE = Path(__file__).parent
BACKEND = keras.backend.backend()


def _timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def _targets(model, outputs):
    """Targets that the compiled loss accepts, from the model's output."""
    outputs = np.asarray(outputs, "float32")
    loss = model.loss
    name = loss if isinstance(loss, str) else type(loss).__name__
    if "sparse" in str(name).lower():
        return np.argmax(outputs, axis=-1).astype("int32")
    return np.zeros_like(outputs)


def time_preset(name):
    """The load, first and second predict and train times of `name`."""
    model, load_s = _timed(lambda: zoo.load(name, compile=True))
    x = example_input(zoo.info(name)["example"])
    outputs, predict_first = _timed(lambda: model.predict_on_batch(x))
    _, predict_second = _timed(lambda: model.predict_on_batch(x))
    y = _targets(model, outputs)
    _, train_first = _timed(lambda: model.train_on_batch(x, y))
    _, train_second = _timed(lambda: model.train_on_batch(x, y))
    shapes = [list(np.shape(a)) for a in keras.tree.flatten(x)]
    return {
        "preset": name,
        "input_shapes": shapes,
        "parameters": int(model.count_params()),
        "load_s": load_s,
        "predict_first_s": predict_first,
        "predict_second_s": predict_second,
        "predict_compile_s": predict_first - predict_second,
        "train_first_s": train_first,
        "train_second_s": train_second,
        "train_compile_s": train_first - train_second,
        "load_average": list(os.getloadavg()),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", default=None)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    output = args.output or HERE / "results" / f"compile_times_{BACKEND}.json"
    result = {
        "backend": BACKEND,
        "keras": keras.__version__,
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "threads": {
            k: os.environ.get(k)
            for k in (
                "OMP_NUM_THREADS",
                "XLA_FLAGS",
                "TF_NUM_INTRAOP_THREADS",
                "TF_NUM_INTEROP_THREADS",
            )
        },
        "rows": [],
    }
    if output.is_file():
        result = json.loads(output.read_text())
    done = {row["preset"] for row in result["rows"]}
    for name in args.presets or zoo.list():
        if name in done:
            continue
        keras.backend.clear_session()
        try:
            row = time_preset(name)
        except Exception as error:  # recorded, the run goes on
            row = {"preset": name, "error": f"{type(error).__name__}: {error}"}
        result["rows"].append(row)
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(result, indent=1) + "\n")
        if "error" in row:
            print(f"{name}: {row['error']}", flush=True)
        else:
            print(
                f"{name}: load {row['load_s']:.1f} s, predict first "
                f"{row['predict_first_s']:.2f} s / second "
                f"{row['predict_second_s']:.3f} s, train first "
                f"{row['train_first_s']:.2f} s / second "
                f"{row['train_second_s']:.3f} s",
                flush=True,
            )
    return result


if __name__ == "__main__":
    main()
