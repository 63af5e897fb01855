"""Complex arithmetic on real tensors, and log-polar products over sets.

A complex activation is one real tensor of shape `[..., 2 * d]`: the last
axis holds the `d` real parts, then the `d` imaginary parts. Native complex
dtypes never appear in inputs or outputs, so every function here runs
unchanged on the TensorFlow, JAX and PyTorch backends, on symbolic
`KerasTensor`s, and is differentiable.

Functions that are singular at `0 + 0i` (modulus, phase, log-modulus) use
the "double where" trick: the singular function is evaluated on a safe
stand-in value where the input is zero and the result is then selected
away. Values elsewhere are exact and gradients at the origin are finite
(zero) instead of `NaN`.
"""

import math

import keras
import numpy as np
from keras import ops
from keras.backend import standardize_dtype

from keras_msets.ops.masked import _normalize_axis
from keras_msets.ops.masked import _shapes_compatible
from keras_msets.ops.masked import expand_mask
from keras_msets.ops.masked import masked_sum


def _check_same_shape(a, b, name_a, name_b):
    if not _shapes_compatible(a.shape, b.shape):
        raise ValueError(
            f"`{name_a}` and `{name_b}` must have the same shape. Received: "
            f"{name_a}.shape={tuple(a.shape)}, {name_b}.shape={tuple(b.shape)}"
        )


def complex_split(x):
    """Splits a complex tensor `[..., 2 * d]` into its real and imaginary parts.

    Args:
        x: real tensor of shape `[..., 2 * d]` (real parts, then imaginary
            parts). The last dimension must be statically known and even.

    Returns:
        A tuple `(real, imag)` of tensors of shape `[..., d]`.

    Example:

    >>> x = keras.ops.convert_to_tensor([[1.0, 2.0, 3.0, 4.0]])
    >>> real, imag = keras_msets.ops.complex_split(x)  # 1 + 3i, 2 + 4i
    >>> real, imag
    (array([[1., 2.]], dtype=float32), array([[3., 4.]], dtype=float32))
    """
    x = ops.convert_to_tensor(x)
    shape = tuple(x.shape)
    if len(shape) == 0 or shape[-1] is None or shape[-1] % 2:
        raise ValueError(
            "`x` must have a statically known, even last dimension (d real "
            f"parts, then d imaginary parts). Received: x.shape="
            f"{shape}"
        )
    d = shape[-1] // 2
    return x[..., :d], x[..., d:]


def complex_merge(real, imag):
    """Packs real and imaginary parts into one complex tensor `[..., 2 * d]`.

    Args:
        real: real parts, shape `[..., d]`.
        imag: imaginary parts, same shape as `real`.

    Returns:
        A tensor of shape `[..., 2 * d]`: `real`, then `imag` on the last axis.

    Example:

    >>> keras_msets.ops.complex_merge([[1.0, 2.0]], [[3.0, 4.0]])
    array([[1., 2., 3., 4.]], dtype=float32)
    """
    real = ops.convert_to_tensor(real)
    imag = ops.convert_to_tensor(imag)
    _check_same_shape(real, imag, "real", "imag")
    if len(real.shape) == 0:
        raise ValueError(
            "`real` and `imag` must have at least one axis. Received: "
            "real.shape=()"
        )
    return ops.concatenate([real, imag], axis=-1)


def complex_multiply(x, y):
    """Multiplies two complex tensors elementwise.

    Computes `(a + ib)(c + id) = (ac - bd) + i(ad + bc)`. Leading axes
    broadcast as usual; the complex last axes must have the same length.

    Args:
        x: complex tensor `[..., 2 * d]`.
        y: complex tensor `[..., 2 * d]`, broadcastable to `x`.

    Returns:
        The complex product, shape `[..., 2 * d]`.

    Example:

    >>> i = keras.ops.convert_to_tensor([[0.0, 1.0]])  # 0 + 1i
    >>> keras_msets.ops.complex_multiply(i, i)  # -1 + 0i
    array([[-1.,  0.]], dtype=float32)
    """
    x = ops.convert_to_tensor(x)
    y = ops.convert_to_tensor(y)
    x_re, x_im = complex_split(x)
    y_re, y_im = complex_split(y)
    if x.shape[-1] != y.shape[-1]:
        raise ValueError(
            "`x` and `y` must have the same complex last dimension. "
            f"Received: x.shape={tuple(x.shape)}, "
            f"y.shape={tuple(y.shape)}"
        )
    real = x_re * y_re - x_im * y_im
    imag = x_re * y_im + x_im * y_re
    return ops.concatenate([real, imag], axis=-1)


