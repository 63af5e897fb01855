"""Public keras_msets models."""

from keras_msets.models.deepsets.complex_deepsets import ComplexDeepSets
from keras_msets.models.deepsets.deepsets import DeepSets
from keras_msets.models.deepsets.recurrent_baseline import RecurrentBaseline

__all__ = ["ComplexDeepSets", "DeepSets", "RecurrentBaseline"]
