"""Counting shared classes (Selby et al., UAI 2022, Sec. 5.2.1, Table 2).

Two sets of images (10-30 for digits and MNIST, 6-10 for Fashion-MNIST,
our Omniglot stand-in) labelled with the number of classes both contain
(`keras_msets.data.set_counting.counting_shared_classes`). App. B: a CNN
image encoder in front of a Multi-Set Transformer, the CNN first
pretrained as a digit classifier for 1,000 batches (`pretrain_encoder`),
then everything end to end with the mean squared error for 10,000
batches of 64 at 3e-4. Metrics: the accuracy of the rounded count and
the L1 error of the unrounded one (Table 2).
"""

import keras
import numpy as np

from keras_msets.data import set_counting
from keras_msets.training import card
from keras_msets.training.tasks.set_task import TEST_SEED
from keras_msets.training.tasks.set_task import SetTask
from keras_msets.training.tasks.set_task import print_metrics
from keras_msets.utils.validation import check_choice

# The default image source (`source=None`).
COUNTING_SOURCE = "digits"
PAPER_COUNTING_MNIST = {"accuracy": 0.9746, "l1": 0.3136}  # Table 2


def check_source(source):
    """The image source; None means `COUNTING_SOURCE`."""
    if source is None:
        return COUNTING_SOURCE
    return check_choice("source", source, set_counting.SOURCES)


def counting_scores(predicted, truth):
    """Table 2's metrics of predicted counts against the true counts.

    Accuracy: the rounded prediction equals the count; L1: the mean
    absolute error of the unrounded prediction. Both arguments `[num]`.
    """
    predicted = np.asarray(predicted, dtype=np.float64)
    truth = np.asarray(truth, dtype=np.float64)
    return {
        "accuracy": float(np.mean(np.round(predicted) == truth)),
        "l1": float(np.mean(np.abs(predicted - truth))),
    }


def pretrain_encoder(
    model,
    steps=1000,
    batch_size=64,
    learning_rate=3e-4,
    seed=0,
    verbose=0,
    source=None,
):
    """Pretrains the counting model's CNN as an image classifier (App. B).

    About `steps` batches (whole epochs: `max(1, round(steps * batch_size
    / N))` of them, `N` the number of training images) of the training
    split of `source` through the encoder and a throwaway softmax head
    over the source's classes (sparse categorical cross-entropy, Adam).
    The encoder's weights are shared with `model`. Returns the final
    training accuracy.
    """
    source = check_source(source)
    encoder = model.get_layer("encode").layer
    images, labels = set_counting.load_images(source, "train")
    try:
        expected = tuple(encoder.input_shape[1:])
    except (AttributeError, ValueError):  # an encoder without an Input
        expected = images.shape[1:]
    if expected != images.shape[1:]:
        raise ValueError(
            f"The encoder takes images of shape {expected}, but source "
            f"{source!r} has images of shape {images.shape[1:]}. "
            f"Received: source={source!r}"
        )
    keras.utils.set_random_seed(seed)
    classifier = keras.Sequential(
        [
            keras.layers.Input(images.shape[1:]),
            encoder,
            keras.layers.Dense(
                int(labels.max()) + 1, activation="softmax", name="head"
            ),
        ]
    )
    classifier.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    epochs = max(1, round(steps * batch_size / len(images)))
    history = classifier.fit(
        images, labels, batch_size=batch_size, epochs=epochs, verbose=verbose
    )
    return float(history.history["accuracy"][-1])


