"""
Title: Fusion Encoder Networks: training a log-depth network segment by segment
Author: keras_msets developers
Date created: 2026/11/22
Last modified: 2026/11/27
Description: The segments of a Fusion Encoder Network, its local training
with `model.fit`, the fused log-depth network, and a task where it fails.
"""

"""
## Introduction

A Fusion Encoder Network (FEN; Pasteris, Hicks and Mavroudis, 2024) reads a
sequence of `N` tokens whose label depends only on the product of the
tokens' meanings in some monoid that nobody tells it (the *semantic
monoid*). Balanced brackets are such a task: the meaning of a bracket
string is the pair (unmatched ")", unmatched "("), and the meaning of a
concatenation is computed from the meanings of its two halves.

A FEN learns an *encoding* of the meaning of many contiguous pieces
(segments) of the sequence: a token encoder encodes single tokens, a fusion
encoder fuses the encodings of two adjacent pieces. What is new is the
training: each segment has its own small encoder/decoder pair, trained on
its own loss, so no gradient ever travels through more than a constant
number of layers. After training, the pieces that are not needed are
thrown away and what is left is a network of depth `log2(N)`.

This tutorial

1. draws the segments for `N = 8`,
2. explains the local training and trains a FEN on balanced brackets,
3. fuses it into the final log-depth network and saves it,
4. shows a task where the local training cannot start (parity),
5. loads the pretrained `fen_dyck_64` preset, if it ships.

Run it from the repository root with
`python tutorials/fusion_encoder_networks.py`
(`pip install keras-msets[plots]` for matplotlib). It writes its figures
and the fused network to `tutorial_outputs/fusion_encoder_networks/`
(`--output-dir DIR` picks another folder; a folder that already holds
files is refused unless `--overwrite` is given). `KERAS_MSETS_SMOKE=1`
runs a tiny version, as the test suite does, and writes nothing.
"""

"""
## Setup
"""

import os
import tempfile
import time

import keras
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import keras_msets
from keras_msets import data
from keras_msets.utils.tutorial_outputs import TutorialOutputs

OUTPUTS = TutorialOutputs("fusion_encoder_networks", __doc__)
SMOKE, OUTPUT_DIR = OUTPUTS.smoke, OUTPUTS.directory
save_figure = OUTPUTS.save_figure


LENGTH = 8 if SMOKE else 16
NUM_TRAIN = 256 if SMOKE else 20_000
NUM_TEST = 256 if SMOKE else 5_000
EPOCHS = 1 if SMOKE else 6
keras.utils.set_random_seed(0)

"""
## Segments (Sec. 6 and 11 of the paper)

Put the positions `1..N` (`N` a power of two) at the leaves of a full
balanced binary tree. An internal vertex `v` covers positions `a..b`, and
its left child ends at `m`. The segments of `v` are the pieces `(i, j)` of
`a..b` that cross the middle and touch one end of `v`:

- the prefixes `(a, j)` with `m < j <= b`, and
- the suffixes `(i, b)` with `a < i <= m`;

each is *split* at `sigma(i, j) = m` into `(i, m)` and `(m + 1, j)`, and
both parts are again segments (of a child, or single tokens). Add the `N`
singletons `(i, i)` and you have the set S. The *height* of a segment is
that of its vertex; a segment is computed from two segments of smaller
height, so all segments of one height are computed together, in `log2(N)`
steps.

`keras_msets.models.FusionSegments` builds S and sigma (positions are
1-based, as in the paper).
"""

segments = keras_msets.models.FusionSegments(8)
print(segments)
print("segments of height 2:", end=" ")
print([segments.segments[k - 1] for k in segments.levels[1]["segments"]])
print("sigma(1, 3) =", segments.sigma[(1, 3)])
print("sigma(2, 4) =", segments.sigma[(2, 4)])

"""
The picture shows every segment for `N = 8` as a bar from `i` to `j`,
grouped by height; the black tick is where the segment is split (after
position `sigma`). In orange, the segments that are whole vertices of the
tree: the only ones the final network keeps.
"""


