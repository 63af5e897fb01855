import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from keras_msets.data import TASKS
from keras_msets.data import digit_sum_accuracy
from keras_msets.data import digit_sum_test_sets
from keras_msets.data import digit_sum_train_dev
from keras_msets.data import make_digit_sum
from keras_msets.data import to_tf_dataset

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))


@pytest.fixture(autouse=True)
def _seed_everything():
    """Replaces the suite-wide fixture: these tests are numpy-only and seed
    every generator explicitly, and `keras.backend.clear_session()` would
    add a garbage collection (about 0.5 s) to every test."""
    yield


def _reference_labels(x, task):
    """Label of each row, recomputed one digit at a time in Python."""
    labels = []
    for row in x.tolist():
        total = 0
        for digit in row:
            if digit == 0:
                break
            total += digit
        labels.append(total % 10 if task == "units_digit" else total)
    return np.array(labels, dtype=np.float32)[:, None]


def _lengths(x):
    return np.count_nonzero(x, axis=1)


@pytest.mark.parametrize("task", TASKS)
def test_make_digit_sum_format(task):
    x, y = make_digit_sum(
        500, min_length=3, max_length=12, task=task, seed=7, pad_to=15
    )
    assert x.shape == (500, 15) and x.dtype == np.int32
    assert y.shape == (500, 1) and y.dtype == np.float32
    lengths = _lengths(x)
    assert lengths.min() >= 3 and lengths.max() <= 12
    # Both ends of the length range are drawn.
    assert set(lengths.tolist()) == set(range(3, 13))
    # Digits 1-9 first, then exactly zeros.
    positions = np.arange(15)[None, :]
    inside = positions < lengths[:, None]
    assert np.all((x[inside] >= 1) & (x[inside] <= 9))
    assert np.all(x[~inside] == 0)
    assert set(np.unique(x[inside]).tolist()) == set(range(1, 10))
    np.testing.assert_array_equal(y, _reference_labels(x, task))
    if task == "units_digit":
        assert y.min() >= 0 and y.max() <= 9


def test_make_digit_sum_determinism():
    x1, y1 = make_digit_sum(200, max_length=20, seed=3)
    x2, y2 = make_digit_sum(200, max_length=20, seed=3)
    np.testing.assert_array_equal(x1, x2)
    np.testing.assert_array_equal(y1, y2)
    x3, _ = make_digit_sum(200, max_length=20, seed=4)
    assert not np.array_equal(x1, x3)


def test_pad_to_only_adds_zero_columns():
    x, y = make_digit_sum(50, max_length=10, seed=5)
    x_padded, y_padded = make_digit_sum(50, max_length=10, seed=5, pad_to=30)
    assert x_padded.shape == (50, 30)
    np.testing.assert_array_equal(x_padded[:, :10], x)
    assert np.all(x_padded[:, 10:] == 0)
    np.testing.assert_array_equal(y_padded, y)


def test_task_only_changes_labels():
    x_sum, y_sum = make_digit_sum(100, seed=2, task="sum")
    x_units, y_units = make_digit_sum(100, seed=2, task="units_digit")
    np.testing.assert_array_equal(x_sum, x_units)
    np.testing.assert_array_equal(y_units, y_sum % 10)


def test_fixed_length():
    x, _ = make_digit_sum(20, min_length=7, max_length=7, seed=0)
    assert np.all(_lengths(x) == 7)


def test_train_dev_matches_paper_sizes():
    (x_train, y_train), (x_dev, y_dev) = digit_sum_train_dev(task="sum")
    assert x_train.shape == (99_000, 50) and y_train.shape == (99_000, 1)
    assert x_dev.shape == (1_000, 50) and y_dev.shape == (1_000, 1)
    lengths = np.concatenate([_lengths(x_train), _lengths(x_dev)])
    # Lengths 1 to 50 as in the paper (both included).
    assert lengths.min() == 1 and lengths.max() == 50
    np.testing.assert_array_equal(y_dev, _reference_labels(x_dev, "sum"))


def test_train_dev_is_a_split_of_make_digit_sum():
    (x_train, y_train), (x_dev, y_dev) = digit_sum_train_dev(
        task="units_digit", num_samples=300, dev_fraction=0.1, max_length=8,
        seed=11,
    )  # fmt: skip
    x, y = make_digit_sum(300, 1, 8, task="units_digit", seed=11)
    assert len(x_train) == 270 and len(x_dev) == 30
    np.testing.assert_array_equal(np.concatenate([x_train, x_dev]), x)
    np.testing.assert_array_equal(np.concatenate([y_train, y_dev]), y)


def test_test_sets():
    lengths = (5, 50, 95)
    test_sets = digit_sum_test_sets(
        task="units_digit", lengths=lengths, num_per_length=300
    )
    assert list(test_sets) == list(lengths)
    for length, (x, y) in test_sets.items():
        assert x.shape == (300, length) and x.dtype == np.int32
        assert y.shape == (300, 1) and y.dtype == np.float32
        assert np.all((x >= 1) & (x <= 9))  # every sequence is full
        np.testing.assert_array_equal(y, _reference_labels(x, "units_digit"))
    # Deterministic, independent of the other lengths requested, and not
    # the training data.
    again = digit_sum_test_sets(
        task="units_digit", lengths=(50,), num_per_length=300
    )
    np.testing.assert_array_equal(again[50][0], test_sets[50][0])
    other_seed = digit_sum_test_sets(
        task="units_digit", lengths=(50,), num_per_length=300, seed=2
    )
    assert not np.array_equal(other_seed[50][0], test_sets[50][0])
    x_train, _ = make_digit_sum(300, 50, 50, seed=1)
    assert not np.array_equal(x_train, test_sets[50][0])


