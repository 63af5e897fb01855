"""
Title: The units digit of a sum, with complex multiset automata
Author: keras_msets developers
Date created: 2026/11/22
Last modified: 2026/11/27
Description: Why real DeepSets cannot tell the units digit of a sum and
Complex DeepSets can, with the pretrained zoo models and a model you train.
"""

"""
## Introduction

A multiset of digits such as {7, 8, 9} has a sum (24) and a units digit (4).
DeepSets (Zaheer et al., 2017) embed each element and add the embeddings:
that can count, but a sum of real numbers keeps growing with the set, so it
has no way to "wrap around" every ten. DeBenedetto & Chiang (ICML 2020) read
the pooling as the forward weights of a multiset automaton and let its
weights be complex: multiplying unit complex numbers turns angles, and an
angle of 2*pi/10 per unit of digit value wraps around exactly every ten.

This tutorial loads both pretrained models from the keras_msets zoo,
measures accuracy against set size on fresh data and plots it, then trains
two small Complex DeepSets from scratch with `model.fit`: the README's
network, whose readout does not carry over to longer sets, and the variant
the shipped preset uses, whose readout does.

Run it from the repository root with `python tutorials/complex_deepsets.py`
(`pip install keras-msets[plots]` for matplotlib). It writes its figure to
`tutorial_outputs/complex_deepsets/` (`--output-dir DIR` picks another
folder; a folder that already holds files is refused unless `--overwrite`
is given). `KERAS_MSETS_SMOKE=1` runs a tiny version, as the
test suite does, and writes no figure.
"""

"""
## Setup
"""


import keras
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import keras_msets
from keras_msets import data
from keras_msets.utils.tutorial_outputs import TutorialOutputs

OUTPUTS = TutorialOutputs("complex_deepsets", __doc__)
SMOKE, OUTPUT_DIR = OUTPUTS.smoke, OUTPUTS.directory
save_figure = OUTPUTS.save_figure


NUM_PER_LENGTH = 100 if SMOKE else 2000
LENGTHS = (5, 50, 95) if SMOKE else tuple(range(5, 100, 5))

"""
## The pretrained models

`keras_msets.zoo.load` returns an uncompiled Keras model with its trained
weights, read from files that ship with the package (no download).
"""

print(keras_msets.zoo.list())
complex_model = keras_msets.zoo.load("complex_deepsets_units_digit")
real_model = keras_msets.zoo.load("deepsets_units_digit")

"""
Inputs are int32 `[batch, length]` with digits 1-9 and 0 as padding.
"""

digits = keras.ops.convert_to_numpy(
    keras.ops.array([[7, 8, 9, 0, 0], [1, 2, 3, 4, 5]], "int32")
)
print("Complex DeepSets:", complex_model.predict(digits, verbose=0).ravel())
print("DeepSets:        ", real_model.predict(digits, verbose=0).ravel())

"""
## Accuracy against set size

The models were trained on sets of 1 to 50 digits; we test on fresh sets of
5 to 95 digits (the test seed differs from the training seed).
"""

test_sets = data.digit_sum_test_sets(
    task="units_digit", lengths=LENGTHS, num_per_length=NUM_PER_LENGTH, seed=7
)
accuracy = {"Complex DeepSets": [], "DeepSets": []}
for length in LENGTHS:
    x, y = test_sets[length]
    for name, model in (
        ("Complex DeepSets", complex_model),
        ("DeepSets", real_model),
    ):
        prediction = model.predict(x, batch_size=1000, verbose=0)
        accuracy[name].append(data.digit_sum_accuracy(y, prediction))
for name, values in accuracy.items():
    print(name, [round(v, 3) for v in values])

plt.figure(figsize=(6, 3.5))
for name, values in accuracy.items():
    plt.plot(LENGTHS, values, marker="o", label=name)
plt.axhline(0.1, color="gray", linestyle=":", label="chance")
plt.xlabel("number of digits in the set")
plt.ylabel("accuracy (units digit)")
plt.ylim(0, 1.05)
plt.legend()
plt.tight_layout()
save_figure("units_digit_accuracy.png")

"""
## Train your own: the README's network

The layers go into any Keras model. `DiagonalMultisetAutomaton` embeds each
token as a complex number `e^r (x + iy)` per state and multiplies them over
the set in log-polar form. Its default output is the paper's readout
features `[cos(sum theta), sin(sum theta), sum r]`, and a dense layer reads
them out: this is the network of the README. We train it for a few epochs
on sets of 1 to 50 digits (the full recipe,
`zoo/complex_deepsets_units_digit/recipe.py`, runs until early stopping),
then test it inside and beyond the training lengths.
"""

