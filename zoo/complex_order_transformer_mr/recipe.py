"""Recipe of the `complex_order_transformer_mr` preset.

Complex-order embeddings (Wang et al., ICLR 2020) with a Transformer
classifier on MR sentence polarity. 10-fold cross validation of the
complex-order model and of the PE and TPE baselines (same recipe, same
folds), then the complex-order model of fold 0 is saved; see
`keras_msets.zoo.complex_order_recipe`. Re-run it with

    KERAS_BACKEND=jax python zoo/complex_order_transformer_mr/recipe.py

or `keras-msets zoo train complex_order_transformer_mr` (needs the MR tarball:
`keras-msets data fetch mr`).
"""

from pathlib import Path

from keras_msets.zoo import complex_order_recipe

NAME = "complex_order_transformer_mr"
ARCHITECTURE = "transformer"
HERE = Path(__file__).parent

encode, evaluate, train = complex_order_recipe.preset_functions(
    NAME, ARCHITECTURE, HERE
)

if __name__ == "__main__":
    complex_order_recipe.main(NAME, ARCHITECTURE, HERE)
