"""Position encodings in a small translation Transformer, En->Es Bible verses.

Reproduces, at small scale, DeBenedetto & Chiang (ICML 2020, Sec. 4,
Table 1: six position encodings read as unary automata, case-insensitive
BLEU) and Wang et al. (ICLR 2020, Table 5: complex-order embeddings in a
translation Transformer), plus rotary position embeddings as a seventh
automaton encoding. Every row is the same encoder-decoder Transformer with
the same budget; only the way position enters changes:

- `diagonal_polar_fixed`: `AutomatonPositionEncoding`, the sinusoids;
  D&C "diagonal polar, fixed", Wang's TPE and Table 5's Transformer.
- `diagonal_polar_learned`: learned angles, `r = s = 1`; D&C "diagonal
  polar, learned angles".
- `full_matrix_random`: a frozen random orthogonal automaton; D&C "full
  matrix, random".
- `full_matrix_learned`: a learned real automaton; D&C "full matrix,
  learned".
- `per_position_random`: a frozen random vector per position; D&C "per
  position, random".
- `per_position_learned`: a learned vector per position; D&C "per
  position, learned", Wang's PE.
- `rotary`: `AutomatonRotaryEmbedding` (fixed RoPE) on the queries and
  keys of every self-attention, nothing added to the embeddings; in
  neither paper.
- `complex_order`: `ComplexOrderEmbedding`, `r e^{i omega pos}`; Wang's
  "Transformer Complex-order".
- `complex_vanilla`: `ComplexVanillaEmbedding`, no position; Wang's
  "Transformer complex vanilla".
- `none`: word embeddings only, no position; Wang's "vanilla" (Table 2).

Wang's PE and TPE are the rows `per_position_learned` and
`diagonal_polar_fixed` (one learned vector per position; the sinusoids):
they are run once. The additive encodings are added to the word
embeddings of both the encoder and the decoder (a separate layer each).
The complex embeddings have `d_model / 2` complex dimensions, whose real
and imaginary parts (`d_model` real features) feed the same real
Transformer as every other row: Wang et al.'s complex-valued Transformer
layers (App. B) are not used here, a deviation.

Data: `keras_msets.data.load_verse_pairs()` (World English Bible and
Reina-Valera 1909, from the Debian packages `sword-text-web` and
`sword-text-sparv`). Whole books are held out: the development books
(Joshua, Ephesians: the checkpoint choice) and the test books (Ruth, Mark:
BLEU reported).
Text is lowercased and split into words and punctuation; pairs with more
than `max_tokens` tokens on either side are left out of every split. Each
side keeps its `vocabulary_size` most frequent training tokens (padding,
`<unk>`, `<s>`, `</s>` included); the rest is `<unk>`. Greedy decoding;
BLEU with sacrebleu (`corpus_bleu`, 13a tokenizer, `lowercase=True`)
against the original, untokenized Spanish verses; the hypotheses are the
output tokens joined by spaces, `<unk>` included as written, which the
13a tokenizer splits into three tokens (`<`, `unk`, `>`) that match
nothing: every `<unk>` costs precision three times over, and makes the
hypotheses longer (no brevity penalty applies).

Small configuration (the default, `SMALL`; 30 runs fit about an hour of
2 shared CPU cores): `d_model` 64, 4 heads, feed-forward 128, one
encoder and one decoder layer (pre-layer-norm), no dropout, verses of at
most 24 tokens on both sides, 2,000 tokens per side, Adam (learning rate
2e-3, beta_2 0.98, gradient norm clipped at 1), batch 64, 500 steps for
every row (about 2 epochs); the development loss (teacher forcing) is
measured every `eval_every` = 250 steps and the checkpoint with the lower
one is the one decoded. The learning rate and the step budget were set
before any run, not tuned (there was no budget for a sweep); only the
checkpoint is chosen, on the development books. The paper-scale
configuration (`--paper-config`, `PAPER`: `d_model` 512, 8 heads,
feed-forward 2,048, 6 + 6 layers, dropout 0.1, batch 64, verses of up to
64 tokens, 8,000 tokens per side, 100,000 steps, as Wang et al. Sec. 3.2
and Vaswani et al.'s base model; D&C used 8k joint BPE, not a word
vocabulary) is given, not run here.

Resumable: each (row, seed) run writes `RUN_DIR/<row>/seed<k>.json` when
it is finished and is skipped on the next invocation; while it trains, its
weights and optimizer state are checkpointed under `RUN_DIR/checkpoints/`
(not committed) every `eval_every` steps. Runs go round-robin over the
rows, seed 0 of every row first, so that a partial result is a complete
table with fewer seeds. `--workers 2 --worker i` splits the runs between
two processes. Single thread:

    OMP_NUM_THREADS=1 XLA_FLAGS="--xla_cpu_multi_thread_eigen=false \\
        intra_op_parallelism_threads=1" KERAS_BACKEND=jax nice -n 10 \\
        python benchmarks/translation.py --seeds 3 [--workers 2 --worker 0]
    python benchmarks/translation.py --summarize   # table from the JSONs
    python benchmarks/translation.py --paper-config ...  # paper scale

`RUN_DIR` is `benchmarks/results/translation/<config name>/` unless
`--output-dir` says otherwise.
"""

