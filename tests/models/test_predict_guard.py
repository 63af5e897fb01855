"""A refused `predict` leaves the model usable (Keras's JAX `predict`
detaches the weights while it runs and, when the step raises, never
puts them back; keras_msets.models._predict_guard)."""

import numpy as np
import pytest

from keras_msets.models import FusionEncoderNetwork


def test_a_refused_predict_keeps_the_weights():
    model = FusionEncoderNetwork(
        sequence_length=8,
        vocabulary_size=3,
        sharing="all",
        encoding_dim=4,
        token_encoder_units=3,
        fusion_encoder_units=3,
        decoder_units=3,
        output_activation="sigmoid",
    )
    ids = np.array([[1, 2, 1, 2, 0, 0, 1, 2]], "int32")
    expected = model.predict_on_batch(ids)
    weights = model.get_weights()
    # Raised while the step is traced, after Keras detached the weights
    # on JAX; before the guard, every later call raised "'NoneType'
    # object is not callable".
    with pytest.raises(ValueError, match=r"shape \(batch, 8\)"):
        model.predict(np.ones((1, 16), "int32"), verbose=0)
    np.testing.assert_array_equal(model.predict(ids, verbose=0), expected)
    for before, after in zip(weights, model.get_weights(), strict=True):
        np.testing.assert_array_equal(before, after)
