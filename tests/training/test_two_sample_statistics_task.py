"""`keras_msets.training.tasks.two_sample_statistics`: tables and card."""

import json

import numpy as np
import pytest

from keras_msets.training.tasks import two_sample_statistics as task


def test_reliability_counts_each_bin_against_numpy():
    probability = np.array([0.05, 0.07, 0.55, 0.58, 0.95, 1.0])
    same = np.array([False, False, True, False, True, True])
    rows = task.reliability(probability, same)
    assert [r[:3] for r in rows] == [
        (0.0, pytest.approx(0.1), 2),
        (0.5, pytest.approx(0.6), 2),
        (pytest.approx(0.9), 1.0, 2),
    ]
    assert [r[3] for r in rows] == [0.0, 0.5, 1.0]
    np.testing.assert_allclose([r[4] for r in rows], [0.06, 0.565, 0.975])


def test_benchmark_table_reads_the_stored_accuracies(tmp_path):
    path = tmp_path / "summary.json"
    accuracy = {
        "mmd": {"mean": 0.63},
        "c2st": {"mean": 0.556},
        "statistics": {"mean": 0.685},
    }
    aggregate = {"two_sample_n50": {"mean_accuracy": accuracy}}
    path.write_text(json.dumps({"aggregate": aggregate}))
    assert "| 50 | 0.630 | 0.556 | 0.685 |" in task.benchmark_table(path)
    missing = task.benchmark_table(tmp_path / "none.json")
    assert missing.startswith("Benchmark:") and "estimator_benchmark" in missing


def test_feature_table_refuses_an_unknown_split(tmp_path):
    with pytest.raises(ValueError, match="`split` must be one of"):
        task.feature_table("dev", cache_dir=tmp_path)
