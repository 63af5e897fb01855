"""Estimators that refine classical statistics: a statistics vector, a small
pretrained model, an estimate with an interval.

A preset of this kind has `serves["preprocessing"] == "statistics"`
(written by `keras_msets.training.tasks.StatisticsRegressionTask`) and
its `serves` record names:

- `statistics`: the module of its statistics (`keras_msets.stats.
  mi_statistics`), which defines `FEATURES` (the names of the entries,
  checked against `serves["features"]`) and `pair_statistics(x, y,
  seed=0)` (one float64 vector per pair);
- `base_feature`: the statistic that the model corrects, `target` (how
  the correction is read, `StatisticsRegressionTask.TARGETS`) and
  `quantiles`, the levels of the model's outputs;
- `feature_ranges`: per feature, the smallest and largest value over its
  training rows; `clipped_features`: features clipped into that range
  before the check (sizes beyond the trained ones: `log_n`);
- `dims` (each side's dimension) and `set_size` (the supported `n`);
- optionally `base_gate`, `{"feature": name, "below": value}`: where
  that statistic is within `value` of 0 the estimate is the base itself
  (the interval widened to hold it if needed); with `"scale_feature":
  other, "scale_power": p` the bound is `value * exp(p * other)` (`p =
  -0.5` on `log_n`: a bound that shrinks as `1 / sqrt(n)`, the spread
  of most statistics), `apply_base_gate`;
- optionally `correction_shrink`, `{"below_points": m0, "power": a}`:
  for pairs whose smaller set has `m < m0` rows the model's correction
  of the base is scaled by `s = (m / m0) ** a` (every quantile moved by
  `-(1 - s)` times the median's correction, so the estimate is
  `s * model + (1 - s) * base` and the interval keeps its width),
  `apply_correction_shrink`: at small n the model's correction is
  noisier than the base's error;
- optionally `base_ceiling`, `{"above": c}`: where the base is above `c`
  (in the estimator's unit, nats) the estimate is the base itself, the
  interval widened to hold it, whatever the model, a size rule or a
  whole-sample check answered (`apply_base_ceiling`); pairs outside the
  training ranges answered by the classical estimator
  (`out_of_distribution="fallback"`) get the base instead where it is
  above `c`: the k-NN / KSG estimates saturate far below such values,
  and the model was trained on few of them (with `"warn"` they keep the
  model's answer, with `"raise"` they raise);
- optionally `answers_above`, `{"above": a, "trained": text}`: an
  estimate above `a` (beyond the true values of the training pairs,
  which `text` describes) is extrapolated; such pairs get a
  `UserWarning` that says so (with `out_of_distribution="raise"`, a
  `ValueError`), and keep their answer: no estimator on the pair's
  samples is known to do better there (for samples that barely overlap
  every sample-based estimate of KL falls far below the truth).

`statistics_estimates(estimator, preset, x, y, ...)` checks the pairs,
computes the statistics, runs the model once for all pairs and returns
the median as the estimate and, for `interval=level`, the quantiles
`(1 - level) / 2` and `(1 + level) / 2` of the model (interpolated
linearly in the level between the trained quantile levels).

Out of what the preset was trained on: a side with more columns than
`dims` allows, a column with tied values and at most
`serves["discrete_columns"]["max_values"]` distinct ones (discrete
data, where the preset declares it), or a statistic outside
`feature_ranges` (by more than `RANGE_MARGIN` of its width), is handled
by `out_of_distribution`:
`"fallback"` answers with the classical estimator
(`answer_rules.CLASSICAL`, with a `UserWarning`; its interval is
`(nan, nan)`: no calibrated interval exists for it), `"warn"` keeps
the model's answer with a warning, and `"raise"` raises a `ValueError`.
Sizes above `set_size` give a warning (once per process) and the
model's answer. Pairs of the sizes (and, with `middle_max_dim`, the
dimensions) named by `serves["size_rule"]` (optional) are answered by an
untrained rule instead of the model (`keras_msets.estimators.size_rule`).
The other large pairs are checked against the untrained rule named by
`serves["whole_sample_check"]` (optional), whose answer replaces the
model's where the two disagree by more than its band
(`keras_msets.estimators.whole_sample_check`).
"""

import functools
import importlib
import os
import pathlib
import typing

import numpy as np

