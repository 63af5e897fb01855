"""Problems with known answers: mutual information, KL divergence, two-sample.

Exact answers for non-Gaussian data come from invariances: the mutual
information is unchanged by separate invertible maps of `X` and of `Y`,
and the KL divergence by one invertible map applied to both
distributions. Every problem starts from Gaussians (or, for additive
uniform noise and Gamma marginals, from a family with its own closed
form) and applies such maps (`MAPS`): per-coordinate monotone maps
(asinh, sinh, the normal CDF, a signed cube, exp, quantile maps to
Student-t and exponential marginals, a map to bimodal marginals) and a
smooth non-monotone diffeomorphism (`spiral`: each pair of coordinates
rotated by an angle that grows with its radius). Multivariate Student-t
pairs have a closed-form mutual information (Arellano-Valle, Contreras-
Reyes & Genton 2013; the form used by Czyż et al. 2023).

A problem's fixed parts (random covariances, mixing matrices) come from
its name, so they do not depend on the seed of a sample.
"""

import dataclasses
import zlib

import numpy as np
from scipy import special

from keras_msets.stats.gaussian import gaussian_kl_divergence
from keras_msets.stats.gaussian import gaussian_mutual_information


def _stable_seed(*parts):
    return zlib.crc32("/".join(str(p) for p in parts).encode())


# ---------------------------------------------------------------------------
# Invertible maps applied to Gaussian samples.
# ---------------------------------------------------------------------------


def _student_marginal(nu):
    def apply(u):
        # t quantile of Phi(u), through the lower tail on each side.
        lower = special.stdtrit(nu, special.ndtr(-np.abs(u)))
        return -np.sign(u) * lower

    return apply


def _spiral(u, speed=1.0):
    """Rotates coordinates (0, 1), (2, 3), ... by `speed * radius`."""
    out = u.copy()
    for i in range(0, u.shape[1] - 1, 2):
        a, b = u[:, i], u[:, i + 1]
        angle = speed * np.sqrt(a**2 + b**2)
        out[:, i] = np.cos(angle) * a - np.sin(angle) * b
        out[:, i + 1] = np.sin(angle) * a + np.cos(angle) * b
    return out


MAPS = {
    "identity": lambda u: u,
    "asinh": lambda u: np.arcsinh(2.0 * u),
    "sinh": lambda u: np.sinh(1.5 * u),
    "normal_cdf": special.ndtr,
    "cube": lambda u: np.sign(u) * np.abs(u) ** 3,
    "exp": np.exp,
    "student_t2_marginals": _student_marginal(2.0),
    "student_t3_marginals": _student_marginal(3.0),
    "exponential_marginals": lambda u: -special.log_ndtr(-u),
    # Strictly increasing; its derivative 1 + 9 sech^2(3u) is 10 at 0, so
    # the density of g(u) dips there: two modes near +-3.
    "bimodal": lambda u: u + 3.0 * np.tanh(3.0 * u),
    "spiral": _spiral,
}


# ---------------------------------------------------------------------------
# Problems.
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Problem:
    """One problem: `sample(n, seed)` and the exact answer `truth`.

    For `task == "mi"` a sample is `(x [n, dim_x], y [n, dim_y])`; for
    `"kl"`, `(x ~ P [n, d], y ~ Q [n, d])` and `truth = KL(P || Q)`; for
    `"two_sample"`, `(x ~ P, y ~ P, x ~ P, z ~ Q)`, a pair from one
    distribution and a pair from two (`truth` is None).
    """

    name: str
    task: str
    dim_x: int
    dim_y: int
    truth: float
    family: str
    sampler: object = dataclasses.field(repr=False, compare=False)
    # Student-t problems: degrees of freedom and the joint scale matrix.
    nu: float = None
    scale_matrix: object = dataclasses.field(
        default=None, repr=False, compare=False
    )

    def sample(self, n, seed):
        rng = np.random.default_rng([_stable_seed(self.name), n, seed])
        return self.sampler(rng, n)


def _cross_block(name, dim_x, dim_y, singular_values):
    """`C` with the given singular values between random orthonormal
    bases: `[[I, C], [C', I]]` is then a covariance with mutual
    information `-0.5 sum log(1 - s^2)`."""
    rng = np.random.default_rng(_stable_seed(name, "cross"))
    k = len(singular_values)
    u, _ = np.linalg.qr(rng.normal(size=(dim_x, dim_x)))
    v, _ = np.linalg.qr(rng.normal(size=(dim_y, dim_y)))
    return u[:, :k] @ np.diag(singular_values) @ v[:, :k].T


