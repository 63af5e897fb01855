"""Recipe of the `mst_mutual_information_joint` preset (ours).

python zoo/mst_mutual_information_joint/recipe.py --help
"""

from keras_msets.training.set_recipe import SetRecipe
from keras_msets.training.set_recipe import installed_model
from keras_msets.training.tasks import JointMutualInformation

START = "mst_kl_divergence"
SPLIT = "mst_mutual_information"
RECIPE = SetRecipe(
    name="mst_mutual_information_joint",
    task=JointMutualInformation(
        dims=range(1, 9),
        test_dims=(1, 2, 4, 6, 8),
        split=(SPLIT, installed_model(SPLIT)),
        estimator_permutations=8,  # pretrained.JOINT_PERMUTATIONS
        start=START,
    ),
    # Three times App. B's 1e-4, for a short fine-tuning run.
    budget={"steps": 1000, "learning_rate": 3e-4},
    start_from=START,
    summary="The mutual information `I(X; Y)` of paired samples read as a "
    "KL divergence, `KL(P_XY || P_X P_Y)`, by the `mst_kl_divergence` "
    "model fine-tuned for d = 1..8.",
    text="""Ours, not the paper's (Selby et al., UAI 2022, show the
model the set of `x` and the set of `y`, `mst_mutual_information`, which
cannot use the pairing of the rows and has not learned d = 2). The
permuted rows are only approximately independent samples of `P_X P_Y`;
training uses the same construction, so the model learns the MI of what
it sees. A specialist for Gaussian data with componentwise correlation:
`mutual_information` uses it only when it is named
(`model="mst_mutual_information_joint"` or `mode="joint"`); the default
is `knn_refined_mutual_information`, which serves any n, dim x != dim y
and d up to 25 (on the estimator benchmark this preset is the better of
the two on average at n = 50 and 150, the refined one at n = 1,000:
benchmarks/RESULTS.md).""",
    source=__file__,
)

if __name__ == "__main__":
    RECIPE.main()
