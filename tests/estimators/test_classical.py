"""Tests of the classical KL and mutual-information estimators.

Accuracy is checked against closed forms for Gaussians, with tolerances
taken from the measured spread of the estimators (30 seeds, see the
comments), and the exact formulas against brute-force numpy references
built on `scipy.spatial.distance.cdist` (no KD-tree).
"""

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from scipy.special import digamma
from sklearn.feature_selection import mutual_info_regression

from keras_msets.estimators.classical import knn_kl_divergence
from keras_msets.estimators.classical import knn_kl_divergence_sets
from keras_msets.estimators.classical import ksg_mutual_information
from keras_msets.estimators.classical import ksg_mutual_information_sets
from keras_msets.stats.classical import _tie_noise


@pytest.fixture(autouse=True)
def _seed_everything():
    """Replaces the suite-wide fixture: these tests are numpy-only and seed
    every generator explicitly."""
    yield


def _gaussian_kl(mean_p, cov_p, mean_q, cov_q):
    """Closed-form KL(N(mean_p, cov_p) || N(mean_q, cov_q))."""
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


def _reference_kl(x, y, k):
    """Wang-Kulkarni-Verdú with adaptive orders at ties, from cdist."""
    n, d = x.shape
    m = len(y)
    within = np.sort(cdist(x, x), axis=1)[:, 1:]  # drop one zero (self)
    across = np.sort(cdist(x, y), axis=1)
    total = 0.0
    for i in range(n):
        k_i = max(k, int(np.sum(within[i] == 0)) + 1)
        l_i = max(k, int(np.sum(across[i] == 0)) + 1)
        rho = within[i, k_i - 1]
        nu = across[i, l_i - 1]
        total += d * np.log(nu / rho) + digamma(k_i) - digamma(l_i)
    return total / n + np.log(m / (n - 1))


def _reference_ksg(x, y, k):
    """KSG estimator 1 from dense max-norm distance matrices."""
    num = len(x)
    dx = cdist(x, x, "chebyshev")
    dy = cdist(y, y, "chebyshev")
    dz = np.maximum(dx, dy)
    np.fill_diagonal(dz, np.inf)
    eps = np.sort(dz, axis=1)[:, k - 1]
    np.fill_diagonal(dx, np.inf)
    np.fill_diagonal(dy, np.inf)
    n_x = np.sum(dx < eps[:, None], axis=1)
    n_y = np.sum(dy < eps[:, None], axis=1)
    mean_psi = np.mean(digamma(n_x + 1) + digamma(n_y + 1))
    return digamma(k) + digamma(num) - mean_psi


def _correlated(rng, n, d, rho):
    x = rng.standard_normal((n, d))
    y = rho * x + np.sqrt(1 - rho**2) * rng.standard_normal((n, d))
    return x, y


# --- KL divergence -------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 4])
def test_knn_kl_matches_brute_force_reference(k):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 3))
    y = rng.normal(loc=0.5, scale=1.3, size=(45, 3))
    np.testing.assert_allclose(
        knn_kl_divergence(x, y, k=k), _reference_kl(x, y, k), rtol=1e-12
    )


def test_knn_kl_gaussians_d2():
    # Measured over 30 seeds (n = m = 4000): error -0.008 +- 0.03, largest
    # 0.07; true value 0.20.
    rng = np.random.default_rng(123)
    a = rng.normal(size=(2, 2)) / np.sqrt(2)
    b = rng.normal(size=(2, 2)) / np.sqrt(2)
    cov_p = a @ a.T + 0.5 * np.eye(2)
    cov_q = b @ b.T + 0.5 * np.eye(2)
    mean_q = 0.5 * rng.normal(size=2)
    true = _gaussian_kl(np.zeros(2), cov_p, mean_q, cov_q)
    x = rng.multivariate_normal(np.zeros(2), cov_p, size=4000)
    y = rng.multivariate_normal(mean_q, cov_q, size=4000)
    assert abs(knn_kl_divergence(x, y) - true) < 0.1


