"""Neural variational estimators of mutual information: MINE and InfoNCE.

Both train a critic `T(x, y)` (a small MLP on the concatenated pair) on
the samples of one problem and read a lower bound of `I(X; Y)` off it
(Poole et al. 2019):

- MINE (Belghazi et al. 2018) maximizes the Donsker-Varadhan bound
  `E_P[T] - log E_{P_X P_Y}[e^T]`. Here the product of the marginals is
  represented by all mismatched pairs `(x_i, y_j)`, `i != j`, of a batch,
  and the gradient is the plain one of the batch bound (without the
  paper's moving-average correction).
- InfoNCE (van den Oord et al. 2018) maximizes `E[T(x_i, y_i) - log
  mean_j e^{T(x_i, y_j)}]`, a bound that cannot exceed the log of the
  number of pairs it is evaluated on.

Both are written with Keras (`keras.ops`, `Model.fit` with its own
`compute_loss`), so they run on every backend. Each coordinate of `x` and
`y` is standardized first. After training, the bound is evaluated on all
pairs of (at most `max_eval_points` of) the samples the critic was
trained on, so on small samples it can overfit upwards; the budget
(`steps`, `batch_size`, `hidden_units`) is the caller's.

References:
    - Belghazi et al. Mutual information neural estimation. ICML 2018.
    - van den Oord, Li & Vinyals. Representation learning with
      contrastive predictive coding. arXiv:1807.03748, 2018.
    - Poole, Ozair, van den Oord, Alemi & Tucker. On variational bounds
      of mutual information. ICML 2019.
"""

import math

import numpy as np

from keras_msets.stats.classical import as_samples
from keras_msets.utils.validation import check_choice
from keras_msets.utils.validation import check_non_negative_int
from keras_msets.utils.validation import check_positive_float
from keras_msets.utils.validation import check_positive_int

BOUNDS = ("mine", "infonce")
_NEGATIVE = -1e9


def _keras():
    import keras

    return keras


def _pair_scores(keras, critic, x, y):
    """`T(x_i, y_j)` for every `i`, `j`: `[len(x), len(y)]`."""
    ops = keras.ops
    rows, cols = ops.shape(x)[0], ops.shape(y)[0]
    xx = ops.repeat(ops.expand_dims(x, 1), cols, axis=1)
    yy = ops.repeat(ops.expand_dims(y, 0), rows, axis=0)
    pairs = ops.concatenate([xx, yy], axis=-1)
    return ops.squeeze(critic(pairs), axis=-1)


def _bound(keras, scores, bound):
    """The batch bound (a scalar tensor) of a square matrix of scores."""
    ops = keras.ops
    size = ops.shape(scores)[0]
    diagonal = ops.diagonal(scores)
    if bound == "infonce":
        return ops.mean(diagonal - ops.logsumexp(scores, axis=1)) + ops.log(
            ops.cast(size, scores.dtype)
        )
    eye = ops.eye(size, dtype=scores.dtype)
    off = scores * (1.0 - eye) + _NEGATIVE * eye
    count = ops.cast(size * (size - 1), scores.dtype)
    return ops.mean(diagonal) - (ops.logsumexp(off) - ops.log(count))


def _numpy_bound(scores, bound):
    """`_bound` of a numpy matrix of scores, in float64."""
    from scipy.special import logsumexp

    size = len(scores)
    diagonal = np.diagonal(scores)
    if bound == "infonce":
        rows = logsumexp(scores, axis=1)
        return float(np.mean(diagonal - rows) + np.log(size))
    off = scores[~np.eye(size, dtype=bool)]
    return float(np.mean(diagonal) - (logsumexp(off) - np.log(off.size)))


def _build_critic(keras, dim, hidden_units, seed):
    initializer = keras.initializers.GlorotUniform(seed=seed)
    inputs = keras.Input((None, dim))
    hidden = inputs
    for i in range(2):
        hidden = keras.layers.Dense(
            hidden_units,
            activation="relu",
            kernel_initializer=initializer,
            name=f"hidden_{i}",
        )(hidden)
    outputs = keras.layers.Dense(1, kernel_initializer=initializer)(hidden)
    return keras.Model(inputs, outputs, name="critic")


