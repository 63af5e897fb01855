"""Gaussian KL divergence and mutual information: closed forms and plug-ins.

The closed forms (`gaussian_kl_divergence`, `gaussian_mutual_information`)
give the exact answers of Gaussian problems, and, through the invariance
of the KL divergence under one invertible map applied to both
distributions and of the mutual information under separate invertible
maps of `X` and of `Y`, of every problem made from Gaussians by such
maps. The plug-in estimators (`gaussian_plugin_kl_divergence`,
`gaussian_plugin_mutual_information`) fit a mean and a covariance to the
samples and return the closed form of the fitted Gaussians: exact in the
limit for Gaussian data, biased for anything else, and a baseline that
costs one covariance.
"""

import numpy as np

from keras_msets.stats.classical import as_sample_pair


def _logdet(name, matrix):
    sign, value = np.linalg.slogdet(matrix)
    if sign <= 0:
        raise ValueError(
            f"`{name}` must be positive definite. Received: a matrix of "
            f"shape {matrix.shape} with determinant sign {sign:g}"
        )
    return value


def _square(name, value, d=None):
    matrix = np.atleast_2d(np.asarray(value, dtype=np.float64))
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(
            f"`{name}` must be a square matrix. Received: "
            f"{name}.shape={np.shape(value)}"
        )
    if d is not None and matrix.shape[0] != d:
        raise ValueError(
            f"`{name}` must be {d} x {d}. Received: {name}.shape={matrix.shape}"
        )
    return matrix


def gaussian_kl_divergence(mean_p, cov_p, mean_q, cov_q):
    """`KL(N(mean_p, cov_p) || N(mean_q, cov_q))` in nats, exactly.

    `0.5 * (tr(S_q^-1 S_p) + (m_q - m_p)' S_q^-1 (m_q - m_p) - d + log
    det S_q - log det S_p)`.

    Args:
        mean_p: mean of `P`, a vector `[d]`.
        cov_p: covariance of `P`, `[d, d]`, positive definite.
        mean_q: mean of `Q`, `[d]`.
        cov_q: covariance of `Q`, `[d, d]`, positive definite.

    Returns:
        A Python float.
    """
    mean_p = np.atleast_1d(np.asarray(mean_p, dtype=np.float64))
    d = mean_p.shape[0]
    mean_q = np.atleast_1d(np.asarray(mean_q, dtype=np.float64))
    if mean_q.shape != (d,):
        raise ValueError(
            f"`mean_q` must have shape ({d},) like `mean_p`. Received: "
            f"mean_q.shape={mean_q.shape}"
        )
    cov_p = _square("cov_p", cov_p, d)
    cov_q = _square("cov_q", cov_q, d)
    shift = mean_q - mean_p
    trace = np.trace(np.linalg.solve(cov_q, cov_p))
    mahalanobis = shift @ np.linalg.solve(cov_q, shift)
    logdets = _logdet("cov_q", cov_q) - _logdet("cov_p", cov_p)
    return float(0.5 * (trace + mahalanobis - d + logdets))


def gaussian_mutual_information(cov, dim_x):
    """`I(X; Y)` in nats of a Gaussian `(X, Y)` with joint covariance `cov`.

    `0.5 * (log det S_xx + log det S_yy - log det S)`, with `X` the first
    `dim_x` coordinates and `Y` the others.

    Args:
        cov: the joint covariance `[d_x + d_y, d_x + d_y]`, positive
            definite.
        dim_x: `d_x`, at least 1 and less than the size of `cov`.

    Returns:
        A Python float.
    """
    cov = _square("cov", cov)
    total = cov.shape[0]
    if (
        not isinstance(dim_x, (int, np.integer))
        or isinstance(dim_x, bool)
        or not 1 <= dim_x < total
    ):
        raise ValueError(
            f"`dim_x` must be an integer in [1, {total - 1}] (the size of "
            f"`cov` minus 1). Received: dim_x={dim_x!r}"
        )
    dim_x = int(dim_x)
    return float(
        0.5
        * (
            _logdet("cov[:dim_x, :dim_x]", cov[:dim_x, :dim_x])
            + _logdet("cov[dim_x:, dim_x:]", cov[dim_x:, dim_x:])
            - _logdet("cov", cov)
        )
    )


def _fitted(name, samples):
    """Sample mean and covariance (`ddof=1`) of `[n, d]` samples."""
    n, d = samples.shape
    if n < d + 2:
        raise ValueError(
            f"`{name}` must have at least d + 2 = {d + 2} rows for a "
            f"non-singular sample covariance. Received: {name}.shape="
            f"{samples.shape}"
        )
    cov = np.atleast_2d(np.cov(samples, rowvar=False))
    return samples.mean(axis=0), cov


def gaussian_plugin_kl_divergence(x, y):
    """Plug-in estimate of `KL(P || Q)`: the KL divergence of the Gaussians
    fitted to `x ~ P` and `y ~ Q`.

    Args:
        x: samples of `P`, `[n, d]`, `n >= d + 2`.
        y: samples of `Q`, `[m, d]`, `m >= d + 2`, the same `d`.

    Returns:
        The estimate in nats, a Python float (at least 0).

    Raises:
        ValueError: arrays that are not `[n, d]`, have different `d`, hold
            non-finite values or too few rows, or whose sample covariance
            is singular (a constant coordinate, say).
    """
    x, y = as_sample_pair(x, y, 1, "number of columns")
    mean_p, cov_p = _fitted("x", x)
    mean_q, cov_q = _fitted("y", y)
    return max(0.0, gaussian_kl_divergence(mean_p, cov_p, mean_q, cov_q))


def gaussian_plugin_mutual_information(x, y):
    """Plug-in estimate of `I(X; Y)`: the mutual information of the Gaussian
    fitted to the paired samples `[x_j, y_j]`.

    Exact in the limit for jointly Gaussian data; for other data it is the
    mutual information of a Gaussian with the same correlations, which
    can be far from the truth (zero for dependent but uncorrelated
    variables).

    Args:
        x: `[n, d_x]`.
        y: `[n, d_y]`, row `j` paired with row `j` of `x`; `n >= d_x + d_y
            + 2`.

    Returns:
        The estimate in nats, a Python float (at least 0).
    """
    x, y = as_sample_pair(x, y, 0, "number of rows (paired samples)")
    _, cov = _fitted("[x, y]", np.concatenate([x, y], axis=1))
    return max(0.0, gaussian_mutual_information(cov, x.shape[1]))
