"""Time per training step of each complex layer and its real counterpart.

Wang et al. (ICLR 2020) say that complex-order embeddings come "at a
negligible (or non-existent) cost in efficiency" (Sec. 3.1, Fig. 2: seconds
per epoch of whole classifiers in TensorFlow on a TITAN X GPU). This
script measures the cost layer by layer: for each complex layer of
`keras_msets.layers` and the real-valued Keras layer of the same width it
times one training step (forward, backward, Adam update) of a tiny model
`input -> layer -> mean over positions -> Dense(1)` with the MSE loss.

Pairs (`--pairs`), real counterpart first:
- `embedding`: `keras.layers.Embedding(V, d)` and
  `keras_msets.layers.ComplexOrderEmbedding(V, d)` (amplitudes and
  frequencies, one per word and dimension: twice the table).
- `dense`: `keras.layers.Dense(d)` and `ComplexDense(d)`.
- `conv1d`: `keras.layers.Conv1D(d, k)` and `ComplexConv1D(d, k)`.
- `lstm`: `keras.layers.LSTM(d)` and `ComplexLSTM(d)` (its default
  `gate_product="complex"`; `--lstm-gate-product split` times the variant
  of our Table 2 classifiers).
- `attention`: `keras.layers.MultiHeadAttention(h, d // h)` and
  `ComplexMultiHeadAttention(h, d // h)` (self-attention).
- `transformer`: `keras_hub.layers.TransformerEncoder(2 d, h)` and
  `ComplexTransformerEncoder(2 d, h)` (post-LN, inner size `2 d`).

"Same width" means the same number of units (filters, heads, key size):
the real layer reads `d` real features and writes `d`; the complex layer
reads `d` complex features (`2 d` reals, real parts then imaginary parts)
and writes `d` complex units. Every complex weight `A + iB` has two real
matrices, so each complex layer has exactly twice the parameters of its
counterpart, and a complex matrix product `(A + iB)(x + iy)` costs four real
products of the counterpart's size (`ComplexDense` computes it as one
product with a `2 d x 2 d` matrix).

Timing: both models of a pair are compiled (Adam, MSE, the backend's
default `jit_compile="auto"`: XLA on jax, a `tf.function` graph without
XLA on a CPU-only TensorFlow, eager on torch; `--jit-compile` overrides)
and warmed up with `--warmup` `train_on_batch` calls. Then `--repeats`
blocks of `--steps` calls each alternate between the two models (the first
model of each block alternates too), and the median seconds per step over
the blocks of each model are reported, with their ratio. Blocks that
follow each other see the same machine load, so the ratio stays
meaningful on a busy machine even when the absolute times are not; the
median of the per-block ratios (`ratio_blockwise`) and their quartiles
are stored too. On our busy 2-core machine (load 8-10) the ratio of a pair
still moved by about 20-30% from one run to the next.

    KERAS_BACKEND=jax python benchmarks/complex_layer_speed.py
    OMP_NUM_THREADS=1 KERAS_BACKEND=torch \
        python benchmarks/complex_layer_speed.py --pairs dense lstm
    KERAS_BACKEND=tensorflow python benchmarks/complex_layer_speed.py --smoke

On a machine busy with other jobs PyTorch's OpenMP threads wait for each
other: on our 2 shared cores (load about 10) a `Dense` step took 140 ms
with torch's default 2 threads and 6 ms with `OMP_NUM_THREADS=1`, so run
the torch backend with `OMP_NUM_THREADS=1` there. `OMP_NUM_THREADS`,
`MKL_NUM_THREADS` and `XLA_FLAGS`, when set, are written into the stored
command.

What the FLOP count implies (`implied_ratio`, `flop_ratios`): the
forward products of the complex layer over those of the real one (the
backward pass scales both alike). A complex product of width d costs 4
real products of width d (our layers compute it as one real product with
the `2 d x 2 d` block matrix `[[A, B], [-B, A]]`; Gauss's trick would
use 3 products plus extra additions, see RESULTS), so `Dense`, `Conv1D`
and `LSTM` imply 4; attention adds the scores `q . conj(k)` (4 real
products) and the weighted sums of the complex values (2), so its ratio
depends on the length; the transformer adds a feed-forward block of
complex dense layers. The embeddings have no products: their step is
the lookup and the Adam update of the tables, twice as many parameters,
so they imply 2. `ratio_over_implied` is the measured ratio over it.

`--former` also times, in the same blocks and with the complex model's
weights, the former implementation of the pairs that have one (`FORMER`:
the attention of four real score products and the overflow-safe modulus
of the unscaled scores, in the attention and transformer pairs, and in
the transformer two layer normalisations of the split parts; the order
embedding with `cos_sin`'s polynomials differentiated by autodiff, or
with `--embedding-former backend` the backend's `cos` and `sin`), and
checks that it gives the same outputs (`max_output_difference_former`).

`--device-time` (jax) also reports the time of the compiled step itself
(`device_ms_<member>`, `device_ratio`): the durations of its XLA ops in
`jax.profiler` traces, without Keras's Python around each
`train_on_batch` call, which is the same for both layers of a pair and,
on a small step, a large share of the wall time (it pulls the measured
ratio towards 1, more so on a loaded machine); `device_top_ops_<member>`
lists the largest ops.

Writes `benchmarks/results/complex_layer_speed_<backend>.json` (settings,
the command, per pair parameter counts and times) and prints a markdown
table for `benchmarks/RESULTS.md`.
"""

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import keras
import numpy as np

