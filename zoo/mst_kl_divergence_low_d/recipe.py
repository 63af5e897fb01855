"""Recipe of the `mst_kl_divergence_low_d` preset.

The paper's own way for small d (Selby et al., UAI 2022, App. B: one
model per dimension range, d = 1..3 for its d = 2 row of Table 1): the
`mst_kl_divergence` model (dimension-equivariant, Sec. 3.5), its weights
copied and then fine-tuned on KL pairs of random Gaussian mixtures
(Sec. 5.1.1) in d = 1..3 only. `keras_msets.estimators.kl_divergence`
sends d = 1..3 to it (`pretrained.DEFAULT_ROUTES`) and larger d to the
other KL presets. Train it with

    KERAS_BACKEND=tensorflow python zoo/mst_kl_divergence_low_d/recipe.py

then `keras-msets zoo train mst_kl_divergence_low_d` re-runs it. It writes
the preset folder (default: next to this file).
"""

from keras_msets.zoo import mst_kl_range
from keras_msets.zoo import mst_recipe

NAME = "mst_kl_divergence_low_d"
TASK = "kl_divergence"
DIMS = (1, 2, 3)
TEST_DIMS = (1, 2, 3)
GAUSSIAN_DIMS = (1, 2)
GAUSSIAN_KLS = (0.0, 0.5, 1.0, 2.0)
INIT_FROM = "mst_kl_divergence"
# Measured: 1.3 s per batch at d = 1..3 on one tensorflow CPU core
# (1,500 batches in about 33 minutes).
DEFAULT_STEPS = 1500
TEST_SIZE = 1000
SEED = 0
RANGE_TEXT = "the range of the paper's own model for d = 2"
NOTES = (
    f"`{INIT_FROM}` was trained on d = 2..16 and never saw d = 1; this "
    "preset is the library's only one trained on d = 1.",
)


def build_model(**overrides):
    """The `mst_kl_divergence` model (`mst_kl_range.build_model`)."""
    return mst_kl_range.build_model(globals(), **overrides)


def evaluate(model, verbose=1, num=TEST_SIZE, seed=mst_recipe.TEST_SEED):
    """MAE at d = 1, 2, 3 beside k-NN and the general preset, same pairs;
    then shifted unit Gaussians at d = 1, 2 (`mst_kl_range.evaluate`)."""
    return mst_kl_range.evaluate(globals(), model, verbose, num, seed)


def train(output_dir=None, steps=None, init_from=INIT_FROM, **options):
    """Trains, evaluates, saves (`mst_kl_range.train`)."""
    return mst_kl_range.train(
        globals(), output_dir, steps, init_from=init_from, **options
    )


def model_card(model, metrics):
    return mst_kl_range.model_card(globals(), model, metrics)


if __name__ == "__main__":
    mst_recipe.command_line(train, __doc__.splitlines()[0], DEFAULT_STEPS)
