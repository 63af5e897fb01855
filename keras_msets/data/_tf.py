"""Lazy imports of TensorFlow and TensorFlow Datasets.

`keras_msets.data` is usable with numpy alone (JAX and PyTorch users need
not install TensorFlow); only the functions that build a `tf.data.Dataset`
or a TFDS builder import TensorFlow, through these helpers, when called.
"""

import importlib

_HINT = (
    "Install it with `pip install keras-msets[data]` (TensorFlow Datasets) "
    "and `pip install tensorflow` (or `tensorflow-cpu`)."
)


def import_tensorflow():
    """Returns the `tensorflow` module, or raises a helpful ImportError."""
    try:
        return importlib.import_module("tensorflow")
    except ImportError as e:
        raise ImportError(
            f"This function builds a `tf.data.Dataset` and needs TensorFlow, "
            f"which could not be imported ({e}). {_HINT}"
        ) from e


def import_tfds():
    """Returns `tensorflow_datasets`, or raises a helpful ImportError."""
    import_tensorflow()
    try:
        return importlib.import_module("tensorflow_datasets")
    except ImportError as e:
        raise ImportError(
            f"This function needs TensorFlow Datasets, which could not be "
            f"imported ({e}). {_HINT}"
        ) from e
