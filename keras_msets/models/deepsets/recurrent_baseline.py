import keras

from keras_msets.models.deepsets._token_model import TokenReadoutModel
from keras_msets.models.deepsets._token_model import checked_arguments
from keras_msets.models.deepsets._token_model import token_embedding
from keras_msets.utils.validation import check_choice

RNN_TYPES = ("lstm", "gru")
DEFAULT_UNITS = {"lstm": 50, "gru": 80}


@keras.saving.register_keras_serializable(package="keras_msets")
class RecurrentBaseline(TokenReadoutModel):
    """An LSTM or GRU read of a token sequence: the order-aware baselines.

    The LSTM and GRU models that DeBenedetto & Chiang (Sec. 5.1, Fig. 1) take
    from the DeepSets code: `Embedding(100)` with token 0 as padding (masked,
    so padding is skipped), one recurrent layer (LSTM 50 or GRU 80 units) and
    `Dense(1)` on its last state. Unlike DeepSets they see the order of the
    input, and the paper shows they do not generalise to sequences longer
    than those seen in training.

    Parameter counts: with `vocabulary_size=11` (the reference code's
    embedding table) the LSTM has the paper's 31,351 parameters and the GRU,
    with `reset_after=False` (the Keras 2 GRU of the reference code), its
    44,621. Keras 3's default `reset_after=True` adds a second bias (240 more
    parameters); we keep `reset_after=False` as the default to match the
    paper.

    Args:
        rnn_type: `"lstm"` or `"gru"`.
        vocabulary_size: number of token ids including padding id 0.
        embedding_dim: width of the token embedding.
        units: recurrent units (default 50 for LSTM, 80 for GRU).
        reset_after: GRU only, see above.
        output_units: width of the final dense readout.
        **kwargs: `keras.Model` keyword arguments (`name`, ...).

    {{token_ids_call_arguments}}

    Example:
    >>> model = keras_msets.models.RecurrentBaseline("gru")
    >>> model(np.array([[1, 2, 3, 0]])).shape
    (1, 1)

    References:
        - DeBenedetto & Chiang, "Representing Unordered Data Using
          Complex-Weighted Multiset Automata", ICML 2020.
        - Zaheer et al., "Deep Sets", NeurIPS 2017.
    """

    def __init__(
        self,
        rnn_type="lstm",
        vocabulary_size=10,
        embedding_dim=100,
        units=None,
        reset_after=False,
        output_units=1,
        **kwargs,
    ):
        check_choice("rnn_type", rnn_type, RNN_TYPES)
        arguments = checked_arguments(
            rnn_type=rnn_type,
            vocabulary_size=vocabulary_size,
            embedding_dim=embedding_dim,
            units=DEFAULT_UNITS[rnn_type] if units is None else units,
            reset_after=reset_after,
            output_units=output_units,
        )

        def body(ids):
            x = token_embedding(arguments)(ids)
            units = arguments["units"]
            if rnn_type == "lstm":
                rnn = keras.layers.LSTM(units, name="rnn")
            else:
                reset_after = arguments["reset_after"]
                rnn = keras.layers.GRU(
                    units, reset_after=reset_after, name="rnn"
                )
            return rnn(x)

        super().__init__(body, arguments, **kwargs)
