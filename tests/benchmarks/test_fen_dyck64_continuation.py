"""The fen_dyck_64 continuation benchmark runs end to end (tiny)."""

import json
from pathlib import Path

import pytest

from keras_msets.testing import load_script

SCRIPT = (
    Path(__file__).resolve().parents[2]
    / "benchmarks"
    / "fen_dyck64_continuation.py"
)


@pytest.mark.slow
def test_fen_dyck64_continuation_tiny(tmp_path):
    script = load_script(SCRIPT)
    output = tmp_path / "continuation.json"
    argv = ["--steps", "2", "--epochs", "1", "--test-size", "40"]
    script.main(argv + ["--output", str(output)])
    saved = json.loads(output.read_text())
    assert len(saved["history"]) == 1
    for metrics in (saved["before"], saved["after"]):
        assert 0.0 <= metrics["accuracy"] <= 1.0
    # The kept weights are the best on the dev set, never worse than the
    # preset's own.
    assert saved["best_dev_accuracy"] >= 0.8
    # Fresh strings every epoch: two epochs of the stream differ.
    stream = script.FreshDyck(steps=1, batch_size=8, seed=0)
    first = stream[0][0]
    stream.on_epoch_end()
    assert (stream[0][0] != first).any()
