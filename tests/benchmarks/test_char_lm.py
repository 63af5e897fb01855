"""The character language-model benchmark runs, stores and resumes."""

import json
from pathlib import Path

import numpy as np
import pytest

from keras_msets.testing import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "char_lm.py"
# TORCH_ONLY_RUNS: the script's documented runs are on torch (RESULTS);
# its tests that train (store, resume, score stored weights) check
# bookkeeping and run on one backend under `make test`; the layers
# its models are built from are checked on every backend in tests/layers.
WORDS = "in the beginning god created the heavens and the earth".split()
BOOKS = {"train": ["Gen", "Exod"], "dev": ["Lev"], "test": ["Num"]}


def _rows():
    rng = np.random.default_rng(0)
    rows = []
    for book in ("Gen", "Exod", "Lev", "Num"):
        for verse in range(1, 9):
            words = rng.choice(WORDS, size=8)
            rows.append((book, 1, verse, " ".join(words) + ".", "-"))
    return rows


def test_normalise_and_windows():
    script = load_script(SCRIPT)
    text = script.normalise("In the beginning, God (Elohim) created 2 worlds!")
    assert text == "in the beginning god elohim created worlds"
    ids = script.encode(text)
    assert ids.min() >= 1 and ids.max() <= 27
    inputs, targets = script.windows(ids, 8)
    # Every character after the first is a target exactly once, predicted
    # from the characters before it in its window.
    np.testing.assert_array_equal(targets[targets > 0], ids[1:])
    np.testing.assert_array_equal(
        inputs[:, 1:], targets[:, :-1] * (inputs[:, 1:] > 0)
    )
    with pytest.raises(ValueError, match="normalised"):
        script.encode("Not normalised")


@pytest.mark.slow
@pytest.mark.backend_independent  # see TORCH_ONLY_RUNS
def test_runs_are_stored_and_resumed(tmp_path, monkeypatch):
    script = load_script(SCRIPT)
    argv = [
        "--tiny",
        "--rows",
        "tpe",
        "complex_order",
        "--seeds",
        "0",
        "--verbose",
        "0",
        "--output-dir",
        str(tmp_path),
    ]
    done = script.main(argv, rows=_rows(), books=BOOKS)
    assert set(done) == {("tpe", 0), ("complex_order", 0)}
    for row in ("tpe", "complex_order"):
        saved = json.loads((tmp_path / f"tiny_{row}_seed0.json").read_text())
        result = saved["result"]
        # Untrained on 27 symbols: near log2(27) = 4.75 bits per character.
        assert 3.0 < result["test_bpc"] < 6.5
        assert saved["data"]["books"] == BOOKS
    # Same real width for every row: the complex rows have dim / 2 complex
    # dimensions, so the networks after the embedding are the same size.
    assert done[("tpe", 0)]["params"] == done[("complex_order", 0)]["params"]

    def no_training(*args, **kwargs):
        raise AssertionError("a stored run was trained again")

    monkeypatch.setattr(script, "run_one", no_training)
    again = script.main(argv, rows=_rows(), books=BOOKS)
    assert again == done
    # A stored run made with other settings is never taken for this one.
    path = tmp_path / "tiny_tpe_seed0.json"
    saved = json.loads(path.read_text())
    saved["settings"]["steps"] += 1
    path.write_text(json.dumps(saved))
    with pytest.raises(ValueError, match="other settings"):
        script.main(argv, rows=_rows(), books=BOOKS)
