"""What the models of DeBenedetto & Chiang's Sec. 5.1 share (private)."""

import keras

from keras_msets.models._id_inputs import TokenIdInputs
from keras_msets.utils.validation import check_bool
from keras_msets.utils.validation import check_positive_int

# What each constructor argument of the family must be.
_CHECKS = {
    "vocabulary_size": check_positive_int,
    "embedding_dim": check_positive_int,
    "hidden_units": check_positive_int,
    "num_states": check_positive_int,
    "units": check_positive_int,
    "output_units": check_positive_int,
    "use_initial_weights": check_bool,
    "unit_modulus": check_bool,
    "reset_after": check_bool,
}


def checked_arguments(**arguments):
    """The arguments, in order, each checked by its rule in `_CHECKS`."""
    return {
        name: _CHECKS[name](name, value) if name in _CHECKS else value
        for name, value in arguments.items()
    }


def token_embedding(arguments):
    """The `Embedding` of DeepSets and the recurrent baselines.

    Token 0 is padding: masked, so the pooling and the recurrent layers
    skip it.
    """
    return keras.layers.Embedding(
        arguments["vocabulary_size"],
        arguments["embedding_dim"],
        mask_zero=True,
        name="embedding",
    )


_CALL_ARGUMENTS = """Call arguments:
        inputs: int tensor `[batch, length]`, 0 = padding. Ids must lie in
            `[0, vocabulary_size)` with an int dtype: `model(x)`,
            `predict`, `evaluate` and `fit` raise an error otherwise (for
            arrays and tensors; a dataset's ids are checked only where the
            step runs eagerly, see `keras_msets.models._id_inputs`).

    Input shape:
        `[batch, length]`, any length.

    Output shape:
        `[batch, output_units]`.
"""


class TokenReadoutModel(TokenIdInputs, keras.Model):
    """Base of `DeepSets`, `ComplexDeepSets` and `RecurrentBaseline`.

    A functional model of token ids `[batch, length]` (0 = padding): an
    input named `tokens`, the subclass's `body` (token ids to features
    `[batch, features]`), then `Dense(output_units, name="readout")`. The
    ids are checked by `TokenIdInputs`. A subclass docstring holds
    `{{token_ids_call_arguments}}` where the shared `Call arguments:`,
    `Input shape:` and `Output shape:` sections go.

    Args:
        body: callable from the symbolic ids to the features; it creates
            the model's layers (their names are frozen once a preset
            ships).
        arguments: dict of the subclass's checked constructor arguments,
            `output_units` included; each becomes an attribute and an entry
            of `get_config()`.
        **kwargs: `keras.Model` keyword arguments (`name`, ...).
    """

    def __init_subclass__(cls, **kwargs):
        # The family's call arguments and shapes, written once (the way
        # Keras shares docstring sections between layers).
        super().__init_subclass__(**kwargs)
        if cls.__doc__ is not None:  # None under `python -OO`
            cls.__doc__ = cls.__doc__.replace(
                "{{token_ids_call_arguments}}\n", _CALL_ARGUMENTS
            )

    def __init__(self, body, arguments, **kwargs):
        inputs = keras.Input(shape=(None,), dtype="int32", name="tokens")
        outputs = keras.layers.Dense(arguments["output_units"], name="readout")(
            body(inputs)
        )
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self._argument_names = tuple(arguments)
        for name, value in arguments.items():
            setattr(self, name, value)

    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable}
        for name in self._argument_names:
            config[name] = getattr(self, name)
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)