def _mixing(name, side, dim):
    """A fixed random invertible matrix (condition number below ~10)."""
    rng = np.random.default_rng(_stable_seed(name, "mix", side))
    q, _ = np.linalg.qr(rng.normal(size=(dim, dim)))
    return q @ np.diag(np.linspace(1.0, 3.0, dim))


def mi_gaussian(
    name,
    dim_x,
    dim_y=None,
    rho=None,
    singular_values=None,
    map_x="identity",
    map_y="identity",
    mix=False,
    sparse=False,
    family=None,
):
    """Gaussian `(X, Y)` then `map_x` on `X`, `map_y` on `Y`.

    Componentwise (`rho`): `corr(x_j, y_j) = rho`, the other correlations
    0. Otherwise the cross-covariance has the given `singular_values`,
    on the first coordinate pairs (`sparse`: `corr(x_j, y_j) = s_j`, the
    other coordinates independent) or between random bases (dense); with
    `mix`, each side is mixed by a fixed random invertible matrix before
    its map.
    """
    dim_y = dim_x if dim_y is None else dim_y
    if rho is not None:
        cross = rho * np.eye(dim_x, dim_y)
    elif sparse:
        cross = np.zeros((dim_x, dim_y))
        for i, value in enumerate(singular_values):
            cross[i, i] = value
    else:
        cross = _cross_block(name, dim_x, dim_y, np.asarray(singular_values))
    cov = np.block([[np.eye(dim_x), cross], [cross.T, np.eye(dim_y)]])
    truth = gaussian_mutual_information(cov, dim_x)
    noise = np.linalg.cholesky(np.eye(dim_y) - cross.T @ cross + 1e-12)
    mix_x = _mixing(name, "x", dim_x) if mix else np.eye(dim_x)
    mix_y = _mixing(name, "y", dim_y) if mix else np.eye(dim_y)

    def sampler(rng, n):
        x = rng.normal(size=(n, dim_x))
        y = x @ cross + rng.normal(size=(n, dim_y)) @ noise.T
        return MAPS[map_x](x @ mix_x.T), MAPS[map_y](y @ mix_y.T)

    family = family or ("gaussian" if map_x == map_y == "identity" else map_x)
    return Problem(name, "mi", dim_x, dim_y, truth, family, sampler)


def student_t_mi_correction(nu, dim_x, dim_y):
    """The mutual information of a multivariate Student-t with `nu` degrees
    of freedom beyond that of the Gaussian with the same scale matrix."""
    d = dim_x + dim_y
    g = special.gammaln
    psi = special.digamma
    return float(
        g(nu / 2)
        + g((nu + d) / 2)
        - g((nu + dim_x) / 2)
        - g((nu + dim_y) / 2)
        + (nu + dim_x) / 2 * psi((nu + dim_x) / 2)
        + (nu + dim_y) / 2 * psi((nu + dim_y) / 2)
        - (nu + d) / 2 * psi((nu + d) / 2)
        - nu / 2 * psi(nu / 2)
    )


def mi_student_t(name, nu, dim_x, dim_y=None, rho=0.5, map_x="identity"):
    """`(X, Y)` multivariate Student-t, componentwise correlation `rho`."""
    base = mi_gaussian(name, dim_x, dim_y, rho=rho)
    dim_y = base.dim_y
    cross = rho * np.eye(dim_x, dim_y)
    scale_matrix = np.block([[np.eye(dim_x), cross], [cross.T, np.eye(dim_y)]])
    truth = base.truth + student_t_mi_correction(nu, dim_x, dim_y)

    def sampler(rng, n):
        x, y = base.sampler(rng, n)
        scale = np.sqrt(nu / rng.chisquare(nu, size=(n, 1)))
        return MAPS[map_x](x * scale), y * scale

    return Problem(
        name,
        "mi",
        dim_x,
        dim_y,
        truth,
        "student_t",
        sampler,
        nu=nu,
        scale_matrix=scale_matrix,
    )


def mi_uniform_noise(name, dim, epsilon, map_x="identity"):
    """`X ~ U(0, 1)^d`, `Y = X + U(0, epsilon)^d` (`epsilon <= 1`):
    `I = d (epsilon / 2 - log epsilon)`."""
    truth = dim * (epsilon / 2 - np.log(epsilon))

    def sampler(rng, n):
        x = rng.uniform(size=(n, dim))
        y = x + epsilon * rng.uniform(size=(n, dim))
        if map_x != "identity":
            x = MAPS[map_x](special.ndtri(x))
        return x, y

    return Problem(name, "mi", dim, dim, truth, "uniform_noise", sampler)


