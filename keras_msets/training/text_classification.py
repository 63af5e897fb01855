"""Training of the Table 2 text classifiers (Wang et al., ICLR 2020).

`cross_validate()` scores one architecture x embedding pair by k-fold cross
validation, the protocol of the paper for MR, SUBJ, CR and MPQA ("CV" in
its Table 1): for every fold, the vocabulary is built on the training fold
only, word vectors (or complex amplitudes) are optionally initialised with
GloVe, the model is fitted with early stopping on a validation split of the
training fold, and its accuracy is measured on the held-out fold.
`train_final()` trains one model on all the data the same way, for a zoo
preset.

Training settings and their source:
- Adam, learning rate 1e-3, batch size 64, no L2 penalty: values from the
  paper's search pools (learning rate {1e-3, 1e-4, 1e-5}, batch size
  {32, 64, 128}, L2 {0, 1e-3, 1e-4}); the paper does not say which won.
- Early stopping on the validation accuracy (10% of the training fold,
  stratified), patience 3, best weights restored: the paper is silent.
- Pre-trained vectors: GloVe 6B 50-d (`keras_msets.data.text.load_glove`),
  the vectors available offline, instead of the paper's 300-d word2vec.
  Words GloVe lacks get N(0, 0.1^2) rows; padding gets a zero row.
- Tokens: `TextVectorization` with whitespace splitting (MR is already
  tokenised), texts truncated or padded to `sequence_length` (50 tokens
  covers 99% of MR sentences).

The functions need TensorFlow installed (for `TextVectorization`), whatever
the Keras backend, and scikit-learn for the folds.
"""

import time

import keras
import numpy as np

from keras_msets.data import text as text_data
from keras_msets.layers.position_embeddings import EMBEDDING_VARIANTS
from keras_msets.models.text.classifiers import ARCHITECTURES
from keras_msets.models.text.classifiers import build_text_classifier
from keras_msets.training.text_splits import stratified_split
from keras_msets.utils import validation

# How the paper's tables name the embeddings.
EMBEDDING_NAMES = {
    "none": "none",
    "pe": "PE",
    "tpe": "TPE",
    "complex_vanilla": "Complex-vanilla",
    "complex_order": "Complex-order",
}
# The training settings of `cross_validate` and `train_final` (keyword
# arguments; every other keyword goes to `TextClassifier`).
DEFAULTS = {
    "epochs": 20,
    "batch_size": 64,
    "learning_rate": 1e-3,
    "patience": 3,
    "validation_fraction": 0.1,
    "sequence_length": 50,
    "max_tokens": None,
    "standardize": "lower",
    "glove": True,
    "glove_path": None,
    "embedding_dim": None,
    "seed": 0,
    "run_eagerly": False,
    "verbose": 0,
}


def _check_open_fraction(name, value):
    return validation.check_float(
        name, value, low=0, high=1, low_inclusive=False, high_inclusive=False
    )


def _check_inputs(architecture, embedding, texts, labels):
    """Validated (texts as strings, int32 labels) of one training run."""
    validation.check_choice("architecture", architecture, ARCHITECTURES)
    validation.check_choice("embedding", embedding, EMBEDDING_VARIANTS)
    texts = [str(t) for t in texts]
    labels = np.asarray(labels).astype(np.int32)
    if labels.ndim != 1 or len(labels) != len(texts):
        raise ValueError(
            "`labels` must be 1-D with one label per text. Received "
            f"{len(texts)} texts and labels of shape {labels.shape}"
        )
    return texts, labels


def _vectorize(train_texts, other_texts, sequence_length, max_tokens, std):
    vectorizer = text_data.build_vectorizer(
        train_texts,
        max_tokens=max_tokens,
        sequence_length=sequence_length,
        standardize=std,
        split="whitespace",
    )
    vocabulary = vectorizer.get_vocabulary()
    ids = [text_data.texts_to_ids(vectorizer, texts) for texts in other_texts]
    return vocabulary, ids