import argparse
import collections
import json
import math
import os
import re
import shutil
import time
import warnings
from pathlib import Path

import keras
import numpy as np
from keras import ops

import keras_msets
from keras_msets.data.bible import load_verse_pairs
from keras_msets.data.bible import read_verse_pairs
from keras_msets.data.bible import split_by_book

# The first decoding step attends over one key (a softmax of size 1), and
# `save_weights` stores the optimizer, whose state is restored separately.
warnings.filterwarnings("ignore", message="You are using a softmax over axis")
warnings.filterwarnings("ignore", message="Skipping variable loading for opt")
HERE = Path(__file__).parent
RESULTS_DIR = HERE / "results" / "translation"

# Row name -> how position information enters.
ROWS = {
    "diagonal_polar_fixed": ("automaton", "diagonal_polar_fixed"),
    "diagonal_polar_learned": ("automaton", "diagonal_polar_learned"),
    "full_matrix_random": ("automaton", "full_matrix_random"),
    "full_matrix_learned": ("automaton", "full_matrix_learned"),
    "per_position_random": ("automaton", "per_position_random"),
    "per_position_learned": ("automaton", "per_position_learned"),
    "rotary": ("rotary", None),
    "complex_order": ("complex", "complex_order"),
    "complex_vanilla": ("complex", "complex_vanilla"),
    "none": ("none", None),
}
# DeBenedetto & Chiang, Table 1, "combined" column (seven low-resource
# pairs' test sets together, case-insensitive BLEU); † = significantly
# different from the first row (p < 0.05).
PAPER_DC_BLEU = {
    "diagonal_polar_fixed": "26.4",
    "diagonal_polar_learned": "26.6",
    "full_matrix_random": "26.5",
    "full_matrix_learned": "26.5",
    "per_position_random": "26.3",
    "per_position_learned": "25.0 †",
}
# Wang et al., Table 5 (WMT 2016 En-De, 29k training pairs, BLEU). Its
# Transformer row (34.5, from Ma et al.) uses the sinusoids.
PAPER_WANG_BLEU = {
    "diagonal_polar_fixed": "34.5 (Transformer)",
    "complex_order": "35.8",
    "complex_vanilla": "34.7",
}
DEV_BOOKS = ("Josh", "Eph")
TEST_BOOKS = ("Ruth", "Mark")

