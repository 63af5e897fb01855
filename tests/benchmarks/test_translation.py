"""The translation benchmark runs on the fixture rows, resumes and skips."""

import json
from pathlib import Path

import numpy as np
import pytest

from keras_msets.testing import load_script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "translation.py"
FIXTURE = ROOT / "tests" / "data" / "fixtures" / "bible_sample.tsv"
ARGS = [
    "--config",
    "tiny",
    "--pairs",
    str(FIXTURE),
    "--dev-books",
    "Ruth",
    "--test-books",
    "Matt",
    "John",
    "--seeds",
    "1",
]


def test_vocabulary_and_ids():
    script = load_script(SCRIPT)
    sentences = [script.tokenize("The man, the woman."), ["the", "king"]]
    assert sentences[0] == ["the", "man", ",", "the", "woman", "."]
    vocabulary = script.build_vocabulary(sentences, 6)
    assert vocabulary == ["<pad>", "<unk>", "<s>", "</s>", "the", ","]
    ids = script.encode([["the", "king"]], vocabulary, 5, bos=True, eos=True)
    assert ids.tolist() == [[2, 4, 1, 3, 0]]


@pytest.mark.slow
def test_runs_resume_and_skip(tmp_path, capsys):
    script = load_script(SCRIPT)
    rows = ["diagonal_polar_fixed", "rotary"]
    args = ARGS + ["--output-dir", str(tmp_path), "--rows", *rows]
    first = script.main(args + ["--keep-checkpoints"])
    assert first["finished"] == [(row, 0) for row in rows]
    for row in rows:
        saved = json.loads((tmp_path / row / "seed0.json").read_text())
        result = saved["result"]
        assert 0.0 <= result["test_bleu"] <= 100.0
        assert np.isfinite(list(result["dev_loss_by_step"].values())).all()
        assert result["best_step"] in (2, 4)
        assert saved["settings"]["data_sizes"] == {
            "train": 13,
            "dev": 4,
            "test": 8,
        }
    # Finished runs are skipped.
    assert script.main(args)["finished"] == []
    # A run whose result is lost restarts from its last checkpoint: no
    # training step is left, and decoding the best weights again gives
    # the same translations.
    path = tmp_path / "rotary" / "seed0.json"
    before = json.loads(path.read_text())["result"]
    path.unlink()
    capsys.readouterr()
    again = script.main(args)
    assert again["finished"] == [("rotary", 0)]
    assert "step" not in capsys.readouterr().out.split("rotary seed 0: test")[0]
    after = json.loads(path.read_text())["result"]
    assert after["test_examples"] == before["test_examples"]
    assert after["test_bleu"] == before["test_bleu"]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary["summary"]) == set(rows)


def test_rejects_a_run_made_with_another_configuration(tmp_path):
    script = load_script(SCRIPT)
    saved = tmp_path / "none" / "seed0.json"
    saved.parent.mkdir()
    config = dict(script.TINY, steps=8)
    saved.write_text(json.dumps({"settings": {"config": config}}))
    args = ARGS + ["--output-dir", str(tmp_path), "--rows", "none"]
    with pytest.raises(ValueError, match="another configuration"):
        script.main(args)
