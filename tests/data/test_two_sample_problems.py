"""`keras_msets.data.two_sample_problems`: the random training family."""

import numpy as np
import pytest

from keras_msets.data import two_sample_problems as problems


@pytest.mark.parametrize("perturbation", problems.PERTURBATIONS)
def test_pairs_have_the_requested_shapes_and_labels(perturbation):
    rng = np.random.default_rng(0)
    x, y, same, info = problems.sample_pair(
        rng, n=20, m=30, dim=3, same=False, perturbation=perturbation
    )
    assert x.shape == (20, 3) and y.shape == (30, 3)
    assert not same and info["perturbation"] == perturbation
    assert np.all(np.isfinite(x)) and np.all(np.isfinite(y))


def test_a_strong_shift_is_visible_and_same_pairs_are_not_shifted():
    rng = np.random.default_rng(1)
    gaps = {True: [], False: []}
    for same in (True, False):
        for _ in range(30):
            x, y, _, info = problems.sample_pair(
                rng,
                n=400,
                dim=1,
                same=same,
                perturbation="shift",
                both_map="identity",
            )
            if same or info["strength"] > 0.5:
                gap = abs(x.mean() - y.mean()) / np.std(np.r_[x, y])
                gaps[same].append(gap)
    assert np.mean(gaps[False]) > 3 * np.mean(gaps[True])


def test_draws_are_reproducible_from_the_seed():
    first = problems.sample_pair(np.random.default_rng([7, 1]))
    second = problems.sample_pair(np.random.default_rng([7, 1]))
    np.testing.assert_array_equal(first[0], second[0])
    assert first[2:] == second[2:]
    with pytest.raises(ValueError, match="perturbation"):
        problems.sample_pair(
            np.random.default_rng(0), same=False, perturbation="twist"
        )


def test_strength_ranges_shrink_with_the_size_exponent(monkeypatch):
    # Same draws: the strength is the drawn value over min(n, m) ** e.
    def strength(exponent):
        monkeypatch.setattr(problems, "STRENGTH_SIZE_EXPONENT", exponent)
        _, _, _, info = problems.sample_pair(
            np.random.default_rng(3),
            n=400,
            m=400,
            dim=2,
            same=False,
            perturbation="scale",
        )
        return info["strength"]

    drawn = strength(0.0)
    assert drawn < 1.5  # below the cap of the scale strength
    assert strength(0.5) == pytest.approx(drawn / 20.0)
    assert strength(0.25) == pytest.approx(drawn / 400**0.25)
