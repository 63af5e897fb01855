"""Cheap statistics of a sample pair that a small model maps to `KL(P || Q)`.

`kl_statistics(x, y)` summarizes `x ~ P` (`[n, d]`) and `y ~ Q`
(`[m, d]`) in a fixed-length vector (`STATISTICS` names its entries):

- k-NN estimates of the KL divergence (Wang, Kulkarni & Verdú 2009) at
  `k` in `NEIGHBOURS` on the pooled copula-normal coordinates (each
  coordinate replaced by the normal quantile of its rank in the pooled
  sample `x + y`): ONE invertible map applied to both sets, which the
  KL divergence is unchanged by;
- the same k-NN estimates on a Gaussian reference pair
  (`gaussian_reference`: Gaussian samples with the sizes and the
  (shrunk) sample means and covariances of the copula-normal sets),
  whose divergence is the shrunk plug-in's: the copula estimates minus
  these (`knn_excess_k*` below) measure how far the divergence lies from
  the Gaussian one, with about the same k-NN bias on both sides;
- the Gaussian plug-in KL divergence on the copula-normal and on the
  pooled-standardized coordinates (each coordinate shifted and scaled by
  the mean and standard deviation of `x + y`), with the covariances
  shrunk towards their diagonal so that it stays finite for `n <= d`;
- `plugin_corrected`, the base the pretrained estimator corrects: the
  Gaussian plug-in of the copula-normal coordinates with the
  finite-sample bias of each term under Gaussian data removed
  (`corrected_gaussian_kl`), nearly unbiased where both copula-normal
  samples are Gaussian (any per-coordinate monotone map of Gaussians
  that differ little in their marginals); the shrunk copula plug-in
  where `n < d + 2` or `m < d + 3`;
- the shape of the pooled standardized marginals (mean absolute
  skewness, the mean and the largest log kurtosis over coordinates),
  which tells where the raw-coordinate plug-in can be trusted;
- `d`, `log n`, `log m`.

All neighbour distances come from one query per pair of sets
(`k = max(NEIGHBOURS)`; `keras_msets.stats.nearest_neighbours.
nearest_distances`: sorted points, k-d trees or a blocked distance
matrix by dimension and size), so the
cost is that of two k-NN estimates (the copula-normal pair and its
reference). For
the k-NN statistics, sets larger than `block_size(d)` points are cut
into random blocks of about that many points (the same number of blocks
for `x` and `y`) and the estimates
of the blocks are averaged: the cost then grows linearly with `n`
(neighbour queries slow down with `d`, hence smaller blocks in higher
dimensions), and `log_block` reports the size of one block. The
plug-in and shape statistics use all points.

`pair_statistics(x, y)` is what a model reads (`FEATURES`, the name the
estimators call a statistics module by, `keras_msets.estimators.
refined`): the same vector with every KL estimate `v` replaced by
`sign(v) log(1 + |v|)` (a few are huge for heavy-tailed data), the
excesses `knn_excess_k*` of the copula k-NN estimates over the
reference's (same signed log), and `plugin_corrected` in nats clipped
to [0, 20], the statistic the model corrects (`BASE_FEATURE`).
"""

import numpy as np

from keras_msets.stats.classical import as_samples
from keras_msets.stats.nearest_neighbours import nearest_distances
from keras_msets.stats.ranks import column_order

NEIGHBOURS = (1, 2, 3, 5, 10)
# Smallest distance used in a log-ratio (coordinates have unit scale).
_MIN_DISTANCE = 1e-9
# Seed stream of the Gaussian reference samples ("RE").
_REFERENCE_TAG = 0x5245
STATISTICS = (
    *(f"knn_copula_k{k}" for k in NEIGHBOURS),
    *(f"knn_reference_k{k}" for k in NEIGHBOURS),
    "plugin_copula",
    "plugin_standard",
    "plugin_corrected",
    "mean_abs_skew",
    "mean_log_kurtosis",
    "max_log_kurtosis",
    "dim",
    "log_n",
    "log_m",
    "log_block",
)
# k-NN estimates on the standardized coordinates: computed only on
# request (`kl_statistics(..., standardized_knn=True)`, appended).
STANDARDIZED_KNN = tuple(f"knn_standard_k{k}" for k in NEIGHBOURS)
MIN_POINTS = 10  # each set needs at least this many rows