from keras_msets import layers as msets_layers
from keras_msets import ops as msets_ops
from keras_msets.layers import complex_multi_head_attention as cmha
from keras_msets.layers import complex_transformer_encoder as cte
from keras_msets.ops import phase

HERE = Path(__file__).parent
PAIRS = ("embedding", "dense", "conv1d", "lstm", "attention", "transformer")
PAIR_NAMES = {
    "embedding": ("Embedding", "ComplexOrderEmbedding"),
    "dense": ("Dense", "ComplexDense"),
    "conv1d": ("Conv1D", "ComplexConv1D"),
    "lstm": ("LSTM", "ComplexLSTM"),
    "attention": ("MultiHeadAttention", "ComplexMultiHeadAttention"),
    "transformer": ("TransformerEncoder", "ComplexTransformerEncoder"),
}
MEMBERS = ("real", "complex")
FORMER_MEMBER = "complex_former"
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "XLA_FLAGS",
    "TF_NUM_INTRAOP_THREADS",
    "TF_NUM_INTEROP_THREADS",
)


def _safe_modulus(real, imag):
    """`|z|` as `big * sqrt(1 + (small / big)**2)` (the former modulus)."""
    real, imag = keras.ops.abs(real), keras.ops.abs(imag)
    big = keras.ops.maximum(real, imag)
    small = keras.ops.minimum(real, imag)
    nonzero = keras.ops.greater(big, 0)
    ratio = small / keras.ops.where(nonzero, big, keras.ops.ones_like(big))
    return big * keras.ops.sqrt(1 + ratio * ratio)


class FormerComplexMultiHeadAttention(cmha.ComplexMultiHeadAttention):
    """`ComplexMultiHeadAttention` with the scores of four real products.

    The layer as it computed Eq. 13-14 before the stacked products: the
    real and imaginary parts of `z = q . conj(k)` from four einsums of the
    split heads, the overflow-safe modulus `big * sqrt(1 + (small /
    big)**2)` of the unscaled `z`, and one einsum per part of the values.
    Same weights, same outputs (up to rounding); timed by `--former`
    beside the current layer.
    """

    def _split(self, x, head_dim):
        real, imag = msets_ops.complex_split(x)
        shape = keras.ops.shape(real)[:-1] + (self.num_heads, head_dim)
        return keras.ops.reshape(real, shape), keras.ops.reshape(imag, shape)

    def _attend(self, query, key, value, mask, any_valid, training):
        ops = keras.ops
        value_dim = self.value_dim or self.key_dim
        q_real, q_imag = self._split(query, self.key_dim)
        k_real, k_imag = self._split(key, self.key_dim)
        v_real, v_imag = self._split(value, value_dim)
        equation = "bthd,bshd->bhts"
        z_real = ops.einsum(equation, q_real, k_real) + ops.einsum(
            equation, q_imag, k_imag
        )
        z_imag = ops.einsum(equation, q_imag, k_real) - ops.einsum(
            equation, q_real, k_imag
        )
        logits = _safe_modulus(z_real, z_imag)
        logits = logits * ops.cast(self.key_dim**-0.5, logits.dtype)
        if mask is not None:
            logits = msets_ops.mask_logits(logits, ops.expand_dims(mask, 1))
        weights = ops.softmax(logits, axis=-1)
        if any_valid is not None:
            weights = ops.where(
                ops.expand_dims(any_valid, 1), weights, ops.zeros_like(weights)
            )
        scores = weights
        weights = self.dropout_layer(weights, training=training)
        equation = "bhts,bshd->bthd"
        heads_real = ops.einsum(equation, weights, v_real)
        heads_imag = ops.einsum(equation, weights, v_imag)
        shape = ops.shape(heads_real)[:2] + (self.num_heads * value_dim,)
        return msets_ops.complex_merge(
            ops.reshape(heads_real, shape), ops.reshape(heads_imag, shape)
        ), scores


