"""Classical nearest-neighbour estimators (k-NN KL divergence, KSG mutual
information): `keras_msets.stats.classical`, under the estimators' name."""

from keras_msets.stats.classical import knn_kl_divergence
from keras_msets.stats.classical import knn_kl_divergence_sets
from keras_msets.stats.classical import ksg_mutual_information
from keras_msets.stats.classical import ksg_mutual_information_sets

__all__ = [
    "knn_kl_divergence",
    "knn_kl_divergence_sets",
    "ksg_mutual_information",
    "ksg_mutual_information_sets",
]
