"""Choices are made on development data, reports on untouched test data.

`benchmarks/units_digit_seeds.py` chooses the units-digit seed on
development lengths; `benchmarks/mst_dev_selection.py` chooses between
Multi-Set Transformer candidates on development pairs and reports on
untouched pairs; `benchmarks/mst_tables.py` names the row chosen on its
development pairs. No training and no preset here: fake models and
stored-looking records, so each check is fast.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from keras_msets.testing import load_script
from keras_msets.training.tasks import mst

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


class _UnitsDigit:
    """Right on every sequence shorter than `breaks_at`, off by 3 beyond."""

    def __init__(self, breaks_at):
        self.breaks_at = breaks_at

    def predict(self, x, batch_size=None, verbose=0):
        answer = (np.sum(x, axis=1, keepdims=True) % 10).astype("float32")
        return answer + (3.0 if x.shape[1] >= self.breaks_at else 0.0)


def test_units_digit_seed_is_chosen_on_lengths_no_test_uses(monkeypatch):
    script = load_script(BENCHMARKS / "units_digit_seeds.py")
    test_lengths = set(script.TEST_LENGTHS) | set(script.LENGTHS)
    assert not set(script.DEV_LENGTHS) & test_lengths
    # Data seeds of the cards (1), tests/zoo (3) and the analysis (5).
    assert script.DEV_SEED not in (1, 3, 5, script.UNTOUCHED_TEST_SEED)
    monkeypatch.setattr(script, "NUM_PER_LENGTH", 20)
    # Listed first, so it would win a tie; it breaks at 400 on dev.
    models = {"seed 0": _UnitsDigit(400), script.SHIPPED: _UnitsDigit(10**6)}
    selection = script.select_on_dev(models)
    assert selection["chosen"] == script.SHIPPED
    assert selection["chosen_is_shipped"]
    assert selection["dev"]["seed 0"]["by_length"]["400"] == 0.0
    assert selection["dev"]["seed 0"]["mean_accuracy"] == pytest.approx(2 / 3)
    # A tie goes to the first (lower) seed.
    models = {"seed 0": _UnitsDigit(10**6), script.SHIPPED: _UnitsDigit(10**6)}
    assert script.select_on_dev(models)["chosen"] == "seed 0"
    # Dev lengths that overlap a test length are refused.
    monkeypatch.setattr(script, "DEV_LENGTHS", (150, 500))
    with pytest.raises(ValueError, match="overlap"):
        script.select_on_dev(models)


def _fake_mst(script, monkeypatch, dev, test):
    """Candidates whose metrics depend on the seed they are measured on."""
    seen = []

    def measure(name, model, seed, num, d):
        seen.append((model, seed, num))
        table = dev if seed == script.DEV_SEED else test
        assert seed in (script.DEV_SEED, script.UNTOUCHED_TEST_SEED)
        return {"accuracy": table[model]}

    def candidates(name, extra):
        return {
            label: (lambda label=label: (label, f"sha-{label}"))
            for label in dev
        }

    monkeypatch.setattr(script, "measure", measure)
    monkeypatch.setattr(script, "candidates", candidates)
    return seen


def test_mst_candidates_are_chosen_on_dev_and_reported_on_test(
    tmp_path, monkeypatch
):
    script = load_script(BENCHMARKS / "mst_dev_selection.py")
    script.check_seeds()
    tables = load_script(BENCHMARKS / "mst_tables.py")
    assert script.DEV_SEED == tables.DEV_SEED
    dev = {"shipped": 0.70, "other": 0.75}
    test = {"shipped": 0.80, "other": 0.60}  # the test would choose otherwise
    seen = _fake_mst(script, monkeypatch, dev, test)
    output = tmp_path / "selection.json"
    argv = ["--presets", "mst_two_sample", "--output", str(output)]
    results = script.run(script.parse_args(argv))
    chosen = results["selections"]["mst_two_sample"]
    assert chosen["chosen_on_dev"] == "other"
    assert not chosen["chosen_is_shipped"]
    # The chosen one and the shipped one, on untouched pairs only.
    assert chosen["untouched_test"] == {
        "other": {"accuracy": 0.60},
        "shipped": {"accuracy": 0.80},
    }
    assert sorted((m, s) for m, s, _ in seen) == sorted(
        [
            ("shipped", script.DEV_SEED),
            ("other", script.DEV_SEED),
            ("other", script.UNTOUCHED_TEST_SEED),
            ("shipped", script.UNTOUCHED_TEST_SEED),
        ]
    )
    saved = json.loads(output.read_text())
    assert len(saved["measurements"]) == 4
    # A rerun measures nothing again.
    seen.clear()
    script.run(script.parse_args(argv))
    assert seen == []


def test_mst_regression_score_is_relative_to_the_best_constant():
    script = load_script(BENCHMARKS / "mst_dev_selection.py")
    metrics = {
        "mae_d1": 0.05,
        "median_mae_d1": 0.1,
        "mae_d2": 0.3,
        "median_mae_d2": 0.2,
        "mae_d3": 0.2,
        "median_mae_d3": 0.4,
    }
    # Ratios 0.5, 1.5 and 0.5: mean 0.833, negated (higher is better).
    assert script.score("mst_kl_divergence_low_d", metrics) == pytest.approx(
        -2.5 / 3
    )


def _row(name, d, dev=None, test=0.5):
    row = {"model": name, "d": d, "seed": 0, "ours": {"mae": test}}
    if dev is not None:
        row["dev"] = {"mae": dev}
    return row


def test_mst_tables_names_the_row_chosen_on_dev_not_on_test():
    script = load_script(BENCHMARKS / "mst_tables.py")
    rows = [
        _row("multiset_transformer", 2, dev=0.20, test=0.10),
        _row("cross_only", 2, dev=0.15, test=0.30),
        _row("union_transformer", 2, dev=None, test=0.01),
        _row("cross_only", 4, dev=None),
    ]
    results = {script._row_key(r): r for r in rows}
    lines = script.chosen_on_dev(1, results)
    assert lines[0] == (
        "Chosen on development pairs at d = 2: Cross-Only (dev mae 0.1500; "
        "2 of 3 rows measured on dev)."
    )
    assert lines[1].startswith("No row at d = 4 was measured on development")
    accuracy = {
        script._row_key(r): dict(r, ours={}, dev={"accuracy": a})
        for r, a in zip(rows[:2], (0.7, 0.6), strict=True)
    }
    assert (
        "Multi-Set Transformer (dev accuracy 0.7000"
        in (script.chosen_on_dev(4, accuracy)[0])
    )


def test_mst_tables_measures_each_row_on_dev_pairs(tmp_path, capsys):
    script = load_script(BENCHMARKS / "mst_tables.py")
    argv = ["--table", "4", "--models", "single_set_deepsets"]
    argv += ["--test-size", "4", "--dev-size", "6", "--steps", "1"]
    argv += ["--batch-size", "4", "--tiny", "--verbose", "0"]
    script.main(argv + ["--output", str(tmp_path / "t4.json")])
    (row,) = json.loads((tmp_path / "t4.json").read_text())["results"]
    assert 0.0 <= row["dev"]["accuracy"] <= 1.0
    assert "Chosen on development pairs: Single-Set RFF" in (
        capsys.readouterr().out
    )
    with pytest.raises(SystemExit):
        script.parse_args(["--table", "2", "--dev-size", "5"])
    assert script.DEV_SEED - mst.TEST_SEED == 8000