SMALL = {
    "name": "small",
    "max_tokens": 24,
    "vocabulary_size": 2000,
    "d_model": 64,
    "num_heads": 4,
    "intermediate_dim": 128,
    "num_layers": 1,
    "dropout": 0.0,
    "batch_size": 64,
    "learning_rate": 2e-3,
    "steps": 500,
    "eval_every": 250,
    "decode_batch_size": 256,
    "dev_bleu": False,
}
PAPER = dict(
    SMALL,
    name="paper",
    max_tokens=64,
    vocabulary_size=8000,
    d_model=512,
    num_heads=8,
    intermediate_dim=2048,
    num_layers=6,
    dropout=0.1,
    learning_rate=1e-4,
    steps=100000,
    eval_every=2000,
    dev_bleu=True,
)
TINY = dict(
    SMALL,
    name="tiny",
    max_tokens=12,
    vocabulary_size=64,
    d_model=8,
    num_heads=2,
    intermediate_dim=8,
    batch_size=8,
    steps=4,
    eval_every=2,
    decode_batch_size=8,
    # Compiling costs more than the few steps of the smoke run.
    run_eagerly=True,
)
CONFIGS = {"small": SMALL, "paper": PAPER, "tiny": TINY}
SPECIALS = ("<pad>", "<unk>", "<s>", "</s>")
PAD, UNK, BOS, EOS = range(4)
_TOKEN = re.compile(r"\w+|[^\w\s]")


# ---------------------------------------------------------------- data


def tokenize(text):
    """Lowercased words and punctuation marks."""
    return _TOKEN.findall(text.lower())


def build_vocabulary(sentences, size):
    """The `size - 4` most frequent tokens after the four specials.

    Ties are broken alphabetically, so the vocabulary is deterministic.
    """
    counts = collections.Counter(t for s in sentences for t in s)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    words = [word for word, _ in ranked[: size - len(SPECIALS)]]
    return list(SPECIALS) + words


def encode(sentences, vocabulary, length, bos=False, eos=False):
    """int32 `[n, length]` ids, zero-padded; unknown tokens are `<unk>`."""
    index = {word: i for i, word in enumerate(vocabulary)}
    ids = np.zeros((len(sentences), length), "int32")
    for row, tokens in enumerate(sentences):
        sequence = [index.get(t, UNK) for t in tokens]
        sequence = [BOS] * bos + sequence + [EOS] * eos
        ids[row, : len(sequence)] = sequence
    return ids


def prepare_data(pairs, config, dev_books, test_books):
    """Splits, filters, builds vocabularies and id arrays."""
    train, dev, test = split_by_book(pairs, dev_books, test_books)
    limit = config["max_tokens"]

    def keep(split):
        rows = []
        for pair in split:
            source, target = tokenize(pair[3]), tokenize(pair[4])
            if 0 < len(source) <= limit and 0 < len(target) <= limit:
                rows.append((source, target, pair[4]))
        return rows

    splits = {"train": keep(train), "dev": keep(dev), "test": keep(test)}
    size = config["vocabulary_size"]
    source_vocabulary = build_vocabulary([r[0] for r in splits["train"]], size)
    target_vocabulary = build_vocabulary([r[1] for r in splits["train"]], size)
    data = {
        "source_vocabulary": source_vocabulary,
        "target_vocabulary": target_vocabulary,
        "sizes": {name: len(rows) for name, rows in splits.items()},
        "total_pairs": len(pairs),
    }
    for name, rows in splits.items():
        data[name] = {
            "source": encode([r[0] for r in rows], source_vocabulary, limit),
            "target_in": encode(
                [r[1] for r in rows], target_vocabulary, limit + 1, bos=True
            ),
            "target_out": encode(
                [r[1] for r in rows], target_vocabulary, limit + 1, eos=True
            ),
            "references": [r[2] for r in rows],
        }
    return data


# --------------------------------------------------------------- model


