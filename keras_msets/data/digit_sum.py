"""Digit-sum tasks: sum of digits (task 1) and units digit of the sum (task 2).

Task 1 comes from DeepSets (Zaheer et al., 2017): the input is a multiset of
digits 1-9 and the target is their sum. Task 2 (DeBenedetto & Chiang, 2020,
Sec. 5.2) keeps the inputs and asks for the units digit of the sum, which a
real-valued sum of embeddings cannot represent but a complex multiset
automaton can. Both are scored by rounding the prediction to the nearest
integer (`digit_sum_accuracy`).

The arrays follow one format everywhere in `keras_msets`: `x` is int32
`[num_samples, width]`, each row holding the digits of one multiset from the
left and `0` (the padding value, never a digit) after its length; `y` is
float32 `[num_samples, 1]`. Everything is plain numpy; only `to_tf_dataset`
imports TensorFlow, when called.

Every generator takes an explicit `seed` and draws from
`np.random.default_rng(seed)`, so a data set is the same on every run and
every machine (with the same numpy version).
"""

import numpy as np

from keras_msets.data import _tf
from keras_msets.utils.validation import check_choice
from keras_msets.utils.validation import check_float
from keras_msets.utils.validation import check_non_negative_int
from keras_msets.utils.validation import check_positive_int
from keras_msets.utils.validation import fail
from keras_msets.utils.validation import is_int

TASKS = ("sum", "units_digit")

_DIGIT_LOW = 1
_DIGIT_HIGH = 9


def _check_task(task):
    return check_choice("task", task, TASKS)


def _labels(x, task):
    total = x.sum(axis=1, dtype=np.int64)
    if task == "units_digit":
        total = total % 10
    return total.astype(np.float32)[:, None]


def _sample(rng, num_samples, min_length, max_length, task, width):
    """Draws lengths, then digits; the stream does not depend on `width`."""
    lengths = rng.integers(
        min_length, max_length, size=num_samples, endpoint=True
    )
    digits = rng.integers(
        _DIGIT_LOW, _DIGIT_HIGH + 1, size=(num_samples, max_length)
    )
    positions = np.arange(max_length)[None, :]
    digits = np.where(positions < lengths[:, None], digits, 0)
    x = np.zeros((num_samples, width), dtype=np.int32)
    x[:, :max_length] = digits
    return x, _labels(x, task)


def make_digit_sum(
    num_samples,
    min_length=1,
    max_length=50,
    task="sum",
    seed=0,
    pad_to=None,
):
    """Generates random multisets of digits and the sum (or its units digit).

    Each example draws a length uniformly from `[min_length, max_length]`
    (both included), then that many digits uniformly from 1-9. The digits
    fill the row from the left and zeros pad it to `pad_to` (or
    `max_length`); `0` is never a digit, so `x != 0` is the mask.

    Args:
        num_samples: Number of examples.
        min_length: Shortest multiset, a positive integer.
        max_length: Longest multiset, `>= min_length`.
        task: `"sum"` (task 1: `y` is the sum of the digits) or
            `"units_digit"` (task 2: `y` is the sum mod 10).
        seed: Non-negative integer seed of `np.random.default_rng`.
        pad_to: Width of `x`, `>= max_length`; `None` means `max_length`.
            It only adds zero columns: the digits drawn do not depend on it.

    Returns:
        A tuple `(x, y)`: `x` int32 `[num_samples, pad_to or max_length]`
        and `y` float32 `[num_samples, 1]`.

    Example:

    ```python
    x, y = make_digit_sum(4, max_length=5, task="units_digit", seed=3)
    x.shape, y.shape  # ((4, 5), (4, 1))
    x.dtype, y.dtype  # (dtype('int32'), dtype('float32'))
    ```
    """
    num_samples = check_positive_int("num_samples", num_samples)
    max_length = check_positive_int("max_length", max_length)
    if not is_int(min_length) or not 1 <= min_length <= max_length:
        fail("min_length", min_length, "a positive integer <= max_length")
    min_length = int(min_length)
    task = _check_task(task)
    seed = check_non_negative_int("seed", seed)
    if pad_to is None:
        pad_to = max_length
    elif not is_int(pad_to) or pad_to < max_length:
        fail(
            "pad_to", pad_to, f"None or an integer >= max_length ({max_length})"
        )
    rng = np.random.default_rng(seed)
    return _sample(rng, num_samples, min_length, max_length, task, pad_to)