class SharedClassCount(SetTask):
    """Count the classes two sets of images share.

    Args:
        source: `"digits"` (scikit-learn's 8x8 digits, our MNIST
            stand-in), `"mnist_5k"` or `"fashion_mnist"`; None:
            `COUNTING_SOURCE`.
        test_size: test pairs.
        pretrain_steps: batches of encoder pretraining before the first
            run (0: none).
    """

    name = "counting"
    loss = "mean_squared_error"
    set_size = (10, 30)
    paper_steps = 10_000
    defaults = {"batch_size": 64, "learning_rate": 3e-4, "seed": 0}

    def __init__(self, source=None, test_size=1000, pretrain_steps=1000):
        super().__init__(None, None, test_size)
        self.source = check_source(source)
        self.pretrain_steps = pretrain_steps

    def check_dims(self, dims):
        if dims is not None:
            raise ValueError(
                "The counting task has no dimension: `dims` must be None. "
                f"Received: dims={dims!r}"
            )
        return None

    def make_batch(self, batch_size, dim, seed, set_size=None):
        """Images `[batch, 30, 8, 8, 1]` for `"digits"`, `[batch, 30, 28,
        28, 1]` for `"mnist_5k"`, `[batch, 10, 28, 28, 1]` for
        `"fashion_mnist"`, from the training split."""
        (x, y, x_mask, y_mask), targets = set_counting.counting_shared_classes(
            batch_size,
            source=self.source,
            split="train",
            seed=seed,
            set_size=None if set_size is None else tuple(set_size),
        )
        return {"sets": (x, y), "masks": (x_mask, y_mask)}, targets

    def test_set(self, num, dim=None, seed=TEST_SEED):
        """From the test split, with the set sizes of the data set the
        source stands in for."""
        raw, targets = set_counting.counting_shared_classes(
            num, source=self.source, split="test", seed=seed
        )
        return raw, {"sets": raw[:2], "masks": raw[2:]}, targets

    def data_description(self, budget=None):
        return (
            "pairs of sets of 10-30 scikit-learn 8x8 digit images (images "
            "0-1349 of load_digits(); test: 1350-1796), drawn without "
            "replacement from the whole split, labelled with the number "
            "of classes both sets contain (Selby et al. Sec. 5.2.1, MNIST "
            "replaced); fresh pairs every batch"
        )

    def pretrain(self, model, budget):
        """The metrics of App. B's encoder pretraining, run on `model`."""
        accuracy = pretrain_encoder(
            model,
            steps=self.pretrain_steps,
            learning_rate=budget["learning_rate"],
            seed=budget["seed"],
            source=self.source,
        )
        return {
            "pretrain_steps": self.pretrain_steps,
            "pretrain_accuracy": accuracy,
        }

    def evaluate_counts(self, model, num=None, seed=TEST_SEED, batch_size=64):
        """Accuracy and L1 error on the test split (`counting_scores`)."""
        _, inputs, targets = self.test_set(num or self.test_size, None, seed)
        predicted = model.predict(inputs, batch_size=batch_size, verbose=0)
        return counting_scores(predicted[:, 0], targets[:, 0])

    def evaluate(self, model, verbose=1):
        metrics = self.evaluate_counts(model)
        print_metrics(metrics, verbose)
        return metrics

    def training_extra(self, metrics):
        if "pretrain_steps" not in metrics:
            return ""
        return (
            f" First the CNN is pretrained as a digit classifier for "
            f"{metrics['pretrain_steps']:,} batches of 64 (App. B; final "
            f"training accuracy {metrics['pretrain_accuracy']:.4f}), then "
            "everything is trained end to end."
        )

    def use_text(self, recipe):
        return f"""```python
import keras_msets

model = keras_msets.zoo.load("{recipe.name}")
(x, y, x_mask, y_mask), counts = keras_msets.data.counting_shared_classes(
    8, source="{self.source}", split="test", seed=0
)
predicted = model.predict({{"sets": (x, y), "masks": (x_mask, y_mask)}})
shared = predicted.round()
```

- Input: `{{"sets": [x, y], "masks": [x_mask, y_mask]}}`, image sets
  float32 `[batch, n, height, width, 1]` in [0, 1] and boolean masks
  `[batch, n]`.
- Output: `[batch, 1]`, the number of shared classes (a regression;
  round it)."""

    def card_sections(self, recipe, metrics):
        return card.wrap(self.results_text(metrics))

    def results_text(self, metrics):
        paper = PAPER_COUNTING_MNIST
        return f"""{self.test_size:,} fresh pairs of test images (the test split
of `{self.source}`, never seen in training; seed 2**32). Accuracy: the
rounded prediction equals the count; L1: mean absolute error of the
unrounded prediction.

| | this model ({self.source}) | paper, Multi-Set Transformer (MNIST, Table 2) |
|---|---|---|
| accuracy | {metrics["accuracy"]:.4f} | {paper["accuracy"]} +- 0.0038 |
| L1 | {metrics["l1"]:.4f} | {paper["l1"]} +- 0.0124 |"""
