"""Token-id checks for the models that read token ids.

A layer can check the values of its ids only where they are known: in an
eager call (`model(x)`, and every step on torch). On TensorFlow and JAX,
`predict`, `evaluate` and `fit` run a compiled step, where the ids are
traced tensors without values, so an id outside the vocabulary would be
read as another token (a negative index wraps around) or clipped, without
an error. `TokenIdInputs` checks the array inputs of those methods before
Keras compiles anything.
"""

import keras
import numpy as np

from keras_msets.models._trainer_guards import TrainerGuards
from keras_msets.ops.checks import check_token_ids


def _arrays(name, x):
    """`(name, array)` pairs of the inputs of `x` whose values are known.

    Numpy arrays, backend tensors and lists of numbers are returned; a
    dict or a list of arrays gives one pair per entry. Datasets,
    generators and `keras.utils.PyDataset`s give nothing: their values
    only exist once Keras iterates over them.
    """
    if x is None:
        return []
    if isinstance(x, dict):
        return [
            pair
            for key, v in x.items()
            for pair in _arrays(f"{name}[{key!r}]", v)
        ]
    if isinstance(x, np.ndarray) or keras.ops.is_tensor(x):
        return [(name, x)]
    if isinstance(x, (list, tuple)) and x:
        if all(isinstance(v, np.ndarray) or keras.ops.is_tensor(v) for v in x):
            return [(name, v) for v in x]
        try:
            array = np.asarray(x)
        except (ValueError, TypeError):  # ragged: Keras reports it
            return []
        if array.dtype.kind in "biuf":
            return [(name, array)]
    return []


class TokenIdInputs(TrainerGuards):
    """Mixin of the `keras.Model`s whose inputs are token ids.

    The model has a `vocabulary_size`; its ids must lie in
    `[0, vocabulary_size)` and have an integer dtype. The mixin checks them
    (`keras_msets.ops.checks.check_token_ids`, a `TypeError` for float ids
    and a `ValueError` naming the argument and the range received
    otherwise):

    - in `predict`, `predict_on_batch`, `evaluate`, `test_on_batch`,
      `train_on_batch` and `fit` (`x` and the inputs of
      `validation_data`), before Keras compiles a step, when the inputs
      are numpy arrays, tensors or lists. With a `tf.data.Dataset`, a
      generator or a `keras.utils.PyDataset`, the values are checked only
      where the step runs eagerly (torch, or `run_eagerly=True`);
    - in `call` of a functional model (`model(x)`), where the values are
      known (eager calls); a subclassed model checks in its own `call`.

    On JAX, a `fit`, `evaluate` or `predict` that raises keeps the
    model's weights, and `predict` of no rows returns no rows
    (`TrainerGuards`).

    List it before `keras.Model`: `class M(TokenIdInputs, keras.Model)`.
    """

    def _check_token_ids(self, ids, name="inputs"):
        return check_token_ids(name, ids, self.vocabulary_size)

    def _check_token_id_inputs(self, x, name="x"):
        for entry, array in _arrays(name, x):
            self._check_token_ids(array, name=entry)

    def call(self, inputs, training=None, mask=None, **kwargs):
        self._check_token_id_inputs(inputs, name="inputs")
        return super().call(inputs, training=training, mask=mask, **kwargs)

    def predict(self, x, *args, **kwargs):
        self._check_token_id_inputs(x)
        return super().predict(x, *args, **kwargs)

    def predict_on_batch(self, x):
        self._check_token_id_inputs(x)
        return super().predict_on_batch(x)

    def evaluate(self, x=None, *args, **kwargs):
        self._check_token_id_inputs(x)
        return super().evaluate(x, *args, **kwargs)

    def test_on_batch(self, x, *args, **kwargs):
        self._check_token_id_inputs(x)
        return super().test_on_batch(x, *args, **kwargs)

    def train_on_batch(self, x, *args, **kwargs):
        self._check_token_id_inputs(x)
        return super().train_on_batch(x, *args, **kwargs)

    def fit(self, x=None, *args, **kwargs):
        self._check_token_id_inputs(x)
        # `validation_data` is the 8th argument of `keras.Model.fit`.
        validation_data = kwargs.get(
            "validation_data", args[6] if len(args) > 6 else None
        )
        if isinstance(validation_data, (list, tuple)) and validation_data:
            self._check_token_id_inputs(
                validation_data[0], name="validation_data"
            )
        return super().fit(x, *args, **kwargs)
