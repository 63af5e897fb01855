"""Complex arithmetic on real tensors.

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

from keras import ops

from keras_msets.ops.masked import _shapes_compatible


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