def _initial_vectors(vocabulary, settings, seed):
    if not settings["glove"]:
        return None, None
    dim = settings["embedding_dim"]
    dim = text_data.GLOVE_DIM if dim is None else dim
    matrix, found = text_data.load_glove(
        vocabulary, dim=dim, path=settings["glove_path"], seed=seed
    )
    return matrix, float(found[2:].mean()) if len(found) > 2 else 0.0


def _fit(
    architecture,
    embedding,
    vocabulary,
    x_fit,
    y_fit,
    x_val,
    y_val,
    num_classes,
    settings,
    pretrained,
    seed,
    hyper,
):
    """Builds, compiles and fits one model; returns (model, history)."""
    keras.utils.set_random_seed(seed)
    embedding_dim = settings["embedding_dim"]
    if pretrained is not None:
        embedding_dim = pretrained.shape[1]
    model = build_text_classifier(
        architecture,
        embedding,
        vocabulary_size=len(vocabulary),
        sequence_length=settings["sequence_length"],
        num_classes=num_classes,
        embedding_dim=embedding_dim,
        pretrained_embeddings=pretrained,
        **dict({"name": f"{architecture}_{embedding}"}, **hyper),
    )
    model.compile(
        optimizer=keras.optimizers.Adam(settings["learning_rate"]),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
        run_eagerly=settings["run_eagerly"],
    )
    callbacks = [
        keras.callbacks.EarlyStopping(
            monitor="val_accuracy",
            mode="max",
            patience=settings["patience"],
            restore_best_weights=True,
        )
    ]
    history = model.fit(
        x_fit,
        y_fit,
        validation_data=(x_val, y_val),
        epochs=settings["epochs"],
        batch_size=settings["batch_size"],
        callbacks=callbacks,
        shuffle=True,
        verbose=settings["verbose"],
    )
    return model, history.history


def _settings(options):
    """`(settings, hyper)`: the validated `DEFAULTS` keys of `options`
    (defaults filled in), and the other keywords (`TextClassifier`'s)."""
    hyper = dict(options)
    a = {key: hyper.pop(key, value) for key, value in DEFAULTS.items()}
    settings = {
        "epochs": validation.check_positive_int("epochs", a["epochs"]),
        "batch_size": validation.check_positive_int(
            "batch_size", a["batch_size"]
        ),
        "learning_rate": float(a["learning_rate"]),
        "patience": validation.check_positive_int("patience", a["patience"]),
        "validation_fraction": _check_open_fraction(
            "validation_fraction", a["validation_fraction"]
        ),
        "sequence_length": validation.check_positive_int(
            "sequence_length", a["sequence_length"]
        ),
        "max_tokens": a["max_tokens"],
        "standardize": a["standardize"],
        "glove": bool(a["glove"]),
        "glove_path": None if a["glove_path"] is None else str(a["glove_path"]),
        "embedding_dim": a["embedding_dim"],
        "seed": int(a["seed"]),
        "run_eagerly": bool(a["run_eagerly"]),
        "verbose": a["verbose"],
        "backend": keras.backend.backend(),
    }
    return settings, hyper


