"""The position-encoding benchmark runs end to end in smoke mode."""

import json
from pathlib import Path

import keras
import keras_hub
import numpy as np
import pytest

from keras_msets.testing import load_script

SCRIPT = (
    Path(__file__).resolve().parents[2] / "benchmarks" / "position_encodings.py"
)
# ONE_BACKEND_RUNS: the script trains (through Keras's `fit`) the
# package's layers, each checked on every backend in tests/layers, and
# its own rotary block, checked on every backend by
# test_rotary_block_is_keras_hub_encoder_with_rotary_queries_and_keys;
# its runs here check what it writes, measures and keeps, so `make test`
# runs them on one backend.


def _load_script():
    return load_script(SCRIPT)


@pytest.mark.slow
@pytest.mark.backend_independent  # ONE_BACKEND_RUNS
def test_position_encodings_smoke(tmp_path):
    script = _load_script()
    results = script.main(["--smoke", "--output-dir", str(tmp_path)])
    assert (tmp_path / "position_encodings.png").stat().st_size > 0
    saved = json.loads((tmp_path / "position_encodings.json").read_text())
    settings = saved["settings"]
    assert settings["smoke"] is True
    assert settings["backend"] == results["settings"]["backend"]
    lengths = settings["in_lengths"] + settings["long_lengths"]
    assert set(saved["summary"]) == set(script.ROWS)
    assert set(script.MODES) < set(script.ROWS)
    for mode, summary in saved["summary"].items():
        assert np.isfinite(summary["final_train_loss"]), mode
        for length in lengths:
            for value in summary["accuracy_by_length"][str(length)].values():
                assert 0.0 <= value <= 1.0, (mode, length)
    trainable = {
        mode: summary["encoding_trainable_parameters"]
        for mode, summary in saved["summary"].items()
    }
    d, max_length = settings["hidden_dim"], max(lengths)
    assert trainable == {
        "diagonal_polar_fixed": 0,
        "diagonal_polar_learned": 2 * (d // 2),  # phi and theta
        "diagonal_polar_learned_modulus": 4 * (d // 2),  # and s, log r
        "full_matrix_random": 0,
        "full_matrix_learned": d + d * d,
        "per_position_random": 0,
        "per_position_learned": max_length * d,
        "rotary": 0,
    }


def test_targets_are_the_tokens_shifted_by_k():
    script = _load_script()
    config = dict(script.FULL, shift=2)
    rng = np.random.default_rng(0)
    tokens, targets = script.make_sequences(rng, 3, [5, 2, 6], 6, config)
    for row, length in zip(range(3), [5, 2, 6], strict=True):
        assert np.all(tokens[row, :length] > 0)
        assert np.all(tokens[row, length:] == 0)
        assert np.all(targets[row, :2] == 0)
        np.testing.assert_array_equal(
            targets[row, 2:length], tokens[row, : length - 2]
        )
        assert np.all(targets[row, length:] == 0)


@pytest.mark.slow
@pytest.mark.backend_independent  # ONE_BACKEND_RUNS
def test_rows_kept_from_an_earlier_run(tmp_path):
    script = _load_script()
    first = script.main(["--smoke", "--output-dir", str(tmp_path / "a")])
    earlier = tmp_path / "a" / "position_encodings.json"
    second = script.main(
        [
            "--smoke",
            "--rows",
            "diagonal_polar_fixed",
            "--keep-rows-from",
            str(earlier),
            "--output-dir",
            str(tmp_path / "b"),
        ]
    )
    assert set(second["runs"]) == set(script.ROWS)
    for row in script.ROWS:
        if row != "diagonal_polar_fixed":
            assert second["runs"][row] == first["runs"][row], row
    kept = second["settings"]["rows_kept_from_earlier_run"]
    assert kept == sorted(set(script.ROWS) - {"diagonal_polar_fixed"})
    assert "--keep-rows-from" in second["settings"]["command"]
    # An earlier run with other settings is refused.
    saved = json.loads(earlier.read_text())
    saved["settings"]["epochs"] = 99
    earlier.write_text(json.dumps(saved))
    with pytest.raises(ValueError, match="same settings.*epochs"):
        script.main(["--smoke", "--keep-rows-from", str(earlier)])


@pytest.mark.slow
def test_rotary_block_is_keras_hub_encoder_with_rotary_queries_and_keys():
    script = _load_script()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 4, 8)).astype("float32")
    valid = np.ones((2, 4), bool)
    reference = keras_hub.layers.TransformerEncoder(16, num_heads=2)
    block = script.RotaryTransformerEncoder(16, num_heads=2)
    reference(x, padding_mask=valid)
    block(x, padding_mask=valid)
    block.set_weights(reference.get_weights())

    def call(layer, inputs, mask):
        return keras.ops.convert_to_numpy(layer(inputs, padding_mask=mask))

    # One position: the rotation is the identity, the layouts agree.
    np.testing.assert_allclose(
        call(block, x[:, :1], valid[:, :1]),
        call(reference, x[:, :1], valid[:, :1]),
        atol=1e-5,
    )
    # Longer: the rotation changes the attention...
    ours = call(block, x, valid)
    assert np.abs(ours - call(reference, x, valid)).max() > 1e-3
    # ... through relative positions only: a padded position in front
    # shifts every position by one and changes nothing else.
    shifted = np.concatenate([np.zeros_like(x[:, :1]), x], axis=1)
    mask = np.concatenate([np.zeros((2, 1), bool), valid], axis=1)
    moved = call(block, shifted, mask)[:, 1:]
    np.testing.assert_allclose(moved, ours, atol=1e-4)
