"""Two-sample tests: kernel MMD with permutations, and a classifier test.

Both ask whether `x ~ P` and `y ~ Q` come from one distribution and
return a `TwoSampleTestResult` (`statistic`, `p_value`); a small p-value
is evidence that `P != Q`. They are the classical baselines of
`keras_msets.estimators.same_distribution_probability`.

- `mmd_permutation_test`: the unbiased squared maximum mean discrepancy
  with a Gaussian kernel whose bandwidth is the median distance between
  the pooled points (the median heuristic), calibrated by permuting the
  pooled points between the two sets (Gretton et al. 2012). The kernel
  matrix is computed in row blocks, never whole: time grows as
  `(n + m)^2`, memory as `(n + m) * num_permutations` plus the about
  6 % of the pairwise distances that the exact median keeps.
- `classifier_two_sample_test`: a classifier learns to tell `x` from `y`
  on one half of the pooled points, and its accuracy on the other half is
  compared with chance by the exact conditional (hypergeometric) null
  (Lopez-Paz & Oquab 2017). The default classifier is scikit-learn's
  k-nearest-neighbour classifier on standardized coordinates;
  scikit-learn is imported on first use.

References:
    - Gretton, Borgwardt, Rasch, Schölkopf & Smola. A kernel two-sample
      test. Journal of Machine Learning Research 13, 2012.
    - Lopez-Paz & Oquab. Revisiting classifier two-sample tests. ICLR 2017.
"""

import collections

import numpy as np

from keras_msets.stats.classical import as_samples
from keras_msets.utils.validation import check_float
from keras_msets.utils.validation import check_non_negative_int
from keras_msets.utils.validation import check_positive_int

TwoSampleTestResult = collections.namedtuple(
    "TwoSampleTestResult", ["statistic", "p_value"]
)


def _pair(x, y, min_rows):
    x = as_samples("x", x, min_rows=min_rows)
    y = as_samples("y", y, min_rows=min_rows)
    if x.shape[1] != y.shape[1]:
        raise ValueError(
            "`x` and `y` must have the same number of columns. Received: "
            f"x.shape={x.shape}, y.shape={y.shape}"
        )
    return x, y


# Kernel and distance matrices are computed in row blocks of at most this
# many entries (64 MB of float64), never whole.
_BLOCK_ENTRIES = 2**23
# The median heuristic on more points than this first brackets the median
# with the distances between a strided subset of this many points.
_SUBSET_POINTS = 4096
# Half-width of that bracket, in quantile levels; widened 4x on a miss.
_BRACKET_HALF_WIDTH = 0.03


