"""Six position encodings on a shift task: accuracy in and past train length.

DeBenedetto & Chiang (ICML 2020, Sec. 4, Table 1) read the Transformer's
sinusoidal position encodings as the forward weights of a unary automaton
and compare six variants (`keras_msets.layers.AutomatonPositionEncoding`
modes): diagonal polar fixed (the sinusoids) and learned, full matrix
random and learned, per position random and learned. On low-resource
machine translation they find the learned automaton encodings about equal
to the sinusoids (combined BLEU 26.6 and 26.5 against 26.4) and clearly
better than learned per-position encodings (25.0). Their "learned
angles" trains the phases and angles only (`s = r = 1`); a seventh row,
`diagonal_polar_learned_modulus` (`learn_modulus=True`, not in the paper),
trains the scales and log-moduli as well. An eighth, `rotary` (not in the
paper), adds nothing to the embeddings and turns the self-attention's
queries and keys by `keras_msets.layers.AutomatonRotaryEmbedding` (fixed
RoPE, a diagonal unary automaton applied to queries and keys). KerasHub's
`TransformerEncoder` has no hook for that, so this row alone uses
`RotaryTransformerEncoder`, the same block (post-layer-norm, ReLU
feed-forward, no dropout, the same weights) with rotary queries and keys;
the other rows are unchanged.

Machine translation does not fit on 2 CPU cores, so this benchmark uses a
small task in which word order is everything: **shift by k** (`k = 3` by
default). The input is a sequence of random tokens `x_0 .. x_{n-1}` from
`1 .. vocabulary_size - 1` (0 is padding); the target at position `i` is
`x_{i-k}`, and a "none" class (0) for `i < k`. It is token
classification with an encoder only: `keras.layers.Embedding`, plus the
position encoding, one `keras_hub.layers.TransformerEncoder` (with the
padding mask), and a per-position `Dense` softmax. Why this task:

- A bag of tokens cannot solve it: each output needs the token exactly
  `k` places back, so the model must learn "attend from `i` to `i - k`"
  from the position encodings alone.
- The rule is the same at every length and depends on the relative
  position only, so a model trained on lengths `<= 32` *can* be exactly
  right at length 128; whether it is depends only on whether its position
  encodings let the learned attention pattern carry over to positions it
  never saw. That makes the longer-length test a test of the encoding, not
  of the task (sequence reversal, by contrast, needs the length itself,
  which no encoding here gives for unseen lengths).
- Automaton encodings `lambda mu^p` make `e_i M e_j^T` a function of `i - j`
  whenever `M` commutes with an orthogonal `mu`, so relative attention is
  expressible at every position; per-position vectors beyond the train
  length are never updated (learned) or never seen (random).

Scale (fits the 2 shared CPU cores, about 10 minutes on jax): vocabulary
16, `hidden_dim` 32, one encoder layer with 2 heads and feed-forward 64,
4,096 training sequences of lengths drawn uniformly from `k + 1 .. 32`
(padded to 32), Adam 3e-3, batch 64, 12 epochs; four seeds per encoding
(the seed sets the data, the initial weights and the shuffling; seeds
and data are the same for all six encodings). Test: 512 fresh sequences at
each of the lengths 8, 16, 24, 32 (in length) and 48, 64, 96, 128
(longer), scored per token, per sequence (all tokens right), and per token
on the positions >= 32 alone (those no training sequence reached; a model
that is right exactly on the trained positions scores 32 / n per token at
length n and 0 on them). The
per-position modes get `max_length=128` so that they run at all; their
rows 32 .. 127 are never trained (learned) or never seen in training
(random), which is the paper's point about them.

    KERAS_BACKEND=jax python benchmarks/position_encodings.py [--seeds 4]
    KERAS_BACKEND=jax python benchmarks/position_encodings.py --smoke

Writes `benchmarks/position_encodings.png` (accuracy against test length,
one line per encoding) and `benchmarks/results/position_encodings.json`,
and prints a markdown table for `benchmarks/RESULTS.md`. `--smoke` runs a
tiny version (one seed, one short epoch) in a few seconds; with
`--output-dir` both files go there instead.
"""

import argparse
import json
import math
import time
from pathlib import Path

import keras
import keras_hub
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import keras_msets
from keras_msets.layers.automaton_position_encoding import MODES

