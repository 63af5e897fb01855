"""
Title: The units digit of a sum, with complex multiset automata
Author: keras_msets developers
Date created: 2026/11/22
Last modified: 2026/11/22
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
measures accuracy against set size on fresh data and plots it, then trains a
small Complex DeepSets from scratch with `model.fit`.
"""

"""
## Setup
"""

import os

import keras
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import keras_msets
from keras_msets import data

SMOKE = os.environ.get("KERAS_MSETS_SMOKE") == "1"
OUTPUT_DIR = os.environ.get("KERAS_MSETS_TUTORIAL_DIR", ".")
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
plt.savefig(os.path.join(OUTPUT_DIR, "units_digit_accuracy.png"))

"""
## Train your own

The layers go into any Keras model. `DiagonalMultisetAutomaton` embeds each
token as a complex number `e^r (x + iy)` per state and multiplies them over
the set in log-polar form; a dense layer reads the result out. The full
recipe (`zoo/complex_deepsets_units_digit/recipe.py`) runs until early
stopping; here we run a few epochs on part of the data.
"""

(x_train, y_train), (x_dev, y_dev) = data.digit_sum_train_dev(
    task="units_digit", num_samples=2_000 if SMOKE else 100_000
)
tokens = keras.Input((None,), dtype="int32")
features = keras_msets.layers.DiagonalMultisetAutomaton(
    alphabet_size=10, num_states=50
)(tokens)
model = keras.Model(tokens, keras.layers.Dense(1)(features))
model.compile(optimizer=keras.optimizers.Adam(1e-3, epsilon=1e-3), loss="mse")
history = model.fit(
    x_train,
    y_train,
    validation_data=(x_dev, y_dev),
    epochs=1 if SMOKE else 12,
    batch_size=128,
    verbose=2,
)
x, y = test_sets[LENGTHS[-1]]
print(
    f"accuracy at length {LENGTHS[-1]} after "
    f"{len(history.history['loss'])} epochs:",
    data.digit_sum_accuracy(y, model.predict(x, verbose=0)),
)

"""
## What to take away

- Sum pooling of real embeddings (DeepSets) is a real multiset automaton in
  log space: it cannot represent the cyclic units digit, and stays near the
  10% of guessing.
- Complex weights make the same architecture cyclic; the product over the
  set is computed as a sum of log-moduli and a sum of angles, so it stays
  finite for any set size, including sets ten times longer than any seen in
  training.
"""