def block_size(d):
    """Largest set on which the k-NN statistics are computed at once."""
    if d <= 4:
        return 10_000
    return 4_000 if d <= 8 else 2_000


def _check(x, y):
    """`x` and `y` as finite float64 `[n, d]` arrays with the same `d` and
    at least `MIN_POINTS` rows each; clear errors for anything else."""
    x = as_samples("x", x, min_rows=MIN_POINTS)
    y = as_samples("y", y, min_rows=MIN_POINTS)
    if x.shape[1] != y.shape[1]:
        raise ValueError(
            "`x` and `y` must have the same number of columns d. Received: "
            f"x.shape={x.shape}, y.shape={y.shape}"
        )
    return x, y


def copula_normal(x, y):
    """Both sets in pooled copula-normal coordinates.

    Each coordinate of the pooled sample `[x; y]` is replaced by
    `Phi^-1((rank - 1/2) / (n + m))` (ties in a seeded random order,
    `keras_msets.stats.ranks.column_order`): one increasing map per
    coordinate, the same for `x` and `y`.
    """
    from scipy import special

    pooled = np.concatenate([x, y])
    total = pooled.shape[0]
    # Rows of the transposed copy are contiguous: faster sorts.
    order = column_order(np.ascontiguousarray(pooled.T), axis=1)
    grid = special.ndtri((np.arange(total) + 0.5) / total)
    z = np.empty(order.shape)
    np.put_along_axis(z, order, grid[None, :], axis=1)
    z = np.ascontiguousarray(z.T)
    return z[: x.shape[0]], z[x.shape[0] :]


def standardized(x, y):
    """Both sets shifted and scaled by the pooled mean and deviation."""
    pooled = np.concatenate([x, y])
    std = pooled.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    mean = pooled.mean(axis=0)
    return (x - mean) / std, (y - mean) / std


def knn_kl_estimates(x, y, neighbours=NEIGHBOURS):
    """Wang-Kulkarni-Verdú estimates at every `k` of `neighbours`.

    `d / n sum_i log(nu_k(i) / rho_k(i)) + log(m / (n - 1))`, distances
    floored at `_MIN_DISTANCE` (ties); `k` is capped at `n - 1` and `m`.
    Queries on sets of `nearest_neighbours.PARALLEL_POINTS` or more
    points with `d >= 5` use two threads.
    """
    n, d = x.shape
    m = y.shape[0]
    k_max = min(max(neighbours), n - 1, m)
    within = nearest_distances(x, x, k_max + 1)
    between = nearest_distances(y, x, k_max)
    within = np.maximum(within.reshape(n, -1)[:, 1:], _MIN_DISTANCE)
    between = np.maximum(between.reshape(n, -1), _MIN_DISTANCE)
    log_ratio = np.log(between) - np.log(within)
    offset = np.log(m / (n - 1))
    return [
        float(d * log_ratio[:, min(k, k_max) - 1].mean() + offset)
        for k in neighbours
    ]


def _shrunk_fit(a):
    n, d = a.shape
    mean = a.mean(axis=0)
    cov = np.atleast_2d(np.cov(a, rowvar=False, bias=False))
    # Shrinkage towards the diagonal, weight d / (d + n): finite for n <= d.
    weight = d / (d + n)
    cov = (1 - weight) * cov + weight * np.diag(np.diag(cov))
    cov += 1e-6 * np.eye(d)
    return mean, cov


def shrunk_gaussian_kl(x, y):
    """KL divergence of Gaussians fitted to `x` and `y` (shrunk
    covariances), in nats."""
    mean_p, cov_p = _shrunk_fit(x)
    mean_q, cov_q = _shrunk_fit(y)
    d = x.shape[1]
    chol_q = np.linalg.cholesky(cov_q)
    solve = np.linalg.solve
    trace = np.trace(solve(chol_q.T, solve(chol_q, cov_p)))
    delta = solve(chol_q, mean_q - mean_p)
    logdet_q = 2 * np.sum(np.log(np.diag(chol_q)))
    logdet_p = np.linalg.slogdet(cov_p)[1]
    return float(0.5 * (trace + delta @ delta - d + logdet_q - logdet_p))


