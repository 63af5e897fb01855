"""Random pairs of distributions with an exact KL divergence.

The KL divergence `KL(P || Q)` is unchanged when one invertible map is
applied to both distributions. `random_kl_problem(rng)` draws a pair of
"latent" distributions with a closed-form divergence and an invertible
map applied to both, with random parameters:

- latent pairs: Gaussians (`P = N(0, I)` against `Q = N(mu, S)`, or the
  reverse, with a shift, an isotropic, diagonal, sparse or dense
  change of covariance, or none: `KL = 0`), independent Gamma
  coordinates (closed form per coordinate, shapes and scales random),
  uniform boxes (`U[0, 1]^d` against a larger box);
- maps applied to both: none, a fixed random invertible matrix, per-
  coordinate monotone maps (asinh, sinh, the normal CDF, signed powers,
  exp, quantile maps to Student-t with random degrees of freedom and to
  exponential marginals, bimodal maps `u + b tanh(c u)`), one per
  problem or one per coordinate, and rotations of coordinate pairs by an
  angle that grows with the radius (a smooth non-monotone
  diffeomorphism).

These are families of the same kinds as those of the estimator
benchmark (`benchmarks/estimator_bench/problems.py`); the random
parameters here come from `numpy.random.default_rng([SEED_TAG, seed])`,
a seed stream that the benchmark (seeded by problem names) does not
use.
"""

import dataclasses

import numpy as np
from scipy import special

SEED_TAG = 0x4B4C  # "KL": the seed stream of the training pairs
MAX_DIM = 25
MAX_KL = 8.0


@dataclasses.dataclass(frozen=True)
class KLProblem:
    """A pair `(P, Q)`: `sample(rng, n, m)` gives `x ~ P [n, d]`,
    `y ~ Q [m, d]`; `truth = KL(P || Q)` in nats."""

    dim: int
    truth: float
    latent: str
    transform: str
    sampler: object = dataclasses.field(repr=False, compare=False)

    def sample(self, rng, n, m):
        return self.sampler(rng, n, m)


# ---------------------------------------------------------------------------
# Latent pairs with a closed-form divergence.
# ---------------------------------------------------------------------------


def gaussian_kl(mean_p, cov_p, mean_q, cov_q):
    d = len(mean_p)
    chol_q = np.linalg.cholesky(cov_q)
    solve = np.linalg.solve
    trace = np.trace(solve(chol_q.T, solve(chol_q, cov_p)))
    delta = solve(chol_q, mean_q - mean_p)
    logdet_q = 2 * np.sum(np.log(np.diag(chol_q)))
    logdet_p = np.linalg.slogdet(cov_p)[1]
    return float(0.5 * (trace + delta @ delta - d + logdet_q - logdet_p))


def _rotation(rng, d):
    q, r = np.linalg.qr(rng.normal(size=(d, d)))
    return q * np.sign(np.diag(r))


