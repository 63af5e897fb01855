"""`keras_msets.stats.kl_statistics`: the statistics the KL model reads."""

import numpy as np
import pytest

from keras_msets.stats import kl_statistics as ks
from keras_msets.stats.classical import knn_kl_divergence


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


@pytest.mark.parametrize("n, d", [(200, 2), (ks.PARALLEL_POINTS, 6)])
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
        if "copula" in name:
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
    assert named[ks.BASE_FEATURE] == pytest.approx(raw["knn_copula_k3"])