def test_default_test_sets_are_the_papers():
    test_sets = digit_sum_test_sets(num_per_length=2)
    assert list(test_sets) == list(range(5, 100, 5))


def test_accuracy():
    y_true = np.array([[3.0], [10.0], [7.0], [0.0]], dtype=np.float32)
    y_pred = np.array([3.4, 9.6, 7.6, -0.4])
    assert digit_sum_accuracy(y_true, y_pred) == 0.75
    assert digit_sum_accuracy(y_true, y_true) == 1.0
    assert isinstance(digit_sum_accuracy(y_true, y_true), float)


def test_to_tf_dataset():
    x, y = make_digit_sum(10, max_length=6, seed=0)
    batches = list(to_tf_dataset(x, y, batch_size=4).as_numpy_iterator())
    assert [len(bx) for bx, _ in batches] == [4, 4, 2]
    np.testing.assert_array_equal(np.concatenate([b[0] for b in batches]), x)
    np.testing.assert_array_equal(np.concatenate([b[1] for b in batches]), y)
    shuffled = to_tf_dataset(x, y, batch_size=10, shuffle=True, seed=1)
    bx, by = next(iter(shuffled.as_numpy_iterator()))
    order = np.lexsort(bx.T[::-1])
    np.testing.assert_array_equal(bx[order], x[np.lexsort(x.T[::-1])])


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(num_samples=0), "num_samples"),
        (dict(num_samples=2.5), "num_samples"),
        (dict(num_samples=10, min_length=0), "min_length"),
        (dict(num_samples=10, min_length=5, max_length=4), "min_length"),
        (dict(num_samples=10, max_length=-1), "max_length"),
        (dict(num_samples=10, task="product"), "task"),
        (dict(num_samples=10, seed=-1), "seed"),
        (dict(num_samples=10, seed=1.5), "seed"),
        (dict(num_samples=10, max_length=10, pad_to=9), "pad_to"),
    ],
)
def test_make_digit_sum_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=f"`{name}`.*Received: .*{name}="):
        make_digit_sum(**kwargs)


def test_error_message_format():
    with pytest.raises(ValueError) as info:
        make_digit_sum(10, min_length=0)
    assert str(info.value) == (
        "`min_length` must be a positive integer <= max_length. "
        "Received: min_length=0"
    )


@pytest.mark.parametrize(
    "fn, kwargs, name",
    [
        (digit_sum_train_dev, dict(dev_fraction=0.0), "dev_fraction"),
        (digit_sum_train_dev, dict(dev_fraction=1.5), "dev_fraction"),
        (digit_sum_train_dev, dict(num_samples=10, dev_fraction=0.01), "dev"),
        (digit_sum_train_dev, dict(task="bad"), "task"),
        (digit_sum_test_sets, dict(lengths=()), "lengths"),
        (digit_sum_test_sets, dict(lengths=(5, 5)), "lengths"),
        (digit_sum_test_sets, dict(lengths=(0,)), "lengths"),
        (digit_sum_test_sets, dict(num_per_length=0), "num_per_length"),
        (digit_sum_accuracy, dict(y_true=[1, 2], y_pred=[1]), "y_pred"),
        (to_tf_dataset, dict(x=np.ones((3, 2)), y=np.ones(2)), "y"),
    ],
)
def test_other_bad_arguments(fn, kwargs, name):
    with pytest.raises(ValueError, match=f"`[a-z_ *]*{name}"):
        fn(**kwargs)


def test_to_tf_dataset_bad_batch_size():
    with pytest.raises(ValueError, match="`batch_size`.*batch_size=0"):
        to_tf_dataset(np.ones((3, 2)), np.ones(3), batch_size=0)


def test_numpy_only_without_tensorflow():
    """`keras_msets.data` works with TF unimportable, and says what to do."""
    script = textwrap.dedent(
        """
        import sys

        class _Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("tensorflow", "tensorflow_datasets"):
                    raise ImportError(f"No module named {name!r} (blocked)")

        sys.meta_path.insert(0, _Block())
        import keras_msets.data as data

        x, y = data.make_digit_sum(4, max_length=5, seed=0)
        data.random_unary_automaton(3, seed=0)
        assert "tensorflow" not in sys.modules
        for fn, args in [
            (data.to_tf_dataset, (x, y)),
            (data.digit_sum_builder, ()),
        ]:
            try:
                fn(*args)
            except ImportError as e:
                assert "keras-msets[tensorflow" in str(e), e
            else:
                raise AssertionError("expected ImportError")
        print("ok")
        """
    )
    env = dict(os.environ, KERAS_BACKEND="jax")
    env["PYTHONPATH"] = os.pathsep.join(
        [REPO_ROOT] + [p for p in [env.get("PYTHONPATH")] if p]
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("ok")