(x_train, y_train), (x_dev, y_dev) = data.digit_sum_train_dev(
    task="units_digit", num_samples=2_000 if SMOKE else 100_000
)
EPOCHS = 1 if SMOKE else 12
CHECK_LENGTHS = (50, 95) if SMOKE else (50, 70, 95)
check_sets = data.digit_sum_test_sets(
    task="units_digit", lengths=CHECK_LENGTHS, num_per_length=NUM_PER_LENGTH
)


def train_and_test(unit_modulus):
    keras.utils.set_random_seed(0)
    tokens = keras.Input((None,), dtype="int32")
    features = keras_msets.layers.DiagonalMultisetAutomaton(
        alphabet_size=10, num_states=50, unit_modulus=unit_modulus
    )(tokens)
    model = keras.Model(tokens, keras.layers.Dense(1)(features))
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3, epsilon=1e-3), loss="mse"
    )
    history = model.fit(
        x_train,
        y_train,
        validation_data=(x_dev, y_dev),
        epochs=EPOCHS,
        batch_size=128,
        verbose=2,
    )
    print(
        f"dev MSE after {EPOCHS} epochs: {history.history['val_loss'][-1]:.4g}"
    )
    for length in CHECK_LENGTHS:
        x, y = check_sets[length]
        prediction = model.predict(x, batch_size=1000, verbose=0)
        print(
            f"length {length}: accuracy "
            f"{data.digit_sum_accuracy(y, prediction):.3f}, mean offset "
            f"(prediction - target) {float((prediction - y).mean()):+.3f}"
        )


train_and_test(unit_modulus=False)

"""
Look at the offsets printed above. The network fits the training lengths,
but its readout also sees `sum r`, the sum of the log-moduli of all the
elements, which grows with the number of elements: the dense layer's
weight on it was fitted to sets of 1 to 50 digits only, and beyond them it
adds an offset that grows with the length until the rounded prediction is
wrong. This is not a matter of training longer: the same network trained
by the full recipe until early stopping (best dev MSE 9.9e-6) was exact on
every test set up to length 70 and wrong on every set from length 75 on
(`benchmarks/RESULTS.md`, "The paper's readout does not extrapolate on
task 2"; `benchmarks/results/complex_deepsets_units_digit_paper_readout.json`).

What to use instead: read out the angles only. `unit_modulus=True` keeps
every transition weight on the unit circle and gives the dense layer
`[cos(sum theta), sin(sum theta)]` alone, which nothing about the length
can shift. Below is the same network with that one change and the same
budget. Trained by the full recipe (`keras_msets.models.ComplexDeepSets(
unit_modulus=True)`, until early stopping) it is the shipped
`complex_deepsets_units_digit`, exact at every length 5-95 and at 500 (its
card, `zoo/complex_deepsets_units_digit/README.md`); after this
tutorial's short run it may not be exact yet, so compare the accuracies it
prints with those of the first network at the same lengths.
"""

train_and_test(unit_modulus=True)

"""
## What to take away

- Sum pooling of real embeddings (DeepSets) is a real multiset automaton in
  log space: it cannot represent the cyclic units digit, and stays near the
  10% of guessing.
- Complex weights make the same architecture cyclic; the product over the
  set is computed as a sum of log-moduli and a sum of angles, so it stays
  finite for any set size.
- Whether a model is right beyond its training lengths depends on what its
  readout sees: a readout of the angles alone (`unit_modulus=True`, the
  shipped `complex_deepsets_units_digit`) has nothing that grows with the
  set; the paper's readout also sees `sum r`, which does.
- The same paper reads position encodings as unary automata
  (`keras_msets.layers.AutomatonPositionEncoding`); rotary embeddings are
  one too, applied to queries and keys
  (`keras_msets.layers.AutomatonRotaryEmbedding`).
  `benchmarks/position_encodings.py` compares them on a task that needs
  relative positions past the training length, and
  `benchmarks/translation.py` in a small translation Transformer on
  English-Spanish Bible verses; `benchmarks/RESULTS.md` ("Position
  encodings as automata", "Translation on Bible verses") has the numbers.
"""
