"""Cheap statistics of paired samples that a small model maps to `I(X; Y)`.

`mi_statistics(x, y)` summarizes the pairs `(x_j, y_j)` (`x` `[n, d_x]`,
`y` `[n, d_y]`) in a fixed-length vector (`FEATURES` names its entries).
Everything is computed on the copula-normal coordinates: each coordinate
of `x` and of `y` replaced by `Phi^-1((rank - 1/2) / n)`, an increasing
map of that coordinate alone, which the mutual information is invariant
to. The statistics, and so any estimate made from them, are therefore
unchanged by any strictly increasing map of any coordinate (heavy tails,
exponentials, bimodal marginals all look alike here):

- the KSG estimates (Kraskov, Stögbauer & Grassberger 2004, algorithm 1,
  max-norm) at `k` in `NEIGHBOURS`;
- the same KSG estimates on a Gaussian sample with the sample's (shrunk)
  copula-normal correlation matrix, cut into as many blocks of the same
  size (`gaussian_reference_ksg`), and the differences `ksg_excess_k*`
  of the sample's from them: the excess estimates how far `I` lies from
  the Gaussian-copula value `I_G`, with about the same KSG bias on both
  sides (with one column per side, among laws with Gaussian marginals
  and a given correlation the Gaussian has the least mutual
  information, so `I >= I_G`; with vector sides that need not hold);
- the Gaussian plug-in `0.5 (log det R_xx + log det R_yy - log det R)` of
  the copula-normal correlation matrix `R`, shrunk towards the identity
  with weight `(d_x + d_y) / (d_x + d_y + n)` so that it stays finite for
  `n <= d_x + d_y` (exact in the limit for Gaussians under per-coordinate
  increasing maps);
- `plugin_corrected`, the base the pretrained estimators correct: the
  same plug-in of the unshrunk covariance with the finite-sample bias of
  each log-determinant removed (`log_det_bias`, Misra, Singh & Demchuk
  2005; `corrected_gaussian_information`), nearly unbiased where the
  copula is Gaussian; the shrunk plug-in where `n < d_x + d_y + 2` or
  the covariance is singular;
- the canonical structure of the shrunk plug-in: `canonical_top`, the
  information `-0.5 log(1 - s_1^2)` of the largest canonical correlation
  `s_1`, and `canonical_share`, its share of the plug-in (the plug-in is
  the sum over all canonical correlations): a few very strong
  components, where rank-based normal scores attenuate the dependence,
  look different from many moderate ones;
- the Mardia kurtosis of the joint copula-normal sample and of each side
  (log of its ratio to the Gaussian value `p (p + 2)`), which says how
  far the dependence is from a Gaussian copula;
- `log n`, `log` of the block size, `d_x`, `d_y` and their logs.

The plug-ins, the canonical statistics and the kurtosis live in
`keras_msets.stats.gaussian_copula` (they see the sample only through its
correlation and fourth moments), the KSG estimates in
`keras_msets.stats.ksg`; this module assembles the vector.

Samples larger than `block_size(d_x + d_y)` rows are cut into random
blocks of at most that size, the KSG estimates of the blocks are averaged
and `log_block` reports the mean block size: the cost then grows
linearly with `n` (about `n * block * (d_x + d_y)` operations), and the
block estimates keep the distribution they have at the block size, with
less spread. The plug-in and kurtosis use all rows. From
`PARALLEL_POINTS` rows the sample's KSG estimates and its Gaussian
reference's (and the whole-sample estimate's parts) run on two threads,
with the same results.

`whole_sample_estimate` is not a statistic of the vector: the base plus
the KSG excess on the whole sample (no blocks), with its spread and an
allowance for its own bias, within a cost budget
(`whole_sample_affordable`); benchmarks/refined_mi_large_n.py and
refined_mi_check_bias.py measure it as a large-n rule on the development
seeds. Its k-d tree counts grow faster than n; with `query_rows` they
are done for a bounded number of rows (refined_mi_check_cheaper.py
compares the variants on the development seeds).
"""

import numpy as np

