"""`keras_msets.data.kl_problems`: random pairs with exact KL divergences."""

import numpy as np
import pytest
from scipy import stats

from keras_msets.data import kl_problems
from keras_msets.stats.gaussian import gaussian_kl_divergence


def test_gaussian_kl_matches_the_library_closed_form():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 4, 4))
    cov_p, cov_q = a @ a.T + np.eye(4), b @ b.T + np.eye(4)
    mean_p, mean_q = rng.normal(size=(2, 4))
    assert kl_problems.gaussian_kl(
        mean_p, cov_p, mean_q, cov_q
    ) == pytest.approx(
        gaussian_kl_divergence(mean_p, cov_p, mean_q, cov_q), rel=1e-10
    )


def test_gamma_kl_matches_monte_carlo():
    rng = np.random.default_rng(1)
    p, q = stats.gamma(2.5, scale=1.0), stats.gamma(1.7, scale=1.6)
    x = p.rvs(size=200_000, random_state=rng)
    monte_carlo = np.mean(p.logpdf(x) - q.logpdf(x))
    exact = kl_problems.gamma_kl(2.5, 1.0, 1.7, 1.6)
    assert exact == pytest.approx(monte_carlo, abs=0.01)


def test_training_pairs_are_reproducible_and_in_range():
    for seed in range(30):
        x, y, problem = kl_problems.training_pair(seed)
        x2, y2, _ = kl_problems.training_pair(seed)
        np.testing.assert_array_equal(x, x2)
        assert x.shape[1] == y.shape[1] == problem.dim
        assert 1 <= problem.dim <= kl_problems.MAX_DIM
        assert 10 <= len(x) <= 12_000 and 10 <= len(y) <= 12_000
        assert 0.0 <= problem.truth <= kl_problems.MAX_KL
        assert np.all(np.isfinite(x)) and np.all(np.isfinite(y))


def test_split_seeds_are_disjoint():
    ranges = sorted(kl_problems.SPLIT_SEEDS.values())
    for (_, high), (low, _) in zip(ranges, ranges[1:], strict=False):
        assert high <= low
