"""keras_msets: Keras 3 layers, models and a pretrained zoo for sets,
multisets and sequences, on TensorFlow, JAX and PyTorch.

`import keras_msets` imports the layers and models (so that saved models
find their classes), the data generators, the ops and the zoo; the other
sub-packages (`estimators`, `stats`, `training`, `utils`) are imported on
first use, e.g. `keras_msets.estimators.kl_divergence(x, y)`. No optional
package (TensorFlow unless it is the backend, scikit-learn, KerasHub,
matplotlib) is imported by `import keras_msets`.
"""

import importlib

from keras_msets import data
from keras_msets import layers
from keras_msets import models
from keras_msets import ops
from keras_msets import zoo
from keras_msets.version import __version__

# Imported on first attribute access (`keras_msets.estimators`).
_LAZY_SUBPACKAGES = ("estimators", "stats", "training", "utils")

__all__ = [
    "data",
    "estimators",
    "layers",
    "models",
    "ops",
    "stats",
    "training",
    "utils",
    "zoo",
    "__version__",
]


def __getattr__(name):
    if name in _LAZY_SUBPACKAGES:
        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY_SUBPACKAGES))
