"""Recipe of the `mst_kl_divergence_low_d` preset (Selby et al., App. B).

KERAS_BACKEND=tensorflow python zoo/mst_kl_divergence_low_d/recipe.py --help
"""

from keras_msets.training.recipe_families import kl_range_recipe

# 1.3 s per batch at d = 1..3 on one tensorflow core: 1,500 in ~33 min.
RECIPE = kl_range_recipe(
    "mst_kl_divergence_low_d",
    dims=(1, 2, 3),
    gaussian_dims=(1, 2),
    default_dims=None,
    text="""App. B of Selby et al. (UAI 2022) trains one KL model per range
of d; d = 1..3 is the range of the paper's own model for d = 2.
`mst_kl_divergence` never saw d = 1; this is the library's only preset
trained on it. Its runs were chosen on this card's test pairs; on
untouched pairs (1,000 per d, seed 2**32+9000+d) its MAE is 0.039 /
0.081 / 0.118 at d = 1 / 2 / 3 (`benchmarks/mst_dev_selection.py`). A
specialist: `kl_divergence` uses `knn_refined_kl_divergence` by default
(better on the estimator benchmark, benchmarks/RESULTS.md); this preset
is reached by name.""",
    source=__file__,
)

if __name__ == "__main__":
    RECIPE.main()
