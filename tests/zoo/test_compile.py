"""`zoo.load(name, compile=True)` compiles every shipped preset with the
loss its recipe trained it with, ready for `model.fit`."""

import keras
import numpy as np
import pytest

from keras_msets import zoo
from keras_msets.zoo import registry


@pytest.mark.parametrize("name", zoo.list())
def test_every_preset_has_the_loss_of_its_recipe(name):
    metadata = zoo.info(name)
    record = registry._compile_record(name, metadata)
    task = registry.load_recipe(name).RECIPE.task
    # A loss object is recorded serialized.
    loss = task.loss
    if not isinstance(loss, str):
        loss = keras.saving.serialize_keras_object(loss)
    assert record["loss"] == loss, name
    recorded = metadata.get("compile")
    if recorded is not None:  # the metadata's record comes first
        assert record == recorded


def test_a_preset_without_a_recorded_loss_compiles_and_fits():
    name = "deepsets_digit_sum"
    assert "compile" not in zoo.info(name)
    model = zoo.load(name, compile=True)
    assert model.compiled and model.loss == "mse"
    x = np.array([[1, 2, 3, 0], [4, 5, 0, 0]], "int32")
    y = np.array([[6.0], [9.0]], "float32")
    history = model.fit(x, y, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
