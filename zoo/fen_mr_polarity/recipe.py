"""Recipe of `fen_mr_polarity`: a FEN classifies movie-review sentences.

The paper's local training on MR polarity, sentences cut or padded to 64
tokens; `keras_msets.training.tasks.FenMrPolarityTask`. Needs the MR
tarball (`keras-msets data fetch mr`). Re-run it with

    KERAS_BACKEND=jax python zoo/fen_mr_polarity/recipe.py --help
"""

from pathlib import Path

from keras_msets.models.text import FenTextClassifier
from keras_msets.training import Recipe
from keras_msets.training.tasks import FenMrPolarityTask

NAME = "fen_mr_polarity"
TASK = FenMrPolarityTask(Path(__file__).parent)


def build_model():
    return FenTextClassifier(  # a FEN with outputs [1 - p, p]
        sequence_length=TASK.sequence_length,
        vocabulary_size=TASK.vocabulary_size(),  # the training sentences'
        preprocessor=TASK.shipped_preprocessor(),  # raw sentences in
        sharing="all",
        name=NAME,
    )


RECIPE = Recipe(
    name=NAME,
    task=TASK,
    build_model=build_model,
    budget={"stages": ((TASK.sequence_length, 30),)},  # --epochs: 30
    summary="A Fusion Encoder Network (Pasteris et al., arXiv:2402.15883) "
    "that classifies the polarity of a movie-review sentence.",
    text="**Worse than an LSTM and a GRU.** On the same held-out fold (400 "
    "sentences) this FEN reaches 0.6150, an LSTM 0.6850 and a GRU 0.6925 of "
    "about the same size (`KERAS_BACKEND=jax python "
    "benchmarks/fen_mr_baselines.py`; `benchmarks/results/"
    "fen_mr_baselines.json`). It ships as the first Fusion Encoder Network "
    "trained on real text, not as a recommended MR classifier.",
    source=__file__,
)
encode = TASK.encode  # raw sentences -> the preset's token ids

if __name__ == "__main__":
    RECIPE.main()
