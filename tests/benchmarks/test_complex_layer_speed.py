"""The complex layer speed benchmark runs end to end in smoke mode."""

import json
import math
from pathlib import Path

import keras
import pytest

from keras_msets.testing import load_script

SCRIPT = (
    Path(__file__).resolve().parents[2]
    / "benchmarks"
    / "complex_layer_speed.py"
)


def _load_script():
    return load_script(SCRIPT)


def _real_params(pair, d, vocab, kernel, inner):
    """Parameters of the real layer of width `d` on `d` real features."""
    attention = 3 * (d * d + d) + (d * d + d)  # q, k, v, output (h * k = d)
    return {
        "embedding": vocab * d,
        "dense": d * d + d,
        "conv1d": kernel * d * d + d,
        "lstm": 4 * d * (d + d + 1),  # 4 gates: input, recurrent, bias
        "attention": attention,
        # Attention, two layer norms (gain and bias), two dense layers.
        "transformer": attention
        + 2 * 2 * d
        + (d * inner + inner)
        + (inner * d + d),
    }[pair]


@pytest.mark.slow
def test_complex_layer_speed_smoke(tmp_path, capsys):
    script = _load_script()
    output = tmp_path / "speed.json"
    # The former layers (benchmark code) are checked on torch only, where
    # building them costs least; the layers themselves are tested elsewhere.
    timed_former = keras.backend.backend() == "torch"
    former_flag = ["--former"] if timed_former else []
    payload = script.main(["--smoke", *former_flag, "--output", str(output)])
    saved = json.loads(output.read_text())
    assert saved["backend"] == keras.backend.backend() == payload["backend"]
    assert (
        f"KERAS_BACKEND={keras.backend.backend()} python "
        "benchmarks/complex_layer_speed.py --smoke"
    ) in saved["command"]
    settings = saved["settings"]
    assert settings["smoke"] is True
    d, vocab = settings["width"], settings["vocab_size"]
    kernel, inner = settings["kernel_size"], settings["intermediate_dim"]
    assert (d, vocab, kernel, inner) == (4, 50, 3, 8)
    assert [r["pair"] for r in saved["pairs"]] == list(script.PAIRS)
    for r in saved["pairs"]:
        pair = r["pair"]
        for member in ("real", "complex"):
            blocks = r[f"ms_{member}_blocks"]
            assert len(blocks) == settings["repeats"] == 2
            assert all(math.isfinite(t) and t > 0 for t in blocks), pair
            assert math.isfinite(r[f"ms_{member}"]) and r[f"ms_{member}"] > 0
            assert r[f"warmup_seconds_{member}"] > 0
        assert math.isclose(r["ratio"], r["ms_complex"] / r["ms_real"])
        # The former layer, timed beside the current one, computes the
        # same outputs on the same weights.
        former = r.get("max_output_difference_former")
        expected = timed_former and pair in script.FORMER
        assert (former is not None) == expected, pair
        if former is not None:
            assert former < 1e-5, pair
            assert len(r["ms_complex_former_blocks"]) == 2
        low, high = r["ratio_blockwise_quartiles"]
        assert 0 < low <= r["ratio_blockwise"] <= high < math.inf
        # Every complex weight A + iB is two real tensors of the real
        # layer's shape: exactly twice the parameters at the same width.
        real = _real_params(pair, d, vocab, kernel, inner)
        assert r["params_real"] == real, pair
        assert r["params_complex"] == 2 * real, pair
        # The head Dense(1) reads d features, or 2 d for the complex layer.
        assert r["model_params_real"] == real + d + 1, pair
        assert r["model_params_complex"] == 2 * real + 2 * d + 1, pair
    table = capsys.readouterr().out
    assert "| Dense / ComplexDense | 20 | 40 |" in table
    assert "| TransformerEncoder / ComplexTransformerEncoder |" in table


def test_defaults_are_the_table2_sizes():
    script = _load_script()
    args = script.parse_args([])
    assert (args.batch_size, args.length, args.width) == (64, 40, 64)
    assert (args.vocab_size, args.num_heads) == (10000, 4)
    assert args.jit_compile == "auto" and not args.run_eagerly
    assert args.pairs == list(script.PAIRS)
    backend = keras.backend.backend()
    assert args.output.name == f"complex_layer_speed_{backend}.json"
    args = script.parse_args(["--pairs", "lstm", "--jit-compile", "false"])
    assert args.pairs == ["lstm"] and args.jit_compile is False


def test_implied_ratios_follow_the_product_counts():
    script = _load_script()
    for pair in ("dense", "conv1d", "lstm"):
        assert script.implied_ratio(pair, 8, 10, 16) == 4.0
    assert script.implied_ratio("embedding", 8, 10, 16) == 2.0
    # Attention: projections (4 products each) dominate short sequences,
    # the scores (4) and weighted sums (2) long ones: (4 + 2) / 2 = 3.
    assert script.implied_ratio("attention", 8, 1, 64) == pytest.approx(
        4.0, abs=0.02
    )
    assert script.implied_ratio("attention", 8, 10**6, 4) == pytest.approx(
        3.0, abs=1e-4
    )
    short = script.implied_ratio("transformer", 8, 1, 64)
    assert 3.9 < short < 4.0


@pytest.mark.slow
@pytest.mark.skipif(
    keras.backend.backend() != "jax", reason="XLA op times: jax only"
)
def test_device_time_sums_the_compiled_steps_ops(tmp_path):
    script = _load_script()
    output = tmp_path / "device.json"
    args = ["--smoke", "--pairs", "embedding", "--device-time"]
    args += ["--device-repeats", "1", "--output", str(output)]
    (pair,) = script.main(args)["pairs"]
    for member in ("real", "complex"):
        ops_ms = pair[f"device_top_ops_{member}"]
        assert ops_ms and all(ms > 0 for ms in ops_ms.values()), member
        # The total is over every op of the step, the top ones included.
        assert pair[f"device_ms_{member}"] >= sum(ops_ms.values()) - 1e-9
    ratio = pair["device_ms_complex"] / pair["device_ms_real"]
    assert pair["device_ratio"] == pytest.approx(ratio)
    # The traces are removed once read.
    assert not list(tmp_path.glob("trace_*"))
