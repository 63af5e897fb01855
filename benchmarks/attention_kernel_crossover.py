"""Where torch's fused attention kernel is slower than matmul + softmax.

Times forward + backward of one masked attention (batch 8, 4 heads of 32,
10 % of the keys masked) with `torch.nn.functional.scaled_dot_product_attention`
against plain `matmul` + `softmax` + `matmul`, for query/key counts from
pooling seeds over many keys to many elements over few inducing points.
The two are timed interleaved, the minimum of `--repeats` each. The rule
of `keras_msets.layers._set_multi_head_attention.use_plain_kernel` cites
this table.

    python benchmarks/attention_kernel_crossover.py --threads 1 \\
        --output benchmarks/results/attention_kernel_crossover_cpu.json

With `--device cuda` the tensors live on the GPU and each timing waits
for it (`torch.cuda.synchronize`):

    python benchmarks/attention_kernel_crossover.py --device cuda \\
        --output benchmarks/results/gpu/attention_kernel_crossover_gpu.json
"""

import argparse
import json
import os
import platform
import time
from pathlib import Path

import torch
import torch.nn.functional as F

BATCH = 8
HEADS = 4
HEAD_DIM = 32
SHAPES = (
    (1, 2000),
    (1, 10000),
    (4, 10000),
    (16, 4000),
    (256, 256),
    (1000, 1000),
    (200, 16),
    (1000, 16),
    (4000, 16),
    (1000, 64),
)


def plain_attention(query, key, value, bias):
    scores = torch.matmul(query * HEAD_DIM**-0.5, key.transpose(-1, -2))
    return torch.matmul(torch.softmax(scores + bias, -1), value)


def fused_attention(query, key, value, bias):
    return F.scaled_dot_product_attention(
        query, key, value, attn_mask=bias, scale=HEAD_DIM**-0.5
    )


def time_shape(num_queries, num_keys, repeats, generator, device="cpu"):
    def tensor(n):
        t = torch.randn(BATCH, HEADS, n, HEAD_DIM, generator=generator)
        return t.to(device).requires_grad_()

    def wait():
        if torch.device(device).type == "cuda":
            torch.cuda.synchronize()

    query, key, value = tensor(num_queries), tensor(num_keys), tensor(num_keys)
    keep = torch.rand(BATCH, 1, 1, num_keys, generator=generator) > 0.1
    bias = torch.where(keep, 0.0, -1e9).to(device)
    best = {}
    for _ in range(repeats):
        for name, attention in (
            ("plain", plain_attention),
            ("fused", fused_attention),
        ):
            wait()
            start = time.perf_counter()
            attention(query, key, value, bias).sum().backward()
            wait()
            elapsed = time.perf_counter() - start
            best[name] = min(best.get(name, float("inf")), elapsed)
    return {
        "num_queries": num_queries,
        "num_keys": num_keys,
        "plain_ms": 1e3 * best["plain"],
        "fused_ms": 1e3 * best["fused"],
        "fused_over_plain": best["fused"] / best["plain"],
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(0)
    load_before = os.getloadavg()
    rows = []
    for num_queries, num_keys in SHAPES:
        row = time_shape(
            num_queries, num_keys, args.repeats, generator, args.device
        )
        rows.append(row)
        print(
            f"{num_queries:5d} queries x {num_keys:6d} keys: plain "
            f"{row['plain_ms']:8.2f} ms, fused {row['fused_ms']:8.2f} ms, "
            f"fused / plain {row['fused_over_plain']:.2f}",
            flush=True,
        )
    result = {
        "command": "python benchmarks/attention_kernel_crossover.py "
        f"--threads {args.threads} --repeats {args.repeats} "
        f"--device {args.device}",
        "device": (
            torch.cuda.get_device_name(0)
            if torch.device(args.device).type == "cuda"
            else "CPU"
        ),
        "torch": torch.__version__,
        "machine": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "threads": args.threads,
        "batch": BATCH,
        "heads": HEADS,
        "head_dim": HEAD_DIM,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "rows": rows,
    }
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
