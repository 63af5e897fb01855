"""Public keras_msets models."""

from keras_msets.models._trainer_guards import GuardedFunctional
from keras_msets.models.deepsets.complex_deepsets import ComplexDeepSets
from keras_msets.models.deepsets.deepsets import DeepSets
from keras_msets.models.deepsets.recurrent_baseline import RecurrentBaseline
from keras_msets.models.fen.fusion_encoder_network import FusionEncoderNetwork
from keras_msets.models.fen.local_objective import LocalFusionObjective
from keras_msets.models.fen.segments import FusionSegments
from keras_msets.models.fen.segments import padded_length
from keras_msets.models.mst.baselines import SingleSetBaseline
from keras_msets.models.mst.baselines import UnionTransformer
from keras_msets.models.mst.dimension_equivariant_multiset_transformer import (  # noqa: E501
    DimensionEquivariantMultiSetTransformer,
)
from keras_msets.models.mst.multiset_transformer import MULTISET_MODEL_NAMES
from keras_msets.models.mst.multiset_transformer import MultiSetRelationNetwork
from keras_msets.models.mst.multiset_transformer import MultiSetTransformer
from keras_msets.models.mst.multiset_transformer import build_multiset_model
from keras_msets.models.quantile.quantile_regressor import QuantileRegressor
from keras_msets.models.text.classifiers import TextClassifier
from keras_msets.models.text.classifiers import build_text_classifier

__all__ = [
    "ComplexDeepSets",
    "DeepSets",
    "DimensionEquivariantMultiSetTransformer",
    "FusionEncoderNetwork",
    "FusionSegments",
    "GuardedFunctional",
    "LocalFusionObjective",
    "MULTISET_MODEL_NAMES",
    "MultiSetRelationNetwork",
    "MultiSetTransformer",
    "QuantileRegressor",
    "RecurrentBaseline",
    "SingleSetBaseline",
    "TextClassifier",
    "UnionTransformer",
    "build_multiset_model",
    "build_text_classifier",
    "padded_length",
]
