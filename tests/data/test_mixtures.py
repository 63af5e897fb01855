"""Tests of the Gaussian-mixture generators (Selby et al., Sec. 5.1, 5.2.3).

Densities are checked against `scipy.stats.multivariate_normal`, samplers
against known distributions with Kolmogorov-Smirnov tests (fixed seeds,
so each p-value is deterministic) and moments, labels against an
independent recomputation.
"""

import numpy as np
import pytest
from scipy import integrate
from scipy import stats
from scipy.special import logsumexp

from keras_msets.data.mixtures import GaussianMixture
from keras_msets.data.mixtures import gaussian_mutual_information
from keras_msets.data.mixtures import kl_divergence_pairs
from keras_msets.data.mixtures import mutual_information_sets
from keras_msets.data.mixtures import random_gaussian_mixture
from keras_msets.data.mixtures import sample_lkj_correlation
from keras_msets.data.mixtures import two_sample_pairs
from keras_msets.data.mixtures import whiten_sets


@pytest.fixture(autouse=True)
def _seed_everything():
    """Replaces the suite-wide fixture: these tests are numpy-only and seed
    every generator explicitly."""
    yield


def _scipy_logpdf(mixture, x):
    """Independent reference: scipy's normal log densities + logsumexp."""
    per_component = np.stack(
        [
            np.atleast_1d(stats.multivariate_normal(m, c).logpdf(x))
            for m, c in zip(mixture.means, mixture.covariances, strict=True)
        ]
    )
    return logsumexp(per_component + np.log(mixture.weights)[:, None], axis=0)


def _gaussian_kl(mean_p, cov_p, mean_q, cov_q):
    d = len(mean_p)
    prec_q = np.linalg.inv(cov_q)
    diff = mean_q - mean_p
    return 0.5 * (
        np.trace(prec_q @ cov_p)
        + diff @ prec_q @ diff
        - d
        + np.linalg.slogdet(cov_q)[1]
        - np.linalg.slogdet(cov_p)[1]
    )


# --- LKJ ------------------------------------------------------------------


@pytest.mark.parametrize(
    "dim, eta, entries",
    [
        (2, 5.0, [(0, 1)]),
        (4, 5.0, [(0, 1), (1, 3), (2, 3)]),
        (3, 1.0, [(0, 2)]),
    ],
)
def test_lkj_marginals(dim, eta, entries):
    # Off-diagonal marginal: (C_ij + 1) / 2 ~ Beta(eta - 1 + d/2, same).
    corr = sample_lkj_correlation(dim, eta, np.random.default_rng(0), 4000)
    a = eta - 1 + dim / 2
    for i, j in entries:
        values = (corr[:, i, j] + 1) / 2
        assert stats.kstest(values, stats.beta(a, a).cdf).pvalue > 0.01
    # A wrong shape parameter is rejected by the same test.
    values = (corr[:, 0, 1] + 1) / 2
    assert stats.kstest(values, stats.beta(a + 2, a + 2).cdf).pvalue < 1e-3


def test_lkj_matrices_are_correlation_matrices():
    corr = sample_lkj_correlation(6, 5.0, np.random.default_rng(1), 200)
    assert corr.shape == (200, 6, 6)
    np.testing.assert_array_equal(np.diagonal(corr, axis1=1, axis2=2), 1.0)
    np.testing.assert_allclose(corr, np.swapaxes(corr, 1, 2), atol=1e-15)
    assert np.all(np.linalg.eigvalsh(corr)[:, 0] > 0)
    single = sample_lkj_correlation(3, 2.0, np.random.default_rng(1))
    assert single.shape == (3, 3)
    assert sample_lkj_correlation(1, 5.0, np.random.default_rng(0)).shape == (
        1,
        1,
    )


# --- GaussianMixture ------------------------------------------------------


