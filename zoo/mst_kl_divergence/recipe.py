"""Recipe of the `mst_kl_divergence` preset (Selby et al., UAI 2022, Table 1).

KERAS_BACKEND=tensorflow python zoo/mst_kl_divergence/recipe.py --help
"""

from keras_msets.training.set_recipe import SetRecipe
from keras_msets.training.tasks import KLDivergence

RECIPE = SetRecipe(
    name="mst_kl_divergence",
    task=KLDivergence(
        dims=range(2, 17), test_dims=(2, 4, 8, 16), default_dims=None
    ),
    # 3.1 s per batch at d = 9 on tensorflow, 2 busy CPU cores: ~45 min.
    budget={"steps": 900},
    summary="A dimension-equivariant Multi-Set Transformer that estimates "
    "the KL divergence `KL(P || Q)` from a set of samples of `P` and one "
    "of `Q`, in any d = 2..16 with one model.",
    text="""Selby et al., "Learning Functions on Multiple Sets using
Multi-Set Transformers", UAI 2022, Sec. 3.5 and 5.1.1 (Table 1,
"Multi-Set-Transformer-Equi"). The paper trains one model per range of d
(1-3, 3-5, 7-9, 14-18 around d = 2, 4, 8, 16, App. B); this one covers
d = 2..16, and `mst_kl_divergence_low_d` is it fine-tuned on d = 1..3.
Labels are neither clipped nor rescaled, though a few explode in high d
(Sec. 5.1.1): they dominate the error at d = 16. The paper trains
100,000 batches; pass a larger `--steps` on a GPU. Its runs were chosen
on this card's test pairs; development pairs (seed 2**32+8000+d) choose
it over the run before it, and on untouched pairs (1,000 per d, seed
2**32+9000+d) its MAE is 0.110 / 0.197 / 0.546 / 2.60 at d = 2 / 4 / 8 /
16 (`benchmarks/mst_dev_selection.py`). A specialist: `kl_divergence`
uses `knn_refined_kl_divergence` by default (better on the estimator
benchmark, benchmarks/RESULTS.md); this preset is reached by name.""",
    source=__file__,
)

if __name__ == "__main__":
    RECIPE.main()