def cross_validate(
    architecture,
    embedding,
    texts,
    labels,
    n_folds=10,
    folds=None,
    keep_model=False,
    **options,
):
    """Scores one classifier by stratified k-fold cross validation.

    For each fold: a `TextVectorization` vocabulary is adapted on the
    training fold only (`keras_msets.data.text.build_vectorizer`); a
    stratified `validation_fraction` of the training fold is held out for
    early stopping (`val_accuracy`, `patience` epochs, best weights
    restored); with `glove=True` the word vectors (real embeddings) or
    amplitudes (complex embeddings) start from GloVe
    (`keras_msets.data.text.load_glove`); the model is trained with Adam
    and the sparse categorical cross-entropy; its accuracy is measured on
    the held-out fold. The folds come from
    `keras_msets.data.text.stratified_folds(labels, n_folds, seed)`, so
    every architecture and embedding sees the same folds for the same seed.

    Args:
        architecture: `"fasttext"`, `"cnn"`, `"lstm"` or `"transformer"`.
        embedding: `"none"`, `"pe"`, `"tpe"`, `"complex_vanilla"` or
            `"complex_order"`.
        texts: sequence of strings.
        labels: integer class labels `0 .. num_classes - 1`.
        n_folds: number of folds (10 in the paper).
        folds: optional list of fold indices to run (e.g. `[0, 1, 2]` for
            the first three of the `n_folds`); None runs them all.
        keep_model: if True, the result also holds the model trained on
            the last fold of `folds` (`"model"`) and that fold's vocabulary
            (`"vocabulary"`, words by id): a zoo preset whose held-out
            accuracy is that fold's.
        **options: the training settings below (defaults in `DEFAULTS`),
            then further `TextClassifier` arguments (`filters`,
            `hidden_units`, `dropout`, ...).

    Settings:
        epochs: largest number of epochs per fold.
        batch_size: batch size.
        learning_rate: Adam learning rate.
        patience: early-stopping patience, in epochs.
        validation_fraction: share of each training fold used for early
            stopping.
        sequence_length: texts are truncated / padded to this many tokens.
        max_tokens: optional vocabulary cap (padding and OOV included).
        standardize: `TextVectorization` standardisation (default
            `"lower"`, which keeps punctuation tokens; use
            `"lower_and_strip_punctuation"` for raw text).
        glove: whether to initialise the word vectors from GloVe.
        glove_path: optional GloVe source for `load_glove` (default: the
            packaged 50-d vectors).
        embedding_dim: word vector size; None: the GloVe size (50) with
            `glove=True`, else the paper's size for the architecture.
        seed: integer seed of the folds, the splits and the initial weights
            (fold `i` uses `seed + i`).
        run_eagerly: passed to `compile` (True avoids compiling, which is
            faster for tiny smoke runs).
        verbose: `fit` verbosity.

    Returns:
        A dict with `fold_accuracies` (list), `mean`, `std` (over the folds
        run, `ddof=1`; 0 for one fold), `params` (parameter count of the
        last fold's model), `trainable_params`, `seconds` (total),
        `fold_seconds`, `epochs_trained`, `glove_coverage` (share of the
        vocabulary found in GloVe, per fold), `folds` (the indices run),
        and `settings`.
    """
    texts, labels = _check_inputs(architecture, embedding, texts, labels)
    num_classes = int(labels.max()) + 1
    settings, hyper = _settings(options)
    seed = settings["seed"]
    splits = text_data.stratified_folds(labels, n_folds=n_folds, seed=seed)
    fold_indices = list(range(n_folds)) if folds is None else list(folds)
    for index in fold_indices:
        if not isinstance(index, (int, np.integer)) or not (
            0 <= index < n_folds
        ):
            raise ValueError(
                f"`folds` must hold fold indices in [0, {n_folds}). "
                f"Received: folds={folds!r}"
            )
    texts_array = np.asarray(texts, dtype=object)
    result = {
        "architecture": architecture,
        "embedding": embedding,
        "folds": fold_indices,
        "fold_accuracies": [],
        "fold_seconds": [],
        "epochs_trained": [],
        "glove_coverage": [],
    }
    start = time.perf_counter()
    model = None
    for index in fold_indices:
        fold_start = time.perf_counter()
        train, test = splits[index]
        fit_part, val_part = stratified_split(
            labels[train],
            settings["validation_fraction"],
            seed=seed + index,
        )
        fit_idx, val_idx = train[fit_part], train[val_part]
        vocabulary, (x_fit, x_val, x_test) = _vectorize(
            list(texts_array[train]),
            [
                list(texts_array[fit_idx]),
                list(texts_array[val_idx]),
                list(texts_array[test]),
            ],
            settings["sequence_length"],
            settings["max_tokens"],
            settings["standardize"],
        )
        pretrained, coverage = _initial_vectors(
            vocabulary, settings, seed + index
        )
        model, history = _fit(
            architecture,
            embedding,
            vocabulary,
            x_fit,
            labels[fit_idx],
            x_val,
            labels[val_idx],
            num_classes,
            settings,
            pretrained,
            seed + index,
            hyper,
        )
        probabilities = model.predict(
            x_test, batch_size=settings["batch_size"], verbose=0
        )
        accuracy = float(
            np.mean(np.argmax(probabilities, axis=-1) == labels[test])
        )
        result["fold_accuracies"].append(accuracy)
        result["fold_seconds"].append(time.perf_counter() - fold_start)
        result["epochs_trained"].append(len(history["loss"]))
        result["glove_coverage"].append(coverage)
    accuracies = np.asarray(result["fold_accuracies"])
    result["mean"] = float(accuracies.mean())
    result["std"] = (
        float(accuracies.std(ddof=1)) if len(accuracies) > 1 else 0.0
    )
    result["params"] = int(model.count_params())
    result["trainable_params"] = int(
        sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    )
    result["seconds"] = time.perf_counter() - start
    result["settings"] = dict(settings, n_folds=int(n_folds), hyper=dict(hyper))
    if keep_model:
        result["model"] = model
        result["vocabulary"] = list(vocabulary)
    return result


