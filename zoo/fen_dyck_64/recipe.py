"""Recipe of the `fen_dyck_64` preset.

A Fusion Encoder Network (Pasteris et al.; one token encoder, one fusion
encoder and one decoder shared by every segment) trained by the paper's
local, segment-by-segment algorithm to say whether a string of 64 brackets
is balanced (Dyck-1), with two remedies of our own: a curriculum over
sequence length (16, 32, then 64 brackets; see `keras_msets.zoo.fen_recipe`)
and an auxiliary loss that asks every segment's encoding for its token
counts (`token_count_loss_weight`). Re-run it end to end with

    KERAS_BACKEND=jax python zoo/fen_dyck_64/recipe.py

or `keras-msets zoo train fen_dyck_64`; it writes the preset folder
(default: next to this file, replacing the shipped preset).
"""

import functools
from pathlib import Path

import keras
import numpy as np

from keras_msets import data
from keras_msets.models import FusionEncoderNetwork
from keras_msets.models import FusionSegments
from keras_msets.zoo import fen_recipe

NAME = "fen_dyck_64"
LENGTH = 64
# (length, epochs[, learning rate]): the last stage at a lower rate (at
# 1e-3 its summed loss diverged after two epochs).
STAGES = ((16, 12), (32, 16), (64, 15, 3e-4))
TOKEN_COUNT_LOSS_WEIGHT = 0.1
TRAIN_SIZE = 20000
DEV_SIZE = 2000
LEARNING_RATE = 1e-3
SEED = 0
TEST_SEED = 123_456
TEST_SIZE = 10_000


def build_model(
    length=LENGTH,
    encoding_activation="tanh",
    rate_power=0.0,
    token_count_loss_weight=TOKEN_COUNT_LOSS_WEIGHT,
):
    """The preset's FEN; `encoding_activation` of alpha's and beta's outputs.

    The shipped preset uses tanh (the layer's default), uniform learning
    rates and the auxiliary token-count loss at weight
    `TOKEN_COUNT_LOSS_WEIGHT` (0 turns it off: the paper's training). Two
    other experiments of benchmarks/RESULTS.md: `None` (linear
    encodings, which can hold an unbounded bracket count), and
    `rate_power` p > 0, per-segment learning rates (Sec. 8) `eta_ij =
    eta_bar_ij` proportional to the segment's length to the power p
    (normalised to mean 1), which weights the long segments' losses, where
    the exact count matters most.
    """
    rates = None
    if rate_power:
        spans = FusionSegments(length).segments
        eta = np.array([(j - i + 1) ** rate_power for i, j in spans])
        rates = np.stack([eta / eta.mean()] * 2, axis=1)
    return FusionEncoderNetwork(
        sequence_length=length,
        vocabulary_size=3,
        output_dim=1,
        encoding_dim=32,
        token_encoder_units=[64],
        fusion_encoder_units=[64],
        decoder_units=[64],
        output_activation="sigmoid",
        sharing="all",
        encoding_activation=encoding_activation,
        segment_learning_rates=rates,
        token_count_loss_weight=token_count_loss_weight,
        name=NAME,
    )


def make_data(length, split):
    seed = {"train": 1, "dev": 2}[split] * 1000 + length + SEED
    size = TRAIN_SIZE if split == "train" else DEV_SIZE
    x, y = data.dyck1(size, length, seed=seed)
    return x, y.astype("float32")


def evaluate(model, verbose=1, num=TEST_SIZE, seed=TEST_SEED):
    """Accuracy on fresh strings (half balanced, half near-miss negatives)."""
    x, y, kind = data.dyck1(num, LENGTH, seed=seed, return_kind=True)
    predicted = fen_recipe.predict_labels(model, x)
    metrics = {"accuracy": float(np.mean(predicted == y))}
    for name in data.monoid_tasks.DYCK1_KINDS:
        chosen = kind == name
        metrics[f"accuracy_{name}"] = float(
            np.mean(predicted[chosen] == y[chosen])
        )
    if model.count_readout is not None:
        metrics.update(count_exactness(model, x[:1000]))
    if verbose:
        for key, value in metrics.items():
            print(f"{key}: {value:.4f}")
    return metrics


