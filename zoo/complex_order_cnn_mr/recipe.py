"""Recipe of `complex_order_cnn_mr`: complex-order embeddings and a CNN.

Complex-order word embeddings (Wang et al., ICLR 2020) under a CNN
classifier, MR sentence polarity, 10-fold cross validation with the PE and
TPE baselines; the preset is fold 0's model
(`keras_msets.training.tasks.ComplexOrderMrTask`). Needs the MR tarball
(`keras-msets data fetch mr`). Re-run it with

    KERAS_BACKEND=jax python zoo/complex_order_cnn_mr/recipe.py --help
"""

from pathlib import Path

from keras_msets.training.recipe_options import OptionsRecipe
from keras_msets.training.tasks import ComplexOrderMrTask

TASK = ComplexOrderMrTask(
    Path(__file__).parent,
    "cnn",
    paper={"complex_order": 0.825, "pe": 0.816, "tpe": 0.815},  # Table 2
    glove=True,  # amplitudes start from GloVe 6B 50-d
    filters=64,
)
RECIPE = OptionsRecipe(
    name="complex_order_cnn_mr",
    task=TASK,
    build_model=TASK.build_model,
    summary="A CNN text classifier on complex-order word embeddings (Wang "
    'et al., "Encoding word order in complex embeddings", ICLR 2020) that '
    "classifies the polarity of a movie-review sentence.",
    text="Each word is r·exp(i·ω·pos) per dimension, amplitude r and "
    "frequency ω learned per word and dimension (Eq. 5, no initial phase, "
    "as in the paper's experiments). Network: embedding dimension 50 "
    "(complex), `ComplexConv1D` with 64 complex filters of each size 3, 4 "
    "and 5 (ReLU on real and imaginary parts), masked max over time, "
    "dropout 0.5, `ComplexDense(2)` whose moduli are the logits; "
    "amplitudes start from GloVe 6B 50-d.",
    budget_options=(("--folds", {"type": int, "nargs": "+"}),),
    source=__file__,
)
encode = TASK.encode  # raw sentences -> the preset's token ids

if __name__ == "__main__":
    RECIPE.main()
