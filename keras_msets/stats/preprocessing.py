"""Numpy preprocessing of pairs of sets for the statistical-distance models.

The Multi-Set Transformers that estimate a KL divergence, a mutual
information or whether two sets come from one distribution (Selby et al.,
2022, Sec. 5.1-5.2) read their two sets after one of these maps; the same
functions prepare their training data and the estimators' inputs, so a
model always sees what it was trained on.

- `whiten_pairs`: the joint whitening of eq. 15 (`whiten_sets`) followed
  by a rotation to the principal axes of the first set (ours), so the
  result does not depend on an invertible affine map applied to both sets.
- `standardize_pairs`: every coordinate of each set on its own to mean 0
  and variance 1.
- `joint_and_product_sets`: paired samples read as joint samples against
  samples of the product of the marginals, `I(X; Y) = KL(P_XY || P_X P_Y)`.

`preprocess(preprocessing, ...)` applies one of them by name
(`PREPROCESSING`).
"""

import functools

import numpy as np

from keras_msets.data.mixtures import whiten_sets

# Seed of the permutation that turns paired samples into samples of the
# product of the marginals (`joint_and_product_sets`); permutation k of
# the joint reading uses seed `JOINT_PERMUTATION_SEED + k`.
JOINT_PERMUTATION_SEED = 0
# The names `preprocess` accepts.
PREPROCESSING = ("whiten", "whiten_third_moment", "standardize")


def _masks_for(x, y, x_mask, y_mask):
    x_mask = (
        np.ones(x.shape[:2], bool) if x_mask is None else np.asarray(x_mask)
    )
    y_mask = (
        np.ones(y.shape[:2], bool) if y_mask is None else np.asarray(y_mask)
    )
    return x_mask.astype(bool), y_mask.astype(bool)


def whiten_pairs(x, y, x_mask=None, y_mask=None, sign="mean"):
    """Jointly whitens pairs of sets, then rotates them to canonical axes.

    First eq. 15 of Selby et al. (`whiten_sets`): `[X'; Y'] =
    Sigma^(-1/2) ([X; Y] - mu)` with the mean and covariance of the union
    of both sets. Then both sets are rotated by `V^T`, the eigenvectors of
    the covariance of `X'` alone (largest eigenvalue first), each
    eigenvector's sign chosen so that the mean of `X'` along it is
    positive (`sign="mean"`) or, with `sign="third_moment"`, so that the
    third central moment of `X'` along it is positive. The union still
    has mean 0 and identity covariance.

    The third moment is for pairs whose two sets have the same mean by
    construction, such as joint samples against the same rows with one
    part permuted (`joint_and_product_sets`): there the mean of `X'` is 0
    along every axis, and a sign chosen by it would be float noise.

    Why the rotation: if both sets go through one invertible affine map
    `z -> A z + b`, eq. 15 gives `R [X'; Y']` for an orthogonal `R` that
    depends on `A`; the rotation maps `R X'` and `X'` to the same
    coordinates (its eigenvectors turn with `R`), so the output, and the
    estimate of a model reading it, do not depend on `A` or `b` at all.
    (Ties between eigenvalues or a zero mean along an eigenvector would
    leave a choice open; they have probability zero for continuous data.)

    Args:
        x: float `[batch, n_max, d]`, padded sets.
        y: float `[batch, m_max, d]`.
        x_mask: boolean `[batch, n_max]` (True = real point); None: all.
        y_mask: boolean `[batch, m_max]`; None: all.
        sign: `"mean"` or `"third_moment"`, the rule that orients each
            axis.

    Returns:
        `(x_white, y_white)`, float64 of the input shapes; padded rows
        are zeros.
    """
    if sign not in ("mean", "third_moment"):
        raise ValueError(
            f"`sign` must be 'mean' or 'third_moment'. Received: sign={sign!r}"
        )
    x_mask, y_mask = _masks_for(x, y, x_mask, y_mask)
    x_white, y_white, _, _ = whiten_sets(x, y, x_mask, y_mask)
    weights = x_mask[..., None].astype(np.float64)
    count = weights.sum(axis=1)  # [batch, 1]
    mean = (x_white * weights).sum(axis=1) / count
    centred = (x_white - mean[:, None, :]) * weights
    cov = np.einsum("bni,bnj->bij", centred, centred) / np.maximum(
        count[..., None] - 1.0, 1.0
    )
    _, vectors = np.linalg.eigh(cov)
    vectors = vectors[:, :, ::-1]  # largest eigenvalue first
    if sign == "mean":
        direction = np.einsum("bi,bij->bj", mean, vectors)
    else:
        projected = np.einsum("bni,bij->bnj", centred, vectors)
        direction = (projected**3 * weights).sum(axis=1)
    signs = np.where(direction < 0, -1.0, 1.0)
    vectors = vectors * signs[:, None, :]
    rotate = functools.partial(np.einsum, "bni,bij->bnj")
    return rotate(x_white, vectors), rotate(y_white, vectors)