def count_exactness(model, x):
    """Fraction of segments whose counts the readout gets exactly right.

    Per segment length: the readout's estimate of the number of "(" and of
    ")", rounded, against the true counts (`count_exact_<length>`).
    """
    predicted = np.rint(
        keras.ops.convert_to_numpy(model.predicted_token_counts(x))
    )
    true = keras.ops.convert_to_numpy(model.segment_token_counts(x))
    exact = np.all(predicted[..., 1:] == true[..., 1:], axis=-1)
    lengths = np.array([j - i + 1 for i, j in model.segments.segments])
    return {
        f"count_exact_{n}": float(exact[:, lengths == n].mean())
        for n in (8, 16, 32, 64)
    }


def train(
    output_dir=None,
    epochs=None,
    stages=STAGES,
    verbose=2,
    encoding_activation="tanh",
    rate_power=0.0,
    token_count_loss_weight=TOKEN_COUNT_LOSS_WEIGHT,
    last_learning_rate=None,
):
    """Run the curriculum; `epochs` overrides the last stage's epochs.

    `last_learning_rate` overrides the last stage's learning rate.
    """
    from keras_msets.zoo import registry

    if epochs is not None or last_learning_rate is not None:
        length, last_epochs, *rate = stages[-1]
        last = (length, epochs or last_epochs)
        if last_learning_rate is not None:
            rate = [last_learning_rate]
        stages = tuple(stages[:-1]) + (last + tuple(rate),)
    output_dir = Path(output_dir or Path(__file__).parent)
    output_dir.mkdir(parents=True, exist_ok=True)
    model, history, seconds = fen_recipe.fit_stages(
        functools.partial(
            build_model,
            encoding_activation=encoding_activation,
            rate_power=rate_power,
            token_count_loss_weight=token_count_loss_weight,
        ),
        stages,
        make_data,
        learning_rate=LEARNING_RATE,
        seed=SEED,
        verbose=verbose,
        checkpoint=output_dir / "checkpoint.weights.h5",
    )
    (output_dir / "checkpoint.weights.h5").unlink(missing_ok=True)
    metrics = evaluate(model, verbose=verbose)
    metrics["train_seconds"] = round(seconds, 1)
    metrics["stages"] = history
    card = model_card(model, metrics)
    registry.save_preset(
        model,
        output_dir,
        data=(
            f"dyck1: {TRAIN_SIZE:,} training and {DEV_SIZE:,} dev strings per "
            f"curriculum stage (lengths {[s[0] for s in stages]}), half "
            "balanced, half negatives of which half are near misses"
        ),
        metrics=metrics,
        card=card,
        example_input=data.dyck1(8, LENGTH, seed=99)[0],
        extra={"task": "dyck1", "recipe_seed": SEED},
    )
    return metrics


def model_card(model, metrics):
    rows = "\n".join(
        f"| {name} | {metrics[f'accuracy_{name}']:.4f} |"
        for name in data.monoid_tasks.DYCK1_KINDS
    )
    stages = ", ".join(
        f"{s['length']} ({s['epochs_run']} epochs at learning rate "
        f"{s.get('learning_rate', LEARNING_RATE):g}, best dev accuracy "
        f"{s['best_val_accuracy']:.4f})"
        for s in metrics["stages"]
    )
    return f"""# `{NAME}`

A Fusion Encoder Network (Pasteris et al., "Fusion Encoder Networks",
arXiv:2402.15883) that says whether a string of {LENGTH} brackets is
balanced. It is, as far as we know, the first trained FEN: the paper's
authors never implemented the method.

## Use

```python
import keras_msets

model = keras_msets.zoo.load("{NAME}")
p = model.predict(ids)  # ids: int32 [batch, {LENGTH}], 1 = "(", 2 = ")"
balanced = p[:, 0] > 0.5
fused = model.fuse()  # the log-depth network of Sec. 11, same outputs
```

- Input: int32 `[batch, {LENGTH}]`, `1` = "(" and `2` = ")".
- Output: float32 `[batch, 1]`, the probability that the string is
  balanced (the root decoder `omega(0, eps_1N, 0)`).
- Parameters: {model.count_params():,} (`sharing="all"`: one token encoder,
  one fusion encoder, one decoder{
        ", and the count readout, used only in training"
        if model.count_readout is not None
        else ""
    }); backend it was trained on:
  {keras.backend.backend()}; it loads on tensorflow, jax and torch.

## Training

`zoo/{NAME}/recipe.py` (re-run: `keras-msets zoo train {NAME}`): the
paper's local training (each segment's encoder/decoder pair on its own
loss, all input encodings held constant), binary cross-entropy summed over
the {model.segments.num_segments} segments, Adam (constant learning rate
within a stage), batch 64, early stopping after 6 epochs
without dev improvement (best weights kept), seed {SEED}; a stage ends
early once its dev accuracy reaches 0.995.
Two remedies of our own (benchmarks/RESULTS.md compares FEN with and
without them); neither changes the paper's local update rule:

- curriculum over length: stages {stages};
- {_auxiliary(model, metrics)}

Wall time {metrics["train_seconds"]:.0f} s on a 2-core CPU machine.

## Results

Fresh test strings (seed {TEST_SEED}, {TEST_SIZE:,} strings, never seen in
training): half balanced, half negatives, of which half are near misses
(one bracket flipped, or one adjacent "()" swapped into ")("). Re-measure
with `keras-msets zoo evaluate {NAME}`.

- accuracy: {metrics["accuracy"]:.4f} (target of the issue: 0.97)

| kind of string | accuracy |
|---|---|
{rows}
{_shortfall(metrics)}"""


