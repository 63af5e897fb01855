"""Golden outputs: fixed inputs and saved outputs every backend reproduces.

A golden case is a function registered with `@golden_case("name")` in a
cases module (by default `tests/golden/cases.py`). It returns
`(build_fn, inputs)` or `(build_fn, inputs, call_kwargs)`: `build_fn()`
returns an unbuilt layer or model, `inputs` (an array, a list/tuple or a
dict of arrays) come from a fixed numpy seed, and `call_kwargs` (optional)
are extra call arguments such as `mask`, given as arrays.

The writer builds the object, calls it once on the inputs to build it,
assigns weights drawn from a numpy generator (so the weights never depend on
a backend's RNG), runs it and saves `<dir>/<name>.npz` with the inputs, the
weights (in `obj.weights` order, with their paths), the expected outputs and
metadata:

    python -m keras_msets.testing.golden write [NAMES...] \\
        [--cases tests/golden/cases.py] [--dir tests/golden] \\
        [--overwrite] [--saved]

With `--saved` it also writes `<dir>/saved/<backend>/<name>.keras` for the
current backend (`KERAS_BACKEND`), from the weights stored in the `.npz`
(which is written first if missing, and otherwise left as is). Run it once
per backend so that `check_cross_backend_load` can load every backend's
file on every other backend. Existing files are never replaced without
`--overwrite`; the checks never write anything.
"""

import argparse
import importlib.util
import os
import sys
import types
import zlib

import keras
import numpy as np

from keras_msets.testing.comparisons import assert_all_close
from keras_msets.testing.golden_files import command_text
from keras_msets.testing.golden_files import default_cases_path
from keras_msets.testing.golden_files import default_directory
from keras_msets.testing.golden_files import flat_arrays
from keras_msets.testing.golden_files import golden_path
from keras_msets.testing.golden_files import load_golden
from keras_msets.testing.golden_files import save_npz
from keras_msets.testing.golden_files import saved_path

BACKENDS = ("tensorflow", "jax", "torch")
GOLDEN_CASE_ATTR = "_keras_msets_golden_case"
_LOADED_MODULES = {}


