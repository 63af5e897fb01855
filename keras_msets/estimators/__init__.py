"""Estimators of statistical distances between sets of samples.

Classical nearest-neighbour estimators (numpy + scipy): the KL divergence
estimator of Wang, Kulkarni & Verdú (2009) and the mutual-information
estimator of Kraskov, Stögbauer & Grassberger (2004), the baselines of
Selby et al. (2022, Sec. 5.1).
"""

from keras_msets.estimators.classical import knn_kl_divergence
from keras_msets.estimators.classical import knn_kl_divergence_sets
from keras_msets.estimators.classical import ksg_mutual_information
from keras_msets.estimators.classical import ksg_mutual_information_sets

__all__ = [
    "knn_kl_divergence",
    "knn_kl_divergence_sets",
    "ksg_mutual_information",
    "ksg_mutual_information_sets",
]