def complex_conjugate(x):
    """Complex conjugate: negates the imaginary parts.

    Args:
        x: complex tensor `[..., 2 * d]`.

    Returns:
        The conjugate, shape `[..., 2 * d]`.

    Example:

    >>> keras_msets.ops.complex_conjugate([[1.0, 2.0]])  # 1 + 2i
    array([[ 1., -2.]], dtype=float32)
    """
    real, imag = complex_split(x)
    return ops.concatenate([real, ops.negative(imag)], axis=-1)


def _safe_squared_modulus(x):
    """Returns `(real, imag, squared_modulus, nonzero)`."""
    real, imag = complex_split(x)
    squared = real * real + imag * imag
    return real, imag, squared, ops.greater(squared, 0)


def complex_modulus(x):
    """Modulus `|z| = sqrt(re**2 + im**2)` of a complex tensor.

    The gradient at `0 + 0i` is zero (finite) instead of `NaN`, through the
    "double where" trick; elsewhere value and gradient (`z / |z|`) are exact.
    The squares are formed in the input dtype, so in `float32` moduli below
    about `1e-19` round to 0 and above about `1e19` overflow to `inf`.

    Args:
        x: complex tensor `[..., 2 * d]`.

    Returns:
        A real tensor `[..., d]` of moduli.

    Example:

    >>> keras_msets.ops.complex_modulus([[3.0, 0.0, 4.0, 0.0]])
    array([[5., 0.]], dtype=float32)
    """
    _, _, squared, nonzero = _safe_squared_modulus(x)
    safe = ops.where(nonzero, squared, ops.ones_like(squared))
    return ops.where(nonzero, ops.sqrt(safe), ops.zeros_like(squared))


def complex_phase(x):
    """Phase (argument) `arctan2(im, re)` of a complex tensor.

    Convention: the principal value in `[-pi, pi]`, as `numpy.angle`: it is
    `pi` on the negative real axis (`-pi` when the imaginary part is `-0.0`)
    and `0` at the origin `0 + 0i`, where its gradient is zero (finite)
    instead of `NaN` ("double where" trick). Elsewhere the gradient is the
    exact `(-im, re) / |z|**2`.

    Args:
        x: complex tensor `[..., 2 * d]`.

    Returns:
        A real tensor `[..., d]` of angles in radians.

    Example:

    >>> keras_msets.ops.complex_phase([[0.0, 0.0, 1.0, 0.0]])  # i, 0
    array([[1.5707964, 0.       ]], dtype=float32)
    """
    real, imag = complex_split(x)
    nonzero = ops.logical_or(ops.not_equal(real, 0), ops.not_equal(imag, 0))
    safe_real = ops.where(nonzero, real, ops.ones_like(real))
    safe_imag = ops.where(nonzero, imag, ops.zeros_like(imag))
    phase = ops.arctan2(safe_imag, safe_real)
    return ops.where(nonzero, phase, ops.zeros_like(phase))


def _float64_available():
    """Whether the backend computes in float64 (JAX only with x64 on)."""
    if keras.backend.backend() != "jax":
        return True
    # Without x64, JAX turns float64 arrays into float32 (silently here).
    probe = ops.convert_to_tensor(np.zeros((), "float64"))
    return standardize_dtype(probe.dtype) == "float64"