class FormerComplexTransformerEncoder(cte.ComplexTransformerEncoder):
    """`ComplexTransformerEncoder` with the former attention and the
    former normalisation (two `LayerNormalization` calls on the split
    parts)."""

    def _normalize(self, x, block):
        real, imag = msets_ops.complex_split(x)
        return msets_ops.complex_merge(
            getattr(self, f"{block}_layer_norm_real")(real),
            getattr(self, f"{block}_layer_norm_imag")(imag),
        )

    def build(self, inputs_shape):
        current = cte.ComplexMultiHeadAttention
        cte.ComplexMultiHeadAttention = FormerComplexMultiHeadAttention
        try:
            super().build(inputs_shape)
        finally:
            cte.ComplexMultiHeadAttention = current


def _autodiff_cos_sin(theta):
    """`keras_msets.ops.phase.cos_sin` on JAX without its custom gradient:
    autodiff through the polynomials and a nested quadrant selection."""
    if keras.backend.backend() != "jax":
        return keras.ops.cos(theta), keras.ops.sin(theta)
    ops = keras.ops
    turns = ops.stop_gradient(ops.round(theta * (2 / math.pi)))
    r = theta - turns * phase._HALF_PI_HI
    r = (r - turns * phase._HALF_PI_MID) - turns * phase._HALF_PI_LO
    r2 = r * r
    sin = r + r * r2 * phase._polynomial(r2, phase._SIN_TERMS)
    cos = 1 - 0.5 * r2 + r2 * r2 * phase._polynomial(r2, phase._COS_TERMS)
    quadrant = ops.cast(turns, "int32") % 4
    return (
        ops.where(
            quadrant == 0,
            cos,
            ops.where(quadrant == 1, -sin, ops.where(quadrant == 2, -cos, sin)),
        ),
        ops.where(
            quadrant == 0,
            sin,
            ops.where(quadrant == 1, cos, ops.where(quadrant == 2, -sin, -cos)),
        ),
    )


class FormerComplexOrderEmbedding(msets_layers.ComplexOrderEmbedding):
    """`ComplexOrderEmbedding` with `cos_sin`'s polynomials differentiated
    by autodiff (`--embedding-former autodiff`, the default)."""

    def _cos_sin(self, phase):
        return _autodiff_cos_sin(phase)


class BackendCosSinComplexOrderEmbedding(msets_layers.ComplexOrderEmbedding):
    """`ComplexOrderEmbedding` with the backend's `cos` and `sin`
    (`--embedding-former backend`)."""

    def _cos_sin(self, phase):
        return keras.ops.cos(phase), keras.ops.sin(phase)


FORMER = {
    "embedding": lambda args: (
        FormerComplexOrderEmbedding
        if args.embedding_former == "autodiff"
        else BackendCosSinComplexOrderEmbedding
    )(args.vocab_size, args.width),
    "attention": lambda args: FormerComplexMultiHeadAttention(
        num_heads=args.num_heads, key_dim=args.width // args.num_heads
    ),
    "transformer": lambda args: FormerComplexTransformerEncoder(
        intermediate_dim=2 * args.width, num_heads=args.num_heads
    ),
}


