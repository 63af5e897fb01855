"""Random weighted automata and their string weights (task 0).

Task 0 of DeBenedetto & Chiang (2020, Sec. 5.2) asks whether a complex
diagonal automaton can be trained to reproduce the string weights of a
given multiset automaton. An automaton with `d` states has initial weights
`lambda` (`[d]`), one transition matrix `mu(a)` per symbol `a` and final
weights `rho` (`[d]`); the weight of a string `a_1 ... a_n` is
`lambda mu(a_1) ... mu(a_n) rho`. Two families are generated:

- unary automata (one symbol) whose transition matrix is drawn from the
  Haar distribution on orthogonal matrices; the training strings are all
  unary strings of length 0 to 20;
- complex diagonal automata over 5 symbols, with spectral radius 1; the
  training strings are all strings of length 5.

Parameters are numpy float64/complex128 and string weights are computed in
float64/complex128, then returned as float32 training targets. Only numpy
and scipy are used.
"""

import itertools

import numpy as np

from keras_msets.utils.validation import check_bool
from keras_msets.utils.validation import check_non_negative_int
from keras_msets.utils.validation import check_positive_int

# Refuse to enumerate more strings than this (about 400 MB of int32 for
# length 10); the paper needs 5**5 = 3125.
_MAX_STRINGS = 10_000_000


def _check_automaton(automaton, diagonal):
    keys = ("initial", "transition", "final")
    if not isinstance(automaton, dict) or any(k not in automaton for k in keys):
        raise ValueError(
            "`automaton` must be a dict with keys 'initial', 'transition' "
            "and 'final' (as returned by "
            f"{'random_diagonal' if diagonal else 'random_unary'}_automaton). "
            f"Received: automaton={automaton!r}"
        )
    initial, transition, final = (np.asarray(automaton[k]) for k in keys)
    d = initial.shape[0] if initial.ndim == 1 else -1
    expected = (None, d) if diagonal else (d, d)
    if (
        d < 1
        or final.shape != (d,)
        or transition.ndim != 2
        or transition.shape[1] != expected[1]
        or (not diagonal and transition.shape[0] != d)
        or transition.shape[0] < 1
    ):
        want = "[alphabet_size, d]" if diagonal else "[d, d]"
        raise ValueError(
            "`automaton` must hold 'initial' [d], 'transition' "
            f"{want} and 'final' [d]. Received shapes: "
            f"initial={initial.shape}, transition={transition.shape}, "
            f"final={final.shape}"
        )
    return initial, transition, final


def random_unary_automaton(num_states, seed):
    """Draws a unary automaton with a Haar-random orthogonal transition.

    The transition matrix `mu` is drawn from the Haar (uniform) distribution
    on the orthogonal group O(d) with `scipy.stats.ortho_group`, as in the
    paper (Mezzadri, 2007). The paper does not say how the initial and final
    weights were drawn; here `lambda` and `rho` are independent standard
    normal vectors divided by `sqrt(d)`, so that their expected squared norm
    is 1 and every string weight `lambda mu^n rho` has modulus at most about
    1 whatever `n` (orthogonal `mu` preserves norms). Draw order from
    `np.random.default_rng(seed)`: `mu`, then `lambda`, then `rho`.

    Args:
        num_states: Number of states `d`, a positive integer.
        seed: Non-negative integer seed.

    Returns:
        A dict with float64 arrays `initial` `[d]`, `transition` `[d, d]`
        and `final` `[d]`.
    """
    num_states = check_positive_int("num_states", num_states)
    seed = check_non_negative_int("seed", seed)
    from scipy.stats import ortho_group

    rng = np.random.default_rng(seed)
    transition = ortho_group.rvs(dim=num_states, random_state=rng)
    transition = np.asarray(transition, dtype=np.float64)
    transition = transition.reshape(num_states, num_states)
    scale = 1.0 / np.sqrt(num_states)
    initial = rng.standard_normal(num_states) * scale
    final = rng.standard_normal(num_states) * scale
    return {"initial": initial, "transition": transition, "final": final}


