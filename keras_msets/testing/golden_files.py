"""Golden files: where they live and how they store a case.

`<dir>/<name>.npz` holds a case's inputs, call arguments and outputs as flat
arrays plus a JSON template of their structure (so nothing needs pickle),
the weights in `obj.weights` order with their paths, and metadata (backend,
versions, date). `<dir>/saved/<backend>/<name>.keras` is the same object
saved on one backend. `keras_msets.testing.golden` writes and checks them.
"""

import datetime
import json
import os

import keras
import numpy as np

COMMAND = "python -m keras_msets.testing.golden write"


def _repo_root():
    """The checkout holding this package if it has tests/, else the cwd."""
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    if os.path.isdir(os.path.join(root, "tests", "golden")):
        return root
    return os.getcwd()


def default_directory():
    return os.path.join(_repo_root(), "tests", "golden")


def default_cases_path():
    return os.path.join(default_directory(), "cases.py")


def command_text(name, cases, directory, extra=""):
    parts = [COMMAND, name]
    if isinstance(cases, (str, os.PathLike)) and os.path.abspath(
        cases
    ) != os.path.abspath(default_cases_path()):
        parts += ["--cases", os.fspath(cases)]
    if directory is not None and os.path.abspath(directory) != os.path.abspath(
        default_directory()
    ):
        parts += ["--dir", os.fspath(directory)]
    if extra:
        parts.append(extra)
    return " ".join(parts)


def _encode(structure, arrays):
    """A JSON template of `structure`; leaves are appended to `arrays`."""
    if isinstance(structure, dict):
        return {
            "dict": {str(k): _encode(v, arrays) for k, v in structure.items()}
        }
    if isinstance(structure, (list, tuple)):
        kind = "list" if isinstance(structure, list) else "tuple"
        return {kind: [_encode(v, arrays) for v in structure]}
    if structure is None:
        return {"none": None}
    arrays.append(np.asarray(keras.ops.convert_to_numpy(structure)))
    return {"array": len(arrays) - 1}


def _decode(template, arrays):
    if "dict" in template:
        return {k: _decode(v, arrays) for k, v in template["dict"].items()}
    if "list" in template:
        return [_decode(v, arrays) for v in template["list"]]
    if "tuple" in template:
        return tuple(_decode(v, arrays) for v in template["tuple"])
    if "none" in template:
        return None
    return arrays[template["array"]]


def flat_arrays(structure):
    arrays = []
    _encode(structure, arrays)
    return arrays


def golden_path(name, directory=None):
    return os.path.join(directory or default_directory(), f"{name}.npz")


def saved_path(name, backend, directory=None):
    directory = directory or default_directory()
    return os.path.join(directory, "saved", backend, f"{name}.keras")


def save_npz(path, name, inputs, call_kwargs, weights, paths, outputs):
    arrays = []
    template = {
        "inputs": _encode(inputs, arrays),
        "call_kwargs": _encode(call_kwargs, arrays),
        "outputs": _encode(outputs, arrays),
    }
    metadata = {
        "name": name,
        "backend": keras.backend.backend(),
        "keras_version": keras.__version__,
        "numpy_version": np.__version__,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"
        ),
        "weight_paths": list(paths),
        "template": template,
    }
    contents = {f"array_{i}": a for i, a in enumerate(arrays)}
    contents.update({f"weight_{i}": w for i, w in enumerate(weights)})
    contents["metadata"] = np.array(json.dumps(metadata))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "wb") as f:
        np.savez(f, **contents)


def load_golden(name, directory=None, cases=None):
    """Reads `<directory>/<name>.npz`; fails with the command that writes it."""
    path = golden_path(name, directory)
    if not os.path.exists(path):
        raise AssertionError(
            f"Golden file {path} does not exist. Write it (once, on any "
            f"backend) with:\n    {command_text(name, cases, directory)}"
        )
    with np.load(path, allow_pickle=False) as data:
        metadata = json.loads(str(data["metadata"]))
        n_arrays = sum(1 for k in data.files if k.startswith("array_"))
        arrays = [data[f"array_{i}"] for i in range(n_arrays)]
        weights = [
            data[f"weight_{i}"] for i in range(len(metadata["weight_paths"]))
        ]
    template = metadata["template"]
    return {
        "inputs": _decode(template["inputs"], arrays),
        "call_kwargs": _decode(template["call_kwargs"], arrays),
        "outputs": _decode(template["outputs"], arrays),
        "weights": weights,
        "weight_paths": metadata["weight_paths"],
        "metadata": metadata,
    }