from keras_msets import zoo
from keras_msets.estimators import out_of_distribution as ood
from keras_msets.estimators.answer_rules import apply_base_ceiling
from keras_msets.estimators.answer_rules import apply_base_gate
from keras_msets.estimators.answer_rules import apply_correction_shrink
from keras_msets.estimators.answer_rules import check_answers_above
from keras_msets.estimators.answer_rules import handle_outside
from keras_msets.estimators.inputs import _MODEL_LOCK
from keras_msets.estimators.inputs import _as_sets
from keras_msets.estimators.inputs import load_estimator
from keras_msets.estimators.size_rule import apply_size_rule
from keras_msets.estimators.size_rule import size_ruled
from keras_msets.estimators.whole_sample_check import apply_whole_sample_check
from keras_msets.training.tasks.statistics_regression import (
    estimates_from_quantiles,
)
from keras_msets.zoo import registry

# A statistic further than this fraction of its training range outside
# that range makes the pair out of distribution.
RANGE_MARGIN = 0.1


class Estimate(typing.NamedTuple):
    """An estimate with an interval.

    For one pair the fields are floats; for a batch, float64 arrays
    `[batch]`. `low` and `high` bound an interval of probability `level`
    (nan where the classical fallback answered).
    """

    value: typing.Any
    low: typing.Any
    high: typing.Any
    level: float


def check_interval(interval, quantiles):
    """`interval` as a float in (0, the widest trained level]."""
    widest = round(quantiles[-1] - quantiles[0], 10)
    if (
        isinstance(interval, bool)
        or not isinstance(interval, (int, float, np.floating))
        or not 0 < float(interval) <= widest
    ):
        raise ValueError(
            "`interval` must be None or a probability in (0, "
            f"{widest:g}] (the widest interval the preset's quantiles "
            f"{list(quantiles)} give). Received: interval={interval!r}"
        )
    return float(interval)


def _quantile_at(levels, values, level):
    """Values `[rows]` at quantile `level`, linear in the level between
    the trained `levels` (columns of `values`)."""
    levels = np.asarray(levels)
    return np.array([np.interp(level, levels, row) for row in values])


def _stamp(folder):
    """Modification time of a preset's metadata (cache keys)."""
    try:
        return os.stat(pathlib.Path(folder) / "metadata.json").st_mtime_ns
    except OSError:
        return None


def _presets_stamp():
    root = zoo.presets_root()
    try:
        entries = sorted(e.path for e in os.scandir(root) if e.is_dir())
    except OSError:
        entries = []
    return str(root), tuple((e, _stamp(e)) for e in entries)


@functools.lru_cache(maxsize=64)
def _cached_serves(name, folder, stamp):
    del folder, stamp  # cache keys only
    return zoo.info(name).get("serves") or {}


def _serves_of(name):
    """The `serves` record of preset `name`, read again only when its
    metadata.json changes."""
    folder = registry.preset_dir(name)
    return _cached_serves(str(name), str(folder), _stamp(folder))


def is_statistics_preset(name):
    return _serves_of(name).get("preprocessing") == "statistics"


@functools.lru_cache(maxsize=16)
def _cached_default(estimator, stamp):
    del stamp  # cache key only
    from keras_msets.estimators.routing import route_spans

    spans = route_spans(estimator)
    if all(is_statistics_preset(name) for name, _, _ in spans):
        return spans[0][0]
    return None


def default_statistics_preset(estimator):
    """The preset that serves `estimator` by default if it is a preset
    over statistics, else None (cached until a preset's metadata
    changes)."""
    return _cached_default(estimator, _presets_stamp())


def statistics_preset(estimator, model):
    """The preset over statistics that answers for `model` (None: the
    default preset of `estimator`), or None if it is not one."""
    if model is None:
        return default_statistics_preset(estimator)
    if isinstance(model, (str, os.PathLike)) and is_statistics_preset(model):
        return model
    return None


