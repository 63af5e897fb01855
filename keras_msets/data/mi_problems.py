"""Random mutual-information problems with exact answers, and their table.

`random_problem(rng)` draws one problem: a joint law of `(X, Y)` whose
mutual information is known exactly because it is built from a law with a
closed form and then changed only by separate invertible maps of `X` and
of `Y` (which leave `I(X; Y)` unchanged):

- latent laws: Gaussians with componentwise, dense (between random
  orthonormal bases) or sparse cross-correlations, `dim x != dim y` too;
  multivariate Student-t with the same scale matrices (closed form of
  Arellano-Valle, Contreras-Reyes & Genton 2013); uniform additive noise
  (`Y_j = X_j + eps_j U_j`, `I = eps/2 - log eps` for `eps <= 1`,
  `1 / (2 eps)` above); independent pairs (`I = 0`);
- maps: independent coordinates appended to either side, a fixed random
  invertible mixing of a side, smooth non-monotone diffeomorphisms
  (coordinates `(0, 1), (2, 3), ...` rotated by an angle proportional to
  their radius), then per-coordinate increasing maps (asinh, sinh, the
  normal CDF, signed powers, exp, quantile maps to Student-t and
  exponential marginals, a map to bimodal marginals).

These are the same kinds of families as the estimator benchmark's
(`benchmarks/estimator_bench/problems.py`), with random parameters; the
random streams here (`numpy.random.default_rng([SEED_TAG, split,
index])`) are disjoint from the benchmark's (seeded by the problem's
name, `n` and a seed 0-4).

`statistics_table(split, rows, cache_dir)` draws `rows` problems of a
split, one sample each at a size `n` log-uniform in `[MIN_N, MAX_N]`
(`[200, 20,000]` for the split `"train_large"`),
and computes `keras_msets.stats.mi_statistics` of it: the table that the
`StatisticsRegressionTask` of a mutual-information preset trains on. It
is cached on disk in chunks (an interrupted run resumes).
"""

import pathlib

import numpy as np
from scipy import special

from keras_msets.stats import mi_statistics as stats

SEED_TAG = 29_2026  # first word of every training seed sequence
SPLITS = {
    "train": 0,
    "validation": 1,
    "test": 2,
    "train_gaussian": 3,
    "train_large": 4,
}
MIN_N = 10
MAX_N = 5_000
# Extra training rows: Gaussian latents only, with a larger mutual
# information (the drawn family has few strongly dependent Gaussians in
# high d); rows of every family at larger sizes (`n_range`: the sizes
# drawn, log-uniform; `(MIN_N, MAX_N)` elsewhere), so that n = 10,000 lies
# inside the trained range.
EXTRA = {
    "train_gaussian": {"family": "gaussian", "information_range": (0.3, 15.0)},
    "train_large": {"n_range": (200, 20_000)},
}
MAX_DIM = 25
CHUNK = 50  # rows per cache file


def _log_uniform(rng, low, high):
    return float(np.exp(rng.uniform(np.log(low), np.log(high))))


def _dim(rng):
    return int(np.clip(round(_log_uniform(rng, 1, MAX_DIM + 0.49)), 1, 25))


def _orthonormal(rng, d):
    q, r = np.linalg.qr(rng.normal(size=(d, d)))
    return q * np.sign(np.diag(r))


def student_t_correction(nu, dim_x, dim_y):
    """`I` of a multivariate Student-t with `nu` degrees of freedom minus
    that of the Gaussian with the same scale matrix (nats)."""
    g, psi = special.gammaln, special.digamma
    a, b, c = (nu + dim_x) / 2, (nu + dim_y) / 2, (nu + dim_x + dim_y) / 2
    return float(
        g(nu / 2)
        + g(c)
        - g(a)
        - g(b)
        + a * psi(a)
        + b * psi(b)
        - c * psi(c)
        - nu / 2 * psi(nu / 2)
    )


def uniform_noise_information(eps):
    """`I(X; X + eps U)` for `X, U ~ U(0, 1)` independent (nats)."""
    eps = np.asarray(eps, dtype=np.float64)
    return np.where(eps <= 1, eps / 2 - np.log(eps), 1 / (2 * eps))


def _spiral(u, speed):
    out = u.copy()
    for i in range(0, u.shape[1] - 1, 2):
        a, b = u[:, i], u[:, i + 1]
        angle = speed * np.sqrt(a**2 + b**2)
        out[:, i] = np.cos(angle) * a - np.sin(angle) * b
        out[:, i + 1] = np.sin(angle) * a + np.cos(angle) * b
    return out


def _student_marginal(nu):
    def apply(u):
        lower = special.stdtrit(nu, special.ndtr(-np.abs(u)))
        return -np.sign(u) * lower

    return apply


