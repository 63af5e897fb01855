"""Recipe of the `deepsets_units_digit` preset.

DeepSets (Zaheer et al. 2017), the baseline of DeBenedetto & Chiang
(Sec. 5.1), trained on task 2, the units digit of a sum of digits 1-9, by
the paper's recipe (`keras_msets.training.tasks.DigitSumTask`): the
paper's failure case. Re-run it with

    KERAS_BACKEND=jax python zoo/deepsets_units_digit/recipe.py

(a new folder under runs/; `--help` lists the options).
"""

from keras_msets.models import DeepSets
from keras_msets.training import Recipe
from keras_msets.training.tasks import DigitSumTask

NAME = "deepsets_units_digit"

RECIPE = Recipe(
    name=NAME,
    task=DigitSumTask("units_digit"),
    build_model=lambda: DeepSets(vocabulary_size=10, name=NAME),
    summary="DeepSets (Zaheer et al. 2017; the baseline of DeBenedetto & "
    "Chiang, ICML 2020, Sec. 5.1) trained to predict the units digit of the "
    "sum of a multiset of digits 1-9 (task 2).",
    text="A real-valued sum of embeddings cannot represent a sum modulo "
    "10: this preset is the paper's failure case, at chance level.",
    source=__file__,
)

if __name__ == "__main__":
    RECIPE.main()
