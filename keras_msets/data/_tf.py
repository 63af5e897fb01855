"""Lazy imports of TensorFlow and TensorFlow Datasets.

`keras_msets.data` is usable with numpy alone (JAX and PyTorch users need
not install TensorFlow); only the functions that build a `tf.data.Dataset`
or a TFDS builder import TensorFlow, through these helpers, when called.
The messages name the extras of `pyproject.toml`: `tensorflow` installs
TensorFlow (`tensorflow-cpu`), `data` installs TensorFlow Datasets.
"""

import importlib

TF_DATA_INSTALL = "pip install keras-msets[tensorflow]"
TFDS_INSTALL = "pip install keras-msets[tensorflow,data]"


def import_tensorflow():
    """Returns the `tensorflow` module, or raises a helpful ImportError."""
    try:
        return importlib.import_module("tensorflow")
    except ImportError as e:
        raise ImportError(
            "This function runs on TensorFlow (`tf.data` or "
            "`TextVectorization`), which could not be imported "
            f"({e}). Install it with "
            f"`{TF_DATA_INSTALL}` (the `tensorflow` extra; any backend "
            "can stay the Keras backend)."
        ) from e


def import_tfds():
    """Returns `tensorflow_datasets`, or raises a helpful ImportError."""
    try:
        importlib.import_module("tensorflow")
        return importlib.import_module("tensorflow_datasets")
    except ImportError as e:
        raise ImportError(
            "This function builds a TensorFlow Datasets builder and needs "
            f"TensorFlow and TensorFlow Datasets, one of which could not be "
            f"imported ({e}). Install them with `{TFDS_INSTALL}`."
        ) from e
