"""Classical nearest-neighbour estimators of KL divergence and mutual info.

These are the baselines of the statistical-distance experiments of Selby et
al. (2022, Sec. 5.1): the k-nearest-neighbour KL divergence estimator of
Wang, Kulkarni & Verdú (2009) (the "KNN" row of Table 1) and the first
mutual-information estimator of Kraskov, Stögbauer & Grassberger (2004)
(the Kraskov curve of Fig. 2). Both work on plain numpy arrays, one sample
per row, and use `scipy.spatial.cKDTree` for every neighbour search.

`knn_kl_divergence` and `ksg_mutual_information` take one pair of sample
arrays; `knn_kl_divergence_sets` and `ksg_mutual_information_sets` apply
them to a batch of padded sets with boolean masks, the format of the
generators in `keras_msets.data.mixtures`.
"""

import numbers

import numpy as np


def _scipy():
    """`(cKDTree, digamma)`, imported on first use: `import keras_msets`
    does not need scipy."""
    from scipy.spatial import cKDTree
    from scipy.special import digamma

    return cKDTree, digamma


def _check_k(k):
    if not isinstance(k, numbers.Integral) or isinstance(k, bool) or k < 1:
        raise ValueError(f"`k` must be a positive integer. Received: k={k!r}")
    return int(k)


def refuse_masked(name, value):
    """Raises a `ValueError` for a numpy masked array with masked entries:
    `np.asarray` would keep the values under the mask, so the estimate
    would silently include the entries meant to be left out."""
    if isinstance(value, np.ma.MaskedArray) and np.ma.count_masked(value):
        raise ValueError(
            f"`{name}` is a masked array with {np.ma.count_masked(value)} "
            "masked entries; the estimators read every value, masked or "
            "not. Pass the complete rows instead (for one set, "
            f"`{name}[~np.ma.getmaskarray({name}).any(axis=1)]`; for "
            "paired samples, the rows complete in both). Received: "
            f"{name} of type {type(value).__name__}"
        )


def _check_real(name, value):
    """Raises a `TypeError` for complex input (a float64 conversion would
    drop the imaginary parts without a word) and a `ValueError` for a
    masked array with masked entries (`refuse_masked`)."""
    refuse_masked(name, value)
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        try:
            dtype = np.asarray(value).dtype
        except (TypeError, ValueError):
            return
    if np.dtype(dtype).kind == "c":
        raise TypeError(
            f"`{name}` must hold real numbers; complex samples are not "
            "supported (pass the real and imaginary parts as separate "
            f"coordinates). Received: {name} of dtype {dtype}"
        )


def _rescaled(x, y):
    """`x` and `y` divided by the largest absolute value of both: one
    positive factor, which the estimators here are invariant to, keeps
    the distances finite and normal for values near the float64 limits
    (1e155 and above, 1e-300 and below)."""
    scale = max(np.max(np.abs(x), initial=0.0), np.max(np.abs(y), initial=0))
    if scale == 0.0:
        return x, y
    return x / scale, y / scale


def as_samples(name, value, min_rows=1):
    """`value` as a finite float64 array `[n, d]` with `n >= min_rows`.

    Raises a `TypeError` for complex input and a `ValueError` naming
    `name` for anything else that is not such an array.
    """
    _check_real(name, value)
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"`{name}` must be a 2-D array of real numbers "
            f"`[num_samples, dim]`. Received: {name} of type "
            f"{type(value).__name__} ({error})"
        ) from None
    if array.ndim != 2 or array.shape[1] < 1:
        raise ValueError(
            f"`{name}` must be a 2-D array `[num_samples, dim]` with "
            f"dim >= 1. Received: {name}.shape={array.shape}"
        )
    if array.shape[0] < min_rows:
        raise ValueError(
            f"`{name}` must have at least {min_rows} rows. Received: "
            f"{name}.shape={array.shape}"
        )
    if not np.all(np.isfinite(array)):
        bad = int(np.count_nonzero(~np.isfinite(array)))
        raise ValueError(
            f"`{name}` must contain only finite values. Received: {name} "
            f"with {bad} non-finite entries (NaN or inf)"
        )
    return array


def as_sample_pair(x, y, axis, what):
    """`x` and `y` as sample arrays that agree along `axis` (`what` names
    that length in the error: "number of columns", ...)."""
    x = as_samples("x", x)
    y = as_samples("y", y)
    if x.shape[axis] != y.shape[axis]:
        raise ValueError(
            f"`x` and `y` must have the same {what}. "
            f"Received: x.shape={x.shape}, y.shape={y.shape}"
        )
    return x, y