class Attention(keras.layers.Layer):
    """Multi-head attention with an optional rotary embedding of q and k.

    Padded keys get a large finite negative logit; `causal=True` hides the
    later positions. With `rotary=True` the queries and keys
    `[batch, length, heads, head_dim]` are turned by
    `keras_msets.layers.AutomatonRotaryEmbedding` (positions from 0).
    """

    def __init__(
        self, num_heads, key_dim, dropout=0.0, rotary=False, causal=False, **kw
    ):
        super().__init__(**kw)
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.dropout = dropout
        self.rotary = rotary
        self.causal = causal
        width = num_heads * key_dim
        self.query_dense = keras.layers.Dense(width, name="query")
        self.key_dense = keras.layers.Dense(width, name="key")
        self.value_dense = keras.layers.Dense(width, name="value")
        self.output_dense = None
        self.dropout_layer = keras.layers.Dropout(dropout)
        self.rotary_embedding = (
            keras_msets.layers.AutomatonRotaryEmbedding(name="rotary")
            if rotary
            else None
        )

    def build(self, query_shape, value_shape=None, key_mask_shape=None):
        value_shape = query_shape if value_shape is None else value_shape
        width = self.num_heads * self.key_dim
        self.query_dense.build(query_shape)
        self.key_dense.build(value_shape)
        self.value_dense.build(value_shape)
        self.output_dense = keras.layers.Dense(query_shape[-1], name="output")
        self.output_dense.build(tuple(query_shape[:-1]) + (width,))

    def _heads(self, x):
        shape = ops.shape(x)
        return ops.reshape(
            x, (shape[0], shape[1], self.num_heads, self.key_dim)
        )

    def call(self, query, value, key_mask, training=False):
        q = self._heads(self.query_dense(query))
        k = self._heads(self.key_dense(value))
        v = self._heads(self.value_dense(value))
        if self.rotary_embedding is not None:
            q = self.rotary_embedding(q)
            k = self.rotary_embedding(k)
        logits = ops.einsum("bqhd,bkhd->bhqk", q, k)
        logits = logits / math.sqrt(self.key_dim)
        visible = ops.expand_dims(ops.expand_dims(key_mask, 1), 1)
        if self.causal:
            length_q, length_k = ops.shape(query)[1], ops.shape(value)[1]
            rows = ops.expand_dims(ops.arange(length_q), 1)
            columns = ops.expand_dims(ops.arange(length_k), 0)
            visible = ops.logical_and(visible, columns <= rows)
        logits = ops.where(visible, logits, -1e9)
        weights = self.dropout_layer(
            ops.softmax(logits, axis=-1), training=training
        )
        out = ops.einsum("bhqk,bkhd->bqhd", weights, v)
        shape = ops.shape(out)
        out = ops.reshape(
            out, (shape[0], shape[1], self.num_heads * self.key_dim)
        )
        return self.output_dense(out)


def _feed_forward(x, config, name, training=None):
    h = keras.layers.LayerNormalization(name=f"{name}_ffn_norm")(x)
    h = keras.layers.Dense(
        config["intermediate_dim"], activation="relu", name=f"{name}_ffn_1"
    )(h)
    h = keras.layers.Dense(config["d_model"], name=f"{name}_ffn_2")(h)
    return x + keras.layers.Dropout(config["dropout"])(h)


def _embed(row, ids, vocabulary_size, config, side):
    """Word embedding plus (for the additive rows) position encoding."""
    kind, variant = ROWS[row]
    d_model = config["d_model"]
    if kind == "complex":
        layer = keras_msets.layers.make_text_embedding(
            variant,
            vocabulary_size,
            d_model // 2,
            mask_zero=False,
            pretrained_embeddings=None,
            name=f"{side}_embedding",
        )
        # Unit-variance amplitudes, like the real rows' word vectors.
        layer.amplitude_initializer = keras.initializers.RandomNormal(
            stddev=1.0
        )
        x = layer(ids)
    else:
        x = keras.layers.Embedding(
            vocabulary_size,
            d_model,
            embeddings_initializer=keras.initializers.RandomNormal(stddev=1.0),
            name=f"{side}_embedding",
        )(ids)
        if kind == "automaton":
            x = x + keras_msets.layers.AutomatonPositionEncoding(
                mode=variant,
                max_length=config["max_tokens"] + 1,
                name=f"{side}_position_encoding",
            )(x)
    return keras.layers.Dropout(config["dropout"])(x)


