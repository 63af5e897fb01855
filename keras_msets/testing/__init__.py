"""Test helpers shared by every keras_msets test (and by users' own tests).

Only numpy, unittest and Keras are imported here, never a backend library,
so the helpers run unchanged on TensorFlow, JAX and PyTorch.
"""

import importlib

from keras_msets.testing.comparisons import assert_all_close
from keras_msets.testing.comparisons import assert_all_equal
from keras_msets.testing.scripts import load_script
from keras_msets.testing.set_properties import assert_padding_invariant
from keras_msets.testing.set_properties import assert_permutation_equivariant
from keras_msets.testing.set_properties import assert_permutation_invariant
from keras_msets.testing.test_case import TestCase

# The golden helpers are imported on first use, so that
# `python -m keras_msets.testing.golden` runs the module only once.
_GOLDEN = (
    "check_cross_backend_load",
    "check_golden",
    "golden_case",
    "load_golden",
    "write_golden",
)


def __getattr__(name):
    if name in _GOLDEN:
        golden = importlib.import_module("keras_msets.testing.golden")
        return getattr(golden, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "TestCase",
    "assert_all_close",
    "assert_all_equal",
    "assert_padding_invariant",
    "assert_permutation_equivariant",
    "assert_permutation_invariant",
    "load_script",
    *_GOLDEN,
]
