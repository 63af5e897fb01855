"""KSG estimates of mutual information (Kraskov, Stögbauer & Grassberger
2004, algorithm 1, max-norm) at several `k`, the counts that
`keras_msets.stats.mi_statistics` builds its statistics from.

The neighbour counts come from dense max-norm distance matrices
(float32 arithmetic, a few rows at a time); with one column per side,
or above `MAX_DENSE` rows, from k-d trees and sorted columns (float64).
"""

import numpy as np

# The `k` of the statistics' KSG estimates.
NEIGHBOURS = (1, 3, 10)
# Samples above this many rows get their KSG counts from k-d trees
# (`ksg_estimates`), never from dense distance matrices.
MAX_DENSE = 2048
# The dense KSG holds the distances of a few rows at once: about this many
# float32 entries over its buffers (in cache), at least 16 rows; a row
# costs `DENSE_ROW_ENTRIES` entries per column of the sample (three
# float32 buffers and one float64).
DENSE_ENTRIES = 1 << 19
DENSE_ROW_ENTRIES = 5
# Leaves of the k-d trees that count the marginal neighbours in
# `_ksg_tree`: `SIDE_LEAF` points per column of the side, at most
# `MAX_SIDE_LEAF` (the same counts as any leaf size, found faster: the
# counts grow with n, and larger leaves cut the tree walk around each).
SIDE_LEAF = 16
MAX_SIDE_LEAF = 128


def _exact_float32(a):
    """`a` rounded to float32 and held in float64 (`[n, d]`, C order).

    The difference of two such numbers whose exponents differ by at most
    29 is exact in float64 (always so for the copula-normal coordinates
    of the statistics, which lie within about 1e-5 and 4.5 in absolute
    value or are 0), so its float64 max-norm distances rounded to
    float32 are those of float32 arithmetic, bit for bit: IEEE
    subtraction is correctly rounded, and rounding never reverses an
    order, so the maximum commutes with it. Otherwise the difference is
    rounded twice, which can differ by one unit in the last place at a
    halfway case."""
    return np.ascontiguousarray(a, dtype=np.float32).astype(np.float64)


def _max_norm_rows(a, start, stop, buffer, out):
    """Max-norm distances of rows `start:stop` of `a` (`_exact_float32`)
    to all its rows into `out` (`[stop - start, n]`, float32), through the
    float64 `buffer` (`[>= stop - start, n]`): one pass over the
    coordinates in compiled code (`scipy.spatial.distance.cdist`, which
    releases the GIL), then one rounding to float32."""
    from scipy.spatial.distance import cdist

    part = buffer[: stop - start]
    cdist(a[start:stop], a, "chebyshev", out=part)
    np.copyto(out, part, casting="same_kind")


def _max_norm_distances(a, rows=32):
    """`[n, n]` max-norm distances (float32 arithmetic, as the KSG counts
    use them), `rows` rows at a time."""
    a = _exact_float32(a)
    n = a.shape[0]
    out = np.empty((n, n), dtype=np.float32)
    buffer = np.empty((min(rows, n), n), dtype=np.float64)
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        _max_norm_rows(a, start, stop, buffer, out[start:stop])
    return out


