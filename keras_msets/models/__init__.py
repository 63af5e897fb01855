"""Public keras_msets models."""

from keras_msets.models.deepsets.complex_deepsets import ComplexDeepSets
from keras_msets.models.deepsets.deepsets import DeepSets
from keras_msets.models.deepsets.recurrent_baseline import RecurrentBaseline
from keras_msets.models.fen.fusion_encoder_network import FusionEncoderNetwork
from keras_msets.models.fen.segments import FusionSegments
from keras_msets.models.fen.segments import padded_length
from keras_msets.models.text.classifiers import TextClassifier
from keras_msets.models.text.classifiers import build_text_classifier

__all__ = [
    "ComplexDeepSets",
    "DeepSets",
    "FusionEncoderNetwork",
    "FusionSegments",
    "RecurrentBaseline",
    "TextClassifier",
    "build_text_classifier",
    "padded_length",
]
