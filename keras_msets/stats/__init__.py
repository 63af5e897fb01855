"""Numpy statistics of sets of samples, below the models.

- `keras_msets.stats.classical`: the k-nearest-neighbour KL divergence
  estimator of Wang, Kulkarni & Verdú (2009) and the mutual-information
  estimator of Kraskov, Stögbauer & Grassberger (2004), on scipy KD-trees
  (scipy is imported on first use).
- `keras_msets.stats.preprocessing`: what the statistical-distance models
  read, `whiten_pairs`, `standardize_pairs`, `joint_and_product_sets` and
  `preprocess` by name.

Nothing here imports Keras; the training recipes, the zoo and the
estimators all use these functions, so a model sees in use what it saw in
training.
"""

from keras_msets.stats.classical import knn_kl_divergence
from keras_msets.stats.classical import knn_kl_divergence_sets
from keras_msets.stats.classical import ksg_mutual_information
from keras_msets.stats.classical import ksg_mutual_information_sets
from keras_msets.stats.preprocessing import joint_and_product_sets
from keras_msets.stats.preprocessing import preprocess
from keras_msets.stats.preprocessing import standardize_pairs
from keras_msets.stats.preprocessing import whiten_pairs

__all__ = [
    "joint_and_product_sets",
    "knn_kl_divergence",
    "knn_kl_divergence_sets",
    "ksg_mutual_information",
    "ksg_mutual_information_sets",
    "preprocess",
    "standardize_pairs",
    "whiten_pairs",
]
