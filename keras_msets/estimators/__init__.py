"""Estimators of statistical distances between sets of samples.

Pretrained (Multi-Set Transformers of the zoo, Selby et al. 2022, Sec.
5.1-5.2; nothing to train): `kl_divergence`, `mutual_information` and
`same_distribution_probability`, functions of numpy arrays of samples
that load their preset on first use. Which preset serves which `d` comes
from the `serves` record of the installed presets' metadata.

Presets over statistics (`keras_msets.estimators.refined`): a vector of
cheap classical statistics of the sample (nearest-neighbour estimates,
Gaussian plug-ins) read by a small pretrained model that returns
quantiles; the median is the estimate and `interval=level` adds an
interval (an `Estimate` named tuple). `kl_divergence` and
`mutual_information` use one by default (`knn_refined_kl_divergence`,
`knn_refined_mutual_information`); the Multi-Set Transformers stay
available by name. `same_distribution_probability` uses
`two_sample_statistics` by default (`keras_msets.estimators.two_sample`):
nine permutation z-scores of two-sample statistics read by a small
model that returns the probability (d = 1..16, sets of 10 to 100,000
points); `mst_two_sample` (d = 8) is used only when named.

Classical nearest-neighbour estimators (numpy + scipy, implemented in
`keras_msets.stats.classical`), the paper's baselines: the KL divergence
estimator of Wang, Kulkarni & Verdú (2009) and the mutual-information
estimator of Kraskov, Stögbauer & Grassberger (2004).

What the estimators refuse, and what they do outside the training data:

- Inputs must be real: complex, string or object arrays raise a
  `TypeError` naming the argument; NaN or inf, a wrong rank, different
  `d` in `x` and `y`, no sets, no columns, too few points (`d + 1`,
  `2d + 1` for the joint reading), or a numpy masked array with masked
  entries (whose hidden values would be read as data) raise a
  `ValueError`.
- Ties (rounded or discrete data) are ranked in a random order by the
  statistics presets (the defaults). A column that holds one value in
  every row of both sets (or a pair constant altogether) is one tie: it
  adds nothing to the KL divergence and counts as Gaussian in the shape
  statistics; the answer is finite, with a finite interval. Of the
  classical estimators, `knn_kl_divergence` uses the adaptive k-NN form
  where points coincide, and `ksg_mutual_information` adds seeded noise
  of relative amplitude 1e-10 to samples with tied values.
- Each pair is first divided by the largest absolute value of its two
  sets (one positive factor, which every estimate here is invariant to),
  so values near 1e155 or 1e-300 give the answer of the same data at
  scale 1 instead of an overflowing covariance.
- A `d` outside a preset's trained range is refused. A `d` where its
  card shows no skill, and set sizes where its error grows, give a
  `UserWarning` once per process per preset and reason. The set sizes
  are those where the preset's error on data like its training data was
  measured not to grow (at n = 50, 200 and 1000 against the truth:
  `benchmarks/estimator_sample_size.py`, kept in `set_size_ranges.json`
  beside this module); for other weights or a `keras.Model` given as
  `model`, the sizes it was trained on.
- Tails (`out_of_distribution`): after the preset's own preprocessing,
  `keras_msets.stats.preprocessing.tail_statistic` (the largest
  per-coordinate sample kurtosis of either set) is compared with the
  99.9 % quantile of the same statistic over 2,000 training sets of the
  preset at that `d` (`tail_thresholds`, calibrated by `python -m
  keras_msets.estimators.calibrate_tails`). A pair above it has heavier
  tails than nearly every set the model was trained on (Student-t data
  with one degree of freedom, say, where the mutual-information model
  answers 10 nats for a true 0.22). With `out_of_distribution=
  "fallback"` (the default of `kl_divergence` and `mutual_information`)
  such pairs are answered by the classical estimator
  (`knn_kl_divergence`, `ksg_mutual_information`) with a `UserWarning`
  that says so; `"warn"` keeps the model's answer with a warning (the
  default of `same_distribution_probability`, whose `mst_two_sample`
  has no classical counterpart here; its default statistics preset has
  no tail check, as its z-scores are calibrated by permutations of the
  pair itself); `"raise"` raises a `ValueError`. The check applies
  to presets; a `keras.Model` passed as `model` is not checked (its
  training data are unknown).
- The cached models are shared by all threads: loading and prediction
  are serialized, so calls from several threads give the serial answers
  on every backend.
"""

from keras_msets.estimators.classical import knn_kl_divergence
from keras_msets.estimators.classical import knn_kl_divergence_sets
from keras_msets.estimators.classical import ksg_mutual_information
from keras_msets.estimators.classical import ksg_mutual_information_sets
from keras_msets.estimators.pretrained import kl_divergence
from keras_msets.estimators.pretrained import mutual_information
from keras_msets.estimators.pretrained import same_distribution_probability
from keras_msets.estimators.refined import Estimate

__all__ = [
    "Estimate",
    "kl_divergence",
    "knn_kl_divergence",
    "knn_kl_divergence_sets",
    "ksg_mutual_information",
    "ksg_mutual_information_sets",
    "mutual_information",
    "same_distribution_probability",
]
