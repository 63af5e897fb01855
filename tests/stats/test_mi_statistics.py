import numpy as np
import pytest

from keras_msets.stats import mi_statistics
from keras_msets.stats.classical import ksg_mutual_information


def _pair(n=300, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    y = x[:, :1] + rng.normal(size=(n, 1))
    return x, y


def test_ksg_counts_equal_the_tree_based_estimator():
    x, y = _pair()
    got = mi_statistics.ksg_estimates(x, y, (1, 3, 10))
    expected = [ksg_mutual_information(x, y, k=k) for k in (1, 3, 10)]
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_statistics_are_invariant_under_increasing_maps():
    x, y = _pair()
    mapped_x = np.stack([np.exp(x[:, 0]), x[:, 1] ** 3], axis=1)
    mapped_y = np.arcsinh(5 * y) + 2
    np.testing.assert_array_equal(
        mi_statistics.mi_statistics(x, y),
        mi_statistics.mi_statistics(mapped_x, mapped_y),
    )


def test_large_samples_are_cut_into_blocks():
    x, y = _pair(n=3000)
    values = mi_statistics.mi_statistics(x, y)
    features = dict(zip(mi_statistics.FEATURES, values, strict=True))
    size = mi_statistics.block_size(3)
    assert size < 3000
    assert np.exp(features["log_block"]) <= size
    assert features["log_n"] == pytest.approx(np.log(3000))
    # The plug-in of this Gaussian pair is close to its exact 0.5 log 2.
    assert features["plugin"] == pytest.approx(0.5 * np.log(2), abs=0.05)


@pytest.mark.parametrize(
    "x, y, message",
    [
        (np.zeros((5, 1)), np.zeros((5, 1)), "at least 10 rows"),
        (np.zeros((20, 1)), np.zeros((30, 1)), "same number of rows"),
        (np.full((20, 1), np.nan), np.zeros((20, 1)), "finite"),
        (np.zeros((20, 1, 1)), np.zeros((20, 1)), "2-D array"),
    ],
)
def test_bad_pairs_are_refused(x, y, message):
    with pytest.raises(ValueError, match=message):
        mi_statistics.mi_statistics(x, y)
