"""Estimators of statistical distances between sets of samples.

Pretrained (Multi-Set Transformers of the zoo, Selby et al. 2022, Sec.
5.1-5.2; nothing to train): `kl_divergence`, `mutual_information` and
`same_distribution_probability`, functions of numpy arrays of samples
that load their preset on first use. Which preset serves which `d` comes
from the `serves` record of the installed presets' metadata.

Classical nearest-neighbour estimators (numpy + scipy, implemented in
`keras_msets.stats.classical`), the paper's baselines: the KL divergence
estimator of Wang, Kulkarni & Verdú (2009) and the mutual-information
estimator of Kraskov, Stögbauer & Grassberger (2004).
"""

from keras_msets.estimators.classical import knn_kl_divergence
from keras_msets.estimators.classical import knn_kl_divergence_sets
from keras_msets.estimators.classical import ksg_mutual_information
from keras_msets.estimators.classical import ksg_mutual_information_sets
from keras_msets.estimators.pretrained import kl_divergence
from keras_msets.estimators.pretrained import mutual_information
from keras_msets.estimators.pretrained import same_distribution_probability

__all__ = [
    "kl_divergence",
    "knn_kl_divergence",
    "knn_kl_divergence_sets",
    "ksg_mutual_information",
    "ksg_mutual_information_sets",
    "mutual_information",
    "same_distribution_probability",
]
