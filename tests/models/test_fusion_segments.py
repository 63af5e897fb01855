import math

import numpy as np
import pytest

from keras_msets.models.fen.segments import FusionSegments
from keras_msets.models.fen.segments import padded_length
from keras_msets.testing import TestCase

LENGTHS = [2**k for k in range(11)]  # 1 ... 1024


def _tree_vertices(n):
    """Internal vertices of the balanced tree as (a, m, b): leftmost leaf,
    rightmost leaf of the left child, rightmost leaf."""
    size = 2
    while size <= n:
        for a in range(1, n + 1, size):
            yield a, a + size // 2 - 1, a + size - 1
        size *= 2


class FusionSegmentsTest(TestCase):
    def test_four_properties_of_section_6(self):
        for n in LENGTHS:
            s = FusionSegments(n)
            members = set(s.segments)
            self.assertEqual(len(members), len(s.segments), "duplicates")
            for i, j in s.segments:
                # (1) i <= j, inside [1, N].
                self.assertTrue(1 <= i <= j <= n)
                if i == j:
                    self.assertNotIn((i, j), s.sigma)
                    continue
                m = s.sigma[(i, j)]
                # (2) sigma(i, j) in [i, j - 1].
                self.assertTrue(i <= m <= j - 1)
                # (3) both parts are segments.
                self.assertIn((i, m), members)
                self.assertIn((m + 1, j), members)
            # (4) every prefix and every suffix is a segment.
            for i in range(1, n + 1):
                self.assertIn((1, i), members)
                self.assertIn((i, n), members)

    def test_size_grows_as_n_log_n(self):
        for n in LENGTHS:
            s = FusionSegments(n)
            self.assertEqual(s.num_segments, n * int(math.log2(n)) + 1)
            self.assertEqual(s.depth, int(math.log2(n)))
        # |S| / (N log N) tends to 1.
        ratios = [
            FusionSegments(n).num_segments / (n * math.log2(n))
            for n in LENGTHS[1:]
        ]
        self.assertTrue(all(np.diff(ratios) < 0))
        self.assertLess(abs(ratios[-1] - 1), 1e-3)

    def test_sigma_follows_section_11_by_brute_force(self):
        # S and sigma from the definition of Sec. 11, over all pairs.
        for n in [1, 2, 4, 8, 16, 32]:
            expected = {}
            for i in range(1, n + 1):
                for j in range(i + 1, n + 1):
                    owners = [
                        m
                        for a, m, b in _tree_vertices(n)
                        if (i == a and m + 1 <= j <= b)
                        or (j == b and a <= i <= m)
                    ]
                    self.assertLessEqual(len(owners), 1, (i, j))
                    if owners:
                        expected[(i, j)] = owners[0]
            s = FusionSegments(n)
            self.assertEqual(s.sigma, expected)
            singletons = {(i, i) for i in range(1, n + 1)}
            self.assertEqual(set(s.segments), singletons | set(expected))

    def test_levels_depend_only_on_lower_levels(self):
        for n in [1, 2, 8, 64, 1024]:
            s = FusionSegments(n)
            self.assertEqual(len(s.levels), s.depth)
            computed = set(range(1, n + 1))
            for height, level in enumerate(s.levels, start=1):
                self.assertTrue(
                    np.all(s.heights[level["segments"] - 1] == height)
                )
                for k, left, right in zip(
                    level["segments"],
                    level["left"],
                    level["right"],
                    strict=True,
                ):
                    i, j = s.segments[k - 1]
                    m = s.sigma[(i, j)]
                    self.assertEqual(s.segments[left - 1], (i, m))
                    self.assertEqual(s.segments[right - 1], (m + 1, j))
                    self.assertIn(left, computed)
                    self.assertIn(right, computed)
                computed |= set(level["segments"].tolist())
            self.assertEqual(computed, set(range(1, s.num_segments + 1)))

    def test_contexts_and_vertices(self):
        s = FusionSegments(8)
        for k, (i, j) in enumerate(s.segments):
            left, right = s.left_context[k], s.right_context[k]
            self.assertEqual(left, 0 if i == 1 else s.index[(1, i - 1)], (i, j))
            self.assertEqual(
                right, 0 if j == 8 else s.index[(j + 1, 8)], (i, j)
            )
        self.assertEqual(
            [[s.segments[k - 1] for k in v] for v in s.vertex_segments],
            [
                [(i, i) for i in range(1, 9)],
                [(1, 2), (3, 4), (5, 6), (7, 8)],
                [(1, 4), (5, 8)],
                [(1, 8)],
            ],
        )

    def test_group_ids(self):
        s = FusionSegments(8)
        groups, count = s.group_ids("none", "decoder")
        self.assertEqual(count, s.num_segments)
        self.assertAllEqual(groups, np.arange(s.num_segments))
        groups, count = s.group_ids("level", "fusion")
        self.assertEqual(count, 3)
        self.assertAllEqual(groups, s.heights[8:] - 1)
        groups, count = s.group_ids("all", "token")
        self.assertEqual((count, groups.tolist()), (1, [0] * 8))
        with pytest.raises(ValueError, match="kind"):
            s.group_ids("none", "encoder")

    def test_lengths_must_be_powers_of_two(self):
        for bad in [0, 3, 6, -4, 2.0, True]:
            with pytest.raises(ValueError, match="length"):
                FusionSegments(bad)
        self.assertEqual(
            [padded_length(n) for n in [1, 2, 3, 5, 64, 65]],
            [1, 2, 4, 8, 64, 128],
        )
        s = FusionSegments(1)
        self.assertEqual((s.segments, s.depth, s.levels), ([(1, 1)], 0, []))
