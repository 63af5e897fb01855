"""How far the counting preset's image encoder limits its count.

`mst_count_shared_digits` (Selby et al., UAI 2022, Sec. 5.2.1, with
scikit-learn's 8x8 digits in place of MNIST) counts the digit classes two
sets of 10-30 images share. Its accuracy (0.736 on the card's 1,000 test
pairs) is far below the paper's MNIST number (0.9746). This script asks
whether the set model or the image encoder is to blame:

1. **Probe.** The preset's CNN (the `TimeDistributed` layer `"encode"`)
   embeds every image; a logistic regression (scikit-learn) fitted on the
   training images' embeddings classifies the held-out test images. Its
   accuracy is how well the learned embedding separates digits it never
   saw.
2. **Count from the probe's labels.** On the very test pairs of the card
   (`keras_msets.data.counting_shared_classes`, seed `2**32`), the number
   of classes shared by the two sets of *predicted* labels: what a perfect
   set model reading this encoder's classifications would answer.
3. **Simulated encoders.** The same count when each test image keeps its
   true label with probability `a` and otherwise gets one of the other
   classes at random, for `a` in `--image-accuracies` (mean over
   `--draws` draws): the count accuracy an encoder of image accuracy `a`
   allows on these pairs.
4. **The CNN alone** (`--encoder-augmentations none shift ...`): App. B's
   CNN trained as a classifier on the training images alone, scored on
   the held-out ones: the image accuracy this encoder reaches.

    KERAS_BACKEND=tensorflow python benchmarks/mst_counting_ceiling.py

Writes `benchmarks/results/mst_counting_ceiling.json` and prints a
markdown table. `--weights FILE` measures other weights of the preset's
architecture (e.g. the `model.weights.h5` of a recipe's `--output-dir`).

`--source mnist_5k` asks the same of 5,000 real MNIST images (4,000 train,
1,000 test; `keras_msets.data.fetch_mnist_5k`) and their test pairs: the
preset reads 8x8 digits only, so steps 1-2 run only with `--weights` of a
counting model for 28x28 images (`mst.build_counting_model((28,
28, 1))`), steps 3-4 always:

    KERAS_BACKEND=tensorflow python benchmarks/mst_counting_ceiling.py \
        --source mnist_5k --encoder-augmentations none \
        --output benchmarks/results/mst_counting_ceiling_mnist_5k.json
"""

import argparse
import json
import platform
import sys
from pathlib import Path

import keras
import numpy as np
from sklearn.linear_model import LogisticRegression

from keras_msets.data import set_counting
from keras_msets.training.tasks import mst

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "results" / "mst_counting_ceiling.json"
PRESET = "mst_count_shared_digits"
SOURCES = ("digits", "mnist_5k")
IMAGE_ACCURACIES = (0.95, 0.96, 0.97, 0.98, 0.99, 0.995, 1.0)
# One pixel of an 8x8 image is 1/8 of its height; 15 degrees is 0.042 turn.
AUGMENTATIONS = {
    "none": (),
    "shift": (("translation", 0.125),),
    "shift_rotate": (("translation", 0.125), ("rotation", 15 / 360)),
}


