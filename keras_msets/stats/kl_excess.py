"""An untrained estimate of `KL(P || Q)` from the statistics of
`keras_msets.stats.kl_statistics`, with its standard deviation.

`excess_estimate(x, y)` is the base of the pretrained estimator
(`plugin_corrected`, the bias-corrected Gaussian plug-in of the pooled
copula-normal coordinates) plus the excess of the copula k-NN estimate
at one k over the mean of the same estimate on a few Gaussian reference
pairs, where that excess is significant; its standard deviation comes
from the spread over the reference pairs. It needs no training and
costs `draws + 1` k-NN estimates on whole sets up to `whole_points(d)`
rows (k-d trees, or the distance matrix in `d > 4`), on random blocks
of about that size above, so the cost grows linearly with `n` beyond
it; in `d <= 4` from 500 rows its estimates run on two threads.
`knn_refined_kl_divergence` answers with it where its model is least
reliable (`serves["size_rule"]`, `keras_msets.estimators.refined`).
"""

import numpy as np

from keras_msets.stats.kl_statistics import _blocked_knn
from keras_msets.stats.kl_statistics import _check
from keras_msets.stats.kl_statistics import block_size
from keras_msets.stats.kl_statistics import copula_normal
from keras_msets.stats.kl_statistics import corrected_gaussian_kl
from keras_msets.stats.kl_statistics import gaussian_reference
from keras_msets.stats.kl_statistics import shrunk_gaussian_kl
from keras_msets.stats.nearest_neighbours import PARALLEL_POINTS
from keras_msets.stats.nearest_neighbours import two_threads


def whole_points(d):
    """Largest set on which `excess_terms` computes its k-NN estimates at
    once (`kl_statistics.block_size(d)`: 10,000 rows in `d <= 4`, 4,000
    in `d <= 8`, 2,000 above); random blocks of about that size above
    it, so the cost grows linearly with `n`."""
    return block_size(d)


def _base_of(x, y):
    """`corrected_gaussian_kl`, or the shrunk plug-in where it is nan."""
    value = corrected_gaussian_kl(x, y)
    return value if np.isfinite(value) else shrunk_gaussian_kl(x, y)


def excess_terms(x, y, neighbours=(3,), draws=3, seed=0, points=None):
    """The terms of `excess_estimate` at every `k` of `neighbours`.

    Returns a dict: `base` (`plugin_corrected` of the copula-normal
    sets), `copula` (`[len(neighbours)]` k-NN estimates on them),
    `reference` (`[draws, len(neighbours)]`: the same on `draws` Gaussian
    reference pairs, `gaussian_reference(..., draw=i)`) and
    `reference_base` (`[draws]`: `plugin_corrected` of each reference
    pair). The k-NN estimates use whole sets up to `points` rows
    (default `whole_points(d)`), random blocks of about that size above.
    """
    x, y = _check(x, y)
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 2:
        raise ValueError(
            "`draws` must be an integer >= 2 (the spread of the reference "
            f"needs two draws). Received: draws={draws!r}"
        )
    points = whole_points(x.shape[1]) if points is None else points
    cx, cy = copula_normal(x, y)

    def job(draw):
        """k-NN estimates and base of the copula sets (`draw` None) or of
        one reference pair."""
        pair = (
            (cx, cy) if draw is None else gaussian_reference(cx, cy, seed, draw)
        )
        return _blocked_knn(*pair, seed, neighbours, points)[0], _base_of(*pair)

    jobs = [None, *range(draws)]
    if _parallel(cx, cy):
        results = list(two_threads().map(job, jobs))
    else:
        results = [job(draw) for draw in jobs]
    (copula, base), references = results[0], results[1:]
    return {
        "base": base,
        "copula": copula,
        "reference": np.array([knn for knn, _ in references]),
        "reference_base": np.array([b for _, b in references]),
    }


def _parallel(x, y):
    """Whether `excess_terms` runs its `draws + 1` jobs on the two threads
    of `nearest_neighbours.two_threads`: sets of `PARALLEL_POINTS` rows or
    more in `d <= 4`, where the k-d tree queries (which release the GIL)
    dominate and a job never waits for the pool itself (the queries use
    it only in `d >= 5`). Each job has its own seed: the same numbers
    either way."""
    return x.shape[1] < 5 and max(len(x), len(y)) >= PARALLEL_POINTS


def excess_estimate(x, y, k=20, draws=3, threshold=1.5, seed=0, points=None):
    """The untrained rule: `plugin_corrected` plus the excess of the copula
    k-NN estimate over the Gaussian reference's where that excess is
    significant, and the standard deviation of the answer.

    `excess = knn_k(copula) - mean_i knn_k(reference_i)` over `draws`
    reference pairs (`excess_terms`: the model's own statistic at one k,
    without the learned correction); it counts only where `|excess| >=
    threshold * noise`, `noise = sqrt(var_i(knn_k(reference_i)) (1 + 1 /
    draws))` (its spread where the copula sets are Gaussian), else the
    answer is the base. Where the copula sets are Gaussian, `base +
    knn_k(copula)` is distributed as `base_i + knn_k(reference_i)` on a
    reference pair, so `sd**2 = var_i(base_i + knn_k(reference_i)) +
    var_i(knn_k(reference_i)) / draws` (sample variances over the
    draws). Cost: `draws + 1` k-NN estimates.

    Args:
        x: Samples of `P`, array `[n, d]` with `n >= MIN_POINTS`.
        y: Samples of `Q`, array `[m, d]` with `m >= MIN_POINTS`.
        k: the neighbour of the k-NN estimates (capped at `n - 1`, `m`).
        draws: Gaussian reference pairs, at least 2.
        threshold: the excess counts from this many `noise` up.
        seed: seed of the reference pairs and of the blocks.
        points: whole sets up to this many rows (default
            `whole_points(d)`), random blocks of about that size above.

    Returns:
        `(value, sd)`, floats in nats; `value` is not clipped at 0.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"`k` must be a positive integer. Received: k={k!r}")
    terms = excess_terms(x, y, (k,), draws, seed, points)
    reference = terms["reference"][:, 0]
    excess = terms["copula"][0] - reference.mean()
    noise = np.sqrt(np.var(reference, ddof=1) * (1 + 1 / draws))
    if abs(excess) < threshold * noise:
        excess = 0.0
    spread = np.var(terms["reference_base"] + reference, ddof=1)
    sd = np.sqrt(spread + np.var(reference, ddof=1) / draws)
    return float(terms["base"] + excess), float(sd)
