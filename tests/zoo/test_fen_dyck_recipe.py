"""The fen_dyck_64 recipe's model options (the RESULTS.md experiments)."""

from pathlib import Path

import keras
import numpy as np

from keras_msets.testing import load_script

ZOO = Path(__file__).resolve().parents[2] / "zoo"
RECIPE = ZOO / "fen_dyck_64" / "recipe.py"


def test_build_model_options():
    recipe = load_script(RECIPE)
    preset = recipe.build_model(16)
    assert preset.segment_learning_rates is None
    assert preset.encoding_activation is keras.activations.tanh
    assert preset.token_count_loss_weight == recipe.TOKEN_COUNT_LOSS_WEIGHT > 0
    linear = recipe.build_model(
        16, encoding_activation=None, rate_power=1.0, token_count_loss_weight=0
    )
    assert linear.count_readout is None
    assert linear.encoding_activation is keras.activations.linear
    rates = np.asarray(linear.segment_learning_rates)
    lengths = np.array([j - i + 1 for i, j in linear.segments.segments])
    np.testing.assert_allclose(rates[:, 0], rates[:, 1])
    np.testing.assert_allclose(rates[:, 0], lengths / lengths.mean())
    x = np.random.default_rng(0).integers(1, 3, size=(3, 16)).astype("int32")
    assert linear(x).shape == (3, 1)
    # Unbounded encodings: the tanh model's stay in [-1, 1].
    encodings = keras.ops.convert_to_numpy(preset.encodings(x))
    assert np.abs(encodings).max() <= 1.0


def test_train_passes_the_options_to_every_stage(tmp_path, monkeypatch):
    recipe = load_script(RECIPE)
    built = []

    def fit_stages(build_model, stages, make_data, **kwargs):
        built.extend(build_model(stage[0]) for stage in stages)
        seen.extend(stages)
        raise RuntimeError("stop after building")

    seen = []

    monkeypatch.setattr(recipe.fen_recipe, "fit_stages", fit_stages)
    try:
        recipe.train(
            tmp_path,
            stages=((4, 1), (8, 1)),
            encoding_activation=None,
            rate_power=1.0,
            token_count_loss_weight=0.5,
            last_learning_rate=1e-4,
        )
    except RuntimeError as error:
        assert "stop after building" in str(error)
    assert [m.sequence_length for m in built] == [4, 8]
    assert seen == [(4, 1), (8, 1, 1e-4)]
    for model in built:
        assert model.encoding_activation is keras.activations.linear
        assert model.segment_learning_rates is not None
        assert model.token_count_loss_weight == 0.5


def test_count_exactness_scores_the_readout():
    recipe = load_script(RECIPE)
    model = recipe.build_model(64)
    x = np.random.default_rng(1).integers(1, 3, size=(4, 64)).astype("int32")
    model(x)
    # An untrained readout is not exact at length 64; a readout set to
    # the truth is.
    assert recipe.count_exactness(model, x)["count_exact_64"] == 0.0
    model.predicted_token_counts = model.segment_token_counts
    exact = recipe.count_exactness(model, x)
    assert exact == {f"count_exact_{n}": 1.0 for n in (8, 16, 32, 64)}
