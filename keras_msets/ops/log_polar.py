"""Log-polar products over sets of complex numbers.

A product of many complex numbers is computed as the sum of their
log-moduli and the sum of their angles, so that thousands of factors
neither underflow nor overflow; the angle sum is exact modulo 2 pi (see
`keras_msets.ops.phase`). Masked factors act as the identity `1 + 0i`.
"""

import math

from keras import ops

from keras_msets.ops.complex import _check_same_shape
from keras_msets.ops.complex import _safe_squared_modulus
from keras_msets.ops.complex import complex_phase
from keras_msets.ops.masked import _normalize_axis
from keras_msets.ops.masked import expand_mask
from keras_msets.ops.masked import masked_sum
from keras_msets.ops.phase import _accumulation_dtype
from keras_msets.ops.phase import _phase_sum


def log_polar_product(
    log_modulus,
    phase,
    mask=None,
    axis=1,
    keepdims=False,
    wrap_phase=False,
    phase_lo=None,
):
    """Product over a set of complex numbers given in log-polar form.

    The factors are `z_k = exp(log_modulus_k + i * phase_k)`; their product
    is `exp(sum_k log_modulus_k + i * sum_k phase_k)`, so it is returned as
    the two sums. Sums neither underflow nor overflow: `10**5` factors of
    modulus 0.5 give a log-modulus of about -69314.7 where the product
    itself would be 0 in any float. Masked elements act as the identity
    `1 + 0i` (they add 0 to both sums), so an all-masked set gives `(0, 0)`,
    i.e. the product 1.

    Both sums are computed in float32 (float64 for float64 inputs), never
    in a half precision, and returned in that dtype. The log-modulus sum is
    a plain sum (relative error of order `n * 6e-8` at worst). The phase
    sum only matters modulo 2 pi, and a plain float32 sum of `10**5`
    angles of mean 1.3 would be off by up to 1e-2 rad: it is computed
    exactly on a 2**-16 grid in blocks of 64, each block sum reduced
    modulo 2 pi, so it stays within about 1e-6 rad of the exact sum
    modulo 2 pi for `10**5` angles of any mean, on every backend. It
    equals the plain sum for sets of at most 64 angles in `[-pi, pi]`;
    for longer sets it is congruent to it modulo 2 pi. Angles beyond
    about 200 rad in magnitude are reduced with float32 rounding.

    Args:
        log_modulus: real tensor `[batch, set_size, ..., d]`.
        phase: real tensor of the same shape, angles in radians.
        mask: optional tensor of shape `log_modulus.shape[:axis + 1]`;
            nonzero entries mark valid factors. `None` means all valid.
        axis: integer, the set axis. Defaults to `1`.
        keepdims: whether to keep the reduced axis with length 1.
        wrap_phase: if `True`, reduce the summed phase to `(-pi, pi]`. This
            is only cosmetic: `cos` and `sin` of the phase are unchanged
            (up to float32 rounding) and the gradient is the same.
        phase_lo: optional low-order parts of the angles, same shape as
            `phase` (each angle is `phase + phase_lo`), e.g. from
            `accurate_phase`: angles known better than float32.

    Returns:
        A tuple `(log_modulus_sum, phase_sum)`, each shaped like the inputs
        without `axis`.

    Example:

    >>> log_modulus = keras.ops.full((1, 100000, 1), math.log(0.5))
    >>> phase = keras.ops.zeros((1, 100000, 1))
    >>> lm, ph = keras_msets.ops.log_polar_product(log_modulus, phase)
    >>> lm  # log(0.5 ** 100000)
    array([[-69314.72]], dtype=float32)
    """
    log_modulus = ops.convert_to_tensor(log_modulus)
    phase = ops.convert_to_tensor(phase)
    _check_same_shape(log_modulus, phase, "log_modulus", "phase")
    axis = _normalize_axis(axis, len(phase.shape))
    log_modulus = ops.cast(log_modulus, _accumulation_dtype(log_modulus))
    phase = ops.cast(phase, _accumulation_dtype(phase))
    log_modulus_sum = masked_sum(log_modulus, mask, axis, keepdims)
    if phase_lo is not None:
        phase_lo = ops.cast(ops.convert_to_tensor(phase_lo), phase.dtype)
        _check_same_shape(phase, phase_lo, "phase", "phase_lo")
    if mask is not None:
        valid = expand_mask(mask, phase, axis)
        phase = ops.where(valid, phase, ops.zeros_like(phase))
        if phase_lo is not None:
            phase_lo = ops.where(valid, phase_lo, ops.zeros_like(phase_lo))
    phase_sum = _phase_sum(phase, axis, wrap_phase, phase_lo)
    if keepdims:
        phase_sum = ops.expand_dims(phase_sum, axis)
    return log_modulus_sum, phase_sum


