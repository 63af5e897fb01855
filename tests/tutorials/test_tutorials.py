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


# Runs each tutorial named on its command line in this one process,
# with `--output-dir` set to the folder named first, and prints how each
# stopped: a tutorial that refuses the folder exits while it reads its
# command line, before any model is built.
REFUSALS = """
import runpy
import sys

folder, *paths = sys.argv[1:]
for path in paths:
    sys.argv = [path, "--output-dir", folder]
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as exit:
        print("EXIT", path, exit.code, sep="\\t")
    else:
        print("RAN", path, sep="\\t")
"""


# The refusal comes before any model is built; tests/utils/
# test_tutorial_outputs.py checks it without starting a tutorial. One
# process runs every tutorial up to its refusal, so their imports (Keras,
# the backend, KerasHub) are paid once.
@pytest.mark.slow
@pytest.mark.backend_independent
def test_tutorials_refuse_a_folder_with_files(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "earlier.png").write_bytes(b"kept")
    result = _run("-c", tmp_path, REFUSALS, str(folder), *map(str, TUTORIALS))
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [s.split("\t") for s in result.stdout.splitlines()]
    stops = {line[1]: line for line in lines if line[0] in ("EXIT", "RAN")}
    assert sorted(stops) == sorted(map(str, TUTORIALS))
    for path, stop in stops.items():
        assert stop[0] == "EXIT", f"{path} ran with a folder holding files"
        assert "already holds files" in stop[2], (path, stop)
        assert "--overwrite" in stop[2], (path, stop)
    assert (folder / "earlier.png").read_bytes() == b"kept"
    assert sorted(p.name for p in folder.iterdir()) == ["earlier.png"]
