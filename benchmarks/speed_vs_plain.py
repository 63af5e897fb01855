"""Set blocks and models against plain framework code of the same equations.

For each case a block (or model) of `keras_msets` and a plain
implementation of the same equations written directly in the backend's
framework (PyTorch for `KERAS_BACKEND=torch`, JAX for `KERAS_BACKEND=jax`;
independent of Keras and of our layers) get the same weights; their
parameter counts are checked equal and their outputs checked to agree,
then both are timed in the same run:

- `train`: forward, backward and an Adam step on a mean-squared loss (ours:
  `model.train_on_batch`, the step a user's `model.fit` runs; plain: a
  hand-written step, `jax.jit`-compiled on JAX, eager on PyTorch);
- `infer`: a forward pass (ours: `model.predict_on_batch`).

Cases: SAB, PMA (1 seed) and ISAB (16 inducing points) at width 128, 4
heads, batch 32; MSAB (two sets) at width 512, 8 heads, batch 4; the
inducing-point MSAB (`InducedMultisetAttentionBlock`, 16 points per set,
two sets) at width 128; the Multi-Set Transformer (`MultiSetTransformer`,
4 blocks, width 256, 4 heads, PMA pooling, sets of 8-d points, batch 16);
`CMP`: `Dense(3 d)` of 32 features then `ComplexMultiplicationPooling`
with initial weights (d = 64 states, batch 32; plain: sums of the
log-moduli and of `atan2` angles); `COE`: `ComplexOrderEmbedding(10000,
64)` then `ComplexDense(64)` (batch 32; plain: Wang et al. Eq. 5 and
Eq. 10-11, the complex product as four real products); `FEN`: a training
step of `FusionEncoderNetwork` (`sharing="all"`, encoding width 32, MLP
widths 64, 10,000 token ids, batch 32) under its local objective (every
segment's decoder, inputs held constant, Pasteris et al. Sec. 9), with
the segments written out independently in the plain code; its inference
is the root network of Sec. 11; the FEN row also times the step in which
Keras's `call` runs the root network and the objective then every
segment again (`ours_two_pass_train`), the before/after of the model's
single training pass. With `--jit-variant` every row also times our
model compiled with `jit_compile=True` (`ours_jit_*`; on torch Keras
wraps its steps in `torch.compile`), the same weights, its first call
(compilation) untimed and stored. With `--layer-calls-variant` every
row also times our model with every sub-layer of the blocks called as a
layer (`ours_layer_calls_*`) and, where an attention has few queries,
with its keys and values projected (`ours_unfolded_*`;
`SetMultiHeadAttention.fold_keys`); on JAX these are twins of the model
(same weights) compiled inside the variant. Besides the outputs, the
first training step's losses of both sides are checked to agree (same
weights).

The plain attention is the framework's fused kernel
(`torch.nn.functional.scaled_dot_product_attention`,
`jax.nn.dot_product_attention`), as a plain implementation would use it.
Where our attention picks plain matmul + softmax for some of a row's
shapes (torch; `keras_msets.layers._set_multi_head_attention`), the row
also times our step with the fused kernel everywhere (Keras's own choice:
`ours_fused_*`), the before/after of that choice. The steps of a row are
timed interleaved (each repeat runs ours, plain and the fused variant in
turn), so that they share the load of a shared machine; medians of
`--repeats` after `--warmup`. The float32 matrix-product rate (FLOP/s of
a 2048 x 2048 product) is measured at the start and after every row, and
each row's training FLOP/s (3x the forward FLOPs) is given as a fraction
of the rate measured after it. The load average is stored before and
after each row. The JSON is rewritten after every row (`complete` says
whether the run finished).

    KERAS_BACKEND=torch python benchmarks/speed_vs_plain.py --threads 1 \\
        --warmup 1 --repeats 3 \\
        --output benchmarks/results/speed_vs_plain_torch_cpu.json
    KERAS_BACKEND=jax python benchmarks/speed_vs_plain.py --threads 1 \\
        --warmup 1 --repeats 3 \\
        --output benchmarks/results/speed_vs_plain_jax_cpu.json

On a GPU (where the backend sees a CUDA device, as Keras does) both
sides run there: the plain parameters and inputs are put on it and ours
reads its inputs as tensors already on it; every timed step ends with its
result copied back (the loss, the outputs), which waits for the GPU; the
reference product is 8192 x 8192. `--batch` sets every case's batch:

    KERAS_BACKEND=torch python benchmarks/speed_vs_plain.py --batch 64 \\
        --output benchmarks/results/gpu/speed_vs_plain_torch_gpu.json

`--threads` sets torch's intra-op threads (for JAX set
`XLA_FLAGS=--xla_cpu_multi_thread_eigen=false` and
`OMP_NUM_THREADS`). `--quick` runs the smallest size of each case (a
check, not a result).
"""

import argparse
import functools
import json
import os
import platform
import statistics
import time
from pathlib import Path

import keras
import numpy as np

from keras_msets import layers
from keras_msets.layers import _feed_forward_block
from keras_msets.layers import _multihead_attention_block
from keras_msets.layers import _multiset_block
from keras_msets.layers import _set_multi_head_attention as kernels

BACKEND = keras.backend.backend()
EPSILON = 1e-5  # the blocks' layer-norm epsilon


def accelerator():
    """The GPU this backend computes on (its name), or None on the CPU.

    Keras places tensors on the backend's default device: a CUDA GPU where
    torch or JAX sees one. The plain code is put on the same device.
    """
    if BACKEND == "torch":
        import torch

        if torch.cuda.is_available():
            return torch.cuda.get_device_name(0)
        return None
    import jax

    device = jax.devices()[0]
    return None if device.platform == "cpu" else device.device_kind


def _torch_device():
    import torch

    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


# -- weights of our blocks, as numpy ---------------------------------------


def _np(variable):
    return np.asarray(keras.ops.convert_to_numpy(variable), "float32")


