"""The `accurate_phase` timing runs end to end at tiny sizes."""

from pathlib import Path

import keras
import pytest

from keras_msets.testing import load_script

SCRIPT = (
    Path(__file__).resolve().parents[2]
    / "benchmarks"
    / "accurate_phase_speed.py"
)


@pytest.mark.skipif(
    keras.backend.backend() != "torch",
    reason="a check of the script, not of a backend: torch is the fastest "
    "(JAX keeps its float32 refinement and is refused)",
)
def test_accurate_phase_speed_tiny(tmp_path):
    script = load_script(SCRIPT)
    output = tmp_path / "phase.json"
    result = script.main(
        ["--sizes", "3", "--repeats", "1", "--output", str(output)]
    )
    assert output.exists()
    assert [(r["kind"], r["n"]) for r in result["rows"]] == [
        ("phase", 3),
        ("pooling", 3),
        ("layer", 3),
        ("guarantees", 3),
    ]
    for row in result["rows"]:
        assert len(row["load_average_before"]) == 3
        if row["kind"] == "guarantees":
            ratio = row["ms_neither"] / row["ms_current"]
            assert row["ratio_neither_over_current"] == pytest.approx(ratio)
            continue
        ratio = row["ms_current"] / row["ms_previous"]
        assert row["ratio_current_over_previous"] == pytest.approx(ratio)
    phase = result["rows"][0]
    # Every formula gives the angle to float64 accuracy (numpy's arctan2).
    assert phase["max_error_current"] < 1e-12
    assert phase["max_error_previous"] < 1e-12
    assert phase["max_error_rotation"] < 1e-12
    # The layer as it was computes the same outputs on the same weights.
    assert result["rows"][2]["max_output_difference"] < 1e-5


@pytest.mark.skipif(
    keras.backend.backend() != "jax", reason="the refusal on jax"
)
def test_accurate_phase_speed_refuses_jax():
    script = load_script(SCRIPT)
    with pytest.raises(ValueError, match="KERAS_BACKEND=torch or tensorflow"):
        script.main(["--sizes", "3", "--repeats", "1"])
