"""Calibrates the estimators' tail check on the presets' training data.

For every estimator preset, sets are drawn as its training task draws
them (the task objects of `keras_msets.training.tasks`, fresh seeds),
prepared by the preset's own preprocessing, and `tail_statistic` (the
largest per-coordinate sample kurtosis of either set) is computed on
each. The `QUANTILE` quantile over `SETS_PER_DIM` sets per trained `d`
is the preset's threshold for that `d`; the estimators treat data above
it as outside the training distribution (`tail_thresholds.json`, with
the sha256 of the weights file each threshold belongs to: a preset whose
weights differ is not checked until it is calibrated again).

Command (numpy only, about a minute on one CPU core):

    python -m keras_msets.estimators.calibrate_tails
"""

import json
import pathlib

import numpy as np

from keras_msets import zoo
from keras_msets.stats.preprocessing import tail_statistic
from keras_msets.training.tasks import mst

# Presets and the training task each was trained on.
PRESET_TASKS = {
    "mst_kl_divergence": "kl_divergence",
    "mst_kl_divergence_low_d": "kl_divergence",
    "mst_kl_divergence_mid_d": "kl_divergence",
    "mst_mutual_information": "mutual_information",
    "mst_mutual_information_joint": "mutual_information_joint",
    "mst_two_sample": "two_sample",
}
SETS_PER_DIM = 2000
QUANTILE = 0.999
SEED = 20261125
PATH = pathlib.Path(__file__).with_name("tail_thresholds.json")


def calibrate(preset, dims):
    """`{d: threshold}` of `preset` for the dimensions `dims`."""
    task = mst.task(PRESET_TASKS[preset])
    thresholds = {}
    for d in dims:
        inputs, _ = task.make_batch(SETS_PER_DIM, d, SEED + d)
        x, y = inputs["sets"]
        x_mask, y_mask = inputs["masks"]
        values = tail_statistic(x, y, x_mask, y_mask)
        thresholds[str(d)] = round(float(np.quantile(values, QUANTILE)), 3)
    return thresholds


def main():
    from keras_msets.estimators.pretrained import installed_specs

    specs = installed_specs()
    result = {
        "statistic": "tail_statistic (keras_msets.stats.preprocessing)",
        "quantile": QUANTILE,
        "sets_per_dim": SETS_PER_DIM,
        "seed": SEED,
        "command": "python -m keras_msets.estimators.calibrate_tails",
        "thresholds": {},
        "weights_sha256": {},
    }
    for preset, spec in sorted(specs.items()):
        if preset not in PRESET_TASKS:
            continue
        low, high = spec.dims
        thresholds = calibrate(preset, range(low, high + 1))
        result["thresholds"][preset] = thresholds
        # The calibration belongs to these weights (a retrained preset is
        # calibrated again).
        files = zoo.info(preset)["files_sha256"]
        result["weights_sha256"][preset] = files["model.weights.h5"]
        print(preset, result["thresholds"][preset], flush=True)
    PATH.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
