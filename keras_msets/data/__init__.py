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
from keras_msets.data.digit_sum import TASKS
from keras_msets.data.digit_sum import digit_sum_accuracy
from keras_msets.data.digit_sum import digit_sum_test_sets
from keras_msets.data.digit_sum import digit_sum_train_dev
from keras_msets.data.digit_sum import make_digit_sum
from keras_msets.data.digit_sum import to_tf_dataset
from keras_msets.data.tfds_digit_sum import digit_sum_builder
from keras_msets.data.tfds_digit_sum import load_digit_sum_tfds

__all__ = [
    "TASKS",
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
