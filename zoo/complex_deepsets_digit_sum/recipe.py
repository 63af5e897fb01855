"""Recipe of the `complex_deepsets_digit_sum` preset.

Complex DeepSets (DeBenedetto & Chiang, Sec. 5.1; 50 stored states)
trained on task 1, the sum of digits 1-9, by the paper's recipe
(`keras_msets.training.tasks.DigitSumTask`). Re-run it with

    KERAS_BACKEND=jax python zoo/complex_deepsets_digit_sum/recipe.py

(a new folder under runs/; `--help` lists the options).
"""

from keras_msets.training.recipe_families import digit_sum_recipe

RECIPE = digit_sum_recipe(
    "complex_deepsets_digit_sum", "complex_deepsets", "sum", __file__
)

if __name__ == "__main__":
    RECIPE.main()
