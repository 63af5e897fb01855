"""Checks that the wheel installs and works with one backend extra alone.

    python scripts/check_installs.py [--backends torch jax tensorflow]

Builds the wheel once (`pip wheel --no-deps .`), then for each backend
creates a fresh virtual environment, installs `keras_msets-*.whl[backend]`
with `-c constraints.txt` (torch is pinned to 2.13.0 there) and checks in
it, with that backend:

- `import keras_msets` imports no optional package (scikit-learn,
  matplotlib, KerasHub, TensorFlow) beyond what Keras imports, and
  `keras_msets.estimators` and `keras_msets.zoo` are reachable from it;
- `keras_msets.zoo.list()`, and `zoo.load()` of every preset whose model
  needs no optional package (each reproduces its stored example output);
- one call of `kl_divergence`, `mutual_information` and
  `same_distribution_probability` on small random data;
- a function that needs an optional package that is not installed
  (TensorFlow's tf.data on jax and torch, scikit-learn's digits) raises an
  `ImportError` whose message names the extra to install.

It prints, and writes as JSON (`--output`), the install time (wall and
CPU) and the size of each environment. The exit status is 1 when a
check fails. pip's cache is used as usual: a warm cache (a second run)
makes the installs much faster.
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BACKENDS = ("torch", "jax", "tensorflow")
# Versions reported per environment.
PACKAGES = (
    "keras",
    "numpy",
    "scipy",
    "h5py",
    "torch",
    "jax",
    "jaxlib",
    "tensorflow-cpu",
    "tensorflow",
)

# Runs inside each fresh environment; prints one line `RESULT{json}`.
CHECK = textwrap.dedent(
    """
    import json, sys, warnings
    import numpy as np

    backend = sys.argv[1]
    out = {"failures": []}

    def fail(text):
        out["failures"].append(text)

    import keras

    before = set(sys.modules)
    import keras_msets

    # What keras_msets itself imports beyond Keras and its backend.
    optional = ["sklearn", "matplotlib", "keras_hub", "tensorflow_datasets",
                "tensorflow"]
    imported = [m for m in optional if m in set(sys.modules) - before]
    if imported:
        fail(f"`import keras_msets` imported {imported}")
    estimators = keras_msets.estimators
    zoo = keras_msets.zoo
    out["keras_backend"] = keras.backend.backend()
    if out["keras_backend"] != backend:
        fail(f"Keras runs on {out['keras_backend']}, not {backend}")

    from keras_msets.zoo import registry

    out["presets"] = zoo.list()
    out["loaded"] = []
    for name in out["presets"]:
        example = zoo.info(name)["example"]
        try:
            model = zoo.load(name)
        except ImportError as error:
            # A preset whose model needs an optional package: the message
            # must say which extra to install.
            if "pip install" not in str(error):
                fail(f"zoo.load({name!r}): ImportError without a hint: "
                     f"{error}")
            out.setdefault("skipped", {})[name] = str(error)
            continue
        got = np.asarray(model.predict_on_batch(
            registry.example_input(example)))
        if not np.allclose(got, example["output"], atol=1e-5, rtol=1e-5):
            fail(f"zoo.load({name!r}) does not reproduce its example output")
        out["loaded"].append(name)
    if not out["loaded"]:
        fail("no preset loaded")

    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x, y = rng.normal(size=(120, 2)), rng.normal(1.0, size=(130, 2))
        out["kl_divergence"] = estimators.kl_divergence(x, y)
        x = rng.normal(size=(120, 2))
        y = 0.8 * x + 0.6 * rng.normal(size=(120, 2))
        out["mutual_information"] = estimators.mutual_information(x, y)
        x, y = rng.normal(size=(20, 8)), rng.normal(size=(25, 8))
        out["same_distribution_probability"] = (
            estimators.same_distribution_probability(x, y))
    for key in ("kl_divergence", "mutual_information",
                "same_distribution_probability"):
        if not np.isfinite(out[key]):
            fail(f"{key} gave {out[key]}")

    # An optional package that is missing fails when used, naming the
    # extra.
    uses = {
        "sklearn": ("keras-msets[data]", lambda: keras_msets.data.load_images(
            "digits")),
        "tensorflow": ("keras-msets[tensorflow]",
                       lambda: keras_msets.data.to_tf_dataset(
                           np.zeros((4, 2)), np.zeros(4))),
    }
    out["optional_errors"] = {}
    for module, (extra, use) in uses.items():
        try:
            __import__(module)
        except ImportError:
            pass
        else:
            continue  # installed here, nothing to check
        try:
            use()
        except ImportError as error:
            message = str(error)
            out["optional_errors"][module] = message
            if extra not in message:
                fail(f"missing {module}: the error does not name "
                     f"`{extra}`: {message}")
        else:
            fail(f"missing {module}: no ImportError")
    print("RESULT" + json.dumps(out))
    """
)


def run(command, **kwargs):
    """Runs `command`; its output is shown only when it fails."""
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.stderr.write(result.stdout[-4000:] + result.stderr[-4000:])
        raise SystemExit(
            f"check_installs: {' '.join(map(str, command))} failed "
            f"(exit status {result.returncode})"
        )
    return result


def build_wheel(directory):
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "--wheel-dir",
            str(directory),
            str(REPO),
        ]
    )
    (wheel,) = Path(directory).glob("keras_msets-*.whl")
    return wheel


def folder_size(path):
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            file = Path(root, name)
            if not file.is_symlink():
                total += file.stat().st_size
    return total


def _cpu_seconds():
    """CPU time (user + system) of the finished child processes so far:
    unlike wall time, it does not depend on what else the machine runs."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def check_backend(backend, wheel, work, python):
    venv = Path(work) / f"venv-{backend}"
    start = time.perf_counter()
    cpu = _cpu_seconds()
    run([python, "-m", "venv", str(venv)])
    pip = [str(venv / "bin" / "python"), "-m", "pip"]
    run([*pip, "install", "--quiet", "--upgrade", "pip"])
    run(
        [
            *pip,
            "install",
            "--quiet",
            "-c",
            str(REPO / "constraints.txt"),
            f"{wheel}[{backend}]",
        ]
    )
    install_seconds = time.perf_counter() - start
    install_cpu = _cpu_seconds() - cpu
    size = folder_size(venv)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["KERAS_BACKEND"] = backend
    start = time.perf_counter()
    cpu = _cpu_seconds()
    # Outside the repository, so the installed package is the one used.
    result = subprocess.run(
        [str(venv / "bin" / "python"), "-c", CHECK, backend],
        capture_output=True,
        text=True,
        cwd=work,
        env=env,
    )
    check_seconds = time.perf_counter() - start
    check_cpu = _cpu_seconds() - cpu
    lines = [s for s in result.stdout.splitlines() if s.startswith("RESULT")]
    if result.returncode != 0 or not lines:
        out = {"failures": [f"the check crashed: {result.stderr[-3000:]}"]}
    else:
        out = json.loads(lines[-1][len("RESULT") :])
    packages = run([*pip, "list", "--format=json"]).stdout
    versions = {
        p["name"].lower().replace("_", "-"): p["version"]
        for p in json.loads(packages)
    }
    out.update(
        backend=backend,
        install_seconds=round(install_seconds, 1),
        install_cpu_seconds=round(install_cpu, 1),
        check_seconds=round(check_seconds, 1),
        check_cpu_seconds=round(check_cpu, 1),
        venv_megabytes=round(size / 2**20),
        versions={k: versions[k] for k in PACKAGES if k in versions},
    )
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Build the wheel and check a fresh install per backend."
    )
    parser.add_argument(
        "--backends", nargs="+", choices=BACKENDS, default=["torch", "jax"]
    )
    parser.add_argument(
        "--output", default=None, help="also write the results as JSON here"
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the environments"
    )
    parser.add_argument(
        "--python", default="python3", help="the Python of the environments"
    )
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="keras_msets_installs_"))
    results = []
    try:
        wheel = build_wheel(work / "wheel")
        print(f"built {wheel.name}", flush=True)
        for backend in args.backends:
            out = check_backend(backend, wheel, work, args.python)
            results.append(out)
            status = "FAILED" if out["failures"] else "ok"
            print(
                f"{backend}: {status}; install {out['install_seconds']} s "
                f"({out['install_cpu_seconds']} s CPU), environment "
                f"{out['venv_megabytes']} MB, checks {out['check_seconds']} s "
                f"({out['check_cpu_seconds']} s CPU), "
                f"{len(out.get('loaded', []))} presets loaded",
                flush=True,
            )
            for failure in out["failures"]:
                print(f"  {failure}", flush=True)
    finally:
        if args.keep:
            print(f"environments kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(json.dumps(results, indent=2) + "\n")
    return 1 if any(out["failures"] for out in results) else 0


if __name__ == "__main__":
    sys.exit(main())
