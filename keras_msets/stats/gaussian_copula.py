"""Gaussian-copula statistics of paired samples in copula-normal coordinates.

The parts of `keras_msets.stats.mi_statistics` that see the sample only
through its correlation (and its fourth moments): the correlation matrix
shrunk towards the identity, the Gaussian plug-in of the mutual
information with and without the finite-sample bias of each
log-determinant removed (`log_det_bias`, Misra, Singh & Demchuk 2005),
the information of the largest canonical correlation and Mardia's
kurtosis. `zx`, `zy` are `[n, d_x]` and `[n, d_y]` copula-normal
coordinates (`mi_statistics.copula_normal`).
"""

import numpy as np


def shrunk_correlation(z):
    """The correlation matrix of the columns of `z` (`[n, p]`) shrunk
    towards the identity with weight `p / (p + n)`, so that it is of
    full rank even for `n <= p`."""
    n, p = z.shape
    corr = np.atleast_2d(np.corrcoef(z, rowvar=False))
    weight = p / (p + n)
    return (1 - weight) * corr + weight * np.eye(p)


def log_det_bias(dim, dof):
    """`E[log det S] - log det Sigma` for `S` the sample covariance of
    `dof + 1` Gaussian rows in `dim` dimensions (`dof * S` is Wishart with
    `dof` degrees of freedom): `sum_i psi((dof - i + 1) / 2) + dim log(2 /
    dof)`, `i = 1..dim` (Misra, Singh & Demchuk 2005)."""
    from scipy.special import digamma

    i = np.arange(1, dim + 1)
    return float(np.sum(digamma((dof - i + 1) / 2)) + dim * np.log(2 / dof))


def corrected_gaussian_information(zx, zy):
    """The Gaussian plug-in `0.5 (log det S_xx + log det S_yy - log det S)`
    of the unshrunk sample covariance `S`, each log-determinant minus its
    bias under a Gaussian (`log_det_bias`): unbiased for Gaussian data.
    Needs `n >= d_x + d_y + 2` rows and a sample covariance of full rank
    (columns with the same ranks make it singular); returns nan
    otherwise. Not clipped at 0."""
    n, dim_x = zx.shape
    z = np.concatenate([zx, zy], axis=1)
    p = z.shape[1]
    if n < p + 2:
        return float("nan")
    cov = np.atleast_2d(np.cov(z, rowvar=False))
    dof = n - 1
    parts = []
    for block, dim in (
        (cov[:dim_x, :dim_x], dim_x),
        (cov[dim_x:, dim_x:], p - dim_x),
        (cov, p),
    ):
        sign, logdet = np.linalg.slogdet(block)
        if sign <= 0 or not np.isfinite(logdet):
            return float("nan")
        parts.append(logdet - log_det_bias(dim, dof))
    return float(0.5 * (parts[0] + parts[1] - parts[2]))


def canonical_information(corr, dim_x):
    """`(canonical_top, canonical_share)` of a correlation matrix `corr`
    of `[x, y]` (`dim_x` columns of x): the Gaussian information of the
    largest canonical correlation and its share of the total."""

    def inverse_root(block):
        values, vectors = np.linalg.eigh(block)
        return vectors / np.sqrt(np.maximum(values, 1e-12)) @ vectors.T

    whitened = (
        inverse_root(corr[:dim_x, :dim_x])
        @ corr[:dim_x, dim_x:]
        @ inverse_root(corr[dim_x:, dim_x:])
    )
    singular = np.clip(np.linalg.svd(whitened, compute_uv=False), 0, 1 - 1e-12)
    parts = -0.5 * np.log1p(-(singular**2))
    total = float(np.sum(parts))
    top = float(parts.max())
    return top, (top / total if total > 0 else 1.0)


def _log_kurtosis(z, corr):
    """log of Mardia's kurtosis over its Gaussian value `p (p + 2)`."""
    p = z.shape[1]
    centred = z - z.mean(axis=0)
    squared = np.einsum("ij,ij->i", centred @ np.linalg.inv(corr), centred)
    return float(np.log(np.mean(squared**2) / (p * (p + 2))))


def gaussian_copula_statistics(zx, zy):
    """`(plug-in MI, log kurtosis joint, of x, of y)` of copula-normal
    coordinates."""
    dim_x = zx.shape[1]
    z = np.concatenate([zx, zy], axis=1)
    corr = shrunk_correlation(z)
    logdet = np.linalg.slogdet(corr)[1]
    logdet_x = np.linalg.slogdet(corr[:dim_x, :dim_x])[1]
    logdet_y = np.linalg.slogdet(corr[dim_x:, dim_x:])[1]
    plugin = max(0.5 * (logdet_x + logdet_y - logdet), 0.0)
    return (
        float(plugin),
        _log_kurtosis(z, corr),
        _log_kurtosis(zx, corr[:dim_x, :dim_x]),
        _log_kurtosis(zy, corr[dim_x:, dim_x:]),
    )
