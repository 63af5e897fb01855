import itertools

import numpy as np
import pytest

from keras_msets.data.monoid_tasks import DYCK1_KINDS
from keras_msets.data.monoid_tasks import S3_ELEMENTS
from keras_msets.data.monoid_tasks import S3_TABLE
from keras_msets.data.monoid_tasks import TASKS
from keras_msets.data.monoid_tasks import counting_ones
from keras_msets.data.monoid_tasks import digit_sum_mod10
from keras_msets.data.monoid_tasks import dyck1
from keras_msets.data.monoid_tasks import is_dyck1
from keras_msets.data.monoid_tasks import monoid_task
from keras_msets.data.monoid_tasks import parity
from keras_msets.data.monoid_tasks import s3_product
from keras_msets.data.monoid_tasks import s3_word_problem

NAMES = (
    "counting_ones",
    "dyck1",
    "digit_sum_mod10",
    "parity",
    "s3_word_problem",
)


@pytest.fixture(autouse=True)
def _seed_everything():
    """Replaces the suite-wide fixture: these tests are numpy-only and seed
    every generator explicitly."""
    yield


# Independent references, one token at a time in plain Python.


def _balanced(row):
    depth = 0
    for token in row:
        if token == 1:
            depth += 1
        elif token == 2:
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def _compose(p, q):
    """First p, then q, on tuples mapping i to p[i]."""
    return tuple(q[p[i]] for i in range(3))


def _s3_reference(row):
    perms = list(itertools.permutations(range(3)))
    state = (0, 1, 2)
    for token in row:
        state = _compose(state, perms[token - 1])
    return perms.index(state)


def _bicyclic(c1, o1, c2, o2):
    return c1 + max(c2 - o1, 0), o2 + max(o1 - c2, 0)


def _all_strings(length):
    rows = list(itertools.product((1, 2), repeat=length))
    return np.array(rows, np.int32).reshape(2**length, length)


# Formats and labels.


@pytest.mark.parametrize("name", NAMES)
def test_format_and_metadata(name):
    length = 12
    x, y = monoid_task(name, 64, length, seed=3)
    spec = TASKS[name]
    assert x.shape == (64, length) and x.dtype == np.int32
    assert y.shape == (64,) and y.dtype == np.int32
    assert x.min() >= 1 and x.max() < spec.vocab_size
    assert y.min() >= 0 and y.max() < spec.classes(length)
    assert spec.loss in ("binary", "sparse_categorical")
    if spec.loss == "binary":
        assert spec.classes(length) == 2
    assert spec.generator.__name__ == name
    assert isinstance(spec.monoid, str) and "\n" not in spec.monoid


def test_counting_ones_and_parity_labels():
    for seed, length in ((0, 1), (1, 7), (2, 30)):
        x, y = counting_ones(200, length, seed=seed)
        expected = [sum(1 for t in row if t == 2) for row in x.tolist()]
        np.testing.assert_array_equal(y, expected)
        assert set(np.unique(x).tolist()) <= {1, 2}
        x, y = parity(200, length, seed=seed)
        expected = [sum(1 for t in row if t == 2) % 2 for row in x.tolist()]
        np.testing.assert_array_equal(y, expected)
    assert TASKS["counting_ones"].classes(30) == 31


def test_counting_ones_regression_target():
    x, y = counting_ones(50, 9, seed=4)
    x_r, y_r = counting_ones(50, 9, seed=4, regression=True)
    np.testing.assert_array_equal(x, x_r)
    assert y_r.shape == (50, 1) and y_r.dtype == np.float32
    np.testing.assert_array_equal(y_r[:, 0], y)


def test_digit_sum_mod10_labels():
    x, y = digit_sum_mod10(300, 13, seed=5)
    expected = []
    for row in x.tolist():
        total = 0
        for token in row:
            total = (total + token - 1) % 10
        expected.append(total)
    np.testing.assert_array_equal(y, expected)
    assert set(np.unique(x).tolist()) == set(range(1, 11))


# S3.


def test_s3_table_is_the_documented_composition():
    perms = list(itertools.permutations(range(3)))
    assert list(S3_ELEMENTS) == perms  # lexicographic order
    for a, b in itertools.product(range(6), repeat=2):
        assert S3_TABLE[a, b] == perms.index(_compose(perms[a], perms[b]))
    # A group: identity 0, associativity, inverses.
    np.testing.assert_array_equal(S3_TABLE[0], np.arange(6))
    np.testing.assert_array_equal(S3_TABLE[:, 0], np.arange(6))
    for a, b, c in itertools.product(range(6), repeat=3):
        assert S3_TABLE[S3_TABLE[a, b], c] == S3_TABLE[a, S3_TABLE[b, c]]
    assert all(0 in S3_TABLE[a] for a in range(6))
    assert not S3_TABLE.flags.writeable


