"""The MI ablation benchmark runs end to end on a tiny model and resumes."""

import json
from pathlib import Path

import numpy as np
import pytest

from keras_msets.testing import load_script
from tests.benchmarks.test_mst_figure2 import TINY

SCRIPT = (
    Path(__file__).resolve().parents[2] / "benchmarks" / "mst_mi_ablation.py"
)
# ONE_BACKEND_RUNS: the script runs and trains (through Keras's `fit`)
# only the package's models, each checked on every backend in
# tests/layers, tests/models and tests/training; its runs here check what
# it writes, measures and resumes, so `make test` runs them on one backend.


@pytest.mark.slow
@pytest.mark.backend_independent  # ONE_BACKEND_RUNS
def test_mst_mi_ablation_runs_and_resumes(tmp_path):
    script = load_script(SCRIPT)
    output = tmp_path / "ablation.json"
    argv = ["--steps", "2", "--test-pairs", "3", "--batch-size", "2"]
    argv += ["--train-dims", "2", "--eval-dims", "2"]
    argv += ["--learning-rates", "0.001", "--output", str(output)]
    argv += ["--variants", "per_coordinate"]
    results = script.main(argv, model_overrides=TINY)
    rows = results["rows"]
    assert [(r["variant"], r["steps"]) for r in rows] == [("per_coordinate", 2)]
    metrics = rows[0]["metrics"]
    assert np.isfinite(metrics["mae_d2"]) and np.isfinite(metrics["ksg_mae_d2"])
    saved = json.loads(output.read_text())
    assert len(saved["rows"]) == 1
    # A second run keeps the finished rows instead of training again.
    again = script.main(argv, model_overrides=TINY)
    assert again["rows"] == saved["rows"]
    assert "| per_coordinate | 0.001 | 2 |" in script.table(rows, [2])
