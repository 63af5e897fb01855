"""`keras_msets.stats.kl_excess`: the untrained rule of the KL preset."""

import numpy as np
import pytest

from keras_msets.stats import kl_excess as ke
from keras_msets.stats import kl_statistics as ks


def _shift(n, d, seed):
    """`N(0, I)` against `N(mu, I)`, `|mu| = 1`: KL = 0.5."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.normal(size=(n, d)) + d**-0.5


def test_terms_are_the_statistics_of_the_copula_and_reference_pairs():
    x, y = _shift(300, 2, seed=0)
    terms = ke.excess_terms(x, y, (1, 5), draws=2)
    cx, cy = ks.copula_normal(x, y)
    np.testing.assert_allclose(
        terms["copula"], ks.knn_kl_estimates(cx, cy, (1, 5)), rtol=1e-12
    )
    # Draw 0 is the model's reference pair, draw 1 another one.
    rx, ry = ks.gaussian_reference(cx, cy)
    np.testing.assert_allclose(
        terms["reference"][0], ks.knn_kl_estimates(rx, ry, (1, 5)), rtol=1e-12
    )
    assert not np.allclose(terms["reference"][0], terms["reference"][1])
    assert terms["base"] == pytest.approx(ks.corrected_gaussian_kl(cx, cy))
    assert terms["reference_base"].shape == (2,)


def test_a_gaussian_copula_pair_is_answered_by_the_base():
    # The copula k-NN estimate lies within the reference's spread: the
    # excess is not significant and the answer is the unbiased base.
    x, y = _shift(2000, 2, seed=1)
    value, sd = ke.excess_estimate(x, y)
    cx, cy = ks.copula_normal(x, y)
    assert value == pytest.approx(ks.corrected_gaussian_kl(cx, cy))
    assert 0 < sd < 0.2
    assert abs(value - 0.5) < 3 * sd


def test_the_excess_corrects_the_base_where_the_copula_is_not_gaussian():
    # N(0, 1) against N(0, 1.5^2): the pooled copula map makes both sets
    # non-Gaussian, the base falls short of the truth, the excess counts.
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(5000, 1)), 1.5 * rng.normal(size=(5000, 1))
    truth = np.log(1.5) + 0.5 / 1.5**2 - 0.5
    base = ke.excess_terms(x, y, (20,), draws=3)["base"]
    value, sd = ke.excess_estimate(x, y)
    assert value != base
    assert abs(value - truth) < abs(base - truth)
    assert abs(value - truth) < 2 * sd


def test_blocks_above_the_budget_give_a_close_answer():
    x, y = _shift(1200, 6, seed=2)
    whole = ke.excess_estimate(x, y, threshold=0.0)
    blocked = ke.excess_estimate(x, y, threshold=0.0, points=400)
    assert blocked[0] == pytest.approx(whole[0], abs=2 * whole[1])
    assert ke.whole_points(16) == ks.block_size(16)


@pytest.mark.parametrize(
    "options, match",
    [
        ({"draws": 1}, "draws=1"),
        ({"draws": 2.0}, "draws=2.0"),
        ({"k": 0}, "k=0"),
    ],
)
def test_bad_arguments_name_the_argument(options, match):
    x, y = _shift(50, 1, seed=3)
    with pytest.raises(ValueError, match=match):
        ke.excess_estimate(x, y, **options)


def test_the_jobs_on_two_threads_give_the_serial_terms(monkeypatch):
    # From PARALLEL_POINTS rows in d <= 4 the copula and reference jobs
    # run on two threads; each has its own seed, so nothing changes.
    x, y = _shift(ke.PARALLEL_POINTS, 3, seed=4)
    assert ke._parallel(x, y)
    threaded = ke.excess_terms(x, y, (1, 10), draws=4)
    monkeypatch.setattr(ke, "_parallel", lambda x, y: False)
    serial = ke.excess_terms(x, y, (1, 10), draws=4)
    for key, value in serial.items():
        np.testing.assert_array_equal(threaded[key], value)
