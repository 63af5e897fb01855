"""Recipe of `complex_order_transformer_mr`: complex-order embeddings and a
Transformer.

Complex-order word embeddings (Wang et al., ICLR 2020) under a Transformer
classifier, MR sentence polarity, 10-fold cross validation with the PE and
TPE baselines; the preset is fold 0's model
(`keras_msets.training.tasks.ComplexOrderMrTask`). Needs the MR tarball
(`keras-msets data fetch mr`). Re-run it with

    KERAS_BACKEND=jax python zoo/complex_order_transformer_mr/recipe.py --help
"""

from pathlib import Path

from keras_msets.training.recipe_options import OptionsRecipe
from keras_msets.training.tasks import ComplexOrderMrTask

TASK = ComplexOrderMrTask(
    Path(__file__).parent,
    "transformer",
    paper={"complex_order": 0.746, "pe": 0.737, "tpe": 0.731},  # Table 2
    glove=False,  # amplitudes from random values, as in the paper
    embedding_dim=64,
    num_heads=4,
    intermediate_dim=128,
)
RECIPE = OptionsRecipe(
    name="complex_order_transformer_mr",
    task=TASK,
    build_model=TASK.build_model,
    summary="A Transformer text classifier on complex-order word embeddings "
    '(Wang et al., "Encoding word order in complex embeddings", ICLR 2020) '
    "that classifies the polarity of a movie-review sentence.",
    text="Each word is r·exp(i·ω·pos) per dimension, amplitude r and "
    "frequency ω learned per word and dimension (Eq. 5, no initial phase, "
    "as in the paper's experiments). Network: embedding dimension 64 "
    "(complex), one `ComplexTransformerEncoder` (64 complex units, 4 heads, "
    "inner size 128, separate real and imaginary weights), masked mean "
    "over positions, dropout 0.1, `ComplexDense(2)` whose moduli are the "
    "logits; word amplitudes from random values as in the paper.",
    budget_options=(("--folds", {"type": int, "nargs": "+"}),),
    source=__file__,
)
encode = TASK.encode  # raw sentences -> the preset's token ids

if __name__ == "__main__":
    RECIPE.main()