def test_knn_kl_gaussians_d8():
    # N(0, I) vs N(0.35 * 1, I) in 8 dimensions, true KL 0.49. Measured
    # over 30 seeds (n = m = 4000): error -0.09 +- 0.05, largest 0.17.
    # (With strongly different covariances the 1-NN estimator is far more
    # biased at d = 8: -1.0 for a true 1.44.)
    rng = np.random.default_rng(7)
    mean_q = np.full(8, 0.35)
    true = _gaussian_kl(np.zeros(8), np.eye(8), mean_q, np.eye(8))
    x = rng.standard_normal((4000, 8))
    y = rng.standard_normal((4000, 8)) + mean_q
    assert abs(knn_kl_divergence(x, y) - true) < 0.25


def test_knn_kl_same_distribution_near_zero():
    # Measured over 30 seeds: 0.001 +- 0.034, largest 0.07.
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4000, 2))
    y = rng.standard_normal((4000, 2))
    assert abs(knn_kl_divergence(x, y)) < 0.1


def test_knn_kl_duplicates_are_finite_and_adaptive():
    rng = np.random.default_rng(1)
    base = rng.normal(size=(80, 2))
    # Rows repeated inside x, and some x rows present in y as well.
    x = np.concatenate([base, base[:15], base[:5]])
    y = np.concatenate([rng.normal(size=(70, 2)), base[10:30], base[10:12]])
    for k in (1, 3):
        value = knn_kl_divergence(x, y, k=k)
        assert np.isfinite(value)
        np.testing.assert_allclose(value, _reference_kl(x, y, k), rtol=1e-12)


def test_knn_kl_degenerate_inputs_raise():
    x = np.ones((10, 2))
    with pytest.raises(ValueError, match="all 10 rows of `x` are equal"):
        knn_kl_divergence(x, np.zeros((5, 2)))
    x = np.arange(20.0).reshape(10, 2)
    with pytest.raises(ValueError, match="every row of `y` equals"):
        knn_kl_divergence(x, np.tile(x[:1], (4, 1)))


def test_knn_kl_sets_matches_single_calls_and_ignores_padding():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3, 40, 2))
    y = rng.normal(size=(3, 30, 2))
    x_mask = np.arange(40)[None, :] < np.array([[40], [25], [12]])
    y_mask = np.arange(30)[None, :] < np.array([[30], [10], [20]])
    got = knn_kl_divergence_sets(x, y, x_mask, y_mask)
    junk_x = np.where(x_mask[..., None], x, 1e6)
    junk_y = np.where(y_mask[..., None], y, -1e6)
    np.testing.assert_array_equal(
        got, knn_kl_divergence_sets(junk_x, junk_y, x_mask, y_mask)
    )
    for b in range(3):
        assert got[b] == knn_kl_divergence(x[b][x_mask[b]], y[b][y_mask[b]])


# --- Mutual information ---------------------------------------------------


@pytest.mark.parametrize("k", [1, 3])
def test_ksg_matches_brute_force_reference(k):
    rng = np.random.default_rng(4)
    x, y = _correlated(rng, 150, 2, 0.5)
    y = np.concatenate([y, rng.normal(size=(150, 1))], axis=1)  # d_y = 3
    np.testing.assert_allclose(
        ksg_mutual_information(x, y, k=k),
        _reference_ksg(x, y, k),
        rtol=1e-12,
    )


def test_ksg_breaks_exact_ties_with_tiny_noise():
    rng = np.random.default_rng(5)
    # Discrete values: many points coincide (eps = 0 on the raw values).
    x = rng.integers(0, 3, size=(2000, 1)).astype(float)
    y = x + rng.integers(0, 2, size=(2000, 1))
    truth = np.log(6) / 3 + 2 * np.log(3) / 3 - np.log(2)  # 0.637
    value = ksg_mutual_information(x, y, k=3)
    assert value == ksg_mutual_information(x, y, k=3)  # seeded noise
    assert abs(value - truth) < 0.05
    # The formula on the noisy samples (rescaled as the estimator does);
    # on the tied values themselves it is far too high.
    noisy = [_tie_noise(a / 3.0, seed) for a, seed in ((x, 0), (y, 1))]
    np.testing.assert_allclose(value, _reference_ksg(*noisy, 3), rtol=1e-12)
    assert _reference_ksg(x, y, 3) > 5
    # Three sparse binary coordinates, each bit flipped with probability
    # 0.1 (the docstring's example).
    bits = (rng.random((2000, 3)) < 0.1).astype(float)
    flipped = np.where(rng.random((2000, 3)) < 0.1, 1 - bits, bits)
    flip = 0.1 * 0.9 + 0.9 * 0.1
    truth = 3 * (_entropy(flip) - _entropy(0.1))  # 0.439
    assert abs(ksg_mutual_information(bits, flipped) - truth) < 0.1
    assert _reference_ksg(bits, flipped, 3) > 5


