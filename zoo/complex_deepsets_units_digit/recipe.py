"""Recipe of the `complex_deepsets_units_digit` preset.

Complex DeepSets (DeBenedetto & Chiang, Sec. 5.1; 50 stored states) trained
on task 2 (units digit of a sum of digits 1-9) by the paper's recipe in
`keras_msets.zoo.digit_sum_recipe`. Re-run it end to end with

    KERAS_BACKEND=jax python zoo/complex_deepsets_units_digit/recipe.py

or `keras-msets zoo train complex_deepsets_units_digit`; it writes the
preset folder (default: next to this file, replacing the shipped preset).
"""

from pathlib import Path

from keras_msets.models import ComplexDeepSets
from keras_msets.zoo import digit_sum_recipe

NAME = "complex_deepsets_units_digit"
TASK = "units_digit"


def build_model():
    return ComplexDeepSets(vocabulary_size=10, num_states=50, name=NAME)


def evaluate(model, verbose=1):
    return digit_sum_recipe.evaluate(model, TASK, verbose=verbose)


def train(output_dir=None, epochs=300, verbose=2):
    return digit_sum_recipe.train_preset(
        NAME,
        TASK,
        build_model,
        output_dir or Path(__file__).parent,
        epochs=epochs,
        learning_rate=1e-3,
        seed=0,
        verbose=verbose,
    )


if __name__ == "__main__":
    digit_sum_recipe.run_from_command_line(train, __doc__.splitlines()[0])
