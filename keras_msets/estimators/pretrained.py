"""Learned estimators: pretrained Multi-Set Transformers as plain functions.

Selby et al. (2022, Sec. 5.1 and 5.2.3) train multi-set models to read two
sets of samples and output the KL divergence between the distributions
behind them, the mutual information of paired samples, or whether both
sets come from one distribution. This module wraps the zoo presets that
do this (`mst_kl_divergence` and, for d = 1..3, `mst_kl_divergence_low_d`;
`mst_mutual_information` and `mst_mutual_information_joint`, by name or
`mode=` only since `mutual_information` uses the statistics preset
`knn_refined_mutual_information` by default, `keras_msets.estimators.
refined`;
`mst_two_sample`, by name only since `same_distribution_probability`
uses the statistics preset `two_sample_statistics` by default) as
functions of numpy arrays:

```python
kl = keras_msets.estimators.kl_divergence(x, y)  # x [n, d], y [m, d]
mi = keras_msets.estimators.mutual_information(x, y)  # paired rows
p = keras_msets.estimators.same_distribution_probability(x, y)
```

Inputs are one pair of sets (`[n, d]` and `[m, d]`: a float comes back)
or a batch of pairs (arrays `[batch, n, d]`, or lists of `[n_i, d]`
arrays of different sizes: a float64 array `[batch]` comes back). Pairs
are padded, masked and run through the model in batches of
`batch_size`; the answer for a pair never depends on the other pairs of
the batch. Every set needs at least `d + 1` points.

Preprocessing (`keras_msets.stats.preprocessing`; the same functions
prepare the training data, so the presets see what they were trained
on):

- KL divergence and two-sample: `whiten_pairs`, the joint whitening of
  eq. 15 followed by a rotation to the principal axes of the first set.
  The rotation is ours (the paper stops at eq. 15): eq. 15 alone leaves
  the whitened data defined only up to an orthogonal matrix that depends
  on the data's original coordinates, and a Multi-Set Transformer is not
  rotation invariant. With it the estimate is exactly invariant (up to
  float rounding) under any invertible affine map applied to both sets,
  as the KL divergence and the same/different question are.
- Mutual information, the paper's split sets (`mst_mutual_information`):
  `standardize_pairs`, every coordinate of each set shifted and scaled to
  mean 0 and variance 1 on its own (the training data of Sec. 5.1.2 have
  standard normal marginals), after each coordinate of `y` is negated
  where its sample correlation with the same coordinate of `x` is
  negative (`orient_to_x`). The estimate is then invariant under a
  separate shift and positive scaling of every coordinate of `x` and of
  `y`, and under negating any coordinates of `y`.
- Mutual information read as `KL(P_XY || P_X P_Y)` (ours,
  `mst_mutual_information_joint`):
  `joint_and_product_sets`, then `whiten_pairs` with each axis oriented
  by the third moment (both sets have the same mean by construction). The
  estimate is invariant under an invertible affine map of `x` and another
  of `y`.

Which preset serves which estimator and which `d` is not kept here: each
estimator preset's `metadata.json` says it (`serves`: the estimator, the
dimensions and set sizes it was trained on, its preprocessing and the
range of `d` it serves by default, `default_dims`), and `route_spans`
reads the installed presets (`keras_msets.zoo.list()`), so a preset
added to the presets folder is used without a change of code. A preset
named as `model` must serve the estimator it is given to.

KL divergence and mutual information are returned as the model's
regression output clipped at 0 (both quantities are non-negative), in
nats.

What the estimators refuse, and what they do outside their presets'
training data: see `keras_msets.estimators` (the package docstring).
"""

import os

from keras_msets.estimators import refined