def test_logpdf_matches_scipy():
    rng = np.random.default_rng(2)
    for dim in (1, 3, 8):
        mixture = random_gaussian_mixture(dim, rng, num_components=(2, 6))
        x = mixture.sample(50, rng) + rng.normal(size=(50, dim))
        np.testing.assert_allclose(
            mixture.logpdf(x), _scipy_logpdf(mixture, x), rtol=1e-10
        )


def test_logpdf_integrates_to_one_in_1d():
    mixture = random_gaussian_mixture(
        1, np.random.default_rng(3), num_components=4
    )
    total, _ = integrate.quad(
        lambda t: np.exp(mixture.logpdf(np.array([[t]])))[0], -20, 20
    )
    np.testing.assert_allclose(total, 1.0, rtol=1e-7)


def test_sample_moments():
    rng = np.random.default_rng(4)
    mixture = random_gaussian_mixture(3, rng, num_components=3)
    x = mixture.sample(200_000, rng)
    w, mu, cov = mixture.weights, mixture.means, mixture.covariances
    mean = w @ mu
    second = np.einsum("k,kij->ij", w, cov + mu[:, :, None] * mu[:, None, :])
    np.testing.assert_allclose(x.mean(axis=0), mean, atol=0.01)
    np.testing.assert_allclose(
        np.cov(x, rowvar=False), second - np.outer(mean, mean), atol=0.015
    )


def test_affine_is_the_law_of_the_transformed_samples():
    rng = np.random.default_rng(5)
    mixture = random_gaussian_mixture(2, rng, num_components=3)
    matrix = np.array([[2.0, 0.5], [-0.3, 1.0]])
    shift = np.array([1.0, -2.0])
    image = mixture.affine(matrix, shift)
    x = mixture.sample(20, rng)
    # Change of variables: log p_T(T x) = log p(x) - log |det A|.
    np.testing.assert_allclose(
        image.logpdf(x @ matrix.T + shift),
        mixture.logpdf(x) - np.log(abs(np.linalg.det(matrix))),
        rtol=1e-10,
    )


def test_gaussian_mixture_validation():
    with pytest.raises(ValueError, match="sum to 1"):
        GaussianMixture([0.5, 0.6], np.zeros((2, 1)), np.ones((2, 1, 1)))
    with pytest.raises(ValueError, match="shapes"):
        GaussianMixture([1.0], np.zeros((1, 2)), np.ones((1, 1, 1)))
    with pytest.raises(ValueError, match="positive definite"):
        GaussianMixture([1.0], np.zeros((1, 2)), -np.eye(2)[None])


# --- random_gaussian_mixture ------------------------------------------------


def test_random_mixture_parameters_follow_the_paper():
    rng = np.random.default_rng(6)
    mixtures = [random_gaussian_mixture(4, rng) for _ in range(600)]
    counts = np.array([m.num_components for m in mixtures])
    assert set(counts.tolist()) == set(range(1, 11))
    means = np.concatenate([m.means for m in mixtures])
    assert means.min() >= 0 and means.max() <= 1
    assert stats.kstest(means.ravel(), "uniform").pvalue > 0.01
    # Standard deviations: log s ~ N(0, 0.3^2).
    log_s = np.concatenate(
        [
            0.5 * np.log(np.diagonal(m.covariances, axis1=1, axis2=2))
            for m in mixtures
        ]
    ).ravel()
    assert stats.kstest(log_s, stats.norm(0, 0.3).cdf).pvalue > 0.01
    # Uniform Dirichlet: with two components the first weight is U(0, 1).
    two = [m.weights[0] for m in mixtures if m.num_components == 2]
    two += [
        random_gaussian_mixture(2, rng, num_components=2).weights[0]
        for _ in range(300)
    ]
    assert stats.kstest(two, "uniform").pvalue > 0.01


# --- KL pairs ------------------------------------------------------------