HERE = Path(__file__).parent
# Rows: a name, the layer's mode and its other arguments. The paper's six
# modes (its "learned angles" is `diagonal_polar_learned`: phi and theta
# trained, s = r = 1), and ours: the learned diagonal with trainable
# scales and log-moduli as well.
ROWS = {
    "diagonal_polar_fixed": ("diagonal_polar_fixed", {}),
    "diagonal_polar_learned": ("diagonal_polar_learned", {}),
    "diagonal_polar_learned_modulus": (
        "diagonal_polar_learned",
        {"learn_modulus": True},
    ),
    **{mode: (mode, {}) for mode in MODES[2:]},
    # Rotary: nothing added to the embeddings; the queries and keys of
    # the self-attention are turned by `AutomatonRotaryEmbedding` (fixed
    # RoPE) inside `RotaryTransformerEncoder`.
    "rotary": ("rotary", {}),
}
# Table 1 of the paper, "combined" column (all seven language pairs'
# test sets together), case-insensitive BLEU; † = significantly different
# from the first line (p < 0.05).
PAPER_COMBINED_BLEU = {
    "diagonal_polar_fixed": "26.4",
    "diagonal_polar_learned": "26.6",
    "diagonal_polar_learned_modulus": "- (not in the paper)",
    "full_matrix_random": "26.5",
    "full_matrix_learned": "26.5",
    "per_position_random": "26.3",
    "per_position_learned": "25.0 †",
    "rotary": "- (not in the paper)",
}
FULL = {
    "shift": 3,
    "vocabulary_size": 16,
    "hidden_dim": 32,
    "num_heads": 2,
    "intermediate_dim": 64,
    "num_layers": 1,
    "train_length": 32,
    "num_train": 4096,
    "batch_size": 64,
    "epochs": 12,
    "learning_rate": 3e-3,
    "in_lengths": [8, 16, 24, 32],
    "long_lengths": [48, 64, 96, 128],
    "num_test": 512,
    "run_eagerly": False,
}
SMOKE = dict(
    FULL,
    hidden_dim=8,
    intermediate_dim=16,
    train_length=8,
    num_train=64,
    batch_size=32,
    epochs=1,
    in_lengths=[8],
    long_lengths=[12],
    num_test=16,
    run_eagerly=True,
)


def make_sequences(rng, num, lengths, pad_to, config):
    """Random token sequences and their shifted targets, zero-padded.

    Returns `tokens` and `targets`, int32 `[num, pad_to]`: the target at
    `i < length` is `tokens[i - shift]`, or 0 ("none") for `i < shift`;
    padded positions are 0 in both.
    """
    shift = config["shift"]
    tokens = rng.integers(
        1, config["vocabulary_size"], size=(num, pad_to), dtype="int32"
    )
    lengths = np.broadcast_to(np.asarray(lengths), (num,))
    tokens[np.arange(pad_to)[None, :] >= lengths[:, None]] = 0
    targets = np.zeros_like(tokens)
    targets[:, shift:] = tokens[:, :-shift]
    targets[tokens == 0] = 0
    return tokens, targets


class RotaryTransformerEncoder(keras.layers.Layer):
    """`keras_hub.layers.TransformerEncoder` with rotary queries and keys.

    The layout of KerasHub's encoder block with its defaults (post-layer-
    norm, epsilon 1e-5, ReLU feed-forward, Glorot-uniform kernels, zero
    biases, no dropout; its weights in the same order and shapes), except
    that the self-attention's queries and keys
    `[batch, length, heads, key_dim]` are turned by
    `keras_msets.layers.AutomatonRotaryEmbedding` (fixed RoPE, positions
    from 0) before their dot products. KerasHub's encoder has no hook for
    that. Padded keys get a large finite negative logit.
    """

    def __init__(self, intermediate_dim, num_heads, **kwargs):
        super().__init__(**kwargs)
        self.intermediate_dim = intermediate_dim
        self.num_heads = num_heads

    def build(self, inputs_shape):
        hidden_dim = inputs_shape[-1]
        self.key_dim = hidden_dim // self.num_heads
        heads = (None, self.num_heads, self.key_dim)
        self.query_dense, self.key_dense, self.value_dense = (
            keras.layers.EinsumDense(
                "abc,cde->abde", heads, bias_axes="de", name=name
            )
            for name in ("query", "key", "value")
        )
        self.output_dense = keras.layers.EinsumDense(
            "abcd,cde->abe", (None, hidden_dim), bias_axes="e", name="output"
        )
        for layer in (self.query_dense, self.key_dense, self.value_dense):
            layer.build(inputs_shape)
        self.output_dense.build(tuple(inputs_shape[:2]) + heads[1:])
        self.rotary = keras_msets.layers.AutomatonRotaryEmbedding(name="rotary")
        self.attention_norm = keras.layers.LayerNormalization(
            epsilon=1e-5, name="self_attention_layer_norm"
        )
        self.attention_norm.build(inputs_shape)
        self.feedforward_norm = keras.layers.LayerNormalization(
            epsilon=1e-5, name="feedforward_layer_norm"
        )
        self.feedforward_norm.build(inputs_shape)
        self.intermediate_dense = keras.layers.Dense(
            self.intermediate_dim, activation="relu", name="intermediate"
        )
        self.intermediate_dense.build(inputs_shape)
        self.feedforward_dense = keras.layers.Dense(
            hidden_dim, name="feedforward_output"
        )
        self.feedforward_dense.build(
            tuple(inputs_shape[:-1]) + (self.intermediate_dim,)
        )

    def call(self, inputs, padding_mask=None):
        query = self.rotary(self.query_dense(inputs))
        key = self.rotary(self.key_dense(inputs))
        logits = keras.ops.einsum("bqhd,bkhd->bhqk", query, key)
        logits = logits / math.sqrt(self.key_dim)
        if padding_mask is not None:
            visible = padding_mask[:, None, None, :]
            logits = keras.ops.where(visible, logits, -1e9)
        weights = keras.ops.softmax(logits, axis=-1)
        attended = keras.ops.einsum(
            "bhqk,bkhd->bqhd", weights, self.value_dense(inputs)
        )
        x = self.attention_norm(inputs + self.output_dense(attended))
        h = self.feedforward_dense(self.intermediate_dense(x))
        return self.feedforward_norm(x + h)

    def compute_output_shape(self, inputs_shape):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            intermediate_dim=self.intermediate_dim, num_heads=self.num_heads
        )
        return config


