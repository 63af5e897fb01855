"""Recipe of the `deepsets_digit_sum` preset.

DeepSets (Zaheer et al. 2017), the baseline of DeBenedetto & Chiang
(Sec. 5.1), trained on task 1, the sum of digits 1-9, by the paper's recipe
(`keras_msets.training.tasks.DigitSumTask`). Re-run it with

    KERAS_BACKEND=jax python zoo/deepsets_digit_sum/recipe.py

(a new folder under runs/; `--help` lists the options).
"""

from keras_msets.training.recipe_families import digit_sum_recipe

RECIPE = digit_sum_recipe("deepsets_digit_sum", "deepsets", "sum", __file__)

if __name__ == "__main__":
    RECIPE.main()
