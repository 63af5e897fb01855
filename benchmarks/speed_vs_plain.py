"""Our set blocks against plain framework code of the same equations.

For each case a block of `keras_msets.layers` and a plain implementation
of the same equations written directly in the backend's framework (PyTorch
for `KERAS_BACKEND=torch`, JAX for `KERAS_BACKEND=jax`; independent of
Keras and of our layers) get the same weights; their outputs are checked
to agree, then both are timed in the same run:

- `train`: forward, backward and an Adam step on a mean-squared loss (ours:
  `model.train_on_batch`, the step a user's `model.fit` runs; plain: a
  hand-written step, `jax.jit`-compiled on JAX, eager on PyTorch);
- `infer`: a forward pass (ours: `model.predict_on_batch`).

The plain attention is the framework's fused kernel
(`torch.nn.functional.scaled_dot_product_attention`,
`jax.nn.dot_product_attention`), as a plain implementation would use it.
The machine's float32 matrix-product rate (FLOP/s of a 2048 x 2048
product) is measured in the same run. Medians of `--repeats` timed steps
after `--warmup` untimed ones.

    KERAS_BACKEND=torch python benchmarks/speed_vs_plain.py \\
        --output benchmarks/results/speed_vs_plain_torch_cpu.json
    KERAS_BACKEND=jax python benchmarks/speed_vs_plain.py \\
        --output benchmarks/results/speed_vs_plain_jax_cpu.json

`--quick` runs the smallest size of each case (a check, not a result).
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
    "ISAB": ((100, 1000, 4000, 10000), 32, 128, 4),
    "PMA": ((100, 1000, 10000), 32, 128, 4),
    "MSAB": ((512,), 4, 512, 8),
}
QUICK_SIZES = {"SAB": (100,), "ISAB": (100,), "PMA": (100,), "MSAB": (64,)}
INDUCING_POINTS = 16


def build_ours(case, dim, heads):
    """Our block (unbuilt) and a function from it to its weight tree."""
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
        return layer, lambda: {
            "seeds": _np(layer.seeds),
            "block": mab_weights(layer.block),
        }
    if case == "MSAB":
        layer = layers.MultisetAttentionBlock(num_heads=heads)

        def weights():
            return {
                "self": [mab_weights(layer._block(k, k)) for k in (0, 1)],
                "cross": [mab_weights(layer._block(k, 1 - k)) for k in (0, 1)],
                "merge": [_dense(d) for d in layer.merge_denses],
                "merge_norm": [_norm(n) for n in layer.merge_norms],
            }

        return layer, weights
    raise ValueError(case)


def flops_mab(batch, n, m, dim, ff):
    """Forward FLOPs of `MAB(X [n, dim], Y [m, dim])` per batch."""
    projections = 2 * dim * dim * (2 * n + 2 * m)  # q, output; k, v
    attention = 2 * 2 * n * m * dim
    feedforward = 2 * 2 * n * dim * ff
    return batch * (projections + attention + feedforward)


def flops_forward(case, batch, n, dim):
    ff = 2 * dim
    if case == "SAB":
        return flops_mab(batch, n, n, dim, ff)
    if case == "ISAB":
        m = INDUCING_POINTS
        return flops_mab(batch, m, n, dim, ff) + flops_mab(batch, n, m, dim, ff)
    if case == "PMA":
        return flops_mab(batch, 1, n, dim, ff)
    if case == "MSAB":
        merge = 2 * n * (2 * dim) * dim
        return 2 * (2 * flops_mab(batch, n, n, dim, ff) + batch * merge)
    raise ValueError(case)


# -- plain PyTorch ----------------------------------------------------------


def plain_torch(case, tree, heads):
    import torch
    import torch.nn.functional as F

    params = []

    def tensor(a):
        t = torch.tensor(a, requires_grad=True)
        params.append(t)
        return t

    tree = _map_tree(tree, tensor)

    def layer_norm(x, p):
        return F.layer_norm(x, x.shape[-1:], p["gamma"], p["beta"], EPSILON)

    def mab(p, x, y):
        b, n, d = x.shape
        m = y.shape[1]

        def project(z, w, length):
            kernel = w["kernel"].reshape(d, -1)
            z = z @ kernel + w["bias"].reshape(-1)
            return z.reshape(b, length, heads, -1).transpose(1, 2)

        q = project(x, p["query"], n)
        k = project(y, p["key"], m)
        v = project(y, p["value"], m)
        o = F.scaled_dot_product_attention(q, k, v)
        o = o.transpose(1, 2).reshape(b, n, -1)
        kernel = p["output"]["kernel"].reshape(-1, d)
        h = layer_norm(
            x + o @ kernel + p["output"]["bias"], p["attention_norm"]
        )
        f = torch.relu(h @ p["ff_hidden"]["kernel"] + p["ff_hidden"]["bias"])
        f = f @ p["ff_output"]["kernel"] + p["ff_output"]["bias"]
        return layer_norm(h + f, p["output_norm"])

    def forward(inputs):
        if case == "SAB":
            return mab(tree["block"], inputs[0], inputs[0])
        if case == "ISAB":
            x = inputs[0]
            points = tree["inducing_points"].expand(x.shape[0], -1, -1)
            summary = mab(tree["inducing_block"], points, x)
            return mab(tree["output_block"], x, summary)
        if case == "PMA":
            x = inputs[0]
            seeds = tree["seeds"].expand(x.shape[0], -1, -1)
            return mab(tree["block"], seeds, x)
        outputs = []
        for k in (0, 1):
            x, other = inputs[k], inputs[1 - k]
            terms = [
                mab(tree["self"][k], x, x),
                mab(tree["cross"][k], x, other),
            ]
            merge = tree["merge"][k]
            merged = torch.relu(
                torch.cat(terms, -1) @ merge["kernel"] + merge["bias"]
            )
            outputs.append(layer_norm(x + merged, tree["merge_norm"][k]))
        return torch.cat(outputs, 1)

    optimizer = torch.optim.Adam(params, lr=1e-3)

    def train(inputs, target):
        optimizer.zero_grad(set_to_none=True)
        loss = torch.mean((forward(inputs) - target) ** 2)
        loss.backward()
        optimizer.step()
        return float(loss)

    def infer(inputs):
        with torch.no_grad():
            return forward(inputs).numpy()

    def convert(arrays):
        return [torch.from_numpy(a) for a in arrays]

    return train, infer, convert


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

    def layer_norm(x, p):
        mean = jnp.mean(x, -1, keepdims=True)
        var = jnp.mean((x - mean) ** 2, -1, keepdims=True)
        return (x - mean) / jnp.sqrt(var + EPSILON) * p["gamma"] + p["beta"]

    def mab(p, x, y):
        def project(z, w):
            return jnp.einsum("bnd,dhk->bnhk", z, w["kernel"]) + w["bias"]

        q = project(x, p["query"])
        k = project(y, p["key"])
        v = project(y, p["value"])
        o = jax.nn.dot_product_attention(q, k, v)
        o = jnp.einsum("bnhk,hkd->bnd", o, p["output"]["kernel"])
        h = layer_norm(x + o + p["output"]["bias"], p["attention_norm"])
        f = jax.nn.relu(h @ p["ff_hidden"]["kernel"] + p["ff_hidden"]["bias"])
        f = f @ p["ff_output"]["kernel"] + p["ff_output"]["bias"]
        return layer_norm(h + f, p["output_norm"])

    def forward(params, inputs):
        if case == "SAB":
            return mab(params["block"], inputs[0], inputs[0])
        if case == "ISAB":
            x = inputs[0]
            points = jnp.broadcast_to(
                params["inducing_points"],
                (x.shape[0],) + params["inducing_points"].shape,
            )
            summary = mab(params["inducing_block"], points, x)
            return mab(params["output_block"], x, summary)
        if case == "PMA":
            x = inputs[0]
            seeds = jnp.broadcast_to(
                params["seeds"], (x.shape[0],) + params["seeds"].shape
            )
            return mab(params["block"], seeds, x)
        outputs = []
        for k in (0, 1):
            x, other = inputs[k], inputs[1 - k]
            terms = [
                mab(params["self"][k], x, x),
                mab(params["cross"][k], x, other),
            ]
            merge = params["merge"][k]
            merged = jax.nn.relu(
                jnp.concatenate(terms, -1) @ merge["kernel"] + merge["bias"]
            )
            outputs.append(layer_norm(x + merged, params["merge_norm"][k]))
        return jnp.concatenate(outputs, 1)

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

    return train, infer, convert


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


def _median_time(fn, warmup, repeats):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _ours_model(layer, case, batch, n, dim):
    sets = 2 if case == "MSAB" else 1
    inputs = [keras.Input((n, dim)) for _ in range(sets)]
    if case == "MSAB":
        outputs = keras.ops.concatenate(layer(inputs), axis=1)
    else:
        outputs = layer(inputs[0])
    model = keras.Model(inputs, outputs)
    model.compile(keras.optimizers.Adam(1e-3), "mse")
    return model


def run_case(case, n, warmup, repeats, seed=0):
    _, batch, dim, heads = CASES[case]
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    sets = 2 if case == "MSAB" else 1
    arrays = _case_inputs(rng, batch, n, dim, sets)
    layer, weights = build_ours(case, dim, heads)
    model = _ours_model(layer, case, batch, n, dim)
    plain = plain_torch if BACKEND == "torch" else plain_jax
    train, infer, convert = plain(case, weights(), heads)
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
    times = {
        "ours_train": _median_time(
            lambda: model.train_on_batch(x, target), warmup, repeats
        ),
        "plain_train": _median_time(
            lambda: train(plain_inputs, plain_target), warmup, repeats
        ),
        "ours_infer": _median_time(
            lambda: model.predict_on_batch(x), warmup, repeats
        ),
        "plain_infer": _median_time(
            lambda: infer(plain_inputs), warmup, repeats
        ),
    }
    flops = 3 * flops_forward(case, batch, n, dim)  # forward + backward
    return {
        "case": case,
        "n": n,
        "batch": batch,
        "dim": dim,
        "heads": heads,
        "max_output_difference": difference,
        **{k: round(v, 6) for k, v in times.items()},
        "train_ratio": round(times["ours_train"] / times["plain_train"], 3),
        "infer_ratio": round(times["ours_infer"] / times["plain_infer"], 3),
        "ours_train_flops_per_s": flops / times["ours_train"],
        "plain_train_flops_per_s": flops / times["plain_train"],
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", help="write the results (JSON) here")
    args = parser.parse_args(argv)
    if BACKEND not in ("torch", "jax"):
        parser.error("run with KERAS_BACKEND=torch or KERAS_BACKEND=jax")
    if BACKEND == "torch":
        import torch

        torch.set_num_threads(os.cpu_count() or 1)
        gemm = torch_gemm_flops()
    else:
        gemm = jax_gemm_flops()
    print(f"{BACKEND}: float32 matrix product {gemm / 1e9:.1f} GFLOP/s")
    rows = []
    for case in args.cases:
        sizes = QUICK_SIZES[case] if args.quick else CASES[case][0]
        for n in sizes:
            row = run_case(case, n, args.warmup, args.repeats)
            row["train_fraction_of_gemm"] = round(
                row["ours_train_flops_per_s"] / gemm, 3
            )
            rows.append(row)
            print(
                f"{case:5s} n={n:6d}  train ours/plain "
                f"{row['train_ratio']:.2f} ({row['ours_train'] * 1e3:.1f} / "
                f"{row['plain_train'] * 1e3:.1f} ms)  infer ours/plain "
                f"{row['infer_ratio']:.2f}  diff "
                f"{row['max_output_difference']:.1e}",
                flush=True,
            )
    result = {
        "backend": BACKEND,
        "keras": keras.__version__,
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "load_average": os.getloadavg(),
        "gemm_flops_per_s": gemm,
        "quick": args.quick,
        "warmup": args.warmup,
        "repeats": args.repeats,
        "rows": rows,
    }
    if args.output:
        path = Path(args.output)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
