"""Recipe of the `deepsets_units_digit` preset.

DeepSets (Zaheer et al. 2017), the baseline of DeBenedetto & Chiang
(Sec. 5.1), trained on task 2, the units digit of a sum of digits 1-9, by
the paper's recipe (`keras_msets.training.tasks.DigitSumTask`): the
paper's failure case. Re-run it with

    KERAS_BACKEND=jax python zoo/deepsets_units_digit/recipe.py

(a new folder under runs/; `--help` lists the options).
"""

from keras_msets.training.recipe_families import digit_sum_recipe

RECIPE = digit_sum_recipe(
    "deepsets_units_digit",
    "deepsets",
    "units_digit",
    __file__,
    text="A real-valued sum of embeddings cannot represent a sum modulo "
    "10: this preset is the paper's failure case, at chance level.",
)

if __name__ == "__main__":
    RECIPE.main()