def _dense(layer):
    return {"kernel": _np(layer.kernel), "bias": _np(layer.bias)}


def _norm(layer):
    return {"gamma": _np(layer.gamma), "beta": _np(layer.beta)}


def mab_weights(block):
    """The weights of one attention block `MAB(X, Y)` (post-LN)."""
    attention = block.attention
    return {
        "query": _dense(attention._query_dense),
        "key": _dense(attention._key_dense),
        "value": _dense(attention._value_dense),
        "output": _dense(attention._output_dense),
        "attention_norm": _norm(block.attention_norm),
        "ff_hidden": _dense(block.ff_hidden),
        "ff_output": _dense(block.ff_output),
        "output_norm": _norm(block.output_norm),
    }


# -- cases: (name, size, our model builder, weights reader, plain fn) ------


def _case_inputs(rng, batch, n, dim, sets=1):
    return [
        rng.normal(size=(batch, n, dim)).astype("float32") for _ in range(sets)
    ]


CASES = {
    # name: (sizes, batch, dim, heads)
    "SAB": ((100, 1000), 32, 128, 4),
    "PMA": ((100, 1000, 10000), 32, 128, 4),
    "ISAB": ((100, 1000, 10000), 32, 128, 4),
    "MSAB": ((512,), 4, 512, 8),
    "MST": ((125,), 16, 256, 4),
    "IMSAB": ((100, 1000, 10000), 32, 128, 4),
    # sizes: set sizes n (CMP), sequence lengths (COE, FEN); dim: the
    # complex width d (CMP: d states; COE: d complex dimensions) or the
    # FEN's encoding width; heads: unused
    "CMP": ((100, 1000, 10000), 32, 64, 0),
    "COE": ((100, 1000), 32, 64, 0),
    "FEN": ((64, 256), 32, 32, 0),
}
QUICK_SIZES = {
    "SAB": (100,),
    "ISAB": (200,),
    "PMA": (100,),
    "MSAB": (64,),
    "IMSAB": (100,),
    "MST": (30,),
    "CMP": (100,),
    "COE": (50,),
    "FEN": (16,),
}
# Token-id cases: inputs `[batch, n]` of ids below `VOCABULARY`.
ID_CASES = ("COE", "FEN")
VOCABULARY = 10000
CMP_FEATURES = 32  # CMP: Dense(3 d) of 32 features, then the pooling
FEN_UNITS = 64  # the FEN's hidden widths (alpha, beta, omega)
# Cases on two sets (inputs: a list of two `[batch, n, dim]` arrays).
TWO_SETS = ("MSAB", "IMSAB", "MST")
INDUCING_POINTS = 16
MST_INPUT_DIM = 8  # the Multi-Set Transformer reads sets of 8-d points
# How far ours and plain may differ (the outputs' largest absolute
# difference, the first losses' relative one) on the CPU and on a GPU,
# where JAX computes float32 products in TF32 by default (both sides).
TOLERANCES = {False: (1e-3, 1e-4), True: (1e-2, 1e-2)}
# The float32 matrix product whose rate is the reference (n x n x n).
GEMM_SIZE = 2048
GEMM_SIZE_GPU = 8192  # long enough to time on a GPU
MST_BLOCKS = 4


def msab_weights(layer):
    """The weights of a two-set `MultisetAttentionBlock` (no sharing)."""
    return {
        "self": [mab_weights(layer._block(k, k)) for k in (0, 1)],
        "cross": [mab_weights(layer._block(k, 1 - k)) for k in (0, 1)],
        "merge": [_dense(d) for d in layer.merge_denses],
        "merge_norm": [_norm(n) for n in layer.merge_norms],
    }


def imsab_weights(layer):
    """`msab_weights` plus each set's inducing points and summary block."""
    return {
        **msab_weights(layer),
        "inducing_points": [_np(p) for p in layer.inducing_points],
        "inducing_blocks": [mab_weights(b) for b in layer.inducing_blocks],
    }


def pma_weights(layer):
    return {"seeds": _np(layer.seeds), "block": mab_weights(layer.block)}


def build_ours(case, dim, heads):
    """Our block or model (unbuilt) and a function from it to its weights."""
    if case == "SAB":
        layer = layers.SetAttentionBlock(num_heads=heads)
        return layer, lambda: {"block": mab_weights(layer.block)}
    if case == "ISAB":
        layer = layers.InducedSetAttentionBlock(
            num_heads=heads, num_inducing_points=INDUCING_POINTS
        )
        return layer, lambda: {
            "inducing_points": _np(layer.inducing_points),
            "inducing_block": mab_weights(layer.inducing_block),
            "output_block": mab_weights(layer.output_block),
        }
    if case == "PMA":
        layer = layers.PoolingByMultiheadAttention(num_heads=heads, num_seeds=1)
        return layer, lambda: pma_weights(layer)
    if case == "MSAB":
        layer = layers.MultisetAttentionBlock(num_heads=heads)
        return layer, lambda: msab_weights(layer)
    if case == "IMSAB":
        layer = layers.InducedMultisetAttentionBlock(
            INDUCING_POINTS, num_heads=heads
        )
        return layer, lambda: imsab_weights(layer)
    if case == "MST":
        from keras_msets.models import MultiSetTransformer

        model = MultiSetTransformer(
            latent_dim=dim, num_heads=heads, num_blocks=MST_BLOCKS
        )

        def weights():
            return {
                "input_projection": _dense(model.input_projections[0]),
                "blocks": [msab_weights(b) for b in model.blocks],
                "poolings": [pma_weights(p) for p in model.poolings],
                "decoder_hidden": [_dense(d) for d in model.decoder_hidden],
                "decoder_output": _dense(model.decoder_output),
            }

        return model, weights
    if case == "CMP":
        dense = keras.layers.Dense(3 * dim, name="log_polar")
        pooling = layers.ComplexMultiplicationPooling(use_initial_weights=True)

        def cmp(x):
            return pooling(dense(x))

        return cmp, lambda: {
            "dense": _dense(dense),
            "initial_log_modulus": _np(pooling.initial_log_modulus),
            "initial_phase": _np(pooling.initial_phase),
        }
    if case == "COE":
        embedding = layers.ComplexOrderEmbedding(VOCABULARY, dim)
        dense = layers.ComplexDense(dim)

        def coe(ids):
            return dense(embedding(ids))

        return coe, lambda: {
            "frequency": _np(embedding.frequency),
            "amplitude": _np(embedding.amplitude),
            "a": _np(dense.real_kernel),
            "b": _np(dense.imag_kernel),
            "c": _np(dense.real_bias),
            "d": _np(dense.imag_bias),
        }
    if case == "FEN":
        return None, None  # built per length, see `_ours_model`
    raise ValueError(case)


