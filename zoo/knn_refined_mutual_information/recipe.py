"""Recipe of the `knn_refined_mutual_information` preset.

KERAS_BACKEND=torch python zoo/knn_refined_mutual_information/recipe.py --help
(the statistics tables: `python -m keras_msets.data.mi_problems`, cached)
"""

import pathlib

import numpy as np

from keras_msets.data import mi_problems
from keras_msets.models import QuantileRegressor
from keras_msets.stats import mi_statistics
from keras_msets.training import Recipe
from keras_msets.training.tasks import StatisticsRegressionTask

QUANTILES = (0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.975)
BENCHMARK_TABLE = (
    pathlib.Path(__file__).resolve().parents[2]
    / "benchmarks/results/estimator_benchmark/refined_mi_card.md"
)


TRAIN_SPLITS = ["train", "train_gaussian", "train_large"]
# Where |KSG excess over the Gaussian reference at k = 3| is below this
# (nats), the estimate is the base: chosen with the correction shrink
# below on the wide development seeds 30-49 at n = 50, 150, 1,000 and
# 10,000 among the excesses at k = 1, 3, 10, bounds 0.01-0.3 at n = 150
# and powers 0, -1/4, -1/2 of n (benchmarks/refined_base_gates_wide.py;
# before: 0.05, chosen on seeds 0-1).
GATE = {"feature": "ksg_excess_k3", "below": 0.12}
# From n = 1,000 the answer is checked against the whole-sample rule
# (the base plus the whole-sample KSG excess over a Gaussian reference,
# k = 3, within its cost budget) and replaced by it, with its interval
# (+- z x 3 spreads + bias), where the two differ by more than 3 x 1.645
# of the rule's spreads plus its bias allowance, 20 x the reference's KSG
# bias x the excess beyond its noise (chosen on the development seeds:
# benchmarks/refined_mi_large_n.py, "check k=3 from n=1000 x3 +0";
# benchmarks/refined_mi_check_bias.py, "B*excess x 20"). Each KSG of the
# rule averages its terms over at most 4,096 random rows, the neighbours
# counted among all rows: a bounded number of count queries, so its cost
# grows about linearly in n, at no loss on the wide development seeds
# (benchmarks/refined_mi_check_query_rows.py).
WHOLE_SAMPLE_CHECK = {
    "function": "keras_msets.stats.mi_statistics.whole_sample_estimate",
    "arguments": {"k": 3, "bias_scale": 20.0, "query_rows": 4096},
    "from_points": 1000,
    "band": 4.935,
    "interval_scale": 3.0,
}
# Below 300 rows the model's correction of the base is scaled by
# (n / 300) ** 0.5 (0.41 at n = 50, 0.71 at 150), the interval moved with
# it (chosen with the gate above among 300-2,000 rows and powers 0.1-0.75:
# benchmarks/refined_base_gates_wide.py; before: 500 rows, power 0.5,
# chosen with the earlier gate by benchmarks/refined_mi_correction_shrink.py).
CORRECTION_SHRINK = {"below_points": 300, "power": 0.5}
# Where the base is above 8 nats the answer is the base (the interval
# widened to hold it; pairs outside the training ranges get the base
# instead of KSG): about 1 % of the training pairs have more than 10 nats
# and the model's correction there is far off (chosen among ceilings of
# 4-20 nats and none on Gaussian, Student-t and uniform-noise problems of
# 2-30 nats, seeds 100-102: benchmarks/refined_mi_high_information.py).
BASE_CEILING = {"above": 8.0}


def table(split):
    """The split's statistics; training adds the extra Gaussian rows and
    the rows of larger samples."""
    cache = mi_problems.default_cache_dir()
    parts = TRAIN_SPLITS if split == "train" else [split]
    tables = [
        mi_problems.statistics_table(s, mi_problems.DEFAULT_ROWS[s], cache)
        for s in parts
    ]
    return {k: np.concatenate([t[k] for t in tables]) for k in tables[0]}


