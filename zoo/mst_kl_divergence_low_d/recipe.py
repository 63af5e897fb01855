"""Recipe of the `mst_kl_divergence_low_d` preset (Selby et al., App. B).

KERAS_BACKEND=tensorflow python zoo/mst_kl_divergence_low_d/recipe.py --help
"""

from keras_msets.training.set_recipe import SetRecipe
from keras_msets.training.set_recipe import installed_model
from keras_msets.training.tasks import KLDivergence
from keras_msets.training.tasks.set_models import build_model

NAME = "mst_kl_divergence_low_d"
START = "mst_kl_divergence"
RECIPE = SetRecipe(
    name=NAME,
    task=KLDivergence(
        dims=(1, 2, 3),
        test_dims=(1, 2, 3),
        gaussian_dims=(1, 2),
        default_dims=(1, 3),
        reference=(START, installed_model(START)),
    ),
    build_model=lambda: build_model("kl_divergence", name=NAME),
    # 1.3 s per batch at d = 1..3 on one tensorflow core: ~33 min.
    budget={"steps": 1500},
    start_from=START,
    summary="The KL divergence `KL(P || Q)` from a set of samples of `P` "
    "and one of `Q` in d = 1..3: the `mst_kl_divergence` model "
    "fine-tuned on d = 1..3 only.",
    text="""App. B of Selby et al. (UAI 2022) trains one KL model per range
of d; d = 1..3 is the range of the paper's own model for d = 2.
`mst_kl_divergence` never saw d = 1; this is the library's only preset
trained on it.""",
    source=__file__,
)

if __name__ == "__main__":
    RECIPE.main()
