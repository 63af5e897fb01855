"""Dyck-1: balanced bracket strings, a task with a known semantic monoid.

The label of a bracket string is whether it is balanced; its semantic
monoid (Pasteris et al., 2024, Sec. 4) is the bicyclic monoid. `dyck1`
draws positives uniformly among balanced strings and negatives that are
near misses of them, and is one of the tasks of `keras_msets.data.
monoid_tasks` (`monoid_task("dyck1", ...)`), which exports every public
name of this module.

References:
    Pasteris, Hicks and Mavroudis, *Fusion Encoder Networks*,
    arXiv:2402.15883, 2024.
"""

import numpy as np

from keras_msets.utils.validation import check_bool
from keras_msets.utils.validation import check_fraction
from keras_msets.utils.validation import check_non_negative_int
from keras_msets.utils.validation import check_positive_int

# Token ids of dyck1.
_OPEN = 1
_CLOSE = 2

# The kinds of dyck1 examples reported by `return_kind=True`.
DYCK1_KINDS = ("balanced", "flip", "swap", "equal_counts", "random")


def _check_even_length(length):
    length = check_positive_int("length", length)
    if length % 2:
        raise ValueError(
            "`length` must be a positive even integer for dyck1 (a balanced "
            f"string has even length). Received: length={length}"
        )
    return length


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
    num = check_positive_int("num", num)
    length = _check_even_length(length)
    seed = check_non_negative_int("seed", seed)
    near_miss_fraction = check_fraction(
        "near_miss_fraction", near_miss_fraction
    )
    return_kind = check_bool("return_kind", return_kind)
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