# The pieces of the estimators live in routing (presets and their specs),
# inputs (checks, batching, the cached models), out_of_distribution
# (warnings, the tail check), multiset (the Multi-Set Transformer path)
# and refined (the presets over statistics); their names stay importable
# from here.
from keras_msets.estimators.inputs import _MODEL_LOCK  # noqa: F401
from keras_msets.estimators.inputs import MIN_EXTRA_POINTS
from keras_msets.estimators.inputs import _positive_int
from keras_msets.estimators.inputs import load_estimator
from keras_msets.estimators.inputs import predict_prepared
from keras_msets.estimators.multiset import by_dimension
from keras_msets.estimators.multiset import estimate_pairs
from keras_msets.estimators.multiset import specialist_spec
from keras_msets.estimators.out_of_distribution import OUT_OF_DISTRIBUTION
from keras_msets.estimators.out_of_distribution import SKILL_MARGIN
from keras_msets.estimators.out_of_distribution import TAIL_THRESHOLDS_PATH
from keras_msets.estimators.out_of_distribution import tail_thresholds
from keras_msets.estimators.out_of_distribution import unlearned_dims
from keras_msets.estimators.routing import SPECS
from keras_msets.estimators.routing import EstimatorSpec
from keras_msets.estimators.routing import _model_spec  # noqa: F401
from keras_msets.estimators.routing import _spec_for
from keras_msets.estimators.routing import installed_specs
from keras_msets.estimators.routing import preset_spec
from keras_msets.estimators.routing import route_spans
from keras_msets.estimators.two_sample import SPECIALIST
from keras_msets.estimators.two_sample import reads_statistics

# The preprocessing lives in keras_msets.stats (numpy only, below the
# models); its names stay importable from here.
from keras_msets.stats.preprocessing import joint_and_product_sets
from keras_msets.stats.preprocessing import orient_to_x
from keras_msets.stats.preprocessing import standardize_pairs
from keras_msets.stats.preprocessing import tail_statistic
from keras_msets.stats.preprocessing import whiten_pairs

__all__ = [
    "EstimatorSpec",
    "JOINT_PERMUTATIONS",
    "MIN_EXTRA_POINTS",
    "MI_MODES",
    "OUT_OF_DISTRIBUTION",
    "SKILL_MARGIN",
    "SPECS",
    "TAIL_THRESHOLDS_PATH",
    "installed_specs",
    "joint_and_product_sets",
    "kl_divergence",
    "load_estimator",
    "mutual_information",
    "orient_to_x",
    "predict_prepared",
    "preset_spec",
    "route_spans",
    "same_distribution_probability",
    "standardize_pairs",
    "tail_statistic",
    "tail_thresholds",
    "unlearned_dims",
    "whiten_pairs",
]

# The joint reading of `mutual_information` averages the model's answers
# over this many permutations by default (ours; on the preset card's
# 1,000 test pairs per d, 8 instead of 1 lowers the error from 0.082 to
# 0.066 at d = 2 and from 0.120 to 0.094 at d = 4: benchmarks/RESULTS.md).
JOINT_PERMUTATIONS = 8


