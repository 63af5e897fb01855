import itertools

import numpy as np
import pytest

from keras_msets.data import diagonal_automaton_strings
from keras_msets.data import random_diagonal_automaton
from keras_msets.data import random_unary_automaton
from keras_msets.data import unary_automaton_strings


@pytest.fixture(autouse=True)
def _seed_everything():
    """Replaces the suite-wide fixture: these tests are numpy-only and seed
    every generator explicitly, and `keras.backend.clear_session()` would
    add a garbage collection (about 0.5 s) to every test."""
    yield


@pytest.mark.parametrize("num_states", [1, 2, 5, 20])
def test_unary_automaton_is_orthogonal(num_states):
    automaton = random_unary_automaton(num_states, seed=num_states)
    mu = automaton["transition"]
    assert mu.shape == (num_states, num_states)
    assert automaton["initial"].shape == (num_states,)
    assert automaton["final"].shape == (num_states,)
    np.testing.assert_allclose(mu @ mu.T, np.eye(num_states), atol=1e-12)


def test_unary_automaton_determinism():
    a = random_unary_automaton(6, seed=3)
    b = random_unary_automaton(6, seed=3)
    c = random_unary_automaton(6, seed=4)
    for key in ("initial", "transition", "final"):
        np.testing.assert_array_equal(a[key], b[key])
        assert not np.array_equal(a[key], c[key])


def test_unary_transitions_look_haar():
    # Haar-distributed orthogonal matrices have determinant +1 and -1 about
    # equally often and mean entry 0.
    dets = [
        np.linalg.det(random_unary_automaton(3, seed=s)["transition"])
        for s in range(200)
    ]
    assert 60 < sum(d > 0 for d in dets) < 140
    mean = np.mean(
        [random_unary_automaton(3, seed=s)["transition"] for s in range(200)],
        axis=0,
    )
    assert np.abs(mean).max() < 0.2


def test_unary_strings():
    automaton = random_unary_automaton(5, seed=0)
    lengths, weights = unary_automaton_strings(automaton)
    assert lengths.dtype == np.int32 and weights.dtype == np.float32
    np.testing.assert_array_equal(lengths, np.arange(21))
    lam, mu, rho = (
        automaton["initial"],
        automaton["transition"],
        automaton["final"],
    )
    expected = [lam @ np.linalg.matrix_power(mu, n) @ rho for n in range(21)]
    np.testing.assert_allclose(weights, expected, rtol=1e-6, atol=1e-7)
    # An orthogonal transition keeps every weight within |lambda| |rho|.
    bound = np.linalg.norm(lam) * np.linalg.norm(rho)
    assert np.all(np.abs(weights) <= bound + 1e-6)


def test_unary_strings_max_length():
    lengths, weights = unary_automaton_strings(
        random_unary_automaton(2, seed=1), max_length=3
    )
    assert lengths.tolist() == [0, 1, 2, 3] and weights.shape == (4,)


@pytest.mark.parametrize("num_states, alphabet_size", [(1, 1), (4, 5), (9, 3)])
def test_diagonal_automaton(num_states, alphabet_size):
    automaton = random_diagonal_automaton(
        num_states, alphabet_size=alphabet_size, seed=7
    )
    transition = automaton["transition"]
    assert transition.shape == (alphabet_size, num_states)
    assert np.iscomplexobj(transition)
    assert automaton["initial"].shape == (num_states,)
    assert automaton["final"].shape == (num_states,)
    # Spectral radius: the eigenvalues of a diagonal matrix are its entries.
    radii = [
        np.max(np.abs(np.linalg.eigvals(np.diag(row)))) for row in transition
    ]
    np.testing.assert_allclose(max(radii), 1.0, rtol=1e-12)
    # Real and imaginary parts were uniform in [0, 1] before the rescaling.
    assert np.all(transition.real >= 0) and np.all(transition.imag >= 0)