MONOTONE_MAPS = {
    "identity": lambda u: u,
    "asinh": lambda u: np.arcsinh(2.0 * u),
    "sinh": lambda u: np.sinh(np.clip(1.5 * u, -300, 300)),
    "normal_cdf": special.ndtr,
    "cube": lambda u: np.sign(u) * np.abs(u) ** 3,
    "sqrt": lambda u: np.sign(u) * np.sqrt(np.abs(u)),
    "exp": lambda u: np.exp(np.clip(u, -300, 300)),
    "student_t2": _student_marginal(2.0),
    "exponential": lambda u: -special.log_ndtr(-u),
    "bimodal": lambda u: u + 3.0 * np.tanh(3.0 * u),
}


def _cross_matrix(rng, dim_x, dim_y, information, structure):
    """A cross-correlation `C` (`[dim_x, dim_y]`, singular values below 1)
    whose Gaussian mutual information is `information`."""
    rank = min(dim_x, dim_y)
    active = int(np.clip(round(_log_uniform(rng, 1, rank + 0.49)), 1, rank))
    shares = rng.dirichlet(np.ones(active)) * information
    shares = np.minimum(shares, 3.5)  # singular values up to ~0.9995
    singular = np.sqrt(1 - np.exp(-2 * shares))
    cross = np.zeros((dim_x, dim_y))
    if structure == "dense":
        u = _orthonormal(rng, dim_x)[:, :active]
        v = _orthonormal(rng, dim_y)[:, :active]
        cross = u @ np.diag(singular) @ v.T
    else:  # componentwise / sparse: on coordinate pairs
        rows = rng.permutation(dim_x)[:active]
        cols = rng.permutation(dim_y)[:active]
        if structure == "componentwise":
            rows, cols = np.arange(active), np.arange(active)
        cross[rows, cols] = singular
    return cross


class Problem:
    """One drawn problem: `sample(n, rng)` and the exact `truth` (nats).

    Attributes: `family` (`"gaussian"`, `"student_t"`, `"uniform_noise"`
    or `"independent"`), `dim_x`, `dim_y`, `truth`, `description`.
    """

    def __init__(self, family, dim_x, dim_y, truth, draw, description):
        self.family = family
        self.dim_x = dim_x
        self.dim_y = dim_y
        self.truth = float(truth)
        self._draw = draw
        self.description = description

    def sample(self, n, rng):
        return self._draw(rng, n)


def random_problem(rng, family=None, information_range=(0.01, 10.0)):
    """A random problem (module docstring) drawn with `rng`; `family`
    (None: drawn) and the range of the latent Gaussian's mutual
    information (log-uniform) may be fixed."""
    if family is None:
        family = rng.choice(
            ["gaussian", "student_t", "uniform_noise", "independent"],
            p=[0.6, 0.18, 0.12, 0.10],
        )
    dim_x, dim_y = _dim(rng), _dim(rng)
    if rng.uniform() < 0.4:
        dim_y = dim_x
    notes = [str(family)]
    if family == "uniform_noise":
        core = min(dim_x, dim_y)
        core = int(np.clip(round(_log_uniform(rng, 1, core + 0.49)), 1, core))
        eps = np.array([_log_uniform(rng, 0.03, 4.0) for _ in range(core)])
        truth = float(np.sum(uniform_noise_information(eps)))

        def latent(rng, n):
            x = rng.uniform(size=(n, core))
            y = x + eps * rng.uniform(size=(n, core))
            return special.ndtri(x), y

        inner_x = inner_y = core
    else:
        information = 0.0
        if family != "independent":
            information = _log_uniform(rng, *information_range)
        structure = rng.choice(["componentwise", "dense", "sparse"])
        notes.append(str(structure))
        cross = _cross_matrix(rng, dim_x, dim_y, information, structure)
        gram = np.eye(dim_y) - cross.T @ cross
        noise = np.linalg.cholesky(gram + 1e-12 * np.eye(dim_y))
        joint = np.block([[np.eye(dim_x), cross], [cross.T, np.eye(dim_y)]])
        logdet = np.linalg.slogdet(joint)[1]
        truth = max(-0.5 * logdet, 0.0)
        nu = None
        if family == "student_t":
            nu = float(rng.choice([1.0, 1.5, 2.0, 3.0, 5.0, 8.0, 15.0]))
            truth += student_t_correction(nu, dim_x, dim_y)
            notes.append(f"nu={nu:g}")

        def latent(rng, n):
            x = rng.normal(size=(n, dim_x))
            y = x @ cross + rng.normal(size=(n, dim_y)) @ noise.T
            if nu is not None:
                scale = np.sqrt(nu / rng.chisquare(nu, size=(n, 1)))
                x, y = x * scale, y * scale
            return x, y

        inner_x, inner_y = dim_x, dim_y
    # Independent coordinates appended (uniform noise: up to the drawn
    # dims), then per side: mixing, spiral, a per-coordinate map.
    extra_x, extra_y = dim_x - inner_x, dim_y - inner_y
    sides = []
    for dim in (dim_x, dim_y):
        mix = _orthonormal(rng, dim) * np.linspace(1.0, 3.0, dim)
        use_mix = dim > 1 and rng.uniform() < 0.35
        speed = _log_uniform(rng, 0.2, 1.5)
        use_spiral = dim > 1 and rng.uniform() < 0.15
        names = list(MONOTONE_MAPS)
        maps = [str(rng.choice(names)) for _ in range(dim)]
        if rng.uniform() < 0.5:
            maps = [maps[0]] * dim
        sides.append((mix if use_mix else None, speed, use_spiral, maps))
        notes.append(
            ("mix+" if use_mix else "")
            + (f"spiral{speed:.2f}+" if use_spiral else "")
            + maps[0]
        )

    def apply(u, side):
        mix, speed, use_spiral, maps = side
        if mix is not None:
            u = u @ mix.T
        if use_spiral:
            u = _spiral(u, speed)
        out = np.stack(
            [MONOTONE_MAPS[m](u[:, j]) for j, m in enumerate(maps)], axis=1
        )
        # Far tails of heavy-tailed latents can overflow a map: clipped to
        # the largest floats (ties only in the extreme tails).
        return np.clip(np.nan_to_num(out), -1e300, 1e300)

    def draw(rng, n):
        x, y = latent(rng, n)
        if extra_x:
            x = np.concatenate([x, rng.normal(size=(n, extra_x))], axis=1)
        if extra_y:
            y = np.concatenate([y, rng.normal(size=(n, extra_y))], axis=1)
        return apply(x, sides[0]), apply(y, sides[1])

    return Problem(str(family), dim_x, dim_y, truth, draw, " ".join(notes))