def kl_divergence(
    x,
    y,
    model=None,
    batch_size=64,
    out_of_distribution="fallback",
    interval=None,
):
    """Estimates `KL(P || Q)` from samples `x ~ P` and `y ~ Q`.

    The default preset, `knn_refined_kl_divergence` (d = 1..25, sets of
    10 to 100,000 points, `n != m` allowed), refines classical statistics
    (`keras_msets.estimators.refined`), all computed after one invertible
    map of both sets (pooled copula-normal coordinates): a Gaussian
    plug-in with its finite-sample bias removed (the base), k-NN KL
    estimates (Wang, Kulkarni & Verdú 2009) at k = 1..10 and their excess
    over a Gaussian reference pair, shrunk plug-ins, the shape of the
    pooled marginals and the sizes (`keras_msets.stats.kl_statistics`) go
    through a small MLP trained on random pairs with exact divergences
    (`keras_msets.data.kl_problems`), which returns quantiles of the
    divergence: the median is the estimate and, with `interval`, two
    quantiles give an interval. The model answers pairs in d >= 4 whose
    smaller set has 400 to 2,999 points and whose larger set has at most
    12,000; the others are answered by an untrained rule, the base plus
    the k-NN excess where it is significant, with an interval from its
    spread over six Gaussian reference pairs
    (`keras_msets.stats.kl_excess`).
    Above a `d`-dependent size (2,000 to 10,000 points) the k-NN
    statistics are averaged over random blocks, so the cost grows
    linearly with `n`. Tied values (rounded or discrete data) get their
    ranks in a seeded random order (`keras_msets.stats.ranks`), so such
    data are read as the divergence of their discrete values, which is
    at most that of the unrounded data.

    The Multi-Set Transformers of Selby et al. (Sec. 3.5 and 5.1.1, Table
    1), trained on pairs of random Gaussian mixtures of 100-150 points,
    stay available by name as specialists: `mst_kl_divergence` (d =
    2..16) and `mst_kl_divergence_low_d` (d = 1..3). They read both sets
    after `whiten_pairs` (eq. 15 plus a canonical rotation), so their
    estimate is unchanged by any invertible affine map applied to both
    sets.

    Args:
        x: samples of `P`: an array `[n, d]`, or a batch of sets (an
            array `[batch, n, d]` or a list of `[n_i, d]` arrays).
        y: samples of `Q`, `[m, d]` (or a batch like `x`), the same `d`
            as its `x`.
        model: None (`knn_refined_kl_divergence`, loaded once), a preset
            name (`"mst_kl_divergence"` for d = 2..16,
            `"mst_kl_divergence_low_d"` for d = 1..3), or a `keras.Model`
            taking `{"sets": [x, y], "masks": [x_mask, y_mask]}`.
        batch_size: pairs per model call (Multi-Set Transformers).
        out_of_distribution: what to do with a pair outside what the
            preset was trained on. For the default preset: `d` above 25,
            or statistics outside the range of its training rows;
            `"fallback"` (default) answers it with `knn_kl_divergence`
            (k = 1) and a warning (interval `(nan, nan)`), `"warn"`
            keeps the model's answer with a warning, `"raise"` raises.
            For the Multi-Set Transformers: tails heavier than those of
            their training sets (module docstring), with the same three
            choices.
        interval: None, or a probability in (0, 0.95] (statistics presets
            only): also return an interval that holds the true value
            with that probability (from the model's quantiles).

    Returns:
        The estimate in nats (>= 0): a float for one pair, a float64
        array `[batch]` for a batch. With `interval`, a
        `keras_msets.estimators.Estimate` named tuple `(value, low,
        high, level)` whose fields are floats for one pair and float64
        arrays `[batch]` for a batch.

    Raises:
        TypeError: complex, string or object input.
        ValueError: wrong rank, NaN or inf, different `d` in `x` and `y`,
            a set with fewer than 10 points (default preset), a bad
            `interval` or `interval` with a Multi-Set Transformer, a
            preset of another estimator as `model`, or a pair out of
            distribution with `out_of_distribution="raise"`. For the
            Multi-Set Transformers: a `d` outside the preset's range or a
            set with fewer than `d + 1` points; set sizes where their
            measured error grows (trained on 100-150 points) give a
            warning, once per process (`keras_msets.estimators`).

    Example:
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(1000, 2))
    >>> y = rng.normal(loc=1.0, size=(800, 2))
    >>> keras_msets.estimators.kl_divergence(x, y, interval=0.9)
    >>> # exact value: 1.0
    """
    # Checked whichever preset answers (the statistics presets use
    # neither), so that a wrong value is never silently ignored.
    batch_size = _positive_int(batch_size, "batch_size")
    answer = refined.route_statistics(
        "kl_divergence", model, x, y, interval, out_of_distribution
    )
    if answer is not None:
        return answer
    options = {"out_of_distribution": out_of_distribution}
    if model is None:
        return by_dimension("kl_divergence", x, y, batch_size, **options)
    if isinstance(model, (str, os.PathLike)):
        spec = _spec_for("kl_divergence", model)
    else:
        # A keras.Model: read as the Multi-Set Transformer preset.
        spec = specialist_spec(False, "kl_divergence")
    return estimate_pairs(
        "kl_divergence", spec, x, y, model, batch_size, **options
    )


MI_MODES = ("split", "joint")