def encoder_alone(augmentation, epochs, seed=0, source="digits"):
    """Held-out accuracy of App. B's CNN trained alone as a classifier.

    Augmentation amounts are fractions of the image: for 8x8 digits a
    shift of 0.125 is one pixel, for 28x28 MNIST 3.5 pixels."""
    train_images, train_labels = set_counting.load_images(source, "train")
    test_images, test_labels = set_counting.load_images(source, "test")
    keras.utils.set_random_seed(seed)
    encoder = (
        mst.build_counting_model(train_images.shape[1:])
        .get_layer("encode")
        .layer
    )
    layers = [keras.layers.Input(train_images.shape[1:])]
    for kind, amount in AUGMENTATIONS[augmentation]:
        if kind == "translation":
            layers.append(
                keras.layers.RandomTranslation(
                    amount, amount, fill_mode="constant", seed=seed
                )
            )
        else:
            layers.append(
                keras.layers.RandomRotation(
                    amount, fill_mode="constant", seed=seed
                )
            )
    classifier = keras.Sequential(
        layers + [encoder, keras.layers.Dense(10, activation="softmax")]
    )
    classifier.compile(
        optimizer=keras.optimizers.Adam(3e-4),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    classifier.fit(
        train_images, train_labels, batch_size=64, epochs=epochs, verbose=0
    )
    return float(classifier.evaluate(test_images, test_labels, verbose=0)[1])


def shared_counts(x_indices, y_indices, labels):
    """`|classes(X) & classes(Y)|` per pair, `labels` per image index.

    `x_indices`, `y_indices`: int `[num, n]` indices into `labels`, -1 at
    padding (`counting_shared_classes(..., return_info=True)`).
    """
    counts = np.empty(len(x_indices), "int64")
    for i, (xi, yi) in enumerate(zip(x_indices, y_indices, strict=True)):
        x_classes = set(labels[xi[xi >= 0]].tolist())
        y_classes = set(labels[yi[yi >= 0]].tolist())
        counts[i] = len(x_classes & y_classes)
    return counts


def corrupt_labels(labels, accuracy, num_classes, rng):
    """Each label kept with probability `accuracy`, else another class."""
    if not 0.0 <= accuracy <= 1.0:
        raise ValueError(
            f"`accuracy` must be in [0, 1]. Received: accuracy={accuracy}"
        )
    wrong = rng.random(labels.shape) >= accuracy
    shift = rng.integers(1, num_classes, size=labels.shape)
    return np.where(wrong, (labels + shift) % num_classes, labels)


def _parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", choices=SOURCES, default="digits")
    parser.add_argument("--weights", type=Path, default=None)
    parser.add_argument("--test-pairs", type=int, default=1000)
    parser.add_argument(
        "--image-accuracies",
        nargs="+",
        type=float,
        default=list(IMAGE_ACCURACIES),
    )
    parser.add_argument("--draws", type=int, default=5)
    parser.add_argument(
        "--encoder-augmentations",
        nargs="*",
        choices=tuple(AUGMENTATIONS),
        default=[],
    )
    parser.add_argument("--encoder-epochs", type=int, default=47)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    return parser.parse_args(argv)


def main(argv=None, model=None):
    """Runs the three measurements; returns (and saves) the record.

    `model`: a counting model (`mst.build_counting_model`) to use
    instead of the preset (tests). Without one, and without `--weights`,
    a source other than `"digits"` skips steps 1-2 (`probe`,
    `model_count` and `count_from_probe_labels` are None).
    """
    args = _parse(argv)
    source = args.source
    train_images, train_labels = set_counting.load_images(source, "train")
    test_images, test_labels = set_counting.load_images(source, "test")
    num_classes = int(train_labels.max()) + 1
    if model is None and source == "digits":
        from keras_msets import zoo

        model = zoo.load(PRESET)
        if args.weights is not None:
            model.load_weights(args.weights)
    elif model is None and args.weights is not None:
        model = mst.build_counting_model(train_images.shape[1:])
        model.load_weights(args.weights)

    # 1. The probe.
    if model is not None:
        encoder = model.get_layer("encode").layer
        train_features = encoder.predict(train_images, verbose=0)
        probe = LogisticRegression(max_iter=5000).fit(
            train_features, train_labels
        )
        predicted_labels = probe.predict(
            encoder.predict(test_images, verbose=0)
        )
        probe = {
            "train_accuracy": float(probe.score(train_features, train_labels)),
            "test_accuracy": float(np.mean(predicted_labels == test_labels)),
        }

    # 2. The card's test pairs, counted from true and predicted labels.
    _, targets, info = set_counting.counting_shared_classes(
        args.test_pairs,
        source=source,
        split="test",
        seed=mst.TEST_SEED,
        return_info=True,
    )
    truth = targets[:, 0]
    xi, yi = info["x_indices"], info["y_indices"]
    if not np.array_equal(shared_counts(xi, yi, test_labels), truth):
        raise RuntimeError("the test pairs' labels do not match their images")

    # 3. Simulated encoders of a given image accuracy.
    rng = np.random.default_rng(0)
    simulated = []
    for accuracy in args.image_accuracies:
        scores = [
            mst.counting_scores(
                shared_counts(
                    xi,
                    yi,
                    corrupt_labels(test_labels, accuracy, num_classes, rng),
                ),
                truth,
            )
            for _ in range(args.draws)
        ]
        simulated.append(
            {
                "image_accuracy": accuracy,
                "accuracy": float(np.mean([s["accuracy"] for s in scores])),
                "l1": float(np.mean([s["l1"] for s in scores])),
            }
        )
    record = {
        "command": "KERAS_BACKEND={} python benchmarks/{} {}".format(
            keras.backend.backend(),
            Path(__file__).name,
            " ".join(sys.argv[1:] if argv is None else argv),
        ).strip(),
        "backend": keras.backend.backend(),
        "machine": platform.machine(),
        "source": source,
        "model": None if model is None else model.name,
        "test_pairs": args.test_pairs,
        "test_images": int(len(test_images)),
        "probe": probe if model is not None else None,
        # The model's own score, as its card measures it (same pairs).
        "model_count": None
        if model is None
        else mst.evaluate_counting(model, num=args.test_pairs, source=source),
        "count_from_probe_labels": None
        if model is None
        else mst.counting_scores(
            shared_counts(xi, yi, predicted_labels), truth
        ),
        "simulated": simulated,
        "encoder_alone": [
            {
                "augmentation": name,
                "epochs": args.encoder_epochs,
                "test_accuracy": encoder_alone(
                    name, args.encoder_epochs, source=source
                ),
            }
            for name in args.encoder_augmentations
        ],
        "paper_mnist": mst.PAPER_COUNTING_MNIST,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=2) + "\n")
    print(table(record))
    return record


def table(record):
    """The record as markdown."""
    probe = record["probe"]
    lines = [f"Images: {record.get('source', 'digits')}."]
    if probe is not None:
        lines.append(
            f"Probe (logistic regression on the encoder's embeddings): "
            f"{probe['train_accuracy']:.4f} on the training images, "
            f"{probe['test_accuracy']:.4f} on the {record['test_images']} "
            "held-out images."
        )
    lines += [
        "",
        "| counter | image accuracy | count accuracy | count L1 |",
        "|---|---:|---:|---:|",
    ]
    if probe is not None:
        model = record["model_count"]
        ceiling = record["count_from_probe_labels"]
        lines.append(
            f"| {record['model']} (set model) | | {model['accuracy']:.4f} "
            f"| {model['l1']:.4f} |"
        )
        lines.append(
            f"| exact count of the probe's labels | "
            f"{probe['test_accuracy']:.4f} | {ceiling['accuracy']:.4f} "
            f"| {ceiling['l1']:.4f} |"
        )
    for row in record["simulated"]:
        lines.append(
            f"| simulated encoder | {row['image_accuracy']:.3f} "
            f"| {row['accuracy']:.4f} | {row['l1']:.4f} |"
        )
    paper = record["paper_mnist"]
    lines.append(
        f"| paper (MNIST) | | {paper['accuracy']:.4f} | {paper['l1']:.4f} |"
    )
    for row in record.get("encoder_alone", []):
        lines.append(
            f"| CNN trained alone, augmentation {row['augmentation']} "
            f"({row['epochs']} epochs) | {row['test_accuracy']:.4f} | | |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
