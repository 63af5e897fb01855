"""Affine-invariant two-sample statistics with permutation z-scores.

`two_sample_features(x, y)` turns a pair of sets into a short vector that
a small pretrained model (`keras_msets.estimators.
same_distribution_probability`) maps to the probability that both sets
come from one distribution. Every statistic is computed after the joint
whitening of the pooled points (shift by the pooled mean, then the
inverse square root of the pooled covariance), so it is unchanged by any
invertible affine map applied to both sets (whitened data of mapped sets
differ from the original whitened data by a rotation, and every
statistic below depends on the points through rotation-invariant
quantities only). Each statistic is compared with its values under
`num_permutations` random relabellings of the pooled points (the same
relabellings for every statistic) and reported as a z-score,
`(observed - mean) / std` of the relabelled values, and as a permutation
p-value.

The statistics (`STATISTICS`):

- `mean`: the squared distance between the two sets' means (Hotelling's
  T^2 with the pooled covariance).
- `covariance`: the squared Frobenius distance between the two sets'
  second-moment matrices.
- `radius_rank`, `radius_cvm`: the radii `|z|` of the whitened points,
  compared by the difference of the mean ranks of the two sets (Mann-
  Whitney) and by the Cramér-von Mises distance of their empirical
  distribution functions (scale changes, heavy or light tails).
- `mmd_0.5`, `mmd_1`, `mmd_2`: the unbiased squared maximum mean
  discrepancy with a Gaussian kernel whose bandwidth is 0.5, 1 and 2
  times the median distance between the pooled points (Gretton et al.
  2012).
- `energy`: the energy distance (Székely & Rizzo 2004).
- `knn`: the number of pairs (point, one of its `NEIGHBOURS` nearest
  neighbours) in the same set (Schilling 1986; Henze 1988).

Cost. The first four are linear in the number of points; they use at
most `linear_points` points of each set (a random subset above that).
The last five need the matrix of pairwise distances; they use at most
`quadratic_points` points of each set. The whitening itself uses every
point. Time therefore grows linearly with `n` up to the caps and stays
flat above them.

References:
    - Gretton, Borgwardt, Rasch, Schölkopf & Smola. A kernel two-sample
      test. Journal of Machine Learning Research 13, 2012.
    - Székely & Rizzo. Testing for equal distributions in high
      dimension. InterStat, 2004.
    - Schilling. Multivariate two-sample tests based on nearest
      neighbors. Journal of the American Statistical Association 81, 1986.
    - Henze. A multivariate two-sample test based on the number of
      nearest neighbor type coincidences. Annals of Statistics 16, 1988.
"""

import numpy as np

from keras_msets.stats.classical import as_samples
from keras_msets.stats.ranks import column_order
from keras_msets.utils.validation import check_non_negative_int
from keras_msets.utils.validation import check_positive_int

STATISTICS = (
    "mean",
    "covariance",
    "radius_rank",
    "radius_cvm",
    "mmd_0.5",
    "mmd_1",
    "mmd_2",
    "energy",
    "knn",
)
# Signed statistics (either sign is evidence); the feature is |z|.
_TWO_SIDED = ("radius_rank",)
# The knn statistic is large when the sets differ: more same-set pairs.
NEIGHBOURS = 5
NUM_PERMUTATIONS = 100
LINEAR_POINTS = 10_000
QUADRATIC_POINTS = 200
# Set sizes above this many points enter the size features as this many
# (the largest set size of the pretrained model's training pairs).
SIZE_FEATURE_CAP = 2000
# Features: a signed log of each z-score, then `log n_min`, `|log n/m|`
# and `log d`.
FEATURE_NAMES = tuple(f"z_{name}" for name in STATISTICS) + (
    "log_min_size",
    "log_size_ratio",
    "log_dim",
)


def joint_whiten(x, y):
    """Both sets shifted by the pooled mean and multiplied by the inverse
    square root of the pooled covariance (directions of zero variance
    dropped); returns `(zx, zy)`."""
    pooled = np.concatenate([x, y], axis=0)
    centred = pooled - pooled.mean(axis=0)
    covariance = centred.T @ centred / len(pooled)
    values, vectors = np.linalg.eigh(covariance)
    keep = values > max(values[-1], 0.0) * 1e-10
    if not np.any(keep):
        # All points coincide: nothing to tell the sets apart by.
        zeros = np.zeros((len(pooled), 1))
        return zeros[: len(x)], zeros[len(x) :]
    whitened = centred @ (vectors[:, keep] / np.sqrt(values[keep]))
    return whitened[: len(x)], whitened[len(x) :]