def kl_gaussian(name, dim, shift=0.0, scale=1.0, dense=False, map_="identity"):
    """`P = N(0, I)` and `Q = N(m, S)` (shift and scale along random axes
    when `dense`, else along every coordinate), both through `map_`."""
    rng = np.random.default_rng(_stable_seed(name, "kl"))
    mean_q = np.full(dim, shift / np.sqrt(dim))
    cov_q = np.eye(dim) * scale**2
    if dense:
        q, _ = np.linalg.qr(rng.normal(size=(dim, dim)))
        scales = np.exp(rng.uniform(-np.log(scale), np.log(scale), dim))
        cov_q = q @ np.diag(scales**2) @ q.T
        mean_q = q @ mean_q
    truth = gaussian_kl_divergence(np.zeros(dim), np.eye(dim), mean_q, cov_q)
    chol_q = np.linalg.cholesky(cov_q)

    def sampler(rng, n):
        x = rng.normal(size=(n, dim))
        y = rng.normal(size=(n, dim)) @ chol_q.T + mean_q
        return MAPS[map_](x), MAPS[map_](y)

    family = "gaussian" if map_ == "identity" else map_
    return Problem(name, "kl", dim, dim, truth, family, sampler)


def kl_gamma(name, dim, shape=2.0, scale_p=1.0, scale_q=1.5):
    """Independent Gamma(shape, scale) coordinates, one scale per side."""
    ratio = scale_p / scale_q
    truth = dim * shape * (ratio - 1 - np.log(ratio))

    def sampler(rng, n):
        x = rng.gamma(shape, scale_p, size=(n, dim))
        return x, rng.gamma(shape, scale_q, size=(n, dim))

    return Problem(name, "kl", dim, dim, float(truth), "gamma", sampler)


def two_sample(name, dim, draw_p, draw_q, family):
    """Two-sample problem from two samplers `draw(rng, n, dim)`."""

    def sampler(rng, n):
        return (
            draw_p(rng, n, dim),
            draw_p(rng, n, dim),
            draw_p(rng, n, dim),
            draw_q(rng, n, dim),
        )

    return Problem(name, "two_sample", dim, dim, None, family, sampler)


def _normal(rng, n, dim):
    return rng.normal(size=(n, dim))


def _shifted(delta):
    def draw(rng, n, dim):
        return rng.normal(size=(n, dim)) + delta / np.sqrt(dim)

    return draw


def _scaled(factor):
    def draw(rng, n, dim):
        return factor * rng.normal(size=(n, dim))

    return draw


def _bimodal_first(rng, n, dim):
    """Mean 0, covariance I, the first coordinate a two-mode mixture."""
    out = rng.normal(size=(n, dim))
    signs = rng.choice([-1.0, 1.0], size=n)
    out[:, 0] = 0.8 * signs + 0.6 * out[:, 0]
    return out


def _student5(rng, n, dim):
    """Student-t(5) coordinates scaled to unit variance."""
    return rng.standard_t(5.0, size=(n, dim)) * np.sqrt(3.0 / 5.0)


def _correlated(rng, n, dim):
    z = rng.normal(size=(n, dim))
    return (z + 0.4 * np.roll(z, 1, axis=1)) / np.sqrt(1.16)


def _spiral_of(draw):
    def spiral(rng, n, dim):
        return _spiral(draw(rng, n, dim))

    return spiral


