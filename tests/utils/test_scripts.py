"""`keras_msets.utils.scripts.load_script`."""

import pytest

from keras_msets.testing import scripts as testing_scripts
from keras_msets.utils.scripts import load_script


def test_load_script_runs_the_file_each_time(tmp_path):
    path = tmp_path / "script.py"
    path.write_text("VALUE = 3\nCALLS = []\n")
    first = load_script(path)
    second = load_script(path)
    assert first.VALUE == 3 and first is not second
    assert first.CALLS is not second.CALLS
    assert load_script(path, name="custom").__name__ == "custom"
    assert testing_scripts.load_script is load_script


def test_load_script_refuses_a_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="must name an existing"):
        load_script(tmp_path / "missing.py")