def build_model(row, config, max_length):
    """Embedding + position encoding, TransformerEncoder(s), Dense softmax.

    `row` is a key of `ROWS` (a mode, or a mode with layer arguments);
    the "rotary" row adds nothing to the embeddings and uses
    `RotaryTransformerEncoder` blocks instead.
    """
    mode, options = ROWS[row]
    tokens = keras.Input(shape=(None,), dtype="int32", name="tokens")
    padding_mask = keras.ops.not_equal(tokens, 0)
    x = keras.layers.Embedding(
        config["vocabulary_size"], config["hidden_dim"], name="embedding"
    )(tokens)
    if mode != "rotary":
        x = x + keras_msets.layers.AutomatonPositionEncoding(
            mode=mode,
            max_length=max_length,
            name="position_encoding",
            **options,
        )(x)
    block = (
        RotaryTransformerEncoder
        if mode == "rotary"
        else keras_hub.layers.TransformerEncoder
    )
    for index in range(config["num_layers"]):
        x = block(
            intermediate_dim=config["intermediate_dim"],
            num_heads=config["num_heads"],
            name=f"encoder_{index}",
        )(x, padding_mask=padding_mask)
    outputs = keras.layers.Dense(
        config["vocabulary_size"], activation="softmax", name="classifier"
    )(x)
    return keras.Model(tokens, outputs)


def accuracies(model, tokens, targets, batch_size, seen_length):
    """Per-token and per-sequence accuracy over the non-padded positions.

    Also the per-token accuracy on the positions `>= seen_length` (those no
    training sequence reached) alone, when there are any.
    """
    # A direct call (eager) instead of `predict`: no new compilation for
    # every test length.
    predictions = np.concatenate(
        [
            keras.ops.convert_to_numpy(
                model(tokens[i : i + batch_size], training=False)
            )
            for i in range(0, len(tokens), batch_size)
        ]
    )
    valid = tokens != 0
    correct = (np.argmax(predictions, axis=-1) == targets) | ~valid
    result = {
        "token": float(np.sum(correct & valid) / np.sum(valid)),
        "sequence": float(np.mean(np.all(correct, axis=-1))),
    }
    unseen = valid[:, seen_length:]
    if np.any(unseen):
        result["token_unseen_positions"] = float(
            np.sum(correct[:, seen_length:] & unseen) / np.sum(unseen)
        )
    return result