def test_diagonal_automaton_determinism():
    a = random_diagonal_automaton(4, seed=0)
    b = random_diagonal_automaton(4, seed=0)
    c = random_diagonal_automaton(4, seed=1)
    for key in ("initial", "transition", "final"):
        np.testing.assert_array_equal(a[key], b[key])
        assert not np.array_equal(a[key], c[key])


def test_diagonal_strings_enumerate_all_strings():
    automaton = random_diagonal_automaton(3, alphabet_size=5, seed=0)
    x, weights = diagonal_automaton_strings(automaton, length=5)
    assert x.shape == (5**5, 5) and x.dtype == np.int32
    assert weights.shape == (5**5,) and weights.dtype == np.float32
    assert x.min() == 1 and x.max() == 5
    assert len({tuple(row) for row in x.tolist()}) == 5**5


def _loop_weight(automaton, string):
    """lambda mu(a_1) ... mu(a_n) rho with full matrices, in complex128."""
    forward = automaton["initial"].astype(np.complex128)
    for symbol in string:
        forward = forward @ np.diag(automaton["transition"][symbol - 1])
    return forward @ automaton["final"]


def test_diagonal_strings_weights():
    automaton = random_diagonal_automaton(4, alphabet_size=3, seed=2)
    x, weights = diagonal_automaton_strings(automaton, length=4)
    _, complex_weights = diagonal_automaton_strings(
        automaton, length=4, return_complex=True
    )
    assert complex_weights.dtype == np.complex64
    expected = np.array([_loop_weight(automaton, row) for row in x])
    np.testing.assert_allclose(complex_weights, expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(weights, expected.real, rtol=1e-5, atol=1e-7)
    # Lexicographic order.
    expected_strings = list(itertools.product(range(1, 4), repeat=4))
    np.testing.assert_array_equal(x, np.array(expected_strings))


def test_diagonal_weight_is_permutation_invariant():
    automaton = random_diagonal_automaton(6, alphabet_size=4, seed=5)
    x, weights = diagonal_automaton_strings(
        automaton, length=4, return_complex=True
    )
    index = {tuple(row): i for i, row in enumerate(x.tolist())}
    rng = np.random.default_rng(0)
    for i in rng.choice(len(x), size=50, replace=False):
        permuted = tuple(rng.permutation(x[i]).tolist())
        np.testing.assert_allclose(
            weights[index[permuted]], weights[i], rtol=1e-5, atol=1e-7
        )
    # And strings with the same multiset of symbols share one weight.
    for string, i in index.items():
        j = index[tuple(sorted(string))]
        np.testing.assert_allclose(weights[i], weights[j], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(
    "fn, kwargs, name",
    [
        (random_unary_automaton, dict(num_states=0, seed=0), "num_states"),
        (random_unary_automaton, dict(num_states=2, seed=-3), "seed"),
        (random_diagonal_automaton, dict(num_states=2.0), "num_states"),
        (
            random_diagonal_automaton,
            dict(num_states=2, alphabet_size=0),
            "alphabet_size",
        ),
        (unary_automaton_strings, dict(automaton={}), "automaton"),
        (
            unary_automaton_strings,
            dict(automaton=random_unary_automaton(2, 0), max_length=0),
            "max_length",
        ),
        (
            diagonal_automaton_strings,
            dict(automaton=random_diagonal_automaton(2), length=0),
            "length",
        ),
        (
            diagonal_automaton_strings,
            dict(automaton=random_diagonal_automaton(2), length=30),
            "length",
        ),
        (
            diagonal_automaton_strings,
            dict(
                automaton=dict(
                    initial=np.ones(3),
                    transition=np.ones((5, 4)),
                    final=np.ones(3),
                )
            ),
            "automaton",
        ),
        (
            unary_automaton_strings,
            dict(automaton=random_diagonal_automaton(3, alphabet_size=5)),
            "automaton",
        ),
    ],
)
def test_bad_arguments(fn, kwargs, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        fn(**kwargs)
