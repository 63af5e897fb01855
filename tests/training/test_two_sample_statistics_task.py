"""`keras_msets.training.tasks.two_sample_statistics`: tables and card."""

import json
from pathlib import Path

import numpy as np
import pytest

from keras_msets.training.tasks import two_sample_statistics as task
from keras_msets.zoo import registry


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


def test_size_offset_grows_with_the_smaller_set_between_its_bounds():
    rule = {"per_log_points": 0.5, "from_points": 300, "to_points": 2000}
    n = np.array([50, 300, 1000, 5000, 1000])
    m = np.array([5000, 400, 1000, 5000, 100])
    np.testing.assert_allclose(
        task.size_offset(rule, n, m),
        [0.0, 0.0, 0.5 * np.log(1000 / 300), 0.5 * np.log(2000 / 300), 0.0],
    )
    np.testing.assert_array_equal(task.size_offset(None, n, m), 0.0)
    with pytest.raises(ValueError, match="from_points <= to_points"):
        task.size_offset(dict(rule, to_points=100), n, m)


def test_the_recipe_declares_the_offset_chosen_on_development_seeds():
    root = Path(__file__).resolve().parents[2]
    design = json.loads(
        (
            root / "benchmarks/results/two_sample_statistics/"
            "design_size_offset.json"
        ).read_text()
    )
    # Chosen on development seeds only (the estimator benchmark holds out
    # seeds 2-4), by the documented rule: the most right decisions over
    # n = 50, 150 and 1,000, none of the four n more than one decision
    # below no offset, then the lowest validation log loss.
    assert not set(design["seeds"]) & {2, 3, 4}
    pairs, base = design["pairs_per_n"], design["none"]

    def key(entry):
        return (
            round(entry["sum_50_150_1000"] * pairs),
            -entry["validation_log_loss"],
        )

    allowed = [
        e
        for e in design["grid"]
        if all(
            (base["accuracy"][n] - a) * pairs <= 1 + 1e-9
            for n, a in e["accuracy"].items()
        )
    ]
    assert max([base, *allowed], key=key)["rule"] == design["chosen"]
    recipe = registry.load_recipe("two_sample_statistics")
    assert recipe.SERVES["size_offset"] == design["chosen"]
    # ... and the shipped preset serves it (`--serves-only`).
    metadata = registry.info("two_sample_statistics")
    assert metadata["serves"]["size_offset"] == design["chosen"]
    text = task.served_reliability_text(recipe.SIZE_OFFSET)
    assert "0.5 x log(min(n, m) / 300)" in text and "| 0.0-0.1 |" in text
