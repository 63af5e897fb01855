"""Task generators and offline loaders.

numpy generators for the synthetic tasks of DeBenedetto & Chiang (2020):
digit sum and units digit (tasks 1 and 2) and random multiset automata
(task 0), a `tf.data` wrapper and a TFDS builder. Importing this package
imports neither TensorFlow nor TensorFlow Datasets; the functions that need
them import them when called.
"""

from keras_msets.data.automata import diagonal_automaton_strings
from keras_msets.data.automata import random_diagonal_automaton
from keras_msets.data.automata import random_unary_automaton
from keras_msets.data.automata import unary_automaton_strings
from keras_msets.data.bible import load_verse_pairs
from keras_msets.data.bible import split_by_book
from keras_msets.data.digit_sum import TASKS
from keras_msets.data.digit_sum import digit_sum_accuracy
from keras_msets.data.digit_sum import digit_sum_test_sets
from keras_msets.data.digit_sum import digit_sum_train_dev
from keras_msets.data.digit_sum import make_digit_sum
from keras_msets.data.digit_sum import to_tf_dataset
from keras_msets.data.mixtures import GaussianMixture
from keras_msets.data.mixtures import gaussian_mutual_information
from keras_msets.data.mixtures import kl_divergence_pairs
from keras_msets.data.mixtures import mutual_information_sets
from keras_msets.data.mixtures import random_gaussian_mixture
from keras_msets.data.mixtures import sample_lkj_correlation
from keras_msets.data.mixtures import two_sample_pairs
from keras_msets.data.mixtures import whiten_sets
from keras_msets.data.monoid_tasks import TASKS as MONOID_TASKS
from keras_msets.data.monoid_tasks import counting_ones
from keras_msets.data.monoid_tasks import digit_sum_mod10
from keras_msets.data.monoid_tasks import dyck1
from keras_msets.data.monoid_tasks import is_dyck1
from keras_msets.data.monoid_tasks import monoid_task
from keras_msets.data.monoid_tasks import parity
from keras_msets.data.monoid_tasks import s3_word_problem
from keras_msets.data.set_counting import counting_shared_classes
from keras_msets.data.set_counting import fetch_mnist_5k
from keras_msets.data.set_counting import load_images
from keras_msets.data.text import build_vectorizer
from keras_msets.data.text import data_home
from keras_msets.data.text import fetch_mr
from keras_msets.data.text import load_bbc_news
from keras_msets.data.text import load_glove
from keras_msets.data.text import load_mr
from keras_msets.data.text import stratified_folds
from keras_msets.data.text import texts_to_ids
from keras_msets.data.tfds_digit_sum import digit_sum_builder
from keras_msets.data.tfds_digit_sum import load_digit_sum_tfds

__all__ = [
    "GaussianMixture",
    "MONOID_TASKS",
    "TASKS",
    "build_vectorizer",
    "counting_ones",
    "counting_shared_classes",
    "data_home",
    "digit_sum_mod10",
    "dyck1",
    "fetch_mnist_5k",
    "fetch_mr",
    "gaussian_mutual_information",
    "is_dyck1",
    "kl_divergence_pairs",
    "load_bbc_news",
    "load_glove",
    "load_images",
    "load_mr",
    "load_verse_pairs",
    "monoid_task",
    "mutual_information_sets",
    "parity",
    "random_gaussian_mixture",
    "s3_word_problem",
    "split_by_book",
    "sample_lkj_correlation",
    "stratified_folds",
    "texts_to_ids",
    "two_sample_pairs",
    "whiten_sets",
    "diagonal_automaton_strings",
    "digit_sum_accuracy",
    "digit_sum_builder",
    "digit_sum_test_sets",
    "digit_sum_train_dev",
    "load_digit_sum_tfds",
    "make_digit_sum",
    "random_diagonal_automaton",
    "random_unary_automaton",
    "to_tf_dataset",
    "unary_automaton_strings",
]
