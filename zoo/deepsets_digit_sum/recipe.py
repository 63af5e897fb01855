"""Recipe of the `deepsets_digit_sum` preset.

DeepSets (Zaheer et al. 2017), the baseline of DeBenedetto & Chiang
(Sec. 5.1), trained on task 1, the sum of digits 1-9, by the paper's recipe
(`keras_msets.training.tasks.DigitSumTask`). Re-run it with

    KERAS_BACKEND=jax python zoo/deepsets_digit_sum/recipe.py

(a new folder under runs/; `--help` lists the options).
"""

from keras_msets.models import DeepSets
from keras_msets.training import Recipe
from keras_msets.training.tasks import DigitSumTask

NAME = "deepsets_digit_sum"

RECIPE = Recipe(
    name=NAME,
    task=DigitSumTask("sum"),
    build_model=lambda: DeepSets(vocabulary_size=10, name=NAME),
    summary="DeepSets (Zaheer et al. 2017; the baseline of DeBenedetto & "
    "Chiang, ICML 2020, Sec. 5.1) trained to predict the sum of a multiset "
    "of digits 1-9 (task 1).",
    source=__file__,
)

if __name__ == "__main__":
    RECIPE.main()
