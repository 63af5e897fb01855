"""The `k` nearest distances of query points among a set of points.

`nearest_distances` answers from the sorted points in one dimension,
`scipy.spatial.cKDTree` in `d = 2..BRUTE_MIN_DIM`, and above, on sets of
at most `BRUTE_POINTS` points (where a k-d tree is slower than comparing
every pair), from a blocked distance matrix; the k-NN statistics of
`keras_msets.stats.kl_statistics` call it.
"""

import os

import numpy as np

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
# The pool of `two_threads`: (process id, executor).
_POOL = None


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


def two_threads():
    """A pool of two threads kept for the process (a new one after a
    fork: the threads of the parent do not exist in a child), shared by
    the k-NN queries here and the KSG estimates of
    `keras_msets.stats.mi_statistics`. A job run on it must not wait for
    another job of the pool."""
    global _POOL
    pid = os.getpid()
    if _POOL is None or _POOL[0] != pid:
        from concurrent.futures import ThreadPoolExecutor

        _POOL = (pid, ThreadPoolExecutor(2, "keras_msets_statistics"))
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
        return np.concatenate(list(two_threads().map(block, starts)))
    return np.concatenate([block(start) for start in starts])
