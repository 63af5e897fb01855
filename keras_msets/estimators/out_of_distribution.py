"""Data outside what a preset was trained on: warnings and the tail check.

Warnings about a preset (set sizes, dimensions it has not learned) are
given once per process per preset and reason (`_warn_once`). Pairs whose
tails are heavier than those of the preset's training sets
(`tail_thresholds`) are refused, answered with a warning, or answered
by the classical estimator (`_heavy_tails`).
"""

import functools
import json
import os
import pathlib
import threading
import warnings

from keras_msets import zoo
from keras_msets.stats.classical import knn_kl_divergence
from keras_msets.stats.classical import ksg_mutual_information

# A preset "has learned" a dimension when its error there is below this
# fraction of the best constant answer's (`unlearned_dims`).
SKILL_MARGIN = 0.9
# What the estimators do with data whose tails are heavier than those of
# every training set of the preset (`tail_thresholds`).
OUT_OF_DISTRIBUTION = ("fallback", "warn", "raise")
# The tail check's calibration (`python -m
# keras_msets.estimators.calibrate_tails` writes it).
TAIL_THRESHOLDS_PATH = pathlib.Path(__file__).with_name("tail_thresholds.json")
# The set sizes where each preset's error was measured not to grow
# (`python benchmarks/estimator_sample_size.py --ranges-from RESULT`
# writes it).
SET_SIZE_RANGES_PATH = pathlib.Path(__file__).with_name("set_size_ranges.json")
# Warnings about a preset (set sizes, dimensions it has not learned) are
# given once per process per preset and reason: `(preset, reason)` keys.
_WARNED = set()
_WARNED_LOCK = threading.Lock()


def _warn_once(key, message, stacklevel):
    """Warns `message` unless a warning of `key` was given before."""
    with _WARNED_LOCK:
        if key in _WARNED:
            return
        _WARNED.add(key)
    warnings.warn(message, UserWarning, stacklevel=stacklevel + 1)


def _warn_unlearned(name, dims, stacklevel):
    """Warns (once per process per preset and `d`) when preset `name` has
    not learned its task at some of the dimensions `dims` of a call."""
    try:
        metrics = zoo.info(name).get("metrics", {})
    except ValueError:
        return
    for d in sorted(set(unlearned_dims(metrics)) & set(int(d) for d in dims)):
        _warn_once(
            (str(name), "unlearned", d),
            f"Preset {name!r} is not clearly better than a constant answer "
            f"at d = {d} on its test pairs (its error is at least "
            f"{SKILL_MARGIN:.0%} of that of always answering the median "
            "test label): it has not learned its task there, and its "
            "answers in that dimension should not be used. See its model "
            f"card: `keras-msets zoo info {name}`.",
            stacklevel + 1,
        )


@functools.lru_cache(maxsize=1)
def _set_size_ranges(path):
    if not os.path.isfile(path):
        return {"presets": {}}
    with open(path, encoding="utf-8") as file:
        return json.load(file)


def measured_set_sizes(preset):
    """`(low, high)`: the set sizes where the error of `preset` (a name or
    a path) on data like its training data was measured not to grow, or
    None when it was not measured (then its trained sizes apply).

    From `set_size_ranges.json` beside this module, written by
    `benchmarks/estimator_sample_size.py` from its measurement at n = 50,
    200 and 1000 against the truth; only the weights that were measured
    (their sha256 is stored there) are covered.
    """
    record = _set_size_ranges(str(SET_SIZE_RANGES_PATH))
    found = record["presets"].get(os.path.basename(os.fspath(preset)))
    if found is None or not _same_weights(preset, found["weights_sha256"]):
        return None  # not measured, or other weights than those measured
    return int(found["low"]), int(found["high"])


def _same_weights(preset, sha256):
    """Whether the weights file of `preset` has this sha256."""
    try:
        files = zoo.info(preset).get("files_sha256", {})
    except ValueError:
        return False
    return files.get("model.weights.h5") == sha256


def _warn_set_size(spec, sizes, estimator, measured, stacklevel):
    """Warns (once per process and preset) when sets have sizes where the
    preset's error grows: outside its measured range (`measured=True` and
    one was measured) or else outside its trained sizes."""
    trained_low, trained_high = spec.set_size
    low, high = trained_low, trained_high
    ranges = measured_set_sizes(spec.preset) if measured else None
    if ranges is not None:
        low, high = ranges
    if min(sizes) >= low and max(sizes) <= high:
        return
    text = (
        f"`{estimator}`: the model was trained on sets of "
        f"{trained_low}-{trained_high} points; these have "
        f"{min(sizes)}-{max(sizes)}"
    )
    if ranges is not None:
        text += (
            f", and its error on data like its training data grows outside "
            f"{low}-{high} points (measured at 50, 200 and 1000 points: "
            "benchmarks/estimator_sample_size.py)"
        )
    _warn_once(
        (str(spec.preset), "set_size"),
        f"{text}, so the estimate may be less accurate. (This warning is "
        "given once per process and preset.)",
        stacklevel + 1,
    )


