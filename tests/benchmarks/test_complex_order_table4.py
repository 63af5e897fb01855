"""The Table 4 ablation benchmark runs end to end in smoke mode."""

import json
from pathlib import Path

import pytest

from keras_msets.testing import load_script

SCRIPT = (
    Path(__file__).resolve().parents[2]
    / "benchmarks"
    / "complex_order_table4.py"
)
# ONE_BACKEND_RUNS: the script runs and trains (through Keras's `fit`)
# only the package's models, each checked on every backend in
# tests/layers, tests/models and tests/training; its runs here check what
# it writes, measures and resumes, so `make test` runs them on one backend.


def _load_script():
    return load_script(SCRIPT)


@pytest.mark.slow
@pytest.mark.backend_independent  # ONE_BACKEND_RUNS
def test_complex_order_table4_smoke(tmp_path, capsys, monkeypatch):
    script = _load_script()
    output = tmp_path / "table4.json"
    rows = ["complex_order", "frequency_word", "amplitude_word_shared"]
    argv = ["--smoke", "--rows", *rows, "--output", str(output)]
    script.main(argv)
    saved = json.loads(output.read_text())
    assert [r["row"] for r in saved["results"]] == rows
    params = {r["row"]: r["params"] for r in saved["results"]}
    # Word-sharing the frequency keeps one frequency per dimension instead
    # of one per word and dimension: (vocabulary - 1) * dim fewer weights.
    # Sharing Re W = Im W in the attention removes more.
    assert params["frequency_word"] < params["complex_order"]
    assert params["amplitude_word_shared"] < params["frequency_word"]
    params_mean = {r["row"]: r["mean"] for r in saved["results"]}
    for r in saved["results"]:
        assert r["source"] == "this run"
        assert len(r["fold_accuracies"]) == 1
        assert 0.0 <= r["mean"] <= 1.0
    table = capsys.readouterr().out
    assert "| word-sharing period | r_{j,d} e^{i w_{.,d} pos} |  |" in table
    # The paper's full model: Table 4 (SST), then Table 2's MR column.
    assert "| 0.813 | - | 0.746 | - |" in table
    # A rerun with the same settings reuses the saved rows: it trains
    # nothing.

    def no_training(*args, **kwargs):
        raise AssertionError("a saved row was trained again")

    monkeypatch.setattr(script.recipe, "cross_validate", no_training)
    again = script.main(argv)
    assert set(again["results"]) == set(rows)
    for key in rows:
        assert again["results"][key]["mean"] == params_mean[key]
