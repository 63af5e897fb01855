"""Import a Python file (a benchmark script, a preset recipe) as a module."""

import importlib.util
import os
import zlib


def load_script(path, name=None):
    """Execute the file at `path` and return it as a fresh module.

    Benchmarks and zoo recipes are scripts, not package modules; tests and
    other scripts reach their functions through this helper. Every call
    executes the file again (a new module object). `name` is the module's
    `__name__`; by default it is derived from the file name and path, so
    two scripts with the same file name do not collide.
    """
    path = os.path.abspath(os.fspath(path))
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"`path` must name an existing Python file. Received: path={path!r}"
        )
    if name is None:
        stem = os.path.splitext(os.path.basename(path))[0]
        name = f"_keras_msets_script_{stem}_{zlib.crc32(path.encode())}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
