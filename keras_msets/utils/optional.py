"""Optional packages, imported when a function needs them.

`import keras_msets` needs keras, numpy, scipy and h5py only; a function
that needs more imports it through `import_optional`, which names the
extra to install when the package is missing.
"""

import importlib


def import_optional(module, extra, purpose):
    """Returns the module `module`, or raises an `ImportError` naming the
    `pip install keras-msets[extra]` that provides it.

    Args:
        module: the module's import name (`"sklearn.datasets"`).
        extra: the keras-msets extra that installs it (`"data"`).
        purpose: what needs it, for the message ("scikit-learn's digits").
    """
    try:
        return importlib.import_module(module)
    except ImportError as error:
        package = module.split(".")[0]
        raise ImportError(
            f"{purpose} requires `{package}`, which could not be imported "
            f"({error}). Install it with `pip install keras-msets[{extra}]`."
        ) from error