def _ksg_tree(x, y, neighbours, queries=None):
    """`ksg_estimates` from k-d trees (float64): joint neighbours from a
    tree of `[x, y]`, marginal counts from sorted columns (one column,
    about n log n) or a tree of the side (faster-growing than n in a few
    columns: the counts and the walk around each box grow with n, about
    2.5x per doubling at d_x = d_y = 3;
    benchmarks/refined_mi_ksg_profile.py)."""
    from scipy.spatial import cKDTree
    from scipy.special import digamma

    n = x.shape[0]
    m = n if queries is None else min(int(queries), n)
    k_max = min(max(neighbours), n - 1)
    joint = np.concatenate([x, y], axis=1)
    tree = cKDTree(joint)
    nearest = tree.query(joint[:m], k=k_max + 1, p=np.inf)[0][:, 1:]
    sides = []
    for side in (x, y):
        if side.shape[1] == 1:
            sides.append((side[:m, 0], np.sort(side[:, 0]), None))
        else:
            leaf = min(SIDE_LEAF * side.shape[1], MAX_SIDE_LEAF)
            sides.append((side[:m], None, cKDTree(side, leafsize=leaf)))
    out = []
    for k in neighbours:
        k = min(k, k_max)
        # Strictly closer: the neighbour that sets the radius lies at
        # exactly that distance in one column, which `column + radius`
        # may round past; a relative margin of 1e-9 keeps it out.
        radius = nearest[:, k - 1] * (1 - 1e-9)
        value = digamma(k) + digamma(n)
        for points, ordered, tree in sides:
            if tree is None:
                # Points strictly closer than the radius, self excluded.
                count = np.searchsorted(ordered, points + radius, "left")
                count -= np.searchsorted(ordered, points - radius, "right")
            else:
                count = tree.query_ball_point(
                    points, radius, p=np.inf, return_length=True
                )
            value -= np.mean(digamma(count))
        out.append(float(value))
    return out


def ksg_estimates(x, y, neighbours=NEIGHBOURS, rows=None, queries=None):
    """KSG (algorithm 1, max-norm) at every `k` of `neighbours` (capped at
    `n - 1`), from dense max-norm distances (float32), `rows` rows at a
    time (None: as many as keep about `DENSE_ENTRIES` entries in the
    buffers, which then stay in cache); with one column per side, or
    above `MAX_DENSE` rows, from a k-d tree and sorted columns (the same
    counts in float64). With `queries`, the mean over the first `queries`
    rows only (their neighbours still counted among all `n` rows): KSG of
    all `n` rows, from a subset of its terms."""
    from scipy.special import digamma

    n = x.shape[0]
    if (x.shape[1] == 1 and y.shape[1] == 1) or n > MAX_DENSE:
        return _ksg_tree(x, y, neighbours, queries)
    m = n if queries is None else min(int(queries), n)
    ex, ey = _exact_float32(x), _exact_float32(y)
    k_max = min(max(neighbours), n - 1)
    ks = [min(k, k_max) for k in neighbours]
    if rows is None:
        rows = max(DENSE_ENTRIES // (DENSE_ROW_ENTRIES * n), 16)
    rows = min(rows, m)
    buffer = np.empty((rows, n), dtype=np.float64)
    dx, dy, joint = np.empty((3, rows, n), dtype=np.float32)
    count_x, count_y = np.empty((2, len(ks), m), dtype=np.int64)
    for start in range(0, m, rows):
        stop = min(start + rows, m)
        size = stop - start
        _max_norm_rows(ex, start, stop, buffer, dx[:size])
        _max_norm_rows(ey, start, stop, buffer, dy[:size])
        part = np.maximum(dx[:size], dy[:size], out=joint[:size])
        within = np.arange(size)
        part[within, np.arange(start, stop)] = np.inf
        # The k_max smallest joint distances of each row, in order: the
        # smallest taken out k_max times (one entry each, so ties count
        # as often as they occur), far cheaper than a partition.
        nearest = np.empty((size, k_max), dtype=np.float32)
        for j in range(k_max):
            where = np.argmin(part, axis=1)
            nearest[:, j] = part[within, where]
            part[within, where] = np.inf
        for i, k in enumerate(ks):
            radius = nearest[:, k - 1 : k]
            # Points strictly closer than the k-th joint neighbour, self
            # excluded (its distance 0 is always counted).
            count_x[i, start:stop] = np.count_nonzero(dx[:size] < radius, 1)
            count_y[i, start:stop] = np.count_nonzero(dy[:size] < radius, 1)
    count_x -= 1
    count_y -= 1
    out = []
    for i, k in enumerate(ks):
        value = digamma(k) + digamma(n)
        value -= np.mean(digamma(count_x[i] + 1) + digamma(count_y[i] + 1))
        out.append(float(value))
    return out