def plot_segments(segments, name):
    vertex_numbers = set(np.concatenate(segments.vertex_segments).tolist())
    # Row of each segment: the heights are stacked from the top, and the
    # segments of one vertex (at most 2**height - 1) get one row each;
    # vertices of one height do not overlap, so they share the rows.
    # A blank row separates the heights.
    first_row = np.cumsum([0] + [max(2, 1 << h) for h in range(segments.depth)])
    seen = {}
    num_rows = first_row[-1] + (1 << segments.depth) - 1
    fig, ax = plt.subplots(figsize=(7, 0.28 * num_rows + 1))
    for number, ((i, j), height) in enumerate(
        zip(segments.segments, segments.heights.tolist(), strict=True),
        start=1,
    ):
        vertex = (height, (i - 1) >> height)
        seen[vertex] = seen.get(vertex, -1) + 1
        y = -(first_row[height] + seen[vertex])
        is_vertex = number in vertex_numbers
        ax.barh(
            y,
            j - i + 0.8,
            left=i - 0.4,
            height=0.7,
            color="tab:orange" if is_vertex else "tab:blue",
            alpha=0.9 if is_vertex else 0.6,
        )
        if i != j:
            split = segments.sigma[(i, j)] + 0.5
            ax.plot([split, split], [y - 0.35, y + 0.35], "k-", lw=2)
    for height in range(segments.depth + 1):
        top = -first_row[height]
        ax.text(segments.length + 0.8, top, f"height {height}", va="center")
        if height:
            ax.axhline(top + 1, color="lightgray", lw=0.8)
    ax.set_xlim(0.4, segments.length + 2.4)
    ax.set_xticks(range(1, segments.length + 1))
    ax.set_yticks([])
    ax.set_xlabel("position")
    ax.set_title(
        f"The {segments.num_segments} segments for N = {segments.length}"
        " (orange: tree vertices; tick: split point sigma)"
    )
    fig.tight_layout()
    save_figure(name, fig)


plot_segments(segments, "fen_segments.png")

"""
There are `N log2(N) + 1` segments: quasi-linear in `N`, while there are
`N (N + 1) / 2` contiguous pieces in all.
"""

for n in (2, 4, 8, 16, 64, 1024):
    count = keras_msets.models.FusionSegments(n).num_segments
    print(
        f"N = {n:5d}: |S| = {count:6d} = N log2 N + 1 = "
        f"{n * int(np.log2(n)) + 1:6d} (all pieces: {n * (n + 1) // 2})"
    )

"""
## Local training (Sec. 7-10)

Every segment `(i, j)` has an encoding `eps_ij`: `alpha(x_i)` for a
singleton, `beta(eps_{i,sigma}, eps_{sigma+1,j})` otherwise. Its decoder
`omega` reads the encodings of the prefix before it, of the segment, and of
the suffix after it (`0` stands for an empty prefix or suffix) and
predicts the label of the *whole* sequence: `y_ij = omega(eps_{1,i-1},
eps_ij, eps_{j+1,N})`. The segment's encoder/decoder pair takes one
gradient step on its own loss `l(y_ij)`, with all the encodings it reads
held constant. This is what `FusionEncoderNetwork.fit` does: the loss is
the sum of the compiled loss over all `|S|` decoders, and every encoding
that enters a fusion encoder, or enters a decoder as context, is wrapped in
`stop_gradient`. A gradient therefore passes through one decoder and one
encoder, never deeper, whatever `N` is.

`model.segment_outputs(x)` returns every decoder's prediction; `model(x)`
(and `predict`, `evaluate`, metrics) only the root's, `omega(0, eps_1N,
0)`. With `sharing="all"` one `alpha`, one `beta` and one `omega` serve
every segment (the paper's default is one parameterisation per segment:
`sharing="none"`).

Our task: is a string of `N` brackets balanced? Token `1` is "(", token `2`
is ")". Half of the strings are balanced; many negatives are near misses
(one bracket flipped, or one adjacent "()" swapped).
"""


def make_fen(length):
    return keras_msets.models.FusionEncoderNetwork(
        sequence_length=length,
        vocabulary_size=3,
        output_dim=1,
        encoding_dim=32,
        output_activation="sigmoid",
        sharing="all",
    )