def _subset(points, cap, rng):
    if len(points) <= cap:
        return points
    return points[np.sort(rng.choice(len(points), cap, replace=False))]


def _labels(n, m, num_permutations, rng):
    """Bool `[n + m, 1 + num_permutations]`: column 0 marks the first `n`
    points (the observed split), the others random relabellings."""
    base = np.zeros(n + m, dtype=bool)
    base[:n] = True
    columns = np.tile(base[:, None], (1, num_permutations + 1))
    columns[:, 1:] = rng.permuted(columns[:, 1:], axis=0)
    return columns


def _mean_difference(values, a, n, m):
    """`sum_x values / n - sum_y values / m` for every labelling; values
    `[N, k]`, labels `a` `[N, B]` as float -> `[B, k]`."""
    total = values.sum(axis=0)
    in_x = a.T @ values
    return in_x / n - (total - in_x) / m


def _linear_statistics(zx, zy, num_permutations, rng):
    n, m = len(zx), len(zy)
    dim = zx.shape[1]
    z = np.concatenate([zx, zy], axis=0)
    labels = _labels(n, m, num_permutations, rng)
    a = labels.astype(np.float32)
    rows, cols = np.triu_indices(dim)
    radius = np.sqrt(np.sum(z**2, axis=1))
    # Tied radii (rounded or discrete data) in a seeded random order: by
    # row order the ties of x would rank below those of y in the observed
    # labelling only, against every permuted one.
    order = column_order(radius[:, None])[:, 0]
    ranks = np.empty(n + m)
    ranks[order] = np.arange(1, n + m + 1) / (n + m)
    # One product for the means of z, of z z^T and of the radius ranks.
    values = np.concatenate(
        [z, z[:, rows] * z[:, cols], ranks[:, None]], axis=1
    ).astype(np.float32)
    differences = _mean_difference(values, a, n, m).astype(np.float64)
    weights = np.where(rows == cols, 1.0, 2.0)
    cdf_x = np.cumsum(a[order], axis=0)
    seen = np.arange(1, n + m + 1, dtype=np.float32)[:, None]
    gap = cdf_x / n - (seen - cdf_x) / m
    return {
        "mean": np.sum(differences[:, :dim] ** 2, axis=1),
        "covariance": differences[:, dim:-1] ** 2 @ weights,
        "radius_rank": differences[:, -1],
        "radius_cvm": np.mean(gap**2, axis=0, dtype=np.float64)
        * (n * m / (n + m)),
    }


def _within_between(kernel, a, n, m):
    """Unbiased within-x, within-y and between means of `kernel` (zero
    diagonal) for every labelling."""
    b = 1.0 - a
    ka = kernel @ a
    row_sums = kernel.sum(axis=1)
    kb = row_sums[:, None] - ka
    within_x = np.sum(a * ka, axis=0) / (n * (n - 1))
    within_y = np.sum(b * kb, axis=0) / (m * (m - 1))
    between = np.sum(b * ka, axis=0) / (n * m)
    return within_x, within_y, between


def _quadratic_statistics(zx, zy, num_permutations, rng):
    n, m = len(zx), len(zy)
    z = np.concatenate([zx, zy], axis=0)
    labels = _labels(n, m, num_permutations, rng)
    # float32 products: the statistics only enter through z-scores.
    a = labels.astype(np.float32)
    squares = np.sum(z**2, axis=1)
    distances2 = np.maximum(
        squares[:, None] + squares[None, :] - 2.0 * z @ z.T, 0.0
    )
    np.fill_diagonal(distances2, 0.0)
    # Each distance appears twice off the diagonal: the same median.
    positive = distances2[distances2 > 0]
    median2 = float(np.median(positive)) if len(positive) else 1.0
    out = {}
    for factor in (0.5, 1, 2):
        kernel = np.exp(distances2 * (-0.5 / (factor**2 * median2)))
        np.fill_diagonal(kernel, 0.0)
        within_x, within_y, between = _within_between(
            kernel.astype(np.float32), a, n, m
        )
        out[f"mmd_{factor}"] = within_x + within_y - 2.0 * between
    distances = np.sqrt(distances2).astype(np.float32)
    within_x, within_y, between = _within_between(distances, a, n, m)
    out["energy"] = 2.0 * between - within_x - within_y
    k = min(NEIGHBOURS, n + m - 1)
    np.fill_diagonal(distances2, np.inf)
    neighbours = np.argpartition(distances2, k - 1, axis=1)[:, :k]
    same = labels[:, None, :] == labels[neighbours]
    out["knn"] = same.sum(axis=(0, 1)).astype(np.float64)
    return {key: np.asarray(value, np.float64) for key, value in out.items()}