def _check_pair(k, x, y, axis, what):
    """`(k, x, y)` checked; `x` and `y` must agree along `axis` (`what`
    names that length in the error)."""
    k = _check_k(k)
    x, y = as_sample_pair(x, y, axis, what)
    return k, x, y


def _kth_positive_distance(tree, points, k, exclude_self):
    """Distance from each point to its k-th neighbour at a positive distance.

    Returns `(distances, orders)`: `orders[i] = max(k, z_i + 1)` where
    `z_i` is the number of tree points at distance 0 from `points[i]` (not
    counting `points[i]` itself when `exclude_self`), and `distances[i]` is
    the distance to the `orders[i]`-th neighbour, which is positive. With no
    ties `orders == k` and `distances` are the usual k-NN distances. Points
    with no neighbour at a positive distance get `orders = -1`.
    """
    num_tree = tree.n - (1 if exclude_self else 0)
    zeros = tree.query_ball_point(points, r=0.0, return_length=True)
    zeros = np.asarray(zeros, dtype=np.int64) - (1 if exclude_self else 0)
    orders = np.maximum(k, zeros + 1)
    distances = np.zeros(len(points))
    for order in np.unique(orders):
        rows = np.flatnonzero(orders == order)
        if order > num_tree:
            orders[rows] = -1
            continue
        # Querying with the point itself in the tree: its own zero distance
        # comes first, so the (order + 1)-th distance is the order-th other.
        column = order + (1 if exclude_self else 0)
        found, _ = tree.query(points[rows], k=[column])
        distances[rows] = found[:, 0]
    return distances, orders


def knn_kl_divergence(x, y, k=1):
    """k-nearest-neighbour estimate of the KL divergence `D(P || Q)`.

    The estimator of Wang, Kulkarni & Verdú (2009): with `x_1..x_n ~ P`
    and `y_1..y_m ~ Q` in `R^d`,

    `D = d/n * sum_i log(nu_k(i) / rho_k(i)) + log(m / (n - 1))`,

    where `rho_k(i)` is the Euclidean distance from `x_i` to its k-th
    nearest neighbour among the other points of `x` and `nu_k(i)` the
    distance from `x_i` to its k-th nearest neighbour in `y`. It is
    consistent as `n, m -> inf` for fixed `k`; the paper's baseline uses
    `k = 1`. The estimate can be negative.

    Duplicate points: a zero distance would make `log(nu / rho)` infinite
    or undefined. Instead of adding an arbitrary constant to the distances,
    the adaptive form of the same paper (its estimator with point-dependent
    `k_i`, `l_i`) is used where ties occur: `k_i = max(k, z_i + 1)` with
    `z_i` the number of other points of `x` equal to `x_i`, `l_i =
    max(k, w_i + 1)` with `w_i` the number of points of `y` equal to
    `x_i`, and the term `psi(k_i) - psi(l_i)` is added for that point
    (`psi` the digamma function). Both distances are then positive; without
    ties `k_i = l_i = k` and this is exactly the formula above. This keeps
    the estimate finite; data with many exact ties are not samples of a
    density, and no k-NN estimate of them is unbiased.

    Args:
        x: Samples of `P`, array `[n, d]`, `n >= k + 1`.
        y: Samples of `Q`, array `[m, d]`, `m >= k`, same `d`.
        k: Neighbour order, a positive integer.

    Returns:
        The estimate in nats, a Python float.

    Raises:
        ValueError: For arrays that are not 2-D, have different `d`, hold
            non-finite values or too few points, and when every point of
            `x` (or every point of `y`) sits at one location, where no
            positive distance exists.

    Example:

    ```python
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, 2))
    y = rng.normal(loc=1.0, size=(2000, 2))
    knn_kl_divergence(x, y)  # about 1.0 (the exact value)
    ```

    References:
        - Wang, Kulkarni & Verdú. Divergence estimation for multidimensional
          densities via k-nearest-neighbor distances. IEEE Transactions on
          Information Theory 55(5), 2009.
    """
    cKDTree, digamma = _scipy()
    k, x, y = _check_pair(k, x, y, 1, "dimension (number of columns)")
    n, d = x.shape
    m = y.shape[0]
    if n < k + 1:
        raise ValueError(
            f"`x` must have at least k + 1 = {k + 1} rows (each point needs "
            f"k neighbours besides itself). Received: x.shape={x.shape}, "
            f"k={k}"
        )
    if m < k:
        raise ValueError(
            f"`y` must have at least k = {k} rows. Received: "
            f"y.shape={y.shape}, k={k}"
        )
    x, y = _rescaled(x, y)
    rho, k_i = _kth_positive_distance(cKDTree(x), x, k, exclude_self=True)
    nu, l_i = _kth_positive_distance(cKDTree(y), x, k, exclude_self=False)
    if np.any(k_i < 0):
        i = int(np.flatnonzero(k_i < 0)[0])
        # x is rescaled here: name the row, not its (rescaled) values.
        raise ValueError(
            f"`x` has no point at a positive distance from x[{i}]: all "
            f"{n} rows of `x` are equal, so the within-sample distance is "
            "0 and the estimate is undefined"
        )
    if np.any(l_i < 0):
        i = int(np.flatnonzero(l_i < 0)[0])
        raise ValueError(
            f"every row of `y` equals x[{i}]: no positive distance from "
            "it to `y` exists and the estimate is undefined"
        )
    terms = d * np.log(nu / rho) + digamma(k_i) - digamma(l_i)
    return float(np.mean(terms) + np.log(m / (n - 1)))