def _fen(n, dim):
    from keras_msets.models import FusionEncoderNetwork

    return FusionEncoderNetwork(
        sequence_length=n,
        vocabulary_size=VOCABULARY,
        output_dim=1,
        encoding_dim=dim,
        token_encoder_units=[FEN_UNITS],
        fusion_encoder_units=[FEN_UNITS],
        decoder_units=[FEN_UNITS],
        sharing="all",
    )


def fen_two_pass(model):
    """A copy of the FEN `model` whose training step computes twice.

    Its `call` always runs the root network, so Keras's step runs it and
    then the local objective computes every segment again: the step
    before `call(x, training=True)` handed its pass to the objective.
    Same weights and optimizer as `model`.
    """
    from keras_msets.models import FusionEncoderNetwork

    class TwoPassFEN(FusionEncoderNetwork):
        def call(self, inputs, training=None):
            return super().call(inputs)

    copy = TwoPassFEN.from_config(model.get_config())
    copy.build()
    copy.set_weights(model.get_weights())
    copy.compile(keras.optimizers.Adam(1e-3), "mse")
    return copy


def fen_weights(model):
    """The three MLPs of a `sharing="all"` FEN (group 0 of each)."""

    def mlp(layer):
        return [
            {"kernel": _np(k)[0], "bias": _np(b)[0]}
            for k, b in zip(layer.kernels, layer.biases, strict=True)
        ]

    return {
        "table": _np(model.token_encoder.table)[0],
        "token": mlp(model.token_encoder),
        "fusion": mlp(model.fusion_encoder),
        "decoder": mlp(model.decoder),
    }


def fen_plan(n):
    """The FEN's segments for length `n` (a power of two), from the paper.

    Written out here, independent of `keras_msets.models.FusionSegments`:
    the singletons `(i, i)` are rows 1..n of the encoding table (row 0 is
    the empty segment); each vertex `[a, b]` of height h (middle m) adds
    its prefixes `(a, j)`, `m < j <= b`, and suffixes `(i, b)`,
    `a < i <= m`, split at m. Returns per height the table rows of the
    two parts, and per segment the rows of its own encoding and of its
    left and right contexts `(1, i - 1)`, `(j + 1, n)`.
    """
    index = {(i, i): i for i in range(1, n + 1)}
    index[(1, 0)] = index[(n + 1, n)] = 0
    levels, size = [], 2
    while size <= n:
        left, right = [], []
        for a in range(1, n + 1, size):
            b, m = a + size - 1, a + size // 2 - 1
            new = [(a, j) for j in range(m + 1, b + 1)]
            new += [(i, b) for i in range(a + 1, m + 1)]
            for i, j in new:
                index[(i, j)] = len(index) - 1
                left.append(index[(i, m)])
                right.append(index[(m + 1, j)])
        levels.append((np.array(left), np.array(right)))
        size *= 2
    segments = sorted((k, s) for s, k in index.items() if k > 0)
    before = np.array([index[(1, i - 1)] for _, (i, _) in segments])
    after = np.array([index[(j + 1, n)] for _, (_, j) in segments])
    return levels, before, after


def flops_mab(batch, n, m, dim, ff):
    """Forward FLOPs of `MAB(X [n, dim], Y [m, dim])` per batch."""
    projections = 2 * dim * dim * (2 * n + 2 * m)  # q, output; k, v
    attention = 2 * 2 * n * m * dim
    feedforward = 2 * 2 * n * dim * ff
    return batch * (projections + attention + feedforward)


def flops_forward(case, batch, n, dim):
    ff = 2 * dim
    m = INDUCING_POINTS
    merge = batch * 2 * n * (2 * dim) * dim  # one set's merge dense
    if case == "SAB":
        return flops_mab(batch, n, n, dim, ff)
    if case == "ISAB":
        return flops_mab(batch, m, n, dim, ff) + flops_mab(batch, n, m, dim, ff)
    if case == "PMA":
        return flops_mab(batch, 1, n, dim, ff)
    if case == "MSAB":
        return 2 * (2 * flops_mab(batch, n, n, dim, ff) + merge)
    if case == "IMSAB":
        summary = flops_mab(batch, m, n, dim, ff)
        return 2 * (summary + 2 * flops_mab(batch, n, m, dim, ff) + merge)
    if case == "MST":
        projection = 2 * batch * 2 * n * MST_INPUT_DIM * dim
        blocks = MST_BLOCKS * flops_forward("MSAB", batch, n, dim)
        pooling = 2 * flops_mab(batch, 1, n, dim, ff)
        decoder = 2 * batch * (2 * dim * ff + ff)
        return projection + blocks + pooling + decoder
    if case == "CMP":
        return batch * 2 * n * CMP_FEATURES * 3 * dim
    if case == "COE":
        return batch * n * 2 * (2 * dim) * (2 * dim)
    if case == "FEN":
        u, segments = FEN_UNITS, n * int(np.log2(n)) + 1
        token = n * 2 * u * dim
        fusion = (segments - n) * 2 * (2 * dim * u + u * dim)
        decoder = segments * 2 * (3 * dim * u + u)
        return batch * (token + fusion + decoder)
    raise ValueError(case)