def run(mode, seed, config):
    """Train one encoding with one seed; return its numbers."""
    max_length = max(config["in_lengths"] + config["long_lengths"])
    rng = np.random.default_rng(seed)
    train_lengths = rng.integers(
        config["shift"] + 1, config["train_length"] + 1, config["num_train"]
    )
    x, y = make_sequences(
        rng, config["num_train"], train_lengths, config["train_length"], config
    )
    keras.utils.set_random_seed(seed)
    model = build_model(mode, config, max_length)
    model.compile(
        optimizer=keras.optimizers.Adam(config["learning_rate"]),
        loss="sparse_categorical_crossentropy",
        # Compiling costs more than the few steps of the smoke run.
        run_eagerly=config["run_eagerly"],
    )
    encoding = (
        model.get_layer("encoder_0").rotary
        if ROWS[mode][0] == "rotary"
        else model.get_layer("position_encoding")
    )
    start = time.perf_counter()
    history = model.fit(
        x,
        y,
        sample_weight=(x != 0).astype("float32"),
        batch_size=config["batch_size"],
        epochs=config["epochs"],
        shuffle=True,
        verbose=0,
    )
    train_seconds = time.perf_counter() - start
    # Test data depend on the seed only, not on the encoding.
    test_rng = np.random.default_rng([seed, 1])
    by_length = {}
    for length in config["in_lengths"] + config["long_lengths"]:
        tokens, targets = make_sequences(
            test_rng, config["num_test"], length, length, config
        )
        by_length[str(length)] = accuracies(
            model, tokens, targets, config["batch_size"], config["train_length"]
        )
    # Norm of the encoding at the first, last trained and last tested
    # position: shows whether a learned automaton grows or decays with p.
    # (Rotary turns vectors without changing their norm: none.)
    norms = None
    if ROWS[mode][0] != "rotary":
        probe = np.zeros((1, max_length, config["hidden_dim"]), "float32")
        vectors = keras.ops.convert_to_numpy(encoding(probe))[0]
        norms = {
            str(p): float(np.linalg.norm(vectors[p]))
            for p in (0, config["train_length"] - 1, max_length - 1)
        }
    return {
        "encoding_trainable_parameters": int(
            sum(math.prod(w.shape) for w in encoding.trainable_weights)
        ),
        "encoding_parameters": int(
            sum(math.prod(w.shape) for w in encoding.weights)
        ),
        "final_train_loss": float(history.history["loss"][-1]),
        "train_seconds": round(train_seconds, 1),
        "accuracy_by_length": by_length,
        "encoding_norm_by_position": norms,
    }


def summarize(runs, config):
    """Mean over seeds of each number, and of the in/longer length groups."""
    summary = {}
    for mode, per_seed in runs.items():
        seeds = list(per_seed.values())
        lengths = config["in_lengths"] + config["long_lengths"]

        def mean(values):
            return float(np.mean(values))

        by_length = {
            str(n): {
                kind: mean(
                    [s["accuracy_by_length"][str(n)][kind] for s in seeds]
                )
                for kind in ("token", "sequence")
            }
            for n in lengths
        }
        unseen = [
            s["accuracy_by_length"][str(n)]["token_unseen_positions"]
            for s in seeds
            for n in config["long_lengths"]
        ]
        groups = {"long_lengths_token_unseen_positions": mean(unseen)}
        for group in ("in_lengths", "long_lengths"):
            for kind in ("token", "sequence"):
                groups[f"{group}_{kind}"] = mean(
                    [by_length[str(n)][kind] for n in config[group]]
                )
                groups[f"{group}_{kind}_min_seed"] = min(
                    mean(
                        [
                            s["accuracy_by_length"][str(n)][kind]
                            for n in config[group]
                        ]
                    )
                    for s in seeds
                )
        summary[mode] = {
            "encoding_trainable_parameters": seeds[0][
                "encoding_trainable_parameters"
            ],
            "encoding_parameters": seeds[0]["encoding_parameters"],
            "train_seconds": mean([s["train_seconds"] for s in seeds]),
            "final_train_loss": mean([s["final_train_loss"] for s in seeds]),
            "accuracy_by_length": by_length,
            **groups,
        }
    return summary


