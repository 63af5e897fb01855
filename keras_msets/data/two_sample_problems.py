"""Random two-sample problems: pairs of sets from one distribution or two.

`sample_pair(rng)` draws one problem and one pair of sets for it: with
probability 1/2 both sets come from one distribution `P`, otherwise the
second set comes from a perturbed `Q`. The family is broad on purpose
(the pretrained two-sample estimator is trained on it):

- `P`: a latent vector with independent coordinates (standard normal,
  Student-t with 2.5-30 degrees of freedom scaled to unit variance, or
  two-mode coordinates `a s + sqrt(1 - a^2) z` with a random sign `s`),
  then a random invertible linear map and shift.
- `Q` (`PERTURBATIONS`), of a strength drawn log-uniformly; for `shift`,
  `scale` and `correlation` the range is divided by `sqrt(min(n, m))`
  (`min(n, m) ** STRENGTH_SIZE_EXPONENT`, 0.5 for the preset's data),
  so that at every set size it runs from barely detectable to obvious
  (a fixed range would make most different pairs at large sizes
  obvious and most at small sizes invisible):
  `shift` (the mean moves along a random direction, in units of the
  latent standard deviation), `scale` (a random subset of latent
  coordinates scaled), `correlation` (the latent vector multiplied by
  `I + s S` with a random symmetric `S`), `tails` (Student-t latent
  coordinates against normal ones, the same mean and covariance) and
  `modes` (two-mode latent coordinates against normal ones, the same
  mean and covariance).
- Finally one map is applied to both sets (`BOTH_MAPS`): none, a
  per-coordinate monotone map (asinh, a signed cube, exp, the normal
  CDF) or a smooth non-monotone one (`spiral`: each pair of coordinates
  rotated by an angle equal to its radius).

Seeds: `sample_pair` takes a `numpy.random.Generator`; the training data
of the preset use `np.random.default_rng([TRAINING_SEED, chunk, i])`,
a seed sequence no benchmark sample uses.
"""

import numpy as np
from scipy import special

PERTURBATIONS = ("shift", "scale", "correlation", "tails", "modes")
BOTH_MAPS = ("identity", "asinh", "cube", "exp", "normal_cdf", "spiral")
LATENTS = ("normal", "student", "modes")
# First entry of the seed sequence of the training pairs.
TRAINING_SEED = 0x75A3
# The ranges of the `shift`, `scale` and `correlation` strengths are
# divided by `min(n, m) ** STRENGTH_SIZE_EXPONENT`.
STRENGTH_SIZE_EXPONENT = 0.5


def _spiral(u):
    out = u.copy()
    for i in range(0, u.shape[1] - 1, 2):
        a, b = u[:, i], u[:, i + 1]
        angle = np.sqrt(a**2 + b**2)
        out[:, i] = np.cos(angle) * a - np.sin(angle) * b
        out[:, i + 1] = np.sin(angle) * a + np.cos(angle) * b
    return out


_MAPS = {
    "identity": lambda u: u,
    "asinh": lambda u: np.arcsinh(2.0 * u),
    "cube": lambda u: np.sign(u) * np.abs(u) ** 3,
    # Standardized inputs keep exp finite.
    "exp": lambda u: np.exp(np.clip(u, -30.0, 30.0)),
    "normal_cdf": special.ndtr,
    "spiral": _spiral,
}


def _latent(rng, n, dim, kind, parameter, columns):
    """`[n, dim]` independent coordinates, mean 0 and variance 1; those in
    `columns` of `kind` (`"student"`: `parameter` degrees of freedom,
    `"modes"`: separation `parameter`), the others standard normal."""
    out = rng.normal(size=(n, dim))
    k = len(columns)
    if kind == "student" and k:
        nu = parameter
        out[:, columns] = rng.standard_t(nu, size=(n, k)) * np.sqrt(
            (nu - 2.0) / nu
        )
    elif kind == "modes" and k:
        signs = rng.choice([-1.0, 1.0], size=(n, k))
        out[:, columns] = parameter * signs + np.sqrt(
            1.0 - parameter**2
        ) * rng.normal(size=(n, k))
    return out


def _log_uniform(rng, low, high):
    return float(np.exp(rng.uniform(np.log(low), np.log(high))))


def _random_matrix(rng, dim):
    """A random invertible matrix with singular values in [0.3, 3]."""
    q1, _ = np.linalg.qr(rng.normal(size=(dim, dim)))
    q2, _ = np.linalg.qr(rng.normal(size=(dim, dim)))
    values = np.exp(rng.uniform(np.log(0.3), np.log(3.0), size=dim))
    return (q1 * values) @ q2


def _columns(rng, dim):
    """A random non-empty subset of the coordinates (often one)."""
    k = 1 if rng.random() < 0.5 else int(rng.integers(1, dim + 1))
    return np.sort(rng.choice(dim, k, replace=False))


