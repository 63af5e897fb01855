import numpy as np
import pytest

from keras_msets.stats import ksg
from keras_msets.stats import mi_statistics
from keras_msets.stats.classical import ksg_mutual_information
from keras_msets.stats.nearest_neighbours import two_threads
from keras_msets.testing.threads import run_in_threads


def _pair(n=300, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    y = x[:, :1] + rng.normal(size=(n, 1))
    return x, y


@pytest.mark.parametrize("columns", [2, 1])
def test_ksg_counts_equal_the_tree_based_estimator(columns):
    x, y = _pair()
    x = x[:, :columns]
    got = ksg.ksg_estimates(x, y, (1, 3, 10))
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
    # The plug-ins of this Gaussian pair are close to its exact 0.5 log 2.
    assert features["plugin"] == pytest.approx(0.5 * np.log(2), abs=0.05)
    assert features["plugin_corrected"] == pytest.approx(
        0.5 * np.log(2), abs=0.05
    )
    for k in mi_statistics.NEIGHBOURS:
        assert features[f"ksg_excess_k{k}"] == pytest.approx(
            features[f"ksg_k{k}"] - features[f"ksg_gaussian_k{k}"]
        )
        # A Gaussian pair: its KSG is close to that of its reference.
        assert abs(features[f"ksg_excess_k{k}"]) < 0.1


def test_dependence_without_correlation_shows_as_ksg_excess():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(500, 1))
    y = x**2 + 0.1 * rng.normal(size=(500, 1))
    values = mi_statistics.mi_statistics(x, y)
    features = dict(zip(mi_statistics.FEATURES, values, strict=True))
    # Uncorrelated: the Gaussian plug-in sees almost nothing, KSG does.
    assert abs(features["plugin_corrected"]) < 0.1
    assert features["ksg_excess_k3"] > 0.5


def test_canonical_information_of_a_known_correlation():
    # Canonical correlations 0.9 and 0.3 between rotated bases; the
    # plain-numpy reference: -0.5 log(1 - s^2) per canonical pair.
    rng = np.random.default_rng(3)
    qx = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    qy = np.linalg.qr(rng.normal(size=(2, 2)))[0]
    cross = qx[:, :2] @ np.diag([0.9, 0.3]) @ qy.T
    corr = np.block([[np.eye(3), cross], [cross.T, np.eye(2)]])
    parts = -0.5 * np.log(1 - np.array([0.9, 0.3]) ** 2)
    top, share = mi_statistics.canonical_information(corr, 3)
    assert top == pytest.approx(parts[0], rel=1e-9)
    assert share == pytest.approx(parts[0] / parts.sum(), rel=1e-9)
    # Independent sides: no canonical information, share 1 by convention.
    assert mi_statistics.canonical_information(np.eye(4), 2) == (0.0, 1.0)


def test_log_det_bias_matches_sampled_covariances():
    # E[log det S] - log det Sigma, sampled with plain numpy.
    rng = np.random.default_rng(0)
    rows, dim = 12, 4
    samples = rng.normal(size=(40000, rows, dim))
    centred = samples - samples.mean(axis=1, keepdims=True)
    cov = np.einsum("bij,bik->bjk", centred, centred) / (rows - 1)
    sampled = np.linalg.slogdet(cov)[1].mean()
    expected = mi_statistics.log_det_bias(dim, rows - 1)
    assert sampled == pytest.approx(expected, abs=0.015)
    assert abs(expected) > 0.5  # a bias worth removing


def test_corrected_plugin_is_unbiased_for_gaussians():
    rng = np.random.default_rng(1)
    dim, rho, rows = 3, 0.6, 20
    truth = -0.5 * dim * np.log(1 - rho**2)
    corrected, plain = [], []
    for _ in range(300):
        x = rng.normal(size=(rows, dim))
        y = rho * x + np.sqrt(1 - rho**2) * rng.normal(size=(rows, dim))
        corrected.append(mi_statistics.corrected_gaussian_information(x, y))
        cov = np.cov(np.concatenate([x, y], axis=1), rowvar=False)
        plain.append(
            0.5
            * (
                np.linalg.slogdet(cov[:dim, :dim])[1]
                + np.linalg.slogdet(cov[dim:, dim:])[1]
                - np.linalg.slogdet(cov)[1]
            )
        )
    assert np.mean(corrected) == pytest.approx(truth, abs=0.05)
    assert np.mean(plain) - truth > 0.15  # the plain plug-in's bias
    # Too few rows for a covariance of full rank: nan.
    assert np.isnan(mi_statistics.corrected_gaussian_information(x[:7], y[:7]))


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


