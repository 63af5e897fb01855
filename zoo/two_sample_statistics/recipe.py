"""Recipe of the `two_sample_statistics` preset.

KERAS_BACKEND=torch python zoo/two_sample_statistics/recipe.py --help
"""

import json
from pathlib import Path

from keras_msets.models import QuantileRegressor
from keras_msets.stats.two_sample_statistics import FEATURE_NAMES
from keras_msets.training import Recipe
from keras_msets.training.tasks.two_sample_statistics import (
    TwoSampleStatisticsTask,
)
from keras_msets.training.tasks.two_sample_statistics import benchmark_table
from keras_msets.training.tasks.two_sample_statistics import (
    served_reliability_text,
)

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks/results"
HELD_OUT = RESULTS / "two_sample_statistics/heldout_summary.json"
SIZE_OFFSET = RESULTS / "two_sample_statistics/design_size_offset.json"
FRESH = RESULTS / "estimator_benchmark/fresh_seeds.json"


def fresh_seeds_text():
    """The accuracy on the estimator benchmark's fresh seeds 5-24
    (`benchmarks/estimator_fresh_seeds.py`), beside the tests'."""
    if not FRESH.is_file():
        return "(The fresh seeds of the estimator benchmark were not run.)"
    totals = json.loads(FRESH.read_text(encoding="utf-8"))["totals"]
    lines = [
        "On twenty fresh seeds per problem (seeds 5-24 of the same nine "
        "problems, a same and a different pair each; `KERAS_BACKEND=torch "
        "python benchmarks/estimator_fresh_seeds.py --tasks two_sample`):",
        "",
        "| n | decisions | MMD test | C2ST | this preset |",
        "|---:|---:|---:|---:|---:|",
    ]
    for n in (50, 150, 1000):
        t = totals.get(f"two_sample_n{n}")
        if t is not None:
            lines.append(
                f"| {n:,} | {t['decisions']} | {t['mmd']:.3f} | "
                f"{t['c2st']:.3f} | {t['statistics']:.3f} |"
            )
    return "\n".join(lines)


SERVES = {
    "estimator": "same_distribution_probability",
    "dims": [1, 16],
    "set_size": [10, 100_000],
    "preprocessing": "statistics",
    "statistics": "keras_msets.stats.two_sample_statistics",
    "paired": False,
    "symmetric": False,
    "joint": False,
    "default_dims": [1, 16],
    # The logit grows by 0.5 per unit of log(points) of the smaller set
    # from 300 to 2,000 points (+0.60 at 1,000, +0.95 from 2,000): the
    # prior odds of "same" rise with the sizes where differences keep a
    # fixed strength (`training.tasks.two_sample_statistics.size_offset`;
    # chosen on development seeds, `benchmarks/two_sample_design.py
    # --size-offset`).
    "size_offset": {
        "per_log_points": 0.5,
        "from_points": 300,
        "to_points": 2000,
    },
}

RECIPE = Recipe(
    name="two_sample_statistics",
    task=TwoSampleStatisticsTask(
        SERVES,
        results_text=lambda: (
            benchmark_table(HELD_OUT)
            + "\n\n"
            + fresh_seeds_text()
            + "\n\n"
            + served_reliability_text(SIZE_OFFSET)
        ),
    ),
    # A one-output QuantileRegressor (an MLP on standardized features),
    # its output read as a logit; the choice among 16, 32x32 and none
    # (logistic) hidden units: benchmarks/two_sample_design.py (dev seeds).
    build_model=lambda: QuantileRegressor(
        len(FEATURE_NAMES),
        (0.5,),
        hidden_units=(16,),
        name="two_sample_statistics",
    ),
    budget={"epochs": 60, "batch_size": 128, "learning_rate": 1e-3},
    summary="The probability that two sets of points in d = 1-16 come from "
    "one distribution, from permutation z-scores of nine affine-invariant "
    "two-sample statistics read by a small MLP.",
    text="""Statistics: `keras_msets.stats.two_sample_statistics` (mean and
covariance differences, radius rank tests, MMD at three bandwidths, energy
distance, nearest-neighbour coincidences, all after joint whitening, each
a z-score against 100 relabellings of the pooled points). Training pairs:
`keras_msets.data.two_sample_problems`, families of the same kinds as the
estimator benchmark's two-sample problems (shifts, scale and correlation
changes, tails and modes with matched moments, maps applied to both sets),
from seeds no benchmark sample uses. This preset is the default of
`same_distribution_probability` for d = 1-16; `mst_two_sample` stays a
d = 8 specialist, reachable with `model="mst_two_sample"`. Tied radii
(rounded or discrete data) are ranked in a seeded random order: over 20
pairs of samples of one discrete distribution (uniform on 0..2 per
coordinate, d = 2, n = 1,000) the mean probability is 0.67 (Gaussians:
0.72; benchmarks/RESULTS.md, "Rounded and discrete data (ties)").""",
    source=__file__,
)

if __name__ == "__main__":
    RECIPE.main()
