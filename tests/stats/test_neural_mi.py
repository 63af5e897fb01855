"""`keras_msets.stats.neural_mi`: MINE and InfoNCE on every backend."""

import numpy as np
import pytest

from keras_msets.stats import neural_mi

BUDGET = {
    "steps": 40,
    "batch_size": 64,
    "hidden_units": 16,
    "learning_rate": 1e-2,
}


def _correlated(n, rho, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 1))
    return x, rho * x + np.sqrt(1 - rho**2) * rng.normal(size=(n, 1))


@pytest.mark.parametrize("bound", neural_mi.BOUNDS)
def test_keras_bound_matches_numpy(bound):
    import keras

    scores = np.random.default_rng(0).normal(size=(6, 6)).astype("float32")
    got = keras.ops.convert_to_numpy(
        neural_mi._bound(keras, keras.ops.convert_to_tensor(scores), bound)
    )
    want = neural_mi._numpy_bound(scores.astype(np.float64), bound)
    assert float(got) == pytest.approx(want, rel=1e-4, abs=1e-5)


def test_bounds_by_hand():
    scores = np.array([[2.0, 0.0, 0.0], [1.0, 3.0, 0.0], [0.0, 0.0, 1.0]])
    rows = np.log(np.exp(scores).sum(axis=1))
    infonce = np.mean(np.diag(scores) - rows) + np.log(3)
    off = scores[~np.eye(3, dtype=bool)]
    mine = np.mean(np.diag(scores)) - np.log(np.mean(np.exp(off)))
    assert neural_mi._numpy_bound(scores, "infonce") == pytest.approx(infonce)
    assert neural_mi._numpy_bound(scores, "mine") == pytest.approx(mine)


@pytest.mark.parametrize("bound", neural_mi.BOUNDS)
def test_dependence_gives_a_larger_bound_than_independence(bound):
    # True values: 1.20 nats (rho = 0.95) and 0.
    x, y = _correlated(128, 0.95)
    dependent = neural_mi.neural_mutual_information(x, y, bound=bound, **BUDGET)
    x, y = _correlated(128, 0.0, seed=1)
    independent = neural_mi.neural_mutual_information(
        x, y, bound=bound, **BUDGET
    )
    assert 0.0 <= independent < 0.3 < dependent
    # InfoNCE cannot exceed the log of the number of pairs it reads.
    assert dependent <= np.log(128) + 1e-6 or bound == "mine"


def test_seeded_runs_repeat_and_names_are_checked():
    x, y = _correlated(40, 0.5)
    first = neural_mi.infonce_mutual_information(x, y, seed=3, **BUDGET)
    second = neural_mi.infonce_mutual_information(x, y, seed=3, **BUDGET)
    assert first == pytest.approx(second, abs=1e-5)
    with pytest.raises(ValueError, match="`bound` must be one of"):
        neural_mi.neural_mutual_information(x, y, bound="nwj")
    with pytest.raises(ValueError, match="`steps` must be a positive"):
        neural_mi.neural_mutual_information(x, y, steps=0)
    with pytest.raises(ValueError, match="paired"):
        neural_mi.mine_mutual_information(x, y[:30])
