"""Every tutorial runs end to end in smoke mode on the current backend."""

import os
import subprocess
import sys
from pathlib import Path

import keras
import pytest

TUTORIALS = sorted(
    (Path(__file__).resolve().parents[2] / "tutorials").glob("*.py")
)


def _run(path, cwd, *args):
    env = dict(os.environ)
    env.update(
        KERAS_MSETS_SMOKE="1",
        KERAS_BACKEND=keras.backend.backend(),
        MPLBACKEND="Agg",
    )
    return subprocess.run(
        [sys.executable, str(path), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_there_are_tutorials():
    assert TUTORIALS


@pytest.mark.slow
@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_runs_in_smoke_mode(path, tmp_path):
    result = _run(path, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    # Its figures are drawn but not written: a smoke run's numbers mean
    # nothing. Nothing lands in the current directory either.
    assert "Figures go to nowhere (smoke mode)" in result.stdout
    assert list(tmp_path.iterdir()) == []


# The refusal comes before any model is built; tests/utils/
# test_tutorial_outputs.py checks it without starting a tutorial.
@pytest.mark.slow
@pytest.mark.backend_independent
@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_refuses_a_folder_with_files(path, tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "earlier.png").write_bytes(b"kept")
    result = _run(path, tmp_path, "--output-dir", str(folder))
    assert result.returncode != 0
    assert "already holds files" in result.stderr
    assert "--overwrite" in result.stderr
    assert (folder / "earlier.png").read_bytes() == b"kept"