def test_kl_pairs_format_and_set_sizes():
    (x, y, x_mask, y_mask), labels = kl_divergence_pairs(
        40, dim=3, seed=0, pad_to=160
    )
    assert x.shape == y.shape == (40, 160, 3)
    assert x.dtype == y.dtype == np.float32
    assert x_mask.shape == y_mask.shape == (40, 160) and x_mask.dtype == bool
    assert labels.shape == (40, 1) and labels.dtype == np.float32
    for sets, mask in ((x, x_mask), (y, y_mask)):
        sizes = mask.sum(axis=1)
        assert sizes.min() >= 100 and sizes.max() <= 150
        # Masks are prefixes; padding is zero.
        np.testing.assert_array_equal(mask, np.arange(160) < sizes[:, None])
        assert np.all(sets[~mask] == 0)
    # Each set draws its own size.
    assert np.any(x_mask.sum(axis=1) != y_mask.sum(axis=1))


def test_kl_pairs_deterministic():
    a = kl_divergence_pairs(5, dim=2, seed=3)
    b = kl_divergence_pairs(5, dim=2, seed=3)
    c = kl_divergence_pairs(5, dim=2, seed=4)
    for u, v in zip(a[0], b[0], strict=True):
        np.testing.assert_array_equal(u, v)
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0][0], c[0][0])


def test_kl_labels_and_whitening():
    num, dim = 6, 3
    (xw, yw, x_mask, y_mask), labels, params = kl_divergence_pairs(
        num, dim=dim, seed=11, return_params=True
    )
    (x, y, x_mask_raw, _), labels_raw = kl_divergence_pairs(
        num, dim=dim, seed=11, whiten=False
    )
    np.testing.assert_array_equal(x_mask, x_mask_raw)
    # The label does not depend on whitening.
    np.testing.assert_array_equal(labels, labels_raw)
    means, matrices = params["whitening"]
    for i in range(num):
        xi = x[i][x_mask[i]].astype(np.float64)
        yi = y[i][y_mask[i]].astype(np.float64)
        p, q = params["p"][i], params["q"][i]
        # Label = Monte-Carlo KL over the points of X (float32 rounding of
        # X changes the label by ~1e-6).
        expected = np.mean(_scipy_logpdf(p, xi) - _scipy_logpdf(q, xi))
        np.testing.assert_allclose(labels[i, 0], expected, rtol=1e-4, atol=1e-5)
        # Eq. 15 with the union's mean and covariance.
        union = np.concatenate([xi, yi])
        eigval, eigvec = np.linalg.eigh(np.cov(union, rowvar=False))
        inv_sqrt = eigvec @ np.diag(eigval**-0.5) @ eigvec.T
        np.testing.assert_allclose(
            xw[i][x_mask[i]], (xi - union.mean(0)) @ inv_sqrt, atol=1e-5
        )
        white = np.concatenate([xw[i][x_mask[i]], yw[i][y_mask[i]]])
        np.testing.assert_allclose(white.mean(0), 0, atol=1e-6)
        np.testing.assert_allclose(
            np.cov(white, rowvar=False), np.eye(dim), atol=1e-5
        )
        # KL invariance: the transformed mixtures give the same label on
        # the whitened points.
        shift = -matrices[i] @ means[i]
        p_white = p.affine(matrices[i], shift)
        q_white = q.affine(matrices[i], shift)
        points = xi @ matrices[i].T + shift
        white_label = np.mean(p_white.logpdf(points) - q_white.logpdf(points))
        np.testing.assert_allclose(white_label, expected, rtol=1e-8, atol=1e-10)
        assert np.all(xw[i][~x_mask[i]] == 0)


def test_kl_labels_with_fresh_monte_carlo_samples():
    # Single Gaussians: compare with the closed form.
    (x, *_), labels, params = kl_divergence_pairs(
        4,
        dim=2,
        seed=5,
        num_components=1,
        mc_samples=40_000,
        return_params=True,
    )
    (x_default, *_), _ = kl_divergence_pairs(4, dim=2, seed=5, num_components=1)
    np.testing.assert_array_equal(x, x_default)  # same sets
    rng = np.random.default_rng(0)
    for i in range(4):
        p, q = params["p"][i], params["q"][i]
        true = _gaussian_kl(
            p.means[0], p.covariances[0], q.means[0], q.covariances[0]
        )
        draws = p.sample(40_000, rng)
        stderr = np.std(p.logpdf(draws) - q.logpdf(draws)) / np.sqrt(40_000)
        assert abs(labels[i, 0] - true) < 5 * stderr + 1e-6


