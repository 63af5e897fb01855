import keras

from keras_msets.layers.masked_set_pooling import MaskedSetPooling
from keras_msets.models._id_inputs import TokenIdInputs
from keras_msets.utils.validation import check_positive_int


@keras.saving.register_keras_serializable(package="keras_msets")
class DeepSets(TokenIdInputs, keras.Model):
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

    Call arguments:
        inputs: int tensor `[batch, length]`, 0 = padding. Ids must lie in
            `[0, vocabulary_size)` with an int dtype: `model(x)`,
            `predict`, `evaluate` and `fit` raise an error otherwise (for
            arrays and tensors; a dataset's ids are checked only where the
            step runs eagerly, see `keras_msets.models._id_inputs`).

    Input shape:
        `[batch, length]`, any length.

    Output shape:
        `[batch, output_units]`.

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
        vocabulary_size = check_positive_int("vocabulary_size", vocabulary_size)
        embedding_dim = check_positive_int("embedding_dim", embedding_dim)
        hidden_units = check_positive_int("hidden_units", hidden_units)
        output_units = check_positive_int("output_units", output_units)
        inputs = keras.Input(shape=(None,), dtype="int32", name="tokens")
        x = keras.layers.Embedding(
            vocabulary_size, embedding_dim, mask_zero=True, name="embedding"
        )(inputs)
        x = keras.layers.Dense(
            hidden_units, activation=activation, name="element_dense"
        )(x)
        x = MaskedSetPooling("sum", name="pooling")(x)
        outputs = keras.layers.Dense(output_units, name="readout")(x)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.vocabulary_size = vocabulary_size
        self.embedding_dim = embedding_dim
        self.hidden_units = hidden_units
        self.activation = activation
        self.output_units = output_units

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "vocabulary_size": self.vocabulary_size,
            "embedding_dim": self.embedding_dim,
            "hidden_units": self.hidden_units,
            "activation": self.activation,
            "output_units": self.output_units,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)