def unary_automaton_strings(automaton, max_length=20):
    """Every unary string of length 0 to `max_length` and its weight.

    The weight of the string of length `n` is `lambda mu^n rho`, computed in
    float64. A unary string is determined by its length; as a model input it
    is `n` copies of symbol 1 right-padded with 0, e.g.
    `(np.arange(max_length) < lengths[:, None]).astype("int32")`.

    Args:
        automaton: A dict from `random_unary_automaton`.
        max_length: Longest string, a positive integer (the paper: 20).

    Returns:
        A tuple `(lengths, weights)`: int32 `[max_length + 1]` holding
        `0, ..., max_length`, and float32 `[max_length + 1]`.
    """
    initial, transition, final = _check_automaton(automaton, diagonal=False)
    max_length = check_positive_int("max_length", max_length)
    initial = initial.astype(np.float64)
    transition = transition.astype(np.float64)
    final = final.astype(np.float64)
    weights = np.empty(max_length + 1, dtype=np.float64)
    forward = initial
    for n in range(max_length + 1):
        weights[n] = forward @ final
        forward = forward @ transition
    lengths = np.arange(max_length + 1, dtype=np.int32)
    return lengths, weights.astype(np.float32)


def random_diagonal_automaton(num_states, alphabet_size=5, seed=0):
    """Draws a complex diagonal multiset automaton with spectral radius 1.

    As in the paper, the real and imaginary parts of every diagonal
    transition weight are drawn uniformly from [0, 1], then all transition
    weights are divided by the largest modulus among them (over all symbols
    and states), so the largest spectral radius of the `mu(a)` is exactly 1.
    Diagonal matrices commute, so the automaton is a multiset automaton:
    the weight of a string does not depend on its order.

    The paper does not say how the initial and final weights were drawn;
    here each is complex with independent standard normal real and
    imaginary parts divided by `sqrt(2 d)` (expected squared norm 1). Draw
    order from `np.random.default_rng(seed)`: transition real parts,
    transition imaginary parts, initial (real, imaginary), final (real,
    imaginary).

    Args:
        num_states: Number of states `d`, a positive integer.
        alphabet_size: Number of symbols (the paper: 5).
        seed: Non-negative integer seed.

    Returns:
        A dict with complex128 arrays `initial` `[d]`, `transition`
        `[alphabet_size, d]` (row `a - 1` is the diagonal of `mu(a)` for
        symbol `a`) and `final` `[d]`.
    """
    num_states = check_positive_int("num_states", num_states)
    alphabet_size = check_positive_int("alphabet_size", alphabet_size)
    seed = check_non_negative_int("seed", seed)
    rng = np.random.default_rng(seed)
    shape = (alphabet_size, num_states)
    real = rng.uniform(0.0, 1.0, shape)
    imag = rng.uniform(0.0, 1.0, shape)
    transition = real + 1j * imag
    transition = transition / np.max(np.abs(transition))
    scale = 1.0 / np.sqrt(2.0 * num_states)

    def _complex_normal():
        real = rng.standard_normal(num_states)
        imag = rng.standard_normal(num_states)
        return (real + 1j * imag) * scale

    initial = _complex_normal()
    final = _complex_normal()
    return {"initial": initial, "transition": transition, "final": final}


def diagonal_automaton_strings(automaton, length=5, return_complex=False):
    """Every string of one length over the alphabet and its weight.

    Strings are enumerated in lexicographic order, symbols numbered
    `1..alphabet_size` (0 stays free for padding). The weight
    `sum_q lambda_q rho_q prod_i mu(a_i)_q` is computed in complex128. It is
    complex; the paper trains with mean squared error on the string weight,
    so by default the real part is returned as the target (the imaginary
    part is not used); `return_complex=True` returns the complex weight.

    Args:
        automaton: A dict from `random_diagonal_automaton`.
        length: String length, a positive integer (the paper: 5).
        return_complex: Whether to return complex64 weights instead of
            their float32 real part.

    Returns:
        A tuple `(x, weights)`: `x` int32 `[alphabet_size**length, length]`
        and `weights` float32 (or complex64) `[alphabet_size**length]`.
    """
    initial, transition, final = _check_automaton(automaton, diagonal=True)
    length = check_positive_int("length", length)
    return_complex = check_bool("return_complex", return_complex)
    alphabet_size = transition.shape[0]
    if alphabet_size**length > _MAX_STRINGS:
        raise ValueError(
            f"`length` is too large: alphabet_size**length = "
            f"{alphabet_size}**{length} strings is more than {_MAX_STRINGS}. "
            f"Received: length={length}"
        )
    symbols = range(1, alphabet_size + 1)
    x = np.array(
        list(itertools.product(symbols, repeat=length)), dtype=np.int32
    )
    transition = transition.astype(np.complex128)
    # [num_strings, length, d] -> product over positions.
    paths = np.prod(transition[x - 1], axis=1)
    weights = paths @ (initial.astype(np.complex128) * final)
    if return_complex:
        return x, weights.astype(np.complex64)
    return x, weights.real.astype(np.float32)