def test_whiten_sets_ignores_padding():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(2, 12, 2))
    y = rng.normal(size=(2, 9, 2))
    x_mask = np.arange(12) < np.array([[12], [7]])
    y_mask = np.arange(9) < np.array([[5], [9]])
    clean = whiten_sets(
        x * x_mask[..., None], y * y_mask[..., None], x_mask, y_mask
    )
    junk = whiten_sets(
        np.where(x_mask[..., None], x, 99.0),
        np.where(y_mask[..., None], y, -50.0),
        x_mask,
        y_mask,
    )
    for a, b in zip(clean, junk, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-12)
    with pytest.raises(ValueError, match="degenerate"):
        whiten_sets(np.ones((1, 5, 2)), np.ones((1, 5, 2)))
    with pytest.raises(ValueError, match="at least d \\+ 1"):
        whiten_sets(rng.normal(size=(1, 1, 3)), rng.normal(size=(1, 2, 3)))


# --- Mutual information ---------------------------------------------------


def test_mi_sets_split_mode():
    (x, y, x_mask, y_mask), labels, rho = mutual_information_sets(
        300, dim=2, seed=0, return_params=True
    )
    assert x.shape == y.shape == (300, 150, 2) and x.dtype == np.float32
    np.testing.assert_array_equal(x_mask, y_mask)
    sizes = x_mask.sum(axis=1)
    assert sizes.min() >= 100 and sizes.max() <= 150
    np.testing.assert_allclose(
        labels[:, 0], -np.log(1 - rho**2), rtol=1e-6
    )  # -(d/2) log(1 - rho^2), d = 2
    assert np.abs(rho).max() <= 0.999
    assert stats.kstest(rho, stats.uniform(-0.999, 1.998).cdf).pvalue > 0.01
    # Rows are paired: the sample correlation of row-aligned coordinates
    # tracks rho; marginals are standard normal.
    for i in range(0, 300, 50):
        xi, yi = x[i][x_mask[i]], y[i][x_mask[i]]
        for j in range(2):
            r = np.corrcoef(xi[:, j], yi[:, j])[0, 1]
            assert (
                abs(r - rho[i])
                < 5 * (1 - rho[i] ** 2) / np.sqrt(len(xi)) + 0.02
            )
    real = x[x_mask]
    assert abs(real.mean()) < 0.02 and abs(real.std() - 1) < 0.02


def test_mi_sets_fixed_rho_and_cross_correlation():
    (x, y, mask, _), labels = mutual_information_sets(
        200, dim=3, seed=1, rho=0.6, set_size=(120, 120)
    )
    np.testing.assert_allclose(labels, -1.5 * np.log(0.64), rtol=1e-6)
    xs, ys = x[mask].astype(float), y[mask].astype(float)
    # Componentwise correlation only. Each entry averages 24,000 products
    # with standard deviation <= sqrt(1 + 0.6^2): 5 sigma = 0.038.
    cross = (xs.T @ ys) / len(xs)
    np.testing.assert_allclose(cross, 0.6 * np.eye(3), atol=0.04)
    rhos = np.linspace(-0.9, 0.9, 7)
    *_, got = mutual_information_sets(7, 1, rho=rhos, return_params=True)
    np.testing.assert_array_equal(got, rhos)