def _standardized(a):
    scale = a.std(axis=0)
    return ((a - a.mean(axis=0)) / np.where(scale > 0, scale, 1.0)).astype(
        np.float32
    )


def neural_mutual_information(
    x,
    y,
    bound="infonce",
    steps=300,
    batch_size=64,
    hidden_units=64,
    learning_rate=1e-3,
    max_eval_points=1000,
    seed=0,
):
    """Trains a critic on paired samples and returns its MI lower bound.

    Args:
        x: `[n, d_x]`, `n >= 4`.
        y: `[n, d_y]`, row `j` paired with row `j` of `x`.
        bound: `"mine"` (Donsker-Varadhan) or `"infonce"`.
        steps: optimizer steps (Adam), each on `batch_size` pairs drawn
            without replacement (epoch after epoch).
        batch_size: pairs per step (at most `n`); each step scores all
            `batch_size^2` combinations.
        hidden_units: width of the critic's two hidden layers.
        learning_rate: Adam's learning rate.
        max_eval_points: the bound is evaluated on all pairs of at most
            this many rows (a random subset of larger samples).
        seed: seed of the initial weights, the batches and the subset.

    Returns:
        The estimate in nats, a Python float (the bound, clipped at 0).
    """
    bound = check_choice("bound", bound, BOUNDS)
    steps = check_positive_int("steps", steps)
    batch_size = check_positive_int("batch_size", batch_size)
    hidden_units = check_positive_int("hidden_units", hidden_units)
    learning_rate = check_positive_float("learning_rate", learning_rate)
    max_eval_points = check_positive_int("max_eval_points", max_eval_points)
    seed = check_non_negative_int("seed", seed)
    x = as_samples("x", x, min_rows=4)
    y = as_samples("y", y, min_rows=4)
    if x.shape[0] != y.shape[0]:
        raise ValueError(
            "`x` and `y` must have the same number of rows (paired "
            f"samples). Received: x.shape={x.shape}, y.shape={y.shape}"
        )
    keras = _keras()
    x, y = _standardized(x), _standardized(y)
    n, dim_x = x.shape
    batch_size = min(batch_size, n)
    rng = np.random.default_rng(seed)
    epochs = math.ceil(steps * batch_size / n)
    order = np.concatenate([rng.permutation(n) for _ in range(epochs)])
    order = order[: steps * batch_size]
    critic = _build_critic(keras, dim_x + y.shape[1], hidden_units, seed)

    class _Trainer(keras.Model):
        def __init__(self, critic, **kwargs):
            super().__init__(**kwargs)
            self.critic = critic

        def call(self, inputs):
            return _pair_scores(keras, self.critic, inputs[0], inputs[1])

        def compute_loss(
            self,
            x=None,
            y=None,
            y_pred=None,
            sample_weight=None,
            training=True,
        ):
            return -_bound(keras, y_pred, bound)

    trainer = _Trainer(critic, name=f"{bound}_trainer")
    trainer.compile(optimizer=keras.optimizers.Adam(learning_rate))
    trainer.fit(
        [x[order], y[order]],
        batch_size=batch_size,
        epochs=1,
        shuffle=False,
        verbose=0,
    )
    if n > max_eval_points:
        rows = rng.choice(n, max_eval_points, replace=False)
        x, y = x[rows], y[rows]
    scores = []
    for start in range(0, len(x), 256):
        block = _pair_scores(keras, critic, x[start : start + 256], y)
        scores.append(keras.ops.convert_to_numpy(block))
    scores = np.concatenate(scores, axis=0).astype(np.float64)
    return max(0.0, _numpy_bound(scores, bound))


def mine_mutual_information(x, y, **kwargs):
    """`neural_mutual_information(x, y, bound="mine", **kwargs)`."""
    return neural_mutual_information(x, y, bound="mine", **kwargs)


def infonce_mutual_information(x, y, **kwargs):
    """`neural_mutual_information(x, y, bound="infonce", **kwargs)`."""
    return neural_mutual_information(x, y, bound="infonce", **kwargs)
