"""`keras_msets.stats.two_sample_statistics`: invariant permutation scores."""

import numpy as np
import pytest

from keras_msets.stats import two_sample_statistics as ts


def _reference_energy(x, y):
    """The energy statistic with the unbiased within-set means, by loops."""

    def mean_distance(a, b, same):
        total = [
            np.linalg.norm(a[i] - b[j])
            for i in range(len(a))
            for j in range(len(b))
            if not (same and i == j)
        ]
        return np.mean(total)

    return (
        2 * mean_distance(x, y, False)
        - mean_distance(x, x, True)
        - mean_distance(y, y, True)
    )


def test_observed_statistics_match_plain_numpy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(9, 3))
    y = rng.normal(size=(7, 3)) + 0.3
    zx, zy = ts.joint_whiten(x, y)
    pooled = np.concatenate([zx, zy])
    # Whitened: pooled mean 0 and identity covariance.
    np.testing.assert_allclose(pooled.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(pooled.T @ pooled / 16, np.eye(3), atol=1e-10)
    rng_a = np.random.default_rng(1)
    quadratic = ts._quadratic_statistics(zx, zy, 5, rng_a)
    assert quadratic["energy"][0] == pytest.approx(_reference_energy(zx, zy))
    linear = ts._linear_statistics(zx, zy, 5, np.random.default_rng(1))
    difference = zx.mean(axis=0) - zy.mean(axis=0)
    assert linear["mean"][0] == pytest.approx(np.sum(difference**2))
    second = zx.T @ zx / 9 - zy.T @ zy / 7
    assert linear["covariance"][0] == pytest.approx(np.sum(second**2))


def test_scores_are_invariant_under_one_affine_map_of_both_sets():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(40, 4))
    y = rng.normal(size=(30, 4)) * 1.3
    matrix = rng.normal(size=(4, 4)) + 3 * np.eye(4)
    offset = rng.normal(size=4) * 10
    before = ts.two_sample_features(x, y)
    after = ts.two_sample_features(x @ matrix + offset, y @ matrix + offset)
    np.testing.assert_allclose(before, after, atol=1e-5)


def test_scores_tell_a_shift_from_one_distribution():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(150, 5))
    same = ts.two_sample_scores(x, rng.normal(size=(120, 5)))
    shifted = ts.two_sample_scores(x, rng.normal(size=(120, 5)) + 0.6)
    assert shifted["mean"][0] > 5 and shifted["mean"][1] < 0.02
    assert max(z for z, _ in same.values()) < 4
    assert all(0 < p <= 1 for _, p in same.values())


def test_caps_subsample_and_features_have_their_names():
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(300, 2)), rng.normal(size=(250, 2))
    features = ts.two_sample_features(
        x, y, linear_points=100, quadratic_points=20, num_permutations=10
    )
    assert features.shape == (len(ts.FEATURE_NAMES),)
    assert features.dtype == np.float32
    np.testing.assert_allclose(
        features[-3:], [np.log(250), np.log(300 / 250), np.log(2)], rtol=1e-6
    )
    capped = ts.size_features(5000, 3000, 4)
    np.testing.assert_allclose(capped, [np.log(2000), 0.0, np.log(4)])


@pytest.mark.parametrize(
    "x, y, options, message",
    [
        (np.zeros((1, 2)), np.zeros((5, 2)), {}, "at least 2 rows"),
        (np.zeros((5, 2)), np.zeros((5, 3)), {}, "same number of columns"),
        (np.zeros((5, 2)), np.zeros((5, 2)), {"num_permutations": 0}, "num_"),
        (np.zeros((5, 2)), np.zeros((5, 2)), {"quadratic_points": 1}, "at le"),
    ],
)
def test_bad_inputs_raise_naming_the_argument(x, y, options, message):
    with pytest.raises(ValueError, match=message):
        ts.two_sample_scores(x, y, **options)
