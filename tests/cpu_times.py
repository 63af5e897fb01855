"""CPU seconds per test: a pytest plugin, and their sums per file.

    KERAS_BACKEND=jax python -m pytest -p tests.cpu_times -n 2 ...
    python -m tests.cpu_times summary cpu_times.jsonl [--top 40]

Each test process appends one JSON line per test to the file named by
`KERAS_MSETS_CPU_TIMES` (default `cpu_times.jsonl`): its node id, the CPU
seconds of setup, call and teardown (this process's, plus those of the
child processes it waited for, such as a tutorial run by `subprocess`),
the children's share and the wall seconds. On a shared machine the CPU
seconds are what a test costs; its wall time depends on the load. A last
line per process (`"id": "__session__"`) holds the process's own CPU
seconds since it started (collection and imports included; not those of
its children: under pytest-xdist the workers are the children of the
controlling process).
"""

import argparse
import collections
import json
import os
import sys
import time

import pytest

OUTPUT_VARIABLE = "KERAS_MSETS_CPU_TIMES"


def _output():
    return os.environ.get(OUTPUT_VARIABLE, "cpu_times.jsonl")


def _write(record):
    with open(_output(), "a") as f:
        f.write(json.dumps(record) + "\n")


def _children_cpu():
    times = os.times()
    return times.children_user + times.children_system


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    children, cpu, wall = _children_cpu(), time.process_time(), time.time()
    yield
    children = _children_cpu() - children
    _write(
        {
            "id": item.nodeid,
            "cpu": round(time.process_time() - cpu + children, 3),
            "children": round(children, 3),
            "wall": round(time.time() - wall, 3),
            "pid": os.getpid(),
        }
    )


def pytest_sessionfinish(session):
    _write(
        {
            "id": "__session__",
            "cpu": round(time.process_time(), 3),
            "pid": os.getpid(),
        }
    )


def summary(path, top=40):
    """Text: CPU seconds summed per file, then the `top` costliest tests."""
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    tests = [r for r in rows if r["id"] != "__session__"]
    # Processes' own CPU, plus the child processes the tests started.
    processes = [r["cpu"] for r in rows if r["id"] == "__session__"]
    processes += [r.get("children", 0.0) for r in tests]
    per_file, counts = collections.Counter(), collections.Counter()
    for r in tests:
        name = r["id"].split("::")[0]
        per_file[name] += r["cpu"]
        counts[name] += 1
    lines = [
        f"{len(tests)} tests, {sum(r['cpu'] for r in tests):.0f} CPU-s in "
        f"tests; test processes {sum(processes):.0f} CPU-s in all",
        "",
        "CPU-s  tests  file",
    ]
    lines += [
        f"{cpu:6.1f} {counts[name]:5d}  {name}"
        for name, cpu in per_file.most_common()
    ]
    lines += ["", f"CPU-s  the {top} costliest tests"]
    lines += [
        f"{r['cpu']:6.1f}  {r['id']}"
        for r in sorted(tests, key=lambda r: -r["cpu"])[:top]
    ]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tests.cpu_times")
    parser.add_argument("command", choices=["summary"])
    parser.add_argument("path")
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args(argv)
    print(summary(args.path, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
