"""Public keras_msets layers."""

from keras_msets.layers.automaton_position_encoding import (
    AutomatonPositionEncoding,
)
from keras_msets.layers.complex_multiplication_pooling import (
    ComplexMultiplicationPooling,
)
from keras_msets.layers.diagonal_multiset_automaton import (
    DiagonalMultisetAutomaton,
)
from keras_msets.layers.masked_set_pooling import MaskedSetPooling

__all__ = [
    "AutomatonPositionEncoding",
    "ComplexMultiplicationPooling",
    "DiagonalMultisetAutomaton",
    "MaskedSetPooling",
]
