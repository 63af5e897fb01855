"""Random Gaussian mixtures with exact densities (Selby et al., 2022).

Random mixtures (Sec. 5.1.1 and App. B, checked against the authors'
reference code where the text is silent):

- number of components uniform in `[1, 10]`, both ends included as the
  paper says (the reference code draws 1-9);
- weights from the uniform Dirichlet distribution, `Dirichlet(1, ..., 1)`,
  as the paper says (the reference code samples `Dirichlet(1/K, ...)` and
  then uses the draw as logits, which makes the weights nearly equal);
- means uniform on `[0, 1]^d` (the paper says "uniform"; `[0, 1)` is the
  reference code's range);
- covariance `diag(s) C diag(s)` with `C` an LKJ(`eta = 5`) correlation
  matrix and `s` log-normal standard deviations, `log s ~ N(0, 0.3^2)`
  (the reference code's `scale_tril = diag(s) chol(C)`).

The tasks built on these mixtures are in `keras_msets.data.mixtures`, which
also exports every public name of this module.
"""

import dataclasses

import numpy as np
from scipy.special import logsumexp

from keras_msets.utils.validation import check_float_range
from keras_msets.utils.validation import check_int_range
from keras_msets.utils.validation import check_non_negative_float
from keras_msets.utils.validation import check_positive_float
from keras_msets.utils.validation import check_positive_int
from keras_msets.utils.validation import is_int


def _check_num_components(value):
    """An integer `K` or a pair `(low, high)`; returns the pair."""
    if is_int(value):
        value = (value, value)
    return check_int_range("num_components", value, low=1)


def sample_lkj_correlation(dim, eta, rng, size=None):
    """Draws correlation matrices from the LKJ distribution.

    The LKJ distribution on `dim x dim` correlation matrices has density
    proportional to `det(C)^(eta - 1)`: `eta = 1` is uniform, larger `eta`
    concentrates around the identity. Each off-diagonal entry `C_ij` then
    follows `2 B - 1` with `B ~ Beta(eta - 1 + dim/2, eta - 1 + dim/2)`.

    This uses the extended onion method of Lewandowski, Kurowicka & Joe
    (2009, Sec. 3.2) in Cholesky form: row 0 of the factor `L` is `e_1`;
    row `k = 1..dim-1` is `(sqrt(y_k) u_k, sqrt(1 - y_k), 0, ...)` with
    `y_k ~ Beta(k/2, eta + (dim - 1 - k)/2)` and `u_k` uniform on the unit
    sphere of `R^k`; then `C = L L^T`.

    Args:
        dim: Matrix size, a positive integer.
        eta: Concentration `eta > 0`.
        rng: A `np.random.Generator`.
        size: `None` for one matrix, or an integer number of matrices.

    Returns:
        float64 `[dim, dim]` or `[size, dim, dim]`, symmetric, unit
        diagonal, positive definite.

    References:
        - Lewandowski, Kurowicka & Joe. Generating random correlation
          matrices based on vines and extended onion method. Journal of
          Multivariate Analysis 100(9), 2009.
    """
    dim = check_positive_int("dim", dim)
    eta = check_positive_float("eta", eta)
    count = 1 if size is None else check_positive_int("size", size)
    factor = np.zeros((count, dim, dim))
    factor[:, 0, 0] = 1.0
    for k in range(1, dim):
        y = rng.beta(k / 2.0, eta + (dim - 1 - k) / 2.0, size=count)
        u = rng.standard_normal((count, k))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        factor[:, k, :k] = np.sqrt(y)[:, None] * u
        factor[:, k, k] = np.sqrt(1.0 - y)
    corr = factor @ np.swapaxes(factor, -1, -2)
    # Exact unit diagonal (rounding leaves 1 +- 1e-16).
    idx = np.arange(dim)
    corr[:, idx, idx] = 1.0
    return corr[0] if size is None else corr