from keras_msets.stats.classical import as_samples
from keras_msets.stats.gaussian_copula import canonical_information
from keras_msets.stats.gaussian_copula import corrected_gaussian_information
from keras_msets.stats.gaussian_copula import gaussian_copula_statistics
from keras_msets.stats.gaussian_copula import log_det_bias  # noqa: F401
from keras_msets.stats.gaussian_copula import shrunk_correlation
from keras_msets.stats.ksg import MAX_DENSE
from keras_msets.stats.ksg import NEIGHBOURS
from keras_msets.stats.ksg import ksg_estimates
from keras_msets.stats.nearest_neighbours import two_threads
from keras_msets.stats.ranks import column_order

MIN_POINTS = 10  # pairs needed
# Largest block for the KSG counts: BLOCK_BUDGET / (d_x + d_y) rows,
# within [MIN_BLOCK, MAX_BLOCK] (every block gets the dense counts).
BLOCK_BUDGET = 4096
MIN_BLOCK = 256
MAX_BLOCK = MAX_DENSE
# The whole-sample KSG (`whole_sample_estimate`) is computed where it
# costs at most about as much as this: `n^2 (d_x + d_y) <= DENSE_WORK`
# up to `MAX_DENSE` rows (dense distances), `n (d_x + d_y) <= TREE_WORK`
# above (k-d trees, fast in low dimension only).
DENSE_WORK = 30_000_000
TREE_WORK = 60_000
# Samples of at least this many rows compute their KSG estimates (the
# sample's and its Gaussian reference's) on two threads: the same
# numbers (each job has its own seed); at n = 1,000 0.68-0.78x the wall
# time at d_x = d_y = 5, no measurable gain at 1 + 1 and 25 + 25
# (benchmarks/refined_mi_benchmark.py --threads).
PARALLEL_POINTS = 500
# Disjoint parts of the sample whose spread gives that of the estimate.
WHOLE_SAMPLE_PARTS = 4
# Spreads of the whole-sample excess taken as noise by its bias allowance.
EXCESS_NOISE = 1.645
FEATURES = (
    *(f"ksg_k{k}" for k in NEIGHBOURS),
    *(f"ksg_gaussian_k{k}" for k in NEIGHBOURS),
    *(f"ksg_excess_k{k}" for k in NEIGHBOURS),
    "plugin",
    "plugin_corrected",
    "canonical_top",
    "canonical_share",
    "log_kurtosis_joint",
    "log_kurtosis_x",
    "log_kurtosis_y",
    "log_n",
    "log_block",
    "dim_x",
    "dim_y",
    "log_dim_x",
    "log_dim_y",
)
# The statistic that the pretrained estimators correct (`base`).
BASE_FEATURE = "plugin_corrected"