def train_final(
    architecture,
    embedding,
    texts,
    labels,
    test_texts=None,
    test_labels=None,
    **options,
):
    """Trains one classifier on all the given texts (for a zoo preset).

    The recipe of `cross_validate` applied once: the vocabulary is adapted
    on `texts`, a stratified `validation_fraction` of them is held out for
    early stopping, GloVe initialises the word vectors when `glove=True`.
    When `test_texts` and `test_labels` are given, the test accuracy is
    measured too. Save the result with
    `keras_msets.training.preset_io.save_preset` and ship
    `result["vocabulary"]` beside it: the vocabulary maps words to the
    model's ids.

    Args:
        architecture, embedding, texts, labels: as in `cross_validate`.
        test_texts: optional held-out texts.
        test_labels: their labels.
        **options: the training settings of `cross_validate`, then
            further `TextClassifier` arguments.

    Returns:
        A dict with `model` (the trained `TextClassifier`, best validation
        weights), `vocabulary` (list of words by id), `metrics`
        (`validation_accuracy`, `epochs_trained`, `seconds`, and
        `test_accuracy` when test data are given) and `settings`.
    """
    texts, labels = _check_inputs(architecture, embedding, texts, labels)
    if (test_texts is None) != (test_labels is None):
        raise ValueError(
            "Pass both `test_texts` and `test_labels`, or neither."
        )
    if test_texts is not None and (
        len(test_texts) == 0 or len(test_texts) != len(test_labels)
    ):
        raise ValueError(
            "`test_texts` must hold at least one text and `test_labels` "
            f"one label per text. Received {len(test_texts)} texts and "
            f"{len(test_labels)} labels"
        )
    settings, hyper = _settings(options)
    seed = settings["seed"]
    start = time.perf_counter()
    fit_idx, val_idx = stratified_split(
        labels, settings["validation_fraction"], seed=seed
    )
    texts_array = np.asarray(texts, dtype=object)
    others = [list(texts_array[fit_idx]), list(texts_array[val_idx])]
    if test_texts is not None:
        others.append([str(t) for t in test_texts])
    vocabulary, ids = _vectorize(
        texts,
        others,
        settings["sequence_length"],
        settings["max_tokens"],
        settings["standardize"],
    )
    pretrained, coverage = _initial_vectors(vocabulary, settings, seed)
    num_classes = int(labels.max()) + 1
    model, history = _fit(
        architecture,
        embedding,
        vocabulary,
        ids[0],
        labels[fit_idx],
        ids[1],
        labels[val_idx],
        num_classes,
        settings,
        pretrained,
        seed,
        hyper,
    )
    metrics = {
        "validation_accuracy": float(max(history["val_accuracy"])),
        "epochs_trained": len(history["loss"]),
        "glove_coverage": coverage,
    }
    if test_texts is not None:
        probabilities = model.predict(
            ids[2], batch_size=settings["batch_size"], verbose=0
        )
        metrics["test_accuracy"] = float(
            np.mean(
                np.argmax(probabilities, axis=-1) == np.asarray(test_labels)
            )
        )
    metrics["seconds"] = time.perf_counter() - start
    return {
        "model": model,
        "vocabulary": list(vocabulary),
        "metrics": metrics,
        "settings": dict(settings, hyper=dict(hyper)),
    }
