"""keras_msets.models._trainer_guards: a refused `fit`, `evaluate` or
`predict` leaves the model usable (Keras's JAX trainer detaches the
variables' values while these run and, when the step raises, never puts
them back), and `predict` of no rows returns no rows."""

import keras
import numpy as np
import pytest

from keras_msets.models import FusionEncoderNetwork
from keras_msets.models import GuardedFunctional


def test_a_refused_call_keeps_the_weights_and_the_optimizer_state():
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
    model.compile(optimizer="adam", loss="binary_crossentropy")
    ids = np.array([[1, 2, 1, 2, 0, 0, 1, 2]] * 2, "int32")
    labels = np.array([[1.0], [0.0]], "float32")
    # Built, with the optimizer's state, before the refused calls: a
    # first call raises before Keras detaches anything.
    model.fit(ids, labels, epochs=1, verbose=0)
    model.evaluate(ids, labels, verbose=0)
    expected = model.predict_on_batch(ids)
    weights = model.get_weights()
    optimizer = [np.asarray(v) for v in model.optimizer.variables]
    wrong = np.ones((2, 16), "int32")
    # Raised while the step is traced, after Keras detached the values on
    # JAX; before, every later call raised "'NoneType' object is not
    # callable".
    for call in (
        lambda: model.predict(wrong, verbose=0),
        lambda: model.evaluate(wrong, labels, verbose=0),
        lambda: model.fit(wrong, labels, epochs=1, verbose=0),
    ):
        with pytest.raises(ValueError, match=r"shape \(batch, 8\)"):
            call()
        np.testing.assert_array_equal(model.predict(ids, verbose=0), expected)
    for before, after in zip(weights, model.get_weights(), strict=True):
        np.testing.assert_array_equal(before, after)
    for before, after in zip(optimizer, model.optimizer.variables, strict=True):
        np.testing.assert_array_equal(before, np.asarray(after))
    model.fit(ids, labels, epochs=1, verbose=0)  # and it still trains
    # No rows: Keras's `predict` ran no step and raised UnboundLocalError.
    empty = model.predict(ids[:0], verbose=0)
    assert empty.shape == (0, 1) and empty.dtype == expected.dtype


def test_a_guarded_functional_model_keeps_its_weights_and_its_class(tmp_path):
    inputs = keras.Input((3,))
    model = GuardedFunctional(inputs, keras.layers.Dense(2)(inputs))
    x = np.ones((2, 3), "float32")
    expected = model.predict(x, verbose=0)
    with pytest.raises(Exception, match="3"):  # the backend's shape error
        model.predict(np.ones((2, 5), "float32"), verbose=0)
    np.testing.assert_array_equal(model.predict(x, verbose=0), expected)
    assert model.predict(x[:0], verbose=0).shape == (0, 2)
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert type(loaded) is GuardedFunctional
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), expected)
