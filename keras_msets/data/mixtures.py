"""Random Gaussian mixtures and the statistical-distance tasks built on them.

Selby et al. (2022) train multi-set models to estimate the KL divergence
between the distributions behind two sets (Sec. 5.1.1, Table 1), the
mutual information of correlated Gaussians (Sec. 5.1.2, Fig. 2) and
whether two sets come from the same distribution (Sec. 5.2.3, Table 4,
"synthetic"). This module generates those data sets with numpy and scipy.

Random mixtures (`GaussianMixture`, `random_gaussian_mixture`,
`sample_lkj_correlation`) are drawn as the paper and its reference code
describe; `keras_msets.data.gaussian_mixture` says how, and this module
exports them too.

Every generator takes an explicit `seed` and draws from
`np.random.default_rng(seed)`. Sets of different sizes are returned padded
to a common width with boolean masks (True = real element); padded rows
are zeros. Sets and labels are float32; everything is computed in float64.
"""

import numpy as np

from keras_msets.data.gaussian_mixture import GaussianMixture
from keras_msets.data.gaussian_mixture import _mixture_kwargs
from keras_msets.data.gaussian_mixture import random_gaussian_mixture
from keras_msets.data.gaussian_mixture import sample_lkj_correlation
from keras_msets.utils.validation import check_choice
from keras_msets.utils.validation import check_float
from keras_msets.utils.validation import check_fraction
from keras_msets.utils.validation import check_int_range
from keras_msets.utils.validation import check_non_negative_int
from keras_msets.utils.validation import check_positive_int
from keras_msets.utils.validation import is_int

__all__ = [
    "GaussianMixture",
    "MI_MODES",
    "gaussian_mutual_information",
    "kl_divergence_pairs",
    "mutual_information_sets",
    "pad_sets",
    "random_gaussian_mixture",
    "sample_lkj_correlation",
    "two_sample_pairs",
    "whiten_sets",
]

# Second stream of a seed: the Monte-Carlo samples of the KL labels, so
# that the sets do not depend on `mc_samples`.
_MC_STREAM = 1
# Stream of the permutations of `mutual_information_sets(mode=
# "joint_vs_product")`.
_PERMUTATION_STREAM = 2

MI_MODES = ("split", "joint_vs_product")


def _check_sets(num, dim, seed, set_size, pad_to, whiten=False):
    """The checked `(num, dim, seed, set_size, pad_to)` of a generator of
    padded pairs (`pad_to=None`: `set_size[1]`)."""
    num = check_positive_int("num", num)
    dim = check_positive_int("dim", dim)
    seed = check_non_negative_int("seed", seed)
    set_size = check_int_range("set_size", set_size, low=1)
    if pad_to is None:
        pad_to = set_size[1]
    elif not is_int(pad_to) or pad_to < set_size[1]:
        raise ValueError(
            "`pad_to` must be None or an integer >= the largest set size "
            f"({set_size[1]}). Received: pad_to={pad_to!r}"
        )
    if whiten and 2 * set_size[0] < dim + 1:
        raise ValueError(
            "Whitening needs at least d + 1 points in the union of the two "
            f"sets: `set_size[0]` must be >= {(dim + 2) // 2} for dim={dim}. "
            f"Received: set_size={set_size}"
        )
    return num, dim, seed, set_size, int(pad_to)


def pad_sets(sets, width, dtype=np.float32):
    """Stacks `[n_i, d]` arrays into `[num, width, d]` (zeros after each
    set) and a boolean mask `[num, width]` (True = real element)."""
    padded = np.zeros((len(sets), width, sets[0].shape[1]), dtype=dtype)
    mask = np.zeros((len(sets), width), dtype=bool)
    for i, values in enumerate(sets):
        padded[i, : len(values)] = values
        mask[i, : len(values)] = True
    return padded, mask


def _padded_pairs(xs, ys, width, whiten=False):
    """`((x, y, x_mask, y_mask), whitening)`: the sets padded to `width`,
    float32, whitened jointly if `whiten` (from the float64 draws, not the
    float32 copies; `whitening` is then `(means, matrices)`, else None)."""
    x, x_mask = pad_sets(xs, width)
    y, y_mask = pad_sets(ys, width)
    if not whiten:
        return (x, y, x_mask, y_mask), None
    x64, y64, means, matrices = whiten_sets(
        pad_sets(xs, width, np.float64)[0],
        pad_sets(ys, width, np.float64)[0],
        x_mask,
        y_mask,
    )
    x, y = x64.astype(np.float32), y64.astype(np.float32)
    return (x, y, x_mask, y_mask), (means, matrices)