def table_sample(split, index):
    """`(problem, x, y)`: the problem and sample of row `index` of
    `split`."""
    rng = np.random.default_rng([SEED_TAG, SPLITS[split], index])
    options = dict(EXTRA.get(split, {}))
    n_range = options.pop("n_range", (MIN_N, MAX_N))
    problem = random_problem(rng, **options)
    n = int(round(_log_uniform(rng, *n_range)))
    x, y = problem.sample(n, rng)
    return problem, x, y


def table_row(split, index):
    """`(features, truth, info)` of row `index` of `split`."""
    problem, x, y = table_sample(split, index)
    n = x.shape[0]
    features = stats.mi_statistics(x, y, seed=index)
    info = (problem.family, n, problem.dim_x, problem.dim_y)
    return features, problem.truth, info


def _chunk_path(cache_dir, split, chunk):
    return pathlib.Path(cache_dir) / f"mi_{split}_{chunk:05d}.npz"


def statistics_table(split, rows, cache_dir, log=None):
    """The table of `rows` rows of `split` (computing missing chunks).

    Returns a dict: `features` `[rows, len(FEATURES)]`, `truth`,
    `base` (the `BASE_FEATURE` column), `family`, `n`, `dim_x`,
    `dim_y`.
    """
    cache_dir = pathlib.Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    parts = []
    for chunk in range(int(np.ceil(rows / CHUNK))):
        path = _chunk_path(cache_dir, split, chunk)
        if not path.exists():
            records = [
                table_row(split, i)
                for i in range(chunk * CHUNK, (chunk + 1) * CHUNK)
            ]
            temporary = path.with_suffix(".tmp.npz")
            np.savez(
                temporary,
                features=np.array([r[0] for r in records]),
                truth=np.array([r[1] for r in records]),
                family=np.array([r[2][0] for r in records]),
                n=np.array([r[2][1] for r in records]),
                dim_x=np.array([r[2][2] for r in records]),
                dim_y=np.array([r[2][3] for r in records]),
            )
            temporary.replace(path)
            if log is not None:
                log(f"{split}: chunk {chunk} written ({path})")
        with np.load(path) as data:
            parts.append({key: data[key] for key in data.files})
    table = {
        key: np.concatenate([p[key] for p in parts])[:rows] for key in parts[0]
    }
    table["base"] = table["features"][
        :, stats.FEATURES.index(stats.BASE_FEATURE)
    ]
    return table


DEFAULT_ROWS = {
    "train": 10000,
    "train_gaussian": 3000,
    "train_large": 4000,
    "validation": 400,
    "test": 400,
}


def default_cache_dir():
    """`$KERAS_MSETS_CACHE/mi_statistics`, else
    `~/.cache/keras_msets/mi_statistics`."""
    import os

    root = os.environ.get("KERAS_MSETS_CACHE")
    root = pathlib.Path(root) if root else pathlib.Path.home() / ".cache"
    if not os.environ.get("KERAS_MSETS_CACHE"):
        root = root / "keras_msets"
    return root / "mi_statistics_v4"


def main(argv=None):
    """`python -m keras_msets.data.mi_problems [--cache-dir D]`: computes
    the tables of `DEFAULT_ROWS` (resumable)."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--cache-dir", default=None)
    args = parser.parse_args(argv)
    cache_dir = args.cache_dir or default_cache_dir()
    for split in (
        "validation",
        "test",
        "train",
        "train_gaussian",
        "train_large",
    ):
        statistics_table(split, DEFAULT_ROWS[split], cache_dir, log=print)
    statistics_table(
        "train_large", DEFAULT_ROWS["train_large"], cache_dir, log=print
    )


if __name__ == "__main__":
    main()
