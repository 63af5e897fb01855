"""Import a Python file as a module: `keras_msets.utils.scripts`."""

from keras_msets.utils.scripts import load_script

__all__ = ["load_script"]
