"""Backend-agnostic helpers: complex arithmetic and masked set reductions.

Everything here is written with `keras.ops` only, so it runs unchanged on
the TensorFlow, JAX and PyTorch backends and on symbolic `KerasTensor`s.
"""

from keras_msets.ops.complex import complex_conjugate
from keras_msets.ops.complex import complex_exp_i
from keras_msets.ops.complex import complex_from_polar
from keras_msets.ops.complex import complex_merge
from keras_msets.ops.complex import complex_modulus
from keras_msets.ops.complex import complex_multiply
from keras_msets.ops.complex import complex_phase
from keras_msets.ops.complex import complex_split
from keras_msets.ops.log_polar import complex_log_polar_product
from keras_msets.ops.log_polar import log_polar_product
from keras_msets.ops.masked import MASK_LOGIT
from keras_msets.ops.masked import expand_mask
from keras_msets.ops.masked import mask_logits
from keras_msets.ops.masked import masked_count
from keras_msets.ops.masked import masked_max
from keras_msets.ops.masked import masked_mean
from keras_msets.ops.masked import masked_min
from keras_msets.ops.masked import masked_product
from keras_msets.ops.masked import masked_sum
from keras_msets.ops.phase import accurate_phase
from keras_msets.ops.phase import position_phase

__all__ = [
    "MASK_LOGIT",
    "accurate_phase",
    "complex_conjugate",
    "complex_exp_i",
    "complex_from_polar",
    "complex_log_polar_product",
    "complex_merge",
    "complex_modulus",
    "complex_multiply",
    "complex_phase",
    "complex_split",
    "expand_mask",
    "log_polar_product",
    "mask_logits",
    "masked_count",
    "masked_max",
    "masked_mean",
    "masked_min",
    "masked_product",
    "masked_sum",
    "position_phase",
]