def mutual_information(
    x,
    y,
    model=None,
    batch_size=64,
    mode=None,
    permutations=None,
    out_of_distribution="fallback",
    interval=None,
):
    """Estimates the mutual information `I(X; Y)` from paired samples.

    Row `j` of `x` and row `j` of `y` are one joint sample; `x` and `y`
    may have different numbers of columns.

    The default preset, `knn_refined_mutual_information` (d_x, d_y =
    1..25, n = 10..100,000), refines classical statistics
    (`keras_msets.estimators.refined`), all on copula-normal coordinates
    (each coordinate replaced by the normal quantile of its rank): its
    base is the Gaussian plug-in with the finite-sample bias of each
    log-determinant removed (nearly unbiased where the copula is
    Gaussian), and a small MLP trained on a broad family of problems with
    exact answers (`keras_msets.data.mi_problems`) corrects it from KSG
    estimates at k = 1, 3, 10, their excess over KSG on a Gaussian sample
    with the same correlation, kurtosis and the sizes
    (`keras_msets.stats.mi_statistics`). It returns quantiles of `I`: the
    median is the estimate and, with `interval`, two quantiles give an
    interval. The estimate is unchanged by any increasing map of any
    coordinate of `x` or `y` (heavy tails included). Above 4,096 /
    (d_x + d_y) rows (256 to 2,048) the KSG statistics are averaged over
    random blocks, so the cost grows linearly with `n`. Tied values
    (rounded or discrete data) get their ranks in a seeded random order,
    independently for `x` and `y` (`keras_msets.stats.ranks`), so such
    data are read as the information between their discrete values (a
    discrete pair with 0.636 nats: 0.661, interval 0.55-0.78;
    `tests/estimators/test_robustness.py`). A pair with a tied column of
    at most 20 distinct values (discrete data, outside the training
    family) is handled by `out_of_distribution`: by default
    `ksg_mutual_information` answers it (that pair: 0.625).

    The Multi-Set Transformers of Selby et al. (Sec. 5.1.2), trained on
    Gaussians with componentwise correlation and 100-150 points, stay
    available as specialists, by name or `mode` (d_x = d_y only):

    - `"split"`, the paper's (`mst_mutual_information`, d = 2..20): the
      set of the `x_j` and the set of the `y_j`, each coordinate
      standardized (`standardize_pairs`), each coordinate of `y` first
      negated where it correlates negatively with that of `x`
      (`orient_to_x`). Being invariant to the order of each set, the
      model never sees which `y_j` belongs to which `x_j`.
    - `"joint"`, ours (`mst_mutual_information_joint`, d = 1..8): the
      joint samples `[x_j, y_j]` against the same rows with the `y` part
      permuted (`joint_and_product_sets`), read as a KL divergence,
      `I(X; Y) = KL(P_XY || P_X P_Y)`, after `whiten_pairs`; the answer
      is the mean over `permutations` readings.

    Args:
        x: `[n, d_x]`, or a batch (`[batch, n, d_x]` or a list of
            arrays).
        y: `[n, d_y]` (the same `n` as its `x`), or a batch.
        model: None (`knn_refined_mutual_information`), a preset name
            (`"mst_mutual_information"`, `"mst_mutual_information_joint"`),
            or a `keras.Model` (read as the split Multi-Set Transformer).
        batch_size: pairs per model call (Multi-Set Transformers).
        mode: None, or `"split"` / `"joint"` for the Multi-Set
            Transformer presets (module docstring of
            `keras_msets.estimators.pretrained`).
        permutations: the joint reading's number of permutations to
            average over (None: `JOINT_PERMUTATIONS`, 8).
        out_of_distribution: what to do with a pair outside what the
            preset was trained on. For the default preset: a side with
            more than 25 columns, a column with tied values and at most
            20 distinct ones (discrete data: the preset was trained on
            continuous samples; `serves["discrete_columns"]`), or
            statistics outside the range of its training rows;
            `"fallback"` (default) answers it with
            `ksg_mutual_information` (k = 3) and a warning (interval
            `(nan, nan)`), `"warn"` keeps the model's answer with a
            warning, `"raise"` raises. For the Multi-Set Transformers:
            heavy tails, as for `kl_divergence`.
        interval: None, or a probability in (0, 0.95] (default preset
            only): also return an interval that holds the true value
            with that probability (from the model's quantiles).

    Returns:
        The estimate in nats (>= 0): a float, or a float64 array
        `[batch]`. With `interval`, a `keras_msets.estimators.Estimate`
        named tuple `(value, low, high, level)` whose fields are floats
        for one pair and float64 arrays `[batch]` for a batch.

    Raises:
        TypeError: complex, string or object input.
        ValueError: NaN or inf, a wrong rank, different numbers of rows
            in `x` and `y`, fewer than 10 rows (default preset), a bad
            `interval` or `interval` with a Multi-Set Transformer; for
            the Multi-Set Transformers, as `kl_divergence` (d_x = d_y in
            1..20, 1..8 for `mode="joint"`).

    Example:
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(1000, 2))
    >>> y = x + rng.normal(size=(1000, 2))  # exact: log 2 = 0.693
    >>> keras_msets.estimators.mutual_information(x, y, interval=0.9)
    """
    batch_size = _positive_int(batch_size, "batch_size")
    if permutations is not None:
        permutations = _positive_int(permutations, "permutations")
    answer = refined.route_statistics(
        "mutual_information",
        model,
        x,
        y,
        interval,
        out_of_distribution,
        mode=mode,
    )
    if answer is not None:
        return answer
    if mode is not None and mode not in MI_MODES:
        raise ValueError(
            f"`mode` must be None or one of {MI_MODES}. Received: mode={mode!r}"
        )
    if permutations is None:
        permutations = JOINT_PERMUTATIONS
    permutations = _positive_int(permutations, "permutations")
    joint = None if mode is None else mode == "joint"
    if model is None and mode is None:
        return by_dimension(
            "mutual_information",
            x,
            y,
            batch_size,
            permutations=permutations,
            out_of_distribution=out_of_distribution,
        )
    if model is None or not isinstance(model, (str, os.PathLike)):
        # One reading asked for, or a keras.Model: the Multi-Set
        # Transformer preset of that reading.
        spec = specialist_spec(bool(joint))
    else:
        spec = _spec_for("mutual_information", model, joint)
    return estimate_pairs(
        "mutual_information",
        spec,
        x,
        y,
        model,
        batch_size,
        permutations=permutations,
        out_of_distribution=out_of_distribution,
    )


