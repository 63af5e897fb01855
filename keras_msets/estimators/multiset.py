"""Multi-Set Transformer presets as functions: pairs checked, prepared,
padded and run through the model in batches (`estimate_pairs`), routed
to the preset that serves their `d` (`by_dimension`).

The public estimators (`keras_msets.estimators.pretrained`) call these
for the Multi-Set Transformer presets; the presets over statistics go
through `keras_msets.estimators.refined` instead.
"""

import os

import numpy as np

from keras_msets.estimators.inputs import _PAD_MULTIPLE
from keras_msets.estimators.inputs import _as_set_pair
from keras_msets.estimators.inputs import _as_sets
from keras_msets.estimators.inputs import _check_pairs
from keras_msets.estimators.inputs import _pad
from keras_msets.estimators.inputs import _positive_int
from keras_msets.estimators.inputs import _rescaled
from keras_msets.estimators.inputs import _resolve_model
from keras_msets.estimators.inputs import _round_up
from keras_msets.estimators.inputs import predict_prepared
from keras_msets.estimators.out_of_distribution import (
    _check_out_of_distribution,
)
from keras_msets.estimators.out_of_distribution import _heavy_tails
from keras_msets.estimators.out_of_distribution import _warn_set_size
from keras_msets.estimators.out_of_distribution import _warn_unlearned
from keras_msets.estimators.out_of_distribution import tail_thresholds
from keras_msets.estimators.routing import _spans_text
from keras_msets.estimators.routing import installed_specs
from keras_msets.estimators.routing import preset_spec
from keras_msets.estimators.routing import route_spans
from keras_msets.estimators.two_sample import statistics_probability
from keras_msets.stats.preprocessing import JOINT_PERMUTATION_SEED
from keras_msets.stats.preprocessing import joint_and_product_sets
from keras_msets.stats.preprocessing import orient_to_x
from keras_msets.stats.preprocessing import preprocess
from keras_msets.stats.preprocessing import tail_statistic


def estimate_pairs(
    estimator,
    spec,
    x,
    y,
    model,
    batch_size,
    clip=True,
    permutations=1,
    out_of_distribution="fallback",
):
    """`estimator`'s answers for the pairs `x`, `y` through `model` (None:
    `spec.preset`), prepared as `spec` says."""
    batch_size = _positive_int(batch_size, "batch_size")
    permutations = _positive_int(permutations, "permutations")
    policy = _check_out_of_distribution(out_of_distribution, estimator)
    if (
        estimator == "same_distribution_probability"
        and spec.preprocessing == "statistics"
    ):
        # A model over two-sample statistics (`estimators.two_sample`).
        return statistics_probability(spec, x, y, model)
    x_sets, y_sets, x_single = _as_set_pair(x, y)
    preset = spec.preset if model is None else model
    is_preset = isinstance(preset, (str, os.PathLike))
    model, allowed_dims = _resolve_model(model, spec)
    _check_pairs(spec, x_sets, y_sets, allowed_dims, estimator)
    sizes = [len(s) for s in x_sets + y_sets]
    _warn_set_size(spec, sizes, estimator, measured=is_preset, stacklevel=3)
    if is_preset:
        dims = {s.shape[1] for s in x_sets}
        _warn_unlearned(preset, dims, stacklevel=3)
    thresholds = tail_thresholds(preset) if is_preset else None
    pairs = [_rescaled(a, b) for a, b in zip(x_sets, y_sets, strict=True)]
    x_sets = [a for a, _ in pairs]
    y_sets = [b for _, b in pairs]
    if spec.paired and not spec.joint:
        # The split reading: y -> -y (per coordinate) leaves the mutual
        # information unchanged; the model sees y oriented by x.
        y_sets = [
            orient_to_x(a, b) for a, b in zip(x_sets, y_sets, strict=True)
        ]
    originals = (x_sets, y_sets)
    num_pairs, repeats = len(x_sets), permutations if spec.joint else 1
    if spec.joint:
        # Each pair `repeats` times, with permutations of seeds 0, 1, ...
        # (after JOINT_PERMUTATION_SEED); the answers are averaged below.
        readings = [
            joint_and_product_sets(
                x_sets, y_sets, seed=JOINT_PERMUTATION_SEED + k
            )
            for k in range(repeats)
        ]
        x_sets = [s for joint, _ in readings for s in joint]
        y_sets = [s for _, product in readings for s in product]
    # Pairs of one dimension go through the model together.
    out = np.zeros(len(x_sets))
    heavy = {}
    dims = np.array([s.shape[1] for s in x_sets])
    for d in np.unique(dims):
        (chosen,) = np.nonzero(dims == d)
        for start in range(0, len(chosen), batch_size):
            part = chosen[start : start + batch_size]
            xs = [x_sets[i] for i in part]
            ys = [y_sets[i] for i in part]
            width_x = _round_up(max(len(s) for s in xs), _PAD_MULTIPLE)
            width_y = _round_up(max(len(s) for s in ys), _PAD_MULTIPLE)
            px, mx = _pad(xs, width_x)
            py, my = _pad(ys, width_y)
            wx, wy = preprocess(spec, px, py, mx, my)
            if thresholds is not None and int(d) in thresholds:
                statistic = tail_statistic(wx, wy, mx, my)
                for i, value in zip(part, statistic, strict=True):
                    if value > thresholds[int(d)]:
                        pair = int(i) % num_pairs
                        old = heavy.get(pair, (0.0, 0.0))[0]
                        heavy[pair] = (max(value, old), thresholds[int(d)])
            out[part] = predict_prepared(model, wx, wy, mx, my)
            if spec.symmetric:
                wy, wx = preprocess(spec, py, px, my, mx)
                swapped = predict_prepared(model, wy, wx, my, mx)
                out[part] = 0.5 * (out[part] + swapped)
    out = out.reshape(repeats, num_pairs).mean(axis=0)
    if heavy:
        for i, value in _heavy_tails(
            estimator, preset, *originals, heavy, policy
        ).items():
            out[i] = value
    if clip and estimator != "same_distribution_probability":
        out = np.maximum(out, 0.0)
    return float(out[0]) if x_single else out


