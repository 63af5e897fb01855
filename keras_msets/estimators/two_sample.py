"""`same_distribution_probability` through a statistics preset.

A statistics preset (`serves.preprocessing == "statistics"`, e.g.
`two_sample_statistics`) reads the vector of
`keras_msets.stats.two_sample_statistics.two_sample_features` of a pair
(permutation z-scores of nine two-sample statistics after the joint
whitening of both sets, and the set sizes and dimension) and returns a
logit; the probability is its sigmoid.

- Any `d` the preset serves (1-16); each set needs at least 2 points and
  both together at least `d + 2` (the pooled covariance is then
  invertible for points in general position).
- Sets outside the trained sizes (`serves.set_size`) give a warning
  once per process. Above 2,000 points the size features are those of
  2,000 (`SIZE_FEATURE_CAP` of `two_sample_statistics`, the largest
  training size), and the statistics use at most
  `LINEAR_POINTS` and `QUADRATIC_POINTS` points of each set (random
  subsets), so the time stops growing there.
- The permutations and subsets have a fixed seed (`seed=0`), so a call
  returns the same answer every time; the answer is invariant (up to
  float rounding) under one invertible affine map applied to both sets.
  The two orders `(x, y)` and `(y, x)` use different relabellings and may
  differ by the permutation noise (a few hundredths at most on the
  benchmark's pairs).
- There is no tail check: the z-scores are calibrated by permutations of
  the pair itself, valid for any distribution.
- A preset may declare `serves["size_offset"]`: `{"per_log_points": c,
  "from_points": a, "to_points": b}`. The logit is then moved by
  `c * log(min(n, m, b) / a)` where the smaller set has `min(n, m) > a`
  points (`keras_msets.training.tasks.two_sample_statistics.
  size_offset`), before the sigmoid: the prior odds of "same"
  grow with the set sizes. The training family scales the strength of
  its differences with the set sizes (the model is about calibrated on
  it at every size); differences of a fixed strength grow easier to see
  as the sets grow, and a large pair without a visible difference is
  then more often from one distribution. `two_sample_statistics`
  declares one
  (chosen on development seeds, `benchmarks/two_sample_design.py
  --size-offset`); a `keras.Model` given as `model` gets none.
"""

import os

import keras
import numpy as np

from keras_msets.estimators.inputs import _MODEL_LOCK
from keras_msets.estimators.inputs import _as_set_pair
from keras_msets.estimators.inputs import _rescaled
from keras_msets.estimators.inputs import load_estimator
from keras_msets.estimators.out_of_distribution import _warn_set_size
from keras_msets.estimators.refined import _serves_of
from keras_msets.stats import two_sample_statistics as statistics
from keras_msets.training.tasks.two_sample_statistics import size_offset

# The Multi-Set Transformer preset of `same_distribution_probability`
# (d = 8), used only when named; a `keras.Model` given as `model` that
# does not read statistics is prepared as it is.
SPECIALIST = "mst_two_sample"


def reads_statistics(model):
    """Whether a `keras.Model` reads the feature vectors of
    `two_sample_features` (its `num_features` is their length)."""
    return getattr(model, "num_features", None) == len(statistics.FEATURE_NAMES)


def _check(spec, x_sets, y_sets):
    if len(x_sets) != len(y_sets):
        raise ValueError(
            "`x` and `y` must hold the same number of sets. Received: "
            f"{len(x_sets)} and {len(y_sets)}"
        )
    low, high = spec.dims
    for i, (x, y) in enumerate(zip(x_sets, y_sets, strict=True)):
        where = f" (pair {i})" if len(x_sets) > 1 else ""
        if x.shape[1] != y.shape[1]:
            raise ValueError(
                "`x` and `y` must have the same dimension d (number of "
                f"columns){where}. Received: x.shape={x.shape}, "
                f"y.shape={y.shape}"
            )
        d = x.shape[1]
        if not low <= d <= high:
            raise ValueError(
                f"`same_distribution_probability` supports d = {low}..{high} "
                f"through {spec.preset!r} (the dimensions it was trained "
                f"on). Received: d={d}{where}"
            )
        if min(len(x), len(y)) < 2 or len(x) + len(y) < d + 2:
            raise ValueError(
                "Each set needs at least 2 points and both together at "
                f"least d + 2 = {d + 2}{where}. Received: x.shape="
                f"{x.shape}, y.shape={y.shape}"
            )


def statistics_probability(spec, x, y, model=None):
    """The probabilities of preset `spec` for the pairs `x`, `y`, through
    `model`: None (`spec.preset`), a preset name or folder, or a
    `keras.Model` taking the feature vectors."""
    x_sets, y_sets, x_single = _as_set_pair(x, y)
    _check(spec, x_sets, y_sets)
    if model is None:
        model = spec.preset
    rule = None
    if isinstance(model, (str, os.PathLike)):
        rule = _serves_of(model).get("size_offset")
        model = load_estimator(model)
    sizes = [len(s) for s in x_sets + y_sets]
    _warn_set_size(
        spec,
        sizes,
        "same_distribution_probability",
        measured=False,
        stacklevel=4,
    )
    rows = np.stack(
        [
            statistics.two_sample_features(*_rescaled(a, b))
            for a, b in zip(x_sets, y_sets, strict=True)
        ]
    )
    with _MODEL_LOCK:
        logits = keras.ops.convert_to_numpy(model(rows.astype("float32")))
    logits = np.asarray(logits, "float64").reshape(len(rows), -1)[:, 0]
    logits = logits + size_offset(
        rule, [len(a) for a in x_sets], [len(b) for b in y_sets]
    )
    out = 1.0 / (1.0 + np.exp(-logits))
    return float(out[0]) if x_single else out
