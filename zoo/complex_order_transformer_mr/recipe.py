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


def encode(texts, preset_dir=HERE):
    """Token ids `[len(texts), 40]` of raw sentences, for the preset."""
    return complex_order_recipe.encode(texts, preset_dir)


def evaluate(model, verbose=1, preset_dir=HERE):
    """Accuracy on the held-out fold 0 (400 sentences)."""
    return complex_order_recipe.evaluate(model, preset_dir, verbose=verbose)


def train(output_dir=None, folds=None, verbose=1):
    return complex_order_recipe.train(
        NAME, ARCHITECTURE, output_dir or HERE, folds=folds, verbose=verbose
    )


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", default=None)
    parser.add_argument(
        "--folds",
        type=int,
        nargs="+",
        default=None,
        help="fold indices to run (default: 1..9 then 0, the preset's fold)",
    )
    args = parser.parse_args()
    print(train(args.output_dir, args.folds))