def markdown_table(summary, config):
    in_lengths, long_lengths = config["in_lengths"], config["long_lengths"]
    in_range = f"{min(in_lengths)}-{max(in_lengths)}"
    long_range = f"{min(long_lengths)}-{max(long_lengths)}"
    longest = str(max(config["long_lengths"]))
    lines = [
        "| encoding | trainable encoding params | token acc "
        f"{in_range} | seq acc {in_range} | token acc {long_range} | "
        f"seq acc {long_range} | token acc {long_range}, positions >= "
        f"{config['train_length']} only | token acc {longest} | train s | "
        "paper: combined BLEU (Table 1) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for mode, s in summary.items():
        lines.append(
            f"| {mode} | {s['encoding_trainable_parameters']:,} | "
            f"{s['in_lengths_token']:.3f} | {s['in_lengths_sequence']:.3f} | "
            f"{s['long_lengths_token']:.3f} | "
            f"{s['long_lengths_sequence']:.3f} | "
            f"{s['long_lengths_token_unseen_positions']:.3f} | "
            f"{s['accuracy_by_length'][longest]['token']:.3f} | "
            f"{s['train_seconds']:.0f} | {PAPER_COMBINED_BLEU[mode]} |"
        )
    return "\n".join(lines)


def plot(summary, config, path):
    lengths = config["in_lengths"] + config["long_lengths"]
    figure, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for axis, kind in zip(axes, ("token", "sequence"), strict=True):
        for mode, s in summary.items():
            axis.plot(
                lengths,
                [s["accuracy_by_length"][str(n)][kind] for n in lengths],
                marker="o",
                markersize=3,
                linestyle="--" if "per_position" in mode else "-",
                label=mode,
            )
        axis.axvline(config["train_length"], color="gray", linewidth=0.8)
        limit = config["train_length"]
        axis.set_title(f"per-{kind} accuracy (train lengths <= {limit})")
        axis.set_xlabel("test sequence length")
        axis.set_ylim(-0.02, 1.02)
    axes[0].set_ylabel("accuracy")
    axes[1].legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=None,
        help="where to write the PNG and JSON (default: benchmarks/ and "
        "benchmarks/results/)",
    )
    parser.add_argument(
        "--rows", nargs="+", choices=list(ROWS), default=list(ROWS)
    )
    parser.add_argument(
        "--keep-rows-from",
        type=Path,
        default=None,
        help="JSON of an earlier run with the same settings: the rows not "
        "in --rows are copied from it instead of trained",
    )
    args = parser.parse_args(argv)
    config = dict(SMOKE if args.smoke else FULL)
    seeds = 1 if args.smoke else args.seeds
    if args.epochs is not None:
        config["epochs"] = args.epochs
    earlier = None
    if args.keep_rows_from is not None:
        earlier = json.loads(args.keep_rows_from.read_text())
        differ = {
            key: (earlier["settings"].get(key), value)
            for key, value in dict(config, seeds=seeds).items()
            if earlier["settings"].get(key) != value
        }
        if differ:
            raise ValueError(
                "`--keep-rows-from` must name a run with the same settings. "
                f"Received: {args.keep_rows_from}, which differs in "
                f"{differ} (earlier, now)"
            )

    total_start = time.perf_counter()
    runs = {}
    for mode in ROWS:
        if mode not in args.rows:
            if earlier is not None and mode in earlier["runs"]:
                runs[mode] = earlier["runs"][mode]
            continue
        runs[mode] = {}
        for seed in range(seeds):
            runs[mode][str(seed)] = result = run(mode, seed, config)
            print(
                f"{mode} seed {seed}: {result['train_seconds']} s, "
                + ", ".join(
                    f"{n}: {a['token']:.3f}/{a['sequence']:.3f}"
                    for n, a in result["accuracy_by_length"].items()
                ),
                flush=True,
            )
    summary = summarize(runs, config)
    total_seconds = time.perf_counter() - total_start

    command = "KERAS_BACKEND={} python benchmarks/position_encodings.py{}"
    command = command.format(
        keras.backend.backend(),
        " --smoke" if args.smoke else f" --seeds {seeds}",
    )
    if args.rows != list(ROWS):
        command += " --rows " + " ".join(args.rows)
    if earlier is not None:
        command += f" --keep-rows-from {args.keep_rows_from}"
    results = {
        "settings": {
            "command": command,
            "backend": keras.backend.backend(),
            "date": time.strftime("%Y-%m-%d"),
            "machine": "2 CPU cores",
            "smoke": args.smoke,
            "seeds": seeds,
            "total_seconds": round(total_seconds, 1),
            **config,
            "rows_kept_from_earlier_run": sorted(set(runs) - set(args.rows)),
        },
        "paper_combined_bleu": PAPER_COMBINED_BLEU,
        "summary": summary,
        "runs": runs,
    }
    if args.output_dir is None:
        json_path = HERE / "results" / "position_encodings.json"
        png_path = HERE / "position_encodings.png"
    else:
        json_path = args.output_dir / "position_encodings.json"
        png_path = args.output_dir / "position_encodings.png"
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(results, indent=2))
    plot(summary, config, png_path)

    print(
        f"\nShift-by-{config['shift']} task, train lengths "
        f"{config['shift'] + 1}-{config['train_length']}, "
        f"{seeds} seed(s), mean over seeds; `{command}`, "
        f"{results['settings']['date']}, 2 CPU cores, "
        f"{total_seconds:.0f} s in all.\n"
    )
    print(markdown_table(summary, config))
    return results


if __name__ == "__main__":
    main()