def make_layer(pair, member, args):
    """The layer of one member (`"real"`, `"complex"`, `"complex_former"`)."""
    d, heads = args.width, args.num_heads
    is_complex = member.startswith("complex")
    if member == "complex_former":
        return FORMER[pair](args)
    if pair == "embedding":
        if is_complex:
            return msets_layers.ComplexOrderEmbedding(args.vocab_size, d)
        return keras.layers.Embedding(args.vocab_size, d)
    if pair == "dense":
        if is_complex:
            return msets_layers.ComplexDense(d)
        return keras.layers.Dense(d)
    if pair == "conv1d":
        if is_complex:
            return msets_layers.ComplexConv1D(d, args.kernel_size)
        return keras.layers.Conv1D(d, args.kernel_size)
    if pair == "lstm":
        if is_complex:
            return msets_layers.ComplexLSTM(
                d, gate_product=args.lstm_gate_product
            )
        return keras.layers.LSTM(d)
    if pair == "attention":
        if is_complex:
            return msets_layers.ComplexMultiHeadAttention(
                num_heads=heads, key_dim=d // heads
            )
        return keras.layers.MultiHeadAttention(
            num_heads=heads, key_dim=d // heads
        )
    if pair == "transformer":
        if is_complex:
            return msets_layers.ComplexTransformerEncoder(
                intermediate_dim=2 * d, num_heads=heads
            )
        import keras_hub

        return keras_hub.layers.TransformerEncoder(
            intermediate_dim=2 * d, num_heads=heads
        )
    raise ValueError(f"Unknown pair {pair!r}; expected one of {PAIRS}")


def flop_ratios(pair, batch_size, length, width):
    """`(real, complex)` forward FLOPs of a pair's layer (products only;
    the embeddings: parameters of the tables)."""
    b, n, d = batch_size, length, width
    dense = 2 * b * n * d * d  # one real product of width d
    if pair == "embedding":
        return 1.0, 2.0
    if pair in ("dense", "conv1d"):
        return dense, 4 * dense
    if pair == "lstm":  # input and recurrent kernels, four gates
        return 8 * dense, 32 * dense
    attention_real = 4 * dense + 4 * b * n * n * d
    attention_complex = 16 * dense + (8 + 4) * b * n * n * d
    if pair == "attention":
        return attention_real, attention_complex
    if pair == "transformer":  # plus the feed-forward block, inner 2 d
        return attention_real + 4 * dense, attention_complex + 16 * dense
    raise ValueError(f"Unknown pair {pair!r}; expected one of {PAIRS}")


def implied_ratio(pair, batch_size, length, width):
    real, complex_ = flop_ratios(pair, batch_size, length, width)
    return complex_ / real


def make_model(pair, member, args):
    """`input -> layer -> mean over positions -> Dense(1)`, compiled."""
    layer = make_layer(pair, member, args)
    if pair == "embedding":
        inputs = keras.Input((args.length,), dtype="int32")
    else:
        features = args.width * (2 if member != "real" else 1)
        inputs = keras.Input((args.length, features))
    if pair == "attention":
        x = layer(inputs, inputs)
    else:
        x = layer(inputs)
    if len(x.shape) == 3:
        x = keras.layers.GlobalAveragePooling1D()(x)
    outputs = keras.layers.Dense(1)(x)
    model = keras.Model(inputs, outputs, name=f"{pair}_{member}")
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss="mse",
        jit_compile=args.jit_compile,
        run_eagerly=args.run_eagerly,
    )
    return model, layer


def make_batch(pair, member, args, rng):
    """One fixed batch `(x, y)` as backend tensors."""
    if pair == "embedding":
        x = rng.integers(1, args.vocab_size, (args.batch_size, args.length))
        x = x.astype("int32")
    else:
        features = args.width * (2 if member != "real" else 1)
        x = rng.normal(size=(args.batch_size, args.length, features))
        x = x.astype("float32")
    y = rng.normal(size=(args.batch_size, 1)).astype("float32")
    return keras.ops.convert_to_tensor(x), keras.ops.convert_to_tensor(y)


def seconds_per_step(model, x, y, steps):
    """Mean wall time of `steps` calls of `train_on_batch`.

    `train_on_batch` returns the loss as a Python float, so every call
    waits for its step to finish (jax dispatches asynchronously otherwise).
    """
    start = time.perf_counter()
    for _ in range(steps):
        loss = model.train_on_batch(x, y)
    elapsed = time.perf_counter() - start
    if not np.isfinite(loss):
        raise FloatingPointError(f"{model.name}: loss {loss}")
    return elapsed / steps


