"""`same_distribution_probability` through the `two_sample_statistics`
preset (the default for d = 1..16)."""

import numpy as np
import pytest

from keras_msets import estimators
from keras_msets import zoo

same_distribution_probability = estimators.same_distribution_probability


def test_one_pair_gives_a_probability_and_a_batch_an_array():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(40, 3)), rng.normal(size=(25, 3))
    p = same_distribution_probability(x, y)
    assert isinstance(p, float) and 0.0 <= p <= 1.0
    xs = [rng.normal(size=(n, d)) for n, d in ((12, 1), (30, 16), (50, 5))]
    ys = [rng.normal(size=(n, d)) for n, d in ((40, 1), (20, 16), (15, 5))]
    batch = same_distribution_probability(xs, ys)
    assert batch.shape == (3,) and np.all((batch >= 0) & (batch <= 1))
    # A batch gives each pair's own answer.
    one = same_distribution_probability(xs[1], ys[1])
    assert batch[1] == pytest.approx(one)


@pytest.mark.parametrize("d", [1, 4, 16])
def test_identical_sets_are_the_same_and_a_clear_shift_is_not(d):
    rng = np.random.default_rng(d)
    x = rng.normal(size=(120, d))
    # Under the training family a pair with no visible difference still
    # comes from two distributions about a third of the time: the answer
    # for identical sets stays near 0.6, not near 1.
    assert same_distribution_probability(x, x.copy()) > 0.55
    shifted = rng.normal(size=(100, d)) + 3.0 / np.sqrt(d)
    assert same_distribution_probability(x, shifted) < 0.05


def test_one_affine_map_of_both_sets_leaves_the_answer():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(80, 4))
    y = rng.standard_t(5, size=(60, 4))
    matrix = rng.normal(size=(4, 4)) + 2 * np.eye(4)
    offset = 100 * rng.normal(size=4)
    before = same_distribution_probability(x, y)
    after = same_distribution_probability(
        x @ matrix + offset, y @ matrix + offset
    )
    assert after == pytest.approx(before, abs=1e-4)


def test_bad_inputs_and_ranges_raise_naming_the_argument():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(20, 3))
    with pytest.raises(ValueError, match=r"supports d = 1..16.*d=17"):
        same_distribution_probability(
            rng.normal(size=(30, 17)), rng.normal(size=(30, 17))
        )
    with pytest.raises(ValueError, match="same dimension d"):
        same_distribution_probability(x, x[:, :2])
    with pytest.raises(ValueError, match=r"at least 2 points.*d \+ 2 = 18"):
        same_distribution_probability(
            rng.normal(size=(8, 16)), rng.normal(size=(9, 16))
        )
    with pytest.raises(ValueError, match="non-finite"):
        same_distribution_probability(np.full((20, 3), np.nan), x)
    with pytest.raises(TypeError, match="`y` must hold real"):
        same_distribution_probability(x, x + 1j)
    with pytest.warns(UserWarning, match="trained on sets of 10-100000"):
        same_distribution_probability(x[:5], x[5:])


def test_the_default_is_the_statistics_preset_and_its_model_answers_alike():
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=(25, 8)), rng.normal(size=(20, 8))
    spans = estimators.pretrained.route_spans("same_distribution_probability")
    assert spans == [("two_sample_statistics", 1, 16)]
    # `mst_two_sample` serves d = 8 only when named (its card's tests).
    assert zoo.info("mst_two_sample")["serves"]["default_dims"] is None
    # The preset's own model, given as a keras.Model, answers the same.
    model = zoo.load("two_sample_statistics")
    assert same_distribution_probability(x, y, model=model) == pytest.approx(
        same_distribution_probability(x, y)
    )


def test_the_served_size_offset_is_declared_and_applied():
    serves = zoo.info("two_sample_statistics")["serves"]
    rule = serves["size_offset"]
    assert rule["from_points"] < 1000 <= rule["to_points"]
    rng = np.random.default_rng(6)
    x, y = rng.normal(size=(400, 2)), rng.normal(size=(700, 2))
    served = same_distribution_probability(x, y)
    # A keras.Model given as `model` reads no serves: no offset.
    own = same_distribution_probability(
        x, y, model=zoo.load("two_sample_statistics")
    )

    def logit(p):
        return np.log(p) - np.log1p(-p)

    # The smaller set has 400 points.
    expected = rule["per_log_points"] * np.log(400 / rule["from_points"])
    assert logit(served) - logit(own) == pytest.approx(expected, abs=1e-5)