def build_models(row, config, source_size, target_size):
    """(training model, encoder, decoder) sharing their layers.

    training model: `[source, target_in] -> logits`; encoder: `source ->
    encoded`; decoder: `[source, encoded, target_in] -> logits`.
    """
    rotary = ROWS[row][0] == "rotary"
    heads = config["num_heads"]
    key_dim = config["d_model"] // heads
    source = keras.Input((None,), dtype="int32", name="source")
    target = keras.Input((None,), dtype="int32", name="target_in")
    source_mask = ops.not_equal(source, PAD)
    target_mask = ops.not_equal(target, PAD)

    x = _embed(row, source, source_size, config, "source")
    for i in range(config["num_layers"]):
        h = keras.layers.LayerNormalization(name=f"encoder_{i}_norm")(x)
        h = Attention(
            heads, key_dim, config["dropout"], rotary, name=f"encoder_{i}_self"
        )(h, h, source_mask)
        x = x + keras.layers.Dropout(config["dropout"])(h)
        x = _feed_forward(x, config, f"encoder_{i}")
    encoded = keras.layers.LayerNormalization(name="encoder_norm")(x)
    encoder = keras.Model(source, encoded, name="encoder")

    encoded_in = keras.Input((None, config["d_model"]), name="encoded")
    y = _embed(row, target, target_size, config, "target")
    for i in range(config["num_layers"]):
        h = keras.layers.LayerNormalization(name=f"decoder_{i}_norm")(y)
        h = Attention(
            heads,
            key_dim,
            config["dropout"],
            rotary,
            causal=True,
            name=f"decoder_{i}_self",
        )(h, h, target_mask)
        y = y + keras.layers.Dropout(config["dropout"])(h)
        h = keras.layers.LayerNormalization(name=f"decoder_{i}_cross_norm")(y)
        h = Attention(
            heads, key_dim, config["dropout"], name=f"decoder_{i}_cross"
        )(h, encoded_in, source_mask)
        y = y + keras.layers.Dropout(config["dropout"])(h)
        y = _feed_forward(y, config, f"decoder_{i}")
    y = keras.layers.LayerNormalization(name="decoder_norm")(y)
    logits = keras.layers.Dense(target_size, name="logits")(y)
    decoder = keras.Model([source, encoded_in, target], logits, name="decoder")
    model = keras.Model(
        [source, target], decoder([source, encoder(source), target])
    )
    return model, encoder, decoder


# ------------------------------------------------------- train, evaluate


def token_loss(model, split, batch_size):
    """Mean cross-entropy per target token (teacher forcing), no dropout."""
    total, count = 0.0, 0
    for i in range(0, len(split["source"]), batch_size):
        logits = keras.ops.convert_to_numpy(
            model(
                [
                    split["source"][i : i + batch_size],
                    split["target_in"][i : i + batch_size],
                ],
                training=False,
            )
        ).astype("float64")
        target = split["target_out"][i : i + batch_size]
        logits -= logits.max(axis=-1, keepdims=True)
        log_z = np.log(np.exp(logits).sum(axis=-1))
        picked = np.take_along_axis(logits, target[..., None], -1)[..., 0]
        valid = target != PAD
        total += float(np.sum((log_z - picked)[valid]))
        count += int(valid.sum())
    return total / count


