"""How much of a test run on tensorflow goes into `tf.function`.

A pytest plugin: loaded with `-p`, on the tensorflow backend it times, per
test process,

- `function_calls_s`: every call of a `tf.function` (Keras's train,
  test and predict steps and any other), the first call's tracing and
  graph optimization included; nested calls count inside their caller
  only;
- `tracing_s`: the part of it spent tracing (building the graph from
  the Python code, `_create_concrete_function`);
- `symbolic_build_s`: Keras's `_symbolic_build` (the model's output
  spec, compiled loss, metrics and optimizer built before the first
  step; tests/conftest.py makes every `fit` do it),

beside the test run's call time per test (`test_call_s`), and writes one
JSON file per process into `$TRACING_SHARE_DIR`. `--summarize DIR`
adds them up:

    rm -rf /tmp/tracing && TRACING_SHARE_DIR=/tmp/tracing \\
        KERAS_BACKEND=tensorflow KERAS_MSETS_BACKEND_INDEPENDENT_ON=torch \\
        PYTHONPATH=benchmarks python -m pytest -p tensorflow_tracing_share \\
        -p no:cacheprovider -n 2 --dist worksteal -q -m "not slow"
    python benchmarks/tensorflow_tracing_share.py --summarize /tmp/tracing \\
        --output benchmarks/results/test_suite/tensorflow_tracing_share.json

On other backends the plugin does nothing.
"""

import argparse
import collections
import json
import os
import pathlib
import time

import pytest

TOTALS = collections.Counter()
PER_TEST = collections.Counter()
_DEPTH = [0]


def _timed(function, key, outermost_only=False):
    def wrapper(*args, **kwargs):
        outer = _DEPTH[0] == 0
        _DEPTH[0] += outermost_only
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            _DEPTH[0] -= outermost_only
            if outer or not outermost_only:
                TOTALS[key] += time.perf_counter() - start

    return wrapper


def pytest_configure(config):
    if os.environ.get("KERAS_BACKEND") != "tensorflow":
        return
    from keras.src.trainers import trainer
    from tensorflow.python.eager.polymorphic_function import (
        polymorphic_function,
    )
    from tensorflow.python.eager.polymorphic_function import tracing_compilation

    function = polymorphic_function.Function
    function.__call__ = _timed(
        function.__call__, "function_calls_s", outermost_only=True
    )
    tracing_compilation._create_concrete_function = _timed(
        tracing_compilation._create_concrete_function, "tracing_s"
    )
    trainer.Trainer._symbolic_build = _timed(
        trainer.Trainer._symbolic_build, "symbolic_build_s"
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    start = time.perf_counter()
    before = TOTALS["function_calls_s"] + TOTALS["symbolic_build_s"]
    yield
    TOTALS["test_call_s"] += time.perf_counter() - start
    after = TOTALS["function_calls_s"] + TOTALS["symbolic_build_s"]
    PER_TEST[item.nodeid] += after - before


def pytest_sessionfinish(session):
    folder = os.environ.get("TRACING_SHARE_DIR")
    if not folder or not TOTALS:
        return
    path = pathlib.Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    record = {
        "totals": dict(TOTALS),
        "per_test": dict(PER_TEST.most_common()),
    }
    out = path / f"process_{os.getpid()}.json"
    out.write_text(json.dumps(record, indent=1), encoding="utf-8")


def summarize(folder, top=20):
    totals = collections.Counter()
    per_test = collections.Counter()
    files = sorted(pathlib.Path(folder).glob("process_*.json"))
    if not files:
        raise SystemExit(f"No process_*.json in {folder}.")
    for path in files:
        record = json.loads(path.read_text(encoding="utf-8"))
        totals.update(record["totals"])
        per_test.update(record["per_test"])
    graph = totals["function_calls_s"] + totals["symbolic_build_s"]
    return {
        "processes": len(files),
        "totals_s": {k: round(v, 1) for k, v in sorted(totals.items())},
        "graph_share_of_test_calls": round(graph / totals["test_call_s"], 3),
        "tracing_share_of_test_calls": round(
            totals["tracing_s"] / totals["test_call_s"], 3
        ),
        "top_tests_s": {k: round(v, 2) for k, v in per_test.most_common(top)},
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--summarize", required=True, metavar="DIR")
    parser.add_argument("--output")
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing --output file",
    )
    args = parser.parse_args(argv)
    summary = summarize(args.summarize, args.top)
    text = json.dumps(summary, indent=1)
    print(text)
    if args.output:
        out = pathlib.Path(args.output)
        if out.exists() and not args.overwrite:
            raise SystemExit(f"{out} exists; pass --overwrite to replace it.")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
