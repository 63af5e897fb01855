"""Recipe of the `complex_deepsets_digit_sum` preset.

Complex DeepSets (DeBenedetto & Chiang, Sec. 5.1; 50 stored states)
trained on task 1, the sum of digits 1-9, by the paper's recipe
(`keras_msets.training.tasks.DigitSumTask`). Re-run it with

    KERAS_BACKEND=jax python zoo/complex_deepsets_digit_sum/recipe.py

(a new folder under runs/; `--help` lists the options).
"""

from keras_msets.models import ComplexDeepSets
from keras_msets.training import Recipe
from keras_msets.training.tasks import DigitSumTask

NAME = "complex_deepsets_digit_sum"

RECIPE = Recipe(
    name=NAME,
    task=DigitSumTask("sum"),
    build_model=lambda: ComplexDeepSets(
        vocabulary_size=10, num_states=50, name=NAME
    ),
    summary='ComplexDeepSets (DeBenedetto & Chiang, "Representing Unordered '
    'Data Using Complex-Weighted Multiset Automata", ICML 2020, Sec. 5) '
    "trained to predict the sum of a multiset of digits 1-9 (task 1).",
    source=__file__,
)

if __name__ == "__main__":
    RECIPE.main()
