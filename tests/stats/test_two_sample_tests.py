"""`keras_msets.stats.two_sample_tests`: MMD and classifier tests."""

import numpy as np
import pytest

from keras_msets.stats import two_sample_tests as tests


def _mmd_reference(x, y, sigma):
    """Unbiased MMD^2 with a Gaussian kernel, by explicit loops."""

    def k(a, b):
        return np.exp(-np.sum((a - b) ** 2) / (2 * sigma**2))

    n, m = len(x), len(y)
    xx = sum(k(x[i], x[j]) for i in range(n) for j in range(n) if i != j)
    yy = sum(k(y[i], y[j]) for i in range(m) for j in range(m) if i != j)
    xy = sum(k(x[i], y[j]) for i in range(n) for j in range(m))
    return xx / (n * (n - 1)) + yy / (m * (m - 1)) - 2 * xy / (n * m)


def test_mmd_statistic_matches_the_loops_and_the_median_heuristic():
    from scipy.spatial.distance import pdist

    rng = np.random.default_rng(0)
    x = rng.normal(size=(9, 2))
    y = rng.normal(size=(7, 2)) + 0.5
    pooled = np.concatenate([x, y])
    sigma = np.median(pdist(pooled))
    assert tests.median_bandwidth(pooled) == pytest.approx(sigma)
    result = tests.mmd_permutation_test(x, y, num_permutations=20)
    assert result.statistic == pytest.approx(_mmd_reference(x, y, sigma))


def test_mmd_rejects_a_shift_and_keeps_one_distribution():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(80, 3))
    shifted = tests.mmd_permutation_test(x, rng.normal(size=(80, 3)) + 0.8)
    assert shifted.p_value == pytest.approx(1 / 201)
    p_values = [
        tests.mmd_permutation_test(
            rng.normal(size=(30, 2)), rng.normal(size=(30, 2)), seed=s
        ).p_value
        for s in range(20)
    ]
    # Under the null the p-values are (nearly) uniform: few below 0.05.
    assert sum(p < 0.05 for p in p_values) <= 4
    assert np.mean(p_values) > 0.3


def test_classifier_test_rejects_a_shift_and_keeps_one_distribution():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(2)
    x = rng.normal(size=(200, 4))
    y = rng.normal(size=(200, 4)) + 1.0
    result = tests.classifier_two_sample_test(x, y)
    assert result.statistic > 0.75 and result.p_value < 1e-6
    linear = tests.classifier_two_sample_test(x, y, LogisticRegression())
    assert linear.p_value < 1e-6
    p_values = [
        tests.classifier_two_sample_test(
            rng.normal(size=(60, 2)), rng.normal(size=(40, 2)), seed=s
        ).p_value
        for s in range(20)
    ]
    assert sum(p < 0.05 for p in p_values) <= 4
    assert all(0.0 <= p <= 1.0 for p in p_values)


def test_classifier_p_value_is_fishers_exact_test():
    from scipy.stats import fisher_exact

    rng = np.random.default_rng(3)
    x = rng.normal(size=(40, 2))
    y = rng.normal(size=(50, 2)) + 0.5
    result = tests.classifier_two_sample_test(x, y, seed=4)
    # Rebuild the split and the predictions to compare with scipy.
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    points = np.concatenate([x, y])
    labels = np.r_[np.ones(40, int), np.zeros(50, int)]
    order = np.random.default_rng(4).permutation(90)
    test, train = order[:45], order[45:]
    model = make_pipeline(StandardScaler(), KNeighborsClassifier(7))
    predicted = model.fit(points[train], labels[train]).predict(points[test])
    truth = labels[test]
    table = [
        [np.sum((predicted == 1) & (truth == 1)), np.sum(predicted > truth)],
        [np.sum(predicted < truth), np.sum((predicted == 0) & (truth == 0))],
    ]
    _, want = fisher_exact(table, alternative="greater")
    assert result.statistic == pytest.approx(np.mean(predicted == truth))
    assert result.p_value == pytest.approx(want)