def same_distribution_probability(
    x, y, model=None, batch_size=64, out_of_distribution="warn"
):
    """The probability that two sets come from the same distribution.

    The default preset, `two_sample_statistics` (d = 1..16, sets of 10 to
    100,000 points), computes nine two-sample statistics after the joint
    whitening of both sets (mean and covariance differences, rank tests
    on the radii, MMD at three bandwidths, energy distance, nearest-
    neighbour coincidences), turns each into a z-score against 100
    relabellings of the pooled points, and a small MLP trained on a broad
    generated family of pairs (`keras_msets.data.two_sample_problems`)
    maps them to the probability. Above 300 points in the smaller set its
    logit is raised by an offset declared with the preset, growing with
    the log of the set sizes up to 2,000 points (`serves["size_offset"]`;
    not applied to a `keras.Model` given as `model`). The answer does not
    change under an invertible affine map applied to both sets. Above 200
    points per set the distance-based statistics use a random subset of
    200, and above 10,000 the others use 10,000 (`keras_msets.stats.
    two_sample_statistics`), so the time grows linearly up to there and
    then stays flat. Tied radii (rounded or discrete data) are ranked in
    a seeded random order (`keras_msets.stats.ranks`). See
    `keras_msets.estimators.two_sample`.

    `mst_two_sample` (Selby et al. Sec. 5.2.3, Table 4 "synthetic") is a
    d = 8 specialist, used only when named as `model`: a dimension-
    equivariant Multi-Set Transformer trained on pairs of 10-30 points
    from random Gaussian mixtures, reading both sets after `whiten_pairs`
    and averaging its answers for `(x, y)` and `(y, x)`.

    Args:
        x: `[n, d]`, or a batch (`[batch, n, d]` or a list of arrays).
        y: `[m, d]`, or a batch.
        model: None (the `two_sample_statistics` preset), a preset name
            (`"mst_two_sample"`), or a `keras.Model`: one that reads the
            feature vectors of `two_sample_features` and returns a logit.
        batch_size: pairs per model call (`mst_two_sample`).
        out_of_distribution: for `mst_two_sample`, `"warn"` (default:
            the model's answer, with a warning, for a pair with heavier
            tails than its training sets) or `"raise"`. The statistics
            preset has no tail check: its z-scores are calibrated by
            permutations of the pair itself.

    Returns:
        A probability: a float, or a float64 array `[batch]`.

    Raises:
        TypeError: as `kl_divergence`.
        ValueError: as `kl_divergence`; `d` must be in 1..16 (8 for
            `mst_two_sample`); each set needs 2 points and both together
            `d + 2` (`d + 1` per set for `mst_two_sample`). Sets of fewer
            than 10 points give a warning.
    """
    batch_size = _positive_int(batch_size, "batch_size")
    estimator = "same_distribution_probability"
    options = {"out_of_distribution": out_of_distribution}
    if model is None:
        return by_dimension(estimator, x, y, batch_size, **options)
    if isinstance(model, (str, os.PathLike)) or reads_statistics(model):
        spec = _spec_for(estimator, model)
    else:
        # A Multi-Set Transformer of one's own reads the sets as the d = 8
        # specialist does.
        spec = preset_spec(SPECIALIST)
    return estimate_pairs(estimator, spec, x, y, model, batch_size, **options)