def mi_problems():
    return [
        mi_gaussian("mi_gauss_d1", 1, rho=0.5),
        mi_gaussian("mi_gauss_d3", 3, rho=0.6),
        mi_gaussian("mi_gauss_d10", 10, rho=0.5),
        mi_gaussian("mi_gauss_d15_strong", 15, rho=0.8),
        mi_gaussian("mi_gauss_d25", 25, rho=0.3),
        mi_gaussian("mi_dense_2x5", 2, 5, singular_values=[0.8, 0.5]),
        mi_gaussian("mi_dense_8x8", 8, singular_values=[0.8, 0.6, 0.4, 0.2]),
        mi_gaussian(
            "mi_dense_5x5_mixed", 5, singular_values=[0.7, 0.5, 0.3], mix=True
        ),
        mi_gaussian(
            "mi_sparse_d10", 10, singular_values=[0.8, 0.8], sparse=True
        ),
        mi_gaussian(
            "mi_sparse_20x12", 20, 12, singular_values=[0.9, 0.7], sparse=True
        ),
        mi_gaussian("mi_independent_d5", 5, rho=0.0, family="independent"),
        mi_gaussian("mi_asinh_d3", 3, rho=0.6, map_x="asinh", map_y="asinh"),
        mi_gaussian("mi_sinh_d4", 4, rho=0.6, map_x="sinh", map_y="sinh"),
        mi_gaussian(
            "mi_cdf_d5", 5, rho=0.5, map_x="normal_cdf", map_y="normal_cdf"
        ),
        mi_gaussian("mi_cube_d2", 2, rho=0.7, map_x="cube", map_y="identity"),
        mi_gaussian("mi_exp_4x4", 4, rho=0.5, map_x="exp", map_y="exp"),
        mi_gaussian(
            "mi_exp_t3_d10",
            10,
            rho=0.6,
            map_x="exponential_marginals",
            map_y="student_t3_marginals",
        ),
        mi_gaussian(
            "mi_t2_marginals_3x6",
            3,
            6,
            singular_values=[0.8, 0.6, 0.4],
            map_x="student_t2_marginals",
            map_y="asinh",
        ),
        mi_gaussian("mi_spiral_d2", 2, rho=0.8, map_x="spiral", map_y="spiral"),
        mi_gaussian(
            "mi_spiral_d6_mixed",
            6,
            singular_values=[0.8, 0.6, 0.6],
            map_x="spiral",
            mix=True,
        ),
        mi_gaussian(
            "mi_bimodal_d2", 2, rho=0.7, map_x="bimodal", map_y="bimodal"
        ),
        mi_gaussian(
            "mi_bimodal_8x8", 8, rho=0.5, map_x="bimodal", map_y="asinh"
        ),
        mi_student_t("mi_student_nu1_d1", 1.0, 1, rho=0.5),
        mi_student_t("mi_student_nu2_d3", 2.0, 3, rho=0.5),
        mi_student_t("mi_student_nu5_d5", 5.0, 5, rho=0.6),
        mi_student_t("mi_student_nu3_2x4", 3.0, 2, 4, rho=0.7),
        mi_uniform_noise("mi_uniform_noise_d1", 1, 0.3),
        mi_uniform_noise("mi_uniform_noise_d5", 5, 0.5, map_x="asinh"),
    ]


def kl_problems():
    return [
        kl_gaussian("kl_shift_d1", 1, shift=1.0),
        kl_gaussian("kl_shift_d4", 4, shift=1.0),
        kl_gaussian("kl_shift_d16", 16, shift=1.5),
        kl_gaussian("kl_scale_d2", 2, scale=1.5),
        kl_gaussian("kl_dense_d8", 8, shift=0.5, scale=1.6, dense=True),
        kl_gaussian("kl_dense_d12", 12, shift=1.0, scale=1.4, dense=True),
        kl_gaussian("kl_dense_d25", 25, shift=1.0, scale=1.3, dense=True),
        kl_gaussian("kl_same_d6_cdf", 6, map_="normal_cdf"),
        kl_gaussian("kl_asinh_d3", 3, shift=1.0, scale=1.3, map_="asinh"),
        kl_gaussian("kl_sinh_d5", 5, shift=0.8, scale=1.2, map_="sinh"),
        kl_gaussian("kl_cdf_d6", 6, shift=1.0, dense=True, map_="normal_cdf"),
        kl_gaussian("kl_cube_d2", 2, shift=0.8, scale=1.4, map_="cube"),
        kl_gaussian("kl_exp_d10", 10, shift=1.0, scale=1.2, map_="exp"),
        kl_gaussian("kl_spiral_d2", 2, shift=1.0, scale=1.3, map_="spiral"),
        kl_gaussian(
            "kl_spiral_d4", 4, shift=1.0, scale=1.3, dense=True, map_="spiral"
        ),
        kl_gaussian("kl_bimodal_d3", 3, shift=1.0, scale=1.2, map_="bimodal"),
        kl_gamma("kl_gamma_d10", 10),
    ]


def two_sample_problems():
    return [
        two_sample("ts_shift_d1", 1, _normal, _shifted(0.4), "shift"),
        two_sample("ts_shift_d4", 4, _normal, _shifted(0.5), "shift"),
        two_sample("ts_shift_d8", 8, _normal, _shifted(0.5), "shift"),
        two_sample("ts_shift_d16", 16, _normal, _shifted(0.6), "shift"),
        two_sample("ts_scale_d8", 8, _normal, _scaled(1.2), "scale"),
        two_sample("ts_bimodal_d8", 8, _normal, _bimodal_first, "bimodal"),
        two_sample("ts_student5_d8", 8, _normal, _student5, "heavy_tails"),
        two_sample(
            "ts_correlated_d16", 16, _normal, _correlated, "correlation"
        ),
        two_sample(
            "ts_spiral_d2",
            2,
            _spiral_of(_normal),
            _spiral_of(_shifted(0.5)),
            "spiral",
        ),
    ]


def all_problems():
    return mi_problems() + kl_problems() + two_sample_problems()
