"""The segments of a Fusion Encoder Network and the split function sigma."""

import numpy as np

from keras_msets.utils.validation import check_positive_int


def padded_length(length):
    """The smallest power of two that is at least `length`."""
    length = check_positive_int("length", length)
    return 1 << (length - 1).bit_length()


class FusionSegments:
    """The segment set S and split sigma of a Fusion Encoder Network.

    For a sequence length `N` (a power of two), `B` is the full balanced
    binary tree whose leaves are the positions 1..N. A pair `(i, j)` with
    `i < j` is a segment if, for some internal vertex `v` with leftmost leaf
    `a`, rightmost leaf `b` and left child ending at `m`, either `i = a` and
    `m < j <= b` (a prefix of `v` that crosses its middle), or `j = b` and
    `a <= i <= m` (a suffix of `v` that crosses its middle); it is then
    split at `sigma(i, j) = m` (Pasteris et al., Sec. 11). The singletons
    `(i, i)` are segments too. Every segment is associated with the vertex
    that defines it; its *height* is that vertex's height (0 for
    singletons), and a segment depends only on segments of smaller height,
    so all segments of one height can be computed at once: the encodings
    take `log2(N)` sequential steps.

    All positions are 1-based, as in the paper. Segments are numbered in
    the order used by `FusionEncoderNetwork`: the singletons `(1, 1)` ...
    `(N, N)` get indices 1..N, then the segments of height 1, 2, ...; index
    0 stands for the empty segment (the identity, encoded by 0), which is
    the context of segments that touch either end of the sequence.

    Args:
        length: the sequence length N, a power of two.

    Attributes:
        length: N.
        depth: log2(N), the number of fusion steps.
        segments: list of `(i, j)` pairs in index order (index k of the
            list is segment number k + 1).
        index: dict from `(i, j)` to the segment number (>= 1); the empty
            segments `(1, 0)` and `(N + 1, N)` map to 0.
        sigma: dict from each non-singleton segment to its split point.
        heights: int array, the height of each segment (index order).
        levels: list over heights 1..depth of dicts with numpy int arrays
            `segments` (the numbers of that height's segments), `left` and
            `right` (the numbers of the two parts each is split into).
        left_context, right_context: int arrays, for each segment `(i, j)`
            the number of `(1, i - 1)` and of `(j + 1, N)` (0 when empty).
        vertex_segments: list over heights 0..depth of int arrays: the
            segments that are whole vertices of the tree, left to right
            (the only ones the fused network of Sec. 11 keeps).

    Example:
    >>> s = keras_msets.models.FusionSegments(4)
    >>> s.segments
    [(1, 1), (2, 2), (3, 3), (4, 4), (1, 2), (3, 4), (1, 3), (1, 4), (2, 4)]
    >>> s.sigma[(1, 3)]
    2

    References:
        - Pasteris et al., "Fusion Encoder Networks", arXiv:2402.15883.
    """

    def __init__(self, length):
        n = check_positive_int("length", length)
        if n & (n - 1):
            raise ValueError(
                "`length` must be a power of two (pad other lengths to "
                f"`padded_length(length)`). Received: length={n}"
            )
        self.length = n
        self.depth = n.bit_length() - 1
        segments = [(i, i) for i in range(1, n + 1)]
        heights = [0] * n
        sigma = {}
        for height in range(1, self.depth + 1):
            size = 1 << height
            for a in range(1, n + 1, size):
                b = a + size - 1
                m = a + size // 2 - 1
                new = [(a, j) for j in range(m + 1, b + 1)]
                new += [(i, b) for i in range(a + 1, m + 1)]
                for segment in new:
                    sigma[segment] = m
                segments += new
                heights += [height] * len(new)
        self.segments = segments
        self.sigma = sigma
        self.heights = np.array(heights, "int32")
        self.index = {s: k + 1 for k, s in enumerate(segments)}
        self.index[(1, 0)] = 0
        self.index[(n + 1, n)] = 0
        self.levels = []
        for height in range(1, self.depth + 1):
            numbers = np.flatnonzero(self.heights == height) + 1
            pairs = [segments[k - 1] for k in numbers]
            left = [self.index[(i, sigma[(i, j)])] for i, j in pairs]
            right = [self.index[(sigma[(i, j)] + 1, j)] for i, j in pairs]
            self.levels.append(
                {
                    "segments": numbers.astype("int32"),
                    "left": np.array(left, "int32"),
                    "right": np.array(right, "int32"),
                }
            )
        self.left_context = np.array(
            [self.index[(1, i - 1)] for i, _ in segments], "int32"
        )
        self.right_context = np.array(
            [self.index[(j + 1, n)] for _, j in segments], "int32"
        )
        self.vertex_segments = []
        for height in range(self.depth + 1):
            size = 1 << height
            self.vertex_segments.append(
                np.array(
                    [
                        self.index[(a, a + size - 1)]
                        for a in range(1, n + 1, size)
                    ],
                    "int32",
                )
            )

    @property
    def num_segments(self):
        """|S| = N log2(N) + 1."""
        return len(self.segments)

    def group_ids(self, sharing, kind):
        """Parameter-group number of each segment for a sharing mode.

        Args:
            sharing: `"none"` (one parameterisation per segment, the
                paper's default), `"level"` (one per height) or `"all"`.
            kind: `"token"` (the N token encoders), `"fusion"` (the
                non-singleton segments' fusion encoders, in index order)
                or `"decoder"` (every segment's output decoder).

        Returns:
            (int array of group numbers, number of groups).
        """
        n = self.length
        if kind == "token":
            if sharing == "none":
                return np.arange(n, dtype="int32"), n
            return np.zeros(n, "int32"), 1
        if kind == "fusion":
            heights = self.heights[n:]
            if sharing == "none":
                count = len(heights)
                return np.arange(count, dtype="int32"), count
            if sharing == "level":
                return (heights - 1).astype("int32"), self.depth
            return np.zeros(len(heights), "int32"), 1
        if kind == "decoder":
            if sharing == "none":
                count = self.num_segments
                return np.arange(count, dtype="int32"), count
            if sharing == "level":
                return self.heights.copy(), self.depth + 1
            return np.zeros(self.num_segments, "int32"), 1
        raise ValueError(
            "`kind` must be one of 'token', 'fusion', 'decoder'. "
            f"Received: kind={kind!r}"
        )

    def __repr__(self):
        return (
            f"FusionSegments(length={self.length}, "
            f"num_segments={self.num_segments}, depth={self.depth})"
        )
