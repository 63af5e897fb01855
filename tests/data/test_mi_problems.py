import numpy as np
import pytest

from keras_msets.data import mi_problems
from keras_msets.stats.gaussian import gaussian_plugin_mutual_information
from keras_msets.stats.mi_statistics import copula_normal


def test_uniform_noise_information_closed_form():
    # eps <= 1: eps / 2 - log eps; eps >= 1: 1 / (2 eps); equal at 1.
    got = mi_problems.uniform_noise_information([0.5, 1.0, 2.0])
    np.testing.assert_allclose(got, [0.25 + np.log(2), 0.5, 0.25])


def test_student_t_correction_vanishes_for_many_degrees_of_freedom():
    assert mi_problems.student_t_correction(1.0, 1, 1) > 0.1
    assert mi_problems.student_t_correction(1e6, 3, 2) == pytest.approx(
        0, abs=1e-5
    )


def test_gaussian_copula_truth_matches_the_plug_in_on_a_large_sample():
    # Gaussian problems without a spiral have a Gaussian copula (linear
    # mixing, then increasing maps): the plug-in on the normal scores of
    # 100,000 rows is within 0.03 nats of the exact answer.
    checked = 0
    for index in range(30):
        rng = np.random.default_rng([mi_problems.SEED_TAG, 9, index])
        problem = mi_problems.random_problem(rng)
        if problem.family != "gaussian" or "spiral" in problem.description:
            continue
        x, y = problem.sample(100_000, np.random.default_rng(1))
        estimate = gaussian_plugin_mutual_information(
            copula_normal(x), copula_normal(y)
        )
        assert estimate == pytest.approx(problem.truth, abs=0.03), problem
        checked += 1
        if checked == 3:
            break
    assert checked == 3


def test_rows_are_reproducible_and_cached(tmp_path, monkeypatch):
    monkeypatch.setattr(mi_problems, "CHUNK", 3)
    monkeypatch.setattr(mi_problems, "MAX_N", 60)
    first = mi_problems.statistics_table("test", 4, tmp_path)
    assert first["features"].shape == (4, len(mi_problems.stats.FEATURES))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "mi_test_00000.npz",
        "mi_test_00001.npz",
    ]
    again = mi_problems.statistics_table("test", 4, tmp_path)
    np.testing.assert_array_equal(first["features"], again["features"])
    np.testing.assert_array_equal(first["truth"], again["truth"])


def test_the_large_split_draws_its_own_sizes():
    # train_large: n log-uniform in its n_range; the other splits keep
    # (MIN_N, MAX_N). The same row index gives the same sample.
    low, high = mi_problems.EXTRA["train_large"]["n_range"]
    sizes = [
        mi_problems.table_sample("train_large", i)[1].shape[0]
        for i in range(12)
    ]
    assert all(low <= n <= high for n in sizes)
    assert max(sizes) > mi_problems.MAX_N
    sizes = [
        mi_problems.table_sample("train", i)[1].shape[0] for i in range(12)
    ]
    assert all(mi_problems.MIN_N <= n <= mi_problems.MAX_N for n in sizes)
    first = mi_problems.table_sample("train_large", 3)
    again = mi_problems.table_sample("train_large", 3)
    np.testing.assert_array_equal(first[1], again[1])
    np.testing.assert_array_equal(first[2], again[2])