def corrected_gaussian_kl(x, y):
    """KL divergence of Gaussians fitted to `x` and `y`, each term with its
    finite-sample bias under Gaussian data removed (nan where `n < d + 2`
    or `m < d + 3`, or a covariance is singular).

    With `S_x`, `S_y` the unbiased sample covariances (`n - 1`, `m - 1`
    degrees of freedom), `c = (m - 1) / (m - d - 2)` (`E[S_y^-1] = c
    Sigma_y^-1`) and `delta` the difference of the sample means:
    `t = tr(S_y^-1 S_x) / c` is unbiased for `tr(Sigma_y^-1 Sigma_x)`,
    `delta' S_y^-1 delta / c - t / n - d / m` for the mean term, and each
    log-determinant loses its Wishart bias (`mi_statistics.log_det_bias`,
    Misra, Singh & Demchuk 2005), so the estimate is unbiased for
    Gaussian `P` and `Q`. Not clipped at 0.
    """
    from keras_msets.stats.mi_statistics import log_det_bias

    n, d = x.shape
    m = y.shape[0]
    if n < d + 2 or m < d + 3:
        return float("nan")
    cov_x = np.atleast_2d(np.cov(x, rowvar=False))
    cov_y = np.atleast_2d(np.cov(y, rowvar=False))
    sign_x, logdet_x = np.linalg.slogdet(cov_x)
    sign_y, logdet_y = np.linalg.slogdet(cov_y)
    if sign_x <= 0 or sign_y <= 0:
        return float("nan")
    if not np.isfinite(logdet_x + logdet_y):
        return float("nan")
    inverse_factor = (m - 1) / (m - d - 2)
    try:
        solved = np.linalg.solve(cov_y, cov_x)
        delta = y.mean(axis=0) - x.mean(axis=0)
        mahalanobis = delta @ np.linalg.solve(cov_y, delta)
    except np.linalg.LinAlgError:
        return float("nan")
    trace = np.trace(solved) / inverse_factor
    mean_term = mahalanobis / inverse_factor - trace / n - d / m
    logdet_y -= log_det_bias(d, m - 1)
    logdet_x -= log_det_bias(d, n - 1)
    return float(0.5 * (trace + mean_term - d + logdet_y - logdet_x))


def gaussian_reference(x, y, seed=0, draw=0):
    """Gaussian samples of the sizes of `x` and `y` with their (shrunk)
    sample means and covariances, from a seed fixed by `seed`, `draw`
    and the shapes: the pair whose KL divergence the shrunk plug-in
    gives exactly."""
    n, d = x.shape
    m = y.shape[0]
    key = [_REFERENCE_TAG, seed, n, m, d] + ([draw] if draw else [])
    rng = np.random.default_rng(key)
    out = []
    for rows, part in ((n, x), (m, y)):
        mean, cov = _shrunk_fit(part)
        chol = np.linalg.cholesky(cov)
        out.append(rng.normal(size=(rows, d)) @ chol.T + mean)
    return out[0], out[1]


def _shape(pooled):
    """Mean |skewness|, mean and largest log kurtosis of the columns.

    A constant column (every value equal) has no defined skewness or
    kurtosis; it counts as Gaussian (skewness 0, kurtosis 3), as the
    copula-normal coordinates see it (its tied values ranked at random
    are normal scores).
    """
    constant = np.ptp(pooled, axis=0) == 0
    centred = pooled - pooled.mean(axis=0)
    centred[:, constant] = 0.0
    squared = centred * centred  # products: powers cost a pow() each
    var = np.where(constant, 1.0, squared.mean(axis=0))
    skew = (squared * centred).mean(axis=0) / var**1.5
    kurt = np.where(constant, 3.0, (squared * squared).mean(axis=0) / var**2)
    log_kurt = np.log(np.maximum(kurt, 1e-3))
    return [
        float(np.mean(np.abs(skew))),
        float(np.mean(log_kurt)),
        float(np.max(log_kurt)),
    ]