def unlearned_dims(metrics):
    """The test dimensions `d` where a preset is not clearly better than a
    constant.

    From a preset card's metrics: every `d` with `mae_d{d} >= SKILL_MARGIN
    * median_mae_d{d}` (the error of always answering the median test
    label), the criterion the model cards use. The estimators warn when
    they load such a preset.
    """
    dims = []
    for key, value in metrics.items():
        if key.startswith("mae_d") and f"median_{key}" in metrics:
            if value >= SKILL_MARGIN * metrics[f"median_{key}"]:
                dims.append(int(key[len("mae_d") :]))
    return sorted(dims)


@functools.lru_cache(maxsize=1)
def _tail_calibration(path):
    with open(path, encoding="utf-8") as file:
        return json.load(file)


def tail_thresholds(preset):
    """`{d: threshold}` of the tail check of `preset` (a name or a path),
    or None when it has no calibration.

    The threshold at `d` is the 99.9 % quantile of `tail_statistic` (the
    largest per-coordinate sample kurtosis) over 2,000 training sets of
    the preset's task in dimension `d`, prepared by its preprocessing
    (`tail_thresholds.json` beside this module, written by `python -m
    keras_msets.estimators.calibrate_tails`). Only the weights that were
    calibrated (their sha256 is stored there) are checked.
    """
    calibration = _tail_calibration(str(TAIL_THRESHOLDS_PATH))
    name = os.path.basename(os.fspath(preset))
    found = calibration["thresholds"].get(name)
    if found is None or not _same_weights(
        preset, calibration["weights_sha256"][name]
    ):
        return None  # not calibrated, or other weights than those
    return {int(d): value for d, value in found.items()}


def _check_out_of_distribution(value, estimator):
    choices = OUT_OF_DISTRIBUTION
    if estimator == "same_distribution_probability":
        choices = ("warn", "raise")  # no classical estimator to fall back on
    if value not in choices:
        raise ValueError(
            f"`out_of_distribution` must be one of {choices} for "
            f"`{estimator}`. Received: out_of_distribution={value!r}"
        )
    return value


def _classical(estimator, x, y):
    """The classical estimate used instead of a model's."""
    if estimator == "kl_divergence":
        return knn_kl_divergence(x, y)
    return ksg_mutual_information(x, y)


_CLASSICAL_NAMES = {
    "kl_divergence": "the k-NN estimator `knn_kl_divergence` (k = 1)",
    "mutual_information": "the KSG estimator `ksg_mutual_information` (k = 3)",
}


def _heavy_tails(estimator, preset, x_sets, y_sets, heavy, policy):
    """Acts on the pairs `heavy` (`{pair: (statistic, threshold)}`) whose
    tails are heavier than the training sets': raise, warn, or replace
    their answers by the classical estimator's (`{pair: estimate}`)."""
    where = ", ".join(str(i) for i in sorted(heavy)[:8])
    if len(heavy) > 8:
        where += ", ..."
    i = min(heavy)
    statistic, threshold = heavy[i]
    d = x_sets[i].shape[1]
    text = (
        f"`{estimator}`: the data have heavier tails than every set "
        f"preset {os.path.basename(os.fspath(preset))!r} was trained on "
        f"(pairs {where}; pair {i}: largest per-coordinate kurtosis "
        f"{statistic:.1f} after the preset's preprocessing, while 99.9 % "
        f"of its training sets at d = {d} stay below {threshold:.1f})"
    )
    if policy == "raise":
        raise ValueError(
            f"{text}. Its answer there would not be reliable. Pass "
            "out_of_distribution='fallback' for the classical estimator "
            "or 'warn' for the model's answer anyway. Received: "
            f"out_of_distribution={policy!r}"
        )
    if policy == "warn":
        warnings.warn(
            f"{text}; the model's answer is returned anyway and may be far "
            "off.",
            UserWarning,
            stacklevel=4,
        )
        return {}
    warnings.warn(
        f"{text}; those pairs are answered with "
        f"{_CLASSICAL_NAMES[estimator]} instead of the model "
        "(out_of_distribution='fallback').",
        UserWarning,
        stacklevel=4,
    )
    return {j: _classical(estimator, x_sets[j], y_sets[j]) for j in heavy}
