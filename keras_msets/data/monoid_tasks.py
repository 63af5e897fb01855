"""Sequence tasks whose semantic monoid is known (Fusion Encoder Networks).

Pasteris et al. (2024, Sec. 4) assume that the label of a sequence
`z_1 ... z_N` depends only on the product `mu(z_1) ⊙ ... ⊙ mu(z_N)` in a
monoid `(M, ⊙)`, the *semantic monoid*: each token has a meaning `mu(z)` and
the meaning of a concatenation is the fusion of the meanings of its parts.
A Fusion Encoder Network learns encodings of these products without being
told the monoid. The tasks here are chosen so that the monoid is known and
small, which makes it possible to check what a network has learned:

| task | monoid | classes | loss |
|---|---|---|---|
| `counting_ones` | `(N, +)` | `length + 1` | sparse categorical |
| `dyck1` | bicyclic monoid | 2 | binary |
| `digit_sum_mod10` | `Z_10` | 10 | sparse categorical |
| `parity` | `Z_2` | 2 | binary |
| `s3_word_problem` | symmetric group `S_3` | 6 | sparse categorical |

Every generator returns `(x, y)`: `x` int32 `[num, length]` of token ids
that start at 1, so that `0` stays free for padding (no generator pads;
every row is full), and `y` int32 `[num]` (class indices, or 0/1 for the
binary tasks). Every generator takes an explicit `seed` and draws from
`np.random.default_rng(seed)`. Only numpy is used and the generators are
vectorised: 10,000 sequences of length 1,024 take about 0.05-0.15 s per
task on one idle CPU core, and 0.6 s for `dyck1`.

References:
    Pasteris, Hicks and Mavroudis, *Fusion Encoder Networks*,
    arXiv:2402.15883, 2024.
"""

import dataclasses

import numpy as np

from keras_msets.data.dyck import DYCK1_KINDS
from keras_msets.data.dyck import dyck1
from keras_msets.data.dyck import is_dyck1
from keras_msets.utils.validation import check_bool
from keras_msets.utils.validation import check_non_negative_int
from keras_msets.utils.validation import check_positive_int

__all__ = [
    "DYCK1_KINDS",
    "S3_ELEMENTS",
    "S3_TABLE",
    "TASKS",
    "MonoidTask",
    "counting_ones",
    "digit_sum_mod10",
    "dyck1",
    "is_dyck1",
    "monoid_task",
    "parity",
    "s3_product",
    "s3_word_problem",
]

# Token ids of the binary tasks (counting_ones, parity).
_ZERO = 1
_ONE = 2

# The six permutations of (0, 1, 2) in lexicographic order; token `k + 1`
# stands for `S3_ELEMENTS[k]`, where `p[i]` is the image of `i`.
S3_ELEMENTS = (
    (0, 1, 2),
    (0, 2, 1),
    (1, 0, 2),
    (1, 2, 0),
    (2, 0, 1),
    (2, 1, 0),
)
# `S3_TABLE[a, b]` is the index of the product `a · b` = "first apply
# `S3_ELEMENTS[a]`, then `S3_ELEMENTS[b]`", i.e. `(a · b)[i] = b[a[i]]`.
# Row and column 0 are the identity; the group is not commutative
# (`S3_TABLE[1, 2] = 3` but `S3_TABLE[2, 1] = 4`).
S3_TABLE = np.array(
    [
        [0, 1, 2, 3, 4, 5],
        [1, 0, 3, 2, 5, 4],
        [2, 4, 0, 5, 1, 3],
        [3, 5, 1, 4, 0, 2],
        [4, 2, 5, 0, 3, 1],
        [5, 3, 4, 1, 2, 0],
    ],
    dtype=np.int32,
)
S3_TABLE.setflags(write=False)
_S3_IDENTITY = 0


def _uniform_tokens(num, length, seed, num_tokens):
    """Checks the arguments; draws tokens uniform in 1..num_tokens."""
    num = check_positive_int("num", num)
    length = check_positive_int("length", length)
    seed = check_non_negative_int("seed", seed)
    rng = np.random.default_rng(seed)
    return rng.integers(1, num_tokens + 1, size=(num, length), dtype=np.int32)


