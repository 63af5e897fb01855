"""An untrained rule that answers instead of a statistics preset's model
for some set sizes.

A preset names it in `serves["size_rule"]`: `{"function": "module.name",
"arguments": {...}, "below_points": a, "from_points": b, "above_points":
c, "interval_scale": s}`. Pairs whose smaller set has fewer than `a` or
at least `b` rows, or whose larger set has more than `c` rows (beyond
the largest size the model was trained on), are answered by
`function(x, y, **arguments)`, which returns a value and its standard
deviation `sd`: the estimate is the value floored at 0, the interval
`value +- z s sd` floored at 0 (`z` the standard normal quantile of
`(1 + level) / 2`). `keras_msets.estimators.refined` does not compute
the model's statistics for these pairs.

Optional `"large_arguments"` and `"large_interval_scale"` replace
`arguments` and `interval_scale` for the pairs the rule answers whose
smaller set has at least `a` rows (from `b` rows up, or a larger set of
more than `c` rows), so that small and large sets can use different
parameters; without them every pair uses `arguments` and
`interval_scale`.

Optional `"middle_max_dim": D` with `"middle_arguments"` and
`"middle_interval_scale"`: the rule also answers the pairs between those
sizes (the smaller set has `a` to `b - 1` rows, the larger at most `c`)
in `d <= D`, with these parameters; without it the model answers every
pair between.
"""

import importlib
from statistics import NormalDist


def size_ruled(rule, x, y):
    """Whether `rule` (a `serves["size_rule"]` record, or None) answers
    the pair `x`, `y`."""
    if rule is None:
        return False
    smaller = min(x.shape[0], y.shape[0])
    return (
        smaller < int(rule["below_points"])
        or smaller >= int(rule["from_points"])
        or max(x.shape[0], y.shape[0]) > int(rule["above_points"])
        or _middle(rule, x, y)
    )


def _middle(rule, x, y):
    """Whether the pair lies between the sizes of `rule` (the smaller set
    has `below_points` to `from_points - 1` rows, the larger at most
    `above_points`) in `d <= middle_max_dim`."""
    limit = rule.get("middle_max_dim")
    if limit is None:
        return False
    smaller = min(x.shape[0], y.shape[0])
    return (
        x.shape[1] <= int(limit)
        and int(rule["below_points"]) <= smaller < int(rule["from_points"])
        and max(x.shape[0], y.shape[0]) <= int(rule["above_points"])
    )


def rule_parameters(rule, x, y):
    """The arguments and interval scale of `rule` for the pair `x`, `y`:
    `middle_arguments` / `middle_interval_scale` between the sizes in
    `d <= middle_max_dim` (`_middle`); else `large_arguments` /
    `large_interval_scale` (where present) if the smaller set has at
    least `below_points` rows; else `arguments` / `interval_scale`."""
    if _middle(rule, x, y):
        return rule["middle_arguments"], float(rule["middle_interval_scale"])
    large = min(x.shape[0], y.shape[0]) >= int(rule["below_points"])
    arguments = rule["arguments"]
    scale = rule["interval_scale"]
    if large:
        arguments = rule.get("large_arguments", arguments)
        scale = rule.get("large_interval_scale", scale)
    return arguments, float(scale)


def apply_size_rule(rule, x_sets, y_sets, rows, answers, level):
    """Writes the answers of `rule` into `answers` (estimate, low, high:
    arrays `[pairs]`, in place) for the pairs of `rows` that it answers
    (`size_ruled`); nothing where `rule` is None."""
    if rule is None:
        return
    module, name = rule["function"].rsplit(".", 1)
    function = getattr(importlib.import_module(module), name)
    z = NormalDist().inv_cdf((1 + level) / 2)
    estimate, low_q, high_q = answers
    for i in rows:
        if not size_ruled(rule, x_sets[i], y_sets[i]):
            continue
        arguments, scale = rule_parameters(rule, x_sets[i], y_sets[i])
        half = z * scale
        value, sd = function(x_sets[i], y_sets[i], **arguments)
        estimate[i] = max(value, 0.0)
        low_q[i] = max(value - half * sd, 0.0)
        high_q[i] = max(value + half * sd, 0.0)
