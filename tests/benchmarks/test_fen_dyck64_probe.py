"""The Dyck-1 encoding probe: its counts, and a run on the shipped preset."""

import json
from pathlib import Path

import numpy as np
import pytest

from keras_msets import data
from keras_msets.testing import load_script

SCRIPT = (
    Path(__file__).resolve().parents[2] / "benchmarks" / "fen_dyck64_probe.py"
)


def test_bicyclic_counts_by_hand_and_against_is_dyck1():
    script = load_script(SCRIPT)
    # ")(()" : one unmatched ")", then "(()" leaves one "(" open.
    x = np.array([[2, 1, 1, 2], [1, 2, 1, 2], [2, 2, 1, 1]])
    closing, opening = script.bicyclic_counts(x, 0, 4)
    np.testing.assert_array_equal(closing, [1, 0, 2])
    np.testing.assert_array_equal(opening, [1, 0, 2])
    closing, opening = script.bicyclic_counts(x, 1, 3)
    np.testing.assert_array_equal(closing, [0, 1, 1])
    np.testing.assert_array_equal(opening, [2, 1, 1])
    strings, labels = data.dyck1(200, 16, seed=3)
    closing, opening = script.bicyclic_counts(strings, 0, 16)
    np.testing.assert_array_equal((closing == 0) & (opening == 0), labels == 1)


@pytest.mark.slow
def test_probe_on_the_shipped_preset(tmp_path):
    script = load_script(SCRIPT)
    output = tmp_path / "probe.json"
    result = script.main(["--num", "40", "--output", str(output)])
    rows = json.loads(output.read_text())["rows"]
    assert rows == result["rows"]
    assert [r["segment_length"] for r in rows] == [1, 2, 4, 8, 16, 32, 64]
    # Two tokens, two encodings: a linear map recovers a single bracket's
    # counts exactly, whatever the weights.
    assert rows[0]["closing_exact"] == 1.0 and rows[0]["net_exact"] == 1.0
    for r in rows:
        assert 0.0 <= r["net_exact"] <= 1.0 and np.isfinite(r["net_mae"])
