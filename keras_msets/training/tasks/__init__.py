"""The training tasks of the shipped presets, one small object each."""

from keras_msets.training.tasks.digit_sum import DigitSumTask
from keras_msets.training.tasks.kl_divergence import KLDivergence
from keras_msets.training.tasks.mutual_information import JointMutualInformation
from keras_msets.training.tasks.mutual_information import MutualInformation
from keras_msets.training.tasks.set_task import SetTask
from keras_msets.training.tasks.shared_class_count import SharedClassCount
from keras_msets.training.tasks.two_sample import TwoSample

__all__ = [
    "DigitSumTask",
    "JointMutualInformation",
    "KLDivergence",
    "MutualInformation",
    "SetTask",
    "SharedClassCount",
    "TwoSample",
]

# The Fusion Encoder Network and complex-order text tasks.
from keras_msets.training.tasks.complex_order_mr import ComplexOrderMrTask  # noqa: E402
from keras_msets.training.tasks.dyck import DyckTask  # noqa: E402
from keras_msets.training.tasks.mr_polarity import FenMrPolarityTask  # noqa: E402
from keras_msets.training.tasks.mr_polarity import TextTask  # noqa: E402

__all__ += ["ComplexOrderMrTask", "DyckTask", "FenMrPolarityTask", "TextTask"]
