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


def test_there_are_tutorials():
    assert TUTORIALS


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_runs_in_smoke_mode(path, tmp_path):
    env = dict(os.environ)
    env.update(
        KERAS_MSETS_SMOKE="1",
        KERAS_MSETS_TUTORIAL_DIR=str(tmp_path),
        KERAS_BACKEND=keras.backend.backend(),
        MPLBACKEND="Agg",
    )
    result = subprocess.run(
        [sys.executable, str(path)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    pngs = list(tmp_path.glob("*.png"))
    assert pngs, "the tutorial saved no figure"
