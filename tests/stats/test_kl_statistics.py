"""`keras_msets.stats.kl_statistics`: the statistics the KL model reads."""

import numpy as np
import pytest

from keras_msets.stats import kl_statistics as ks
from keras_msets.stats import nearest_neighbours as nn
from keras_msets.stats.classical import knn_kl_divergence
from keras_msets.stats.gaussian import gaussian_kl_divergence


def _pair(n=300, d=3, shift=1.0, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.normal(size=(n, d)) + shift / d**0.5


def test_shape_and_names():
    x, y = _pair()
    values = ks.kl_statistics(x, y[:200])
    assert values.shape == (len(ks.STATISTICS),)
    assert np.all(np.isfinite(values))
    named = dict(zip(ks.STATISTICS, values, strict=True))
    assert named["dim"] == 3
    assert named["log_n"] == pytest.approx(np.log(300))
    assert named["log_m"] == pytest.approx(np.log(200))
    wide = ks.kl_statistics(x, y[:200], standardized_knn=True)
    np.testing.assert_array_equal(wide[: len(values)], values)
    sx, sy = ks.standardized(x, y[:200])
    np.testing.assert_allclose(
        wide[len(values) :], ks.knn_kl_estimates(sx, sy), rtol=1e-12
    )


@pytest.mark.parametrize("n, d", [(200, 2), (nn.PARALLEL_POINTS, 6)])
def test_knn_estimates_match_the_classical_estimator(n, d):
    # The second case runs the queries on two threads.
    x, y = _pair(n=n, d=d, seed=1)
    sx, sy = ks.standardized(x, y)
    want = [knn_kl_divergence(sx, sy, k=k) for k in ks.NEIGHBOURS]
    np.testing.assert_allclose(ks.knn_kl_estimates(sx, sy), want, rtol=1e-10)


def test_copula_statistics_ignore_one_monotone_map_of_both_sets():
    x, y = _pair(seed=2)

    def warp(a):
        return np.sinh(1.5 * a) + 2.0 * a**3

    before = dict(zip(ks.STATISTICS, ks.kl_statistics(x, y), strict=True))
    after = dict(
        zip(ks.STATISTICS, ks.kl_statistics(warp(x), warp(y)), strict=True)
    )
    for name in ks.STATISTICS:
        if name.startswith(("knn", "plugin_copula", "plugin_corrected")):
            assert after[name] == pytest.approx(before[name], abs=1e-9)
    # The raw-coordinate shape statistics see the heavier tails.
    assert after["max_log_kurtosis"] > before["max_log_kurtosis"] + 1.0


def test_plugin_is_close_to_the_truth_for_gaussians():
    x, y = _pair(n=4000, d=2, shift=1.0, seed=3)
    named = dict(zip(ks.STATISTICS, ks.kl_statistics(x, y), strict=True))
    # Exact KL: 0.5 |mean shift|^2 = 0.5; sampling error ~ 0.02 here.
    assert named["plugin_standard"] == pytest.approx(0.5, abs=0.06)


def test_large_sets_are_cut_into_blocks():
    rng = np.random.default_rng(4)
    n = 2 * ks.block_size(12) + 10
    x, y = rng.normal(size=(n, 12)), rng.normal(size=(n, 12))
    named = dict(zip(ks.STATISTICS, ks.kl_statistics(x, y), strict=True))
    assert named["log_block"] == pytest.approx(np.log(n / 3))
    assert named["log_n"] == pytest.approx(np.log(n))


def test_small_sets_and_more_dimensions_than_points():
    rng = np.random.default_rng(5)
    values = ks.kl_statistics(
        rng.normal(size=(10, 25)), rng.normal(size=(12, 25))
    )
    assert np.all(np.isfinite(values))


def test_ties_give_finite_statistics():
    x = np.repeat(np.arange(5.0), 4)[:, None]
    values = ks.kl_statistics(x, x[::-1].copy())
    assert np.all(np.isfinite(values))


@pytest.mark.parametrize(
    "x, y, match",
    [
        (np.zeros((5, 2)), np.zeros((20, 2)), "`x` must have at least 10"),
        (np.zeros((20, 2)), np.zeros((20, 3)), "same number of columns"),
        (np.zeros(20), np.zeros((20, 1)), "`x` must be a 2-D array"),
        (np.full((20, 1), np.nan), np.zeros((20, 1)), "`x` must contain only"),
    ],
)
def test_bad_input_names_the_argument(x, y, match):
    with pytest.raises(ValueError, match=match):
        ks.kl_statistics(x, y)


def test_model_inputs_take_a_signed_log_of_the_estimates():
    x, y = _pair(seed=6)
    values = ks.kl_statistics(x, y)
    inputs = ks.pair_statistics(x, y)
    named = dict(zip(ks.FEATURES, inputs, strict=True))
    raw = dict(zip(ks.STATISTICS, values, strict=True))
    assert named["knn_copula_k1"] == pytest.approx(
        np.sign(raw["knn_copula_k1"]) * np.log1p(abs(raw["knn_copula_k1"]))
    )
    assert named["log_n"] == raw["log_n"]
    assert named[ks.BASE_FEATURE] == pytest.approx(raw["plugin_corrected"])
    excess = raw["knn_copula_k3"] - raw["knn_reference_k3"]
    assert named["knn_excess_k3"] == pytest.approx(
        np.sign(excess) * np.log1p(abs(excess))
    )


def _reference_corrected_kl(x, y):
    """Numpy reference: each term of the Gaussian KL divergence made
    unbiased with explicit inverses and the Wishart moments
    `E[log det(W / nu)] = sum_j psi((nu - j) / 2) + d log(2 / nu)`, `j =
    0..d-1`, and `E[(W / nu)^-1] = nu / (nu - d - 1) Sigma^-1`."""
    from scipy.special import digamma

    n, d = x.shape
    m = y.shape[0]
    nu_x, nu_y = n - 1, m - 1
    s_x = (x - x.mean(0)).T @ (x - x.mean(0)) / nu_x
    s_y = (y - y.mean(0)).T @ (y - y.mean(0)) / nu_y
    inv_y = np.linalg.inv(s_y) * (nu_y - d - 1) / nu_y
    j = np.arange(d)
    bias_x = digamma((nu_x - j) / 2).sum() + d * np.log(2 / nu_x)
    bias_y = digamma((nu_y - j) / 2).sum() + d * np.log(2 / nu_y)
    trace = np.sum(inv_y * s_x.T)
    delta = y.mean(0) - x.mean(0)
    mean_term = delta @ inv_y @ delta - trace / n - d / m
    logdet_x = np.log(np.linalg.det(s_x)) - bias_x
    logdet_y = np.log(np.linalg.det(s_y)) - bias_y
    return 0.5 * (trace + mean_term - d + logdet_y - logdet_x)


def test_corrected_plugin_matches_a_numpy_reference():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(30, 4)) @ rng.normal(size=(4, 4))
    y = rng.normal(size=(25, 4)) + 0.5
    assert ks.corrected_gaussian_kl(x, y) == pytest.approx(
        _reference_corrected_kl(x, y), rel=1e-10
    )