def test_s3_is_not_commutative():
    assert not np.array_equal(S3_TABLE, S3_TABLE.T)
    # First (0,2,1), then (1,0,2): 0 -> 0 -> 1, 1 -> 2 -> 2, 2 -> 1 -> 0.
    assert S3_ELEMENTS[S3_TABLE[1, 2]] == (1, 2, 0)
    assert S3_ELEMENTS[S3_TABLE[2, 1]] == (2, 0, 1)
    # Tokens 2, 3 (= elements 1, 2) and 3, 2 give different labels.
    assert monoid_task("s3_word_problem", 1, 1)[1].shape == (1,)
    assert s3_product(np.array([1, 2])) == 3
    assert s3_product(np.array([2, 1])) == 4
    x, y = s3_word_problem(500, 6, seed=0)
    y_reversed = s3_product(x[:, ::-1] - 1)
    # Reversing a word changes its product for many words.
    assert np.mean(y != y_reversed) > 0.3


@pytest.mark.parametrize("length", [1, 2, 3, 5, 8, 13])
def test_s3_word_problem_labels(length):
    x, y = s3_word_problem(200, length, seed=length)
    np.testing.assert_array_equal(y, [_s3_reference(r) for r in x.tolist()])
    # The tree product equals the sequential fold with the table.
    state = np.zeros(len(x), np.int32)
    for t in range(length):
        state = S3_TABLE[state, x[:, t] - 1]
    np.testing.assert_array_equal(y, state)


def test_s3_product_edge_cases():
    np.testing.assert_array_equal(
        s3_product(np.zeros((4, 0), np.int32)), np.zeros(4)
    )
    elems = np.random.default_rng(0).integers(0, 6, size=(7, 3, 5))
    by_axis = s3_product(elems, axis=1)
    assert by_axis.shape == (7, 5)
    assert by_axis[2, 4] == _s3_reference((elems[2, :, 4] + 1).tolist())
    with pytest.raises(ValueError, match="0..5"):
        s3_product(np.array([[0, 6]]))


# Dyck-1.


def test_is_dyck1_matches_brute_force():
    for length in range(0, 11):
        strings = _all_strings(length)
        expected = [_balanced(r) for r in strings.tolist()]
        np.testing.assert_array_equal(is_dyck1(strings), expected)
    # Padding (0) is skipped; a single row and batched axes work.
    assert is_dyck1(np.array([1, 0, 2, 0]))
    assert not is_dyck1(np.array([0, 2, 1, 0]))
    assert is_dyck1(np.zeros((2, 3, 4), np.int32)).shape == (2, 3)


def test_dyck1_semantic_monoid_is_the_bicyclic_monoid():
    mu = {1: (0, 1), 2: (1, 0)}
    for row in _all_strings(8).tolist():
        c, o = 0, 0
        for token in row:
            c, o = _bicyclic(c, o, *mu[token])
        assert ((c, o) == (0, 0)) == _balanced(row)
    rng = np.random.default_rng(0)
    for a, b, c in rng.integers(0, 4, size=(200, 3, 2)).tolist():
        assert _bicyclic(*_bicyclic(*a, *b), *c) == _bicyclic(
            *a, *_bicyclic(*b, *c)
        )


@pytest.mark.parametrize("length", [2, 4, 10, 16])
def test_dyck1_labels_and_balance(length):
    x, y, kind = dyck1(400, length, seed=length, return_kind=True)
    assert x.shape == (400, length) and x.dtype == np.int32
    assert set(np.unique(x).tolist()) <= {1, 2}
    np.testing.assert_array_equal(y, [_balanced(r) for r in x.tolist()])
    np.testing.assert_array_equal(y, is_dyck1(x))
    assert y.sum() == 200
    np.testing.assert_array_equal(y == 1, kind == "balanced")
    assert set(kind.tolist()) <= set(DYCK1_KINDS)
    near = np.isin(kind, ("flip", "swap"))
    assert near.sum() == 100  # half of the 200 negatives
    assert np.sum(kind == "equal_counts") == 50
    assert np.sum(kind == "random") == 50
    # The examples are shuffled, not grouped by label.
    assert 50 < y[:200].sum() < 150


def _one_flip_from_balanced(row):
    for i in range(len(row)):
        other = list(row)
        other[i] = 3 - other[i]
        if _balanced(other):
            return True
    return False


def _one_swap_from_balanced(row):
    for i in range(len(row) - 1):
        other = list(row)
        other[i], other[i + 1] = other[i + 1], other[i]
        if other != list(row) and _balanced(other):
            return True
    return False


