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
(`k = max(NEIGHBOURS)`; `nearest_distances`: from the sorted points in
one dimension, `scipy.spatial.cKDTree` in `d = 2..BRUTE_MIN_DIM`, and
above, on sets of at most `BRUTE_POINTS` points, where a k-d tree is
slower than comparing every pair, a blocked distance matrix), so the
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

import os

import numpy as np

from keras_msets.stats.classical import as_samples

NEIGHBOURS = (1, 2, 3, 5, 10)
# k-NN queries on sets of at least this many points in d >= 5 run on two
# threads (the same distances).
PARALLEL_POINTS = 500
# Queries in d > BRUTE_MIN_DIM on sets of at most BRUTE_POINTS points
# compare every pair (`nearest_distances`); k-d trees elsewhere.
BRUTE_MIN_DIM = 4
BRUTE_POINTS = 20_000
# Rows of the distance matrix per block, and the candidates beyond k kept
# from the float32 distances before the exact float64 ones decide.
_BRUTE_ROWS = 256
_BRUTE_EXTRA = 4
# Columns per group in the first pass over a block of the distance matrix.
_BRUTE_GROUP = 8
# Smallest distance used in a log-ratio (coordinates have unit scale).
_MIN_DISTANCE = 1e-9
# The pool of `_two_threads`: (process id, executor).
_POOL = None
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
    `Phi^-1((rank - 1/2) / (n + m))` (ties broken by order): one
    increasing map per coordinate, the same for `x` and `y`.
    """
    from scipy import special

    pooled = np.concatenate([x, y])
    total = pooled.shape[0]
    # Rows of the transposed copy are contiguous: faster sorts.
    order = np.argsort(pooled.T, axis=1, kind="stable")
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


def _group_size(m, take):
    """Columns per group of `_brute_block`'s first pass: about
    `_BRUTE_GROUP`, and at least `take` groups."""
    return max(1, min(_BRUTE_GROUP, m // take))


def _smallest(scores, take):
    """Flat indices `[rows, take]` (into `scores.ravel()`) of the `take`
    smallest entries of each row of `scores`, in no order."""
    rows, columns = scores.shape
    kth = np.partition(scores, take - 1, axis=1)[:, take - 1 : take]
    flat = np.flatnonzero(scores <= kth)
    if flat.size == rows * take:
        return flat.reshape(rows, take)
    # Equal scores at the boundary.
    found = np.argpartition(scores, take - 1, axis=1)[:, :take]
    return found + columns * np.arange(rows)[:, None]


def _brute_block(queries, points, scaled, norms, k, group, center):
    """Sorted distances of the `k` nearest `points` to each row of
    `queries`.

    Candidates from float32 squared distances less the queries' norms,
    `(queries - center) @ scaled.T + norms` (`scaled`: `-2 (points -
    center)`, and `norms` its rows' squared norms, both float32 and
    padded to a multiple of `group` rows with zeros and `inf`; `center`:
    the mean of `points`, which keeps the float32 scores small where the
    points lie far from the origin): the columns fall into groups `j,
    j + G, j + 2 G, ...` (`G` groups of `group` columns); the `take = k +
    _BRUTE_EXTRA` groups of smallest minimum hold `take` columns at least
    as small as any other column, so the `take` best among their columns
    are the `take` best of all. The exact float64 distances of those `take`
    columns are then sorted.
    """
    m = points.shape[0]
    take = min(k + _BRUTE_EXTRA, m)
    rows = queries.shape[0]
    if take < m:
        scores = (queries - center).astype(np.float32) @ scaled.T
        scores += norms
        padded = scores.shape[1]
        if group > 1:
            width = padded // group
            least = scores.reshape(rows, group, width).min(axis=1)
            # Flat indices of the groups' columns in `scores`.
            best = _smallest(least, take)
            best += (padded - width) * (best // width)
            flat = best[:, :, None] + width * np.arange(group)
            flat = flat.reshape(rows, -1)
            flat = flat.ravel()[_smallest(scores.ravel()[flat], take)]
        else:
            flat = _smallest(scores, take)
        columns = flat % padded
    else:
        columns = np.broadcast_to(np.arange(m), (rows, m))
    diff = points[columns] - queries[:, None, :]
    distances = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
    distances.sort(axis=1)
    return distances[:, :k]


def _line_distances(points, queries, k):
    """`nearest_distances` in one dimension: the `k` nearest of the sorted
    `points` lie among the `2 k` around each query's place in them."""
    line = np.sort(points[:, 0])
    values = queries[:, 0]
    m = line.shape[0]
    width = min(2 * k, m)
    start = np.clip(np.searchsorted(line, values) - k, 0, m - width)
    window = line[start[:, None] + np.arange(width)]
    distances = np.abs(window - values[:, None])
    distances.sort(axis=1)
    return distances[:, :k]