@pytest.mark.parametrize("shape", [(33, 1), (70, 5), (40, 25)])
def test_max_norm_distances_equal_plain_numpy(shape):
    a = np.random.default_rng(4).normal(size=shape)
    a32 = a.astype(np.float32)
    expected = np.abs(a32[:, None, :] - a32[None, :, :]).max(axis=2)
    got = ksg._max_norm_distances(a, rows=16)
    np.testing.assert_array_equal(got, expected)


def _plain_ksg(x, y, neighbours, queries=None):
    """KSG from full float32 max-norm matrices and a partition (the terms
    of the first `queries` rows only, if given)."""
    from scipy.special import digamma

    x32, y32 = x.astype(np.float32), y.astype(np.float32)
    dx = np.abs(x32[:, None] - x32[None]).max(axis=2)
    dy = np.abs(y32[:, None] - y32[None]).max(axis=2)
    joint = np.maximum(dx, dy)
    np.fill_diagonal(joint, np.inf)
    n = x.shape[0]
    nearest = np.sort(np.partition(joint, 9, axis=1)[:, :10], axis=1)
    out = []
    for k in neighbours:
        radius = nearest[:, k - 1 : k]
        count_x = np.sum(dx < radius, axis=1)[:queries]
        count_y = np.sum(dy < radius, axis=1)[:queries]
        out.append(
            digamma(k)
            + digamma(n)
            - np.mean(digamma(count_x) + digamma(count_y))
        )
    return out


@pytest.mark.parametrize("rows", [7, None])
def test_row_blocked_ksg_equals_full_matrices_with_ties(rows):
    rng = np.random.default_rng(7)
    # Integer coordinates: many equal distances, so ties among the
    # nearest joint neighbours (k = 1 would meet duplicate points).
    x = rng.integers(0, 6, size=(90, 2)).astype(float)
    y = x[:, :1] + rng.integers(0, 4, size=(90, 3))
    got = ksg.ksg_estimates(x, y, (3, 10), rows=rows)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, _plain_ksg(x, y, (3, 10)), rtol=1e-12)


def test_samples_above_the_dense_size_use_trees_with_the_same_counts():
    rng = np.random.default_rng(5)
    n = ksg.MAX_DENSE + 50
    x = rng.normal(size=(n, 2))
    y = x[:, :1] + rng.normal(size=(n, 2))
    got = ksg.ksg_estimates(x, y, (1, 3))
    expected = [ksg_mutual_information(x, y, k=k) for k in (1, 3)]
    np.testing.assert_allclose(got, expected, rtol=1e-9)
    # The dense path on part of the sample gives the tree's counts.
    dense = ksg.ksg_estimates(x[:300], y[:300], (1, 3))
    tree = ksg._ksg_tree(x[:300], y[:300], (1, 3))
    np.testing.assert_allclose(dense, tree, rtol=1e-9)


def test_whole_sample_estimate_and_its_budget():
    # A spiral-like dependence that the Gaussian plug-in misses: the
    # whole-sample KSG excess restores most of the mutual information.
    rng = np.random.default_rng(6)
    x = rng.normal(size=(1200, 1))
    y = np.sin(3 * x) + 0.2 * rng.normal(size=(1200, 1))
    value, spread, bias = mi_statistics.whole_sample_estimate(x, y)
    assert bias == 0.0  # no allowance asked for
    features = dict(
        zip(
            mi_statistics.FEATURES,
            mi_statistics.mi_statistics(x, y),
            strict=True,
        )
    )
    reference = ksg_mutual_information(x, y, k=3)
    assert value > features["plugin_corrected"] + 0.5
    assert value == pytest.approx(reference, abs=0.15)
    assert 0 < spread < 0.1
    assert mi_statistics.whole_sample_affordable(1000, 30)
    assert not mi_statistics.whole_sample_affordable(1000, 50)
    assert not mi_statistics.whole_sample_affordable(20_000, 4)
    big = rng.normal(size=(1000, 25))
    assert mi_statistics.whole_sample_estimate(big, big) is None


