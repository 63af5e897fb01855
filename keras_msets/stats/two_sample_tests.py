"""Two-sample tests: kernel MMD with permutations, and a classifier test.

Both ask whether `x ~ P` and `y ~ Q` come from one distribution and
return a `TwoSampleTestResult` (`statistic`, `p_value`); a small p-value
is evidence that `P != Q`. They are the classical baselines of
`keras_msets.estimators.same_distribution_probability`.

- `mmd_permutation_test`: the unbiased squared maximum mean discrepancy
  with a Gaussian kernel whose bandwidth is the median distance between
  the pooled points (the median heuristic), calibrated by permuting the
  pooled points between the two sets (Gretton et al. 2012). Memory and
  time grow as `(n + m)^2`.
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


def median_bandwidth(points):
    """The median heuristic: the median of the positive distances between
    the rows of `points` (1.0 when all rows coincide)."""
    points = as_samples("points", points)
    squares = np.sum(points**2, axis=1)
    distances = squares[:, None] + squares[None, :] - 2 * points @ points.T
    upper = distances[np.triu_indices(len(points), k=1)]
    upper = np.sqrt(np.maximum(upper, 0.0))
    upper = upper[upper > 0]
    return float(np.median(upper)) if len(upper) else 1.0


def mmd_permutation_test(x, y, num_permutations=200, bandwidth=None, seed=0):
    """Kernel two-sample test: the unbiased MMD^2 and its permutation p-value.

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
    squares = np.sum(pooled**2, axis=1)
    distances = squares[:, None] + squares[None, :] - 2 * pooled @ pooled.T
    kernel = np.exp(-np.maximum(distances, 0.0) / (2 * bandwidth**2))
    np.fill_diagonal(kernel, 0.0)
    n, m = len(x), len(y)
    rng = np.random.default_rng(seed)
    labels = np.zeros((n + m, num_permutations + 1), dtype=bool)
    labels[:n, 0] = True
    for column in range(1, num_permutations + 1):
        labels[rng.permutation(n + m)[:n], column] = True
    a = labels.astype(np.float64)
    b = 1.0 - a
    ka = kernel @ a
    kb = kernel @ b
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