x_train, y_train = data.dyck1(NUM_TRAIN, LENGTH, seed=1)
x_test, y_test = data.dyck1(NUM_TEST, LENGTH, seed=2)
print("a balanced string:  ", x_train[y_train == 1][0])
print("an unbalanced one:  ", x_train[y_train == 0][0])

model = make_fen(LENGTH)
print("segment outputs:", tuple(model.segment_outputs(x_train[:4]).shape))
print("root output:    ", tuple(model(x_train[:4]).shape))
print("parameters:     ", model.count_params())

"""
`model.fit` runs the local training; accuracy (training and validation) is
that of the root output. Local training can fall back for an epoch or more
(on some machines an epoch drops to chance), so, as in the README's quick
start, a tenth of the training strings is held out for validation and
`EarlyStopping(restore_best_weights=True)` keeps the weights of the epoch
with the best validation loss. The test strings are only used once, at the
end.
"""


def train(model, x, y, x_test, y_test):
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss="binary_crossentropy",
        metrics=["accuracy"],
    )
    best = keras.callbacks.EarlyStopping(
        "val_loss", patience=EPOCHS, restore_best_weights=True
    )
    start = time.time()
    history = model.fit(
        x,
        y.astype("float32"),
        validation_split=0.1,
        epochs=EPOCHS,
        batch_size=64,
        verbose=2,
        callbacks=[best],
    )
    seconds = time.time() - start
    _, accuracy = model.evaluate(x_test, y_test.astype("float32"), verbose=0)
    return history.history, accuracy, seconds


dyck_history, dyck_accuracy, dyck_seconds = train(
    model, x_train, y_train, x_test, y_test
)
print(
    f"dyck1, N = {LENGTH}: test accuracy {dyck_accuracy:.4f} after "
    f"{EPOCHS} epochs, best validation epoch "
    f"{int(np.argmin(dyck_history['val_loss'])) + 1} "
    f"({dyck_seconds:.0f} s, {keras.backend.backend()})"
)

"""
## The fused network (Sec. 11)

Once trained, only the token encoder, the fusion encoders of the tree's
vertices (the orange bars above) and the root decoder are needed.
`model.fuse()` returns them as an ordinary functional Keras model: one
token encoder, `log2(N)` fusion steps (each fuses neighbouring pairs of
encodings, halving their number) and the root decoder, i.e. `log2(N) + 2`
MLPs. The root decoder's two zero context inputs are folded away. It
computes exactly the root output of the FEN. (With `sharing="all"` each
fusion step gets its own copy of the one `beta`, so the fused model has
more weights than the FEN; with `sharing="none"` it keeps only the `N - 1`
vertices' fusion encoders out of `|S| - N`.)
"""

fused = model.fuse()
fused.summary()
mlps = [
    layer
    for layer in fused.layers
    if isinstance(layer, keras_msets.layers.GroupedMLP)
]
print(
    f"{len(mlps)} MLPs = log2({LENGTH}) + 2 = {int(np.log2(LENGTH)) + 2}:",
    [layer.name for layer in mlps],
)
fen_out = keras.ops.convert_to_numpy(model(x_test))
fused_out = keras.ops.convert_to_numpy(fused(x_test))
print("parameters: FEN", model.count_params(), "fused", fused.count_params())
print("max |FEN - fused|:", float(np.max(np.abs(fen_out - fused_out))))

folder = tempfile.mkdtemp() if SMOKE else OUTPUT_DIR  # smoke: write nothing
os.makedirs(folder, exist_ok=True)
path = os.path.join(folder, "fen_dyck1_fused.keras")
fused.save(path)
reloaded = keras.saving.load_model(path)
reloaded_out = keras.ops.convert_to_numpy(reloaded(x_test))
print(
    "max |fused - reloaded|:", float(np.max(np.abs(fused_out - reloaded_out)))
)

"""
## Where FENs fail: parity

The same network, trained with the same budget, on the parity of the number
of ones in a random bit string (token `1` is the bit 0, token `2` the bit
1). Its semantic monoid is as simple as can be (`Z_2`), and a recurrent
network learns it easily at this length.
"""