def specialist_spec(joint, estimator="mutual_information"):
    """The spec of the installed Multi-Set Transformer preset of
    `estimator` that reads the `joint` (or split) samples and serves the
    highest `d` (what a `keras.Model` given as `model` is read as)."""
    specs = [
        spec
        for spec in installed_specs().values()
        if spec.estimator == estimator
        and spec.preprocessing != "statistics"
        and spec.joint == joint
    ]
    if not specs:
        raise ValueError(
            "No installed Multi-Set Transformer preset reads the "
            f"{'joint' if joint else 'split'} samples for "
            f"`{estimator}`; name a preset as `model`."
        )
    return max(specs, key=lambda spec: spec.dims[1])


def by_dimension(estimator, x, y, batch_size, joint=None, **options):
    """The default: each pair to the preset that serves its `d`
    (`route_spans`); `options` go to `estimate_pairs`."""
    spans = route_spans(estimator, joint=joint)
    x_sets, x_single = _as_sets(x, "x")
    y_sets, y_single = _as_sets(y, "y")
    if x_single != y_single or len(x_sets) != len(y_sets):
        # The usual errors.
        spec = preset_spec(spans[-1][0])
        return estimate_pairs(
            estimator, spec, x, y, None, batch_size, **options
        )
    low, high = spans[0][1], spans[-1][2]
    dims = np.array([s.shape[1] for s in x_sets])
    for i, d in enumerate(dims):
        if not any(first <= d <= last for _, first, last in spans):
            where = f" (pair {i})" if len(x_sets) > 1 else ""
            supported = f"d = {low}" if low == high else f"d = {low}..{high}"
            raise ValueError(
                f"`{estimator}` supports {supported} ({_spans_text(spans)})"
                f". Received: d={d}{where}"
            )
    out = np.zeros(len(x_sets))
    for name, first, last in spans:
        (part,) = np.nonzero((dims >= first) & (dims <= last))
        if len(part):
            out[part] = estimate_pairs(
                estimator,
                preset_spec(name),
                [x_sets[i] for i in part],
                [y_sets[i] for i in part],
                None,
                batch_size,
                **options,
            )
    return float(out[0]) if x_single else out
