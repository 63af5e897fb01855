"""The Table 2 benchmark runs end to end in smoke mode."""

import json
from pathlib import Path

import numpy as np
import pytest

from keras_msets.testing import load_script

SCRIPT = (
    Path(__file__).resolve().parents[2]
    / "benchmarks"
    / "complex_order_table2.py"
)


def _load_script():
    return load_script(SCRIPT)


@pytest.mark.slow
def test_complex_order_table2_smoke(tmp_path, capsys):
    script = _load_script()
    output = tmp_path / "table2.json"
    argv = [
        "--smoke",
        "--architectures",
        "fasttext",
        "--embeddings",
        "none",
        "complex_order",
        "--output",
        str(output),
    ]
    results = script.main(argv)
    saved = json.loads(output.read_text())
    settings = saved["settings"]["numbers"]
    assert settings["smoke"] is True
    assert settings["backend"] == results["settings"]["backend"]
    pairs = {(r["architecture"], r["embedding"]) for r in saved["results"]}
    assert pairs == {("fasttext", "none"), ("fasttext", "complex_order")}
    for r in saved["results"]:
        assert len(r["fold_accuracies"]) == 1
        assert 0.0 <= r["mean"] <= 1.0 and r["std"] == 0.0
        assert r["params"] > 0 and np.isfinite(r["seconds"])
    # The complex model has amplitudes and frequencies: twice the table.
    params = {r["embedding"]: r["params"] for r in saved["results"]}
    assert params["complex_order"] > params["none"]
    assert set(saved["complex_order_best"]) == {"fasttext"}
    table = capsys.readouterr().out
    assert "| FastText | Complex-order |" in table
    assert "0.787 |" in table and "0.765 |" in table  # the paper's MR
    # A rerun with the same settings reuses the saved pairs.
    again = script.main(argv)
    assert "done before" in capsys.readouterr().out
    assert again["results"].keys() == results["results"].keys()


def test_best_variant_check():
    script = _load_script()

    def result(mean):
        return {"mean": mean}

    results = {
        ("cnn", "none"): result(0.80),
        ("cnn", "pe"): result(0.82),
        ("cnn", "complex_order"): result(0.81),
        ("lstm", "tpe"): result(0.70),
        ("lstm", "complex_order"): result(0.75),
        ("fasttext", "none"): result(0.70),
    }
    verdict = script.best_variant_check(results, ["cnn", "lstm", "fasttext"])
    assert verdict["cnn"]["complex_order_best"] is False
    assert verdict["cnn"]["best_other"] == "pe"
    assert verdict["lstm"]["complex_order_best"] is True
    assert "fasttext" not in verdict  # no complex-order run


def test_paper_numbers_cover_the_grid():
    script = _load_script()
    from keras_msets.layers.position_embeddings import EMBEDDING_VARIANTS
    from keras_msets.models.text.classifiers import ARCHITECTURES

    assert set(script.PAPER_MR) == set(ARCHITECTURES)
    for architecture, row in script.PAPER_MR.items():
        assert set(row) == set(EMBEDDING_VARIANTS)
        # In the paper complex-order is the best of each row.
        assert max(row, key=row.get) == "complex_order", architecture


def test_merge_folds_extends_a_saved_run():
    script = _load_script()

    def run(folds, accuracies):
        return {
            "architecture": "cnn",
            "embedding": "pe",
            "folds": folds,
            "fold_accuracies": accuracies,
            "fold_seconds": [1.0] * len(folds),
            "epochs_trained": [3] * len(folds),
            "glove_coverage": [0.9] * len(folds),
            "params": 10,
        }

    saved = run([0, 1, 2], [0.7, 0.8, 0.9])
    merged = script.merge_folds(saved, run([3], [0.6]), [0, 1, 2, 3])
    assert merged["folds"] == [0, 1, 2, 3]
    assert merged["fold_accuracies"] == [0.7, 0.8, 0.9, 0.6]
    np.testing.assert_allclose(merged["mean"], 0.75)
    np.testing.assert_allclose(
        merged["std"], np.std([0.7, 0.8, 0.9, 0.6], ddof=1)
    )
    assert merged["seconds"] == 4.0
    # Fewer folds than saved: the first ones are kept.
    subset = script.merge_folds(saved, None, [0, 1])
    assert subset["fold_accuracies"] == [0.7, 0.8]


def test_paired_comparisons():
    script = _load_script()

    def result(folds, accuracies):
        return {"folds": folds, "fold_accuracies": accuracies}

    results = {
        ("cnn", "complex_order"): result([0, 1, 2, 3], [0.8, 0.7, 0.9, 0.6]),
        # Complex-order wins 3 folds and ties one against "none".
        ("cnn", "none"): result([0, 1, 2, 3], [0.7, 0.6, 0.9, 0.5]),
        # Only folds 1 and 3 are shared with "pe": both lost.
        ("cnn", "pe"): result([1, 3, 5], [0.9, 0.7, 0.1]),
        ("lstm", "none"): result([0], [0.5]),
    }
    comparisons = script.paired_comparisons(results, ["cnn", "lstm"])
    assert set(comparisons) == {"cnn"}  # no complex-order LSTM run
    none = comparisons["cnn"]["none"]
    assert none["folds"] == 4 and none["wins"] == 3.5
    assert abs(none["mean_difference"] - 0.075) < 1e-12
    assert 0.0 < none["wilcoxon_p"] <= 1.0
    pe = comparisons["cnn"]["pe"]
    assert pe["folds"] == 2 and pe["wins"] == 0.0
    assert abs(pe["mean_difference"] + 0.15) < 1e-12
    table = script.comparison_table(comparisons)
    assert "| CNN | none | 3.5 of 4 | +0.075 |" in table
