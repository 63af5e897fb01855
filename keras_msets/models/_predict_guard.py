"""Weights that survive a failed `predict` on JAX.

On the JAX backend, Keras's `Model.predict` detaches the model's variable
values while it runs (it passes them to its jitted function as state and
reattaches them at the end, to save memory). If the step raises, for
example because a layer refuses a misshapen input while it is traced, the
values are never reattached: every later call of the model fails with
`TypeError: 'NoneType' object is not callable`, and the trained weights
are gone from the model in memory. `KeepWeightsOnFailedPredict` keeps a
reference to each value before `predict` (JAX arrays are immutable: no
copy is made) and assigns them back if `predict` raises, so the error the
user sees is the one about their input and the model stays usable. The
other backends, and `predict_on_batch` (which does not detach the values),
are unchanged. A model that is not built when `predict` is called has no
weights to keep yet and is not guarded.
"""

import keras


class KeepWeightsOnFailedPredict:
    """Mixin: on JAX, a `predict` that raises leaves the weights in place.

    List it before `keras.Model`: `class M(KeepWeightsOnFailedPredict,
    keras.Model)`.
    """

    def predict(self, x, *args, **kwargs):
        if keras.backend.backend() != "jax" or not self.built:
            return super().predict(x, *args, **kwargs)
        variables = [*self.trainable_variables, *self.non_trainable_variables]
        values = [v.value for v in variables]
        try:
            return super().predict(x, *args, **kwargs)
        except BaseException:
            for variable, value in zip(variables, values, strict=True):
                variable.assign(value)
            raise