@pytest.mark.parametrize("columns", [(2, 3), (1, 1)])
def test_ksg_over_some_query_rows_counts_among_all_rows(columns):
    rng = np.random.default_rng(10)
    x = rng.normal(size=(300, columns[0]))
    y = x[:, :1] + rng.normal(size=(300, columns[1]))
    expected = _plain_ksg(x, y, (1, 3), queries=40)
    got = ksg.ksg_estimates(x, y, (1, 3), queries=40)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    tree = ksg._ksg_tree(x, y, (1, 3), queries=40)
    np.testing.assert_allclose(tree, expected, rtol=1e-6)
    assert not np.allclose(got, _plain_ksg(x, y, (1, 3)), rtol=1e-3)


def test_whole_sample_estimate_over_some_query_rows():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(1200, 1))
    y = np.sin(3 * x) + 0.2 * rng.normal(size=(1200, 1))
    whole = mi_statistics.whole_sample_estimate(x, y)
    assert mi_statistics.whole_sample_estimate(x, y, query_rows=1200) == whole
    some = mi_statistics.whole_sample_estimate(x, y, query_rows=400)
    assert some[0] != whole[0]
    assert some[0] == pytest.approx(whole[0], abs=0.15)
    assert 0 < some[1] < 0.1
    # A share of the rows: the smaller of the two bounds.
    assert mi_statistics.whole_sample_estimate(x, y, query_share=1.0) == whole
    share = mi_statistics.whole_sample_estimate(x, y, query_share=400 / 1200)
    assert share == some
    both = dict(query_rows=400, query_share=0.5)
    assert mi_statistics.whole_sample_estimate(x, y, **both) == some
    with pytest.raises(ValueError, match="query_share=0"):
        mi_statistics.whole_sample_estimate(x, y, query_share=0)


def test_whole_sample_bias_allowance_grows_with_a_compressed_excess():
    # Uniform noise on 5 coordinate pairs at n = 1,000: KSG misses much of
    # the Gaussian reference's information and the excess is real.
    rng = np.random.default_rng(8)
    x = rng.normal(size=(1000, 5))
    y = x + rng.uniform(-0.3, 0.3, size=(1000, 5))
    plain = mi_statistics.whole_sample_estimate(x, y)
    scaled = mi_statistics.whole_sample_estimate(x, y, bias_scale=10.0)
    doubled = mi_statistics.whole_sample_estimate(x, y, bias_scale=20.0)
    assert plain[:2] == scaled[:2] == doubled[:2]
    assert plain[2] == 0.0
    assert scaled[2] > 0.1
    assert doubled[2] == pytest.approx(2 * scaled[2])


@pytest.mark.parametrize("columns", [(1, 3), (2, 5)])
def test_tree_ksg_equals_full_matrices_with_ties(columns):
    rng = np.random.default_rng(9)
    # Integer coordinates: ties among the joint neighbours and at the
    # marginal radii; several leaves in every tree.
    x = rng.integers(0, 12, size=(400, columns[0])).astype(float)
    y = x[:, :1] + rng.integers(0, 8, size=(400, columns[1]))
    got = ksg._ksg_tree(x, y, (3, 10))
    np.testing.assert_allclose(got, _plain_ksg(x, y, (3, 10)), rtol=1e-12)


def test_two_threads_give_the_same_numbers(monkeypatch):
    # At PARALLEL_POINTS rows the sample's and the reference's KSG run on
    # two threads (and the whole-sample check's parts): the same numbers
    # as one thread.
    rng = np.random.default_rng(8)
    x = rng.normal(size=(mi_statistics.PARALLEL_POINTS, 2))
    y = np.sin(2 * x[:, :1]) + 0.3 * rng.normal(size=(x.shape[0], 2))
    with monkeypatch.context() as patch:
        patch.setattr(mi_statistics, "PARALLEL_POINTS", 10**9)
        one = mi_statistics.mi_statistics(x, y, seed=3)
        one_whole = mi_statistics.whole_sample_estimate(x, y, seed=3)
    pools = []
    with monkeypatch.context() as patch:
        patch.setattr(
            mi_statistics,
            "two_threads",
            lambda: pools.append(1) or two_threads(),
        )
        two = mi_statistics.mi_statistics(x, y, seed=3)
        two_whole = mi_statistics.whole_sample_estimate(x, y, seed=3)
    assert len(pools) == 2  # both ran their jobs on the pool
    np.testing.assert_array_equal(two, one)
    assert two_whole == one_whole
    assert np.isfinite(two_whole[1])  # the parts were computed
    # Four callers at once share the pool of two threads.
    for got in run_in_threads(
        lambda i: mi_statistics.mi_statistics(x, y, seed=3)
    ):
        np.testing.assert_array_equal(got, one)
