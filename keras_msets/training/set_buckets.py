"""Set-size buckets: variable set sizes with few distinct padded widths.

On JAX (and in TensorFlow graphs) every new input shape compiles the step
again, so training on sets of sizes 100-150 either recompiles for every
size or pads every set to 150. Bucketing pads a batch only up to the next
multiple of `multiple` (16 by default): at most `ceil((high - low + 1) /
multiple) + 1` widths, each compiled once.

`bucket_ranges(100, 150)` splits the sizes into `(100, 112), (113, 128),
(129, 144), (145, 150)`; `draw_bucket` picks one with probability
proportional to the number of sizes it holds, so that a set whose size is
then drawn uniformly inside the bucket has the same size distribution as
one drawn uniformly in `[low, high]` (only the sizes within one batch are
drawn from the same bucket). `SetBatches(bucket_multiple=16)` draws its
batches that way; `bucket_width` and `trim_to_bucket` bucket a batch
that is already padded.
"""

import numpy as np

from keras_msets.utils.validation import check_positive_int

BUCKET_MULTIPLE = 16


def bucket_width(size, multiple=BUCKET_MULTIPLE, limit=None):
    """`size` rounded up to a multiple of `multiple`, at most `limit`.

    Example:
    >>> bucket_width(113), bucket_width(113, limit=120)
    (128, 120)
    """
    size = check_positive_int("size", size)
    multiple = check_positive_int("multiple", multiple)
    width = -(-size // multiple) * multiple
    return width if limit is None else min(width, max(limit, size))


def bucket_ranges(low, high, multiple=BUCKET_MULTIPLE):
    """The size ranges `(first, last)` of the buckets covering `low..high`.

    Each range ends at a multiple of `multiple` (the last at `high`), so
    a set of the range padded to `last` wastes fewer than `multiple`
    positions.

    Example:
    >>> bucket_ranges(100, 150)
    [(100, 112), (113, 128), (129, 144), (145, 150)]
    """
    low = check_positive_int("low", low)
    high = check_positive_int("high", high)
    multiple = check_positive_int("multiple", multiple)
    if high < low:
        raise ValueError(
            f"`high` must be at least `low`. Received: low={low}, high={high}"
        )
    ranges, first = [], low
    while first <= high:
        last = min(bucket_width(first, multiple), high)
        ranges.append((first, last))
        first = last + 1
    return ranges


def draw_bucket(rng, low, high, multiple=BUCKET_MULTIPLE):
    """A bucket `(first, last)` of `bucket_ranges`, drawn with `rng` with
    probability proportional to its number of sizes."""
    ranges = bucket_ranges(low, high, multiple)
    counts = np.array([last - first + 1 for first, last in ranges], float)
    return ranges[int(rng.choice(len(ranges), p=counts / counts.sum()))]


def trim_to_bucket(inputs, multiple=BUCKET_MULTIPLE):
    """A padded batch `{"sets": (...), "masks": (...)}` cut to the bucket
    width of its longest set (each set axis separately).

    Positions past the longest real element are padding in every pair,
    so the model's answers do not change; only the shapes do.
    """
    sets, masks = [], []
    for values, mask in zip(inputs["sets"], inputs["masks"], strict=True):
        mask = np.asarray(mask)
        filled = np.flatnonzero(mask.any(axis=0))
        longest = int(filled[-1]) + 1 if len(filled) else 1
        width = bucket_width(longest, multiple, limit=mask.shape[1])
        sets.append(np.asarray(values)[:, :width])
        masks.append(mask[:, :width])
    return {**inputs, "sets": tuple(sets), "masks": tuple(masks)}