def _blocked_knn(x, y, seed, neighbours=NEIGHBOURS, points=None):
    """`knn_kl_estimates` averaged over random blocks of at most `points`
    rows (default `block_size(d)`), and the block size."""
    points = block_size(x.shape[1]) if points is None else points
    blocks = int(np.ceil(max(x.shape[0], y.shape[0]) / points))
    blocks = min(blocks, x.shape[0] // MIN_POINTS, y.shape[0] // MIN_POINTS)
    if blocks <= 1:
        return np.array(knn_kl_estimates(x, y, neighbours)), x.shape[0]
    rng = np.random.default_rng(seed)
    parts_x = np.array_split(rng.permutation(x.shape[0]), blocks)
    parts_y = np.array_split(rng.permutation(y.shape[0]), blocks)
    estimates = [
        knn_kl_estimates(x[i], y[j], neighbours)
        for i, j in zip(parts_x, parts_y, strict=True)
    ]
    return np.mean(estimates, axis=0), x.shape[0] / blocks


def kl_statistics(x, y, seed=0, standardized_knn=False):
    """The statistics `STATISTICS` of one pair, a float64 vector.

    Args:
        x: Samples of `P`, array `[n, d]` with `n >= MIN_POINTS`.
        y: Samples of `Q`, array `[m, d]` with `m >= MIN_POINTS`.
        seed: Seed of the random split into blocks (used only when a set
            has more than `block_size(d)` rows) and of the Gaussian
            reference pair.
        standardized_knn: whether to append the k-NN estimates on the
            standardized coordinates (`STANDARDIZED_KNN`; the models do
            not read them).

    Returns:
        float64 array `[len(STATISTICS)]` (plus `len(STANDARDIZED_KNN)`).
    """
    x, y = _check(x, y)
    cx, cy = copula_normal(x, y)
    sx, sy = standardized(x, y)
    knn_copula, block = _blocked_knn(cx, cy, seed)
    rx, ry = gaussian_reference(cx, cy, seed)
    knn_reference, _ = _blocked_knn(rx, ry, seed)
    plugin_copula = shrunk_gaussian_kl(cx, cy)
    corrected = corrected_gaussian_kl(cx, cy)
    if not np.isfinite(corrected):
        corrected = plugin_copula
    values = [
        *knn_copula,
        *knn_reference,
        plugin_copula,
        shrunk_gaussian_kl(sx, sy),
        corrected,
        *_shape(np.concatenate([sx, sy])),
        x.shape[1],
        np.log(x.shape[0]),
        np.log(y.shape[0]),
        np.log(block),
    ]
    if standardized_knn:
        values.extend(_blocked_knn(sx, sy, seed)[0])
    return np.array(values, dtype=np.float64)


# The statistics that are KL estimates (they can be large or negative):
# the model reads them through a signed log, `sign(v) log(1 + |v|)`.
_ESTIMATES = [
    i for i, name in enumerate(STATISTICS) if name.startswith(("knn", "plugin"))
]
_BASE = "plugin_corrected"
BASE_FEATURE = "base_plugin_corrected"
EXCESS = tuple(f"knn_excess_k{k}" for k in NEIGHBOURS)
FEATURES = (*STATISTICS, *EXCESS, BASE_FEATURE)


def _signed_log(values):
    return np.sign(values) * np.log1p(np.abs(values))


def model_inputs(statistics):
    """The model's input rows (`FEATURES`) from rows of `kl_statistics`
    (`[rows, len(STATISTICS)]`; columns beyond those are ignored): the
    KL estimates through a signed log,
    the excess of each copula k-NN estimate over the Gaussian
    reference's (same signed log), and the base in nats clipped to
    [0, 20]."""
    statistics = np.array(statistics, dtype=np.float64, ndmin=2)
    statistics = statistics[:, : len(STATISTICS)]
    base = np.clip(statistics[:, STATISTICS.index(_BASE)], 0.0, 20.0)
    copula = [STATISTICS.index(f"knn_copula_k{k}") for k in NEIGHBOURS]
    reference = [STATISTICS.index(f"knn_reference_k{k}") for k in NEIGHBOURS]
    excess = statistics[:, copula] - statistics[:, reference]
    statistics[:, _ESTIMATES] = _signed_log(statistics[:, _ESTIMATES])
    return np.concatenate(
        [statistics, _signed_log(excess), base[:, None]], axis=1
    )


def pair_statistics(x, y, seed=0):
    """The model's input vector (`FEATURES`) of one pair."""
    return model_inputs(kl_statistics(x, y, seed=seed))[0]