def permutation_scores(statistics):
    """`{name: (z, p)}` from `{name: values}`, values `[1 + B]` with the
    observed value first: the z-score against the relabelled values and
    the permutation p-value (large statistics are evidence against one
    distribution; two-sided for `_TWO_SIDED`)."""
    out = {}
    for name, values in statistics.items():
        observed, null = values[0], values[1:]
        spread = np.std(null)
        scale = spread if spread > 0 else 1.0
        z = (observed - np.mean(null)) / scale
        if name in _TWO_SIDED:
            z = abs(z)
            exceed = np.count_nonzero(
                np.abs(null - np.mean(null))
                >= abs(observed - np.mean(null)) - 1e-12
            )
        else:
            exceed = np.count_nonzero(null >= observed - 1e-12 * abs(observed))
        if spread == 0 and observed == np.mean(null):
            z = 0.0
        out[name] = (float(z), float((1 + exceed) / (1 + len(null))))
    return out


def two_sample_scores(
    x,
    y,
    num_permutations=NUM_PERMUTATIONS,
    linear_points=LINEAR_POINTS,
    quadratic_points=QUADRATIC_POINTS,
    seed=0,
):
    """`{statistic: (z-score, permutation p-value)}` for the pair `x`, `y`.

    Args:
        x: samples of `P`, `[n, d]`, `n >= 2`.
        y: samples of `Q`, `[m, d]`, `m >= 2`, the same `d`.
        num_permutations: random relabellings of the pooled points.
        linear_points: at most this many points of each set for the
            linear-cost statistics.
        quadratic_points: at most this many points of each set for the
            statistics on pairwise distances.
        seed: seed of the subsets and the relabellings.
    """
    x = as_samples("x", x, min_rows=2)
    y = as_samples("y", y, min_rows=2)
    if x.shape[1] != y.shape[1]:
        raise ValueError(
            "`x` and `y` must have the same number of columns. Received: "
            f"x.shape={x.shape}, y.shape={y.shape}"
        )
    num_permutations = check_positive_int("num_permutations", num_permutations)
    linear_points = check_positive_int("linear_points", linear_points)
    quadratic_points = check_positive_int("quadratic_points", quadratic_points)
    if min(linear_points, quadratic_points) < 2:
        raise ValueError(
            "`linear_points` and `quadratic_points` must be at least 2. "
            f"Received: linear_points={linear_points}, "
            f"quadratic_points={quadratic_points}"
        )
    seed = check_non_negative_int("seed", seed)
    zx, zy = joint_whiten(x, y)
    rng = np.random.default_rng(seed)
    statistics = _linear_statistics(
        _subset(zx, linear_points, rng),
        _subset(zy, linear_points, rng),
        num_permutations,
        rng,
    )
    statistics.update(
        _quadratic_statistics(
            _subset(zx, quadratic_points, rng),
            _subset(zy, quadratic_points, rng),
            num_permutations,
            rng,
        )
    )
    return permutation_scores(statistics)


def size_features(n, m, d):
    """`[log min(n, m), |log(n / m)|, log d]` with `n` and `m` capped at
    `SIZE_FEATURE_CAP` (the largest training set size): float32 `[3]`, or
    `[rows, 3]` for arrays."""
    n = np.minimum(np.asarray(n, "float64"), SIZE_FEATURE_CAP)
    m = np.minimum(np.asarray(m, "float64"), SIZE_FEATURE_CAP)
    d = np.asarray(d, "float64")
    return np.stack(
        [np.log(np.minimum(n, m)), np.abs(np.log(n / m)), np.log(d)], axis=-1
    ).astype(np.float32)


def two_sample_features(x, y, **options):
    """The model's input for the pair `x`, `y`: float32 `[len(FEATURE_
    NAMES)]`, the signed log `sign(z) log(1 + |z|)` of each statistic's
    z-score (`two_sample_scores`, same `options`), then `size_features`."""
    scores = two_sample_scores(x, y, **options)
    z = np.array([scores[name][0] for name in STATISTICS])
    sizes = size_features(len(x), len(y), np.shape(x)[1])
    return np.concatenate([np.sign(z) * np.log1p(np.abs(z)), sizes]).astype(
        np.float32
    )