def plain_forward(case, heads, fw):
    """The plain forward pass `forward(params, inputs)` of `case`.

    `fw` holds the framework's primitives (`matmul`, `relu`,
    `layer_norm`, `attention`, `concat`, `broadcast`, `heads_split`,
    `heads_merge`): the equations are written once, the arithmetic is the
    framework's own.
    """

    def dense(z, w):
        return fw.matmul(z, w["kernel"]) + w["bias"]

    def mab(p, x, y):
        # kernels [dim, heads, key_dim]: as one [dim, heads * key_dim] product
        q = fw.heads_split(dense(x, fw.flat_in(p["query"])), heads)
        k = fw.heads_split(dense(y, fw.flat_in(p["key"])), heads)
        v = fw.heads_split(dense(y, fw.flat_in(p["value"])), heads)
        o = fw.heads_merge(fw.attention(q, k, v))
        h = fw.layer_norm(
            x + dense(o, fw.flat_out(p["output"])), p["attention_norm"]
        )
        f = dense(fw.relu(dense(h, p["ff_hidden"])), p["ff_output"])
        return fw.layer_norm(h + f, p["output_norm"])

    def merge(p, k, x, terms):
        merged = fw.relu(dense(fw.concat(terms, -1), p["merge"][k]))
        return fw.layer_norm(x + merged, p["merge_norm"][k])

    def msab(p, sets, values=None):
        values = sets if values is None else values
        return [
            merge(
                p,
                k,
                sets[k],
                [
                    mab(p["self"][k], sets[k], values[k]),
                    mab(p["cross"][k], sets[k], values[1 - k]),
                ],
            )
            for k in (0, 1)
        ]

    def imsab(p, sets):
        summaries = [
            mab(
                p["inducing_blocks"][j],
                fw.broadcast(p["inducing_points"][j], x),
                x,
            )
            for j, x in enumerate(sets)
        ]
        return msab(p, sets, summaries)

    def pma(p, x):
        return mab(p["block"], fw.broadcast(p["seeds"], x), x)

    def mst(p, sets):
        hidden = [dense(x, p["input_projection"]) for x in sets]
        for block in p["blocks"]:
            hidden = msab(block, hidden)
        pooled = [
            pma(pool, h)[:, 0]
            for pool, h in zip(p["poolings"], hidden, strict=True)
        ]
        h = fw.concat(pooled, -1)
        for layer in p["decoder_hidden"]:
            h = fw.relu(dense(h, layer))
        return dense(h, p["decoder_output"])

    def mlp(layers, x, last):
        for k, layer in enumerate(layers):
            x = dense(x, layer)
            x = last(x) if k == len(layers) - 1 else fw.relu(x)
        return x

    def cmp(p, x):
        # Dense to [r, a, b]; prod_k e^{r_k} e^{i theta_k}, theta = atan2(b, a)
        z = dense(x, p["dense"])
        d = z.shape[-1] // 3
        r, a, b = z[..., :d], z[..., d : 2 * d], z[..., 2 * d :]
        log_modulus = fw.sum(r, 1) + p["initial_log_modulus"]
        phase = fw.sum(fw.atan2(b, a), 1) + p["initial_phase"]
        return fw.concat([fw.cos(phase), fw.sin(phase), log_modulus], -1)

    def coe(p, ids):
        # Wang et al. Eq. 5: r_j exp(i omega_j pos), pos = 1, 2, ...; then
        # Eq. 10-11: (A x - B y + c) + i (B x + A y + d), four products.
        positions = fw.positions(ids.shape[1])
        r = fw.take(p["amplitude"], ids)
        theta = fw.take(p["frequency"], ids) * positions
        x, y = r * fw.cos(theta), r * fw.sin(theta)
        real = x @ p["a"] - y @ p["b"] + p["c"]
        imag = x @ p["b"] + y @ p["a"] + p["d"]
        return fw.concat([real, imag], -1)

    def fen_encodings(p, ids, plan):
        tokens = fw.take(p["table"], ids)
        table = mlp(p["token"], fw.relu(tokens), fw.tanh)
        table = fw.concat([table[:, :1] * 0.0, table], 1)
        for left, right in plan[0]:
            pair = fw.concat(
                [
                    fw.stop_gradient(table[:, fw.index(left)]),
                    fw.stop_gradient(table[:, fw.index(right)]),
                ],
                -1,
            )
            table = fw.concat([table, mlp(p["fusion"], pair, fw.tanh)], 1)
        return table

    def fen_segment_outputs(p, ids):
        # Pasteris et al. Sec. 9: every encoding entering a fusion encoder
        # or a decoder held constant, except a segment's own.
        plan = fw.fen_plan(ids.shape[1])
        table = fen_encodings(p, ids, plan)
        before = fw.stop_gradient(table[:, fw.index(plan[1])])
        after = fw.stop_gradient(table[:, fw.index(plan[2])])
        x = fw.concat([before, table[:, 1:], after], -1)
        return mlp(p["decoder"], x, lambda z: z)

    def fen_root(p, ids):
        # Sec. 11: the tree's vertices only, then omega(0, eps_1N, 0).
        x = mlp(p["token"], fw.relu(fw.take(p["table"], ids)), fw.tanh)
        while x.shape[1] > 1:
            x = x.reshape(x.shape[0], x.shape[1] // 2, -1)
            x = mlp(p["fusion"], x, fw.tanh)
        zeros = x * 0.0
        x = fw.concat([zeros, x, zeros], -1)
        return mlp(p["decoder"], x, lambda z: z)[:, 0]

    def forward(p, inputs, training=False):
        if case == "FEN":
            if training:
                return fen_segment_outputs(p, inputs[0])
            return fen_root(p, inputs[0])
        if case == "CMP":
            return cmp(p, inputs[0])
        if case == "COE":
            return coe(p, inputs[0])
        if case == "SAB":
            return mab(p["block"], inputs[0], inputs[0])
        if case == "ISAB":
            x = inputs[0]
            points = fw.broadcast(p["inducing_points"], x)
            summary = mab(p["inducing_block"], points, x)
            return mab(p["output_block"], x, summary)
        if case == "PMA":
            return pma(p, inputs[0])
        if case == "MSAB":
            return fw.concat(msab(p, inputs), 1)
        if case == "IMSAB":
            return fw.concat(imsab(p, inputs), 1)
        if case == "MST":
            return mst(p, inputs)
        raise ValueError(case)

    return forward


def training_loss(case, outputs, target):
    """The mean squared error; the FEN's is its local objective's: every
    segment's decoder against the sequence's target, summed over the
    segments (Keras's mean over `batch * segments` rows, times their
    number)."""
    if case == "FEN":
        error = (outputs - target[:, None]) ** 2
        return error.mean() * outputs.shape[1]
    return ((outputs - target) ** 2).mean()


# -- plain PyTorch ----------------------------------------------------------


class _ArrayOps:
    """What the plain equations need of an array library, the same for
    torch tensors and JAX arrays; each framework adds `relu`, `concat` and
    `heads_split`."""

    @staticmethod
    def matmul(a, b):
        return a @ b

    @staticmethod
    def flat_in(w):  # kernel [dim, heads, key_dim]
        kernel = w["kernel"]
        return {
            "kernel": kernel.reshape(kernel.shape[0], -1),
            "bias": w["bias"].reshape(-1),
        }

    @staticmethod
    def take(table, ids):
        return table[ids]

    @staticmethod
    def fen_plan(n):
        return fen_plan(n)

    @staticmethod
    def flat_out(w):  # kernel [heads, key_dim, dim]
        kernel = w["kernel"]
        return {
            "kernel": kernel.reshape(-1, kernel.shape[-1]),
            "bias": w["bias"],
        }


def plain_torch(case, tree, heads):
    import torch
    import torch.nn.functional as F

    params = []
    device = _torch_device()

    def tensor(a):
        t = torch.tensor(a, device=device, requires_grad=True)
        params.append(t)
        return t

    tree = _map_tree(tree, tensor)

    class fw(_ArrayOps):
        relu = staticmethod(torch.relu)
        concat = staticmethod(torch.cat)
        tanh = staticmethod(torch.tanh)
        cos = staticmethod(torch.cos)
        sin = staticmethod(torch.sin)
        atan2 = staticmethod(torch.atan2)
        sum = staticmethod(torch.sum)

        @staticmethod
        def stop_gradient(z):
            return z.detach()

        @staticmethod
        def index(rows):
            return torch.from_numpy(rows).to(device)

        @staticmethod
        def positions(n):
            return torch.arange(1, n + 1, dtype=torch.float32, device=device)[
                :, None
            ]

        @staticmethod
        def heads_split(z, heads):  # [b, n, h * k] -> [b, h, n, k]
            return z.reshape(z.shape[0], z.shape[1], heads, -1).transpose(1, 2)

        @staticmethod
        def heads_merge(z):  # [b, h, n, k] -> [b, n, h * k]
            return z.transpose(1, 2).reshape(z.shape[0], z.shape[2], -1)

        @staticmethod
        def attention(q, k, v):
            return F.scaled_dot_product_attention(q, k, v)

        @staticmethod
        def layer_norm(x, p):
            return F.layer_norm(x, x.shape[-1:], p["gamma"], p["beta"], EPSILON)

        @staticmethod
        def broadcast(w, x):
            return w.expand(x.shape[0], -1, -1)

    forward = plain_forward(case, heads, fw)
    optimizer = torch.optim.Adam(params, lr=1e-3)

    def train(inputs, target):
        optimizer.zero_grad(set_to_none=True)
        loss = training_loss(case, forward(tree, inputs, True), target)
        loss.backward()
        optimizer.step()
        return float(loss.detach())

    def infer(inputs):
        with torch.no_grad():
            return forward(tree, inputs).cpu().numpy()

    def convert(arrays):
        return [
            torch.from_numpy(
                a.astype("int64") if a.dtype.kind == "i" else a
            ).to(device)
            for a in arrays
        ]

    return train, infer, convert, sum(p.numel() for p in params)


def torch_gemm_flops():
    import torch

    size = GEMM_SIZE_GPU if accelerator() else GEMM_SIZE
    device = _torch_device()
    a = torch.randn(size, size, device=device)
    b = torch.randn(size, size, device=device)

    def product():
        c = a @ b
        if device.type == "cuda":
            torch.cuda.synchronize()
        return c

    return _gemm_rate(product, size)


# -- plain JAX --------------------------------------------------------------


def plain_jax(case, tree, heads):
    import jax
    import jax.numpy as jnp

    params = _map_tree(tree, jnp.asarray)

    class fw(_ArrayOps):
        relu = staticmethod(jax.nn.relu)
        concat = staticmethod(jnp.concatenate)
        tanh = staticmethod(jnp.tanh)
        cos = staticmethod(jnp.cos)
        sin = staticmethod(jnp.sin)
        atan2 = staticmethod(jnp.arctan2)
        sum = staticmethod(jnp.sum)
        stop_gradient = staticmethod(jax.lax.stop_gradient)

        @staticmethod
        def index(rows):
            return rows

        @staticmethod
        def positions(n):
            return jnp.arange(1, n + 1, dtype="float32")[:, None]

        @staticmethod
        def heads_split(z, heads):  # [b, n, h * k] -> [b, n, h, k]
            return z.reshape(z.shape[0], z.shape[1], heads, -1)

        @staticmethod
        def heads_merge(z):  # [b, n, h, k] -> [b, n, h * k]
            return z.reshape(z.shape[0], z.shape[1], -1)

        @staticmethod
        def attention(q, k, v):
            return jax.nn.dot_product_attention(q, k, v)

        @staticmethod
        def layer_norm(x, p):
            mean = jnp.mean(x, -1, keepdims=True)
            var = jnp.mean((x - mean) ** 2, -1, keepdims=True)
            normed = (x - mean) / jnp.sqrt(var + EPSILON)
            return normed * p["gamma"] + p["beta"]

        @staticmethod
        def broadcast(w, x):
            return jnp.broadcast_to(w, (x.shape[0],) + w.shape)

    forward = plain_forward(case, heads, fw)

    def loss_fn(params, inputs, target):
        return training_loss(case, forward(params, inputs, True), target)

    # Adam, written out (beta1 0.9, beta2 0.999, epsilon 1e-7 as Keras).
    def adam(params, grads, state, lr=1e-3, b1=0.9, b2=0.999, eps=1e-7):
        step, m, v = state
        step = step + 1
        m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
        v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
        scale = lr * jnp.sqrt(1 - b2**step) / (1 - b1**step)
        params = jax.tree.map(
            lambda p, m, v: p - scale * m / (jnp.sqrt(v) + eps), params, m, v
        )
        return params, (step, m, v)

    @jax.jit
    def step(params, state, inputs, target):
        loss, grads = jax.value_and_grad(loss_fn)(params, inputs, target)
        params, state = adam(params, grads, state)
        return params, state, loss

    zeros = jax.tree.map(jnp.zeros_like, params)
    holder = {"params": params, "state": (0.0, zeros, zeros)}

    def train(inputs, target):
        holder["params"], holder["state"], loss = step(
            holder["params"], holder["state"], inputs, target
        )
        return float(loss)

    jitted = jax.jit(forward)

    def infer(inputs):
        return np.asarray(jitted(holder["params"], inputs))

    def convert(arrays):
        return [jnp.asarray(a) for a in arrays]

    size = sum(int(np.prod(a.shape)) for a in jax.tree.leaves(params))
    return train, infer, convert, size


def jax_gemm_flops():
    import jax
    import jax.numpy as jnp

    size = GEMM_SIZE_GPU if accelerator() else GEMM_SIZE
    a = jnp.ones((size, size), "float32")
    b = jnp.ones((size, size), "float32")
    product = jax.jit(lambda a, b: a @ b)
    return _gemm_rate(lambda: product(a, b).block_until_ready(), size)


# -- timing -----------------------------------------------------------------


def _map_tree(tree, fn):
    if isinstance(tree, dict):
        return {k: _map_tree(v, fn) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_map_tree(v, fn) for v in tree]
    return fn(tree)


def _gemm_rate(fn, size, repeats=10):
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 2 * size**3 / statistics.median(times)


def _median_times(fns, warmup, repeats):
    """Median seconds of each of `fns` (a dict), timed interleaved.

    Each repeat runs every function once in turn, so that all of them
    see the same load of a shared machine.
    """
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def _fused_only(fn):
    """`fn` run with our attention always on the fused kernel (as Keras)."""

    def run():
        rule = kernels.use_plain_kernel
        kernels.use_plain_kernel = lambda *args, **kwargs: False
        try:
            return fn()
        finally:
            kernels.use_plain_kernel = rule

    return run


# The modules whose blocks ask `writes_out` whether to replace their
# sub-layers' calls by the same arithmetic on their weights.
WRITES_OUT_MODULES = (
    _feed_forward_block,
    _multihead_attention_block,
    _multiset_block,
    kernels,
)


def _layer_calls(fn):
    """`fn` run with every sub-layer of our blocks called as a layer."""

    def run():
        saved = [
            (module, module.writes_out)
            for module in WRITES_OUT_MODULES
            if hasattr(module, "writes_out")
        ]
        for module, _ in saved:
            module.writes_out = lambda *layers: False
        try:
            return fn()
        finally:
            for module, rule in saved:
                module.writes_out = rule

    return run


def _unfolded(fn):
    """`fn` run with every attention on projected keys (no `fold_keys`)."""

    def run():
        rule = kernels.folds_keys
        kernels.folds_keys = lambda *args: False
        try:
            return fn()
        finally:
            kernels.folds_keys = rule

    return run


def _folds_somewhere(case, n, dim, heads):
    return any(
        kernels.folds_keys(q, k, dim // heads)
        for q, k in attention_shapes(case, n)
    )


def _features(case, dim):
    return {"MST": MST_INPUT_DIM, "CMP": CMP_FEATURES}.get(case, dim)


def _ours_model(layer, case, n, dim):
    if case == "FEN":
        model = _fen(n, dim)
        model.build()
        model.compile(keras.optimizers.Adam(1e-3), "mse")
        return model
    if case in ID_CASES:
        inputs = [keras.Input((n,), dtype="int32")]
    else:
        sets = 2 if case in TWO_SETS else 1
        features = _features(case, dim)
        inputs = [keras.Input((n, features)) for _ in range(sets)]
    if case == "MST":
        outputs = layer(inputs)
    elif len(inputs) > 1:
        outputs = keras.ops.concatenate(layer(inputs), axis=1)
    else:
        outputs = layer(inputs[0])
    model = keras.Model(inputs, outputs)
    model.compile(keras.optimizers.Adam(1e-3), "mse")
    return model


def attention_shapes(case, n):
    """The (queries, keys) sizes of the attentions in one step of `case`."""
    m = INDUCING_POINTS
    return {
        "SAB": [(n, n)],
        "ISAB": [(m, n), (n, m)],
        "PMA": [(1, n)],
        "MSAB": [(n, n)],
        "IMSAB": [(m, n), (n, m)],
        "MST": [(n, n), (1, n)],
    }.get(case, [])


def _chooses_plain_kernel(case, n):
    on_gpu = BACKEND == "torch" and accelerator() is not None
    return any(
        kernels.use_plain_kernel(q, k, on_gpu=on_gpu)
        for q, k in attention_shapes(case, n)
    )


def _jit_twin(model, case, n, dim, heads, x, target):
    """`model` rebuilt with the same weights, compiled with `jit_compile`.

    On torch Keras then wraps its train and predict steps in
    `torch.compile`; the first calls (compilation) run here, untimed.
    """
    layer, _ = build_ours(case, dim, heads)
    twin = _ours_model(layer, case, n, dim)
    twin.set_weights(model.get_weights())
    twin.compile(keras.optimizers.Adam(1e-3), "mse", jit_compile=True)
    start = time.perf_counter()
    twin.train_on_batch(x, target)
    twin.predict_on_batch(x)
    return twin, time.perf_counter() - start


def _traced_twin(model, case, n, dim, heads, x, target, variant):
    """`model` rebuilt with the same weights, its steps traced in `variant`.

    On JAX a step is compiled at its first call and then keeps the path
    it was traced with, so a variant (`_layer_calls`, `_unfolded`) is a
    second model whose first calls run inside it.
    """
    layer, _ = build_ours(case, dim, heads)
    twin = _ours_model(layer, case, n, dim)
    twin.set_weights(model.get_weights())

    def first_calls():
        twin.train_on_batch(x, target)
        twin.predict_on_batch(x)

    variant(first_calls)()
    return twin


def run_case(
    case,
    n,
    warmup,
    repeats,
    seed=0,
    jit_variant=False,
    layer_calls_variant=False,
    batch=None,
):
    _, case_batch, dim, heads = CASES[case]
    batch = batch or case_batch
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    sets = 2 if case in TWO_SETS else 1
    if case in ID_CASES:
        arrays = [rng.integers(1, VOCABULARY, (batch, n)).astype("int32")]
    else:
        arrays = _case_inputs(rng, batch, n, _features(case, dim), sets)
    layer, weights = build_ours(case, dim, heads)
    model = _ours_model(layer, case, n, dim)
    if case == "FEN":
        weights = lambda: fen_weights(model)  # noqa: E731
    plain = plain_torch if BACKEND == "torch" else plain_jax
    train, infer, convert, plain_params = plain(case, weights(), heads)
    if plain_params != model.count_params():
        raise AssertionError(
            f"{case}: {plain_params} plain parameters against "
            f"{model.count_params()} of ours"
        )
    plain_inputs = convert(arrays)
    x = arrays if sets > 1 else arrays[0]
    on_device = accelerator() is not None
    if on_device:
        # Ours also reads tensors already on the GPU, as the plain code.
        x = keras.tree.map_structure(keras.ops.convert_to_tensor, x)
    ours_out = np.asarray(model.predict_on_batch(x))
    plain_out = infer(plain_inputs)
    difference = float(np.max(np.abs(ours_out - plain_out)))
    output_tolerance, loss_tolerance = TOLERANCES[on_device]
    if difference > output_tolerance:
        raise AssertionError(
            f"{case} n={n}: ours and plain differ by {difference:.3g}"
        )
    target = np.zeros_like(ours_out)
    plain_target = convert([target])[0]
    if on_device:
        target = keras.ops.convert_to_tensor(target)
    # The training losses on the same weights (the first step's, before
    # its update): the training equations agree too.
    ours_loss = float(model.train_on_batch(x, target))
    plain_loss = train(plain_inputs, plain_target)
    loss_difference = abs(ours_loss - plain_loss) / max(abs(plain_loss), 1)
    if loss_difference > loss_tolerance:
        raise AssertionError(
            f"{case} n={n}: training losses {ours_loss:.6g} (ours) and "
            f"{plain_loss:.6g} (plain) differ"
        )
    twin, jit_first_seconds = None, None
    if jit_variant:
        twin, jit_first_seconds = _jit_twin(
            model, case, n, dim, heads, x, target
        )
    load_before = os.getloadavg()
    kernel_choice = _chooses_plain_kernel(case, n)
    folds = _folds_somewhere(case, n, dim, heads)
    variants = {}
    if layer_calls_variant:
        # The same model with every sub-layer called as a layer, and
        # (written out) with the keys and values projected.
        variants["layer_calls"] = _layer_calls
        if folds:
            variants["unfolded"] = _unfolded
    twins = {}
    if BACKEND == "jax":
        twins = {
            name: _traced_twin(model, case, n, dim, heads, x, target, wrap)
            for name, wrap in variants.items()
        }
    steps = {
        "train": (
            lambda: model.train_on_batch(x, target),
            lambda: train(plain_inputs, plain_target),
        ),
        "infer": (
            lambda: model.predict_on_batch(x),
            lambda: infer(plain_inputs),
        ),
    }
    times = {}
    for step, (ours, plain_step) in steps.items():
        fns = {f"ours_{step}": ours, f"plain_{step}": plain_step}
        if kernel_choice:
            # The same model with Keras's kernel choice (always fused).
            fns[f"ours_fused_{step}"] = _fused_only(ours)
        for name, wrap in variants.items():
            if name not in twins:
                fns[f"ours_{name}_{step}"] = wrap(ours)
            elif step == "train":
                fns[f"ours_{name}_{step}"] = functools.partial(
                    twins[name].train_on_batch, x, target
                )
            else:
                fns[f"ours_{name}_{step}"] = functools.partial(
                    twins[name].predict_on_batch, x
                )
        if twin is not None:
            fns[f"ours_jit_{step}"] = (
                functools.partial(twin.train_on_batch, x, target)
                if step == "train"
                else functools.partial(twin.predict_on_batch, x)
            )
        if case == "FEN" and step == "train":
            fns["ours_two_pass_train"] = functools.partial(
                fen_two_pass(model).train_on_batch, x, target
            )
        times.update(_median_times(fns, warmup, repeats))
    flops = 3 * flops_forward(case, batch, n, dim)  # forward + backward
    row = {
        "case": case,
        "n": n,
        "batch": batch,
        "dim": dim,
        "heads": heads,
        "parameters": plain_params,
        "plain_kernel_somewhere": kernel_choice,
        "max_output_difference": difference,
        "training_loss_relative_difference": loss_difference,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        **{k: round(v, 6) for k, v in times.items()},
        "train_ratio": round(times["ours_train"] / times["plain_train"], 3),
        "infer_ratio": round(times["ours_infer"] / times["plain_infer"], 3),
        "ours_train_flops_per_s": flops / times["ours_train"],
        "plain_train_flops_per_s": flops / times["plain_train"],
    }
    if twin is not None:
        row["jit_first_call_seconds"] = round(jit_first_seconds, 3)
        for step in ("train", "infer"):
            row[f"jit_{step}_ratio"] = round(
                times[f"ours_jit_{step}"] / times[f"plain_{step}"], 3
            )
    if case == "FEN":
        row["two_pass_train_ratio"] = round(
            times["ours_two_pass_train"] / times["plain_train"], 3
        )
    if layer_calls_variant:
        for step in ("train", "infer"):
            for variant in ("layer_calls", "unfolded"):
                if f"ours_{variant}_{step}" in times:
                    row[f"{variant}_{step}_ratio"] = round(
                        times[f"ours_{variant}_{step}"]
                        / times[f"plain_{step}"],
                        3,
                    )
    if kernel_choice:
        row["fused_train_ratio"] = round(
            times["ours_fused_train"] / times["plain_train"], 3
        )
        row["fused_infer_ratio"] = round(
            times["ours_fused_infer"] / times["plain_infer"], 3
        )
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--max-n", type=int, default=None, help="skip larger sizes"
    )
    parser.add_argument(
        "--min-n", type=int, default=None, help="skip smaller sizes"
    )
    parser.add_argument(
        "--batch",
        type=int,
        default=None,
        help="the batch of every case (default: each case's own)",
    )
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", help="write the results (JSON) here")
    parser.add_argument(
        "--jit-variant",
        action="store_true",
        help="also time our model compiled with jit_compile=True "
        "(torch.compile on torch; ours_jit_*)",
    )
    parser.add_argument(
        "--layer-calls-variant",
        action="store_true",
        help="also time our model with every sub-layer of the blocks "
        "called as a layer (ours_layer_calls_*)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=os.cpu_count() or 1,
        help="threads of each side (torch's intra-op threads)",
    )
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    if BACKEND not in ("torch", "jax"):
        parser.error("run with KERAS_BACKEND=torch or KERAS_BACKEND=jax")
    if BACKEND == "torch":
        import torch

        torch.set_num_threads(args.threads)
    gemm_rate = torch_gemm_flops if BACKEND == "torch" else jax_gemm_flops
    gemm = gemm_rate()
    where = accelerator() or "CPU"
    print(
        f"{BACKEND} on {where}: float32 matrix product {gemm / 1e9:.1f} GFLOP/s"
    )
    result = {
        "backend": BACKEND,
        "keras": keras.__version__,
        "machine": platform.machine(),
        "accelerator": accelerator(),
        "cpu_count": os.cpu_count(),
        "threads": args.threads,
        "load_average_before": load_before,
        "gemm_flops_per_s": gemm,
        "quick": args.quick,
        "warmup": args.warmup,
        "repeats": args.repeats,
        "complete": False,
        "rows": [],
    }
    for case in args.cases:
        sizes = QUICK_SIZES[case] if args.quick else CASES[case][0]
        for n in sizes:
            if args.max_n is not None and n > args.max_n:
                continue
            if args.min_n is not None and n < args.min_n:
                continue
            row = run_case(
                case,
                n,
                args.warmup,
                args.repeats,
                jit_variant=args.jit_variant,
                layer_calls_variant=args.layer_calls_variant,
                batch=args.batch,
            )
            # The matrix-product rate right after the row, under its load.
            row["gemm_flops_per_s"] = gemm_rate()
            row["train_fraction_of_gemm"] = round(
                row["ours_train_flops_per_s"] / row["gemm_flops_per_s"], 3
            )
            result["rows"].append(row)
            fused = ""
            if "jit_train_ratio" in row:
                fused += (
                    f"  (jit_compile: train {row['jit_train_ratio']:.2f}, "
                    f"infer {row['jit_infer_ratio']:.2f}, first call "
                    f"{row['jit_first_call_seconds']:.0f} s)"
                )
            if "layer_calls_train_ratio" in row:
                fused += (
                    "  (sub-layers called: train "
                    f"{row['layer_calls_train_ratio']:.2f}, infer "
                    f"{row['layer_calls_infer_ratio']:.2f})"
                )
            if "unfolded_train_ratio" in row:
                fused += (
                    "  (keys projected: train "
                    f"{row['unfolded_train_ratio']:.2f}, infer "
                    f"{row['unfolded_infer_ratio']:.2f})"
                )
            if "two_pass_train_ratio" in row:
                fused += (
                    "  (root pass, then every segment again: train "
                    f"{row['two_pass_train_ratio']:.2f})"
                )
            if "fused_train_ratio" in row:
                fused += (
                    "  (fused kernel only: train "
                    f"{row['fused_train_ratio']:.2f}, infer "
                    f"{row['fused_infer_ratio']:.2f})"
                )
            print(
                f"{case:5s} n={n:6d}  train ours/plain "
                f"{row['train_ratio']:.2f} ({row['ours_train'] * 1e3:.1f} / "
                f"{row['plain_train'] * 1e3:.1f} ms)  infer ours/plain "
                f"{row['infer_ratio']:.2f}  diff "
                f"{row['max_output_difference']:.1e}{fused}",
                flush=True,
            )
            _write(args.output, result)  # a partial result survives
    result["complete"] = True
    result["load_average_after"] = os.getloadavg()
    _write(args.output, result)
    return result


def _write(output, result):
    if output:
        path = Path(output)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
