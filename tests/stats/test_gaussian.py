"""`keras_msets.stats.gaussian`: closed forms and Gaussian plug-ins."""

import numpy as np
import pytest

from keras_msets.stats import gaussian


def _kl_1d(m0, s0, m1, s1):
    """KL(N(m0, s0^2) || N(m1, s1^2)), the textbook scalar formula."""
    return np.log(s1 / s0) + (s0**2 + (m0 - m1) ** 2) / (2 * s1**2) - 0.5


@pytest.mark.parametrize(
    "m0, s0, m1, s1", [(0, 1, 1, 1), (0, 1, 0, 2), (0.5, 0.3, -1, 1.7)]
)
def test_kl_matches_the_scalar_formula(m0, s0, m1, s1):
    got = gaussian.gaussian_kl_divergence([m0], [[s0**2]], [m1], [[s1**2]])
    assert got == pytest.approx(_kl_1d(m0, s0, m1, s1), rel=1e-12)


def test_kl_of_independent_coordinates_adds_up():
    means = [(0.0, 1.0, 0.3, 2.0), (1.0, 0.5, -1.0, 1.0)]
    want = sum(_kl_1d(*row) for row in means)
    got = gaussian.gaussian_kl_divergence(
        [0.0, 1.0],
        np.diag([1.0, 0.25]),
        [0.3, -1.0],
        np.diag([4.0, 1.0]),
    )
    assert got == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("rho", [0.0, 0.5, -0.9])
def test_mi_of_a_correlated_pair(rho):
    cov = np.array([[1.0, rho], [rho, 1.0]])
    got = gaussian.gaussian_mutual_information(cov, 1)
    assert got == pytest.approx(-0.5 * np.log(1 - rho**2), abs=1e-12)


def test_mi_is_unchanged_by_separate_linear_maps():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(5, 5))
    cov = a @ a.T + np.eye(5)
    mix = np.zeros((5, 5))
    mix[:2, :2] = rng.normal(size=(2, 2)) + 2 * np.eye(2)
    mix[2:, 2:] = rng.normal(size=(3, 3)) + 2 * np.eye(3)
    mapped = mix @ cov @ mix.T
    assert gaussian.gaussian_mutual_information(mapped, 2) == pytest.approx(
        gaussian.gaussian_mutual_information(cov, 2)
    )


def test_plugins_converge_on_gaussian_data():
    rng = np.random.default_rng(1)
    n, rho = 20000, 0.6
    x = rng.normal(size=(n, 2))
    y = rho * x + np.sqrt(1 - rho**2) * rng.normal(size=(n, 2))
    mi = gaussian.gaussian_plugin_mutual_information(x, y)
    assert mi == pytest.approx(-np.log(1 - rho**2), abs=0.02)
    z = rng.normal(size=(n, 2)) * 1.5 + 0.5
    truth = 2 * _kl_1d(0.0, 1.0, 0.5, 1.5)
    kl = gaussian.gaussian_plugin_kl_divergence(x, z)
    assert kl == pytest.approx(truth, abs=0.02)


def test_plugins_are_affine_invariant():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(60, 3))
    y = rng.normal(size=(70, 3)) + 0.4
    a = rng.normal(size=(3, 3)) + 3 * np.eye(3)
    b = rng.normal(size=3)
    assert gaussian.gaussian_plugin_kl_divergence(
        x @ a.T + b, y @ a.T + b
    ) == pytest.approx(gaussian.gaussian_plugin_kl_divergence(x, y))
    w = 0.5 * x + rng.normal(size=(60, 3))
    assert gaussian.gaussian_plugin_mutual_information(
        x @ a.T + b, -2.0 * w
    ) == pytest.approx(gaussian.gaussian_plugin_mutual_information(x, w))


def test_plugin_mi_accepts_different_dimensions():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(500, 2))
    y = np.concatenate([x, rng.normal(size=(500, 3))], axis=1)
    y[:, :2] += rng.normal(size=(500, 2))
    assert gaussian.gaussian_plugin_mutual_information(x, y) > 0.3


@pytest.mark.parametrize(
    "x, y, match",
    [
        (np.zeros((10, 2)), np.zeros((10, 3)), "same number of columns"),
        (np.ones((3, 2)), np.ones((10, 2)), r"at least d \+ 2 = 4 rows"),
        (np.full((10, 2), np.nan), np.ones((10, 2)), "finite"),
        (np.ones(10), np.ones((10, 1)), r"x.shape=\(10,\)"),
    ],
)
def test_plugin_kl_names_bad_input(x, y, match):
    with pytest.raises(ValueError, match=match):
        gaussian.gaussian_plugin_kl_divergence(x, y)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="dim_x"):
        gaussian.gaussian_mutual_information(np.eye(3), 3)
    with pytest.raises(ValueError, match="cov_q.*positive definite"):
        gaussian.gaussian_kl_divergence([0.0], [[1.0]], [0.0], [[-1.0]])
    with pytest.raises(ValueError, match="paired"):
        gaussian.gaussian_plugin_mutual_information(
            np.ones((10, 1)), np.ones((11, 1))
        )
    with pytest.raises(TypeError, match="`x` must hold real numbers"):
        gaussian.gaussian_plugin_kl_divergence(
            np.ones((10, 1)) * 1j, np.ones((10, 1))
        )
