"""Text classifiers of Wang et al. (ICLR 2020, Table 2) and their recipe.

`TextPreprocessor` (raw sentences to token ids, without TensorFlow) is what
a text preset ships with, so that its model takes raw strings;
`FenTextClassifier` is a Fusion Encoder Network with the text classifiers'
output, two class probabilities.
"""

from keras_msets.models.text.fen_classifier import FenTextClassifier
from keras_msets.models.text.preprocessor import TextPreprocessor

__all__ = ["FenTextClassifier", "TextPreprocessor"]
