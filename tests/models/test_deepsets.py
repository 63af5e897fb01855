import re

import keras
import numpy as np
import pytest

from keras_msets import models
from keras_msets import testing
from keras_msets import zoo


def _digits(batch=6, length=10, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(1, 10, size=(batch, length))
    lengths = rng.integers(1, length + 1, size=batch)
    x[np.arange(length)[None, :] >= lengths[:, None]] = 0
    return x.astype("int32")


@pytest.mark.parametrize(
    "cls, expected",
    [
        (models.ComplexDeepSets, 1801),
        (models.DeepSets, 4161),
        (lambda **kw: models.RecurrentBaseline("lstm", **kw), 31351),
        (lambda **kw: models.RecurrentBaseline("gru", **kw), 44621),
    ],
)
def test_paper_parameter_counts(cls, expected):
    # The paper's counts use the reference code's 11-row embedding tables.
    assert cls(vocabulary_size=11).count_params() == expected


def test_recurrent_baseline_rejects_unknown_type():
    with pytest.raises(ValueError, match="rnn_type.*'rnn'"):
        models.RecurrentBaseline("rnn")


@pytest.mark.parametrize(
    "build, message",
    [
        (
            lambda: models.DeepSets(vocabulary_size=0),
            "`vocabulary_size` must be a positive integer. "
            "Received: vocabulary_size=0",
        ),
        (
            lambda: models.DeepSets(hidden_units=2.5),
            "`hidden_units` must be a positive integer. "
            "Received: hidden_units=2.5",
        ),
        (
            lambda: models.ComplexDeepSets(num_states=-1),
            "`num_states` must be a positive integer. Received: num_states=-1",
        ),
        (
            lambda: models.ComplexDeepSets(unit_modulus="yes"),
            "`unit_modulus` must be a bool. Received: unit_modulus='yes'",
        ),
        (
            lambda: models.RecurrentBaseline("gru", units=0),
            "`units` must be a positive integer. Received: units=0",
        ),
    ],
)
def test_arguments_are_checked(build, message):
    with pytest.raises(ValueError) as info:
        build()
    assert str(info.value) == message


class DeepSetsModelsTest(testing.TestCase):
    def _check_model(self, model):
        x = _digits()
        out = model(x)
        assert tuple(out.shape) == (6, 1)
        self.assert_permutation_invariant(lambda ids: model(ids), x, atol=1e-4)
        padded = np.concatenate([x, np.zeros((6, 4), "int32")], 1)
        self.assertAllClose(model(padded), out, atol=1e-5)
        config = model.get_config()
        clone = type(model).from_config(config)
        assert clone.get_config() == config
        self.run_model_saving_test(model, x)
        self.run_weights_roundtrip_test(model, x)

    def test_complex_deepsets(self):
        self._check_model(models.ComplexDeepSets(num_states=8))

    def test_deepsets(self):
        self._check_model(models.DeepSets(embedding_dim=12, hidden_units=5))

    def test_recurrent_baselines(self):
        for rnn_type in ("lstm", "gru"):
            model = models.RecurrentBaseline(rnn_type, units=6)
            x = _digits()
            padded = np.concatenate([x, np.zeros((6, 3), "int32")], 1)
            # Trailing padding is masked: the last real state is read out.
            self.assertAllClose(model(padded), model(x), atol=1e-5)
            clone = models.RecurrentBaseline.from_config(model.get_config())
            assert clone.get_config() == model.get_config()
            self.run_model_saving_test(model, x)
            self.run_weights_roundtrip_test(model, x)

    def test_one_fit_step_changes_every_weight(self):
        x = _digits()
        y = x.sum(1, keepdims=True).astype("float32") % 10
        for model in (models.ComplexDeepSets(num_states=4), models.DeepSets()):
            before = [keras.ops.convert_to_numpy(w) for w in model.weights]
            model.compile(optimizer="adam", loss="mse")
            history = model.fit(x, y, epochs=1, verbose=0)
            assert np.isfinite(history.history["loss"][0])
            for old, new in zip(before, model.weights, strict=True):
                assert not np.allclose(old, keras.ops.convert_to_numpy(new))

    def test_golden(self):
        self.assert_golden("complex_deepsets")
        self.assert_golden("deepsets")


def _id_error(name, low, high, vocabulary_size=10):
    return re.escape(
        f"`{name}` must hold token ids in [0, {vocabulary_size - 1}] "
        f"(vocabulary_size={vocabulary_size}). Received: {name} with ids "
        f"from {low} to {high}"
    )


ID_MODELS = {
    "complex_deepsets": lambda: models.ComplexDeepSets(num_states=4),
    "deepsets": lambda: models.DeepSets(embedding_dim=4, hidden_units=3),
    "gru": lambda: models.RecurrentBaseline("gru", embedding_dim=4, units=3),
}


@pytest.mark.parametrize("name", sorted(ID_MODELS))
def test_token_ids_are_checked_before_every_step(name):
    # On TensorFlow and JAX `predict`, `evaluate` and `fit` run compiled
    # steps that cannot check values: a negative id would wrap around to
    # another token and a too large one be clipped or fail in the backend.
    model = ID_MODELS[name]()
    model.compile(optimizer="sgd", loss="mse")
    y = np.zeros((1, 1), "float32")
    good = np.array([[3, 4, 1, 0]], "int32")
    before = [keras.ops.convert_to_numpy(w) for w in model.weights]
    for bad, low, high in (([[3, 4, -1, 0]], -1, 4), ([[3, 10, 0, 0]], 0, 10)):
        bad = np.array(bad, "int32")
        with pytest.raises(ValueError, match=_id_error("inputs", low, high)):
            model(bad)
        steps = [
            lambda bad=bad: model.predict(bad, verbose=0),
            lambda bad=bad: model.predict(bad.tolist(), verbose=0),
            lambda bad=bad: model.predict(
                keras.ops.convert_to_tensor(bad), verbose=0
            ),
            lambda bad=bad: model.predict_on_batch(bad),
            lambda bad=bad: model.evaluate(bad, y, verbose=0),
            lambda bad=bad: model.test_on_batch(bad, y),
            lambda bad=bad: model.train_on_batch(bad, y),
            lambda bad=bad: model.fit(bad, y, verbose=0),
        ]
        for step in steps:
            with pytest.raises(ValueError, match=_id_error("x", low, high)):
                step()
        with pytest.raises(
            ValueError, match=_id_error("x['tokens']", low, high)
        ):
            model.predict({"tokens": bad}, verbose=0)
        with pytest.raises(
            ValueError, match=_id_error("validation_data", low, high)
        ):
            model.fit(good, y, validation_data=(bad, y), verbose=0)
    # Nothing ran: no step trained on the refused ids.
    for old, new in zip(before, model.weights, strict=True):
        np.testing.assert_array_equal(old, keras.ops.convert_to_numpy(new))
    # Float ids would be truncated (3.9 read as 3).
    floats = good.astype("float32") + 0.9
    with pytest.raises(TypeError, match="`inputs` must hold integer"):
        model(floats)
    with pytest.raises(TypeError, match="`x` must hold integer"):
        model.predict(floats, verbose=0)
    # Strings: the dtype received (Keras's error was "Invalid dtype").
    with pytest.raises(TypeError, match="integer token ids.*dtype=<U1"):
        model.predict(good.astype(str), verbose=0)
    # Valid ids still go through every path.
    expected = keras.ops.convert_to_numpy(model(good))
    np.testing.assert_allclose(model.predict(good, verbose=0), expected)
    np.testing.assert_allclose(model.predict_on_batch(good), expected)


def test_units_digit_preset_refuses_ids_outside_its_vocabulary():
    model = zoo.load("complex_deepsets_units_digit")
    with pytest.raises(ValueError, match=_id_error("x", -1, 4)):
        model.predict(np.array([[3, 4, -1, 0]]), verbose=0)
    with pytest.raises(ValueError, match=_id_error("x", 0, 12)):
        model.predict(np.array([[3, 4, 12, 0]]), verbose=0)
