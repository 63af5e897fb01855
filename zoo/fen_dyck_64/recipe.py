"""Recipe of `fen_dyck_64`: a FEN says whether 64 brackets are balanced.

The paper's local training plus two remedies of ours: a curriculum over
length (16, 32, then 64 brackets; `keras_msets.training.fen_curriculum`)
and an auxiliary token-count loss. The task: `keras_msets.training.tasks.
DyckTask`. Re-run it with

    KERAS_BACKEND=jax python zoo/fen_dyck_64/recipe.py --help
"""

from keras_msets.models import FusionEncoderNetwork
from keras_msets.training.fen_curriculum import length_rates
from keras_msets.training.recipe_options import OptionsRecipe
from keras_msets.training.tasks import DyckTask

NAME = "fen_dyck_64"
LENGTH = 64
TOKEN_COUNT_LOSS_WEIGHT = 0.1


def build_model(
    length=LENGTH,
    encoding_activation="tanh",  # "linear": unbounded encodings
    rate_power=0.0,  # p > 0: segment rates ~ segment length ** p (Sec. 8)
    token_count_loss_weight=TOKEN_COUNT_LOSS_WEIGHT,  # 0: the paper's
):
    return FusionEncoderNetwork(
        sequence_length=length,
        vocabulary_size=3,  # 1 = "(", 2 = ")"; widths: the defaults
        output_activation="sigmoid",
        sharing="all",
        name=NAME,
        encoding_activation=encoding_activation,
        segment_learning_rates=length_rates(length, rate_power),
        token_count_loss_weight=token_count_loss_weight,
    )


RECIPE = OptionsRecipe(
    name=NAME,
    task=DyckTask(length=LENGTH),
    build_model=build_model,
    # (length, epochs[, learning rate]): the last stage at 3e-4 (at 1e-3
    # its summed loss diverged after two epochs).
    budget={"stages": ((16, 12), (32, 16), (64, 15, 3e-4))},
    summary="A Fusion Encoder Network (Pasteris et al., arXiv:2402.15883) "
    f"that says whether a string of {LENGTH} brackets is balanced.",
    text="It is, as far as we know, the first trained FEN: the paper's "
    "authors never implemented the method.",
    model_options=(  # the experiments of benchmarks/RESULTS.md
        ("--encoding-activation", {"help": '"tanh" (preset) or "linear"'}),
        ("--rate-power", {"type": float, "help": "segment rates ~ length**p"}),
        ("--token-count-loss-weight", {"type": float, "help": "0: paper's"}),
    ),
    budget_options=(
        ("--last-learning-rate", {"type": float, "help": "preset: 3e-4"}),
    ),
    source=__file__,
)

if __name__ == "__main__":
    RECIPE.main()