keras.utils.set_random_seed(0)
x_parity, y_parity = data.parity(NUM_TRAIN, LENGTH, seed=1)
x_parity_test, y_parity_test = data.parity(NUM_TEST, LENGTH, seed=2)
parity_model = make_fen(LENGTH)
parity_history, parity_accuracy, parity_seconds = train(
    parity_model, x_parity, y_parity, x_parity_test, y_parity_test
)
print(
    f"parity, N = {LENGTH}: test accuracy {parity_accuracy:.4f} after "
    f"{EPOCHS} epochs ({parity_seconds:.0f} s)"
)

"""
It stays at chance. Every segment's decoder must predict the parity of the
*whole* sequence, which depends on every token; the tokens outside the
segment reach the decoder only through the context encodings, which are
constants of its loss. While those encodings do not yet carry the parity
of the rest of the sequence, the label is independent of everything the
segment's pair can see (the segment's own parity is XORed with an unknown
fair coin), so its gradient is zero on average: the local losses give the
encoders nothing to learn from until the other encodings are already
right, and all of them are in that position. Even the root, whose context
is empty, only sees the encodings of the two halves as constants, and
those are trained by the same uninformative losses.

Balanced brackets are different: a piece alone already says a lot about
the whole string (a prefix with more ")" than "(" makes it unbalanced
whatever follows; the counts of brackets in a piece shift the odds), so
every local loss has a signal from the first step, and better encodings
then sharpen the others.
"""

plt.figure(figsize=(6, 3.5))
for name, history in (("dyck1", dyck_history), ("parity", parity_history)):
    epochs = range(1, len(history["val_accuracy"]) + 1)
    plt.plot(epochs, history["val_accuracy"], marker="o", label=name)
plt.axhline(0.5, color="gray", linestyle=":", label="chance")
plt.xlabel("epoch")
plt.ylabel(f"validation accuracy (N = {LENGTH})")
plt.ylim(0.4, 1.02)
plt.title("FEN (sharing='all'), local training")
plt.legend()
plt.tight_layout()
save_figure("fen_dyck1_vs_parity.png")

"""
## The pretrained preset

`fen_dyck_64` is a FEN trained the same way on strings of 64 brackets, with
two additions of ours (its recipe: `zoo/fen_dyck_64/recipe.py`): a
curriculum over lengths 16, 32 and 64, and an auxiliary loss that asks every
segment's encoding how many "(" and ")" the segment holds
(`FusionEncoderNetwork(token_count_loss_weight=0.1)`). Without it, local
training at length 64 stops near 0.84: each decoder is content with a
coarse summary of its segment, and strings with one bracket flipped, whose
counts are off by two, are called balanced. The auxiliary targets come from
the input itself and the loss stays local (its gradient reaches only the
encoder that made the encoding), so the paper's algorithm is unchanged.
`keras_msets.zoo.load` returns the preset with its weights, read from the
files that ship with the package.
"""

if "fen_dyck_64" in keras_msets.zoo.list():
    preset = keras_msets.zoo.load("fen_dyck_64")
    x64, y64 = data.dyck1(NUM_TEST, 64, seed=3)
    p64 = keras.ops.convert_to_numpy(preset(x64))[:, 0]
    print("fen_dyck_64 accuracy on fresh strings of 64 brackets:", end=" ")
    print(f"{np.mean((p64 > 0.5) == y64):.4f}")
    fused64 = preset.fuse()
    count = sum(
        isinstance(layer, keras_msets.layers.GroupedMLP)
        for layer in fused64.layers
    )
    print(f"its fused network: {count} MLPs (log2(64) + 2)")
else:
    print("The fen_dyck_64 preset does not ship with this version.")

"""
## What to take away

- A FEN encodes `N log2(N) + 1` segments of the sequence, each fused from
  two smaller ones, and trains each segment's encoder/decoder pair on its
  own loss: no gradient goes deeper than one pair.
- `model.fuse()` keeps what the prediction needs: a network of `log2(N)`
  fusion steps that saves and loads as an ordinary `.keras` model.
- The local losses need a signal in the pieces: tasks where every piece
  alone is uninformative about the label (parity) give the training
  nothing to start from.
- Where the label needs an exact summary of long pieces (the bracket count
  at length 64), asking the encodings for it directly, with a local
  auxiliary loss whose targets come from the input, closes the gap.
"""
