"""The training tasks of the shipped presets, one small object each.

- digit sums (DeBenedetto & Chiang): `DigitSumTask`;
- the Multi-Set Transformer tasks (Selby et al.) on `SetTask`:
  `KLDivergence`, `MutualInformation`, `JointMutualInformation`,
  `TwoSample`, `SharedClassCount`;
- estimators that refine classical statistics: `StatisticsRegressionTask`
  (with `PinballLoss`);
- the Fusion Encoder Network and complex-order text tasks: `DyckTask`,
  `TextTask`, `FenMrPolarityTask`, `ComplexOrderMrTask`.
"""

from keras_msets.training.tasks.complex_order_mr import ComplexOrderMrTask
from keras_msets.training.tasks.digit_sum import DigitSumTask
from keras_msets.training.tasks.dyck import DyckTask
from keras_msets.training.tasks.kl_divergence import KLDivergence
from keras_msets.training.tasks.mr_polarity import FenMrPolarityTask
from keras_msets.training.tasks.mr_polarity import TextTask
from keras_msets.training.tasks.mutual_information import JointMutualInformation
from keras_msets.training.tasks.mutual_information import MutualInformation
from keras_msets.training.tasks.set_task import SetTask
from keras_msets.training.tasks.shared_class_count import SharedClassCount
from keras_msets.training.tasks.statistics_regression import PinballLoss
from keras_msets.training.tasks.statistics_regression import (
    StatisticsRegressionTask,
)
from keras_msets.training.tasks.two_sample import TwoSample

__all__ = [
    "ComplexOrderMrTask",
    "DigitSumTask",
    "DyckTask",
    "FenMrPolarityTask",
    "JointMutualInformation",
    "KLDivergence",
    "MutualInformation",
    "PinballLoss",
    "SetTask",
    "SharedClassCount",
    "StatisticsRegressionTask",
    "TextTask",
    "TwoSample",
]
