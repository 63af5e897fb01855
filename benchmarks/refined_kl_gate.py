"""A base gate and an n-dependent correction scale for
`knn_refined_kl_divergence`, chosen on the development seeds.

The shipped model's nine quantiles are computed once for the benchmark's
development pairs (seeds 0 and 1, the statistics cached by
`refined_kl_design.py`) and for the 800 generated validation pairs;
then, without retraining:

- gates (`keras_msets.estimators.refined.apply_base_gate`): the base
  answers where `|knn_excess_k*|` (signed log of the excess of the copula
  k-NN estimate over the Gaussian reference's) is below a bound, either
  fixed or `c / sqrt(n / 1000)` (`scale_feature` `log_n`, `scale_power`
  -0.5, `c` the bound at n = 1,000);
- correction scales that shrink with n: every quantile moved by
  `-(1 - s(n))` times the median correction, `s(n) = min(1, (n0 / n) **
  a)`.

Each is scored as `refined_kl_design.py` scores candidates (dev cells
below the best classical, above 1.5x, mean error, 90 % coverage) and by
the MAE and coverage on the validation pairs. Held-out seeds are not
read.

    KERAS_BACKEND=torch python benchmarks/refined_kl_gate.py

Writes `results/refined_kl_design/gate.json` (`--output`: another file;
`$KERAS_MSETS_ZOO_DIR` selects the presets folder, e.g. one holding an
earlier version of the preset).
"""

import argparse
import json
import os
import pathlib
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import refined_kl_design as design  # noqa: E402
from estimator_bench import runner  # noqa: E402

from keras_msets.data import kl_problems  # noqa: E402
from keras_msets.estimators.inputs import load_estimator  # noqa: E402
from keras_msets.estimators.refined import apply_base_gate  # noqa: E402
from keras_msets.stats import kl_statistics  # noqa: E402
from keras_msets.training.tasks import statistics_regression as sr  # noqa: E402

PRESET = "knn_refined_kl_divergence"
OUT = design.OUT / "gate.json"
CACHE = os.environ.get(
    "KERAS_MSETS_KL_STATISTICS",
    os.path.expanduser("~/.cache/keras_msets/kl_statistics_v3"),
)
NAMES = list(kl_statistics.FEATURES)
MEDIAN = len(design.QUANTILES) // 2
FIXED = (0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2)
PER_ROOT_N = (0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5)
SCALE_N0 = (150, 300, 1000, 3000)
SCALE_POWER = (0.25, 0.5, 1.0)


def _quantiles(raw, features, gate=None, s=None):
    """Quantiles in nats from the model's raw outputs, the correction
    scaled by `s` (`[rows]`) and then gated."""
    raw = np.array(raw)
    if s is not None:
        raw = raw - (1 - s[:, None]) * raw[:, [MEDIAN]]
    base = features[:, NAMES.index(kl_statistics.BASE_FEATURE)]
    values = sr.estimates_from_quantiles(raw, base)
    if gate is None:
        return values
    levels = np.asarray(design.QUANTILES)
    answers = (
        values[:, MEDIAN],
        np.array([np.interp(0.05, levels, r) for r in values]),
        np.array([np.interp(0.95, levels, r) for r in values]),
    )
    estimate, low, high = apply_base_gate(
        gate, features, NAMES, base, "log1p", answers
    )
    # `score` reads the 90 % interval from the quantiles: keep the
    # trained levels, the median and the 5 % / 95 % ones replaced.
    values = values.copy()
    values[:, MEDIAN] = estimate
    values[:, levels == 0.05] = low[:, None]
    values[:, levels == 0.95] = high[:, None]
    return values


def _validation_score(values, truth):
    low, high = design.scaled_interval(values, 1.0)
    return {
        "validation_mae": float(np.mean(np.abs(values[:, MEDIAN] - truth))),
        "validation_coverage": float(np.mean((low <= truth) & (truth <= high))),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", type=pathlib.Path, default=OUT)
    args = parser.parse_args(argv)
    seeds = list(runner.DEV_SEEDS)
    rows = design.benchmark_statistics(
        seeds, design.OUT / "statistics_dev_v2.npz"
    )
    rows["statistics"] = design.current(rows["statistics"])
    dev = kl_statistics.model_inputs(rows["statistics"])
    table = kl_problems.statistics_table("validation", CACHE, compute=False)
    val = kl_statistics.model_inputs(table["features"])
    model = load_estimator(PRESET)
    raw = {
        key: np.asarray(model.predict(f.astype("float32"), verbose=0), "f8")
        for key, f in (("dev", dev), ("validation", val))
    }
    features = {"dev": dev, "validation": val}

    def evaluate(gate=None, scale=None):
        found = {}
        for key in ("dev", "validation"):
            s = None if scale is None else scale(features[key])
            found[key] = _quantiles(raw[key], features[key], gate, s)
        out = {"dev": design.score(rows, found["dev"], seeds)}
        out.update(_validation_score(found["validation"], table["truth"]))
        gated = {}
        if gate is not None:
            for key in ("dev", "validation"):
                same = (
                    found[key][:, MEDIAN]
                    == _quantiles(np.zeros_like(raw[key]), features[key])[
                        :, MEDIAN
                    ]
                )
                gated[key] = float(np.mean(same))
        out["base_fraction"] = gated
        return out

    report = {"shipped": evaluate()}
    for k in kl_statistics.NEIGHBOURS:
        feature = f"knn_excess_k{k}"
        for below in FIXED:
            gate = {"feature": feature, "below": below}
            report[f"gate_{feature}_{below}"] = {
                "gate": gate,
                **evaluate(gate),
            }
        for c in PER_ROOT_N:
            gate = {
                "feature": feature,
                "below": c * np.sqrt(1000.0),
                "scale_feature": "log_n",
                "scale_power": -0.5,
            }
            report[f"gate_{feature}_root_n_{c}"] = {
                "gate": gate,
                **evaluate(gate),
            }
    for n0 in SCALE_N0:
        for power in SCALE_POWER:

            def scale(f, n0=n0, power=power):
                n = np.exp(f[:, NAMES.index("log_n")])
                return np.minimum(1.0, (n0 / n) ** power)

            report[f"scale_n0_{n0}_power_{power}"] = evaluate(scale=scale)
    for name, entry in report.items():
        part = entry["dev"]["all"]
        print(
            f"{name:40s} wins {part['wins']:2d} >1.5x {part['over_1_5']:2d} "
            f"mean {part['mean_ours']:.3f} cov {part['coverage']:.2f} "
            f"| n=1e4 wins {entry['dev'].get('10000', {}).get('wins')} "
            f">1.5x {entry['dev'].get('10000', {}).get('over_1_5')} "
            f"| val MAE {entry['validation_mae']:.3f} "
            f"cov {entry['validation_coverage']:.2f} "
            f"base {entry['base_fraction']}"
        )
    report["preset_sha256"] = _weights_sha256()
    args.output.write_text(json.dumps(report, indent=1) + "\n")


def _weights_sha256():
    import hashlib

    from keras_msets.zoo import registry

    path = registry.preset_dir(PRESET) / "model.weights.h5"
    return hashlib.sha256(path.read_bytes()).hexdigest()


if __name__ == "__main__":
    main()