def golden_case(name):
    """Decorator registering a golden case function under `name`."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(
            "`name` must be a valid identifier (it names the .npz file). "
            f"Received: name={name!r}"
        )

    def decorator(fn):
        setattr(fn, GOLDEN_CASE_ATTR, name)
        return fn

    return decorator


def load_cases(cases=None):
    """Returns `{name: case_fn}` from a path, a module or a dict.

    Args:
        cases: None (the default cases file), the path of a Python file, an
            imported module, or a dict mapping names to case functions.
    """
    if isinstance(cases, dict):
        return dict(cases)
    if cases is None:
        cases = default_cases_path()
    if isinstance(cases, (str, os.PathLike)):
        path = os.path.abspath(os.fspath(cases))
        if not os.path.exists(path):
            raise FileNotFoundError(f"Golden cases file not found: {path}")
        if path not in _LOADED_MODULES:
            # Executed once per process: re-running it would register its
            # custom classes twice.
            module_name = "_keras_msets_golden_cases_" + str(
                zlib.crc32(path.encode())
            )
            spec = importlib.util.spec_from_file_location(module_name, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            _LOADED_MODULES[path] = module
        cases = _LOADED_MODULES[path]
    if not isinstance(cases, types.ModuleType):
        raise TypeError(
            "`cases` must be None, a path, a module or a dict. "
            f"Received: cases={cases!r}"
        )
    found = {}
    for value in vars(cases).values():
        name = getattr(value, GOLDEN_CASE_ATTR, None)
        if callable(value) and name is not None:
            found[name] = value
    return found


def _get_case(name, cases):
    registry = load_cases(cases)
    if name not in registry:
        raise KeyError(
            f"No golden case named {name!r}. Known cases: {sorted(registry)}"
        )
    result = registry[name]()
    if not isinstance(result, tuple) or len(result) not in (2, 3):
        raise TypeError(
            f"Golden case {name!r} must return (build_fn, inputs) or "
            f"(build_fn, inputs, call_kwargs). Received: {result!r}"
        )
    build_fn, inputs = result[:2]
    call_kwargs = dict(result[2]) if len(result) == 3 else {}
    return build_fn, inputs, call_kwargs


# --------------------------------------------------------------------------
# Building, weights, running.
# --------------------------------------------------------------------------


def _run(obj, inputs, call_kwargs):
    out = obj(inputs, training=False, **call_kwargs)
    return keras.tree.map_structure(
        lambda t: np.asarray(keras.ops.convert_to_numpy(t)), out
    )


def deterministic_weights(obj, seed):
    """Numpy values for `obj.weights`, independent of any backend RNG.

    Constant-initialised weights (biases, norms' scales, moving statistics)
    get small noise around their constant; the others are drawn uniformly
    with a Glorot-like scale from their shape. Non-float weights (counters,
    seed states) keep their values.
    """
    rng = np.random.default_rng(seed)
    values = []
    for weight in obj.weights:
        current = np.asarray(keras.ops.convert_to_numpy(weight.value))
        if not np.issubdtype(current.dtype, np.floating):
            values.append(current)
            continue
        if current.size and np.all(current == current.flat[0]):
            noise = rng.uniform(-0.1, 0.1, size=current.shape)
            values.append((current + noise).astype(current.dtype))
            continue
        if current.ndim >= 2:
            fan_in = int(np.prod(current.shape[:-1]))
            fan_out = int(current.shape[-1])
            limit = np.sqrt(6.0 / (fan_in + fan_out))
        else:
            limit = 0.5
        value = rng.uniform(-limit, limit, size=current.shape)
        values.append(value.astype(current.dtype))
    return values


def _set_weights(obj, values, paths, name):
    weights = obj.weights
    if len(weights) != len(values):
        raise AssertionError(
            f"Golden case {name!r}: the rebuilt object has {len(weights)} "
            f"weights {[w.path for w in weights]}, the file stores "
            f"{len(values)}: {paths}. If the layer changed on purpose, "
            "rewrite the golden file with --overwrite."
        )
    for weight, value, path in zip(weights, values, paths, strict=True):
        if tuple(weight.shape) != value.shape:
            raise AssertionError(
                f"Golden case {name!r}: weight {weight.path} has shape "
                f"{tuple(weight.shape)}, the stored weight {path} has shape "
                f"{value.shape}."
            )
        weight.assign(value)


def _build(name, build_fn, inputs, call_kwargs):
    obj = build_fn()
    _run(obj, inputs, call_kwargs)  # builds it
    return obj


def _compare(actual, expected, atol, what):
    assert_all_close(actual, expected, atol=atol, rtol=atol, msg=what)


# --------------------------------------------------------------------------
# Writing and checking.
# --------------------------------------------------------------------------


def write_golden(
    name, cases=None, directory=None, overwrite=False, saved=False
):
    """Writes the golden file of case `name`; returns the paths written.

    Without `saved`, writes `<directory>/<name>.npz` (an existing file is an
    error unless `overwrite`). With `saved`, also writes
    `<directory>/saved/<backend>/<name>.keras` for the current backend from
    the weights in the `.npz`, which is written only if it is missing (or
    `overwrite` and the `.keras` file is absent).
    """
    directory = directory or default_directory()
    build_fn, inputs, call_kwargs = _get_case(name, cases)
    npz = golden_path(name, directory)
    written = []
    keras_file = saved_path(name, keras.backend.backend(), directory)
    if saved:
        if os.path.exists(keras_file) and not overwrite:
            raise FileExistsError(
                f"{keras_file} exists; pass --overwrite to replace it."
            )
        write_npz = not os.path.exists(npz)
    else:
        if os.path.exists(npz) and not overwrite:
            raise FileExistsError(
                f"{npz} exists; pass --overwrite to replace it."
            )
        write_npz = True
    if write_npz:
        obj = _build(name, build_fn, inputs, call_kwargs)
        seed = zlib.crc32(name.encode())
        values = deterministic_weights(obj, seed)
        paths = [w.path for w in obj.weights]
        _set_weights(obj, values, paths, name)
        outputs = _run(obj, inputs, call_kwargs)
        save_npz(npz, name, inputs, call_kwargs, values, paths, outputs)
        written.append(npz)
    if saved:
        golden = load_golden(name, directory, cases)
        _check_case_inputs(name, golden, inputs, call_kwargs, cases, directory)
        obj = _build(name, build_fn, golden["inputs"], golden["call_kwargs"])
        _set_weights(obj, golden["weights"], golden["weight_paths"], name)
        _compare(
            _run(obj, golden["inputs"], golden["call_kwargs"]),
            golden["outputs"],
            1e-5,
            f"Golden case {name!r}: this backend does not reproduce the "
            "stored outputs, so its .keras file would be wrong.",
        )
        os.makedirs(os.path.dirname(keras_file), exist_ok=True)
        keras.saving.save_model(obj, keras_file)
        written.append(keras_file)
    return written


def _check_case_inputs(name, golden, inputs, call_kwargs, cases, directory):
    stored = flat_arrays({"i": golden["inputs"], "c": golden["call_kwargs"]})
    current = flat_arrays({"i": inputs, "c": call_kwargs})
    same = len(stored) == len(current) and all(
        a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)
        for a, b in zip(stored, current, strict=True)
    )
    if not same:
        command = command_text(name, cases, directory, "--overwrite")
        raise AssertionError(
            f"Golden case {name!r}: the case's inputs no longer match those "
            f"stored in {golden_path(name, directory)}. If the change is "
            f"intended, rewrite it with:\n    {command}"
        )


def check_golden(name, atol=1e-5, cases=None, directory=None):
    """Rebuilds case `name`, sets the stored weights, compares outputs.

    Fails (AssertionError) if the file is missing, giving the command that
    writes it; never writes anything.
    """
    golden = load_golden(name, directory, cases)
    build_fn, inputs, call_kwargs = _get_case(name, cases)
    _check_case_inputs(name, golden, inputs, call_kwargs, cases, directory)
    obj = _build(name, build_fn, golden["inputs"], golden["call_kwargs"])
    _set_weights(obj, golden["weights"], golden["weight_paths"], name)
    meta = golden["metadata"]
    _compare(
        _run(obj, golden["inputs"], golden["call_kwargs"]),
        golden["outputs"],
        atol,
        f"Golden case {name!r}: backend {keras.backend.backend()} does not "
        f"reproduce the outputs written on {meta['backend']} (keras "
        f"{meta['keras_version']}, {meta['date']}).",
    )


def check_cross_backend_load(
    name, atol=1e-5, cases=None, directory=None, backends=BACKENDS
):
    """Loads every backend's saved `.keras` file for `name` on this backend.

    Each `<directory>/saved/<backend>/<name>.keras` is loaded in safe mode
    and must reproduce the stored outputs on the stored inputs. A missing
    file for any of `backends` fails, with the command that writes it.
    """
    load_cases(cases)  # imports the module that registers custom classes
    golden = load_golden(name, directory, cases)
    missing = [
        b
        for b in backends
        if not os.path.exists(saved_path(name, b, directory))
    ]
    if missing:
        commands = "\n".join(
            f"    KERAS_BACKEND={b} "
            + command_text(name, cases, directory, "--saved")
            for b in missing
        )
        raise AssertionError(
            f"Golden case {name!r}: no saved .keras file for backend(s) "
            f"{missing}. Write them with:\n{commands}"
        )
    for backend in backends:
        path = saved_path(name, backend, directory)
        model = keras.saving.load_model(path, safe_mode=True)
        _compare(
            _run(model, golden["inputs"], golden["call_kwargs"]),
            golden["outputs"],
            atol,
            f"Golden case {name!r}: the .keras file saved on {backend} "
            f"gives different outputs when loaded on "
            f"{keras.backend.backend()} ({path}).",
        )


# --------------------------------------------------------------------------
# Command line.
# --------------------------------------------------------------------------


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m keras_msets.testing.golden",
        description="Write golden output files (the tests only read them).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    write = sub.add_parser("write", help="write golden files")
    write.add_argument("names", nargs="*", help="cases to write (all if none)")
    write.add_argument("--cases", default=None, help="cases module path")
    write.add_argument("--dir", default=None, help="golden directory")
    write.add_argument("--overwrite", action="store_true")
    write.add_argument(
        "--saved",
        action="store_true",
        help="also write saved/<backend>/<name>.keras for this backend",
    )
    sub.add_parser("list", help="list the cases").add_argument(
        "--cases", default=None
    )
    args = parser.parse_args(argv)
    registry = load_cases(args.cases)
    if args.command == "list":
        for name in sorted(registry):
            print(name)
        return 0
    names = args.names or sorted(registry)
    failed = False
    for name in names:
        try:
            paths = write_golden(
                name,
                cases=args.cases,
                directory=args.dir,
                overwrite=args.overwrite,
                saved=args.saved,
            )
        except (FileExistsError, KeyError, AssertionError) as e:
            print(f"{name}: not written: {e}", file=sys.stderr)
            failed = True
            continue
        for path in paths:
            print(f"{name}: wrote {path} ({keras.backend.backend()})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