def accurate_phase(x):
    """Phase of a complex tensor as a float32 pair `(hi, lo)`, `hi + lo`.

    `complex_phase` in float32 rounds every angle by up to an ulp (1.2e-7
    to 2.4e-7 rad near 1 to 3), and float32 `atan2` implementations differ
    by an ulp with a bias (PyTorch's against numpy's): summed over 1e5
    elements that is up to 1e-2 rad. Where the backend computes in float64
    (TensorFlow, PyTorch, JAX with x64 enabled) the angle is computed in
    float64 and returned as `hi` (its float32 rounding) plus `lo` (the
    rest), for `log_polar_product(..., phase_lo=lo)`; elsewhere `lo` is 0.
    Conventions and gradients are those of `complex_phase`.

    Args:
        x: complex tensor `[..., 2 * d]`.

    Returns:
        A tuple `(hi, lo)` of real tensors `[..., d]` in `x`'s float dtype
        (float32 for half precision inputs).
    """
    x = ops.convert_to_tensor(x)
    dtype = _accumulation_dtype(x)
    x = ops.cast(x, dtype)
    if dtype == "float64" or not _float64_available():
        hi = complex_phase(x)
        return hi, ops.zeros_like(hi)
    hi = complex_phase(x)
    # The float64 angle by the half-angle formulas (Keras' PyTorch
    # `arctan2` computes float64 inputs in float32): 2 atan(y / (r + x))
    # for x >= 0, 2 atan((r - x) / y) otherwise (pi on the negative axis).
    real, imag = complex_split(ops.cast(x, "float64"))
    radius = ops.sqrt(real * real + imag * imag)
    right = ops.greater_equal(real, 0)
    numerator = ops.where(right, imag, radius - real)
    denominator = ops.where(right, radius + real, imag)
    on_axis = ops.equal(denominator, 0)
    safe = ops.where(on_axis, ops.ones_like(denominator), denominator)
    phase = 2.0 * ops.arctan(numerator / safe)
    axis_angle = ops.where(
        right, ops.zeros_like(real), ops.full_like(real, math.pi)
    )
    phase = ops.where(on_axis, axis_angle, phase)
    lo = phase - ops.cast(hi, "float64")
    # -pi and pi on the negative real axis (the sign of -0.0) are one angle.
    lo = lo - _TWO_PI * ops.round(lo / _TWO_PI)
    # Only the rounding of `hi`: no gradient (that of `hi` is exact).
    lo = ops.stop_gradient(ops.cast(lo, dtype))
    return hi, lo


def complex_exp_i(theta):
    """Unit complex numbers `exp(i * theta) = cos(theta) + i sin(theta)`.

    Args:
        theta: real tensor `[..., d]` of angles in radians.

    Returns:
        A complex tensor `[..., 2 * d]`.

    Example:

    >>> keras_msets.ops.complex_exp_i([[0.0]])
    array([[1., 0.]], dtype=float32)
    """
    theta = ops.convert_to_tensor(theta)
    return ops.concatenate([ops.cos(theta), ops.sin(theta)], axis=-1)


def complex_from_polar(log_modulus, phase):
    """Complex numbers `exp(log_modulus) * exp(i * phase)` from log-polar form.

    A `log_modulus` of `-inf` gives exactly `0 + 0i`.

    Args:
        log_modulus: real tensor `[..., d]`, natural log of the moduli.
        phase: real tensor `[..., d]` of angles in radians.

    Returns:
        A complex tensor `[..., 2 * d]`.

    Example:

    >>> keras_msets.ops.complex_from_polar([[0.0]], [[math.pi / 2]])
    array([[-4.371139e-08,  1.000000e+00]], dtype=float32)
    """
    log_modulus = ops.convert_to_tensor(log_modulus)
    phase = ops.convert_to_tensor(phase)
    _check_same_shape(log_modulus, phase, "log_modulus", "phase")
    modulus = ops.exp(log_modulus)
    return ops.concatenate(
        [modulus * ops.cos(phase), modulus * ops.sin(phase)], axis=-1
    )


