"""The TFDS builder writes exactly the numpy generators' examples.

These tests import TensorFlow and TFDS (installed in every backend's test
environment); they prepare the tiny config once, offline, into a temporary
folder.
"""

import time

import numpy as np
import pytest

from keras_msets.data import digit_sum_builder
from keras_msets.data import digit_sum_test_sets
from keras_msets.data import digit_sum_train_dev
from keras_msets.data import load_digit_sum_tfds
from keras_msets.data import tfds_digit_sum

tfds = pytest.importorskip("tensorflow_datasets")

# Sizes of the "units_digit_tiny" config.
TINY = dict(num_samples=200, dev_fraction=0.1, max_length=10)
TEST_LENGTHS = tuple(range(5, 100, 5))


@pytest.fixture(autouse=True)
def _seed_everything():
    """Replaces the suite-wide fixture: these tests use no Keras state and
    seed every generator explicitly, and `keras.backend.clear_session()`
    would add a garbage collection (about 0.5 s) to every test."""
    yield


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    tfds.disable_progress_bar()
    data_dir = tmp_path_factory.mktemp("tfds")
    builder = digit_sum_builder(
        data_dir=str(data_dir), config="units_digit_tiny"
    )
    start = time.perf_counter()
    builder.download_and_prepare()
    print(f"units_digit_tiny prepared in {time.perf_counter() - start:.1f} s")
    return str(data_dir)


def _read(builder, split):
    examples = list(
        builder.as_dataset(split=split, shuffle_files=False).as_numpy_iterator()
    )
    return [e["digits"] for e in examples], np.array(
        [e["label"] for e in examples]
    )


def _unpad(x):
    return [row[row != 0] for row in x]


def _assert_same(digits, labels, x, y):
    assert len(digits) == len(x)
    for got, expected in zip(digits, _unpad(x), strict=True):
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, expected)
    assert labels.dtype == np.float32
    np.testing.assert_array_equal(labels, y[:, 0])


def test_splits(tiny_dir):
    builder = digit_sum_builder(data_dir=tiny_dir, config="units_digit_tiny")
    splits = builder.info.splits
    expected = ["train", "dev"] + [f"test_len_{n}" for n in TEST_LENGTHS]
    assert sorted(splits.keys()) == sorted(expected)
    assert splits["train"].num_examples == 180
    assert splits["dev"].num_examples == 20
    assert all(splits[f"test_len_{n}"].num_examples == 5 for n in TEST_LENGTHS)
    assert builder.info.disable_shuffling


def test_train_dev_equal_numpy_generator(tiny_dir):
    builder = digit_sum_builder(data_dir=tiny_dir, config="units_digit_tiny")
    train, dev = digit_sum_train_dev(task="units_digit", seed=0, **TINY)
    _assert_same(*_read(builder, "train"), *train)
    _assert_same(*_read(builder, "dev"), *dev)


def test_test_splits_equal_numpy_generator(tiny_dir):
    builder = digit_sum_builder(data_dir=tiny_dir, config="units_digit_tiny")
    test_sets = digit_sum_test_sets(
        task="units_digit", lengths=TEST_LENGTHS, num_per_length=5, seed=1
    )
    for length in (5, 50, 95):
        x, y = test_sets[length]
        digits, labels = _read(builder, f"test_len_{length}")
        assert all(len(d) == length for d in digits)
        _assert_same(digits, labels, x, y)


def test_load_padded_batches(tiny_dir):
    (x_train, y_train), _ = digit_sum_train_dev(
        task="units_digit", seed=0, **TINY
    )
    dataset = load_digit_sum_tfds(
        "train", task="units_digit_tiny", data_dir=tiny_dir, batch_size=64
    )
    batches = list(dataset.as_numpy_iterator())
    assert [len(bx) for bx, _ in batches] == [64, 64, 52]
    x = np.concatenate([bx for bx, _ in batches])
    y = np.concatenate([by for _, by in batches])
    assert x.dtype == np.int32 and y.dtype == np.float32
    np.testing.assert_array_equal(x, x_train)
    np.testing.assert_array_equal(y, y_train)


@pytest.mark.parametrize(
    "split, pad_to, width",
    [
        ("test_len_95", None, 95),
        ("dev", 40, 40),
        ("dev[:5]+test_len_15", None, 15),
    ],
)
def test_load_width(tiny_dir, split, pad_to, width):
    dataset = load_digit_sum_tfds(
        split,
        task="units_digit_tiny",
        data_dir=tiny_dir,
        batch_size=4,
        pad_to=pad_to,
    )
    x, y = next(iter(dataset.as_numpy_iterator()))
    assert x.shape == (4, width) and y.shape == (4, 1)


def test_custom_config(tmp_path):
    config = tfds_digit_sum.DigitSumConfig(
        name="sum_custom",
        task="sum",
        num_samples=30,
        dev_fraction=0.2,
        max_length=4,
        test_lengths=(3,),
        num_per_length=6,
        train_seed=5,
        test_seed=6,
    )
    builder = digit_sum_builder(data_dir=str(tmp_path), config=config)
    tfds.disable_progress_bar()
    builder.download_and_prepare()
    assert sorted(builder.info.splits.keys()) == ["dev", "test_len_3", "train"]
    train, dev = digit_sum_train_dev(
        task="sum", num_samples=30, dev_fraction=0.2, max_length=4, seed=5
    )
    _assert_same(*_read(builder, "train"), *train)
    _assert_same(*_read(builder, "dev"), *dev)
    x, y = digit_sum_test_sets("sum", lengths=(3,), num_per_length=6, seed=6)[3]
    _assert_same(*_read(builder, "test_len_3"), x, y)


def test_predefined_configs():
    assert tfds_digit_sum.CONFIG_NAMES == (
        "sum",
        "units_digit",
        "sum_tiny",
        "units_digit_tiny",
    )
    builder_cls = tfds_digit_sum.DigitSum
    configs = {c.name: c for c in builder_cls.BUILDER_CONFIGS}
    for name in ("sum", "units_digit"):
        config = configs[name]
        assert config.task == name
        assert (config.num_samples, config.max_length) == (100_000, 50)
        assert config.test_lengths == TEST_LENGTHS
        assert config.num_per_length == 10_000
        assert (config.train_seed, config.test_seed) == (0, 1)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(split="train", task="bogus"), "config"),
        (dict(split="", task="units_digit_tiny"), "split"),
        (dict(split="train", task="units_digit_tiny", batch_size=0), "batch"),
        (dict(split="test_len_95", task="units_digit_tiny", pad_to=50), "pad"),
    ],
)
def test_bad_arguments(tmp_path, kwargs, name):
    with pytest.raises(ValueError, match=f"`{name}"):
        load_digit_sum_tfds(data_dir=str(tmp_path), **kwargs)
