#!/usr/bin/env bash
# The GPU measurements, each under its own time limit, results in $1
# (default benchmarks/results/gpu): the device, the attention kernel
# crossover, blocks against plain code on torch and JAX (batch 64), and
# GPU outputs against the CPU's (goldens, presets, estimators).
#     bash benchmarks/gpu_benchmarks.sh benchmarks/results/gpu
# Run from the repository root where python3 sees the GPU, keras and
# keras_msets (PYTHONPATH="$PWD" for a checkout). Time limits (seconds):
# CROSSOVER_LIMIT, SPEED_LIMIT_TORCH, SPEED_LIMIT_JAX, AGREEMENT_LIMIT_TORCH,
# AGREEMENT_LIMIT_JAX.
set -u
out=${1:-benchmarks/results/gpu}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
{
    date -u +%Y-%m-%dT%H:%M:%SZ
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm \
        --format=csv
    KERAS_BACKEND=jax python3 -c "import jax, keras, torch; print('torch', torch.__version__, \
'jax', jax.__version__, 'keras', keras.__version__, 'jax devices', \
jax.devices())"
} > "$out/device.txt" 2>&1
cat "$out/device.txt"
timeout "${CROSSOVER_LIMIT:-60}" python3 \
    benchmarks/attention_kernel_crossover.py --device cuda \
    --output "$out/attention_kernel_crossover_gpu.json"
cases="SAB PMA ISAB IMSAB MSAB MST CMP COE"
KERAS_BACKEND=torch timeout "${SPEED_LIMIT_TORCH:-120}" python3 \
    benchmarks/speed_vs_plain.py --batch 64 --min-n 125 --cases $cases \
    --output "$out/speed_vs_plain_torch_gpu.json"
KERAS_BACKEND=jax timeout "${SPEED_LIMIT_JAX:-180}" python3 \
    benchmarks/speed_vs_plain.py --batch 64 --min-n 125 --cases $cases \
    --output "$out/speed_vs_plain_jax_gpu.json"
KERAS_BACKEND=torch timeout "${AGREEMENT_LIMIT_TORCH:-90}" python3 \
    benchmarks/gpu_agreement.py --output "$out/agreement_torch_gpu.json"
# JAX computes float32 products in TF32 on a GPU by default; the CPU's
# float32 with JAX_DEFAULT_MATMUL_PRECISION=highest.
KERAS_BACKEND=jax timeout "${AGREEMENT_LIMIT_JAX:-150}" python3 \
    benchmarks/gpu_agreement.py --groups golden estimators \
    --output "$out/agreement_jax_gpu.json"
JAX_DEFAULT_MATMUL_PRECISION=highest KERAS_BACKEND=jax \
    timeout "${AGREEMENT_LIMIT_JAX:-150}" python3 \
    benchmarks/gpu_agreement.py --groups golden estimators \
    --output "$out/agreement_jax_highest_gpu.json"
