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
4 blocks, width 256, 4 heads, PMA pooling, sets of 8-d points, batch 16).

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

`--threads` sets torch's intra-op threads (for JAX set
`XLA_FLAGS=--xla_cpu_multi_thread_eigen=false` and
`OMP_NUM_THREADS`). `--quick` runs the smallest size of each case (a
check, not a result).
"""

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import keras
import numpy as np

from keras_msets import layers
from keras_msets.layers import _set_multi_head_attention as kernels

BACKEND = keras.backend.backend()
EPSILON = 1e-5  # the blocks' layer-norm epsilon


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
}
QUICK_SIZES = {
    "SAB": (100,),
    "ISAB": (200,),
    "PMA": (100,),
    "MSAB": (64,),
    "IMSAB": (100,),
    "MST": (30,),
}
# Cases on two sets (inputs: a list of two `[batch, n, dim]` arrays).
TWO_SETS = ("MSAB", "IMSAB", "MST")
INDUCING_POINTS = 16
MST_INPUT_DIM = 8  # the Multi-Set Transformer reads sets of 8-d points
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
    raise ValueError(case)


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

    def forward(p, inputs):
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

    def tensor(a):
        t = torch.tensor(a, requires_grad=True)
        params.append(t)
        return t

    tree = _map_tree(tree, tensor)

    class fw(_ArrayOps):
        relu = staticmethod(torch.relu)
        concat = staticmethod(torch.cat)

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
        loss = torch.mean((forward(tree, inputs) - target) ** 2)
        loss.backward()
        optimizer.step()
        return float(loss)

    def infer(inputs):
        with torch.no_grad():
            return forward(tree, inputs).numpy()

    def convert(arrays):
        return [torch.from_numpy(a) for a in arrays]

    return train, infer, convert, sum(p.numel() for p in params)


def torch_gemm_flops():
    import torch

    a = torch.randn(2048, 2048)
    b = torch.randn(2048, 2048)
    return _gemm_rate(lambda: a @ b)


# -- plain JAX --------------------------------------------------------------


def plain_jax(case, tree, heads):
    import jax
    import jax.numpy as jnp

    params = _map_tree(tree, jnp.asarray)

    class fw(_ArrayOps):
        relu = staticmethod(jax.nn.relu)
        concat = staticmethod(jnp.concatenate)

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
        return jnp.mean((forward(params, inputs) - target) ** 2)

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

    a = jnp.ones((2048, 2048), "float32")
    b = jnp.ones((2048, 2048), "float32")
    product = jax.jit(lambda a, b: a @ b)
    return _gemm_rate(lambda: product(a, b).block_until_ready())


# -- timing -----------------------------------------------------------------


def _map_tree(tree, fn):
    if isinstance(tree, dict):
        return {k: _map_tree(v, fn) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_map_tree(v, fn) for v in tree]
    return fn(tree)


def _gemm_rate(fn, repeats=10):
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 2 * 2048**3 / statistics.median(times)


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


def _ours_model(layer, case, n, dim):
    sets = 2 if case in TWO_SETS else 1
    features = MST_INPUT_DIM if case == "MST" else dim
    inputs = [keras.Input((n, features)) for _ in range(sets)]
    if case == "MST":
        outputs = layer(inputs)
    elif sets > 1:
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
    }[case]


def _chooses_plain_kernel(case, n):
    return any(
        kernels.use_plain_kernel(q, k) for q, k in attention_shapes(case, n)
    )


def run_case(case, n, warmup, repeats, seed=0):
    _, batch, dim, heads = CASES[case]
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    sets = 2 if case in TWO_SETS else 1
    features = MST_INPUT_DIM if case == "MST" else dim
    arrays = _case_inputs(rng, batch, n, features, sets)
    layer, weights = build_ours(case, dim, heads)
    model = _ours_model(layer, case, n, dim)
    plain = plain_torch if BACKEND == "torch" else plain_jax
    train, infer, convert, plain_params = plain(case, weights(), heads)
    if plain_params != model.count_params():
        raise AssertionError(
            f"{case}: {plain_params} plain parameters against "
            f"{model.count_params()} of ours"
        )
    plain_inputs = convert(arrays)
    x = arrays if sets > 1 else arrays[0]
    ours_out = np.asarray(model.predict_on_batch(x))
    plain_out = infer(plain_inputs)
    difference = float(np.max(np.abs(ours_out - plain_out)))
    if difference > 1e-3:
        raise AssertionError(
            f"{case} n={n}: ours and plain differ by {difference:.3g}"
        )
    target = np.zeros_like(ours_out)
    plain_target = convert([target])[0]
    load_before = os.getloadavg()
    kernel_choice = _chooses_plain_kernel(case, n)
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
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        **{k: round(v, 6) for k, v in times.items()},
        "train_ratio": round(times["ours_train"] / times["plain_train"], 3),
        "infer_ratio": round(times["ours_infer"] / times["plain_infer"], 3),
        "ours_train_flops_per_s": flops / times["ours_train"],
        "plain_train_flops_per_s": flops / times["plain_train"],
    }
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
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", help="write the results (JSON) here")
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
    print(f"{BACKEND}: float32 matrix product {gemm / 1e9:.1f} GFLOP/s")
    result = {
        "backend": BACKEND,
        "keras": keras.__version__,
        "machine": platform.machine(),
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
            row = run_case(case, n, args.warmup, args.repeats)
            # The matrix-product rate right after the row, under its load.
            row["gemm_flops_per_s"] = gemm_rate()
            row["train_fraction_of_gemm"] = round(
                row["ours_train_flops_per_s"] / row["gemm_flops_per_s"], 3
            )
            result["rows"].append(row)
            fused = ""
            if "fused_train_ratio" in row:
                fused = (
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