# Exact phase arithmetic. 2 pi = _TWO_PI_HI + _TWO_PI_LO, where _TWO_PI_HI
# is a multiple of 2**-16 with 19 significant bits: a small integer times
# it, and angles on the 2**-16 grid minus it, are exact in float32.
_PHASE_GRID = 2.0**16
_TWO_PI = 2.0 * math.pi
_TWO_PI_HI = round(_TWO_PI * _PHASE_GRID) / _PHASE_GRID
_TWO_PI_LO = _TWO_PI - _TWO_PI_HI
# Blocks of the phase sum: 64 angles of the grid in [-pi, pi] sum exactly
# (|sum| < 256 needs at most 24 bits), and four levels of blocks cover
# 64**4 (1.7e7) elements when the set length is known only at run time.
_PHASE_BLOCK = 64
_PHASE_LEVELS = 4


def _accumulation_dtype(x):
    """float32, or float64 for float64 inputs: never a half precision."""
    dtype = standardize_dtype(x.dtype)
    return "float64" if dtype == "float64" else "float32"


def _split_phase(phase):
    """`phase = hi + lo`, `hi` on the 2**-16 grid in about `[-pi, pi]`.

    `hi` and `lo` are congruent to `phase` modulo 2 pi together; the
    reduction is exact while `|phase|` is below about 200 rad. Only `lo`
    carries the gradient (1), `hi` is a constant of the rounding.
    """
    hi = ops.stop_gradient(ops.round(phase * _PHASE_GRID) / _PHASE_GRID)
    lo = phase - hi
    return _reduce_turns(hi, lo)


def _reduce_turns(hi, lo, turns=None):
    """Subtracts whole turns from `hi` exactly, the residue into `lo`."""
    if turns is None:
        turns = ops.round(hi / _TWO_PI)
    turns = ops.stop_gradient(turns)
    return hi - turns * _TWO_PI_HI, lo - turns * _TWO_PI_LO


def _block_sums(hi, lo, length):
    """Sums blocks of `_PHASE_BLOCK` along the last axis (zero padded)."""
    if length is None:
        length = ops.shape(hi)[-1]
    padding = [[0, 0]] * (len(hi.shape) - 1) + [[0, -length % _PHASE_BLOCK]]
    sums = []
    for part in (hi, lo):
        part = ops.pad(part, padding)
        shape = tuple(ops.shape(part)[:-1]) + (-1, _PHASE_BLOCK)
        sums.append(ops.sum(ops.reshape(part, shape), axis=-1))
    return sums


