import os
import subprocess
import sys

import pytest

import keras_msets
from keras_msets import testing
from keras_msets.testing import test_case

PUBLIC = (
    "TestCase",
    "assert_all_close",
    "assert_all_equal",
    "assert_padding_invariant",
    "assert_permutation_equivariant",
    "assert_permutation_invariant",
    "load_script",
    "check_cross_backend_load",
    "check_golden",
    "golden_case",
    "load_golden",
    "write_golden",
)


def test_every_public_name_is_importable():
    assert sorted(testing.__all__) == sorted(PUBLIC)
    for name in PUBLIC:
        assert callable(getattr(testing, name)), name


def test_test_case_module_keeps_its_names():
    for name in PUBLIC[:6]:
        assert getattr(test_case, name) is getattr(testing, name), name
    assert test_case.NOT_GIVEN is not None


@pytest.mark.slow
def test_golden_command_line_runs_its_module_once():
    # The package imports `golden` lazily; importing it eagerly would make
    # `python -m keras_msets.testing.golden` execute the module twice.
    root = os.path.dirname(os.path.dirname(keras_msets.__file__))
    result = subprocess.run(
        [
            sys.executable,
            "-W",
            "error::RuntimeWarning",
            "-m",
            "keras_msets.testing.golden",
            "list",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "masked_set_pooling" in result.stdout.split()
