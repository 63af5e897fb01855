"""`TutorialOutputs`: a tutorial's output folder and its smoke mode.

Backend-independent (argument parsing and files only); every tutorial's
use of it runs in tests/tutorials/test_tutorials.py.
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from keras_msets.utils.tutorial_outputs import SMOKE_ENV  # noqa: E402
from keras_msets.utils.tutorial_outputs import TutorialOutputs  # noqa: E402

pytestmark = pytest.mark.backend_independent


def test_a_folder_with_files_is_refused_unless_overwrite(tmp_path, monkeypatch):
    monkeypatch.delenv(SMOKE_ENV, raising=False)
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "earlier.png").write_bytes(b"kept")
    with pytest.raises(SystemExit, match="already holds files") as error:
        TutorialOutputs("t", argv=["--output-dir", str(folder)])
    assert "--overwrite" in str(error.value)
    assert (folder / "earlier.png").read_bytes() == b"kept"
    outputs = TutorialOutputs(
        "t", argv=["--output-dir", str(folder), "--overwrite", "--other"]
    )
    assert outputs.directory == str(folder) and not outputs.smoke
    outputs.save_figure("figure.png", plt.figure())
    assert sorted(p.name for p in folder.iterdir()) == [
        "earlier.png",
        "figure.png",
    ]


def test_an_empty_or_new_folder_is_taken_and_smoke_mode_writes_nothing(
    tmp_path, monkeypatch, capsys
):
    (tmp_path / "empty").mkdir()
    monkeypatch.delenv(SMOKE_ENV, raising=False)
    outputs = TutorialOutputs(
        "t", argv=["--output-dir", str(tmp_path / "empty")]
    )
    assert "Figures go to " + str(tmp_path / "empty") in capsys.readouterr().out
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(SMOKE_ENV, "1")
    outputs = TutorialOutputs("name", argv=[])
    assert outputs.smoke and outputs.directory.endswith("name")
    assert "nowhere (smoke mode)" in capsys.readouterr().out
    outputs.save_figure("figure.png", plt.figure())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]