def route_statistics(
    estimator, model, x, y, interval, out_of_distribution, **received
):
    """`statistics_estimates` through `model` (None: the default preset
    of `estimator`) if it is a preset over statistics, else None.

    `received` are the public arguments that select another kind of model
    (`mode=` of `mutual_information`): given, they rule out the
    statistics presets. Returns None (a Multi-Set Transformer or a
    `keras.Model` answers) only when `interval` is None: an interval
    comes from the quantiles of a statistics preset only.
    """
    chosen = {k: v for k, v in received.items() if v is not None}
    preset = None if chosen else statistics_preset(estimator, model)
    if preset is not None:
        return statistics_estimates(
            estimator,
            preset,
            x,
            y,
            interval=interval,
            out_of_distribution=out_of_distribution,
        )
    if interval is not None:
        default = default_statistics_preset(estimator)
        default = f" (`{default}`, the default)" if default else ""
        others = "".join(f", {k}={v!r}" for k, v in received.items())
        raise ValueError(
            "`interval` is given by the presets that return quantiles"
            f"{default}, not by the Multi-Set "
            "Transformers or a keras.Model. Received: "
            f"interval={interval!r} with model={model!r}{others}"
        )
    return None


def _serves(preset):
    serves = _serves_of(preset)
    module = importlib.import_module(serves["statistics"])
    if tuple(serves["features"]) != tuple(module.FEATURES):
        raise ValueError(
            f"Preset {preset!r} was trained on the statistics "
            f"{serves['features']} but {serves['statistics']} computes "
            f"{list(module.FEATURES)}: the preset and the package do not "
            "match. Reinstall keras-msets or retrain the preset."
        )
    return serves, module


def fewest_tied_values(values):
    """The fewest distinct values of a column of `values` that holds a
    value twice, or None if no column does (a column without ties does
    not count: every column of a continuous sample of 10 rows has 10
    values)."""
    if values.shape[0] < 2:
        return None
    ordered = np.sort(values, axis=0)
    distinct = 1 + np.count_nonzero(np.diff(ordered, axis=0), axis=0)
    tied = distinct[distinct < values.shape[0]]
    return int(tied.min()) if tied.size else None


def _discrete_reasons(rule, x, y):
    """Why the pair is discrete for `serves["discrete_columns"]` (None:
    never): a column of `x` or `y` with ties and at most `max_values`
    distinct values."""
    if rule is None:
        return []
    reasons = []
    for name, values in (("x", x), ("y", y)):
        fewest = fewest_tied_values(values)
        if fewest is not None and fewest <= int(rule["max_values"]):
            reasons.append(
                f"`{name}` has a column of {fewest} distinct values "
                "(discrete data; the preset was trained on continuous "
                "samples)"
            )
    return reasons


def _out_of_range(serves, features):
    """Per row, the names of the statistics outside the trained ranges
    (a statistic that is not finite is outside)."""
    names = serves["features"]
    low, high = np.asarray(serves["feature_ranges"], dtype=np.float64).T
    margin = RANGE_MARGIN * (high - low)
    bad = (
        (features < low - margin)
        | (features > high + margin)
        | ~np.isfinite(features)
    )
    return [[names[j] for j in np.nonzero(row)[0]] for row in bad]