@pytest.mark.parametrize(
    "call, match",
    [
        (
            lambda: tests.mmd_permutation_test(
                np.ones((5, 2)), np.ones((5, 3))
            ),
            "same number of columns",
        ),
        (
            lambda: tests.mmd_permutation_test(
                np.ones((5, 2)), np.ones((5, 2)), num_permutations=0
            ),
            "num_permutations",
        ),
        (
            lambda: tests.mmd_permutation_test(
                np.ones((5, 2)), np.ones((5, 2)), bandwidth=-1.0
            ),
            "bandwidth",
        ),
        (
            lambda: tests.classifier_two_sample_test(
                np.ones((5, 2)), np.ones((5, 2)), test_fraction=1.0
            ),
            "test_fraction",
        ),
        (
            lambda: tests.classifier_two_sample_test(
                np.ones((1, 2)), np.ones((5, 2))
            ),
            "at least 2 rows",
        ),
    ],
)
def test_bad_input_is_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def _mmd_full_matrix(x, y, num_permutations, seed):
    """The MMD permutation test on the whole kernel matrix, with
    `np.median` over all pairwise distances for the bandwidth."""
    from scipy.spatial.distance import cdist
    from scipy.spatial.distance import pdist

    pooled = np.concatenate([x, y])
    distances = pdist(pooled)
    sigma = np.median(distances[distances > 0])
    kernel = np.exp(-cdist(pooled, pooled, "sqeuclidean") / (2 * sigma**2))
    np.fill_diagonal(kernel, 0.0)
    n, m = len(x), len(y)
    rng = np.random.default_rng(seed)
    columns = [np.arange(n + m) < n]
    for _ in range(num_permutations):
        column = np.zeros(n + m, bool)
        column[rng.permutation(n + m)[:n]] = True
        columns.append(column)
    statistics = []
    for a in columns:
        b = ~a
        statistics.append(
            kernel[a][:, a].sum() / (n * (n - 1))
            + kernel[b][:, b].sum() / (m * (m - 1))
            - 2 * kernel[a][:, b].sum() / (n * m)
        )
    exceed = sum(s >= statistics[0] - 1e-12 for s in statistics[1:])
    return statistics[0], (1 + exceed) / (1 + num_permutations)


@pytest.mark.parametrize(
    "n, m, d, shift", [(40, 40, 8, 0.0), (30, 55, 3, 0.4), (60, 25, 1, 0.2)]
)
def test_mmd_in_row_blocks_matches_the_whole_matrix(
    monkeypatch, n, m, d, shift
):
    # Blocks of a few rows and a bracketed median, as at large n.
    monkeypatch.setattr(tests, "_BLOCK_ENTRIES", 4 * (n + m))
    monkeypatch.setattr(tests, "_SUBSET_POINTS", 20)
    rng = np.random.default_rng(n + m + d)
    x = rng.normal(size=(n, d))
    y = rng.standard_t(5, size=(m, d)) + shift
    want = _mmd_full_matrix(x, y, num_permutations=50, seed=7)
    got = tests.mmd_permutation_test(x, y, num_permutations=50, seed=7)
    assert got.statistic == pytest.approx(want[0], rel=1e-12, abs=0)
    assert got.p_value == want[1]


def test_median_bandwidth_is_exact_when_the_bracket_misses(monkeypatch):
    from scipy.spatial.distance import pdist

    monkeypatch.setattr(tests, "_BLOCK_ENTRIES", 64)
    monkeypatch.setattr(tests, "_SUBSET_POINTS", 6)
    # A bracket far too narrow for a 6-point subset: widened until it holds.
    monkeypatch.setattr(tests, "_BRACKET_HALF_WIDTH", 1e-3)
    rng = np.random.default_rng(5)
    for rows in (41, 42):  # odd and even numbers of positive distances
        points = rng.exponential(size=(rows, 2))
        points[:4] = points[4]  # coinciding rows: zero distances left out
        distances = pdist(points)
        want = np.median(distances[distances > 0])
        assert tests.median_bandwidth(points) == pytest.approx(want, rel=1e-12)
    assert tests.median_bandwidth(np.ones((30, 3))) == 1.0


def test_mmd_never_holds_the_kernel_matrix(monkeypatch):
    import tracemalloc

    monkeypatch.setattr(tests, "_BLOCK_ENTRIES", 2**16)
    monkeypatch.setattr(tests, "_SUBSET_POINTS", 500)
    rng = np.random.default_rng(6)
    x, y = rng.normal(size=(1500, 4)), rng.normal(size=(1500, 4)) + 0.1
    tracemalloc.start()
    try:
        result = tests.mmd_permutation_test(x, y, num_permutations=20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # The 3,000 x 3,000 kernel matrix alone takes 72 MB.
    assert peak < 3000**2 * 8 / 4
    assert result.p_value == pytest.approx(1 / 21)
