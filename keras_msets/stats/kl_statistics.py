"""Cheap statistics of a sample pair that a small model maps to `KL(P || Q)`.

`kl_statistics(x, y)` summarizes `x ~ P` (`[n, d]`) and `y ~ Q`
(`[m, d]`) in a fixed-length vector (`STATISTICS` names its entries):

- k-NN estimates of the KL divergence (Wang, Kulkarni & Verdú 2009) at
  `k` in `NEIGHBOURS`, on two coordinate systems obtained by ONE
  invertible map applied to both sets (the KL divergence is unchanged by
  such a map): the pooled copula-normal coordinates (each coordinate
  replaced by the normal quantile of its rank in the pooled sample
  `x + y`) and the pooled-standardized coordinates (each coordinate
  shifted and scaled by the mean and standard deviation of `x + y`);
- the Gaussian plug-in KL divergence on both coordinate systems, with
  the covariances shrunk towards their diagonal so that it stays finite
  for `n <= d`;
- the shape of the pooled marginals (mean absolute skewness, the mean
  and the largest log kurtosis over coordinates), which tells where the
  raw-coordinate statistics can be trusted;
- `d`, `log n`, `log m`.

All neighbour distances come from one query per coordinate system and
set (`scipy.spatial.cKDTree`, `k = max(NEIGHBOURS)`), so the cost is
that of two k-NN estimates. For the k-NN statistics, sets larger than
`block_size(d)` points are cut into random blocks of about that many
points (the same number of blocks for `x` and `y`) and the estimates
of the blocks are averaged: the cost then grows linearly with `n`
(k-d trees slow down quickly with `d`, hence smaller blocks in higher
dimensions), and `log_block` reports the size of one block. The
plug-in and shape statistics use all points.

`pair_statistics(x, y)` is what a model reads (`FEATURES`, the name the
estimators call a statistics module by, `keras_msets.estimators.
refined`): the same vector with every KL estimate `v` replaced by
`sign(v) log(1 + |v|)` (a few are huge for heavy-tailed data), plus the
copula k-NN estimate at k = 3 in nats (clipped to [-1, 20]), the
statistic the model corrects (`BASE_FEATURE`).
"""

import numpy as np

from keras_msets.stats.classical import as_samples

NEIGHBOURS = (1, 2, 3, 5, 10)
# k-NN queries on sets of at least this many points in d >= 5 run on two
# threads (the same distances; k-d trees in higher d cost about n^2 d).
PARALLEL_POINTS = 500
# Smallest distance used in a log-ratio (coordinates have unit scale).
_MIN_DISTANCE = 1e-9
STATISTICS = (
    *(f"knn_copula_k{k}" for k in NEIGHBOURS),
    *(f"knn_standard_k{k}" for k in NEIGHBOURS),
    "plugin_copula",
    "plugin_standard",
    "mean_abs_skew",
    "mean_log_kurtosis",
    "max_log_kurtosis",
    "dim",
    "log_n",
    "log_m",
    "log_block",
)
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
    `Phi^-1((rank - 1/2) / (n + m))` (ties broken by order): one
    increasing map per coordinate, the same for `x` and `y`.
    """
    from scipy import special

    pooled = np.concatenate([x, y])
    total = pooled.shape[0]
    order = np.argsort(pooled, axis=0, kind="stable")
    ranks = np.empty_like(order)
    columns = np.arange(pooled.shape[1])
    ranks[order, columns[None, :]] = np.arange(total)[:, None]
    z = special.ndtri((ranks + 0.5) / total)
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
    Queries on sets of `PARALLEL_POINTS` or more points with `d >= 5` use
    two threads.
    """
    from scipy.spatial import cKDTree

    n, d = x.shape
    m = y.shape[0]
    k_max = min(max(neighbours), n - 1, m)
    workers = 2 if d >= 5 and max(n, m) >= PARALLEL_POINTS else 1
    within, _ = cKDTree(x).query(x, k=k_max + 1, workers=workers)
    between, _ = cKDTree(y).query(x, k=k_max, workers=workers)
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


def _shape(pooled):
    centred = pooled - pooled.mean(axis=0)
    var = np.maximum((centred**2).mean(axis=0), 1e-300)
    skew = (centred**3).mean(axis=0) / var**1.5
    kurt = (centred**4).mean(axis=0) / var**2
    log_kurt = np.log(np.maximum(kurt, 1e-3))
    return [
        float(np.mean(np.abs(skew))),
        float(np.mean(log_kurt)),
        float(np.max(log_kurt)),
    ]


def _blocked_knn(x, y, seed):
    """`knn_kl_estimates` averaged over random blocks, and the block size."""
    blocks = int(np.ceil(max(x.shape[0], y.shape[0]) / block_size(x.shape[1])))
    blocks = min(blocks, x.shape[0] // MIN_POINTS, y.shape[0] // MIN_POINTS)
    if blocks <= 1:
        return np.array(knn_kl_estimates(x, y)), x.shape[0]
    rng = np.random.default_rng(seed)
    parts_x = np.array_split(rng.permutation(x.shape[0]), blocks)
    parts_y = np.array_split(rng.permutation(y.shape[0]), blocks)
    estimates = [
        knn_kl_estimates(x[i], y[j])
        for i, j in zip(parts_x, parts_y, strict=True)
    ]
    return np.mean(estimates, axis=0), x.shape[0] / blocks


def kl_statistics(x, y, seed=0):
    """The statistics `STATISTICS` of one pair, a float64 vector.

    Args:
        x: Samples of `P`, array `[n, d]` with `n >= MIN_POINTS`.
        y: Samples of `Q`, array `[m, d]` with `m >= MIN_POINTS`.
        seed: Seed of the random split into blocks (used only when a set
            has more than `block_size(d)` rows).

    Returns:
        float64 array `[len(STATISTICS)]`.
    """
    x, y = _check(x, y)
    cx, cy = copula_normal(x, y)
    sx, sy = standardized(x, y)
    knn_copula, block = _blocked_knn(cx, cy, seed)
    knn_standard, _ = _blocked_knn(sx, sy, seed)
    return np.array(
        [
            *knn_copula,
            *knn_standard,
            shrunk_gaussian_kl(cx, cy),
            shrunk_gaussian_kl(sx, sy),
            *_shape(np.concatenate([sx, sy])),
            x.shape[1],
            np.log(x.shape[0]),
            np.log(y.shape[0]),
            np.log(block),
        ]
    )


# The statistics that are KL estimates (they can be large or negative):
# the model reads them through a signed log, `sign(v) log(1 + |v|)`.
_ESTIMATES = [
    i for i, name in enumerate(STATISTICS) if name.startswith(("knn", "plugin"))
]
_BASE = "knn_copula_k3"
BASE_FEATURE = "base_knn_copula_k3"
FEATURES = (*STATISTICS, BASE_FEATURE)


def model_inputs(statistics):
    """The model's input rows (`FEATURES`) from rows of `kl_statistics`
    (`[rows, len(STATISTICS)]`)."""
    statistics = np.array(statistics, dtype=np.float64, ndmin=2)
    base = np.clip(statistics[:, STATISTICS.index(_BASE)], -1.0, 20.0)
    values = statistics[:, _ESTIMATES]
    statistics[:, _ESTIMATES] = np.sign(values) * np.log1p(np.abs(values))
    return np.concatenate([statistics, base[:, None]], axis=1)


def pair_statistics(x, y, seed=0):
    """The model's input vector (`FEATURES`) of one pair."""
    return model_inputs(kl_statistics(x, y, seed=seed))[0]