def _generator_doc(x_values, y_text):
    """Appends the `Args`, `Returns` and `Example` that every
    `(num, length, seed)` generator here shares to its docstring."""

    def decorate(function):
        if function.__doc__ is not None:  # None under `python -OO`
            function.__doc__ += f"""
    Args:
        num: Number of sequences, a positive integer.
        length: Length of every sequence, a positive integer.
        seed: Non-negative integer seed of `np.random.default_rng`.

    Returns:
        A tuple `(x, y)`: `x` int32 `[num, length]` with values in
        {x_values} and `y` {y_text}.

    Example:

    ```python
    x, y = {function.__name__}(3, 8, seed=0)
    ```
    """
        return function

    return decorate


def counting_ones(num, length, seed=0, regression=False):
    """Binary strings labelled with their number of ones.

    Vocabulary: `1` = the bit "0", `2` = the bit "1" (`0` is padding).
    Every bit is drawn independently and uniformly, so the count follows a
    Binomial(`length`, 1/2) distribution. Semantic monoid: `(N, +)` with
    `mu("0") = 0`, `mu("1") = 1`; the label is the product itself.

    Args:
        num: Number of sequences, a positive integer.
        length: Length of every sequence, a positive integer.
        seed: Non-negative integer seed of `np.random.default_rng`.
        regression: If `False` (default), `y` is int32 `[num]`, the count,
            which is also a class index in `[0, length]` (`length + 1`
            classes, sparse categorical cross-entropy). If `True`, `y` is
            the same count as float32 `[num, 1]`, a regression target for a
            mean squared error.

    Returns:
        A tuple `(x, y)`: `x` int32 `[num, length]` with values in `{1, 2}`
        and `y` as described above.

    Example:

    ```python
    x, y = counting_ones(3, 8, seed=0)
    x.shape, y.shape  # ((3, 8), (3,))
    ```
    """
    x = _uniform_tokens(num, length, seed, _ONE)
    regression = check_bool("regression", regression)
    count = np.count_nonzero(x == _ONE, axis=1)
    if regression:
        return x, count.astype(np.float32)[:, None]
    return x, count.astype(np.int32)


@_generator_doc("`{1, 2}`", "int32 `[num]`, `1` when the number of ones is odd")
def parity(num, length, seed=0):
    """Binary strings labelled with the parity of their number of ones.

    Vocabulary: `1` = the bit "0", `2` = the bit "1" (`0` is padding).
    Bits are drawn independently and uniformly. Semantic monoid: the group
    `Z_2` (addition mod 2) with `mu("0") = 0`, `mu("1") = 1`.
    """
    x = _uniform_tokens(num, length, seed, _ONE)
    y = np.count_nonzero(x == _ONE, axis=1) % 2
    return x, y.astype(np.int32)


@_generator_doc("1..10", "int32 `[num]` in 0..9")
def digit_sum_mod10(num, length, seed=0):
    """Digit strings labelled with the sum of their digits mod 10.

    Vocabulary: token `d + 1` is the digit `d`, for `d` in 0..9 (tokens
    1..10; `0` is padding). Digits are drawn independently and uniformly.
    Semantic monoid: the cyclic group `Z_10` with `mu(d) = d`.
    """
    x = _uniform_tokens(num, length, seed, 10)
    y = (x - 1).sum(axis=1, dtype=np.int64) % 10
    return x, y.astype(np.int32)


def s3_product(elements, axis=-1):
    """Left-to-right product `g_1 · g_2 · ... · g_N` in `S_3`.

    Multiplies element indices (0..5, see `S3_ELEMENTS`) with `S3_TABLE`
    by a balanced binary tree of pairwise products (log-depth, vectorised
    over all other axes), which associativity makes equal to the
    sequential fold. An empty product is the identity, `0`.

    Args:
        elements: Integer array of element indices in 0..5.
        axis: The axis to multiply along.

    Returns:
        An int32 array with `axis` removed.
    """
    a = np.moveaxis(np.asarray(elements), axis, -1).astype(np.int32)
    if a.size and (a.min() < 0 or a.max() > 5):
        raise ValueError(
            "`elements` must hold S3 element indices in 0..5. Received "
            f"values in [{a.min()}, {a.max()}]"
        )
    if a.shape[-1] == 0:
        return np.full(a.shape[:-1], _S3_IDENTITY, dtype=np.int32)
    while a.shape[-1] > 1:
        if a.shape[-1] % 2:
            pad = np.full(a.shape[:-1] + (1,), _S3_IDENTITY, dtype=np.int32)
            a = np.concatenate([a, pad], axis=-1)
        a = S3_TABLE[a[..., 0::2], a[..., 1::2]]
    return a[..., 0]