def _entropy(p):
    return -(p * np.log(p) + (1 - p) * np.log(1 - p))


@pytest.mark.parametrize(
    # Measured over 30 seeds (N = 2000, k = 3): d=1 error 0.001 +- 0.019,
    # largest 0.06; d=4 error -0.14 +- 0.03, largest 0.19 (true 0.89).
    "dim, tolerance",
    [(1, 0.08), (4, 0.25)],
)
def test_ksg_correlated_gaussians(dim, tolerance):
    rho = 0.6
    true = -0.5 * dim * np.log(1 - rho**2)
    x, y = _correlated(np.random.default_rng(6), 2000, dim, rho)
    assert abs(ksg_mutual_information(x, y) - true) < tolerance


@pytest.mark.parametrize("dim", [1, 4])
def test_ksg_independent_near_zero(dim):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2000, dim))
    y = rng.standard_normal((2000, dim))
    assert abs(ksg_mutual_information(x, y)) < 0.05


def test_ksg_agrees_with_scikit_learn():
    # mutual_info_regression (KSG, k = n_neighbors) scales both variables
    # to unit variance and adds 1e-10-scale noise; on standardised data
    # the two agree to rounding.
    rng = np.random.default_rng(9)
    x, y = _correlated(rng, 1500, 1, 0.6)
    x, y = x / x.std(), y / y.std()
    expected = mutual_info_regression(x, y[:, 0], n_neighbors=3, random_state=0)
    np.testing.assert_allclose(
        ksg_mutual_information(x, y, k=3), expected[0], atol=1e-9
    )


def test_ksg_sets_matches_single_calls():
    rng = np.random.default_rng(10)
    x = rng.normal(size=(2, 50, 2))
    y = 0.5 * x + rng.normal(size=(2, 50, 2))
    mask = np.arange(50)[None, :] < np.array([[50], [33]])
    got = ksg_mutual_information_sets(x, y, mask)
    for b in range(2):
        assert got[b] == ksg_mutual_information(x[b][mask[b]], y[b][mask[b]])


# --- Validation -----------------------------------------------------------


@pytest.mark.parametrize(
    "fn", [knn_kl_divergence, ksg_mutual_information], ids=["kl", "ksg"]
)
def test_input_validation(fn):
    good = np.random.default_rng(0).normal(size=(10, 2))
    with pytest.raises(ValueError, match=r"`x` must be a 2-D array"):
        fn(np.zeros(10), good)
    with pytest.raises(ValueError, match=r"`y` must be a 2-D array"):
        fn(good, np.zeros((2, 5, 2)))
    with pytest.raises(ValueError, match=r"`y` must contain only finite"):
        fn(good, np.where(good > 1, np.nan, good))
    with pytest.raises(ValueError, match=r"`x` must be a 2-D array of real"):
        fn([["a", "b"]], good)
    for k in (0, 1.5, True, -1):
        with pytest.raises(ValueError, match=r"`k` must be a positive"):
            fn(good, good, k=k)
    with pytest.raises(ValueError, match=r"at least k \+ 1 = 11 rows"):
        fn(good, good, k=10)


def test_shape_mismatches():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="same dimension"):
        knn_kl_divergence(rng.normal(size=(10, 2)), rng.normal(size=(10, 3)))
    with pytest.raises(ValueError, match="`y` must have at least k = 2"):
        knn_kl_divergence(rng.normal(size=(10, 2)), rng.normal(size=(1, 2)), 2)
    with pytest.raises(ValueError, match="same number of rows"):
        ksg_mutual_information(
            rng.normal(size=(10, 2)), rng.normal(size=(9, 2))
        )
    # d_x != d_y is fine for mutual information.
    assert np.isfinite(
        ksg_mutual_information(
            rng.normal(size=(20, 1)), rng.normal(size=(20, 3))
        )
    )
    with pytest.raises(ValueError, match="`x_mask` must have shape"):
        knn_kl_divergence_sets(
            np.zeros((2, 5, 1)), np.zeros((2, 5, 1)), np.ones((2, 4), bool)
        )