def complex_log_polar_product(
    x, mask=None, axis=1, keepdims=False, wrap_phase=False
):
    """Product over a set of complex numbers, returned in log-polar form.

    Each factor of `x` is turned into `(log|z|, arg z)` (see
    `complex_modulus` and `complex_phase`) and the results are summed with
    `log_polar_product`. Masked elements act as `1 + 0i`, so an all-masked
    set gives `(0, 0)`, i.e. the product 1.

    A valid factor that is exactly `0 + 0i` has `log|z| = -inf`, so the
    set's log-modulus sum is `-inf` (the product is 0) and its phase sum is
    finite; no `NaN` appears in the forward pass. Its gradient with respect
    to that zero factor is 0 (the true derivative of `log|z|` is unbounded
    there), and `complex_from_polar` of the result gives exactly `0 + 0i`.
    Padded elements are replaced by 0 before anything is computed, so any
    value there, even `inf` or `NaN`, changes neither the result nor the
    gradient (which is 0 for padded elements).

    Args:
        x: complex tensor `[batch, set_size, ..., 2 * d]`.
        mask: optional tensor of shape `x.shape[:axis + 1]`; nonzero entries
            mark valid factors. `None` means all valid.
        axis: integer, the set axis; it cannot be the last (complex) axis.
            Defaults to `1`.
        keepdims: whether to keep the reduced axis with length 1.
        wrap_phase: if `True`, reduce the summed phase to `(-pi, pi]` (only
            cosmetic, see `log_polar_product`).

    Returns:
        A tuple `(log_modulus_sum, phase_sum)` of real tensors shaped like
        `x` without `axis` and with `d` instead of `2 * d` last.

    Example:

    >>> x = keras.ops.convert_to_tensor([[[0.0, 2.0], [0.0, 2.0]]])  # 2i, 2i
    >>> lm, ph = keras_msets.ops.complex_log_polar_product(x)
    >>> keras.ops.exp(lm), ph  # 4 * exp(i * pi) = -4
    (array([[4.]], dtype=float32), array([[3.1415927]], dtype=float32))
    """
    x = ops.convert_to_tensor(x)
    ndim = len(x.shape)
    if _normalize_axis(axis, ndim) == ndim - 1:
        raise ValueError(
            "`axis` must not be the last axis, which holds the complex "
            f"values. Received: axis={axis} for x.shape="
            f"{tuple(x.shape)}"
        )
    if mask is not None:
        # Zero the padded factors first: masking only the sums would let
        # inf/NaN garbage there reach the gradient as 0 * inf = NaN.
        x = ops.where(expand_mask(mask, x, axis), x, ops.zeros_like(x))
    _, _, squared, nonzero = _safe_squared_modulus(x)
    safe = ops.where(nonzero, squared, ops.ones_like(squared))
    log_modulus = ops.where(
        nonzero,
        0.5 * ops.log(safe),
        ops.full_like(squared, -math.inf),
    )
    phase = complex_phase(x)
    return log_polar_product(
        log_modulus,
        phase,
        mask=mask,
        axis=axis,
        keepdims=keepdims,
        wrap_phase=wrap_phase,
    )
