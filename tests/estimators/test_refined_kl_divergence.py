"""`kl_divergence` through the `knn_refined_kl_divergence` preset."""

import warnings

import numpy as np
import pytest

from keras_msets import estimators
from keras_msets.stats.classical import knn_kl_divergence

PRESET = "knn_refined_kl_divergence"


def _shifted_pair(n, m, d, shift, seed=0):
    """`N(0, I)` against `N(mu, I)` with `|mu| = shift`: KL = shift^2 / 2."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = rng.normal(size=(m, d)) + shift / np.sqrt(d)
    return x, y, 0.5 * shift**2


def _kl(x, y, **options):
    return estimators.kl_divergence(x, y, model=PRESET, **options)


def test_one_pair_gives_a_float_and_an_ordered_interval():
    x, y, _ = _shifted_pair(200, 150, 2, 1.0)
    value = _kl(x, y)
    assert isinstance(value, float)
    estimate = _kl(x, y, interval=0.9)
    assert isinstance(estimate, estimators.Estimate)
    assert estimate.value == pytest.approx(value)
    assert 0 <= estimate.low <= estimate.value <= estimate.high
    assert estimate.level == 0.9
    narrower = _kl(x, y, interval=0.5)
    assert estimate.low <= narrower.low <= narrower.high <= estimate.high


def test_a_batch_gives_arrays_and_each_pair_its_own_answer():
    a = _shifted_pair(100, 80, 3, 1.0, seed=1)
    b = _shifted_pair(60, 60, 3, 0.5, seed=2)
    estimate = _kl([a[0], b[0]], [a[1], b[1]], interval=0.9)
    assert estimate.value.shape == estimate.high.shape == (2,)
    assert _kl(b[0], b[1]) == pytest.approx(estimate.value[1], rel=1e-5)


def test_one_increasing_affine_map_per_coordinate_changes_nothing():
    # Every statistic is invariant to it (ranks, pooled standardization,
    # plug-ins), so the answer is the same.
    x, y, _ = _shifted_pair(300, 300, 3, 1.0, seed=3)
    scale, offset = np.array([1e-3, 5.0, 40.0]), np.array([7.0, -2.0, 0.5])
    first = _kl(x, y, interval=0.9)
    second = _kl(x * scale + offset, y * scale + offset, interval=0.9)
    np.testing.assert_allclose(first[:3], second[:3], rtol=1e-5)


def test_one_monotone_map_of_both_sets_keeps_the_answer_close():
    # Exact KL 0.5 before and after the map (one invertible map of both).
    x, y, truth = _shifted_pair(1000, 1000, 2, 1.0, seed=4)
    plain = _kl(x, y)
    mapped = _kl(np.sinh(1.5 * x), np.sinh(1.5 * y))
    assert mapped == pytest.approx(plain, abs=0.1)
    assert mapped == pytest.approx(truth, abs=0.15)


def test_known_answer_within_tolerance_and_interval():
    # Exact KL = 0.5 nats; over three samples the preset's mean error is
    # asked to be within 0.1 and below that of k-NN KL (k = 3), and each
    # 90 % interval to hold the truth.
    errors, knn_errors = [], []
    for seed in (5, 6, 7):
        x, y, truth = _shifted_pair(1000, 800, 4, 1.0, seed=seed)
        estimate = _kl(x, y, interval=0.9)
        assert estimate.low <= truth <= estimate.high
        errors.append(abs(estimate.value - truth))
        knn_errors.append(abs(knn_kl_divergence(x, y, k=3) - truth))
    assert np.mean(errors) < 0.1
    assert np.mean(errors) < np.mean(knn_errors)


def test_two_samples_of_one_distribution_give_about_zero():
    rng = np.random.default_rng(6)
    x, y = rng.gamma(2.0, size=(2, 1000, 3))
    estimate = _kl(x, y, interval=0.9)
    assert estimate.value < 0.05
    assert estimate.low <= 0.01


@pytest.mark.parametrize("interval", [0, 0.99, 1.5, "0.9", True])
def test_bad_intervals_are_refused(interval):
    x, y, _ = _shifted_pair(50, 50, 1, 1.0)
    with pytest.raises(ValueError, match=f"interval={interval!r}"):
        _kl(x, y, interval=interval)


def test_too_few_points_are_refused():
    x, y, _ = _shifted_pair(9, 50, 1, 1.0)
    with pytest.raises(ValueError, match="at least 10 points"):
        _kl(x, y)


def test_the_multiset_transformers_give_no_interval():
    x, y, _ = _shifted_pair(120, 120, 4, 1.0)
    with pytest.raises(ValueError, match="`interval` is given by"):
        estimators.kl_divergence(x, y, model="mst_kl_divergence", interval=0.9)


def test_more_dimensions_than_trained_fall_back_to_knn():
    x, y, _ = _shifted_pair(60, 60, 30, 1.0, seed=7)
    with pytest.warns(UserWarning, match="knn_kl_divergence"):
        estimate = _kl(x, y, interval=0.9)
    assert np.isnan(estimate.low) and np.isnan(estimate.high)
    want = max(estimators.knn_kl_divergence(x, y), 0.0)
    assert estimate.value == pytest.approx(want)
    with pytest.raises(ValueError, match="d = 30"):
        _kl(x, y, out_of_distribution="raise")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _kl(x, y, out_of_distribution="warn")
    assert any("not trained" in str(w.message) for w in caught)


def _features(x, y):
    from keras_msets.stats import kl_statistics

    values = kl_statistics.pair_statistics(x, y)
    return dict(zip(kl_statistics.FEATURES, values, strict=True))


def _serves():
    from keras_msets import zoo

    return zoo.info(PRESET)["serves"]


@pytest.mark.parametrize("seed, inside", [(1, True), (3, False)])
def test_the_base_answers_where_the_knn_excess_is_within_the_gate(seed, inside):
    serves = _serves()
    gate = serves["base_gate"]
    rng = np.random.default_rng(seed)
    # d = 4: the model's sizes and dimensions (the rule answers d <= 3).
    x = rng.normal(size=(600, 4))
    y = rng.normal(size=(500, 4)) + 0.5
    features = _features(x, y)
    assert (abs(features[gate["feature"]]) < gate["below"]) == inside
    base = max(features[serves["base_feature"]], 0.0)
    estimate = _kl(x, y, interval=0.9)
    assert (estimate.value == pytest.approx(base, rel=1e-9)) == inside
    assert estimate.low <= estimate.value <= estimate.high


def test_a_gate_bound_scaled_by_another_statistic():
    from keras_msets.estimators.answer_rules import apply_base_gate

    names = ["excess", "log_n"]
    # |excess| 0.02 at n = 100 and 10,000; bound 0.1 / sqrt(n / 100).
    features = np.array([[0.02, np.log(100.0)], [0.02, np.log(10_000.0)]])
    gate = {
        "feature": "excess",
        "below": 0.1 * np.sqrt(100.0),
        "scale_feature": "log_n",
        "scale_power": -0.5,
    }
    base = np.array([1.0, 1.0])
    answers = (np.array([2.0, 2.0]), np.array([1.5, 1.5]), np.array([3.0, 3.0]))
    value, low, high = apply_base_gate(
        gate, features, names, base, "log1p", answers
    )
    np.testing.assert_allclose(value, [1.0, 2.0])
    np.testing.assert_allclose(low, [1.0, 1.5])
    np.testing.assert_allclose(high, [3.0, 3.0])
    assert apply_base_gate(None, features, names, base, "log1p", answers) is (
        answers
    )


@pytest.mark.parametrize(
    "n, m, d, ruled",
    [
        (50, 60, 1, True),
        (500, 400, 4, False),
        (500, 400, 3, True),  # between the sizes in d <= 3
        (3000, 3000, 1, True),
        (12_001, 400, 1, True),
    ],
)
def test_the_size_rule_answers_small_and_large_sets_and_low_d(n, m, d, ruled):
    from keras_msets.estimators.size_rule import rule_parameters
    from keras_msets.estimators.size_rule import size_ruled
    from keras_msets.stats import kl_excess

    rule = _serves()["size_rule"]
    x, y, _ = _shifted_pair(n, m, d, 1.0, seed=8)
    assert size_ruled(rule, x, y) == ruled
    estimate = _kl(x, y, interval=0.9)
    arguments, scale = rule_parameters(rule, x, y)
    middle = d <= 3 and 400 <= min(n, m) < 3000 and max(n, m) <= 12_000
    assert (arguments == rule["middle_arguments"]) == middle
    value, sd = kl_excess.excess_estimate(x, y, **arguments)
    half = 1.6448536 * scale * sd
    want = (max(value, 0), max(value - half, 0), value + half)
    if ruled:
        np.testing.assert_allclose(estimate[:3], want, rtol=1e-6)
    else:
        assert estimate.value != pytest.approx(want[0], rel=1e-6)
    assert estimate.low <= estimate.value <= estimate.high


def test_size_rule_bounds():
    from keras_msets.estimators.size_rule import size_ruled

    rule = {"below_points": 400, "from_points": 3000, "above_points": 12000}
    rows = [(399, 500), (400, 2999), (3000, 5000), (400, 12000), (400, 12001)]
    found = [
        size_ruled(rule, np.zeros((n, 1)), np.zeros((m, 1))) for n, m in rows
    ]
    assert found == [True, False, True, False, True]
    assert not size_ruled(None, np.zeros((50, 1)), np.zeros((50, 1)))
    # `middle_max_dim`: also the pairs between the sizes in d <= 3.
    rule["middle_max_dim"] = 3
    found = [
        size_ruled(rule, np.zeros((n, d)), np.zeros((m, d)))
        for n, m, d in [(400, 2999, 3), (400, 2999, 4), (3000, 500, 4)]
    ]
    assert found == [True, False, False]


def test_large_arguments_answer_only_pairs_from_below_points():
    from keras_msets.estimators.size_rule import apply_size_rule
    from keras_msets.stats import kl_excess

    small = {"k": 3, "draws": 2, "threshold": 0.0}
    large = {"k": 5, "draws": 3, "threshold": 0.0}
    rule = {
        "function": "keras_msets.stats.kl_excess.excess_estimate",
        "arguments": small,
        "below_points": 40,
        "from_points": 40,
        "above_points": 100,
        "interval_scale": 1.0,
    }
    pairs = [_shifted_pair(n, n, 2, 0.5, seed=n)[:2] for n in (30, 50)]
    x_sets, y_sets = [p[0] for p in pairs], [p[1] for p in pairs]

    def answers(rule):
        out = (np.zeros(2), np.zeros(2), np.zeros(2))
        apply_size_rule(rule, x_sets, y_sets, [0, 1], out, 0.9)
        return out

    # Without the optional fields every pair uses `arguments`.
    old = answers(rule)
    new = answers(
        {**rule, "large_arguments": large, "large_interval_scale": 2.0}
    )
    for i, arguments, scale in ((0, small, 1.0), (1, large, 2.0)):
        value, sd = kl_excess.excess_estimate(x_sets[i], y_sets[i], **arguments)
        half = 1.6448536 * scale * sd
        want = (max(value, 0), max(value - half, 0), value + half)
        np.testing.assert_allclose([a[i] for a in new], want, rtol=1e-6)
    np.testing.assert_array_equal([a[0] for a in old], [a[0] for a in new])
    assert old[2][1] != pytest.approx(new[2][1])


def test_an_answer_above_the_trained_divergences_warns():
    # Two Gaussians 10 standard deviations apart in d = 4 (50 nats), 150
    # points each: the samples barely overlap, the answer is far below
    # the truth and above every training pair's divergence.
    limit = _serves()["answers_above"]["above"]
    x, y, truth = _shifted_pair(150, 150, 4, 10.0)
    with pytest.warns(UserWarning, match="extrapolated"):
        estimate = _kl(x, y, interval=0.9)
    assert limit < estimate.value < truth / 2
    with pytest.raises(ValueError, match="barely overlap"):
        _kl(x, y, out_of_distribution="raise")
    # Below the limit: no warning.
    x, y, _ = _shifted_pair(150, 150, 4, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        assert _kl(x, y) < limit