@dataclasses.dataclass(frozen=True, eq=False)
class GaussianMixture:
    """A mixture of multivariate normal distributions with exact density.

    Args:
        weights: `[K]` non-negative mixture weights summing to 1.
        means: `[K, d]` component means.
        covariances: `[K, d, d]` symmetric positive definite covariances.

    Example:

    ```python
    rng = np.random.default_rng(0)
    p = random_gaussian_mixture(2, rng)
    x = p.sample(100, rng)  # [100, 2]
    p.logpdf(x)  # [100]
    ```
    """

    weights: np.ndarray
    means: np.ndarray
    covariances: np.ndarray

    def __post_init__(self):
        weights = np.asarray(self.weights, dtype=np.float64)
        means = np.asarray(self.means, dtype=np.float64)
        covariances = np.asarray(self.covariances, dtype=np.float64)
        if (
            weights.ndim != 1
            or means.ndim != 2
            or covariances.ndim != 3
            or means.shape[0] != weights.shape[0]
            or covariances.shape
            != (weights.shape[0], means.shape[1], means.shape[1])
            or weights.shape[0] < 1
            or means.shape[1] < 1
        ):
            raise ValueError(
                "`weights`, `means` and `covariances` must have shapes [K], "
                "[K, d] and [K, d, d] with K, d >= 1. Received: "
                f"weights.shape={weights.shape}, means.shape={means.shape}, "
                f"covariances.shape={covariances.shape}"
            )
        if (
            not np.all(np.isfinite(weights))
            or np.any(weights < 0)
            or not np.isclose(weights.sum(), 1.0, atol=1e-8)
        ):
            raise ValueError(
                "`weights` must be non-negative and sum to 1. Received: "
                f"weights={weights.tolist()}"
            )
        try:
            chol = np.linalg.cholesky(covariances)
        except np.linalg.LinAlgError:
            chol = None
        if (
            chol is None
            or not np.all(np.isfinite(means))
            or not np.allclose(
                covariances, np.swapaxes(covariances, -1, -2), atol=1e-10
            )
        ):
            raise ValueError(
                "`covariances` must be symmetric positive definite and "
                "`means` finite."
            )
        object.__setattr__(self, "weights", weights / weights.sum())
        object.__setattr__(self, "means", means)
        object.__setattr__(self, "covariances", covariances)
        object.__setattr__(self, "_chol", chol)
        object.__setattr__(self, "_chol_inv", np.linalg.inv(chol))

    @property
    def dim(self):
        """The dimension `d`."""
        return self.means.shape[1]

    @property
    def num_components(self):
        """The number of components `K`."""
        return self.weights.shape[0]

    def sample(self, n, rng):
        """Draws `n` samples, float64 `[n, d]`, from the `np.random.Generator`
        `rng`: component indices first, then standard normals."""
        n = int(n)
        if n < 0:
            raise ValueError(f"`n` must be >= 0. Received: n={n}")
        components = rng.choice(self.num_components, size=n, p=self.weights)
        noise = rng.standard_normal((n, self.dim))
        return self.means[components] + np.einsum(
            "nij,nj->ni", self._chol[components], noise
        )

    def logpdf(self, x):
        """Exact log density at the rows of `x` (`[n, d]`), float64 `[n]`.

        `logsumexp_k(log w_k + log N(x; mu_k, Sigma_k))`, with each normal
        log density evaluated through the Cholesky factor `L_k` of
        `Sigma_k`: `-(d log(2 pi) + 2 sum log diag L_k + |L_k^-1 (x -
        mu_k)|^2) / 2`, all components at once (the same values as
        `scipy.stats.multivariate_normal.logpdf`, an order of magnitude
        faster for small mixtures).
        """
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(
                f"`x` must have shape [n, {self.dim}]. Received: "
                f"x.shape={x.shape}"
            )
        diff = x[None, :, :] - self.means[:, None, :]
        white = np.einsum("kij,knj->kni", self._chol_inv, diff)
        log_det = 2.0 * np.log(np.diagonal(self._chol, axis1=1, axis2=2))
        per_component = -0.5 * (
            self.dim * np.log(2.0 * np.pi)
            + log_det.sum(axis=1)[:, None]
            + np.sum(white * white, axis=2)
        )
        return logsumexp(per_component, b=self.weights[:, None], axis=0)

    def affine(self, matrix, shift):
        """The mixture of `matrix @ x + shift` for `x` from this mixture.

        Args:
            matrix: Invertible `[d, d]`.
            shift: `[d]`.

        Returns:
            A `GaussianMixture` with means `A mu_k + b` and covariances
            `A Sigma_k A^T`.
        """
        matrix = np.asarray(matrix, dtype=np.float64)
        shift = np.asarray(shift, dtype=np.float64)
        covariances = matrix @ self.covariances @ matrix.T
        covariances = 0.5 * (covariances + np.swapaxes(covariances, -1, -2))
        return GaussianMixture(
            self.weights, self.means @ matrix.T + shift, covariances
        )


def random_gaussian_mixture(
    dim,
    rng,
    num_components=(1, 10),
    eta=5.0,
    scale_sigma=0.3,
    mean_range=(0.0, 1.0),
):
    """Draws a random Gaussian mixture as in Selby et al. (2022, Sec. 5.1.1).

    `K` uniform in `num_components` (both ends included); weights
    `Dirichlet(1, ..., 1)`; means uniform on `mean_range^d`; covariance
    `diag(s) C diag(s)` with `C ~ LKJ(eta)` (`sample_lkj_correlation`) and
    `log s_j ~ N(0, scale_sigma^2)`, drawn per component. The defaults are
    the paper's.

    Args:
        dim: Dimension `d`, a positive integer.
        rng: A `np.random.Generator`.
        num_components: An integer `K` or a pair `(low, high)`.
        eta: LKJ concentration (`nu = 5` in the paper).
        scale_sigma: Standard deviation of the log of the component
            standard deviations (`sigma_0 = 0.3`).
        mean_range: `(low, high)` of the uniform means.

    Returns:
        A `GaussianMixture`.
    """
    dim = check_positive_int("dim", dim)
    low, high = _check_num_components(num_components)
    eta = check_positive_float("eta", eta)
    scale_sigma = check_non_negative_float("scale_sigma", scale_sigma)
    mean_range = check_float_range("mean_range", mean_range)
    k = int(rng.integers(low, high, endpoint=True))
    weights = rng.dirichlet(np.ones(k))
    means = rng.uniform(mean_range[0], mean_range[1], size=(k, dim))
    corr = sample_lkj_correlation(dim, eta, rng, size=k)
    scales = np.exp(scale_sigma * rng.standard_normal((k, dim)))
    covariances = scales[:, :, None] * corr * scales[:, None, :]
    return GaussianMixture(weights, means, covariances)


def _mixture_kwargs(num_components, eta, scale_sigma, mean_range):
    # Validate once, before the loop.
    _check_num_components(num_components)
    check_positive_float("eta", eta)
    check_non_negative_float("scale_sigma", scale_sigma)
    check_float_range("mean_range", mean_range)
    return dict(
        num_components=num_components,
        eta=eta,
        scale_sigma=scale_sigma,
        mean_range=mean_range,
    )
