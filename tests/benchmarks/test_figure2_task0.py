"""The Figure 2 (task 0) benchmark runs end to end in smoke mode."""

import json
from pathlib import Path

import numpy as np
import pytest

from keras_msets.testing import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "figure2_task0.py"


def _load_script():
    return load_script(SCRIPT)


@pytest.mark.slow
def test_figure2_task0_smoke(tmp_path):
    script = _load_script()
    results = script.main(["--smoke", "--output-dir", str(tmp_path)])
    assert (tmp_path / "figure2_task0.png").stat().st_size > 0
    saved = json.loads((tmp_path / "figure2_task0.json").read_text())
    for panel in ("unary", "diagonal"):
        assert [row["d"] for row in saved[panel]] == [2, 3]
        for row in saved[panel]:
            for key in ("learned_mse", "baseline_mse", "relative_mse"):
                values = np.asarray(row[key])
                assert values.shape == (2,)
                assert np.all(np.isfinite(values))
            assert np.all(np.asarray(row["baseline_mse"]) > 0)
    assert saved["settings"]["smoke"] is True
    assert results["settings"]["backend"] == saved["settings"]["backend"]


def test_distinct_multisets_weights_reproduce_the_full_mse():
    script = _load_script()
    rng = np.random.default_rng(0)
    x = rng.integers(1, 4, size=(200, 3))
    y = np.sum(np.sin(x), axis=1, keepdims=True)  # order-invariant target
    x_unique, y_unique, weights = script.distinct_multisets(x, y)
    prediction = 0.3 * np.sum(x_unique, axis=1, keepdims=True)
    full = np.mean((0.3 * np.sum(x, axis=1, keepdims=True) - y) ** 2)
    weighted = np.mean(weights[:, None] * (prediction - y_unique) ** 2)
    np.testing.assert_allclose(weighted, full, rtol=1e-5)