def _latent_gaussian(rng, d):
    kind = rng.choice(
        ["same", "shift", "scale", "diagonal", "dense", "sparse"],
        p=[0.1, 0.25, 0.1, 0.15, 0.25, 0.15],
    )
    mean = np.zeros(d)
    cov = np.eye(d)
    if kind in ("shift", "dense", "sparse") or rng.random() < 0.3:
        direction = rng.normal(size=d) if rng.random() < 0.5 else np.ones(d)
        direction /= np.linalg.norm(direction)
        mean = rng.uniform(0.0, 2.5) * direction
    if kind == "scale":
        cov = np.eye(d) * np.exp(rng.uniform(-0.6, 0.6)) ** 2
    elif kind == "diagonal":
        cov = np.diag(np.exp(rng.uniform(-0.5, 0.5, d)) ** 2)
    elif kind == "dense":
        q = _rotation(rng, d)
        spread = rng.uniform(0.05, 0.6)
        cov = q @ np.diag(np.exp(rng.uniform(-spread, spread, d)) ** 2) @ q.T
    elif kind == "sparse":
        chosen = rng.choice(d, size=max(1, d // 2), replace=False)
        scales = np.ones(d)
        scales[chosen] = np.exp(rng.uniform(-0.7, 0.7, len(chosen)))
        cov = np.diag(scales**2)
    if kind == "same":
        mean, cov = np.zeros(d), np.eye(d)
    chol = np.linalg.cholesky(cov)
    zero, eye = np.zeros(d), np.eye(d)
    if rng.random() < 0.5:
        truth = gaussian_kl(zero, eye, mean, cov)

        def sampler(rng, n, m):
            x = rng.normal(size=(n, d))
            return x, rng.normal(size=(m, d)) @ chol.T + mean

    else:
        truth = gaussian_kl(mean, cov, zero, eye)

        def sampler(rng, n, m):
            x = rng.normal(size=(n, d)) @ chol.T + mean
            return x, rng.normal(size=(m, d))

    return f"gaussian_{kind}", truth, sampler, True


def gamma_kl(shape_p, scale_p, shape_q, scale_q):
    """`KL(Gamma(a_p, theta_p) || Gamma(a_q, theta_q))`, elementwise."""
    return (
        (shape_p - shape_q) * special.digamma(shape_p)
        - special.gammaln(shape_p)
        + special.gammaln(shape_q)
        + shape_q * (np.log(scale_q) - np.log(scale_p))
        + shape_p * (scale_p - scale_q) / scale_q
    )


def _latent_gamma(rng, d):
    shape_p = np.full(d, rng.uniform(0.5, 5.0))
    shape_q = shape_p.copy()
    if rng.random() < 0.3:
        shape_q = shape_p * np.exp(rng.uniform(-0.4, 0.4, d))
    scale_p = np.ones(d)
    ratio = np.exp(rng.uniform(-0.7, 0.7) * np.ones(d))
    if rng.random() < 0.3:
        ratio = np.exp(rng.uniform(-0.7, 0.7, d))
    if rng.random() < 0.15:
        ratio, shape_q = np.ones(d), shape_p.copy()
    scale_q = scale_p * ratio
    truth = float(np.sum(gamma_kl(shape_p, scale_p, shape_q, scale_q)))

    def sampler(rng, n, m):
        x = rng.gamma(shape_p, scale_p, size=(n, d))
        return x, rng.gamma(shape_q, scale_q, size=(m, d))

    return "gamma", truth, sampler, False


def _latent_uniform(rng, d):
    widths = np.exp(rng.uniform(0.0, 0.5, d)) if d > 1 else np.array([1.5])
    truth = float(np.sum(np.log(widths)))

    def sampler(rng, n, m):
        x = rng.uniform(size=(n, d))
        return x, rng.uniform(size=(m, d)) * widths

    return "uniform", truth, sampler, False


# ---------------------------------------------------------------------------
# Invertible maps applied to both distributions.
# ---------------------------------------------------------------------------


def _student_marginal(nu):
    def apply(u):
        lower = special.stdtrit(nu, special.ndtr(-np.abs(u)))
        return -np.sign(u) * lower

    return apply


def _monotone(rng, gaussian_input):
    """A random strictly increasing map of the real line."""
    names = ["asinh", "sinh", "normal_cdf", "power", "exp", "bimodal"]
    if gaussian_input:
        names += ["student_t", "exponential"]
    name = str(rng.choice(names))
    a = float(np.exp(rng.uniform(np.log(0.5), np.log(2.5))))
    if name == "asinh":
        return name, lambda u: np.arcsinh(a * u)
    if name == "sinh":
        a = min(a, 1.5)
        return name, lambda u: np.sinh(a * np.clip(u, -300, 300))
    if name == "normal_cdf":
        return name, special.ndtr
    if name == "power":
        p = float(np.exp(rng.uniform(np.log(0.4), np.log(3.0))))
        return name, lambda u: np.sign(u) * np.abs(u) ** p
    if name == "exp":
        a = min(a, 1.5)
        return name, lambda u: np.exp(a * np.clip(u, -300, 300))
    if name == "bimodal":
        b, c = rng.uniform(0.5, 4.0), rng.uniform(1.0, 4.0)
        return name, lambda u: u + b * np.tanh(c * u)
    if name == "student_t":
        nu = float(np.exp(rng.uniform(0.0, np.log(10.0))))
        return name, _student_marginal(nu)
    return name, lambda u: -special.log_ndtr(-u)


def _spiral(speed):
    def apply(u):
        out = u.copy()
        for i in range(0, u.shape[1] - 1, 2):
            a, b = u[:, i], u[:, i + 1]
            angle = speed * np.sqrt(a**2 + b**2)
            out[:, i] = np.cos(angle) * a - np.sin(angle) * b
            out[:, i + 1] = np.sin(angle) * a + np.cos(angle) * b
        return out

    return apply


def _transform(rng, d, gaussian_input):
    """`(description, function of an [n, d] array)`."""
    kind = rng.choice(
        ["identity", "linear", "monotone", "per_coordinate", "spiral"],
        p=[0.2, 0.15, 0.35, 0.15, 0.15],
    )
    if kind == "identity":
        return "identity", lambda u: u
    if kind == "linear":
        matrix = _rotation(rng, d) @ np.diag(np.exp(rng.uniform(-1, 1, d)))
        return "linear", lambda u: u @ matrix.T
    if kind == "monotone":
        name, f = _monotone(rng, gaussian_input)
        return name, f
    if kind == "per_coordinate":
        maps = [_monotone(rng, gaussian_input)[1] for _ in range(d)]

        def apply(u):
            return np.stack([f(u[:, j]) for j, f in enumerate(maps)], axis=1)

        return "per_coordinate", apply
    if d < 2:
        name, f = _monotone(rng, gaussian_input)
        return name, f
    speed = rng.uniform(0.3, 1.5)
    return "spiral", _spiral(speed)


def random_kl_problem(rng, dim=None):
    """One random `KLProblem` (its divergence at most `MAX_KL`)."""
    while True:
        d = dim or int(np.round(np.exp(rng.uniform(0.0, np.log(MAX_DIM)))))
        latent = rng.choice(
            [_latent_gaussian, _latent_gamma, _latent_uniform],
            p=[0.75, 0.18, 0.07],
        )
        name, truth, latent_sampler, gaussian = latent(rng, d)
        if truth <= MAX_KL:
            break
    description, transform = _transform(rng, d, gaussian)

    def sampler(rng, n, m):
        x, y = latent_sampler(rng, n, m)
        return transform(x), transform(y)

    return KLProblem(d, max(float(truth), 0.0), name, description, sampler)


def training_pair(seed, min_size=10, max_size=12_000):
    """The `seed`-th training pair: `(x, y, problem)`.

    The set size `n` is log-uniform in `[min_size, max_size]`; `m = n`
    for 70 % of the pairs, else `n` times a log-uniform factor in
    `[1/4, 4]` (kept in range).
    """
    rng = np.random.default_rng([SEED_TAG, seed])
    problem = random_kl_problem(rng)
    n = int(np.exp(rng.uniform(np.log(min_size), np.log(max_size))))
    m = n
    if rng.random() < 0.3:
        m = int(np.clip(n * np.exp(rng.uniform(-1.4, 1.4)), min_size, max_size))
    x, y = problem.sample(rng, n, m)
    return x, y, problem


# ---------------------------------------------------------------------------
# Tables of statistics for training (cached on disk, resumable).
# ---------------------------------------------------------------------------

# Seed ranges of the splits: disjoint by construction.
SPLIT_SEEDS = {
    "train": (0, 8000),
    "validation": (100_000, 100_800),
    "test": (200_000, 200_400),
}
CHUNK = 100


def _chunk_rows(seeds, statistics):
    features, truth, dims, sizes, latents, transforms = [], [], [], [], [], []
    for seed in seeds:
        x, y, problem = training_pair(seed)
        features.append(statistics(x, y))
        truth.append(problem.truth)
        dims.append(problem.dim)
        sizes.append((x.shape[0], y.shape[0]))
        latents.append(problem.latent)
        transforms.append(problem.transform)
    return {
        "features": np.asarray(features),
        "truth": np.asarray(truth),
        "dim": np.asarray(dims),
        "sizes": np.asarray(sizes),
        "latent": np.asarray(latents),
        "transform": np.asarray(transforms),
        "seed": np.asarray(list(seeds)),
    }


def statistics_table(split, cache_dir, statistics=None, compute=True):
    """The statistics of the split's training pairs, cached by chunks.

    Args:
        split: `"train"`, `"validation"` or `"test"` (`SPLIT_SEEDS`).
        cache_dir: folder of the cache (one `.npz` file per chunk of
            `CHUNK` pairs); missing chunks are computed and written
            (when `compute`), so an interrupted run resumes.
        statistics: `statistics(x, y)` -> vector; default
            `keras_msets.stats.kl_statistics.kl_statistics`.
        compute: whether to compute missing chunks (else they are left
            out of the table).

    Returns:
        dict of arrays: `features` `[rows, f]`, `truth`, `dim`, `sizes`
        `[rows, 2]`, `latent`, `transform`, `seed`.
    """
    import os
    import pathlib

    if statistics is None:
        from keras_msets.stats.kl_statistics import kl_statistics

        statistics = kl_statistics
    low, high = SPLIT_SEEDS[split]
    folder = pathlib.Path(cache_dir) / split
    folder.mkdir(parents=True, exist_ok=True)
    parts = []
    for start in range(low, high, CHUNK):
        path = folder / f"chunk_{start}.npz"
        if not path.exists():
            if not compute:
                continue
            rows = _chunk_rows(
                range(start, min(start + CHUNK, high)), statistics
            )
            temporary = folder / f"chunk_{start}.tmp.npz"
            np.savez(temporary, **rows)
            os.replace(temporary, path)
        with np.load(path) as data:
            parts.append({k: data[k] for k in data.files})
    if not parts:
        raise ValueError(f"No cached rows of split {split!r} in {folder}")
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Caches the statistics.")
    parser.add_argument("cache_dir")
    parser.add_argument("--splits", nargs="+", default=list(SPLIT_SEEDS))
    args = parser.parse_args()
    for name in args.splits:
        table = statistics_table(name, args.cache_dir)
        print(name, table["features"].shape, flush=True)
