"""Public keras_msets models."""

from keras_msets.models.deepsets.complex_deepsets import ComplexDeepSets
from keras_msets.models.deepsets.deepsets import DeepSets

__all__ = ["ComplexDeepSets", "DeepSets"]