def digit_sum_train_dev(
    task="sum",
    num_samples=100_000,
    dev_fraction=0.01,
    max_length=50,
    seed=0,
):
    """The training and dev sets of DeBenedetto & Chiang (2020), Sec. 5.2.

    `num_samples` multisets with lengths uniform in `[1, max_length]` are
    drawn by `make_digit_sum(num_samples, 1, max_length, task, seed)`; the
    first examples form the training set and the last
    `round(num_samples * dev_fraction)` the dev set (99,000 / 1,000 with the
    defaults, the paper's 99/1 split). The paper says "lengths from 1 to
    50", which is what this does; the DeepSets reference code drew lengths
    1-49. The test sets (`digit_sum_test_sets`) use a different seed.

    Args:
        task: `"sum"` or `"units_digit"`.
        num_samples: Size of training + dev set.
        dev_fraction: Fraction held out for the dev set, in `(0, 1)`.
        max_length: Longest multiset; `x` has this many columns.
        seed: Non-negative integer seed of `np.random.default_rng`.

    Returns:
        `((x_train, y_train), (x_dev, y_dev))` in the format of
        `make_digit_sum`.
    """
    num_samples = check_positive_int("num_samples", num_samples)
    dev_fraction = check_float(
        "dev_fraction",
        dev_fraction,
        low=0,
        high=1,
        low_inclusive=False,
        high_inclusive=False,
    )
    num_dev = int(round(num_samples * dev_fraction))
    if not 0 < num_dev < num_samples:
        raise ValueError(
            "`num_samples * dev_fraction` must round to at least one dev "
            "example and leave at least one training example. Received: "
            f"num_samples={num_samples}, dev_fraction={dev_fraction}"
        )
    x, y = make_digit_sum(
        num_samples,
        min_length=1,
        max_length=max_length,
        task=task,
        seed=seed,
    )
    num_train = num_samples - num_dev
    return (x[:num_train], y[:num_train]), (x[num_train:], y[num_train:])


def digit_sum_test_sets(
    task="sum",
    lengths=tuple(range(5, 100, 5)),
    num_per_length=10_000,
    seed=1,
):
    """Test sets of fixed lengths (5, 10, ..., 95 in the paper).

    For each length `L`, `num_per_length` multisets of exactly `L` digits
    are drawn from `np.random.default_rng([seed, L])`, so each test set is
    the same whichever other lengths are requested. The default `seed=1`
    differs from the training seed (`digit_sum_train_dev` uses 0), and the
    two are seeded differently even if given the same number.

    Args:
        task: `"sum"` or `"units_digit"`.
        lengths: Iterable of distinct positive integer lengths.
        num_per_length: Number of examples of each length.
        seed: Non-negative integer seed.

    Returns:
        A dict `{length: (x, y)}` in the order of `lengths`, with `x` int32
        `[num_per_length, length]` (no padding: every row is full) and `y`
        float32 `[num_per_length, 1]`.
    """
    task = _check_task(task)
    num_per_length = check_positive_int("num_per_length", num_per_length)
    seed = check_non_negative_int("seed", seed)
    try:
        lengths = tuple(lengths)
    except TypeError:
        lengths = None
    if (
        not lengths
        or not all(is_int(n) and n >= 1 for n in lengths)
        or len(set(lengths)) != len(lengths)
    ):
        raise ValueError(
            "`lengths` must be a non-empty sequence of distinct positive "
            f"integers. Received: lengths={lengths!r}"
        )
    test_sets = {}
    for length in lengths:
        length = int(length)
        rng = np.random.default_rng([seed, length])
        test_sets[length] = _sample(
            rng, num_per_length, length, length, task, length
        )
    return test_sets


def _to_numpy(values):
    if hasattr(values, "detach"):  # torch.Tensor
        values = values.detach().cpu()
    return np.asarray(values)


def digit_sum_accuracy(y_true, y_pred):
    """Fraction of predictions that round to the target.

    Computes `mean(round(y_pred) == y_true)`, the metric of the paper.
    `np.round` rounds halves to even (2.5 -> 2).

    Args:
        y_true: Targets, any shape (e.g. `[n, 1]`).
        y_pred: Predictions with as many elements as `y_true`. numpy arrays,
            lists and CPU tensors of any backend are accepted.

    Returns:
        A Python float in `[0, 1]`.
    """
    y_true = _to_numpy(y_true).reshape(-1)
    y_pred = _to_numpy(y_pred).reshape(-1)
    if y_true.size == 0 or y_true.size != y_pred.size:
        raise ValueError(
            "`y_true` and `y_pred` must be non-empty with the same number of "
            f"elements. Received: y_true with {y_true.size} elements, "
            f"y_pred with {y_pred.size} elements"
        )
    return float(np.mean(np.round(y_pred) == y_true))


def to_tf_dataset(x, y, batch_size=128, shuffle=False, seed=0):
    """Wraps `(x, y)` arrays in a batched `tf.data.Dataset`.

    Needs TensorFlow (imported when called, not when `keras_msets.data` is
    imported). `model.fit` accepts the numpy arrays directly on every
    backend; use this for a tf.data input pipeline.

    Args:
        x: Array `[n, ...]`.
        y: Array `[n, ...]`.
        batch_size: Positive integer; the last batch may be smaller.
        shuffle: Whether to reshuffle the examples at every epoch.
        seed: Non-negative integer seed of the shuffle.

    Returns:
        A `tf.data.Dataset` of `(x_batch, y_batch)` tuples.
    """
    x = _to_numpy(x)
    y = _to_numpy(y)
    if x.ndim == 0 or y.ndim == 0 or len(x) != len(y):
        raise ValueError(
            "`x` and `y` must be arrays with the same first dimension. "
            f"Received: x.shape={x.shape}, y.shape={y.shape}"
        )
    batch_size = check_positive_int("batch_size", batch_size)
    seed = check_non_negative_int("seed", seed)
    tf = _tf.import_tensorflow()
    dataset = tf.data.Dataset.from_tensor_slices((x, y))
    if shuffle:
        dataset = dataset.shuffle(
            len(x), seed=seed, reshuffle_each_iteration=True
        )
    return dataset.batch(batch_size).prefetch(tf.data.AUTOTUNE)
