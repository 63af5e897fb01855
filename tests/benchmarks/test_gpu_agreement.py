"""The comparison of `benchmarks/gpu_agreement.py` (runs on the CPU)."""

from pathlib import Path

import numpy as np
import pytest

from keras_msets.testing import load_script

# numpy comparisons: the same on every backend.
pytestmark = pytest.mark.backend_independent

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_agreement.py"


@pytest.fixture(scope="module")
def script():
    return load_script(SCRIPT)


def test_compare_reports_differences_and_the_1e5_tolerance(script):
    expected = {"a": np.array([1.0, 200.0]), "b": np.array([np.nan])}
    same = script.compare(
        {"a": np.array([1.0, 200.0]), "b": np.array([np.nan])}, expected
    )
    assert same == {"max_abs": 0.0, "max_rel": 0.0, "passes_1e-5": True}
    # 1e-3 off at 200 is within rtol 1e-5 * 200; 3e-5 off at 1 is not.
    near = script.compare(
        {"a": np.array([1.0, 200.001]), "b": np.array([np.nan])}, expected
    )
    assert near["passes_1e-5"]
    far = script.compare(
        {"a": np.array([1.00003, 200.0]), "b": np.array([np.nan])}, expected
    )
    assert not far["passes_1e-5"]
    np.testing.assert_allclose(far["max_abs"], 3e-5, rtol=1e-6)


def test_compare_fails_a_nan_against_a_number_and_a_shape_change(script):
    nan = script.compare([np.array([np.nan])], [np.array([0.0])])
    assert not nan["passes_1e-5"] and np.isnan(nan["max_abs"])
    with pytest.raises(AssertionError, match="shape"):
        script.compare([np.zeros(2)], [np.zeros(3)])
