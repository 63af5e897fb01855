"""The multi-set attention scaling benchmark runs end to end on tiny sizes."""

import json
import math
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_msets.testing import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "mst_scaling.py"


def _load_script():
    return load_script(SCRIPT)


@pytest.mark.slow
def test_mst_scaling_smoke(tmp_path, capsys):
    script = _load_script()
    backend = keras.backend.backend()
    out = tmp_path / "scaling.json"
    # dim 8, 2 heads, 16 inducing points: the attention matrices take
    # 0.003 / 0.012 / 0.027 MiB for MSAB at total sizes 20 / 40 / 60 and
    # 0.007 / 0.015 / 0.022 MiB for the inducing-point block, so a limit
    # of 0.018 MiB runs 20 and 40 and skips 60 for both.
    argv = [
        "--no-subprocess",
        "--sizes",
        "40",
        "20",
        "60",
        "--dim=8",
        "--num-heads=2",
        "--num-inducing-points=16",
        "--pooling=mean",
        "--warmup=1",
        "--repeats=2",
        "--max-attention-mb=0.018",
        f"--output={out}",
    ]
    if backend != "jax":
        # Eager steps are cheaper than tracing a graph for two steps,
        # except on jax, which compiles every eager op.
        argv.append("--run-eagerly")
    results = script.main(argv)
    saved = json.loads(out.read_text())
    assert saved["backend"] == backend == results["backend"]
    assert (
        f"KERAS_BACKEND={backend} python benchmarks/mst_scaling.py"
        in (saved["command"])
    )
    assert saved["settings"]["sizes"] == [20, 40, 60]
    assert (tmp_path / "scaling.png").stat().st_size > 0
    runs = saved["runs"]
    assert [(r["block"], r["total_size"]) for r in runs] == [
        (block, size) for size in (20, 40, 60) for block in ("msab", "induced")
    ]
    for r in runs[:4]:
        assert "skipped" not in r, r
        assert r["set_size"] == r["total_size"] // 2
        assert r["params"] > 0
        assert len(r["step_ms_all"]) == 2
        assert all(math.isfinite(t) and t > 0 for t in r["step_ms_all"])
        assert min(r["step_ms_all"]) <= r["step_ms"] <= max(r["step_ms_all"])
        assert math.isfinite(r["loss"])
        # In one process the peak RSS is a high-water mark: its growth
        # may be 0 for all but the first size.
        assert math.isfinite(r["peak_rss_mb"]) and r["peak_rss_mb"] > 0
        assert r["peak_rss_growth_mb"] >= 0
        if backend == "jax":
            assert math.isfinite(r["jax_compiled_mb"])
            assert r["jax_compiled_mb"] > 0
    # Same widths, so the sizes share the parameter counts; inducing
    # points add two summary blocks and their points.
    assert runs[0]["params"] == runs[2]["params"]
    assert runs[1]["params"] > runs[0]["params"]
    for r in runs[4:]:
        assert "exceed --max-attention-mb" in r["skipped"]
        assert "step_ms" not in r
    expected_memory = "jax_compiled_mb" if backend == "jax" else None
    if expected_memory:
        assert saved["memory_measure"] == expected_memory
    for block in ("msab", "induced"):
        fit = saved["fits"][block]["step_ms"]["large"]
        # No size reaches --fit-min-size: the fit falls back to the
        # largest measured sizes.
        assert fit["sizes"] == [20, 40] and fit["points"] == 2
        assert math.isfinite(fit["exponent"])
        verdict = saved["verdict"][block]
        assert verdict["time_exponent"] == fit["exponent"]
        # In one process the peak-RSS growth can be 0 at every size (a
        # high-water mark): then the memory exponent, and the verdict,
        # are undetermined rather than guessed.
        if verdict["memory_exponent"] is None:
            assert verdict["linear"] is None
        else:
            assert isinstance(verdict["linear"], bool)
    printed = capsys.readouterr().out
    assert "| InducedMultisetAttentionBlock | 40 | 20 |" in printed
    assert "| MultisetAttentionBlock | 60 | 30 | skipped:" in printed
    assert "InducedMultisetAttentionBlock: time N^" in printed

    # --refit measures nothing and gives the same fits.
    again = script.main([f"--output={out}", "--refit"])
    assert again["fits"] == saved["fits"]