def device_ms_per_step(model, x, y, steps, directory):
    """XLA's CPU time per training step on jax, and its largest ops.

    Traces `steps` calls of `train_on_batch` with `jax.profiler` and sums,
    over the ops of the compiled step (`hlo_module` `jit_train_step`), the
    median duration of each op per step: the compiled computation without
    Keras's Python around it. Returns `(ms, {op: ms})`.
    """
    import gzip
    import shutil

    import jax

    shutil.rmtree(directory, ignore_errors=True)
    with jax.profiler.trace(str(directory)):
        for _ in range(steps):
            model.train_on_batch(x, y)
    (trace,) = Path(directory).rglob("*.trace.json.gz")
    with gzip.open(trace) as file:
        events = json.load(file)["traceEvents"]
    durations = {}
    for event in events:
        op_args = event.get("args", {})
        if event.get("ph") != "X" or "hlo_op" not in op_args:
            continue
        if op_args.get("hlo_module") != "jit_train_step":
            continue
        durations.setdefault(op_args["hlo_op"], []).append(event["dur"])
    shutil.rmtree(directory, ignore_errors=True)
    ops_ms = {
        op: statistics.median(d) * len(d) / steps / 1000
        for op, d in durations.items()
    }
    return sum(ops_ms.values()), ops_ms