def test_mi_sets_joint_vs_product():
    (joint, product, j_mask, p_mask), labels, rho = mutual_information_sets(
        5, dim=2, seed=2, mode="joint_vs_product", return_params=True
    )
    (x, y, _, _), labels_split = mutual_information_sets(5, dim=2, seed=2)
    assert joint.shape[-1] == product.shape[-1] == 4
    np.testing.assert_array_equal(labels, labels_split)
    for i in range(5):
        real = j_mask[i]
        # Joint set = [x, y] of the split mode; product set keeps x and
        # permutes the y rows.
        np.testing.assert_array_equal(joint[i][real][:, :2], x[i][real])
        np.testing.assert_array_equal(joint[i][real][:, 2:], y[i][real])
        np.testing.assert_array_equal(product[i][real][:, :2], x[i][real])
        np.testing.assert_array_equal(
            np.sort(product[i][real][:, 2:], axis=0),
            np.sort(y[i][real], axis=0),
        )
        assert not np.array_equal(product[i][real][:, 2:], y[i][real])


def test_gaussian_mutual_information():
    np.testing.assert_allclose(
        gaussian_mutual_information([0.0, 0.6, -0.6], 4),
        [0.0, -2 * np.log(0.64), -2 * np.log(0.64)],
    )
    with pytest.raises(ValueError, match="rho"):
        gaussian_mutual_information(1.0, 2)


# --- Two-sample pairs -----------------------------------------------------


def test_two_sample_pairs():
    (x, y, x_mask, y_mask), labels, params = two_sample_pairs(
        400, seed=0, return_params=True
    )
    assert x.shape == (400, 30, 8) and labels.shape == (400, 1)
    for mask in (x_mask, y_mask):
        sizes = mask.sum(axis=1)
        assert sizes.min() == 10 and sizes.max() == 30
    same = labels[:, 0] == 1
    assert set(np.unique(labels).tolist()) == {0.0, 1.0}
    # Binomial(400, 1/2): a 4-sigma band.
    assert abs(same.mean() - 0.5) < 0.1
    for i in range(400):
        assert (params["q"][i] is params["p"][i]) == same[i]
    (*_, all_diff) = two_sample_pairs(20, seed=1, same_probability=0.0)
    (*_, all_same) = two_sample_pairs(20, seed=1, same_probability=1.0)
    assert np.all(all_diff == 0) and np.all(all_same == 1)
    (xw, yw, xm, ym), _ = two_sample_pairs(3, dim=2, seed=2, whiten=True)
    white = np.concatenate([xw[0][xm[0]], yw[0][ym[0]]])
    np.testing.assert_allclose(
        np.cov(white, rowvar=False), np.eye(2), atol=1e-5
    )


# --- Validation -----------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(num=0), "`num` must be a positive integer"),
        (dict(dim=0), "`dim` must be a positive integer"),
        (dict(seed=-1), "`seed` must be a non-negative integer"),
        (dict(set_size=(10, 5)), "`set_size` must be a pair"),
        (dict(set_size=(0, 5)), "`set_size` must be a pair"),
        (dict(mc_samples=0), "`mc_samples` must be a positive integer"),
        (dict(eta=0.0), "`eta` must be a positive number"),
        (dict(num_components=(0, 3)), "`num_components` must be a pair"),
        (dict(mean_range=(1.0, 0.0)), "`mean_range` must be a pair"),
        (dict(pad_to=100), "`pad_to` must be None or an integer"),
        (dict(dim=8, set_size=(3, 5)), "Whitening needs at least d \\+ 1"),
    ],
)
def test_kl_pairs_validation(kwargs, match):
    args = dict(num=2, dim=2)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        kl_divergence_pairs(**args)


def test_other_validation():
    with pytest.raises(ValueError, match="`mode` must be one of"):
        mutual_information_sets(2, 2, mode="joint")
    with pytest.raises(ValueError, match="`max_abs_rho` must be"):
        mutual_information_sets(2, 2, max_abs_rho=1.0)
    with pytest.raises(ValueError, match="`rho` must be"):
        mutual_information_sets(2, 2, rho=[0.5, 1.0])
    with pytest.raises(ValueError, match="`rho` must be"):
        mutual_information_sets(2, 2, rho=[0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="`same_probability` must be"):
        two_sample_pairs(2, same_probability=1.5)