def whiten_sets(x, y, x_mask=None, y_mask=None):
    """Jointly whitens two batches of padded sets (Selby et al., eq. 15).

    For each example, `mu` and `Sigma` are the mean and covariance
    (divisor `N - 1`) of the union of the real elements of both sets, and
    both sets are mapped by `z -> Sigma^(-1/2) (z - mu)` with the symmetric
    inverse square root. The same invertible affine map is applied to both
    sets, so the KL divergence between the underlying distributions is
    unchanged. Padded rows come out as zeros.

    Args:
        x: `[batch, n_max, d]`.
        y: `[batch, m_max, d]`.
        x_mask: Boolean `[batch, n_max]` (True = real); `None` = all real.
        y_mask: Boolean `[batch, m_max]`; `None` = all real.

    Returns:
        `(x_white, y_white, means, matrices)`: the whitened sets (float64),
        `means` `[batch, d]` and the whitening matrices `[batch, d, d]`, so
        that `x_white[b, i] = matrices[b] @ (x[b, i] - means[b])`.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 3 or y.ndim != 3 or x.shape[::2] != y.shape[::2]:
        raise ValueError(
            "`x` and `y` must be 3-D arrays [batch, set_size, d] with the "
            f"same batch and d. Received: x.shape={x.shape}, "
            f"y.shape={y.shape}"
        )
    x_mask = (
        np.ones(x.shape[:2], bool) if x_mask is None else np.asarray(x_mask)
    )
    y_mask = (
        np.ones(y.shape[:2], bool) if y_mask is None else np.asarray(y_mask)
    )
    if x_mask.shape != x.shape[:2] or y_mask.shape != y.shape[:2]:
        raise ValueError(
            "`x_mask` and `y_mask` must have the shapes of the first two "
            f"dimensions of `x` and `y`. Received: x_mask.shape="
            f"{x_mask.shape}, y_mask.shape={y_mask.shape}"
        )
    x_mask = x_mask.astype(bool)
    y_mask = y_mask.astype(bool)
    dim = x.shape[2]
    points = np.concatenate([x, y], axis=1)
    mask = np.concatenate([x_mask, y_mask], axis=1)
    counts = mask.sum(axis=1)
    if np.any(counts < dim + 1):
        b = int(np.flatnonzero(counts < dim + 1)[0])
        raise ValueError(
            "Whitening needs at least d + 1 real elements in the union of "
            f"the two sets. Received: {int(counts[b])} in example {b}, "
            f"d={dim}"
        )
    weights = mask[..., None].astype(np.float64)
    means = (points * weights).sum(axis=1) / counts[:, None]
    centered = (points - means[:, None, :]) * weights
    cov = np.einsum("bni,bnj->bij", centered, centered)
    cov /= (counts - 1)[:, None, None]
    eigval, eigvec = np.linalg.eigh(cov)
    bad = eigval[:, 0] <= 1e-12 * np.maximum(eigval[:, -1], 1e-300)
    if np.any(bad):
        b = int(np.flatnonzero(bad)[0])
        raise ValueError(
            "The union of the two sets is degenerate (its covariance is "
            f"singular) in example {b}; it cannot be whitened."
        )
    matrices = np.einsum(
        "bij,bj,bkj->bik", eigvec, 1.0 / np.sqrt(eigval), eigvec
    )
    white = np.einsum("bij,bnj->bni", matrices, points - means[:, None, :])
    white *= weights
    n_max = x.shape[1]
    return white[:, :n_max], white[:, n_max:], means, matrices


def kl_divergence_pairs(
    num,
    dim,
    seed=0,
    set_size=(100, 150),
    mc_samples=None,
    whiten=True,
    num_components=(1, 10),
    eta=5.0,
    scale_sigma=0.3,
    mean_range=(0.0, 1.0),
    pad_to=None,
    return_params=False,
):
    """Pairs of sets `X ~ P`, `Y ~ Q` labelled with `KL(P || Q)` (Sec. 5.1.1).

    For each example two independent random mixtures `P` and `Q` are drawn
    (`random_gaussian_mixture`), then `N_X` and `N_Y`, each uniform in
    `set_size` (both ends included, drawn separately for each set), then
    `X` (`N_X` points of `P`) and `Y` (`N_Y` points of `Q`).

    The label is a Monte-Carlo estimate of
    `KL(P || Q) = E_P[log p(x) - log q(x)]` from the exact mixture
    densities. With `mc_samples=None` (the paper: "with the generated
    points X as the samples") the average runs over the `N_X` points of
    `X` itself; with an integer it runs over that many fresh samples of
    `P` (from a separate random stream, so `X` and `Y` are the same for
    every `mc_samples`), which gives a less noisy label: its standard error
    is `std(log p - log q) / sqrt(mc_samples)`.

    With `whiten=True` both sets are whitened jointly as in eq. 15
    (`whiten_sets`): `[X'; Y'] = Sigma^(-1/2) ([X; Y] - mu)` with the mean
    and covariance of the union. The label is left as it is: the KL
    divergence is invariant under one invertible affine map `T` applied to
    both distributions, since `log p_T(T x) - log q_T(T x) = log p(x) -
    log q(x)` (the Jacobian terms cancel), so even the Monte-Carlo estimate
    is unchanged point by point.

    Args:
        num: Number of examples.
        dim: Dimension `d` (the paper uses 2, 4, 8 and 16).
        seed: Non-negative integer seed.
        set_size: `(low, high)` range of each set's size.
        mc_samples: `None` (use `X`) or a positive integer.
        whiten: Whether to whiten each pair jointly (the paper does).
        num_components: Components per mixture, an int or `(low, high)`.
        eta: LKJ concentration of the component correlations.
        scale_sigma: Log-normal `sigma_0` of the component scales.
        mean_range: Range of the uniform component means.
        pad_to: Width of the padded sets, `>= set_size[1]`; `None` means
            `set_size[1]`.
        return_params: Whether to also return the mixtures.

    Returns:
        `((x, y, x_mask, y_mask), labels)`: `x` float32 `[num, pad_to, d]`,
        `y` likewise, boolean masks `[num, pad_to]` (True = real element),
        `labels` float32 `[num, 1]` in nats. With `return_params=True` a
        third element, a dict with `"p"` and `"q"` (lists of
        `GaussianMixture`, in the original coordinates) and, when
        whitening, `"whitening"`: `(means [num, d], matrices [num, d, d])`
        from `whiten_sets`; the whitened `x[i]` is then a sample of
        `p[i].affine(matrices[i], -matrices[i] @ means[i])`.

    Example:

    ```python
    (x, y, x_mask, y_mask), kl = kl_divergence_pairs(8, dim=2, seed=0)
    x.shape, x_mask.shape, kl.shape  # (8, 150, 2), (8, 150), (8, 1)
    ```
    """
    num, dim, seed, set_size, pad_to = _check_sets(
        num, dim, seed, set_size, pad_to, whiten
    )
    mc_samples = check_positive_int("mc_samples", mc_samples, allow_none=True)
    kwargs = _mixture_kwargs(num_components, eta, scale_sigma, mean_range)
    rng = np.random.default_rng(seed)
    mc_rng = np.random.default_rng([seed, _MC_STREAM])
    xs, ys, ps, qs = [], [], [], []
    labels = np.zeros((num, 1), dtype=np.float64)
    for i in range(num):
        p = random_gaussian_mixture(dim, rng, **kwargs)
        q = random_gaussian_mixture(dim, rng, **kwargs)
        n_x, n_y = rng.integers(set_size[0], set_size[1], size=2, endpoint=True)
        x = p.sample(n_x, rng)
        y = q.sample(n_y, rng)
        points = x if mc_samples is None else p.sample(mc_samples, mc_rng)
        labels[i, 0] = np.mean(p.logpdf(points) - q.logpdf(points))
        xs.append(x)
        ys.append(y)
        ps.append(p)
        qs.append(q)
    sets, whitening = _padded_pairs(xs, ys, pad_to, whiten)
    params = {"p": ps, "q": qs}
    if whiten:
        params["whitening"] = whitening
    outputs = (sets, labels.astype(np.float32))
    return outputs + (params,) if return_params else outputs


def gaussian_mutual_information(rho, dim):
    """Mutual information of componentwise-correlated standard Gaussians.

    For `x, y` in `R^d` with standard normal marginals and
    `corr(x_j, y_j) = rho` (other pairs uncorrelated),
    `I(x; y) = -(d / 2) log(1 - rho^2)` nats.

    Args:
        rho: Correlation(s) in `(-1, 1)`, scalar or array.
        dim: Dimension `d` of each of `x` and `y`.

    Returns:
        float64 array of the shape of `rho`.
    """
    rho = np.asarray(rho, dtype=np.float64)
    if not np.all(np.abs(rho) < 1):
        raise ValueError(
            f"`rho` must lie in (-1, 1). Received: rho={rho.tolist()}"
        )
    return -0.5 * dim * np.log1p(-(rho**2))


def mutual_information_sets(
    num,
    dim,
    seed=0,
    set_size=(100, 150),
    rho=None,
    max_abs_rho=0.999,
    mode="split",
    pad_to=None,
    return_params=False,
):
    """Sets from correlated Gaussians labelled with their mutual information.

    Sec. 5.1.2: `x, y` in `R^d` with standard normal marginals and
    componentwise correlation `rho` (`y = rho x + sqrt(1 - rho^2) e`), so
    `I(x; y) = -(d/2) log(1 - rho^2)` (`gaussian_mutual_information`).
    For each example `rho` is drawn uniformly (the paper: from `(-1, 1)`;
    here from `[-max_abs_rho, max_abs_rho]`, `0.999` as in the reference
    code, since the label diverges at `|rho| = 1`), then `N` uniform in
    `set_size` and `N` joint samples `(x_i, y_i)`.

    What the model sees (`mode`):

    - `"split"` (the paper's set-up, as in the authors' reference code):
      the first set holds the `x_i` and the second the `y_i`, both `[N, d]`.
      A multi-set model is invariant to reordering each set, so it never
      sees which `y_i` goes with which `x_i`; it must infer `|rho|` from
      how the two point clouds relate (for `|rho| -> 1` the second set
      approaches `+-` the first). Rows stay paired here (row `j` of both
      sets is one joint sample), so pairing-based baselines such as
      `ksg_mutual_information_sets` can use them.
    - `"joint_vs_product"`: `I(x; y) = KL(P_xy || P_x P_y)`; the first set
      holds the joint samples `[x_i, y_i]` and the second the same `x_i`
      with the `y_i` randomly permuted within the set, `[x_i, y_pi(i)]`
      (approximate samples of the product of marginals, the shuffling
      trick of MINE-style estimators). Both are `[N, 2d]`; a KL model
      applies directly. The joint samples are those of `"split"` with
      the same seed.

    Args:
        num: Number of examples.
        dim: Dimension `d` of each of `x` and `y` (the paper: 2, 10, 20
            in Fig. 2; the joint dimension is `2d`).
        seed: Non-negative integer seed.
        set_size: `(low, high)` range of `N`.
        rho: `None` to draw it, or a number or an array `[num]` of fixed
            correlations in `(-1, 1)` (e.g. the sweep of Fig. 2).
        max_abs_rho: Bound of the uniform `rho`, in `(0, 1)`.
        mode: `"split"` or `"joint_vs_product"`.
        pad_to: Width of the padded sets; `None` means `set_size[1]`.
        return_params: Whether to also return `rho` (float64 `[num]`).

    Returns:
        `((x, y, x_mask, y_mask), labels)` as in `kl_divergence_pairs`
        (here `x_mask == y_mask`), `labels` float32 `[num, 1]` the exact
        mutual information in nats; plus `rho` when `return_params`.
    """
    num, dim, seed, set_size, pad_to = _check_sets(
        num, dim, seed, set_size, pad_to
    )
    check_choice("mode", mode, MI_MODES)
    max_abs_rho = check_float(
        "max_abs_rho",
        max_abs_rho,
        low=0,
        high=1,
        low_inclusive=False,
        high_inclusive=False,
    )
    rng = np.random.default_rng(seed)
    # The permutations have their own stream: both modes see the same
    # joint samples.
    perm_rng = np.random.default_rng([seed, _PERMUTATION_STREAM])
    if rho is None:
        rhos = rng.uniform(-max_abs_rho, max_abs_rho, size=num)
    else:
        try:
            rhos = np.broadcast_to(np.asarray(rho, dtype=np.float64), (num,))
        except (TypeError, ValueError):
            rhos = None
        if rhos is None or not np.all(np.abs(rhos) < 1):
            raise ValueError(
                "`rho` must be a number or an array of `num` numbers in "
                f"(-1, 1). Received: rho={rho!r}"
            )
        rhos = rhos.copy()
    xs, ys = [], []
    for r in rhos:
        n = int(rng.integers(set_size[0], set_size[1], endpoint=True))
        x = rng.standard_normal((n, dim))
        y = r * x + np.sqrt(1.0 - r * r) * rng.standard_normal((n, dim))
        if mode == "joint_vs_product":
            x, y = (
                np.concatenate([x, y], axis=1),
                np.concatenate([x, y[perm_rng.permutation(n)]], axis=1),
            )
        xs.append(x)
        ys.append(y)
    sets, _ = _padded_pairs(xs, ys, pad_to)
    labels = gaussian_mutual_information(rhos, dim)[:, None]
    outputs = (sets, labels.astype(np.float32))
    return outputs + (rhos,) if return_params else outputs


def two_sample_pairs(
    num,
    dim=8,
    seed=0,
    set_size=(10, 30),
    same_probability=0.5,
    whiten=False,
    num_components=(1, 10),
    eta=5.0,
    scale_sigma=0.3,
    mean_range=(0.0, 1.0),
    pad_to=None,
    return_params=False,
):
    """Distinguishability: are two sets drawn from the same mixture?

    Sec. 5.2.3 ("synthetic"): 8-dimensional random mixtures generated as
    in Sec. 5.1.1 and sets of 10-30 points (App. B). For each example two
    independent mixtures `P` and `P'` are drawn, then with probability
    `same_probability` (1/2 in the paper) `Q = P` (label 1) and otherwise
    `Q = P'` (label 0); then the two set sizes, each uniform in
    `set_size`, and `X ~ P`, `Y ~ Q`. `P'` is drawn even when unused, so
    the random stream has the same layout for every example. No whitening
    by default (the paper mentions it only for the KL task).

    Args:
        num: Number of examples.
        dim: Dimension `d` (8 in the paper).
        seed: Non-negative integer seed.
        set_size: `(low, high)` range of each set's size.
        same_probability: Probability of label 1, in `[0, 1]`.
        whiten: Whether to whiten each pair jointly (`whiten_sets`).
        num_components: Components per mixture, an int or `(low, high)`.
        eta: LKJ concentration.
        scale_sigma: Log-normal `sigma_0` of the component scales.
        mean_range: Range of the uniform component means.
        pad_to: Width of the padded sets; `None` means `set_size[1]`.
        return_params: Whether to also return `{"p": [...], "q": [...]}`.

    Returns:
        `((x, y, x_mask, y_mask), labels)` as in `kl_divergence_pairs`,
        `labels` float32 `[num, 1]`: 1.0 = same distribution, 0.0 =
        different.
    """
    num, dim, seed, set_size, pad_to = _check_sets(
        num, dim, seed, set_size, pad_to, whiten
    )
    same_probability = check_fraction("same_probability", same_probability)
    kwargs = _mixture_kwargs(num_components, eta, scale_sigma, mean_range)
    rng = np.random.default_rng(seed)
    xs, ys, ps, qs = [], [], [], []
    labels = np.zeros((num, 1), dtype=np.float32)
    for i in range(num):
        p = random_gaussian_mixture(dim, rng, **kwargs)
        other = random_gaussian_mixture(dim, rng, **kwargs)
        same = rng.random() < same_probability
        q = p if same else other
        n_x, n_y = rng.integers(set_size[0], set_size[1], size=2, endpoint=True)
        xs.append(p.sample(n_x, rng))
        ys.append(q.sample(n_y, rng))
        ps.append(p)
        qs.append(q)
        labels[i, 0] = float(same)
    sets, _ = _padded_pairs(xs, ys, pad_to, whiten)
    outputs = (sets, labels)
    return outputs + ({"p": ps, "q": qs},) if return_params else outputs
