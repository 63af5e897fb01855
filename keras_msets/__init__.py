"""keras_msets: Keras 3 layers, models and a pretrained zoo for sets,
multisets and sequences, on TensorFlow, JAX and PyTorch."""

from keras_msets import data
from keras_msets import layers
from keras_msets import models
from keras_msets import ops
from keras_msets import zoo
from keras_msets.version import __version__

__all__ = ["data", "layers", "models", "ops", "zoo", "__version__"]
