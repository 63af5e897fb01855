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
import numbers

import numpy as np

from keras_msets.data.digit_sum import _check_positive_int
from keras_msets.data.digit_sum import _check_seed

# Token ids of the binary tasks (counting_ones, parity).
_ZERO = 1
_ONE = 2
# Token ids of dyck1.
_OPEN = 1
_CLOSE = 2

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

# The kinds of dyck1 examples reported by `return_kind=True`.
DYCK1_KINDS = ("balanced", "flip", "swap", "equal_counts", "random")


def _check_length(length, even=False):
    length = _check_positive_int("length", length)
    if even and length % 2:
        raise ValueError(
            "`length` must be a positive even integer for dyck1 (a balanced "
            f"string has even length). Received: length={length}"
        )
    return length


def _check_bool(name, value):
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(
            f"`{name}` must be a boolean. Received: {name}={value!r}"
        )
    return bool(value)


def _binary_tokens(num, length, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(_ZERO, _ONE + 1, size=(num, length), dtype=np.int32)


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
    num = _check_positive_int("num", num)
    length = _check_length(length)
    seed = _check_seed(seed)
    regression = _check_bool("regression", regression)
    x = _binary_tokens(num, length, seed)
    count = np.count_nonzero(x == _ONE, axis=1)
    if regression:
        return x, count.astype(np.float32)[:, None]
    return x, count.astype(np.int32)


def parity(num, length, seed=0):
    """Binary strings labelled with the parity of their number of ones.

    Vocabulary: `1` = the bit "0", `2` = the bit "1" (`0` is padding).
    Bits are drawn independently and uniformly. Semantic monoid: the group
    `Z_2` (addition mod 2) with `mu("0") = 0`, `mu("1") = 1`.

    Args:
        num: Number of sequences, a positive integer.
        length: Length of every sequence, a positive integer.
        seed: Non-negative integer seed of `np.random.default_rng`.

    Returns:
        A tuple `(x, y)`: `x` int32 `[num, length]` with values in `{1, 2}`
        and `y` int32 `[num]`, `1` when the number of ones is odd.

    Example:

    ```python
    x, y = parity(3, 8, seed=0)
    ```
    """
    num = _check_positive_int("num", num)
    length = _check_length(length)
    seed = _check_seed(seed)
    x = _binary_tokens(num, length, seed)
    y = np.count_nonzero(x == _ONE, axis=1) % 2
    return x, y.astype(np.int32)


def digit_sum_mod10(num, length, seed=0):
    """Digit strings labelled with the sum of their digits mod 10.

    Vocabulary: token `d + 1` is the digit `d`, for `d` in 0..9 (tokens
    1..10; `0` is padding). Digits are drawn independently and uniformly.
    Semantic monoid: the cyclic group `Z_10` with `mu(d) = d`.

    Args:
        num: Number of sequences, a positive integer.
        length: Length of every sequence, a positive integer.
        seed: Non-negative integer seed of `np.random.default_rng`.

    Returns:
        A tuple `(x, y)`: `x` int32 `[num, length]` with values in 1..10
        and `y` int32 `[num]` in 0..9.

    Example:

    ```python
    x, y = digit_sum_mod10(3, 8, seed=0)
    ```
    """
    num = _check_positive_int("num", num)
    length = _check_length(length)
    seed = _check_seed(seed)
    rng = np.random.default_rng(seed)
    x = rng.integers(1, 11, size=(num, length), dtype=np.int32)
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

    Args:
        num: Number of sequences, a positive integer.
        length: Length of every sequence, a positive integer.
        seed: Non-negative integer seed of `np.random.default_rng`.

    Returns:
        A tuple `(x, y)`: `x` int32 `[num, length]` with values in 1..6
        and `y` int32 `[num]` in 0..5.

    Example:

    ```python
    x, y = s3_word_problem(3, 8, seed=0)
    ```
    """
    num = _check_positive_int("num", num)
    length = _check_length(length)
    seed = _check_seed(seed)
    rng = np.random.default_rng(seed)
    x = rng.integers(1, 7, size=(num, length), dtype=np.int32)
    return x, s3_product(x - 1)


def is_dyck1(x):
    """Whether each row is a balanced string of brackets (Dyck-1).

    Token `1` is "(", token `2` is ")" and `0` (padding) is skipped, so a
    padded row is judged by its brackets alone. A row is balanced when no
    prefix has more ")" than "(" and the totals are equal, computed with
    one cumulative sum along the last axis. An empty row is balanced.

    Args:
        x: Integer array `[..., length]` with values in `{0, 1, 2}`.

    Returns:
        A boolean array `[...]`.
    """
    x = np.asarray(x)
    if x.ndim == 0:
        raise ValueError(
            "`x` must have at least one axis (the sequence axis). "
            f"Received: x with shape {x.shape}"
        )
    if not np.issubdtype(x.dtype, np.integer) or (
        x.size and (x.min() < 0 or x.max() > 2)
    ):
        raise ValueError(
            "`x` must be an integer array of tokens in {0, 1, 2} "
            "(0 = padding, 1 = '(', 2 = ')'). "
            f"Received: x with dtype {x.dtype}"
            + (f" and values in [{x.min()}, {x.max()}]" if x.size else "")
        )
    if x.shape[-1] == 0:
        return np.ones(x.shape[:-1], dtype=bool)
    steps = (x == _OPEN).astype(np.int32) - (x == _CLOSE).astype(np.int32)
    height = np.cumsum(steps, axis=-1)
    return np.all(height >= 0, axis=-1) & (height[..., -1] == 0)


def _uniform_dyck_words(rng, num, length):
    """`num` Dyck words of `length` brackets, uniform among all of them.

    Cycle lemma: a uniformly random arrangement of `n + 1` up steps and `n`
    down steps (`n = length / 2`) has exactly one rotation whose proper
    prefix sums are all positive: the one starting at the last minimum of
    the prefix sums. The `2n + 1` rotations of an arrangement are distinct,
    so each Dyck word (the rotation without its leading up step) comes
    from exactly `2n + 1` arrangements and is therefore uniform.
    """
    n = length // 2
    steps = np.empty((num, length + 1), dtype=np.int8)
    steps[:, : n + 1] = 1
    steps[:, n + 1 :] = -1
    steps = rng.permuted(steps, axis=1)
    # Heights before each step: 0, P_1, ..., P_{2n}; take the last minimum.
    heights = np.zeros((num, length + 1), dtype=np.int32)
    np.cumsum(steps[:, :-1], axis=1, dtype=np.int32, out=heights[:, 1:])
    last_min = length - np.argmin(heights[:, ::-1], axis=1)
    # Drop the up step at `last_min`, read the other 2n steps cyclically.
    cyclic = np.concatenate([steps, steps], axis=1)
    idx = last_min[:, None] + np.arange(1, length + 1)
    words = np.take_along_axis(cyclic, idx, axis=1)
    # Up step (+1) -> 1 = "(", down step (-1) -> 2 = ")".
    return ((3 - words) // 2).astype(np.int32)


def _flip_one(rng, words):
    """Flips one bracket chosen uniformly: the counts then differ by 2."""
    num, length = words.shape
    pos = rng.integers(0, length, size=num)
    out = words.copy()
    rows = np.arange(num)
    out[rows, pos] = _OPEN + _CLOSE - out[rows, pos]
    return out


def _swap_first_return(words):
    """Near misses by one adjacent swap, uniform among all of them.

    A balanced string becomes unbalanced by swapping two adjacent brackets
    only when they are a "()" at depth 0 (swapping ")(" or a deeper "()"
    keeps it balanced), and then it reads `A )( B` with `A` and `B`
    balanced. The first-return decomposition `w = ( A ) B` is a bijection
    between balanced strings `w` and such pairs `(A, B)`, and `A )( B`
    determines `(A, B)` (its prefix sums reach -1 only after `A`), so
    mapping a uniform `w` to `A )( B` gives a uniform near miss of this
    kind.
    """
    num, length = words.shape
    steps = np.where(words == _OPEN, 1, -1).astype(np.int32)
    height = np.cumsum(steps, axis=1)
    first_return = np.argmax(height == 0, axis=1)[:, None]
    j = np.arange(length)[None, :]
    # out[j] = w[j + 1] inside A, then ")(", then w[j] inside B.
    shifted = np.concatenate([words[:, 1:], words[:, -1:]], axis=1)
    out = np.where(j < first_return - 1, shifted, words)
    out = np.where(j == first_return - 1, _CLOSE, out)
    out = np.where(j == first_return, _OPEN, out)
    return out.astype(np.int32)


def _unbalanced(rng, num, length, equal_counts):
    """Random unbalanced strings, by rejection of the balanced ones.

    With `equal_counts`, uniform among arrangements of `length / 2` of each
    bracket that are not balanced (a fraction `n / (n + 1)` of them);
    otherwise uniform among all unbalanced strings of `length` brackets.
    """
    out = np.empty((num, length), dtype=np.int32)
    todo = np.arange(num)
    while todo.size:
        if equal_counts:
            draw = np.full((todo.size, length), _CLOSE, dtype=np.int32)
            draw[:, : length // 2] = _OPEN
            draw = rng.permuted(draw, axis=1)
        else:
            draw = rng.integers(
                _OPEN, _CLOSE + 1, size=(todo.size, length), dtype=np.int32
            )
        out[todo] = draw
        todo = todo[is_dyck1(draw)]
    return out


def dyck1(num, length, seed=0, near_miss_fraction=0.5, return_kind=False):
    """Bracket strings labelled with balanced (Dyck-1) membership.

    Vocabulary: `1` = "(", `2` = ")" (`0` is padding). Semantic monoid: the
    bicyclic monoid of pairs `(c, o)` (unmatched ")" then unmatched "("),
    with `mu("(") = (0, 1)`, `mu(")") = (1, 0)` and
    `(c, o) ⊙ (c', o') = (c + max(c' - o, 0), o' + max(o - c', 0))`; a
    string is balanced exactly when its product is the identity `(0, 0)`.

    `num // 2` examples are positives and the rest negatives, in a random
    order. Positives are uniform among the Catalan-many balanced strings of
    `length` brackets, drawn with the cycle lemma (a random arrangement of
    `length / 2 + 1` "(" and `length / 2` ")", rotated to start at the last
    minimum of its prefix sums, first "(" dropped). Of the negatives, a
    fraction `near_miss_fraction` (rounded) are near misses of a fresh
    uniform balanced string, each made with probability 1/2 by

    - `"flip"`: one bracket, chosen uniformly, flipped (always unbalanced:
      the counts differ by 2), or
    - `"swap"`: one adjacent "()" at depth 0 swapped into ")(" (equal
      counts, but a prefix goes below 0). These are the only adjacent
      swaps that unbalance a balanced string (swapping ")(", or a "()" at
      depth > 0, keeps it balanced); the string `( A ) B` (first-return
      decomposition) becomes `A )( B`, which makes these near misses
      uniform among all strings one such swap away from balanced.

    The remaining negatives are split evenly between `"equal_counts"`
    (uniform among unbalanced arrangements of `length / 2` of each bracket)
    and `"random"` (uniform among all unbalanced strings). Every label is
    checked with `is_dyck1` before the arrays are returned.

    Args:
        num: Number of sequences, a positive integer.
        length: Length of every sequence, a positive even integer.
        seed: Non-negative integer seed of `np.random.default_rng`.
        near_miss_fraction: Fraction of the negatives that are near
            misses, in `[0, 1]`.
        return_kind: If `True`, also return the kind of each example.

    Returns:
        A tuple `(x, y)`, or `(x, y, kind)` with `return_kind=True`: `x`
        int32 `[num, length]` with values in `{1, 2}`, `y` int32 `[num]`
        (`1` = balanced) and `kind` a string array `[num]` with values in
        `DYCK1_KINDS` ("balanced", "flip", "swap", "equal_counts",
        "random").

    Example:

    ```python
    x, y, kind = dyck1(6, 8, seed=0, return_kind=True)
    ```
    """
    num = _check_positive_int("num", num)
    length = _check_length(length, even=True)
    seed = _check_seed(seed)
    if (
        not isinstance(near_miss_fraction, numbers.Real)
        or isinstance(near_miss_fraction, bool)
        or not 0.0 <= near_miss_fraction <= 1.0
    ):
        raise ValueError(
            "`near_miss_fraction` must be a number in [0, 1]. "
            f"Received: near_miss_fraction={near_miss_fraction!r}"
        )
    return_kind = _check_bool("return_kind", return_kind)
    rng = np.random.default_rng(seed)
    num_pos = num // 2
    num_neg = num - num_pos
    num_near = int(round(near_miss_fraction * num_neg))
    num_equal = (num_neg - num_near) // 2
    num_random = num_neg - num_near - num_equal

    words = _uniform_dyck_words(rng, num_pos + num_near, length)
    positives, bases = words[:num_pos], words[num_pos:]
    use_swap = rng.random(num_near) < 0.5
    near = np.where(
        use_swap[:, None], _swap_first_return(bases), _flip_one(rng, bases)
    )
    equal = _unbalanced(rng, num_equal, length, equal_counts=True)
    random = _unbalanced(rng, num_random, length, equal_counts=False)

    x = np.concatenate([positives, near, equal, random], axis=0)
    y = np.concatenate(
        [np.ones(num_pos, np.int32), np.zeros(num_neg, np.int32)]
    )
    kind = np.concatenate(
        [
            np.full(num_pos, "balanced"),
            np.where(use_swap, "swap", "flip"),
            np.full(num_equal, "equal_counts"),
            np.full(num_random, "random"),
        ]
    ).astype(f"<U{max(map(len, DYCK1_KINDS))}")
    if np.any(is_dyck1(x) != y.astype(bool)):  # pragma: no cover
        raise RuntimeError("dyck1 generated a mislabelled example.")
    order = rng.permutation(num)
    x, y, kind = x[order], y[order], kind[order]
    if return_kind:
        return x, y, kind
    return x, y


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
            return _check_length(length) + 1
        return self.num_classes


TASKS = {
    "counting_ones": MonoidTask(
        generator=counting_ones,
        num_classes=None,
        loss="sparse_categorical",
        vocab_size=3,
        monoid="(N, +): mu('0') = 0, mu('1') = 1; the label is the sum.",
    ),
    "dyck1": MonoidTask(
        generator=dyck1,
        num_classes=2,
        loss="binary",
        vocab_size=3,
        monoid=(
            "bicyclic monoid of (unmatched ')', unmatched '('); "
            "balanced iff the product is (0, 0)."
        ),
    ),
    "digit_sum_mod10": MonoidTask(
        generator=digit_sum_mod10,
        num_classes=10,
        loss="sparse_categorical",
        vocab_size=11,
        monoid="Z_10 under addition: mu(d) = d; the label is the sum mod 10.",
    ),
    "parity": MonoidTask(
        generator=parity,
        num_classes=2,
        loss="binary",
        vocab_size=3,
        monoid="Z_2 under addition: mu('0') = 0, mu('1') = 1.",
    ),
    "s3_word_problem": MonoidTask(
        generator=s3_word_problem,
        num_classes=6,
        loss="sparse_categorical",
        vocab_size=7,
        monoid="symmetric group S_3, left-to-right product (S3_TABLE).",
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
