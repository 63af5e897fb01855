"""Recipe of the `deepsets_units_digit` preset.

DeepSets (Zaheer et al. 2017; the baseline of DeBenedetto & Chiang,
Sec. 5.1) trained on task 2 (units digit of a sum of digits 1-9) by the
paper's recipe in `keras_msets.zoo.digit_sum_recipe`. Re-run it end to end with

    KERAS_BACKEND=jax python zoo/deepsets_units_digit/recipe.py

or `keras-msets zoo train deepsets_units_digit`; it writes the
preset folder (default: next to this file, replacing the shipped preset).
"""

from pathlib import Path

from keras_msets.models import DeepSets
from keras_msets.zoo import digit_sum_recipe

NAME = "deepsets_units_digit"
TASK = "units_digit"


def build_model():
    return DeepSets(vocabulary_size=10, name=NAME)


evaluate, train = digit_sum_recipe.recipe_functions(
    NAME, TASK, build_model, Path(__file__).parent
)


if __name__ == "__main__":
    digit_sum_recipe.run_from_command_line(train, __doc__.splitlines()[0])
