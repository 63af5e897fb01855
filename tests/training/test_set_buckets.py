"""Tests of the set-size buckets and of `SetBatches(bucket_multiple=...)`."""

import numpy as np
import pytest

from keras_msets.training import set_buckets
from keras_msets.training.set_batches import SetBatches
from keras_msets.training.tasks import mst


def test_bucket_ranges_cover_the_sizes_once_and_end_at_multiples():
    for low, high, multiple in [(100, 150, 16), (1, 5, 2), (7, 7, 4)]:
        ranges = set_buckets.bucket_ranges(low, high, multiple)
        sizes = [s for first, last in ranges for s in range(first, last + 1)]
        assert sizes == list(range(low, high + 1))
        for _, last in ranges[:-1]:
            assert last % multiple == 0
        assert ranges[-1][1] == high
    assert set_buckets.bucket_width(113) == 128
    assert set_buckets.bucket_width(113, limit=120) == 120
    with pytest.raises(ValueError, match="`high` must be at least `low`"):
        set_buckets.bucket_ranges(5, 4)
    with pytest.raises(ValueError, match="multiple"):
        set_buckets.bucket_width(3, multiple=0)


def test_a_size_drawn_in_a_drawn_bucket_is_uniform():
    rng = np.random.default_rng(0)
    sizes = []
    for _ in range(2000):
        first, last = set_buckets.draw_bucket(rng, 1, 10, multiple=4)
        sizes.append(rng.integers(first, last + 1))
    counts = np.bincount(sizes, minlength=11)[1:]
    # Buckets (1, 4), (5, 8), (9, 10): equal sizes need unequal buckets'
    # odds. Chi-square, 9 degrees of freedom: 99.9 % quantile about 27.9.
    assert np.sum((counts - 200) ** 2 / 200) < 27.9


def test_trim_to_bucket_cuts_only_padding():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 40, 2)).astype("float32")
    mask = np.zeros((3, 40), bool)
    mask[0, :20], mask[1, :7], mask[2, :3] = True, True, True
    inputs = {"sets": (x, x), "masks": (mask, mask[:, ::-1])}
    trimmed = set_buckets.trim_to_bucket(inputs, 16)
    assert trimmed["sets"][0].shape == (3, 32, 2)
    np.testing.assert_array_equal(trimmed["sets"][0], x[:, :32])
    assert trimmed["masks"][0].sum() == mask.sum()
    assert trimmed["sets"][1].shape == (3, 40, 2)  # real elements at the end


def test_bucketed_batches_draw_one_bucket_each():
    task = mst.task("kl_divergence")
    data = SetBatches(
        task, 4, 12, dims=2, seed=3, set_size=(5, 20), bucket_multiple=8
    )
    ranges = dict(
        (last, first) for first, last in set_buckets.bucket_ranges(5, 20, 8)
    )
    widths = set()
    for index in range(len(data)):
        inputs, _ = data[index]
        for mask in inputs["masks"]:
            width = mask.shape[1]
            assert width in ranges
            sizes = mask.sum(axis=1)
            assert np.all((sizes >= ranges[width]) & (sizes <= width))
            widths.add(width)
    assert len(widths) > 1
    with pytest.raises(ValueError, match="bucket_multiple"):
        SetBatches(task, 4, 2, set_size=(5, 20), bucket_multiple=0)
