"""The plain FEN of `benchmarks/speed_vs_plain.py` reads the same tree."""

from pathlib import Path

import numpy as np
import pytest

from keras_msets.models import FusionSegments
from keras_msets.testing import load_script

SCRIPT = (
    Path(__file__).resolve().parents[2] / "benchmarks" / "speed_vs_plain.py"
)


@pytest.mark.parametrize("n", [2, 8, 64])
def test_plain_fen_plan_matches_the_segments(n):
    levels, before, after = load_script(SCRIPT).fen_plan(n)
    segments = FusionSegments(n)
    # Both number the segments alike: singletons 1..n, then by height.
    assert len(before) == segments.num_segments
    np.testing.assert_array_equal(before, segments.left_context)
    np.testing.assert_array_equal(after, segments.right_context)
    assert len(levels) == segments.depth
    for (left, right), level in zip(levels, segments.levels, strict=True):
        np.testing.assert_array_equal(left, level["left"])
        np.testing.assert_array_equal(right, level["right"])