def benchmark_table():
    if not BENCHMARK_TABLE.is_file():
        return "(The estimator benchmark has not been run for this preset.)"
    return BENCHMARK_TABLE.read_text(encoding="utf-8")


# Discrete samples are outside the training family (continuous laws): a
# pair with a column of at most 20 distinct values, tied, is answered as
# any pair outside it (by default KSG, with its tie noise, and a warning).
# 20 had the lowest mean error on the development seeds of discrete
# problems with exact answers (binary, 3-50 levels, Poisson counts;
# benchmarks/discrete_mi_rule.py).
DISCRETE_COLUMNS = {"max_values": 20}

RECIPE = Recipe(
    name="knn_refined_mutual_information",
    task=StatisticsRegressionTask(
        "knn_refined_mutual_information",
        table,
        mi_statistics.FEATURES,
        quantiles=QUANTILES,
        serves={
            "estimator": "mutual_information",
            "dims": [1, mi_problems.MAX_DIM],
            "set_size": [mi_statistics.MIN_POINTS, 100_000],
            "preprocessing": "statistics",
            "statistics": "keras_msets.stats.mi_statistics",
            "base_feature": mi_statistics.BASE_FEATURE,
            "base_gate": GATE,
            "correction_shrink": CORRECTION_SHRINK,
            "base_ceiling": BASE_CEILING,
            "whole_sample_check": WHOLE_SAMPLE_CHECK,
            "discrete_columns": DISCRETE_COLUMNS,
            "clipped_features": ["log_n", "log_block"],
            "paired": True,
            "symmetric": False,
            "joint": False,
            "default_dims": [1, mi_problems.MAX_DIM],
        },
        description="statistics (keras_msets.stats.mi_statistics) of "
        "17,000 random sample pairs with exact mutual information "
        "(keras_msets.data.mi_problems: Gaussian, Student-t, uniform-noise "
        "and independent laws under mixing, spirals and monotone maps, "
        "10,000 with n = 10..5,000 and 4,000 with n = 200..20,000 "
        "log-uniform, and 3,000 more Gaussian ones with I = 0.3..15 nats, "
        "n = 10..5,000; d_x, d_y = 1..25); validation 400 and "
        "test 400 rows of other seeds; the target is log(1 + I) minus "
        "log(1 + the bias-corrected Gaussian-copula plug-in)",
        results_text=benchmark_table,
    ),
    build_model=lambda: QuantileRegressor(
        len(mi_statistics.FEATURES),
        QUANTILES,
        hidden_units=(64, 64),
        name="knn_refined_mutual_information",
    ),
    # The width from the validation rows (benchmarks/refined_mi_training.py,
    # 3,000 rows: 64 units better than 128, error still falling with more
    # rows); 100 epochs (about 27,000 steps), the weights of the epoch
    # with the lowest validation loss kept. The middle quantile is free
    # (a correction of either sign): the correction held >= 0
    # (`nonnegative_middle=True`) did worse on the development seeds
    # (benchmarks/refined_mi_structure.py).
    budget={"epochs": 100, "batch_size": 64, "learning_rate": 1e-3},
    summary="The mutual information `I(X; Y)` of paired samples, with an "
    "interval: a small MLP that corrects the bias-corrected Gaussian-copula "
    "plug-in with KSG statistics of the sample and of a Gaussian reference, "
    "or keeps the plug-in where the two KSG agree "
    "(any n from 10 to 100,000, d_x and d_y from 1 to 25).",
    text="""The statistics are computed on copula-normal coordinates, so
the estimate does not change under any increasing map of any coordinate.
The base is the Gaussian plug-in of the copula-normal covariance with the
finite-sample (Wishart) bias of each log-determinant removed, nearly
unbiased where the copula is Gaussian; the model corrects it from the
excess of the sample's KSG estimates over those of a Gaussian sample with
the same copula correlation (with Gaussian marginals the Gaussian copula
has the least mutual information for its correlation). From n = 1,000
the answer is checked against a rule on the whole sample (the base plus
the whole-sample KSG excess at k = 3 over a Gaussian reference of the
same size, where that fits its cost budget) and replaced by the rule's
answer and interval where the model's lies more than 3 x 1.645 of the
rule's spreads plus an allowance for the rule's own bias away (the
allowance grows with KSG's bias on the Gaussian reference and with the
excess beyond its noise; `serves.whole_sample_check`, added to the
trained weights by `--serves-only`). The rule runs within a cost budget
(`n^2 (d_x + d_y) <= 3e7` up to 2,048 rows, `n (d_x + d_y) <= 60,000`
above): up to n = 30,000 at d_x = d_y = 1, 10,000 at 3 + 3 or 2 + 4,
1,732 and again 2,049-6,000 at 5 + 5, never at 25 + 25 and never above
30,000 rows; elsewhere the model's answer is not checked. Each KSG of
the rule averages its terms over at most 4,096 random rows (the
neighbours counted among all rows), so that its cost grows about
linearly in n; on the wide development seeds 30-39 at n = 10,000 it was
as accurate as the rule on all rows at half the cost. Below 300 rows the
model's correction of the base is scaled by `(n / 300) ** 0.5` (0.41 at
n = 50, 0.71 at n = 150) and the interval moved with it
(`serves.correction_shrink`): at small n the correction is noisier than
the base's own error. Where the KSG excess at k = 3 is within 0.12 nats
of 0 the answer is the base itself (`serves.base_gate`), and so it is
where the base is above 8 nats (`serves.base_ceiling`, the interval
widened to hold it): about 1 % of the training pairs lie above 10 nats,
and there the model's correction was far off (on Gaussian, Student-t
and uniform-noise problems of 2-30 nats, mean absolute error 3.87 nats
without the ceiling, 1.12 with it, KSG 8.83:
benchmarks/refined_mi_high_information.py). Pairs outside the training
ranges that `out_of_distribution="fallback"` answers classically get
the base instead of KSG where it is above 8 nats: KSG saturates far
below such values. The shrink and
the gate were chosen together on the wide development seeds 30-49. The
training
problems are of the same kinds as the estimator benchmark's (Gaussian,
Student-t, uniform noise, spirals, monotone maps), drawn with random
parameters from random streams disjoint from the benchmark's. The width
was chosen on the validation rows; the statistics (the bias-corrected
base, the Gaussian reference on as many blocks as the sample, the
canonical statistics), the rows of larger samples, and the free correction
on the benchmark's development seeds 0-1, the query rows, the small-n
shrink and the gate on its wide development seeds 30-49; the training
family (the extra Gaussian rows, fewer spirals) comes from an earlier
round whose summary also printed the held-out table
(benchmarks/RESULTS.md). Ties (rounded or discrete values) are ranked
in a seeded random order, independently for x and y
(`keras_msets.stats.ranks.column_order`): a Gaussian pair rounded to a
grid of 0.1, n = 20,000, reads 0.794 (at most 0.805) (benchmarks/
RESULTS.md, "Rounded and discrete data (ties)"). Discrete samples are
outside the training family, and the model's answers on them fell far
below the truth (binary, 3-50 levels and Poisson counts with exact
answers, n = 150 and 1,000: mean error 0.200 nats on held-out seeds;
three sparse binary coordinates, 0.44 nats: about 0.14). A pair with
a column of at most 20 distinct values, tied, is therefore answered as
any pair outside the training family (`serves["discrete_columns"]`; by
default KSG, whose ties get tiny noise, with a warning): mean error
0.051 on the same held-out seeds (benchmarks/discrete_mi_rule.py,
which chose the 20 on development seeds).""",
    source=__file__,
)

if __name__ == "__main__":
    RECIPE.main()