def _phase_sum(phase, axis, wrap_phase, phase_lo=None):
    """Sum of angles along `axis`, accurate modulo 2 pi for long sets.

    A plain float32 sum of 10**5 angles of mean 1.3 ends near 1.3e5 rad,
    where one float32 step is 8e-3 rad, and every addition rounds. Here
    every angle is split into a part on the 2**-16 grid (exact sums) and a
    small rest; blocks of 64 are summed and each block sum is reduced
    modulo 2 pi exactly, level after level, so no partial sum exceeds
    about 64 pi. The result is congruent to the exact sum modulo 2 pi,
    within about 1e-6 rad at 10**5 elements; it equals the plain sum for
    sets of at most 64 angles in `[-pi, pi]`.
    """
    phase = ops.moveaxis(phase, axis, -1)
    hi, lo = _split_phase(phase)
    if phase_lo is not None:
        lo = lo + ops.moveaxis(phase_lo, axis, -1)
    length = phase.shape[-1]
    if length is not None:
        while length > _PHASE_BLOCK:
            hi, lo = _reduce_turns(*_block_sums(hi, lo, length))
            length = -(-length // _PHASE_BLOCK)
    else:
        # The length is known only at run time: a fixed number of levels,
        # reducing only where more than one block remains (the result is
        # then the same as with a known length).
        for _ in range(_PHASE_LEVELS):
            hi, lo = _block_sums(hi, lo, None)
            several = ops.greater(ops.shape(hi)[-1], 1)
            turns = ops.where(several, ops.round(hi / _TWO_PI), 0.0)
            hi, lo = _reduce_turns(hi, lo, turns)
    hi, lo = ops.sum(hi, axis=-1), ops.sum(lo, axis=-1)
    if wrap_phase:
        hi, lo = _reduce_turns(hi, lo, ops.ceil((hi + lo - math.pi) / _TWO_PI))
    return hi + lo


# `position_phase`: frequencies are split on a 2**-12 grid and positions in
# 10-bit pieces, so every product below is exact in float32 for
# |frequency| < 4 and positions < 2**20; 2 pi = _TURN_HI - _TURN_DELTA with
# _TURN_HI a multiple of 2**-11 of 14 significant bits (Cody-Waite).
_FREQUENCY_GRID = 2.0**12
_POSITION_PIECE = 1024
_TURN_HI = 12868.0 / 2048.0
_TURN_DELTA = _TURN_HI - _TWO_PI


def _reduce_exact(t):
    """`t` minus whole turns; exact for `t` on a 2**-12 grid, < 1024 turns."""
    turns = ops.stop_gradient(ops.round(t / _TWO_PI))
    return (t - turns * _TURN_HI) + turns * _TURN_DELTA


def position_phase(frequency, positions):
    """Angles `frequency * positions` reduced modulo 2 pi, accurately.

    A plain float32 product `omega * pos` rounds to half a float32 step of
    the product: up to 4e-3 rad for `omega ~ 1` at `pos = 1e5`, and in
    float16 positions past 2048 are not even integers. Here the frequency
    is split as `omega_hi + omega_lo` (`omega_hi` on a 2**-12 grid) and the
    position as `p1 * 1024 + p0`, so that `omega_hi * p0` and
    `omega_hi * 1024 * p1` are exact in float32 and are reduced modulo
    2 pi exactly; only `omega_lo * pos` (at most `pos / 8192` rad) rounds.
    For `|frequency| < 4` and positions below 2**20 the result is within
    about 1e-6 rad of the exact product modulo 2 pi (beyond, the error
    grows like a float32 product's). Computed in float32 (float64 for
    float64 frequencies) whatever the inputs' precision; the gradient with
    respect to `frequency` is `positions`, as for the plain product.

    Args:
        frequency: real tensor of angular frequencies (rad per position).
        positions: integer tensor of positions, broadcastable against
            `frequency`; non-negative.

    Returns:
        A real tensor, the broadcast shape, of angles congruent to
        `frequency * positions` modulo 2 pi, in about `[-3 pi, 3 pi]`.

    Example:

    >>> angle = keras_msets.ops.position_phase(1.0, 100000)
    >>> float(angle)  # 100000 - 15915 * 2 pi = 3.1058362...
    3.1058361530303955
    """
    frequency = ops.convert_to_tensor(frequency)
    dtype = _accumulation_dtype(frequency)
    frequency = ops.cast(frequency, dtype)
    positions = ops.cast(positions, "int32")
    high = ops.cast(positions // _POSITION_PIECE, dtype)
    low = ops.cast(positions % _POSITION_PIECE, dtype)
    grid = _FREQUENCY_GRID
    frequency_hi = ops.stop_gradient(ops.round(frequency * grid) / grid)
    frequency_lo = frequency - frequency_hi
    # omega_hi * p0, exact.
    low_part = _reduce_exact(frequency_hi * low)
    # omega_hi * 1024 = m; m * p1 = (m mod 2 pi) * p1 + whole turns, where
    # m - k * _TURN_HI and its product with p1 are exact.
    scaled = frequency_hi * _POSITION_PIECE
    turns = ops.stop_gradient(ops.round(scaled / _TWO_PI))
    high_part = _reduce_exact((scaled - turns * _TURN_HI) * high)
    # The rounded rest: omega_lo * pos, and k * p1 * (_TURN_HI - 2 pi).
    rest = frequency_lo * ops.cast(positions, dtype)
    rest = rest + (turns * high) * _TURN_DELTA
    rest_turns = ops.stop_gradient(ops.round(rest / _TWO_PI))
    rest = (rest - rest_turns * _TURN_HI) + rest_turns * _TURN_DELTA
    return low_part + high_part + rest


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