def _block_rows(num_points):
    return max(1, min(num_points, _BLOCK_ENTRIES // num_points))


def _squared_distances(rows, points, squares, row_squares):
    """`|rows_i - points_j|^2` as `[len(rows), len(points)]` (may be
    slightly negative by rounding)."""
    gram = rows @ points.T
    out = row_squares[:, None] + squares[None, :]
    gram *= 2
    out -= gram
    return out


def _upper_distances(points):
    """Yields the squared distances `|p_i - p_j|^2`, `i < j`, in pieces
    of at most about `_BLOCK_ENTRIES` values (each pair once)."""
    squares = np.sum(points**2, axis=1)
    num_points = len(points)
    step = _block_rows(num_points)
    for start in range(0, num_points, step):
        stop = min(start + step, num_points)
        block = _squared_distances(
            points[start:stop],
            points[start:],
            squares[start:],
            squares[start:stop],
        )
        yield block[:, : stop - start][np.triu_indices(stop - start, k=1)]
        yield block[:, stop - start :]


def _positive_in(points, low, high):
    """Over the pairs `i < j`: the number of positive squared distances,
    the number in `(0, low)`, and those in `[low, high]`."""
    low = max(low, np.nextafter(0.0, 1.0))
    positive, below, kept = 0, 0, []
    for values in _upper_distances(points):
        positive += int(np.count_nonzero(values > 0))
        below += int(np.count_nonzero((values > 0) & (values < low)))
        kept.append(values[(values >= low) & (values <= high)])
    return positive, below, np.concatenate(kept)


def median_bandwidth(points):
    """The median heuristic: the median of the positive distances between
    the rows of `points` (1.0 when all rows coincide).

    Exact (the middle order statistics of all pairs, as `np.median`)
    without holding the `N (N - 1) / 2` distances: above 4,096 rows the
    median is first bracketed by the distances within a strided subset of
    4,096 rows, then one pass over row blocks counts the distances below
    the bracket and keeps those inside it (about 6 % of all pairs; a
    missed bracket is widened and the pass repeated). At `N = 20,000`
    numpy's peak allocation is about 0.3 GB. Time grows as `N^2 d`.
    """
    points = as_samples("points", points)
    subset = None
    if len(points) > _SUBSET_POINTS:
        stride = -(-len(points) // _SUBSET_POINTS)
        _, _, subset = _positive_in(points[::stride], 0.0, np.inf)
    half_width = _BRACKET_HALF_WIDTH
    while True:
        low, high = 0.0, np.inf
        if subset is not None and len(subset) and half_width < 0.5:
            low, high = np.quantile(
                subset, [0.5 - half_width, 0.5 + half_width]
            )
        positive, below, kept = _positive_in(points, low, high)
        if positive == 0:
            return 1.0
        ranks = np.array([(positive - 1) // 2, positive // 2]) - below
        if ranks[0] >= 0 and ranks[1] < len(kept):
            break
        half_width *= 4
    middle = np.sqrt(np.partition(kept, ranks)[ranks])
    return float(np.mean(middle))


def mmd_permutation_test(x, y, num_permutations=200, bandwidth=None, seed=0):
    """Kernel two-sample test: the unbiased MMD^2 and its permutation p-value.

    The kernel matrix of the `N = n + m` pooled points is computed in row
    blocks of at most `_BLOCK_ENTRIES` (2^23) entries and multiplied with
    the `[N, num_permutations + 1]` matrix of set labels block by block,
    so memory grows as `N * num_permutations`: numpy's peak allocation is
    about 0.35 GB at `N = 20,000` and 200 permutations (the median
    heuristic, `median_bandwidth`, about 0.3 GB before that). Time grows
    as `N^2 * num_permutations` (about 10 s at `N = 20,000` on one core).

    Args:
        x: samples of `P`, `[n, d]`, `n >= 2`.
        y: samples of `Q`, `[m, d]`, `m >= 2`.
        num_permutations: random relabellings of the pooled points that
            give the null distribution.
        bandwidth: the Gaussian kernel's `sigma` in `exp(-|a - b|^2 / (2
            sigma^2))`; None: the median heuristic on the pooled points.
        seed: seed of the permutations.

    Returns:
        `TwoSampleTestResult(statistic, p_value)`: the unbiased MMD^2 and
        `(1 + #{permuted >= observed}) / (1 + num_permutations)`.
    """
    x, y = _pair(x, y, min_rows=2)
    num_permutations = check_positive_int("num_permutations", num_permutations)
    seed = check_non_negative_int("seed", seed)
    pooled = np.concatenate([x, y], axis=0)
    if bandwidth is None:
        bandwidth = median_bandwidth(pooled)
    bandwidth = check_float("bandwidth", bandwidth, low=0, low_inclusive=False)
    n, m = len(x), len(y)
    rng = np.random.default_rng(seed)
    labels = np.zeros((n + m, num_permutations + 1), dtype=bool)
    labels[:n, 0] = True
    for column in range(1, num_permutations + 1):
        labels[rng.permutation(n + m)[:n], column] = True
    a = labels.astype(np.float64)
    b = 1.0 - a
    del labels
    # K a and K b (the kernel with a zero diagonal), by row blocks.
    ka = np.empty_like(a)
    kb = np.empty_like(b)
    squares = np.sum(pooled**2, axis=1)
    step = _block_rows(n + m)
    for start in range(0, n + m, step):
        stop = min(start + step, n + m)
        block = _squared_distances(
            pooled[start:stop], pooled, squares, squares[start:stop]
        )
        np.maximum(block, 0.0, out=block)
        np.negative(block, out=block)
        block /= 2 * bandwidth**2
        np.exp(block, out=block)
        block[np.arange(stop - start), np.arange(start, stop)] = 0.0
        ka[start:stop] = block @ a
        kb[start:stop] = block @ b
    within_x = np.sum(a * ka, axis=0) / (n * (n - 1))
    within_y = np.sum(b * kb, axis=0) / (m * (m - 1))
    between = np.sum(b * ka, axis=0) / (n * m)
    statistics = within_x + within_y - 2 * between
    observed = statistics[0]
    exceed = np.count_nonzero(statistics[1:] >= observed - 1e-12)
    return TwoSampleTestResult(
        float(observed), float((1 + exceed) / (1 + num_permutations))
    )


def classifier_two_sample_test(
    x, y, classifier=None, test_fraction=0.5, seed=0
):
    """Classifier two-sample test: held-out accuracy against chance.

    The pooled points, labelled 1 for `x` and 0 for `y`, are split at
    random into a training part and a test part (`test_fraction`); the
    classifier is fitted on the first and predicts the second. With the
    predictions fixed, under `P = Q` the number of test points of `x`
    predicted as `x` is hypergeometric, which gives an exact one-sided
    p-value (Fisher's exact test) for any set sizes.

    Args:
        x: samples of `P`, `[n, d]`, `n >= 2`.
        y: samples of `Q`, `[m, d]`, `m >= 2`.
        classifier: a scikit-learn classifier (cloned before fitting), or
            None: standardized coordinates into
            `KNeighborsClassifier(n_neighbors=round(sqrt(train size)))`.
        test_fraction: the share of the pooled points held out, in (0, 1).
        seed: seed of the split (and of the classifier when it has a
            `random_state`).

    Returns:
        `TwoSampleTestResult(statistic, p_value)`: the test accuracy and
        its p-value.
    """
    from scipy.stats import hypergeom
    from sklearn.base import clone
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y = _pair(x, y, min_rows=2)
    test_fraction = check_float(
        "test_fraction",
        test_fraction,
        low=0,
        high=1,
        low_inclusive=False,
        high_inclusive=False,
    )
    seed = check_non_negative_int("seed", seed)
    points = np.concatenate([x, y], axis=0)
    labels = np.concatenate([np.ones(len(x), int), np.zeros(len(y), int)])
    order = np.random.default_rng(seed).permutation(len(points))
    num_test = min(max(1, round(test_fraction * len(points))), len(points) - 2)
    test, train = order[:num_test], order[num_test:]
    if len(np.unique(labels[train])) < 2:
        raise ValueError(
            "`x` and `y` are too small for a classifier test: the training "
            "part holds points of one set only. Received: "
            f"x.shape={x.shape}, y.shape={y.shape}"
        )
    if classifier is None:
        neighbours = max(1, int(round(np.sqrt(len(train)))))
        classifier = make_pipeline(
            StandardScaler(), KNeighborsClassifier(n_neighbors=neighbours)
        )
    else:
        classifier = clone(classifier)
        if "random_state" in classifier.get_params():
            classifier.set_params(random_state=seed)
    classifier.fit(points[train], labels[train])
    predicted = np.asarray(classifier.predict(points[test])).astype(int)
    truth = labels[test]
    accuracy = float(np.mean(predicted == truth))
    hits = int(np.sum((predicted == 1) & (truth == 1)))
    p_value = hypergeom.sf(
        hits - 1, len(test), int(truth.sum()), int(predicted.sum())
    )
    return TwoSampleTestResult(accuracy, float(min(1.0, p_value)))