@_generator_doc("1..6", "int32 `[num]` in 0..5")
def s3_word_problem(num, length, seed=0):
    """Words over the symmetric group `S_3` labelled with their product.

    Vocabulary: token `k + 1` (1..6) is the permutation `S3_ELEMENTS[k]`
    of `(0, 1, 2)`, listed in lexicographic order: 1 = (0,1,2) (identity),
    2 = (0,2,1), 3 = (1,0,2), 4 = (1,2,0), 5 = (2,0,1), 6 = (2,1,0), where
    the tuple `p` maps `i` to `p[i]`; `0` is padding. Tokens are drawn
    independently and uniformly, so the label is uniform over the group.
    Semantic monoid: `S_3` itself with `mu(k + 1) = S3_ELEMENTS[k]`.

    The label is the index (0..5) of the left-to-right product
    `g_1 · g_2 · ... · g_N`, where `a · b` means "apply `a`, then `b`":
    `(a · b)[i] = b[a[i]]`, as tabulated in `S3_TABLE`. The product does
    depend on the order of the tokens (the group is not commutative).
    """
    x = _uniform_tokens(num, length, seed, 6)
    return x, s3_product(x - 1)


@dataclasses.dataclass(frozen=True)
class MonoidTask:
    """Description of one task of `TASKS`.

    Attributes:
        generator: The function `generator(num, length, seed, **kwargs)`.
        num_classes: Number of classes, or `None` when it is `length + 1`
            (`counting_ones`); see `classes(length)`.
        loss: `"binary"` (labels 0/1, one sigmoid output) or
            `"sparse_categorical"` (labels are class indices).
        vocab_size: Largest token id + 1 (the padding id 0 included), the
            `input_dim` of an `Embedding`.
        monoid: The semantic monoid, in one line.
    """

    generator: object
    num_classes: object
    loss: str
    vocab_size: int
    monoid: str

    def classes(self, length):
        """Number of classes for sequences of `length` tokens."""
        if self.num_classes is None:
            return check_positive_int("length", length) + 1
        return self.num_classes


# name: MonoidTask(generator, num_classes, loss, vocab_size, monoid)
TASKS = {
    "counting_ones": MonoidTask(
        counting_ones,
        None,
        "sparse_categorical",
        3,
        "(N, +): mu('0') = 0, mu('1') = 1; the label is the sum.",
    ),
    "dyck1": MonoidTask(
        dyck1,
        2,
        "binary",
        3,
        "bicyclic monoid of (unmatched ')', unmatched '('); balanced iff "
        "the product is (0, 0).",
    ),
    "digit_sum_mod10": MonoidTask(
        digit_sum_mod10,
        10,
        "sparse_categorical",
        11,
        "Z_10 under addition: mu(d) = d; the label is the sum mod 10.",
    ),
    "parity": MonoidTask(
        parity, 2, "binary", 3, "Z_2 under addition: mu('0') = 0, mu('1') = 1."
    ),
    "s3_word_problem": MonoidTask(
        s3_word_problem,
        6,
        "sparse_categorical",
        7,
        "symmetric group S_3, left-to-right product (S3_TABLE).",
    ),
}


def monoid_task(name, num, length, seed=0, **kwargs):
    """Generates a task of `TASKS` by name.

    Args:
        name: One of `"counting_ones"`, `"dyck1"`, `"digit_sum_mod10"`,
            `"parity"`, `"s3_word_problem"`.
        num: Number of sequences, a positive integer.
        length: Length of every sequence, a positive integer (even for
            `"dyck1"`).
        seed: Non-negative integer seed of `np.random.default_rng`.
        **kwargs: Passed to the generator (e.g. `near_miss_fraction` for
            `"dyck1"`, `regression` for `"counting_ones"`).

    Returns:
        What the generator returns, normally `(x, y)`.

    Example:

    ```python
    x, y = monoid_task("s3_word_problem", num=128, length=64, seed=0)
    num_classes = TASKS["s3_word_problem"].classes(64)  # 6
    ```
    """
    if not isinstance(name, str) or name not in TASKS:
        raise ValueError(
            f"Unknown monoid task. `name` must be one of {sorted(TASKS)}. "
            f"Received: name={name!r}"
        )
    return TASKS[name].generator(num, length, seed, **kwargs)
