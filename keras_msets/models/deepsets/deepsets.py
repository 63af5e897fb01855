import keras

from keras_msets.layers.masked_set_pooling import MaskedSetPooling
from keras_msets.models.deepsets._token_model import TokenReadoutModel
from keras_msets.models.deepsets._token_model import checked_arguments
from keras_msets.models.deepsets._token_model import token_embedding


@keras.saving.register_keras_serializable(package="keras_msets")
class DeepSets(TokenReadoutModel):
    """DeepSets for sets of tokens: embed, transform, sum, read out.

    The digit-sum model of Zaheer et al. (2017) used as the baseline of
    DeBenedetto & Chiang (Sec. 5.1, Fig. 1): `Embedding(100)` with token 0 as
    padding, `Dense(30, tanh)` per element, a masked sum over the set and
    `Dense(1)`. The sum is a real-weighted multiset automaton in log space,
    so it can count but cannot represent the cyclic units digit.

    Parameter count: with `vocabulary_size=11` (the reference code's
    embedding table, one row more than the ten ids 0-9 it uses) this model
    has the paper's 4,161 parameters; the default `vocabulary_size=10`
    (padding 0 plus digits 1-9) has 4,061.

    Args:
        vocabulary_size: number of token ids including padding id 0.
        embedding_dim: width of the token embedding.
        hidden_units: width of the per-element dense layer.
        activation: activation of the per-element dense layer.
        output_units: width of the final dense readout.
        **kwargs: `keras.Model` keyword arguments (`name`, ...).

    {{token_ids_call_arguments}}

    Example:
    >>> model = keras_msets.models.DeepSets()
    >>> model(np.array([[1, 2, 3, 0]])).shape
    (1, 1)

    References:
        - Zaheer et al., "Deep Sets", NeurIPS 2017.
    """

    def __init__(
        self,
        vocabulary_size=10,
        embedding_dim=100,
        hidden_units=30,
        activation="tanh",
        output_units=1,
        **kwargs,
    ):
        arguments = checked_arguments(
            vocabulary_size=vocabulary_size,
            embedding_dim=embedding_dim,
            hidden_units=hidden_units,
            activation=activation,
            output_units=output_units,
        )

        def body(ids):
            x = token_embedding(arguments)(ids)
            x = keras.layers.Dense(
                arguments["hidden_units"],
                activation=activation,
                name="element_dense",
            )(x)
            return MaskedSetPooling("sum", name="pooling")(x)

        super().__init__(body, arguments, **kwargs)
