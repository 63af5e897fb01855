"""Recipe of the `mst_count_shared_digits` preset.

A Multi-Set Transformer with a small CNN image encoder (Selby et al., UAI
2022, Sec. 5.2.1, Table 2 "MNIST") trained to count the digit classes
that two sets of 10-30 handwritten digits share. MNIST cannot be
downloaded here; the images are scikit-learn's 8x8 digits
(`keras_msets.data.counting_shared_classes(source="digits")`). Train it
with

    KERAS_BACKEND=tensorflow python zoo/mst_count_shared_digits/recipe.py

(2,500 steps by default: about 45 minutes on 2 busy CPU cores; the paper
trains 1,000 encoder batches, then 10,000), then `keras-msets zoo train
mst_count_shared_digits` re-runs it. It writes the preset folder
(default: next to this file).
"""

from keras_msets.zoo import mst_recipe

NAME = "mst_count_shared_digits"
TASK = "counting"
# Measured: 0.96 s per batch of 64 on tensorflow, 2 CPU cores shared with
# other jobs (1.0 steps/s): 2,500 steps ~ 42 min.
DEFAULT_STEPS = 2500
PRETRAIN_STEPS = 1000  # App. B
TEST_SIZE = 1000
SEED = 0


def build_model(**overrides):
    """App. B (MNIST): CNN 32-64 filters, latent 128, hidden 256, linear
    decoder."""
    return mst_recipe.build_counting_model(name=NAME, **overrides)


def evaluate(model, verbose=1, num=TEST_SIZE, seed=mst_recipe.TEST_SEED):
    """Accuracy of the rounded count and L1 error on the test images."""
    return mst_recipe.evaluate_counting(
        model, num=num, seed=seed, verbose=verbose
    )


def train(
    output_dir=None,
    steps=None,
    learning_rate=None,
    pretrain_steps=PRETRAIN_STEPS,
    **options,
):
    """Pretrains the encoder, trains end to end, evaluates and saves.

    `learning_rate` serves both; `options`: `epochs`, `batch_size`,
    `workers`, `verbose`, `test_size`, `model_kwargs` (smoke tests),
    `continue_from` (see `keras_msets.zoo.mst_recipe.train_recipe`).
    """
    learning_rate = learning_rate or mst_recipe.DEFAULTS[TASK]["learning_rate"]

    def pretrain(model):
        accuracy = mst_recipe.pretrain_encoder(
            model,
            steps=pretrain_steps,
            learning_rate=learning_rate,
            seed=SEED,
            verbose=0,
        )
        return {"pretrain_steps": pretrain_steps, "pretrain_accuracy": accuracy}

    return mst_recipe.train_recipe(
        globals(),
        data=(
            "pairs of sets of 10-30 scikit-learn 8x8 digit images (images "
            "0-1349 of load_digits(); test: 1350-1796), drawn without "
            "replacement from the whole split, labelled with the number "
            "of classes both sets contain (Selby et al. Sec. 5.2.1, MNIST "
            "replaced); fresh pairs every batch"
        ),
        dims=None,
        output_dir=output_dir,
        steps=steps,
        learning_rate=learning_rate,
        before_fit=pretrain,
        **options,
    )


def model_card(model, metrics):
    paper = mst_recipe.PAPER_COUNTING_MNIST
    pretrain = (
        f" First the CNN is pretrained as a digit classifier for "
        f"{metrics['pretrain_steps']:,} batches of 64 (App. B; final "
        f"training accuracy {metrics['pretrain_accuracy']:.4f}), then "
        "everything is trained end to end."
    )
    return f"""# `{NAME}`

A Multi-Set Transformer with a CNN image encoder (Selby et al., "Learning
Functions on Multiple Sets using Multi-Set Transformers", UAI 2022,
Sec. 5.2.1) that counts how many digit classes two sets of images share.

## Use

```python
import keras_msets

model = keras_msets.zoo.load("{NAME}")
(x, y, x_mask, y_mask), counts = keras_msets.data.counting_shared_classes(
    8, source="digits", split="test", seed=0
)
predicted = model.predict({{"sets": (x, y), "masks": (x_mask, y_mask)}})
shared = predicted.round()
```

- Input: `{{"sets": [x, y], "masks": [x_mask, y_mask]}}`, images
  float32 `[batch, n, 8, 8, 1]` in [0, 1] (scikit-learn digits scaled by
  1/16) and boolean masks `[batch, n]`.
- Output: `[batch, 1]`, the number of shared classes (a regression;
  round it).
- Parameters: {model.count_params():,}: the CNN (3x3 convolutions of 32
  and 64 filters, each with a max pool, a projection to 128), the
  Multi-Set Transformer (latent 128, hidden 256, 4 blocks, 4 heads, PMA)
  and a single linear decoder layer (App. B).

{
        mst_recipe.training_text(
            NAME,
            TASK,
            metrics["fit"],
            pretrain,
            earlier=metrics.get("earlier_fits", ()),
        )
    }
## Results

{TEST_SIZE:,} fresh pairs of test images (images 1350-1796, never seen in
training; seed {mst_recipe.TEST_SEED}). Accuracy: the rounded prediction
equals the count; L1: mean absolute error of the unrounded prediction.
Re-measure with `keras-msets zoo evaluate {NAME}`.

| | this model (8x8 digits) | paper, Multi-Set Transformer (MNIST, Table 2) |
|---|---|---|
| accuracy | {metrics["accuracy"]:.4f} | {paper["accuracy"]} +- 0.0038 |
| L1 | {metrics["l1"]:.4f} | {paper["l1"]} +- 0.0124 |

The data differ from the paper's (scikit-learn's 1,797 8x8 digits, not
MNIST), so the numbers compare only loosely.

## Where it is wrong, and why

The count is limited by the image encoder, not by the set model
(measured on the 3,500-batch weights of 2026-11). A logistic
regression on the model's CNN embeddings classifies the 447
held-out digits with accuracy 0.960, and counting the shared classes
from those predicted labels gives accuracy 0.736 on the same test pairs:
the model's own number. An encoder must recognise about 99.5 % of the
images for the paper's 0.97, and the same CNN trained alone on the
1,350 training images of 8x8 digits reaches 0.91-0.95, with or without
shift and rotation augmentation (`python benchmarks/mst_counting_ceiling.py
--encoder-augmentations none shift shift_rotate`, `benchmarks/RESULTS.md`).
"""


if __name__ == "__main__":
    mst_recipe.command_line(train, __doc__.splitlines()[0], DEFAULT_STEPS)