def block_size(total_dim):
    """Largest block of rows on which the KSG counts are computed."""
    return int(np.clip(BLOCK_BUDGET // total_dim, MIN_BLOCK, MAX_BLOCK))


def check_pair(x, y):
    """`x` and `y` as finite float64 `[n, d]` arrays (a 1-D array is one
    column) with the same `n` of at least `MIN_POINTS` rows; clear errors
    for anything else."""
    arrays = []
    for name, value in (("x", x), ("y", y)):
        if np.ndim(value) == 1:
            value = np.asarray(value)[:, None]
        arrays.append(as_samples(name, value, min_rows=MIN_POINTS))
    x, y = arrays
    if x.shape[0] != y.shape[0]:
        raise ValueError(
            "`x` and `y` must have the same number of rows (row j of each "
            f"is one joint sample). Received: x.shape={x.shape}, "
            f"y.shape={y.shape}"
        )
    return x, y


def copula_normal(a, salt=0):
    """Each column of `a` replaced by `Phi^-1((rank - 1/2) / n)` (ranks
    0-based plus one half; ties in a seeded random order,
    `keras_msets.stats.ranks.column_order` with `salt`)."""
    from scipy import special

    n = a.shape[0]
    order = column_order(a, salt)
    ranks = np.empty_like(order)
    ranks[order, np.arange(a.shape[1])[None, :]] = np.arange(n)[:, None]
    # One normal quantile per rank, looked up for every entry.
    return special.ndtri((np.arange(n) + 0.5) / n)[ranks]


def _run_jobs(jobs, rows):
    """The results of the functions `jobs` (no arguments), in order: on
    two threads where the sample has at least `PARALLEL_POINTS` rows."""
    if rows < PARALLEL_POINTS or len(jobs) < 2:
        return [job() for job in jobs]
    return list(two_threads().map(lambda job: job(), jobs))


def _blocks(n, total_dim):
    """How many random blocks `n` rows are cut into for the KSG counts."""
    return max(int(np.ceil(n / block_size(total_dim))), 1)


def _blocked_ksg(x, y, seed, blocks):
    """KSG at `NEIGHBOURS`, averaged over `blocks` random blocks."""
    if blocks == 1:
        return np.array(ksg_estimates(x, y))
    rng = np.random.default_rng(seed)
    parts = np.array_split(rng.permutation(x.shape[0]), blocks)
    return np.mean([ksg_estimates(x[p], y[p]) for p in parts], axis=0)


def gaussian_reference_ksg(
    corr, dim_x, rows, seed, blocks=1, neighbours=NEIGHBOURS, queries=None
):
    """KSG at `NEIGHBOURS` on `blocks` blocks of `rows` draws of a Gaussian
    with correlation `corr`, in copula-normal coordinates (per block),
    averaged over the blocks: what the KSG statistics would be if the
    copula of the sample were Gaussian, with the same blocks as the
    sample's own KSG (so with about the same spread). `queries`: that of
    `ksg_estimates`."""
    rng = np.random.default_rng([seed, rows, corr.shape[0]])
    chol = np.linalg.cholesky(corr)
    z = rng.normal(size=(blocks * rows, corr.shape[0])) @ chol.T
    estimates = []
    for part in np.split(z, blocks):
        zx = copula_normal(part[:, :dim_x])
        zy = copula_normal(part[:, dim_x:])
        estimates.append(ksg_estimates(zx, zy, neighbours, queries=queries))
    return list(np.mean(estimates, axis=0))


def mi_statistics(x, y, seed=0):
    """The statistics `FEATURES` of one sample of pairs, a float64 vector.

    Args:
        x: `[n, d_x]` (a 1-D array is one column), `n >= MIN_POINTS`.
        y: `[n, d_y]`; row `j` of `x` and of `y` is one joint sample.
        seed: seed of the random split into blocks (used only when `n`
            is above `block_size(d_x + d_y)`) and of the Gaussian
            reference sample.

    Returns:
        float64 array `[len(FEATURES)]`.
    """
    x, y = check_pair(x, y)
    zx, zy = copula_normal(x), copula_normal(y, salt=1)
    n, dim_x, dim_y = x.shape[0], x.shape[1], y.shape[1]
    corr = shrunk_correlation(np.concatenate([zx, zy], axis=1))
    blocks = _blocks(n, dim_x + dim_y)
    block = n / blocks  # the mean block size
    ksg, reference = _run_jobs(
        [
            lambda: _blocked_ksg(zx, zy, seed, blocks),
            lambda: gaussian_reference_ksg(
                corr, dim_x, int(round(block)), seed, blocks
            ),
        ],
        n,
    )
    copula = gaussian_copula_statistics(zx, zy)
    corrected = corrected_gaussian_information(zx, zy)
    if np.isnan(corrected):
        corrected = copula[0]
    canonical = canonical_information(corr, dim_x)
    return np.array(
        [
            *ksg,
            *reference,
            *(np.asarray(ksg) - np.asarray(reference)),
            copula[0],
            corrected,
            *canonical,
            *copula[1:],
            np.log(x.shape[0]),
            np.log(block),
            dim_x,
            dim_y,
            np.log(dim_x),
            np.log(dim_y),
        ],
        dtype=np.float64,
    )


def whole_sample_affordable(n, total_dim):
    """Whether `whole_sample_estimate` computes for `n` rows of
    `total_dim = d_x + d_y` columns (its budget: `n^2 total_dim <=
    DENSE_WORK` up to `MAX_DENSE` rows, `n total_dim <= TREE_WORK`
    above; never above 30,000 rows)."""
    if n <= MAX_DENSE:
        return n * n * total_dim <= DENSE_WORK
    return n * total_dim <= TREE_WORK


def whole_sample_estimate(
    x, y, k=3, seed=0, bias_scale=0.0, query_rows=None, query_share=None
):
    """`(estimate, spread, bias)` of `I(X; Y)` from KSG on the whole
    sample, or None where that is over the budget
    (`whole_sample_affordable`).

    The estimate is `plugin_corrected + KSG_k(sample) - KSG_k(reference)`,
    all on copula-normal coordinates, the reference a Gaussian sample of
    the same size with the sample's shrunk copula correlation: where KSG
    is nearly unbiased (large n, low dimension) the difference is the
    excess of `I` over its Gaussian-copula value. `spread` estimates the
    standard deviation of the difference: that of the same difference
    on `WHOLE_SAMPLE_PARTS` disjoint random parts of the sample (each
    against its own reference of the part's size), over
    `sqrt(WHOLE_SAMPLE_PARTS)`; nan below 50 rows per part.

    With `query_rows`, each KSG is the mean of its terms over at most
    `query_rows` random rows of the sample (and of the reference), and
    over `query_rows / WHOLE_SAMPLE_PARTS` rows of each part, the
    neighbours still counted among all rows (`ksg_estimates(...,
    queries=...)`): the same bias as on all rows, more noise (which the
    parts' spread includes), and the counts, which grow faster than n,
    done for a bounded number of rows. With `query_share`, at most
    `ceil(query_share * n)` query rows as well (the smaller bound wins).

    `bias` (nats, >= 0) allows for the estimate's own bias: where KSG
    misses much of the reference's information (its bias `B =
    plugin_corrected - KSG_k(reference)`), it compresses a real excess
    of the sample too. It is `bias_scale * max(B, 0) * max(|excess| -
    EXCESS_NOISE * spread, 0)`: zero where KSG sees the Gaussian
    reference whole or the excess is within its noise (0 where the
    spread is nan).
    """
    x, y = check_pair(x, y)
    n, total_dim = x.shape[0], x.shape[1] + y.shape[1]
    if not whole_sample_affordable(n, total_dim):
        return None
    zx, zy = copula_normal(x), copula_normal(y, salt=1)
    dim_x = zx.shape[1]
    corr = shrunk_correlation(np.concatenate([zx, zy], axis=1))
    base = corrected_gaussian_information(zx, zy)
    if np.isnan(base):
        base = gaussian_copula_statistics(zx, zy)[0]
    order = np.random.default_rng(seed).permutation(n)
    queries = part_queries = None
    bound = n if query_rows is None else int(query_rows)
    if query_share is not None:
        if not 0 < float(query_share) <= 1:
            raise ValueError(
                "`query_share` must be in (0, 1]. Received: "
                f"query_share={query_share!r}"
            )
        bound = min(bound, int(np.ceil(float(query_share) * n)))
    if bound < n:
        # The first rows of a random order are the random query rows.
        zx, zy, queries = zx[order], zy[order], bound
        part_queries = max(queries // WHOLE_SAMPLE_PARTS, 1)
    jobs = [
        lambda: ksg_estimates(zx, zy, (k,), queries=queries)[0],
        lambda: gaussian_reference_ksg(
            corr, dim_x, n, seed, neighbours=(k,), queries=queries
        )[0],
    ]
    rows = n // WHOLE_SAMPLE_PARTS
    if rows >= 50:
        split = np.array_split(order, WHOLE_SAMPLE_PARTS)
        if queries is not None:
            # Rows of `zx` are in `order` now: parts of the new rows.
            split = np.array_split(np.arange(n), WHOLE_SAMPLE_PARTS)
        for i, index in enumerate(split):
            index = index[:rows]
            jobs.append(
                lambda index=index: ksg_estimates(
                    copula_normal(zx[index]),
                    copula_normal(zy[index]),
                    (k,),
                    queries=part_queries,
                )[0]
            )
            jobs.append(
                lambda i=i: gaussian_reference_ksg(
                    corr,
                    dim_x,
                    rows,
                    seed + 1 + i,
                    neighbours=(k,),
                    queries=part_queries,
                )[0]
            )
    own, reference, *terms = _run_jobs(jobs, n)
    excess = own - reference
    # Each part's KSG less its reference's.
    parts = [a - b for a, b in zip(terms[::2], terms[1::2], strict=True)]
    spread = (
        float(np.std(parts, ddof=1) / np.sqrt(len(parts)))
        if parts
        else float("nan")
    )
    bias = 0.0
    if bias_scale and np.isfinite(spread):
        bias = (
            float(bias_scale)
            * max(base - reference, 0.0)
            * max(abs(excess) - EXCESS_NOISE * spread, 0.0)
        )
    return float(base + excess), spread, float(bias)


def pair_statistics(x, y, seed=0):
    """`mi_statistics`: the name the estimators call a statistics module
    by (`keras_msets.estimators.refined`)."""
    return mi_statistics(x, y, seed=seed)
