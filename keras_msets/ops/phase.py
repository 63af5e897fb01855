"""Accurate angles: phases of complex tensors, positions, and long sums.

float32 angles lose precision in three places that matter for products of
many unit complex numbers: an angle rounds by up to an ulp (and backends'
`atan2` differ by an ulp), a product `frequency * position` rounds to half
a float32 step of a large number, and a plain sum of 10**5 angles drifts
by up to 1e-2 rad. `accurate_phase`, `position_phase` and the exact phase
sum used by `keras_msets.ops.log_polar_product` keep each within about
1e-6 rad modulo 2 pi, with `keras.ops` only, on every backend.
"""

import math

import keras
import numpy as np
from keras import ops
from keras.backend import standardize_dtype

from keras_msets.ops.complex import complex_phase
from keras_msets.ops.complex import complex_split

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


def _block_sums(hi, lo, length, axis):
    """Sums blocks of `_PHASE_BLOCK` along `axis` (zero padded)."""
    if length is None:
        length = ops.shape(hi)[axis]
    padding = [[0, 0]] * len(hi.shape)
    padding[axis] = [0, -length % _PHASE_BLOCK]
    sums = []
    for part in (hi, lo):
        part = ops.pad(part, padding)
        shape = tuple(ops.shape(part))
        shape = shape[:axis] + (-1, _PHASE_BLOCK) + shape[axis + 1 :]
        sums.append(ops.sum(ops.reshape(part, shape), axis=axis + 1))
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
    sets of at most 64 angles in `[-pi, pi]`. The blocks are taken along
    `axis` itself (no transposed copy of the angles).
    """
    hi, lo = _split_phase(phase)
    if phase_lo is not None:
        lo = lo + phase_lo
    length = phase.shape[axis]
    if length is not None:
        while length > _PHASE_BLOCK:
            hi, lo = _reduce_turns(*_block_sums(hi, lo, length, axis))
            length = -(-length // _PHASE_BLOCK)
    else:
        # The length is known only at run time: a fixed number of levels,
        # reducing only where more than one block remains (the result is
        # then the same as with a known length).
        for _ in range(_PHASE_LEVELS):
            hi, lo = _block_sums(hi, lo, None, axis)
            several = ops.greater(ops.shape(hi)[axis], 1)
            turns = ops.where(several, ops.round(hi / _TWO_PI), 0.0)
            hi, lo = _reduce_turns(hi, lo, turns)
    hi, lo = ops.sum(hi, axis=axis), ops.sum(lo, axis=axis)
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


def position_phase(frequency, positions, max_position=None):
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
        max_position: None, or an integer known to bound `positions`
            (e.g. a static sequence length). Below 1024 every position
            is its low 10-bit piece, and the terms of the high piece
            (exactly 0) are skipped: the same values, fewer operations.

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
    grid = _FREQUENCY_GRID
    frequency_hi = ops.stop_gradient(ops.round(frequency * grid) / grid)
    frequency_lo = frequency - frequency_hi
    rest = frequency_lo * ops.cast(positions, dtype)
    if max_position is not None and max_position < _POSITION_PIECE:
        # p1 = 0, p0 = pos: no high part, and no turns of it in the rest.
        low_part = _reduce_exact(frequency_hi * ops.cast(positions, dtype))
        rest_turns = ops.stop_gradient(ops.round(rest / _TWO_PI))
        rest = (rest - rest_turns * _TURN_HI) + rest_turns * _TURN_DELTA
        return low_part + rest
    high = ops.cast(positions // _POSITION_PIECE, dtype)
    low = ops.cast(positions % _POSITION_PIECE, dtype)
    # omega_hi * p0, exact.
    low_part = _reduce_exact(frequency_hi * low)
    # omega_hi * 1024 = m; m * p1 = (m mod 2 pi) * p1 + whole turns, where
    # m - k * _TURN_HI and its product with p1 are exact.
    scaled = frequency_hi * _POSITION_PIECE
    turns = ops.stop_gradient(ops.round(scaled / _TWO_PI))
    high_part = _reduce_exact((scaled - turns * _TURN_HI) * high)
    # The rounded rest: omega_lo * pos, and k * p1 * (_TURN_HI - 2 pi).
    rest = rest + (turns * high) * _TURN_DELTA
    rest_turns = ops.stop_gradient(ops.round(rest / _TWO_PI))
    rest = (rest - rest_turns * _TURN_HI) + rest_turns * _TURN_DELTA
    return low_part + high_part + rest


# `cos_sin` on JAX: x = k pi / 2 + r, |r| <= pi / 4, with pi / 2 split
# Cody-Waite style (_HALF_PI_HI has 13 significant bits, so k * it is exact
# for |k| < 2**11), then Taylor polynomials of sin and cos in r.
_HALF_PI_HI = round(math.pi / 2 * 2**12) / 2**12
_HALF_PI_MID = float(np.float32(math.pi / 2 - _HALF_PI_HI))
_HALF_PI_LO = math.pi / 2 - _HALF_PI_HI - _HALF_PI_MID
_SIN_TERMS = tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(1, 6))
_COS_TERMS = tuple((-1) ** k / math.factorial(2 * k) for k in range(2, 7))


def _polynomial(r2, terms):
    total = terms[-1]
    for term in terms[-2::-1]:
        total = term + r2 * total
    return total


def _cos_sin_polynomial(theta):
    """`(cos, sin)` of float32 `theta` from one range reduction."""
    turns = ops.stop_gradient(ops.round(theta * (2 / math.pi)))
    r = theta - turns * _HALF_PI_HI
    r = (r - turns * _HALF_PI_MID) - turns * _HALF_PI_LO
    r2 = r * r
    sin = r + r * r2 * _polynomial(r2, _SIN_TERMS)
    cos = 1 - 0.5 * r2 + r2 * r2 * _polynomial(r2, _COS_TERMS)
    # Quadrant k mod 4 = 0, 1, 2, 3: cos(theta) = cos, -sin, -cos, sin and
    # sin(theta) = sin, cos, -sin, -cos (two's complement: k & 3 = k mod 4).
    quadrant = ops.cast(turns, "int32")
    odd = ops.equal(quadrant & 1, 1)
    first, second = ops.where(odd, sin, cos), ops.where(odd, cos, sin)
    negate_cos = ops.equal((quadrant + 1) & 2, 2)
    negate_sin = ops.equal(quadrant & 2, 2)
    return (
        ops.where(negate_cos, -first, first),
        ops.where(negate_sin, -second, second),
    )


@ops.custom_gradient
def _cos_sin_jax(theta):
    cos, sin = _cos_sin_polynomial(theta)

    def grad(*args, upstream=None):
        if upstream is None:
            (upstream,) = args
        upstream_cos, upstream_sin = upstream
        return cos * upstream_sin - sin * upstream_cos

    return (cos, sin), grad


def cos_sin(theta):
    """`(cos(theta), sin(theta))`, one shared range reduction on JAX.

    XLA's CPU `cos` and `sin` take about ten times as long per element as
    the arithmetic below (measured in `benchmarks/RESULTS.md`), so on JAX
    with float32 angles both come from one reduction `theta = k pi / 2 +
    r`, `|r| <= pi / 4` (exact for `|theta|` below about 3,000 rad, the
    error then growing like a float32 product's) and Taylor polynomials
    of degree 11 and 12 in `r`, whose truncation error is below 1e-9:
    within 2e-7 of the exact values (tested against numpy). Their
    gradient is `-sin` and `cos` of those values (a custom gradient: the
    backward pass reuses the outputs instead of differentiating the
    polynomials and the quadrant selection). Elsewhere (other backends,
    float64) the backend's `cos` and `sin`.
    """
    theta = ops.convert_to_tensor(theta)
    dtype = standardize_dtype(theta.dtype)
    if keras.backend.backend() != "jax" or dtype != "float32":
        return ops.cos(theta), ops.sin(theta)
    return _cos_sin_jax(theta)


def _float64_available():
    """Whether `accurate_phase` takes its float64 path on this backend.

    TensorFlow and PyTorch compute in float64. JAX takes the float32
    refinement (`_refine_phase_jax`) whether or not x64 is enabled: without
    x64 it turns float64 arrays into float32, and with x64 the float64 path
    was measured off by up to 3e-8 rad per angle on the CPU.
    """
    return keras.backend.backend() != "jax"


# The float32 refinement: a table of cos and sin on a 2**-10 grid of
# angles, each split as v1 + v2 + v3 (v1 on a 2**-11 grid, 12 bits).
_TABLE_GRID = 2.0**10
_TABLE_HALF = int(math.ceil(math.pi * _TABLE_GRID)) + 1
_SPLIT_GRID = 2.0**11


def _split_on_grid(v):
    """`v = v1 + v2` with `v1 = round(v * 2**11) / 2**11` (numpy)."""
    v1 = np.round(v * _SPLIT_GRID) / _SPLIT_GRID
    return v1, v - v1


def _phase_table():
    """`[6, 2 * _TABLE_HALF + 1]` float32: c1, c2, c3, s1, s2, s3."""
    grid = np.arange(-_TABLE_HALF, _TABLE_HALF + 1) / _TABLE_GRID
    rows = []
    for value in (np.cos(grid), np.sin(grid)):
        v1, rest = _split_on_grid(value)
        v2 = rest.astype("float32")
        v3 = (rest - v2.astype("float64")).astype("float32")
        rows += [v1.astype("float32"), v2, v3]
    return np.stack(rows)


_TABLE = None


def _refine_phase_jax(real, imag, hi):
    """`lo` with `hi + lo` the angle of `real + i imag` to about 1e-10 rad.

    float32 only (JAX without x64): the point is rotated by minus a grid
    angle `g` near `hi` whose cos and sin are known to 60 bits (a table),
    with the large products exact: `real` and `imag` are scaled by a power
    of two (exact) and split on a 2**-11 grid, so that the leading products
    have at most 24 bits. The rotated point is within 2**-11 rad of the
    real axis, and `g + atan2(rotated)` is the angle; `lo = (g - hi) +
    atan2(rotated)`. Zero and non-finite inputs give `lo = 0`.
    """
    import jax
    import jax.numpy as jnp

    global _TABLE
    if _TABLE is None:
        _TABLE = _phase_table()
    real, imag, hi = (jax.lax.stop_gradient(t) for t in (real, imag, hi))
    largest = jnp.maximum(jnp.abs(real), jnp.abs(imag))
    _, exponent = jnp.frexp(largest)
    xs, ys = jnp.ldexp(real, -exponent), jnp.ldexp(imag, -exponent)
    steps = jnp.round(hi * _TABLE_GRID)
    finite = jnp.isfinite(steps)
    steps = jnp.where(finite, steps, 0.0)
    grid_angle = steps / _TABLE_GRID
    index = jnp.clip(
        steps.astype("int32") + _TABLE_HALF, 0, _TABLE.shape[1] - 1
    )
    c1, c2, c3, s1, s2, s3 = (jnp.take(row, index) for row in _TABLE)
    x1 = jnp.round(xs * _SPLIT_GRID) / _SPLIT_GRID
    y1 = jnp.round(ys * _SPLIT_GRID) / _SPLIT_GRID
    x2, y2 = xs - x1, ys - y1
    # The imaginary part after rotating by -g; y1 c1 - x1 s1 is exact.
    leading = y1 * c1 - x1 * s1
    rest = (y1 * c2 - x1 * s2) + (y2 * c1 - x2 * s1)
    rest = rest + ((y2 * c2 - x2 * s2) + (ys * c3 - xs * s3))
    rotated_imag = leading + rest
    rotated_real = xs * (c1 + c2) + ys * (s1 + s2)
    lo = (grid_angle - hi) + jnp.arctan2(rotated_imag, rotated_real)
    keep = finite & (largest > 0) & jnp.isfinite(lo)
    return jnp.where(keep, lo, jnp.zeros_like(lo))


# A float64 rest beyond this is not a rounding of `hi` (at most an ulp of
# float32 `atan2`, about 5e-7 rad) but a convention: the origin's signed
# zeros (`hi = 0`, float64 `atan2` = +-pi) or NaN.
_MAX_REST = 1e-6


def _float64_arctan2(imag, real):
    """`atan2` computed in float64 (float64 inputs, a float64 result).

    Keras's PyTorch `arctan2` computes float64 inputs in float32, so on
    PyTorch this calls `torch.atan2`; TensorFlow's is float64.
    """
    if keras.backend.backend() == "torch":
        import torch

        return torch.atan2(imag, real)
    return ops.arctan2(imag, real)


def accurate_phase(x):
    """Phase of a complex tensor as a float32 pair `(hi, lo)`, `hi + lo`.

    `complex_phase` in float32 rounds every angle by up to an ulp (1.2e-7
    to 2.4e-7 rad near 1 to 3), and float32 `atan2` implementations differ
    by an ulp with a bias (PyTorch's against numpy's): summed over 1e5
    copies of one angle that is up to 1e-2 rad. `hi` is the float32 phase
    and `lo` the rest, for `log_polar_product(..., phase_lo=lo)`: on
    TensorFlow and PyTorch the rest is computed in float64 (the angle to
    within about 1e-15 rad, from a float64 `atan2`), on JAX by a float32
    refinement (within about 1e-10 rad; see `_refine_phase_jax`).
    Conventions and gradients are those of `complex_phase` (`lo` carries
    no gradient).

    Args:
        x: complex tensor `[..., 2 * d]`.

    Returns:
        A tuple `(hi, lo)` of real tensors `[..., d]` in `x`'s float dtype
        (float32 for half precision inputs).
    """
    x = ops.convert_to_tensor(x)
    dtype = _accumulation_dtype(x)
    x = ops.cast(x, dtype)
    hi = complex_phase(x)
    if dtype == "float64":
        return hi, ops.zeros_like(hi)
    if not _float64_available():
        real, imag = complex_split(x)
        return hi, _refine_phase_jax(real, imag, hi)
    # TensorFlow and PyTorch: the float64 angle minus `hi` (the
    # subtraction is exact: the two are within an ulp of float32), on
    # constants (`lo` carries no gradient, so no autodiff bookkeeping).
    # One float64 `atan2` costs about 0.6 of rotating `z` by `-hi` in
    # float64 (`cos` and `sin` of `hi`, four products and a quotient;
    # `benchmarks/accurate_phase_speed.py`), for the same angles.
    # `lo = 0` where it exceeds `_MAX_REST` (the origin, whatever the signs
    # of its zeros, and NaN inputs); for infinite parts it is the rest of
    # their angle (a multiple of pi / 4).
    real, imag = complex_split(ops.cast(ops.stop_gradient(x), "float64"))
    angle = _float64_arctan2(imag, real)
    lo = ops.cast(angle - ops.cast(ops.stop_gradient(hi), "float64"), dtype)
    return hi, ops.where(ops.abs(lo) < _MAX_REST, lo, ops.zeros_like(lo))