def standardize_pairs(x, y, x_mask=None, y_mask=None):
    """Standardizes every coordinate of every set on its own.

    Each coordinate of each set is mapped to mean 0 and variance 1
    (divisor `n - 1`) over the set's real points; padded rows come out as
    zeros. A coordinate that is constant within a set raises a
    `ValueError`.

    Args:
        x: float `[batch, n_max, d_x]`.
        y: float `[batch, m_max, d_y]`.
        x_mask: boolean `[batch, n_max]`; None: all points are real.
        y_mask: boolean `[batch, m_max]`; None: all points are real.

    Returns:
        `(x_standard, y_standard)`, float64 of the input shapes.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    x_mask, y_mask = _masks_for(x, y, x_mask, y_mask)
    out = []
    for name, values, mask in (("x", x, x_mask), ("y", y, y_mask)):
        weights = mask[..., None].astype(np.float64)
        count = weights.sum(axis=1, keepdims=True)
        mean = (values * weights).sum(axis=1, keepdims=True) / count
        centred = (values - mean) * weights
        var = (centred**2).sum(axis=1, keepdims=True) / np.maximum(
            count - 1.0, 1.0
        )
        if np.any(var <= 0):
            b = int(np.argwhere(var <= 0)[0][0])
            raise ValueError(
                f"A coordinate of `{name}` is constant in pair {b}; it "
                "cannot be standardized."
            )
        out.append(centred / np.sqrt(var))
    return out[0], out[1]


def joint_and_product_sets(x, y, seed=JOINT_PERMUTATION_SEED):
    """Joint samples and samples of the product of the marginals.

    `I(X; Y) = KL(P_XY || P_X P_Y)`: for paired samples, row `j` of `x[i]`
    and row `j` of `y[i]` being one joint sample, the first set is the
    joint samples `[x_j, y_j]` and the second the same rows with the `y`
    part permuted within the set, `[x_j, y_pi(j)]` (approximately
    independent samples of `P_X P_Y`, as in MINE-style estimators). This
    is what the `mst_mutual_information_joint` preset reads (after
    `whiten_pairs`), as `keras_msets.data.mutual_information_sets(...,
    mode="joint_vs_product")` makes its training data.

    The permutation of a set of `n` rows comes from a generator seeded
    with `seed` alone, so the answer for a pair never depends on the other
    pairs of a batch, and repeated calls agree.

    Args:
        x: list of float arrays `[n_i, d_i]`.
        y: list of float arrays `[n_i, e_i]`, the same `n_i` as `x[i]`.
        seed: seed of the permutations.

    Returns:
        `(joint, product)`: lists of float64 arrays `[n_i, d_i + e_i]`.
    """
    joint, product = [], []
    for i, (xs, ys) in enumerate(zip(x, y, strict=True)):
        if len(xs) != len(ys):
            raise ValueError(
                "Paired sets must have the same number of rows. Received: "
                f"x[{i}].shape={np.shape(xs)}, y[{i}].shape={np.shape(ys)}"
            )
        permutation = np.random.default_rng(seed).permutation(len(ys))
        joint.append(np.concatenate([xs, ys], axis=1))
        product.append(np.concatenate([xs, ys[permutation]], axis=1))
    return joint, product


def preprocess(preprocessing, x, y, x_mask=None, y_mask=None):
    """Applies one of `PREPROCESSING` to padded pairs; float32 out.

    Args:
        preprocessing: `"whiten"` (`whiten_pairs`), `"whiten_third_moment"`
            (`whiten_pairs(..., sign="third_moment")`) or `"standardize"`
            (`standardize_pairs`), or an object with that name as its
            `preprocessing` attribute (an estimator's spec).
        x, y, x_mask, y_mask: the padded pairs and their masks, as
            `standardize_pairs` takes them.

    Returns:
        `(x, y)`, float32 of the input shapes.
    """
    name = getattr(preprocessing, "preprocessing", preprocessing)
    if name == "whiten":
        x, y = whiten_pairs(x, y, x_mask, y_mask)
    elif name == "whiten_third_moment":
        x, y = whiten_pairs(x, y, x_mask, y_mask, sign="third_moment")
    elif name == "standardize":
        x, y = standardize_pairs(x, y, x_mask, y_mask)
    else:
        raise ValueError(
            f"`preprocessing` must be one of {PREPROCESSING}. Received: "
            f"preprocessing={name!r}"
        )
    return x.astype(np.float32), y.astype(np.float32)


def tail_statistic(x, y, x_mask=None, y_mask=None):
    """The largest sample kurtosis of any coordinate of either set.

    For every pair, every coordinate of each set: `m4 / m2**2`, the fourth
    central moment over the squared second (3 for a normal coordinate,
    up to about the number of points when one point lies far out). The
    estimators compute it on their prepared (whitened or standardized)
    sets and compare it with what the presets' training sets give
    (`keras_msets.estimators.pretrained.tail_thresholds`) to detect data
    with heavier tails than any set a model was trained on.

    Args:
        x: float `[batch, n_max, d]`, padded sets.
        y: float `[batch, m_max, e]`.
        x_mask: boolean `[batch, n_max]` (True = real point); None: all.
        y_mask: boolean `[batch, m_max]`; None: all.

    Returns:
        float64 `[batch]`; a constant coordinate counts as 0.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    x_mask, y_mask = _masks_for(x, y, x_mask, y_mask)
    out = np.zeros(x.shape[0])
    for values, mask in ((x, x_mask), (y, y_mask)):
        weights = mask[..., None].astype(np.float64)
        count = np.maximum(weights.sum(axis=1, keepdims=True), 1.0)
        mean = (values * weights).sum(axis=1, keepdims=True) / count
        centred = (values - mean) * weights
        m2 = (centred**2).sum(axis=1) / count[:, 0]
        m4 = (centred**4).sum(axis=1) / count[:, 0]
        positive = m2 > 0
        kurtosis = np.where(positive, m4 / np.where(positive, m2, 1.0) ** 2, 0)
        out = np.maximum(out, kurtosis.max(axis=1, initial=0.0))
    return out


def orient_to_x(x, y):
    """Flips the sign of every coordinate of `y` that correlates negatively
    with the same coordinate of `x`.

    For paired samples (row `j` of `x` and of `y` one joint sample) with
    the same number of columns: coordinate `k` of `y` is negated when the
    sample covariance of `x[:, k]` and `y[:, k]` is negative, so the
    result is the same for `y` and for `y` with any coordinates negated
    (mutual information does not change under such a sign flip).

    Args:
        x: float `[n, d]`.
        y: float `[n, d]`.

    Returns:
        float64 `[n, d]`, `y` with some coordinates negated.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    covariance = ((x - x.mean(axis=0)) * (y - y.mean(axis=0))).sum(axis=0)
    return y * np.where(covariance < 0, -1.0, 1.0)