def test_corrected_plugin_is_unbiased_for_gaussians():
    # d = 3 with 15 and 20 points: the plain plug-in's bias is about 1.3
    # nats; the corrected one's mean over 400 pairs is within 4 standard
    # errors of the truth.
    rng = np.random.default_rng(8)
    mean_q = np.array([0.5, -0.3, 0.2])
    chol_q = rng.normal(size=(3, 3)) * 0.3 + np.eye(3)
    cov_q = chol_q @ chol_q.T
    truth = gaussian_kl_divergence(np.zeros(3), np.eye(3), mean_q, cov_q)
    values = []
    for _ in range(400):
        x = rng.normal(size=(15, 3))
        y = rng.normal(size=(20, 3)) @ chol_q.T + mean_q
        values.append(ks.corrected_gaussian_kl(x, y))
    error = abs(np.mean(values) - truth)
    assert error < 4 * np.std(values) / np.sqrt(len(values))


def test_corrected_plugin_needs_enough_points():
    rng = np.random.default_rng(9)
    x, y = rng.normal(size=(20, 5)), rng.normal(size=(6, 5))
    assert np.isnan(ks.corrected_gaussian_kl(x, y))
    assert np.isnan(ks.corrected_gaussian_kl(y, x))
    # The statistics then hold the shrunk plug-in in its place.
    x, y = rng.normal(size=(10, 12)), rng.normal(size=(12, 12))
    named = dict(zip(ks.STATISTICS, ks.kl_statistics(x, y), strict=True))
    assert named["plugin_corrected"] == named["plugin_copula"]


@pytest.mark.parametrize(
    "n, m, d, k",
    [
        (nn.PARALLEL_POINTS + 40, 600, 16, 10),  # two threads, two blocks
        (120, 90, 12, 11),
        (40, 12, 9, 11),  # k + 4 candidates cover all of `points`
        (150, 203, 6, 20),  # groups of 8 columns, the last ones padded
    ],
)
def test_distance_matrix_matches_the_tree(n, m, d, k):
    rng = np.random.default_rng(n)
    x = rng.normal(size=(n, d))
    # Every row of `y` twice: with k + 4 odd (k = 11) the last candidate
    # has an equal twin (the argpartition fallback).
    y = np.repeat(rng.normal(size=(m // 2, d)), 2, axis=0)
    for points in (x, y):
        brute = nn.nearest_distances(points, x, k, brute=True)
        tree = nn.nearest_distances(points, x, k, brute=False)
        assert brute.shape == (n, k)
        assert np.all(brute[:, 1:] >= brute[:, :-1])
        np.testing.assert_allclose(brute, tree, rtol=1e-12, atol=1e-12)


def test_distance_matrix_far_from_the_origin_matches_the_tree():
    # Float32 scores |p|^2 - 2 q.p of points near 1e4 would lose the
    # neighbours' distances (about 1) without centring.
    rng = np.random.default_rng(5)
    x = rng.normal(size=(300, 9)) + 1e4
    brute = nn.nearest_distances(x, x, 11, brute=True)
    tree = nn.nearest_distances(x, x, 11, brute=False)
    np.testing.assert_allclose(brute, tree, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("m, k", [(500, 11), (15, 11), (12, 12)])
def test_one_dimension_matches_the_tree(m, k):
    rng = np.random.default_rng(m)
    x = rng.normal(size=(300, 1))
    # Repeated values: equal distances on both sides of a query.
    y = np.round(rng.normal(size=(m, 1)), 1)
    for points in (x, y):
        line = nn.nearest_distances(points, x, k)
        tree = nn.nearest_distances(points, x, k, brute=False)
        np.testing.assert_array_equal(line, tree)


def test_statistics_in_high_dimension_use_the_distance_matrix(monkeypatch):
    x, y = _pair(n=300, d=12, seed=4)
    fast = ks.kl_statistics(x, y[:250])
    monkeypatch.setattr(nn, "BRUTE_POINTS", 0)
    np.testing.assert_allclose(ks.kl_statistics(x, y[:250]), fast, rtol=1e-12)