def statistics_estimates(
    estimator,
    preset,
    x,
    y,
    interval=None,
    out_of_distribution="fallback",
):
    """`estimator`'s answers for the pairs `x`, `y` through statistics
    preset `preset` (module docstring).

    Returns:
        Without `interval`, a float (one pair) or a float64 array
        `[batch]`; with it, an `Estimate`.
    """
    policy = ood._check_out_of_distribution(out_of_distribution, estimator)
    serves, module = _serves(preset)
    quantiles = tuple(serves["quantiles"])
    if interval is not None:
        interval = check_interval(interval, quantiles)
    x_sets, x_single = _as_sets(x, "x")
    y_sets, y_single = _as_sets(y, "y")
    if x_single != y_single or len(x_sets) != len(y_sets):
        raise ValueError(
            "`x` and `y` must both be one set ([n, d]) or both a batch of "
            f"the same number of sets. Received: {len(x_sets)} and "
            f"{len(y_sets)} sets"
        )
    low_d, high_d = serves["dims"]
    low_n, high_n = serves["set_size"]
    features, outside = [], []
    for i, (a, b) in enumerate(zip(x_sets, y_sets, strict=True)):
        where = f" (pair {i})" if len(x_sets) > 1 else ""
        if serves["paired"] and a.shape[0] != b.shape[0]:
            raise ValueError(
                "`x` and `y` must have the same number of rows: row j of "
                f"both is one joint sample{where}. Received: x.shape="
                f"{a.shape}, y.shape={b.shape}"
            )
        if min(a.shape[0], b.shape[0]) < low_n:
            raise ValueError(
                f"`{estimator}` needs at least {low_n} points per set"
                f"{where}. Received: x.shape={a.shape}, y.shape={b.shape}"
            )
        if max(a.shape[0], b.shape[0]) > high_n:
            ood._warn_once(
                (str(preset), "size", high_n),
                f"Preset {preset!r} is measured for sets of {low_n} to "
                f"{high_n:,} points; larger sets are answered from blocks "
                "of the statistics, as at that size, without a measured "
                "error.",
                stacklevel=3,
            )
        reasons = []
        for name, values in (("x", a), ("y", b)):
            if not low_d <= values.shape[1] <= high_d:
                reasons.append(
                    f"`{name}` has d = {values.shape[1]} columns, outside "
                    f"the trained {low_d}..{high_d}"
                )
        reasons += _discrete_reasons(serves.get("discrete_columns"), a, b)
        if size_ruled(serves.get("size_rule"), a, b):
            # Inside the trained ranges; the model's answer is replaced.
            features.append(np.mean(serves["feature_ranges"], axis=1))
        else:
            features.append(module.pair_statistics(a, b, seed=0))
        outside.append(reasons)
    features = np.array(features)
    names = list(serves["features"])
    for name in serves.get("clipped_features", ()):
        j = names.index(name)
        low, high = serves["feature_ranges"][j]
        features[:, j] = np.clip(features[:, j], low, high)
    for reasons, extra in zip(
        outside, _out_of_range(serves, features), strict=True
    ):
        if extra:
            reasons.append(
                "its statistics " + ", ".join(extra) + " are outside the "
                "range of the training rows"
            )
    model = load_estimator(preset)
    # Batches filled up to a power of two: few shapes to compile.
    rows = features.shape[0]
    padded = np.zeros((1 << (rows - 1).bit_length(), features.shape[1]))
    padded[:rows] = features
    with _MODEL_LOCK:
        outputs = model.predict_on_batch(padded.astype("float32"))
    outputs = np.asarray(outputs, dtype=np.float64)[:rows]
    base = features[:, names.index(serves["base_feature"])]
    values = estimates_from_quantiles(outputs, base, serves["target"])
    estimate = _quantile_at(quantiles, values, 0.5)
    level = 0.0 if interval is None else interval
    low_q = _quantile_at(quantiles, values, (1 - level) / 2)
    high_q = _quantile_at(quantiles, values, (1 + level) / 2)
    estimate, low_q, high_q = apply_base_gate(
        serves.get("base_gate"),
        features,
        names,
        base,
        serves["target"],
        (estimate, low_q, high_q),
    )
    estimate, low_q, high_q = apply_correction_shrink(
        serves.get("correction_shrink"),
        x_sets,
        y_sets,
        base,
        serves["target"],
        (estimate, low_q, high_q),
    )
    plain = estimates_from_quantiles(
        np.zeros((features.shape[0], 1)), base, serves["target"]
    )[:, 0]
    ceiling = serves.get("base_ceiling")
    above = (
        np.zeros(rows, dtype=bool)
        if ceiling is None
        else np.isfinite(plain) & (plain > float(ceiling["above"]))
    )
    flagged = [i for i, r in enumerate(outside) if r]
    if flagged:
        handle_outside(
            estimator,
            preset,
            policy,
            flagged,
            outside,
            x_sets,
            y_sets,
            (estimate, low_q, high_q),
            {i: plain[i] for i in flagged if above[i]},
        )
    inside = [i for i, r in enumerate(outside) if not r]
    apply_size_rule(
        serves.get("size_rule"),
        x_sets,
        y_sets,
        inside,
        (estimate, low_q, high_q),
        level,
    )
    rule = serves.get("size_rule")
    apply_whole_sample_check(
        serves.get("whole_sample_check"),
        x_sets,
        y_sets,
        [i for i in inside if not size_ruled(rule, x_sets[i], y_sets[i])],
        (estimate, low_q, high_q),
        level,
    )
    apply_base_ceiling(above, plain, inside, (estimate, low_q, high_q))
    check_answers_above(
        serves.get("answers_above"), estimator, preset, policy, estimate
    )
    if interval is None:
        return float(estimate[0]) if x_single else estimate
    if x_single:
        return Estimate(
            float(estimate[0]), float(low_q[0]), float(high_q[0]), interval
        )
    return Estimate(estimate, low_q, high_q, interval)
