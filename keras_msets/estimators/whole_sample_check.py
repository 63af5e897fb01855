"""A check of a statistics preset's answer against an untrained rule on
the whole sample, for large sets.

A preset names it in `serves["whole_sample_check"]`: `{"function":
"module.name", "arguments": {...}, "from_points": a, "band": b,
"interval_scale": s}`. For pairs whose smaller set has at least `a`
rows, `function(x, y, **arguments)` returns the rule's value, its standard
deviation `sd` and optionally an allowance `bias >= 0` (nats) for the
rule's own bias (0 if absent), or None where the rule is over its cost
budget. Where the model's estimate lies more than `b sd + bias` from the
rule's value, the answer becomes the rule's: the value floored at 0, the
interval `value +- (z s sd + bias)` floored at 0 (`z` the standard
normal quantile of `(1 + level) / 2`). Elsewhere (inside the band, over
the budget, `sd` not finite) the model's answer stays.
"""

import importlib
from statistics import NormalDist

import numpy as np


def apply_whole_sample_check(check, x_sets, y_sets, rows, answers, level):
    """Writes the rule's answers into `answers` (estimate, low, high:
    arrays `[pairs]`, in place) for the pairs of `rows` where the check
    fires (module docstring); returns the indices of those pairs. Nothing
    where `check` is None."""
    if check is None:
        return []
    module, name = check["function"].rsplit(".", 1)
    function = getattr(importlib.import_module(module), name)
    half = NormalDist().inv_cdf((1 + level) / 2) * float(
        check["interval_scale"]
    )
    estimate, low_q, high_q = answers
    fired = []
    for i in rows:
        if min(x_sets[i].shape[0], y_sets[i].shape[0]) < check["from_points"]:
            continue
        rule = function(x_sets[i], y_sets[i], **check["arguments"])
        if rule is None or not np.isfinite(rule[1]):
            continue
        value, sd, *rest = rule
        bias = float(rest[0]) if rest else 0.0
        if abs(estimate[i] - value) <= float(check["band"]) * sd + bias:
            continue
        estimate[i] = max(value, 0.0)
        low_q[i] = max(value - half * sd - bias, 0.0)
        high_q[i] = max(value + half * sd + bias, 0.0)
        fired.append(i)
    return fired
