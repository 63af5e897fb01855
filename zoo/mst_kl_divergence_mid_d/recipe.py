"""Recipe of the `mst_kl_divergence_mid_d` preset (Selby et al., App. B).

KERAS_BACKEND=tensorflow python zoo/mst_kl_divergence_mid_d/recipe.py --help
"""

from keras_msets.training.recipe_families import kl_range_recipe

# Over 5.6 s per batch at d = 3..5 on one tensorflow core.
RECIPE = kl_range_recipe(
    "mst_kl_divergence_mid_d",
    dims=(3, 4, 5),
    gaussian_dims=(4,),
    default_dims=None,
    text="""App. B of Selby et al. (UAI 2022) trains one KL model per range
of d; d = 3..5 is the range of the paper's own model for d = 4. Not
trained yet (over 5.6 s a batch on one CPU core); once its card shows it
below `mst_kl_divergence` at d = 4 and 5, the estimator can route
d = 4..5 to it (`default_dims`).""",
    source=__file__,
)

if __name__ == "__main__":
    RECIPE.main()