def sample_pair(
    rng, n=None, m=None, dim=None, same=None, perturbation=None, both_map=None
):
    """One random problem and a pair of sets from it.

    Args:
        rng: a `numpy.random.Generator`.
        n, m: the set sizes; None: `n` log-uniform in [10, 2000], and `m`
            equal to `n` or, one time in three, `n` times a factor
            log-uniform in [1/3, 3] (at least 10).
        dim: the dimension; None: uniform in 1..16.
        same: whether both sets come from one distribution; None: a fair
            coin.
        perturbation: one of `PERTURBATIONS` for the different pair;
            None: uniform.
        both_map: one of `BOTH_MAPS`; None: the identity half of the
            time, otherwise uniform over the others.

    Returns:
        `(x [n, dim], y [m, dim], same, info)` with `info` a dict naming
        the latent family, the perturbation, its strength and the map.
    """
    if n is None:
        n = int(round(_log_uniform(rng, 10, 2000)))
    if m is None:
        m = n
        if rng.random() < 1 / 3:
            m = max(10, int(round(n * _log_uniform(rng, 1 / 3, 3))))
    if dim is None:
        dim = int(rng.integers(1, 17))
    if same is None:
        same = bool(rng.random() < 0.5)
    if both_map is None:
        both_map = "identity"
        if rng.random() < 0.5:
            both_map = str(rng.choice(BOTH_MAPS[1:]))
    latent = str(rng.choice(LATENTS))
    columns = _columns(rng, dim)
    parameter = {
        "normal": 0.0,
        "student": _log_uniform(rng, 2.5, 30.0),
        "modes": rng.uniform(0.3, 0.95),
    }[latent]
    matrix = _random_matrix(rng, dim)
    offset = rng.normal(size=dim)
    info = {"latent": latent, "map": both_map, "dim": dim}
    u_x = _latent(rng, n, dim, latent, parameter, columns)
    if same:
        u_y = _latent(rng, m, dim, latent, parameter, columns)
        info.update(perturbation=None, strength=0.0)
    else:
        if perturbation is None:
            perturbation = str(rng.choice(PERTURBATIONS))
        u_y, strength = _perturbed(
            rng, m, dim, latent, parameter, columns, perturbation, min(n, m)
        )
        info.update(perturbation=perturbation, strength=strength)
    mapping = _MAPS[both_map]
    scale = 1.0 / max(1.0, np.max(np.abs(offset)) + 1.0)
    x = mapping(scale * (u_x @ matrix + offset))
    y = mapping(scale * (u_y @ matrix + offset))
    return x, y, same, info


def _perturbed(rng, m, dim, latent, parameter, columns, perturbation, size):
    """`m` latent points of `Q` and the perturbation's strength (`size`:
    the smaller set size, which scales the strengths' ranges)."""
    exponent = STRENGTH_SIZE_EXPONENT
    root = np.sqrt(size) if exponent == 0.5 else size**exponent
    if perturbation == "shift":
        strength = min(3.0, _log_uniform(rng, 0.5, 30.0) / root)
        direction = rng.normal(size=dim)
        direction /= np.linalg.norm(direction)
        u = _latent(rng, m, dim, latent, parameter, columns)
        return u + strength * direction, strength
    if perturbation == "scale":
        strength = min(1.5, _log_uniform(rng, 0.3, 20.0) / root)
        factor = np.exp(strength * rng.choice([-1.0, 1.0]))
        u = _latent(rng, m, dim, latent, parameter, columns)
        scaled = _columns(rng, dim)
        u[:, scaled] *= factor
        return u, strength
    if perturbation == "correlation":
        strength = min(0.9, _log_uniform(rng, 0.5, 20.0) / root)
        if dim == 1:
            # One coordinate has no correlations: a scale change instead.
            u = _latent(rng, m, dim, latent, parameter, columns)
            return u * (1.0 + strength), strength
        s = rng.normal(size=(dim, dim))
        s = s + s.T
        np.fill_diagonal(s, 0.0)
        s /= np.max(np.abs(np.linalg.eigvalsh(s)))
        u = _latent(rng, m, dim, latent, parameter, columns)
        return u @ (np.eye(dim) + strength * s), strength
    if perturbation == "tails":
        # Normal coordinates of P become Student-t (or Student-t ones
        # normal), with the same mean and variance.
        nu = _log_uniform(rng, 2.5, 60.0)
        if latent == "student":
            return _latent(rng, m, dim, "normal", 0.0, columns), 1.0 / parameter
        return _latent(rng, m, dim, "student", nu, columns), 1.0 / nu
    if perturbation == "modes":
        separation = rng.uniform(0.1, 0.95)
        if latent == "modes":
            return _latent(rng, m, dim, "normal", 0.0, columns), parameter
        return _latent(rng, m, dim, "modes", separation, columns), separation
    raise ValueError(
        f"`perturbation` must be one of {PERTURBATIONS}. Received: "
        f"perturbation={perturbation!r}"
    )
