"""The training tasks of the shipped presets, one small object each."""

from keras_msets.training.tasks.digit_sum import DigitSumTask

__all__ = ["DigitSumTask"]
