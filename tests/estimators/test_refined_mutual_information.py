"""`mutual_information` through the `knn_refined_mutual_information` preset."""

import numpy as np
import pytest

from keras_msets import estimators

PRESET = "knn_refined_mutual_information"


def _gaussian_pair(n, dim_x, dim_y, rho, seed=0):
    """Componentwise correlation `rho` on min(dim_x, dim_y) coordinate
    pairs: `I = -min(dim_x, dim_y) / 2 * log(1 - rho^2)`."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, dim_x))
    k = min(dim_x, dim_y)
    y = rng.normal(size=(n, dim_y))
    y[:, :k] = rho * x[:, :k] + np.sqrt(1 - rho**2) * y[:, :k]
    return x, y, -0.5 * k * np.log(1 - rho**2)


def test_one_pair_gives_a_float_and_an_ordered_interval():
    x, y, _ = _gaussian_pair(200, 2, 2, 0.6)
    value = estimators.mutual_information(x, y)
    assert isinstance(value, float)
    estimate = estimators.mutual_information(x, y, interval=0.9)
    assert isinstance(estimate, estimators.Estimate)
    assert estimate.value == pytest.approx(value)
    assert 0 <= estimate.low <= estimate.value <= estimate.high
    assert estimate.level == 0.9
    narrower = estimators.mutual_information(x, y, interval=0.5)
    assert estimate.low <= narrower.low <= narrower.high <= estimate.high


def test_a_batch_of_pairs_of_different_shapes_gives_arrays():
    a = _gaussian_pair(100, 1, 3, 0.5, seed=1)
    b = _gaussian_pair(60, 4, 2, 0.7, seed=2)
    values = estimators.mutual_information([a[0], b[0]], [a[1], b[1]])
    assert values.shape == (2,)
    estimate = estimators.mutual_information(
        [a[0], b[0]], [a[1], b[1]], interval=0.9
    )
    assert estimate.value.shape == estimate.low.shape == (2,)
    np.testing.assert_allclose(estimate.value, values)
    # Each pair's answer is the one it gets alone.
    alone = estimators.mutual_information(b[0], b[1])
    assert values[1] == pytest.approx(alone, rel=1e-5)


def test_increasing_maps_of_coordinates_do_not_change_the_estimate():
    x, y, _ = _gaussian_pair(300, 2, 3, 0.6, seed=3)
    mapped_x = np.stack([np.exp(x[:, 0]), x[:, 1] ** 3], axis=1)
    mapped_y = np.arcsinh(4 * y) * 100 - 7
    first = estimators.mutual_information(x, y, interval=0.9)
    second = estimators.mutual_information(mapped_x, mapped_y, interval=0.9)
    np.testing.assert_allclose(first, second, rtol=1e-6)


def test_accuracy_on_a_gaussian_with_dim_x_different_from_dim_y():
    # Exact I = -1.5 log(1 - 0.36) = 0.669 nats; KSG (k = 3) on this
    # sample is 0.10 below it; the preset is asked to be within 0.1.
    x, y, truth = _gaussian_pair(1000, 3, 5, 0.6, seed=4)
    estimate = estimators.mutual_information(x, y, interval=0.9)
    assert estimate.value == pytest.approx(truth, abs=0.1)
    assert estimate.low <= truth <= estimate.high


@pytest.mark.parametrize("interval", [0, 0.99, 1.5, "0.9", True, -0.1])
def test_bad_intervals_are_refused(interval):
    x, y, _ = _gaussian_pair(50, 1, 1, 0.5)
    with pytest.raises(ValueError, match=f"interval={interval!r}"):
        estimators.mutual_information(x, y, interval=interval)


def test_the_multiset_transformers_give_no_interval():
    x, y, _ = _gaussian_pair(120, 2, 2, 0.5)
    with pytest.raises(ValueError, match="`interval` is given by"):
        estimators.mutual_information(
            x, y, model="mst_mutual_information_joint", interval=0.9
        )


def test_too_few_rows_are_refused():
    x, y, _ = _gaussian_pair(9, 1, 1, 0.5)
    with pytest.raises(ValueError, match="at least 10 points"):
        estimators.mutual_information(x, y)


def test_dimensions_beyond_the_trained_ones_fall_back_to_ksg():
    x, y, _ = _gaussian_pair(80, 30, 2, 0.5, seed=5)
    with pytest.warns(UserWarning, match="d = 30 columns.*ksg"):
        estimate = estimators.mutual_information(x, y, interval=0.9)
    expected = max(estimators.ksg_mutual_information(x, y, k=3), 0.0)
    assert estimate.value == pytest.approx(expected)
    assert np.isnan(estimate.low) and np.isnan(estimate.high)
    with pytest.raises(ValueError, match="outside what preset"):
        estimators.mutual_information(x, y, out_of_distribution="raise")


def test_discrete_samples_fall_back_to_ksg():
    # Three sparse binary coordinates, bits flipped with probability 0.1:
    # 0.44 nats; the model, trained on continuous samples, read ~0.14.
    rng = np.random.default_rng(0)
    x = (rng.random((1000, 3)) < 0.1).astype(float)
    y = np.where(rng.random((1000, 3)) < 0.1, 1 - x, x)
    limit = _serves()["discrete_columns"]["max_values"]
    with pytest.warns(UserWarning, match="2 distinct values.*ksg"):
        estimate = estimators.mutual_information(x, y, interval=0.9)
    expected = max(estimators.ksg_mutual_information(x, y, k=3), 0.0)
    assert estimate.value == pytest.approx(expected)
    assert abs(estimate.value - 0.439) < 0.1
    assert np.isnan(estimate.low) and np.isnan(estimate.high)
    with pytest.raises(ValueError, match="discrete data"):
        estimators.mutual_information(x, y, out_of_distribution="raise")
    # More values than the limit, or a column without ties (every column
    # of a continuous sample, however few its rows), is not discrete.
    levels = rng.integers(0, limit + 1, size=(1000, 1)).astype(float)
    many = estimators.mutual_information(
        levels, levels + rng.normal(size=(1000, 1)), out_of_distribution="raise"
    )
    assert np.isfinite(many)
    x, y, _ = _gaussian_pair(10, 2, 2, 0.5, seed=7)
    estimators.mutual_information(x, y, out_of_distribution="raise")


def test_fewest_tied_values():
    from keras_msets.estimators.refined import fewest_tied_values

    rng = np.random.default_rng(1)
    assert fewest_tied_values(rng.normal(size=(10, 3))) is None
    values = np.c_[rng.normal(size=50), rng.integers(0, 4, 50), np.ones(50)]
    assert fewest_tied_values(values) == 1
    assert fewest_tied_values(values[:, :2]) == 4


def _statistics(x, y):
    from keras_msets.stats import mi_statistics

    values = mi_statistics.mi_statistics(x, y, seed=0)
    return dict(zip(mi_statistics.FEATURES, values, strict=True))


def _serves():
    from keras_msets import zoo

    return zoo.info(PRESET)["serves"]


def test_the_base_answers_where_the_ksg_excess_is_within_the_gate():
    gate = _serves()["base_gate"]
    x, y, _ = _gaussian_pair(400, 2, 2, 0.5, seed=6)
    features = _statistics(x, y)
    # This Gaussian pair's KSG matches its Gaussian reference closely.
    assert abs(features[gate["feature"]]) < gate["below"]
    estimate = estimators.mutual_information(x, y, interval=0.9)
    base = max(features[_serves()["base_feature"]], 0.0)
    assert estimate.value == pytest.approx(base, rel=1e-6)
    assert estimate.low <= estimate.value <= estimate.high


def test_outside_the_gate_the_model_raises_a_blind_base():
    # Dependence without correlation: the plug-in sees almost nothing,
    # the KSG excess is large, and the model's answer (not the gate's)
    # lies well above the base, inside its interval.
    serves = _serves()
    gate = serves["base_gate"]
    rng = np.random.default_rng(7)
    for n, d in ((60, 1), (2000, 2)):
        x = rng.normal(size=(n, d))
        y = x**2 + 0.3 * rng.normal(size=(n, d))
        features = _statistics(x, y)
        assert abs(features[gate["feature"]]) >= gate["below"]
        base = max(features[serves["base_feature"]], 0.0)
        estimate = estimators.mutual_information(x, y, interval=0.9)
        assert estimate.value > base + 0.2
        assert estimate.low <= estimate.value <= estimate.high


def _check_parts():
    from keras_msets.estimators.whole_sample_check import (
        apply_whole_sample_check,
    )
    from keras_msets.stats.mi_statistics import whole_sample_estimate

    return (
        _serves()["whole_sample_check"],
        apply_whole_sample_check,
        (whole_sample_estimate),
    )


def test_the_whole_sample_check_replaces_only_answers_outside_its_band():
    check, apply_check, rule = _check_parts()
    x, y, _ = _gaussian_pair(check["from_points"], 1, 1, 0.8)
    value, sd, bias = rule(x, y, **check["arguments"])
    inside = value + 0.5 * check["band"] * sd + bias
    answers = ([inside, value + 1.0, 5.0], [0.0, 0.0, 0.0], [9.0, 9.0, 9.0])
    answers = tuple(np.array(a) for a in answers)
    # Pair 2 is not among the rows to check.
    fired = apply_check(check, [x, x, x], [y, y, y], [0, 1], answers, 0.9)
    assert fired == [1]
    estimate, low, high = answers
    np.testing.assert_array_equal(estimate[[0, 2]], [inside, 5.0])
    np.testing.assert_array_equal(high[[0, 2]], [9.0, 9.0])
    half = 1.6448536 * check["interval_scale"] * sd + bias
    assert estimate[1] == pytest.approx(value)
    assert low[1] == pytest.approx(value - half, rel=1e-6)
    assert high[1] == pytest.approx(value + half, rel=1e-6)
    assert low[1] < estimate[1] < high[1]


def test_the_whole_sample_check_leaves_small_and_costly_pairs():
    check, apply_check, rule = _check_parts()
    small = _gaussian_pair(check["from_points"] - 1, 1, 1, 0.8)
    wide = _gaussian_pair(check["from_points"], 20, 20, 0.5)
    assert rule(*wide[:2], **check["arguments"]) is None  # over its budget
    answers = tuple(np.array([50.0, 50.0]) for _ in range(3))
    fired = apply_check(
        check, [small[0], wide[0]], [small[1], wide[1]], [0, 1], answers, 0.9
    )
    assert fired == []
    for values in answers:
        np.testing.assert_array_equal(values, [50.0, 50.0])


def test_the_estimator_answers_with_the_whole_sample_rule_where_they_differ(
    monkeypatch,
):
    # 15 coordinate pairs of correlation 0.8 at n = 1,000: the model adds
    # an excess the base does not need; the rule is near the truth. (The
    # base gate would answer with the base here: it is off for the test.)
    from keras_msets.estimators import refined

    monkeypatch.setattr(refined, "apply_base_gate", lambda *a: a[-1])
    check, _, rule = _check_parts()
    x, y, truth = _gaussian_pair(check["from_points"], 15, 15, 0.8)
    value, sd, bias = rule(x, y, **check["arguments"])
    estimate = estimators.mutual_information(x, y, interval=0.9)
    assert estimate.value == pytest.approx(value)
    assert estimate.low < truth < estimate.high
    assert estimate.high - estimate.low == pytest.approx(
        2 * (1.6448536 * check["interval_scale"] * sd + bias), rel=1e-6
    )
    # The model's own answer lies outside the rule's band.
    monkeypatch.setattr(refined, "apply_whole_sample_check", lambda *a: [])
    model = estimators.mutual_information(x, y)
    assert abs(model - value) > check["band"] * sd + bias


def test_the_rules_bias_allowance_widens_its_band_and_interval(monkeypatch):
    from keras_msets.stats import mi_statistics

    check, apply_check, _ = _check_parts()
    x, y, _ = _gaussian_pair(check["from_points"], 1, 1, 0.8)
    sd, bias = 0.01, 0.3
    monkeypatch.setattr(
        mi_statistics,
        "whole_sample_estimate",
        lambda *a, **k: (1.0, sd, bias),
    )
    far = 1.0 + check["band"] * sd + 0.2  # outside the band without bias
    answers = tuple(np.array([far, far + 0.2]) for _ in range(3))
    fired = apply_check(check, [x, x], [y, y], [0, 1], answers, 0.9)
    assert fired == [1]
    estimate, low, high = answers
    assert estimate[0] == far
    half = 1.6448536 * check["interval_scale"] * sd + bias
    assert (estimate[1], low[1], high[1]) == pytest.approx(
        (1.0, 1.0 - half, 1.0 + half), rel=1e-6
    )


def test_the_correction_shrink_scales_only_small_pairs_corrections():
    from keras_msets.estimators.answer_rules import apply_correction_shrink

    shrink = {"below_points": 400, "power": 0.5}
    sets = [np.zeros((n, 1)) for n in (100, 400, 1000, 100)]
    base = np.array([0.2, 0.2, 0.2, np.nan])
    answers = tuple(np.array([1.0, 1.0, 1.0, 1.0]) + d for d in (0, -0.3, 0.5))
    estimate, low, high = apply_correction_shrink(
        shrink, sets, sets, base, "log1p", answers
    )
    # (100 / 400) ** 0.5 = 0.5: halfway between the base and the model.
    assert estimate[0] == pytest.approx(0.6)
    assert (low[0], high[0]) == pytest.approx((0.3, 1.1))
    # From `below_points` rows on, and where the base is not finite: as is.
    np.testing.assert_array_equal(estimate[1:], [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(high[1:], [1.5, 1.5, 1.5])
    unchanged = apply_correction_shrink(
        None, sets, sets, base, "log1p", answers
    )
    assert unchanged is answers


def test_the_estimator_shrinks_the_models_correction_below_its_size(
    monkeypatch,
):
    from keras_msets.estimators import refined

    serves = _serves()
    shrink = serves["correction_shrink"]
    rng = np.random.default_rng(7)
    x = rng.normal(size=(60, 1))
    y = x**2 + 0.3 * rng.normal(size=(60, 1))
    shrunk = estimators.mutual_information(x, y, interval=0.9)
    monkeypatch.setattr(
        refined, "apply_correction_shrink", lambda *args: args[-1]
    )
    model = estimators.mutual_information(x, y, interval=0.9)
    base = max(_statistics(x, y)[serves["base_feature"]], 0.0)
    scale = (60 / shrink["below_points"]) ** shrink["power"]
    assert model.value > base + 0.2  # the model's correction is large here
    assert shrunk.value == pytest.approx(
        base + scale * (model.value - base), rel=1e-6
    )
    assert shrunk.high - shrunk.low == pytest.approx(
        model.high - model.low, rel=1e-6
    )


def test_above_the_ceiling_the_base_answers(monkeypatch):
    # 15 coordinate pairs of correlation 0.9 (12.5 nats), n = 150: above
    # the ceiling the answer is the base, the interval holding it; the
    # model alone would overshoot by more than 0.5 nats.
    from keras_msets.estimators import refined

    serves = _serves()
    x, y, truth = _gaussian_pair(150, 15, 15, 0.9)
    base = _statistics(x, y)[serves["base_feature"]]
    assert base > serves["base_ceiling"]["above"]
    estimate = estimators.mutual_information(x, y, interval=0.9)
    assert estimate.value == pytest.approx(base, rel=1e-9)
    assert estimate.low <= estimate.value <= estimate.high
    assert abs(estimate.value - truth) < 0.5
    monkeypatch.setattr(refined, "apply_base_ceiling", lambda *a: None)
    assert estimators.mutual_information(x, y) > base + 0.5


def test_outside_the_ranges_and_above_the_ceiling_the_fallback_is_the_base():
    # Correlation 0.99 on 15 pairs (37 nats): KSG's statistics leave the
    # training ranges; KSG itself says about 3 nats, the base about 36.
    serves = _serves()
    x, y, truth = _gaussian_pair(150, 15, 15, 0.99)
    base = _statistics(x, y)[serves["base_feature"]]
    with pytest.warns(UserWarning, match="base_ceiling"):
        estimate = estimators.mutual_information(x, y, interval=0.9)
    assert estimate.value == pytest.approx(base, rel=1e-9)
    assert np.isnan(estimate.low) and np.isnan(estimate.high)
    assert abs(estimate.value - truth) < 0.1 * truth
    assert estimators.ksg_mutual_information(x, y) < 0.2 * truth
