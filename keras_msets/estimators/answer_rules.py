"""The rules by which a statistics preset's `serves` record adjusts the
model's answers (`keras_msets.estimators.refined`, whose module
docstring describes each record): the base gate, the correction shrink
at small n, the base ceiling, the warning for answers above the trained
values, and the policy for pairs outside what the preset was trained on.

Each takes the answers as arrays `[pairs]` (estimate, low, high); a
rule whose record is absent leaves them unchanged.
"""

import warnings

import numpy as np

from keras_msets.stats.classical import knn_kl_divergence
from keras_msets.stats.classical import ksg_mutual_information
from keras_msets.training.tasks.statistics_regression import (
    estimates_from_quantiles,
)

# The classical estimator that answers pairs out of distribution.
CLASSICAL = {
    "kl_divergence": ("knn_kl_divergence (k = 1)", knn_kl_divergence),
    "mutual_information": (
        "ksg_mutual_information (k = 3)",
        ksg_mutual_information,
    ),
}


def apply_base_gate(gate, features, names, base, target, answers):
    """`answers` (estimate, low, high: arrays `[rows]`) with the base
    itself as the estimate where the statistic `gate["feature"]` is
    within the gate's bound of 0 (`refined`'s module docstring), the
    interval widened to hold it; `answers` unchanged where `gate` is
    None."""
    if gate is None:
        return answers
    estimate, low_q, high_q = answers
    bound = np.full(features.shape[0], float(gate["below"]))
    if gate.get("scale_feature") is not None:
        scale = features[:, names.index(gate["scale_feature"])]
        bound = bound * np.exp(float(gate["scale_power"]) * scale)
    quiet = np.abs(features[:, names.index(gate["feature"])]) < bound
    plain = estimates_from_quantiles(
        np.zeros((features.shape[0], 1)), base, target
    )[:, 0]
    return (
        np.where(quiet, plain, estimate),
        np.where(quiet, np.minimum(low_q, plain), low_q),
        np.where(quiet, np.maximum(high_q, plain), high_q),
    )


def apply_correction_shrink(shrink, x_sets, y_sets, base, target, answers):
    """`answers` (estimate, low, high: arrays `[pairs]`) with the model's
    correction of the base scaled by `s = (m / below_points) ** power`
    for the pairs whose smaller set has `m < below_points` rows
    (`refined`'s module docstring); unchanged where `shrink` is None,
    elsewhere, and where the base is not finite."""
    if shrink is None:
        return answers
    estimate, low_q, high_q = answers
    plain = estimates_from_quantiles(
        np.zeros((base.shape[0], 1)), base, target
    )[:, 0]
    rows = np.array(
        [
            min(a.shape[0], b.shape[0])
            for a, b in zip(x_sets, y_sets, strict=True)
        ],
        dtype=np.float64,
    )
    scale = np.minimum(
        1.0, (rows / float(shrink["below_points"])) ** float(shrink["power"])
    )
    shift = np.where(np.isfinite(plain), (1.0 - scale) * (estimate - plain), 0)
    return estimate - shift, low_q - shift, high_q - shift


def apply_base_ceiling(above, plain, rows, answers):
    """Writes the base `plain` as the estimate into `answers` (estimate,
    low, high: arrays `[pairs]`, in place) for the pairs of `rows` where
    `above` (the base is above `serves["base_ceiling"]`), the interval
    widened to hold it (`refined`'s module docstring)."""
    estimate, low_q, high_q = answers
    for i in rows:
        if above[i]:
            value = max(float(plain[i]), 0.0)
            estimate[i] = value
            low_q[i] = min(low_q[i], value)
            high_q[i] = max(high_q[i], value)


def check_answers_above(limit, estimator, preset, policy, estimate):
    """Warns (or raises, with `policy == "raise"`) where an estimate is
    above `limit["above"]` (`serves["answers_above"]`, `refined`'s
    module docstring); nothing where `limit` is None."""
    if limit is None:
        return
    high = [i for i, v in enumerate(estimate) if v > float(limit["above"])]
    if not high:
        return
    what = (
        f"{len(high)} of {len(estimate)} estimates are"
        if len(estimate) > 1
        else "the estimate is"
    )
    message = (
        f"`{estimator}`: {what} above {limit['above']} (estimate "
        f"{estimate[high[0]]:.4g}), beyond {limit['trained']} of preset "
        f"{preset!r}: the answer is extrapolated and its interval may not "
        "hold the truth; where the two samples barely overlap, every "
        "estimate from the samples (k-NN too) lies far below the truth"
    )
    if policy == "raise":
        raise ValueError(
            f"{message}. Pass out_of_distribution='fallback' or 'warn' to "
            "get the answer with a warning. Received: "
            "out_of_distribution='raise'"
        )
    warnings.warn(message + ".", UserWarning, stacklevel=4)


def handle_outside(
    estimator,
    preset,
    policy,
    flagged,
    outside,
    x_sets,
    y_sets,
    answers,
    high_bases=None,
):
    """Applies `policy` to the pairs `flagged` (in place on `answers`);
    with "fallback", the pairs of `high_bases` (index: base above the
    preset's `base_ceiling`) get that base instead of the classical
    estimate."""
    first = flagged[0]
    what = (
        f"{len(flagged)} of {len(x_sets)} pairs are"
        if len(x_sets) > 1
        else "the pair is"
    )
    detail = f"{what} outside what preset {preset!r} was trained on ("
    detail += "; ".join(outside[first]) + ")"
    if policy == "raise":
        raise ValueError(
            f"{detail}. Pass out_of_distribution='fallback' or 'warn' to "
            "get an answer. Received: out_of_distribution='raise'"
        )
    if policy == "warn":
        warnings.warn(
            f"{detail}: the model's answer is given, but it was not "
            "trained on such data.",
            UserWarning,
            stacklevel=4,
        )
        return
    label, function = CLASSICAL[estimator]
    high_bases = high_bases or {}
    estimate, low_q, high_q = answers
    for i in flagged:
        if i in high_bases:
            estimate[i] = max(float(high_bases[i]), 0.0)
        else:
            estimate[i] = max(function(x_sets[i], y_sets[i]), 0.0)
        low_q[i] = high_q[i] = np.nan
    by = label
    if high_bases:
        by = (
            f"{label}, or by the model's base (the bias-corrected "
            "Gaussian-copula plug-in) where that base is above the "
            f"preset's `base_ceiling` ({len(high_bases)} of "
            f"{len(flagged)} pairs; {label} saturates far below such "
            "values),"
        )
    warnings.warn(
        f"{detail}: answered by {by} instead, without an interval (nan).",
        UserWarning,
        stacklevel=4,
    )