def greedy_decode(encoder, decoder, source, config, vocabulary):
    """Greedy translations, as space-joined tokens (no `<s>`, `</s>`)."""
    length = config["max_tokens"] + 1
    outputs = []
    for i in range(0, len(source), config["decode_batch_size"]):
        batch = ops.convert_to_tensor(
            source[i : i + config["decode_batch_size"]]
        )
        encoded = encoder(batch, training=False)
        # A fixed-size buffer: the same shapes at every step (no new
        # compilation); the causal mask hides the positions not yet filled.
        tokens = np.zeros((batch.shape[0], length + 1), "int32")
        tokens[:, 0] = BOS
        done = np.zeros(batch.shape[0], bool)
        for position in range(length):
            logits = decoder(
                [batch, encoded, ops.convert_to_tensor(tokens[:, :length])],
                training=False,
            )
            step = keras.ops.convert_to_numpy(
                ops.argmax(logits[:, position, :], axis=-1)
            ).astype("int32")
            step[done] = PAD
            done |= step == EOS
            tokens[:, position + 1] = step
            if done.all():
                break
        for row in tokens[:, 1:]:
            words = []
            for token in row:
                if token in (EOS, PAD):
                    break
                words.append(vocabulary[token])
            outputs.append(" ".join(words))
    return outputs


def bleu(hypotheses, references):
    import sacrebleu

    return sacrebleu.corpus_bleu(hypotheses, [references], lowercase=True)


def _batch_indices(seed, step, num, batch_size):
    """The rows of training step `step`: epoch-wise seeded permutations."""
    per_epoch = num // batch_size
    epoch, position = divmod(step, per_epoch)
    order = np.random.default_rng([seed, epoch]).permutation(num)
    return order[position * batch_size : (position + 1) * batch_size]


def _save_state(folder, model, optimizer, state):
    folder.mkdir(parents=True, exist_ok=True)
    model.save_weights(folder / "last.weights.h5")
    np.savez(
        folder / "optimizer.npz",
        *[keras.ops.convert_to_numpy(v) for v in optimizer.variables],
    )
    (folder / "state.json").write_text(json.dumps(state))


def _load_state(folder, model, optimizer):
    if not (folder / "state.json").exists():
        return None
    model.load_weights(folder / "last.weights.h5")
    optimizer.build(model.trainable_variables)
    saved = np.load(folder / "optimizer.npz")
    for index, variable in enumerate(optimizer.variables):
        variable.assign(saved[f"arr_{index}"])
    return json.loads((folder / "state.json").read_text())


def train_run(row, seed, config, data, checkpoint_dir, log=print):
    """Trains one row with one seed; returns its result dict."""
    train, dev = data["train"], data["dev"]
    keras.utils.set_random_seed(seed)
    model, encoder, decoder = build_models(
        row,
        config,
        len(data["source_vocabulary"]),
        len(data["target_vocabulary"]),
    )
    optimizer = keras.optimizers.Adam(
        config["learning_rate"], beta_2=0.98, clipnorm=1.0
    )
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        run_eagerly=config.get("run_eagerly", False),
    )
    checkpoint_dir.mkdir(parents=True, exist_ok=True)
    state = _load_state(checkpoint_dir, model, optimizer)
    if state is None:
        state = {"step": 0, "dev_loss": {}, "best_step": None, "seconds": 0.0}
    num = len(train["source"])
    while state["step"] < config["steps"]:
        start = time.perf_counter()
        keras.utils.set_random_seed(seed * 1000003 + state["step"])
        stop = min(state["step"] + config["eval_every"], config["steps"])
        for step in range(state["step"], stop):
            rows = _batch_indices(seed, step, num, config["batch_size"])
            target = train["target_out"][rows]
            model.train_on_batch(
                [train["source"][rows], train["target_in"][rows]],
                target,
                sample_weight=(target != PAD).astype("float32"),
            )
        state["step"] = stop
        loss = token_loss(model, dev, config["decode_batch_size"])
        state["dev_loss"][str(stop)] = loss
        best = state["best_step"]
        if best is None or loss < state["dev_loss"][str(best)]:
            state["best_step"] = stop
            model.save_weights(checkpoint_dir / "best.weights.h5")
        state["seconds"] += time.perf_counter() - start
        _save_state(checkpoint_dir, model, optimizer, state)
        log(f"  {row} seed {seed} step {stop}: dev loss {loss:.3f}")
    model.load_weights(checkpoint_dir / "best.weights.h5")
    start = time.perf_counter()
    result = {"row": row, "seed": seed}
    for name in ("dev", "test") if config["dev_bleu"] else ("test",):
        hypotheses = greedy_decode(
            encoder,
            decoder,
            data[name]["source"],
            config,
            data["target_vocabulary"],
        )
        score = bleu(hypotheses, data[name]["references"])
        result[f"{name}_bleu"] = float(score.score)
        result[f"{name}_bleu_signature"] = str(score)
        result[f"{name}_examples"] = [
            [r, h]
            for r, h in zip(
                data[name]["references"][:3], hypotheses[:3], strict=True
            )
        ]
        # Every translation, so that the score can be recomputed.
        result[f"{name}_hypotheses"] = hypotheses
    result.update(
        {
            "best_step": state["best_step"],
            "dev_loss_by_step": state["dev_loss"],
            "train_seconds": round(state["seconds"], 1),
            "decode_seconds": round(time.perf_counter() - start, 1),
            "parameters": int(model.count_params()),
        }
    )
    return result


