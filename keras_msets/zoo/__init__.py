"""The keras_msets model zoo: pretrained presets, loaded offline.

>>> keras_msets.zoo.list()
>>> model = keras_msets.zoo.load("complex_deepsets_units_digit")
>>> model = keras_msets.zoo.load("./my_preset")  # a preset folder

The preset file format and `save_preset` belong to the training code
(`keras_msets.training.preset_io`); `save_preset` stays importable here.
"""

from keras_msets.training.preset_io import save_preset
from keras_msets.zoo.registry import evaluate
from keras_msets.zoo.registry import info
from keras_msets.zoo.registry import list  # noqa: A004
from keras_msets.zoo.registry import load
from keras_msets.zoo.registry import load_recipe
from keras_msets.zoo.registry import presets_root
from keras_msets.zoo.registry import train
from keras_msets.zoo.registry import verify
from keras_msets.zoo.registry import verify_weights

__all__ = [
    "evaluate",
    "info",
    "list",
    "load",
    "load_recipe",
    "presets_root",
    "save_preset",
    "train",
    "verify",
    "verify_weights",
]