def _two_threads():
    """A pool of two threads kept for the process (a new one after a
    fork: the threads of the parent do not exist in a child)."""
    global _POOL
    pid = os.getpid()
    if _POOL is None or _POOL[0] != pid:
        from concurrent.futures import ThreadPoolExecutor

        _POOL = (pid, ThreadPoolExecutor(2, "kl_statistics"))
    return _POOL[1]


def nearest_distances(points, queries, k, brute=None):
    """`[len(queries), k]` sorted Euclidean distances from each query row
    to its `k` nearest rows of `points` (a row of `points` equal to the
    query included, at distance 0).

    In one dimension from the sorted `points`; else by `scipy.spatial.
    cKDTree`, or (`brute=None`: in `d > BRUTE_MIN_DIM` on sets of at most
    `BRUTE_POINTS` points) by blocks of a distance matrix
    (`_brute_block`): the same distances up to rounding where no two
    candidates lie within float32 precision of each other. Sets of
    `PARALLEL_POINTS` or more in `d >= 5` use two threads.
    """
    n, d = queries.shape
    m = points.shape[0]
    if d == 1 and brute is None and k <= m:
        return _line_distances(points, queries, k)
    parallel = d >= 5 and max(n, m) >= PARALLEL_POINTS
    if brute is None:
        brute = d > BRUTE_MIN_DIM and max(n, m) <= BRUTE_POINTS
    if not brute:
        from scipy.spatial import cKDTree

        found, _ = cKDTree(points).query(
            queries, k=k, workers=2 if parallel else 1
        )
        return found.reshape(n, k)
    group = _group_size(m, min(k + _BRUTE_EXTRA, m))
    center = points.mean(axis=0)
    padded = np.zeros((-(-m // group) * group, d), dtype=np.float32)
    padded[:m] = points - center
    norms = np.einsum("ij,ij->i", padded, padded)
    norms[m:] = np.inf
    padded *= -2

    def block(start):
        part = queries[start : start + _BRUTE_ROWS]
        return _brute_block(part, points, padded, norms, k, group, center)

    starts = range(0, n, _BRUTE_ROWS)
    if parallel and n > _BRUTE_ROWS:
        return np.concatenate(list(_two_threads().map(block, starts)))
    return np.concatenate([block(start) for start in starts])


def knn_kl_estimates(x, y, neighbours=NEIGHBOURS):
    """Wang-Kulkarni-Verdú estimates at every `k` of `neighbours`.

    `d / n sum_i log(nu_k(i) / rho_k(i)) + log(m / (n - 1))`, distances
    floored at `_MIN_DISTANCE` (ties); `k` is capped at `n - 1` and `m`.
    Queries on sets of `PARALLEL_POINTS` or more points with `d >= 5` use
    two threads.
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
    centred = pooled - pooled.mean(axis=0)
    squared = centred * centred  # products: powers cost a pow() each
    var = np.maximum(squared.mean(axis=0), 1e-300)
    skew = (squared * centred).mean(axis=0) / var**1.5
    kurt = (squared * squared).mean(axis=0) / var**2
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