# ---------------------------------------------------------------- table


def summarize(run_dir, rows, seeds):
    """Mean and std over the finished seeds of every row."""
    summary = {}
    for row in rows:
        results = []
        for seed in range(seeds):
            path = run_dir / row / f"seed{seed}.json"
            if path.exists():
                results.append(json.loads(path.read_text())["result"])
        if not results:
            continue
        entry = {"seeds": [r["seed"] for r in results]}
        for r in results:
            r["dev_loss"] = r["dev_loss_by_step"][str(r["best_step"])]
        for key in (
            "test_bleu",
            "dev_bleu",
            "dev_loss",
            "train_seconds",
            "best_step",
        ):
            if key not in results[0]:
                continue
            values = np.array([r[key] for r in results], float)
            entry[key] = {
                "mean": float(values.mean()),
                "std": float(values.std(ddof=1)) if len(values) > 1 else None,
                "values": values.tolist(),
            }
        entry["parameters"] = results[0]["parameters"]
        summary[row] = entry
    return summary


def markdown_table(summary):
    lines = [
        "| row | params | seeds | test BLEU (mean ± std) | dev BLEU | "
        "dev loss per token | D&C Table 1, combined | Wang Table 5 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row, entry in summary.items():

        def cell(key, entry=entry, digits=2):
            if key not in entry:
                return "-"
            value = entry[key]
            std = value["std"]
            std = "" if std is None else f" ± {std:.{digits}f}"
            return f"{value['mean']:.{digits}f}{std}"

        lines.append(
            f"| {row} | {entry['parameters']:,} | {len(entry['seeds'])} | "
            f"{cell('test_bleu')} | {cell('dev_bleu')} | "
            f"{cell('dev_loss', digits=3)} | "
            f"{PAPER_DC_BLEU.get(row, '-')} | "
            f"{PAPER_WANG_BLEU.get(row, '-')} |"
        )
    return "\n".join(lines)


# ----------------------------------------------------------------- main


def _config_from_args(args):
    if args.paper_config:
        config = dict(PAPER)
    else:
        config = dict(CONFIGS[args.config])
    for key in ("steps", "learning_rate", "eval_every"):
        value = getattr(args, key)
        if value is not None:
            config[key] = value
            if key != "eval_every":
                config["name"] += f"_{key}{value:g}"
    return config


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=list(CONFIGS), default="small")
    parser.add_argument(
        "--paper-config",
        action="store_true",
        help="the paper-scale configuration (needs a GPU)",
    )
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--rows", nargs="+", choices=list(ROWS))
    parser.add_argument("--steps", type=int)
    parser.add_argument("--learning-rate", type=float)
    parser.add_argument("--eval-every", type=int)
    parser.add_argument("--dev-books", nargs="+", default=list(DEV_BOOKS))
    parser.add_argument("--test-books", nargs="+", default=list(TEST_BOOKS))
    parser.add_argument(
        "--pairs",
        type=Path,
        help="a tab-separated file of verse pairs (the cache format) "
        "instead of load_verse_pairs()",
    )
    parser.add_argument("--output-dir", type=Path)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--worker", type=int, default=0)
    parser.add_argument(
        "--summarize",
        action="store_true",
        help="only write the summary of the finished runs",
    )
    parser.add_argument(
        "--keep-checkpoints",
        action="store_true",
        help="keep a finished run's checkpoints",
    )
    args = parser.parse_args(argv)
    if not 0 <= args.worker < args.workers:
        raise ValueError(
            "`--worker` must be in [0, --workers). Received: "
            f"worker={args.worker}, workers={args.workers}"
        )
    if keras.backend.backend() == "torch":
        import torch

        torch.set_num_threads(1)
    config = _config_from_args(args)
    rows = args.rows or list(ROWS)
    run_dir = args.output_dir or RESULTS_DIR / config["name"]
    settings = {
        "config": config,
        "dev_books": args.dev_books,
        "test_books": args.test_books,
        "pairs": "load_verse_pairs()" if args.pairs is None else "file",
        "backend": keras.backend.backend(),
    }
    finished = []
    if not args.summarize:
        pairs = (
            load_verse_pairs()
            if args.pairs is None
            else read_verse_pairs(args.pairs)
        )
        data = prepare_data(pairs, config, args.dev_books, args.test_books)
        print(f"pairs {data['total_pairs']}, kept {data['sizes']}", flush=True)
        runs = [(seed, row) for seed in range(args.seeds) for row in rows]
        for index, (seed, row) in enumerate(runs):
            if index % args.workers != args.worker:
                continue
            path = run_dir / row / f"seed{seed}.json"
            if path.exists():
                saved = json.loads(path.read_text())
                if saved["settings"]["config"] != config:
                    raise ValueError(
                        f"{path} was made with another configuration; use "
                        f"another --output-dir. Saved: "
                        f"{saved['settings']['config']}, now: {config}"
                    )
                print(f"{row} seed {seed}: done, skipped", flush=True)
                continue
            checkpoints = run_dir / "checkpoints" / f"{row}_seed{seed}"
            result = train_run(
                row,
                seed,
                config,
                data,
                checkpoints,
                log=lambda m: print(m, flush=True),
            )
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(
                json.dumps(
                    {
                        "settings": dict(settings, data_sizes=data["sizes"]),
                        "date": time.strftime("%Y-%m-%d"),
                        "result": result,
                    },
                    indent=2,
                    ensure_ascii=False,
                )
            )
            if not args.keep_checkpoints:
                shutil.rmtree(checkpoints, ignore_errors=True)
            finished.append((row, seed))
            print(
                f"{row} seed {seed}: test BLEU {result['test_bleu']:.2f}, "
                f"{result['train_seconds']} s",
                flush=True,
            )
    summary = summarize(run_dir, rows, args.seeds)
    table = markdown_table(summary)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "summary.json").write_text(
        json.dumps(
            {
                "settings": settings,
                "command": "OMP_NUM_THREADS=1 KERAS_BACKEND="
                f"{keras.backend.backend()} python benchmarks/translation.py "
                f"--seeds {args.seeds}",
                "paper_dc_bleu": PAPER_DC_BLEU,
                "paper_wang_bleu": PAPER_WANG_BLEU,
                "summary": summary,
                "table": table,
            },
            indent=2,
        )
    )
    print(table)
    return {"finished": finished, "summary": summary}


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