def test_dyck1_negatives_are_what_their_kind_says():
    x, y, kind = dyck1(600, 10, seed=11, return_kind=True)
    counts = {k: int(np.sum(kind == k)) for k in DYCK1_KINDS}
    assert counts["flip"] > 50 and counts["swap"] > 50
    for row, k in zip(x.tolist(), kind.tolist(), strict=True):
        if k == "balanced":
            assert _balanced(row)
            continue
        assert not _balanced(row)
        ones = row.count(1)
        if k == "flip":
            assert _one_flip_from_balanced(row)
            assert abs(2 * ones - len(row)) == 2
        elif k == "swap":
            assert _one_swap_from_balanced(row)
            assert 2 * ones == len(row)
        elif k == "equal_counts":
            assert 2 * ones == len(row)


def test_dyck1_positives_and_swaps_are_uniform():
    length = 8
    x, _, kind = dyck1(12_000, length, seed=1, return_kind=True)
    strings = _all_strings(length)
    balanced = [r for r in strings.tolist() if _balanced(r)]
    swaps = {
        tuple(r)
        for r in strings.tolist()
        if not _balanced(r) and _one_swap_from_balanced(r)
    }
    assert len(balanced) == 14  # Catalan(4)
    assert len(swaps) == 14  # pairs (A, B) with |A| + |B| = 6
    for k, support in (("balanced", balanced), ("swap", swaps)):
        rows = [tuple(r) for r in x[kind == k].tolist()]
        assert set(rows) == {tuple(r) for r in support}
        counts = np.array([rows.count(s) for s in set(rows)])
        expected = len(rows) / len(support)
        # Within 5 standard deviations of a uniform multinomial.
        sd = np.sqrt(expected * (1 - 1 / len(support)))
        assert np.all(np.abs(counts - expected) < 5 * sd), counts


def test_dyck1_near_miss_fraction_and_odd_num():
    _, y, kind = dyck1(101, 6, seed=0, near_miss_fraction=0.0, return_kind=True)
    assert y.sum() == 50 and len(y) == 101
    assert not np.isin(kind, ("flip", "swap")).any()
    _, y, kind = dyck1(100, 6, seed=0, near_miss_fraction=1.0, return_kind=True)
    assert np.isin(kind, ("flip", "swap")).sum() == 50
    x, y = dyck1(1, 4, seed=0)
    assert y.tolist() == [0] and not is_dyck1(x)[0]


# Reproducibility, speed, errors.


@pytest.mark.parametrize("name", NAMES)
def test_reproducible_with_seed(name):
    first = monoid_task(name, 50, 10, seed=7)
    second = monoid_task(name, 50, 10, seed=7)
    other = monoid_task(name, 50, 10, seed=8)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], other[0])


def test_long_sequences_have_the_right_shapes():
    # Speed is measured in benchmarks, never asserted here.
    for name in NAMES:
        x, y = monoid_task(name, 200, 1024, seed=0)
        assert x.shape == (200, 1024) and y.shape == (200,)


def test_unknown_name_lists_the_tasks():
    with pytest.raises(ValueError, match="Received: name='dyck2'") as info:
        monoid_task("dyck2", 4, 4)
    for name in NAMES:
        assert name in str(info.value)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num": 0, "length": 4}, "Received: num=0"),
        ({"num": 2.5, "length": 4}, "Received: num=2.5"),
        ({"num": 4, "length": 0}, "Received: length=0"),
        ({"num": 4, "length": -2}, "Received: length=-2"),
        ({"num": 4, "length": 4, "seed": -1}, "Received: seed=-1"),
    ],
)
def test_argument_errors(name, kwargs, message):
    with pytest.raises(ValueError, match=message):
        monoid_task(name, **kwargs)


def test_task_specific_errors():
    with pytest.raises(ValueError, match="even.*Received: length=5"):
        dyck1(4, 5)
    with pytest.raises(ValueError, match="near_miss_fraction=1.5"):
        dyck1(4, 4, near_miss_fraction=1.5)
    with pytest.raises(ValueError, match="return_kind='yes'"):
        dyck1(4, 4, return_kind="yes")
    with pytest.raises(ValueError, match="regression=1"):
        counting_ones(4, 4, regression=1)
    with pytest.raises(TypeError):
        monoid_task("parity", 4, 4, near_miss_fraction=0.5)
    with pytest.raises(ValueError, match=r"\{0, 1, 2\}"):
        is_dyck1(np.array([[1, 3]]))
    with pytest.raises(ValueError, match="at least one axis"):
        is_dyck1(np.int32(1))