def time_pair(pair, args, rng):
    """Builds, warms up and times the members of one pair.

    With `--former` a pair that has a former implementation (`FORMER`)
    gets a third member, `complex_former`, with the complex model's
    weights (its outputs are checked against the complex model's).
    """
    names = MEMBERS
    if args.former and pair in FORMER:
        names = MEMBERS + (FORMER_MEMBER,)
    members = {}
    for member in names:
        model, layer = make_model(pair, member, args)
        x, y = make_batch(pair, member, args, rng)
        start = time.perf_counter()
        for _ in range(args.warmup):
            model.train_on_batch(x, y)
        members[member] = {
            "model": model,
            "layer": layer,
            "x": x,
            "y": y,
            "warmup_seconds": time.perf_counter() - start,
            "blocks": [],
        }
    former_difference = None
    if FORMER_MEMBER in members:
        complex_model = members["complex"]["model"]
        former_model = members[FORMER_MEMBER]["model"]
        former_model.set_weights(complex_model.get_weights())
        x = members["complex"]["x"]
        former_difference = float(
            np.max(
                np.abs(
                    keras.ops.convert_to_numpy(complex_model(x))
                    - keras.ops.convert_to_numpy(former_model(x))
                )
            )
        )
    load_start = list(os.getloadavg())
    for repeat in range(args.repeats):
        # Each member comes first in turn, forwards then backwards.
        shift = (repeat // 2) % len(names)
        order = names[shift:] + names[:shift]
        order = order if repeat % 2 == 0 else order[::-1]
        for member in order:
            m = members[member]
            m["blocks"].append(
                seconds_per_step(m["model"], m["x"], m["y"], args.steps)
            )
    real, complex_ = members["real"], members["complex"]
    ms_real = 1000 * statistics.median(real["blocks"])
    ms_complex = 1000 * statistics.median(complex_["blocks"])
    blockwise = [
        c / r for c, r in zip(complex_["blocks"], real["blocks"], strict=True)
    ]
    implied = implied_ratio(pair, args.batch_size, args.length, args.width)
    result = {
        "pair": pair,
        "implied_ratio": implied,
        "ratio_over_implied": ms_complex / ms_real / implied,
        "real_layer": PAIR_NAMES[pair][0],
        "complex_layer": PAIR_NAMES[pair][1],
        "params_real": int(real["layer"].count_params()),
        "params_complex": int(complex_["layer"].count_params()),
        "model_params_real": int(real["model"].count_params()),
        "model_params_complex": int(complex_["model"].count_params()),
        "ms_real": ms_real,
        "ms_complex": ms_complex,
        "ratio": ms_complex / ms_real,
        "ratio_blockwise": statistics.median(blockwise),
        "ratio_blockwise_quartiles": [
            float(q) for q in np.percentile(blockwise, [25, 75])
        ],
        "ms_real_blocks": [1000 * s for s in real["blocks"]],
        "ms_complex_blocks": [1000 * s for s in complex_["blocks"]],
        "warmup_seconds_real": real["warmup_seconds"],
        "warmup_seconds_complex": complex_["warmup_seconds"],
        "jit_compile": bool(real["model"].jit_compile),
        "load_average_start": load_start,
        "load_average_end": list(os.getloadavg()),
    }
    if args.device_time:
        device = {member: [] for member in names}
        ops_of = {}
        for repeat in range(args.device_repeats):
            order = names if repeat % 2 == 0 else names[::-1]
            for member in order:
                m = members[member]
                ms, ops_ms = device_ms_per_step(
                    m["model"],
                    m["x"],
                    m["y"],
                    args.steps,
                    args.output.parent / f"trace_{pair}_{member}",
                )
                device[member].append(ms)
                ops_of.setdefault(member, []).append(ops_ms)
        for member in names:
            result[f"device_ms_{member}"] = statistics.median(device[member])
            result[f"device_ms_{member}_repeats"] = device[member]
            last = ops_of[member][-1]
            result[f"device_top_ops_{member}"] = dict(
                sorted(last.items(), key=lambda item: -item[1])[:12]
            )
        result["device_ratio"] = (
            result["device_ms_complex"] / result["device_ms_real"]
        )
        result["device_ratio_over_implied"] = result["device_ratio"] / implied
    if FORMER_MEMBER in members:
        former = members[FORMER_MEMBER]
        ms_former = 1000 * statistics.median(former["blocks"])
        current_over_former = [
            c / f
            for c, f in zip(complex_["blocks"], former["blocks"], strict=True)
        ]
        result.update(
            {
                "ms_complex_former": ms_former,
                "ratio_former": ms_former / ms_real,
                "ratio_former_over_implied": ms_former / ms_real / implied,
                "ratio_current_over_former": ms_complex / ms_former,
                "ratio_current_over_former_blockwise": statistics.median(
                    current_over_former
                ),
                "ms_complex_former_blocks": [
                    1000 * s for s in former["blocks"]
                ],
                "warmup_seconds_complex_former": former["warmup_seconds"],
                "max_output_difference_former": former_difference,
            }
        )
    return result


def markdown_table(results):
    lines = [
        "| layer pair (real / complex) | parameters real | parameters "
        "complex | ms/step real | ms/step complex | ratio complex/real | "
        "implied by FLOPs |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['real_layer']} / {r['complex_layer']} | "
            f"{r['params_real']:,} | {r['params_complex']:,} | "
            f"{r['ms_real']:.2f} | {r['ms_complex']:.2f} | "
            f"{r['ratio']:.2f} | {r['implied_ratio']:.2f} |"
        )
    return "\n".join(lines)


def _jit_compile(value):
    choices = {"auto": "auto", "true": True, "false": False}
    if value.lower() not in choices:
        raise argparse.ArgumentTypeError(
            f"expected one of {tuple(choices)}, got {value!r}"
        )
    return choices[value.lower()]


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", nargs="+", choices=PAIRS, default=None)
    parser.add_argument(
        "--steps", type=int, default=10, help="training steps per block"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=15,
        help="timed blocks per model, alternating between the two models",
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=3,
        help="untimed train_on_batch calls per model (compilation)",
    )
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--length", type=int, default=40)
    parser.add_argument(
        "--width",
        type=int,
        default=64,
        help="units d: real features of the real layers, complex features "
        "of the complex ones",
    )
    parser.add_argument("--vocab-size", type=int, default=10000)
    parser.add_argument("--num-heads", type=int, default=4)
    parser.add_argument("--kernel-size", type=int, default=3)
    parser.add_argument(
        "--lstm-gate-product", choices=("complex", "split"), default="complex"
    )
    parser.add_argument(
        "--jit-compile",
        type=_jit_compile,
        default="auto",
        help="auto (default: the backend's choice), true or false",
    )
    parser.add_argument(
        "--run-eagerly",
        action="store_true",
        help="run the steps eagerly (no graph, no jit)",
    )
    parser.add_argument(
        "--former",
        action="store_true",
        help="also time the former implementation of the pairs that have "
        f"one ({', '.join(FORMER)}) in the same blocks",
    )
    parser.add_argument(
        "--embedding-former",
        choices=("autodiff", "backend"),
        default="autodiff",
        help="the former order embedding of --former: cos_sin's "
        "polynomials without their custom gradient (autodiff), or the "
        "backend's cos and sin (backend)",
    )
    parser.add_argument(
        "--device-time",
        action="store_true",
        help="jax only: also the XLA CPU time per step of each member "
        "(jax.profiler traces of --steps steps, --device-repeats times)",
    )
    parser.add_argument("--device-repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="tiny sizes, few steps, eager steps except on jax (seconds)",
    )
    args = parser.parse_args(argv)
    args.pairs = args.pairs or list(PAIRS)
    if args.smoke:
        args.steps, args.repeats, args.warmup = 2, 2, 1
        args.batch_size, args.length, args.width = 4, 6, 4
        args.vocab_size, args.num_heads, args.kernel_size = 50, 2, 3
        # Eager steps are cheaper than tracing a graph for so few steps,
        # except on jax, which compiles every eager op.
        args.run_eagerly = keras.backend.backend() != "jax"
    for name in ("steps", "repeats", "batch_size", "length", "width"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    if args.device_time and keras.backend.backend() != "jax":
        parser.error(
            "--device-time needs KERAS_BACKEND=jax. Received: "
            f"{keras.backend.backend()}"
        )
    if args.device_repeats < 1:
        parser.error("--device-repeats must be positive")
    if args.warmup < 1:
        parser.error("--warmup must be positive (the first step compiles)")
    if args.width % args.num_heads:
        parser.error("--width must be divisible by --num-heads")
    if args.output is None:
        smoke = "smoke_" if args.smoke else ""
        name = f"complex_layer_speed_{smoke}{keras.backend.backend()}.json"
        args.output = HERE / "results" / name
    return args


def settings_of(args):
    return {
        "backend": keras.backend.backend(),
        "keras_version": keras.__version__,
        "pairs": list(args.pairs),
        "steps": args.steps,
        "repeats": args.repeats,
        "warmup": args.warmup,
        "batch_size": args.batch_size,
        "length": args.length,
        "width": args.width,
        "vocab_size": args.vocab_size,
        "num_heads": args.num_heads,
        "key_dim": args.width // args.num_heads,
        "intermediate_dim": 2 * args.width,
        "kernel_size": args.kernel_size,
        "lstm_gate_product": args.lstm_gate_product,
        "jit_compile": args.jit_compile,
        "run_eagerly": args.run_eagerly,
        "optimizer": "adam(1e-3)",
        "loss": "mse",
        "seed": args.seed,
        "former": args.former,
        "embedding_former": args.embedding_former,
        "device_time": args.device_time,
        "device_repeats": args.device_repeats,
        "smoke": args.smoke,
    }


def machine_of():
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
    }


def threads_of():
    """Thread settings that change the times (recorded in the JSON)."""
    threads = {name: os.environ.get(name) for name in THREAD_VARIABLES}
    if keras.backend.backend() == "torch":
        import torch

        threads["torch_num_threads"] = torch.get_num_threads()
    return threads


def main(argv=None):
    args = parse_args(argv)
    backend = keras.backend.backend()
    environment = "".join(
        f"{name}={os.environ[name]} "
        for name in THREAD_VARIABLES
        if name in os.environ
    )
    command = "{}KERAS_BACKEND={} python benchmarks/complex_layer_speed.py {}"
    command = command.format(
        environment, backend, " ".join(sys.argv[1:] if argv is None else argv)
    ).strip()
    keras.utils.set_random_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    load_start = list(os.getloadavg())
    start = time.perf_counter()
    results = []
    for pair in args.pairs:
        result = time_pair(pair, args, rng)
        results.append(result)
        former = ""
        if "ms_complex_former" in result:
            former = (
                f"; former {result['ms_complex_former']:.2f} ms, current / "
                f"former {result['ratio_current_over_former']:.2f}"
            )
        if "device_ratio" in result:
            former += (
                f"; XLA time per step: real {result['device_ms_real']:.2f} "
                f"ms, complex {result['device_ms_complex']:.2f} ms"
            )
            if "device_ms_complex_former" in result:
                former += (
                    f", former {result['device_ms_complex_former']:.2f} ms"
                )
        print(
            f"{pair}: real {result['ms_real']:.2f} ms, complex "
            f"{result['ms_complex']:.2f} ms, ratio {result['ratio']:.2f} "
            f"(parameters {result['params_real']:,} / "
            f"{result['params_complex']:,}){former}",
            flush=True,
        )
    payload = {
        "backend": backend,
        "command": command,
        "settings": settings_of(args),
        "machine": machine_of(),
        "threads": threads_of(),
        "load_average_start": load_start,
        "load_average_end": list(os.getloadavg()),
        "pairs": results,
        "seconds": time.perf_counter() - start,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(payload, indent=2) + "\n")
    print()
    print(f"backend {backend}: {command}")
    print()
    print(markdown_table(results))
    return payload


if __name__ == "__main__":
    main()
