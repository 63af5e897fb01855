"""Two gaps of Keras's `fit` / `evaluate` / `predict`, closed for the
package's models.

**Weights that survive a failed call on JAX.** On the JAX backend, Keras's
`Model.fit`, `evaluate` and `predict` detach the values of the model's
variables (and, in `fit`, the optimizer's and the metrics') while they
run: they pass them to a jitted step as state and reattach the step's
results at the end, to save memory. If the step raises, for example
because a layer refuses a misshapen input while it is traced, nothing is
reattached: every later call of the model fails with `TypeError:
'NoneType' object is not callable`, and the trained weights are gone from
the model in memory. `TrainerGuards` keeps a reference to each value
before the call and, if the call raises, puts back those values that
were left detached, so the error the user sees is the one about their
input and the model stays usable. Values Keras did reattach (a `fit`
interrupted after some steps keeps what it trained) are left as they
are. JAX arrays are immutable, so no copy is made when the call starts;
but the references keep the values of before the call alive while it
runs (in `fit`, one more copy of the weights and the optimizer state once
the first step has replaced them). The other backends and the
`*_on_batch` methods (which do not detach the values) are unchanged. A
model that is not built when the call starts has no weights to keep yet
and is not guarded.

**`predict` on an empty batch.** Keras's `predict` of inputs with no rows
runs no step and fails with `UnboundLocalError` (on every backend); here
it returns the model's outputs for no rows, as `predict_on_batch` does.
"""

import keras
import numpy as np


def _detached(variable):
    # Keras's JAX trainer detaches a value by setting it to None.
    return getattr(variable, "_value", 0) is None


def _no_rows(x):
    """Whether every input of `x` is an array or tensor with no rows."""
    leaves = keras.tree.flatten(x)
    return bool(leaves) and all(
        (isinstance(leaf, np.ndarray) or keras.ops.is_tensor(leaf))
        and len(leaf.shape) > 0
        and leaf.shape[0] == 0
        for leaf in leaves
    )


class TrainerGuards:
    """Mixin of the package's models: on JAX, a `fit`, `evaluate` or
    `predict` that raises leaves the model's weights (and optimizer and
    metric state) in place; `predict` of no rows returns no rows.

    List it before `keras.Model`: `class M(TrainerGuards, keras.Model)`.
    """

    def _guarded(self, method, *args, **kwargs):
        if keras.backend.backend() != "jax" or not self.built:
            return method(*args, **kwargs)
        variables = [*self.trainable_variables, *self.non_trainable_variables]
        optimizer = getattr(self, "optimizer", None)
        if optimizer is not None and getattr(optimizer, "built", False):
            variables += list(optimizer.variables)
        variables += list(self.metrics_variables)
        values = [v.value for v in variables]
        try:
            return method(*args, **kwargs)
        except BaseException:
            for variable, value in zip(variables, values, strict=True):
                if _detached(variable):
                    variable.assign(value)
            raise

    def fit(self, *args, **kwargs):
        return self._guarded(super().fit, *args, **kwargs)

    def evaluate(self, *args, **kwargs):
        return self._guarded(super().evaluate, *args, **kwargs)

    def predict(self, x, *args, **kwargs):
        if _no_rows(x):
            return self.predict_on_batch(x)
        return self._guarded(super().predict, x, *args, **kwargs)


@keras.saving.register_keras_serializable(package="keras_msets")
class GuardedFunctional(TrainerGuards, keras.Model):
    """A functional model (`GuardedFunctional(inputs, outputs)`, as
    `keras.Model(inputs, outputs)`) with the `TrainerGuards` of the
    package's models. Saved and loaded as any functional model; its
    config names this class."""