def _auxiliary(model, metrics):
    weight = model.token_count_loss_weight
    if not weight:
        return "no auxiliary loss (`token_count_loss_weight=0`)."
    exact = ", ".join(
        f"{metrics[f'count_exact_{n}']:.3f} at {n}" for n in (16, 32, 64)
    )
    return f"""auxiliary token-count loss (`token_count_loss_weight={weight}`):
  a linear readout, shared by all segments, regresses each segment's
  number of "(" and of ")" from the segment's own encoding (squared error
  in tokens, summed over segments, times {weight}). The targets come from
  the input, not the label; the loss is local (its gradient reaches only
  the encoder that made that encoding). On 1,000 test strings the rounded
  readout gets both counts exactly right for a fraction {exact}
  of the segments of those lengths."""


def _shortfall(metrics):
    if metrics["accuracy"] >= 0.97:
        return ""
    return f"""
## Limitations

This model does not reach the issue's target (0.97): {metrics["accuracy"]:.4f}.
Local training mastered length 16 (dev accuracy
{metrics["stages"][0]["best_val_accuracy"]:.4f}) and 32
({metrics["stages"][1]["best_val_accuracy"]:.4f}), but at 64 the encodings
no longer carry the bracket count exactly: strings with one bracket flipped
(counts off by two, the easiest negatives for a counter) are called
balanced most of the time, while balanced strings and most other negatives
are right. One exploratory run with wider networks (encoding 64, hidden
128) did worse at length 32 (dev 0.84); longer training and per-level
parameters are untried (2 CPU cores); see benchmarks/RESULTS.md.
"""


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", default=None)
    parser.add_argument(
        "--encoding-activation",
        default="tanh",
        help='"tanh" (the preset) or "linear" (the RESULTS.md experiment)',
    )
    parser.add_argument(
        "--rate-power",
        type=float,
        default=0.0,
        help="per-segment learning rates ~ length**p (0: uniform, the preset)",
    )
    parser.add_argument(
        "--token-count-loss-weight",
        type=float,
        default=TOKEN_COUNT_LOSS_WEIGHT,
        help="weight of the auxiliary token-count loss (0: the paper's "
        f"training; the preset: {TOKEN_COUNT_LOSS_WEIGHT})",
    )
    parser.add_argument(
        "--last-learning-rate",
        type=float,
        default=None,
        help="learning rate of the last (length 64) stage (the preset: "
        f"{STAGES[-1][2]})",
    )
    args = parser.parse_args()
    activation = args.encoding_activation
    print(
        train(
            args.output_dir,
            encoding_activation=None if activation == "linear" else activation,
            rate_power=args.rate_power,
            token_count_loss_weight=args.token_count_loss_weight,
            last_learning_rate=args.last_learning_rate,
        )
    )