# Relative amplitude of the noise that breaks KSG's exact ties.
TIE_NOISE = 1e-10


def _tie_noise(a, seed):
    """`a` plus Gaussian noise of standard deviation `TIE_NOISE` times each
    column's mean absolute value (1 for a column of zeros), from a fixed
    seed."""
    scale = np.mean(np.abs(a), axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    noise = np.random.default_rng([seed, *a.shape]).standard_normal(a.shape)
    return a + TIE_NOISE * scale * noise


def _has_ties(a):
    """Whether a column of `a` holds one value twice."""
    return bool(np.any(np.diff(np.sort(a, axis=0), axis=0) == 0))


def ksg_mutual_information(x, y, k=3):
    """Kraskov-Stögbauer-Grassberger estimate of the mutual information.

    Estimator 1 of Kraskov et al. (2004, eq. 8): for paired samples
    `(x_i, y_i)`, `i = 1..N`, let `eps_i` be the distance from `z_i =
    (x_i, y_i)` to its k-th nearest neighbour in the joint space under the
    max-norm `||z - z'|| = max(||x - x'||, ||y - y'||)`, and `n_x(i)`
    (`n_y(i)`) the number of points `j != i` with `||x_i - x_j|| < eps_i`
    (`||y_i - y_j|| < eps_i`), strictly. Then

    `I(X; Y) = psi(k) + psi(N) - < psi(n_x + 1) + psi(n_y + 1) >`.

    All norms are max-norms (`p = inf`). The strict counts come from
    `cKDTree.query_ball_point` with the radius `nextafter(eps_i, 0)`, the
    largest float below `eps_i`, so a point at exactly `eps_i` is not
    counted. Tied values (discrete or rounded data) break these counts:
    where `k` other points coincide with `z_i`, `eps_i = 0` and nothing
    is strictly closer, and tied coordinates count as neighbours at any
    radius. The estimate is then far too high (9.6 nats for the 0.44 of
    three sparse binary coordinates, n = 2,000, and 3.2 for at most 0.81
    on Gaussians rounded to 0.1, n = 1,000: `benchmarks/ksg_ties.py`).
    So where a column of `x` or `y` holds one value twice, every
    coordinate gets noise of amplitude `TIE_NOISE` times its column's
    mean absolute value, as Kraskov et al. suggest (`_tie_noise`, seeded:
    the same samples give the same answer), and the estimate is that of
    the noisy samples, which reads the information of the tied values
    (0.48 and 0.87 there). Samples without ties are used as they are.
    The estimate can be slightly negative for independent variables.

    Args:
        x: Array `[N, d_x]`.
        y: Array `[N, d_y]`, the same number of rows as `x`; row `i` of
            `x` and row `i` of `y` form one joint sample. `d_x` and `d_y`
            may differ.
        k: Neighbour order, a positive integer, `k < N` (the paper
            recommends 2-4).

    Returns:
        The estimate in nats, a Python float.

    Example:

    ```python
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, 1))
    y = 0.6 * x + 0.8 * rng.normal(size=(2000, 1))
    ksg_mutual_information(x, y)  # about 0.223 = -0.5 * log(1 - 0.36)
    ```

    References:
        - Kraskov, Stögbauer & Grassberger. Estimating mutual information.
          Physical Review E 69, 066138, 2004.
    """
    cKDTree, digamma = _scipy()
    k, x, y = _check_pair(k, x, y, 0, "number of rows (paired samples)")
    num = x.shape[0]
    if num < k + 1:
        raise ValueError(
            f"`x` and `y` must have at least k + 1 = {k + 1} rows. "
            f"Received: {num} rows, k={k}"
        )
    x, y = _rescaled(x, y)
    if _has_ties(x) or _has_ties(y):
        x, y = _tie_noise(x, seed=0), _tie_noise(y, seed=1)
    joint = np.concatenate([x, y], axis=1)
    # Column k of the (k + 1) nearest, the first being the point itself.
    eps, _ = cKDTree(joint).query(joint, k=[k + 1], p=np.inf)
    eps = eps[:, 0]
    positive = eps > 0
    radius = np.where(positive, np.nextafter(eps, 0.0), 0.0)

    def strict_counts(points):
        counts = cKDTree(points).query_ball_point(
            points, r=radius, p=np.inf, return_length=True
        )
        # Minus the point itself, which is inside whenever eps > 0.
        return np.where(positive, np.asarray(counts) - 1, 0)

    n_x = strict_counts(x)
    n_y = strict_counts(y)
    mean_psi = np.mean(digamma(n_x + 1) + digamma(n_y + 1))
    return float(digamma(k) + digamma(num) - mean_psi)


def _check_masked_sets(name, sets, mask):
    _check_real(name, sets)
    sets = np.asarray(sets, dtype=np.float64)
    if sets.ndim != 3:
        raise ValueError(
            f"`{name}` must be a 3-D array `[batch, set_size, dim]`. "
            f"Received: {name}.shape={sets.shape}"
        )
    if mask is None:
        mask = np.ones(sets.shape[:2], dtype=bool)
    else:
        mask = np.asarray(mask)
        if mask.shape != sets.shape[:2]:
            raise ValueError(
                f"`{name}_mask` must have shape {sets.shape[:2]} (the first "
                f"two dimensions of `{name}`). Received: "
                f"{name}_mask.shape={mask.shape}"
            )
        mask = mask.astype(bool)
    return sets, mask


def _check_batches(x, y, x_mask, y_mask):
    x, x_mask = _check_masked_sets("x", x, x_mask)
    y, y_mask = _check_masked_sets("y", y, y_mask)
    if x.shape[0] != y.shape[0]:
        raise ValueError(
            "`x` and `y` must have the same batch size. Received: "
            f"x.shape={x.shape}, y.shape={y.shape}"
        )
    return x, y, x_mask, y_mask


def knn_kl_divergence_sets(x, y, x_mask=None, y_mask=None, k=1):
    """`knn_kl_divergence` of each pair of padded sets in a batch.

    Args:
        x: Array `[batch, n_max, d]`, samples of `P` (one set per row).
        y: Array `[batch, m_max, d]`, samples of `Q`.
        x_mask: Boolean `[batch, n_max]`, True for real elements; `None`
            means all are real. Masked rows are ignored.
        y_mask: Boolean `[batch, m_max]`, likewise.
        k: Neighbour order.

    Returns:
        float64 array `[batch]` of estimates.
    """
    x, y, x_mask, y_mask = _check_batches(x, y, x_mask, y_mask)
    return np.array(
        [
            knn_kl_divergence(xi[mi], yi[mj], k=k)
            for xi, yi, mi, mj in zip(x, y, x_mask, y_mask, strict=True)
        ]
    )


def ksg_mutual_information_sets(x, y, mask=None, k=3):
    """`ksg_mutual_information` of each pair of padded paired sets.

    Row `j` of `x[b]` and row `j` of `y[b]` form one joint sample (the
    `"split"` format of `keras_msets.data.mixtures.mutual_information_sets`).

    Args:
        x: Array `[batch, n_max, d_x]`.
        y: Array `[batch, n_max, d_y]`.
        mask: Boolean `[batch, n_max]`, True for real (paired) rows;
            `None` means all are real.
        k: Neighbour order.

    Returns:
        float64 array `[batch]` of estimates.
    """
    x, y, mask, y_mask = _check_batches(x, y, mask, mask)
    if x.shape[1] != y.shape[1]:
        raise ValueError(
            "`x` and `y` must have the same number of rows per set (paired "
            f"samples). Received: x.shape={x.shape}, y.shape={y.shape}"
        )
    return np.array(
        [
            ksg_mutual_information(xi[mi], yi[mi], k=k)
            for xi, yi, mi in zip(x, y, mask, strict=True)
        ]
    )
