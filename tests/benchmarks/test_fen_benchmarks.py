"""The Fusion Encoder Network benchmarks run end to end on tiny settings."""

import json
from pathlib import Path

import numpy as np
import pytest

from keras_msets.testing import load_script

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _load_script(name):
    return load_script(BENCHMARKS / f"{name}.py")


@pytest.mark.slow
def test_fen_comparison_smoke(tmp_path):
    script = _load_script("fen_comparison")
    out = tmp_path / "comparison.json"
    argv = [
        "--tasks=counting_ones",
        "--lengths=4",
        "--models=FEN-none,FEN-all,LSTM",
        "--curriculum",
        "--curriculum-divisors=2",
        "--max-none-length=2",
        "--steps=4",
        "--warmup=1",
        "--train-size=48",
        "--test-size=24",
        "--batch-size=8",
        f"--out={out}",
    ]
    results = script.main(argv)
    saved = json.loads(out.read_text())
    runs = {r["model"]: r for r in saved["runs"]}
    assert list(runs) == ["FEN-none", "FEN-all", "LSTM", "FEN-all+curriculum"]
    assert "too many" in runs["FEN-none"]["skipped"]
    for name in ["FEN-all", "LSTM", "FEN-all+curriculum"]:
        run = runs[name]
        assert 0.0 <= run["accuracy"] <= 1.0, name
        assert np.isfinite(run["ms_per_step"]) and run["ms_per_step"] > 0
        assert run["params"] > 0
    # log2(4) = 2 fusion levels of 2 dense layers, plus alpha and omega.
    assert runs["FEN-all"]["depth"] == 2 + 2 * 2 + 2
    assert runs["LSTM"]["depth"] == 4
    # The fused network gives the root output: the same accuracy (up to
    # one rounding-sensitive prediction of the 24).
    run = runs["FEN-all"]
    assert abs(run["fused_accuracy"] - run["accuracy"]) <= 1 / 24 + 1e-9
    stages = runs["FEN-all+curriculum"]["curriculum"]
    assert [s["length"] for s in stages] == [2, 4]
    assert sum(s["steps"] for s in stages) == 4
    assert results["settings"]["backend"] == saved["settings"]["backend"]
    assert "| counting_ones | 4 | FEN-all |" in script.markdown_table(
        saved["runs"]
    )

    # --resume skips finished runs and keeps them.
    again = script.main(argv + ["--resume", "--models=LSTM"])
    assert len(again["runs"]) == 4
    assert (tmp_path / "comparison.png").stat().st_size > 0


def test_baseline_parameter_counts_match_the_formulas():
    script = _load_script("fen_comparison")
    spec = script.task_spec("digit_sum_mod10", 8)
    for name in ["LSTM", "GRU"]:
        model = script.build_rnn(name, spec, 8, 12)
        assert model.count_params() == script.rnn_params(name, spec, 12)
    model = script.build_transformer(spec, 8, 6, 2)
    assert model.count_params() == script.transformer_params(spec, 8, 6, 2)
    # The chosen widths bring the baselines near FEN-all's count.
    units = script.closest_width(
        lambda u: script.rnn_params("GRU", spec, u), range(2, 513), 14_000
    )
    assert abs(script.rnn_params("GRU", spec, units) - 14_000) < 300


def test_batch_stream_covers_the_data_once_per_epoch():
    script = _load_script("fen_comparison")
    x = np.arange(10)[:, None]
    stream = script.BatchStream(x, x[:, 0], 4, 5, seed=0)
    assert len(stream) == 5
    rows = np.concatenate([stream[k][0][:, 0] for k in range(5)])
    assert sorted(rows[:10]) == list(range(10))
    assert len(rows) == 20


@pytest.mark.slow
def test_fen_scaling_smoke(tmp_path):
    script = _load_script("fen_scaling")
    out = tmp_path / "scaling.json"
    results = script.main(
        [
            "--no-subprocess",
            "--min-length=2",
            "--max-length=4",
            "--batch-size=2",
            "--warmup=1",
            "--repeats=2",
            "--inference-repeats=2",
            f"--out={out}",
        ]
    )
    saved = json.loads(out.read_text())
    assert (tmp_path / "scaling.png").stat().st_size > 0
    assert [r["length"] for r in saved["runs"]] == [2, 4]
    for run in saved["runs"]:
        assert run["train_step_ms"] > 0
        assert run["fused_inference_ms"] > 0
        assert run["num_segments"] == run["length"] * np.log2(run["length"]) + 1
        assert run["fused_depth_networks"] == np.log2(run["length"]) + 2
    assert saved["fits"]["train_step_ms"]["all"]["points"] == 2
    assert results["settings"]["backend"] == saved["settings"]["backend"]


def test_fit_exponents_recovers_n_log_n():
    script = _load_script("fen_scaling")
    n = np.array([64, 128, 256, 512, 1024])
    fit = script.fit_exponents(n, 3.0 * n * np.log2(n))
    assert abs(fit["exponent_of_value_over_n_log2_n"]) < 1e-9
    assert 1.0 < fit["exponent"] < 1.3
    fit = script.fit_exponents(n, 0.5 * n**2)
    assert abs(fit["exponent"] - 2.0) < 1e-9
    assert abs(fit["exponent_of_value_over_n"] - 1.0) < 1e-9