def _synthetic(script, time_of, memory_of):
    """Records of both blocks at the default sizes, from formulas."""
    args = script.parse_args([])
    runs = [
        {
            "block": block,
            "total_size": n,
            "step_ms": time_of[block](n),
            "peak_rss_growth_mb": memory_of[block](n),
        }
        for n in args.sizes
        for block in ("msab", "induced")
    ]
    return script.summarise({"runs": runs}, args)


def test_fits_recover_known_exponents():
    script = _load_script()
    results = _synthetic(
        script,
        {"msab": lambda n: 3e-4 * n**2, "induced": lambda n: 0.7 * n**1.0},
        {"msab": lambda n: 2e-5 * n**1.5, "induced": lambda n: 0.01 * n},
    )
    fits = results["fits"]
    assert results["memory_measure"] == "peak_rss_growth_mb"
    assert abs(fits["msab"]["step_ms"]["all"]["exponent"] - 2.0) < 1e-9
    msab_memory = fits["msab"]["peak_rss_growth_mb"]["all"]
    assert abs(msab_memory["exponent"] - 1.5) < 1e-9
    assert abs(fits["induced"]["step_ms"]["large"]["exponent"] - 1.0) < 1e-9
    assert fits["induced"]["step_ms"]["large"]["sizes"] == [
        2000,
        5000,
        10000,
        20000,
    ]
    assert results["verdict"]["induced"]["linear"] is True
    assert results["verdict"]["msab"]["linear"] is False


def test_verdict_uses_the_large_sizes():
    script = _load_script()
    # A fixed cost flattens the small sizes: over all sizes the quadratic
    # block looks sub-quadratic, over the large ones it is near 2; the
    # linear block with overhead stays linear, a slightly super-linear
    # one (N^1.4) is not.
    results = _synthetic(
        script,
        {
            "msab": lambda n: 100.0 + 1e-4 * n**2,
            "induced": lambda n: 5.0 + 0.01 * n,
        },
        {"msab": lambda n: 50.0 + 1e-5 * n**2, "induced": lambda n: n**1.4},
    )
    msab = results["fits"]["msab"]["step_ms"]
    assert msab["all"]["exponent"] < 1.3
    assert msab["large"]["exponent"] > 1.7
    assert results["verdict"]["msab"]["linear"] is False
    induced = results["verdict"]["induced"]
    assert 0.8 < induced["time_exponent"] < 1.0
    assert abs(induced["memory_exponent"] - 1.4) < 1e-9
    assert induced["linear"] is False


def test_skip_reasons():
    script = _load_script()
    args = script.parse_args([])
    # MSAB at 20,000: 4 attentions x 4 heads x 10,000^2 x 4 bytes.
    assert np.isclose(script.attention_mb("msab", 20000, args), 6103.515625)
    assert "exceed --max-attention-mb" in script.skip_reason(
        "msab", 20000, args, None
    )
    assert script.skip_reason("msab", 10000, args, None) is None
    assert script.skip_reason("induced", 20000, args, None) is None
    # 20 s at 5,000 predicts 80 s for MSAB at 10,000, but 40 s for the
    # inducing-point block.
    last = {"total_size": 5000, "step_ms": 20000.0}
    assert "predicted step time 80" in script.skip_reason(
        "msab", 10000, args, last
    )
    assert script.skip_reason("induced", 10000, args, last) is None
    skipped = {"total_size": 5000, "skipped": "out of memory"}
    assert "smaller size" in script.skip_reason("induced", 10000, args, skipped)
