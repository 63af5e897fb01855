"""Tests of the Multi-Set Transformer presets' recipes (`zoo/mst_*/recipe.py`).

Each recipe is a declaration (`RECIPE`, a `SetRecipe`); no real training
here: tiny models run a few steps into temporary folders, the cards are
rendered from made-up and from the shipped metrics, and the starting
points (the KL preset's weights, a continued run) are checked. The tasks
themselves are tested in tests/training/test_mst_tasks.py.
"""

import dataclasses
import json
import re
import shutil
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_msets import zoo
from keras_msets.cli import main as cli_main
from keras_msets.testing import load_script
from keras_msets.training import preset_io
from keras_msets.training.set_recipe import SetRecipe
from keras_msets.training.tasks import SetTask
from keras_msets.training.tasks import set_models
from keras_msets.training.tasks.set_task import total_steps
from keras_msets.zoo import registry

ROOT = Path(__file__).resolve().parents[2]
# The recipes' bookkeeping (cards, metadata, continued runs, the command
# line) does not depend on the backend; what does (a recipe's tiny fit,
# save and load) runs on every backend in
# test_two_sample_recipe_end_to_end and
# test_fine_tuned_recipes_start_from_the_kl_preset. So `make test` runs
# the longer bookkeeping tests on one backend only.
BOOKKEEPING = pytest.mark.backend_independent
RECIPES = (
    "mst_kl_divergence",
    "mst_kl_divergence_low_d",
    "mst_kl_divergence_mid_d",
    "mst_mutual_information",
    "mst_mutual_information_joint",
    "mst_two_sample",
    "mst_count_shared_digits",
)
# Small graphs compile fast: one block, one head, mean pooling, a linear
# decoder.
TINY = {
    "latent_dim": 4,
    "ff_dim": 4,
    "num_blocks": 1,
    "num_heads": 1,
    "pooling": "mean",
    "decoder_units": [],
}
TINY_COUNTING = dict(TINY, filters=(2,))
TASK_OF = {
    "mst_kl_divergence": "kl_divergence",
    "mst_kl_divergence_low_d": "kl_divergence",
    "mst_kl_divergence_mid_d": "kl_divergence",
    "mst_mutual_information": "mutual_information",
    "mst_mutual_information_joint": "mutual_information_joint",
    "mst_two_sample": "two_sample",
    "mst_count_shared_digits": "counting",
}


def _recipe(name):
    return load_script(ROOT / "zoo" / name / "recipe.py").RECIPE


def _tiny(name, test_size=8, **task_options):
    """The recipe of `name` with a tiny model and a small test set, from
    random weights."""
    recipe = _recipe(name)
    task = _copy_task(recipe.task, test_size=test_size, **task_options)
    return dataclasses.replace(
        recipe,
        task=task,
        start_from=None,
        build_model=lambda: set_models.build_model(
            TASK_OF[name], name=name, **TINY
        ),
    )


def _copy_task(task, **changes):
    copy = object.__new__(type(task))
    copy.__dict__.update(task.__dict__)
    copy.__dict__.update(changes)
    return copy


# Declarations -----------------------------------------------------------------


@pytest.mark.parametrize("name", RECIPES)
def test_recipes_are_short_declarations(name):
    folder = ROOT / "zoo" / name
    source = (folder / "recipe.py").read_text()
    assert len(source.splitlines()) <= 45
    assert "if task ==" not in source
    recipe = _recipe(name)
    assert isinstance(recipe, SetRecipe) and isinstance(recipe.task, SetTask)
    assert recipe.name == name and recipe.task.name == TASK_OF[name]
    assert recipe.full_budget()["steps"] > 0
    assert Path(recipe.source).resolve() == (folder / "recipe.py").resolve()
    if not (folder / "config.json").is_file():
        assert name not in zoo.list()


def test_serves_matches_the_estimator_routes():
    serves = {name: _recipe(name).task.serves() for name in RECIPES}
    assert serves["mst_count_shared_digits"] is None
    assert serves["mst_kl_divergence"] == {
        "estimator": "kl_divergence",
        "dims": [2, 16],
        "set_size": [100, 150],
        "preprocessing": "whiten",
        "paired": False,
        "symmetric": False,
        "joint": False,
        "default_dims": None,
    }
    # The Multi-Set Transformers are specialists, used by name: the
    # statistics presets are the estimators' defaults.
    assert serves["mst_kl_divergence_low_d"]["default_dims"] is None
    assert serves["mst_kl_divergence_mid_d"]["default_dims"] is None
    joint = serves["mst_mutual_information_joint"]
    assert joint["estimator"] == "mutual_information"
    assert joint["joint"] and joint["paired"]
    assert joint["preprocessing"] == "whiten_third_moment"
    assert (joint["dims"], joint["default_dims"]) == ([1, 8], None)
    split = serves["mst_mutual_information"]
    assert split["preprocessing"] == "standardize" and not split["joint"]
    assert (split["dims"], split["default_dims"]) == ([2, 20], None)
    two = serves["mst_two_sample"]
    assert two["estimator"] == "same_distribution_probability"
    assert two["symmetric"] and two["set_size"] == [10, 30]
    for value in serves.values():
        if value is not None:
            assert preset_io.check_serves(value) == value


# Cards ------------------------------------------------------------------------


def _fake_metrics(task):
    fit = {
        "steps": 10,
        "batch_size": 64,
        "learning_rate": 1e-4,
        "loss_function": "mean_absolute_error",
        "seed": 0,
        "seconds": 1.0,
        "steps_per_second": 10.0,
        "dims": [2, 3],
    }
    metrics = {"fit": fit, "accuracy": 0.5, "accuracy_same": 0.4}
    metrics.update({"accuracy_different": 0.6, "l1": 1.0})
    metrics.update({"pretrain_steps": 5, "pretrain_accuracy": 0.9})
    metrics["pretrain_from"] = "mst_kl_divergence"
    for d in task.test_dims or ():
        metrics.update({f"mae_d{d}": 1.0, f"knn_mae_d{d}": 2.0})
        metrics.update({f"ksg_mae_d{d}": 0.5, f"mean_label_d{d}": 3.0})
        metrics[f"median_mae_d{d}"] = 0.9 if d == 16 else 1.5
        if d >= 2:
            metrics[f"split_mae_d{d}"] = 0.8
        metrics[f"general_mae_d{d}"] = 0.5 if d == 3 else 1.2
        metrics[f"estimator_mae_d{d}"] = 0.9
    for d in getattr(task, "gaussian_dims", ()):
        metrics.update(
            {f"gaussian_mae_d{d}": 0.7, f"gaussian_knn_mae_d{d}": 0.2}
        )
        for kl in task.gaussian_kls:
            metrics[f"gaussian_mean_estimate_d{d}_kl{kl:g}"] = 2 * kl
    return metrics


CARD_TEXT = {
    "mst_kl_divergence": [
        "| 2 | 1.0000 | 2.0000 | 0.0726 | 0.2047 | 1.5000 | 3.000 |",
        "| 16 | 1.0000 | 2.0000 | 4.7000 | 28.0382 | 0.9000 | 3.000 |",
        "At d = 16 it is not even 10 % better than the best constant",
        "| 8 | 0.00 | 1.00 | 2.00 | 4.00 | 0.700 | 0.200 |",
        'pretrained.kl_divergence(x, y, model="mst_kl_divergence")',
    ],
    "mst_kl_divergence_low_d": [
        "| 1 | 1.0000 | 1.2000 | 2.0000 | - | - | 1.5000 | 3.000 |",
        "| 2 | 1.0000 | 1.2000 | 2.0000 | 0.0726 | 0.2047 | 1.5000 | 3.000 |",
        "below k-NN at every tested d it was measured beside; it is NOT "
        "below `mst_kl_divergence` at d = 3.",
        "| 2 | 0.00 | 1.00 | 2.00 | 4.00 | 0.700 | 0.200 |",
        "starts from the weights of `mst_kl_divergence`",
        "only preset trained on it",
        'pretrained.kl_divergence(x, y, model="mst_kl_divergence_low_d")',
    ],
    "mst_kl_divergence_mid_d": [
        "in d = 3..5: the `mst_kl_divergence` model",
        "| 3 | 1.0000 | 0.5000 | 2.0000 | - | - | 1.5000 | 3.000 |",
        "| 4 | 1.0000 | 1.2000 | 2.0000 | 0.1917 | 0.5662 | 1.5000 | 3.000 |",
        "NOT below `mst_kl_divergence` at d = 3.",
        "| 4 | 0.00 | 1.00 | 2.00 | 4.00 | 0.700 | 0.200 |",
        'model="mst_kl_divergence_mid_d")',
    ],
    "mst_mutual_information": [
        "Fig. 2",
        "| 10 | 1.0000 | 0.5000 | 1.5000 |",
        "NOT below KSG at d = 2, 10, 20",
        'model="mst_mutual_information")',
    ],
    "mst_mutual_information_joint": [
        "KL(P_XY || P_X P_Y)",
        "| 1 | 1.0000 | 0.9000 | 0.5000 | (d = 1 not taken) | 1.5000 |",
        "| 2 | 1.0000 | 0.9000 | 0.5000 | 0.8000 | 1.5000 |",
        "`mutual_information`, mean of 8 |",
        "NOT below `mst_mutual_information` at d = 2, 4, 6, 8",
        "starts from the weights of `mst_kl_divergence`",
    ],
    "mst_two_sample": ["0.7289", "0.73", "does NOT reach"],
    "mst_count_shared_digits": [
        "0.9746",
        "0.3136",
        "mst_counting_ceiling",
        "pretrained as a digit classifier for 5 batches",
    ],
}


@pytest.mark.parametrize("name", RECIPES)
def test_model_cards(name):
    recipe = _recipe(name)
    if name == "mst_count_shared_digits":
        model = set_models.build_counting_model(**TINY_COUNTING)
    else:
        model = set_models.build_model(TASK_OF[name], **TINY)
        model.build([(None, None, None)] * 2)
    card = recipe.model_card(model, _fake_metrics(recipe.task))
    assert card.startswith(f"# `{name}`")
    assert f"keras-msets zoo evaluate {name}" in card
    assert f"keras-msets zoo train {name}" in card
    # Prose may be wrapped anywhere: compare with single spaces too.
    flat = " ".join(card.split())
    for text in CARD_TEXT[name]:
        assert text in card or text in flat, text


SHIPPED = [n for n in RECIPES if (ROOT / "zoo" / n / "config.json").is_file()]


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_cards_render_from_their_stored_metrics(name):
    # Every number the metrics put on the shipped card is on the card the
    # recipe renders from them (no training, no measuring).
    recipe = _recipe(name)
    metadata = preset_io.read_metadata(ROOT / "zoo" / name)
    model = keras.saving.deserialize_keras_object(
        preset_io.read_config(ROOT / "zoo" / name)
    )
    card = recipe.model_card(model, metadata["metrics"])
    shipped = (ROOT / "zoo" / name / "README.md").read_text()
    assert card == shipped
    for key, value in metadata["metrics"].items():
        if re.match(r"(\w*mae_d\d+|accuracy\w*|l1)$", key) and not (
            key.startswith("gaussian")
        ):
            assert f"{value:.4f}" in card, key
    numbers = set(re.findall(r"\d+\.\d{4}", card))
    assert numbers, name


def test_a_card_names_the_backend_its_run_was_trained_on():
    # Re-rendered on another backend (`--update-card`), the card keeps the
    # backend of the training run, which `fit` records.
    recipe = _recipe("mst_kl_divergence_low_d")
    metrics = _fake_metrics(recipe.task)
    other = "torch" if keras.backend.backend() != "torch" else "jax"
    metrics["fit"]["backend"] = other
    text = recipe.task.training_text(recipe, metrics)
    assert f"KERAS_BACKEND={other} python" in text
    assert f"on {other}." in " ".join(text.split())


# Training ---------------------------------------------------------------------


def test_epochs_are_refused_with_a_pointer_to_steps(tmp_path):
    # `keras-msets zoo train NAME --epochs N` passes `epochs`, which a set
    # recipe would otherwise ignore.
    recipe = _tiny("mst_two_sample")
    with pytest.raises(ValueError, match=r"pass `steps`.*epochs=3"):
        recipe.train(output_dir=tmp_path / "run", epochs=3)
    assert not (tmp_path / "run").exists()


def test_training_never_writes_into_a_preset(tmp_path):
    recipe = _tiny("mst_two_sample")
    for folder in (ROOT / "zoo" / "mst_two_sample", ROOT / "zoo" / "new"):
        with pytest.raises(ValueError, match="Refusing to write"):
            recipe.train(output_dir=folder, steps=2)
    with pytest.raises(ValueError, match="checkpoint_dir"):
        recipe.train(
            output_dir=tmp_path / "run",
            steps=2,
            checkpoint_dir=ROOT / "zoo" / "mst_two_sample",
        )


@pytest.mark.slow
def test_two_sample_recipe_end_to_end(tmp_path, monkeypatch):
    recipe = _tiny("mst_two_sample")
    folder = tmp_path / recipe.name
    path = recipe.train(output_dir=folder, steps=2, batch_size=4, verbose=0)
    assert path == folder.resolve()
    assert sorted(p.name for p in folder.iterdir()) == [
        "README.md",
        "config.json",
        "metadata.json",
        "model.weights.h5",
        "recipe.py",
    ]
    metrics = json.loads((folder / "metadata.json").read_text())["metrics"]
    monkeypatch.setenv(registry.ZOO_DIR_ENV, str(tmp_path))
    assert zoo.list() == [recipe.name]
    info = zoo.info(recipe.name)
    assert info["task"] == "two_sample" and info["dims"] == [8]
    assert info["preprocessing"] == "whiten"
    assert info["serves"]["estimator"] == "same_distribution_probability"
    model = zoo.load(recipe.name)
    example = info["example"]
    np.testing.assert_allclose(
        model.predict_on_batch(preset_io.example_input(example)),
        example["output"],
        atol=1e-5,
    )
    assert 0.0 <= metrics["accuracy"] <= 1.0 and metrics["fit"]["steps"] == 2
    # `keras-msets zoo evaluate NAME --update-card` re-measures (with the
    # recipe copied into the folder: the full test set) and writes the
    # measured metrics and a new card; training records and weights stay.
    stored = json.loads((folder / registry.METADATA_FILE).read_text())
    stored["metrics"]["accuracy"] = 9.0
    (folder / registry.METADATA_FILE).write_text(json.dumps(stored))
    (folder / "README.md").write_text("stale")
    assert cli_main(["zoo", "evaluate", recipe.name, "--update-card"]) == 0
    updated = zoo.info(recipe.name)
    assert 0.0 <= updated["metrics"]["accuracy"] <= 1.0
    assert updated["metrics"]["fit"] == metrics["fit"]
    assert preset_io.recorded_hashes(updated) == (
        preset_io.recorded_hashes(info)
    )
    assert updated["card"].startswith(f"# `{recipe.name}`")
    assert f"{updated['metrics']['accuracy']:.4f}" in updated["card"]
    # A recipe without `model_card(model, metrics)` cannot update a card.
    (folder / "recipe.py").write_text(
        "def evaluate(model, verbose=1):\n    return {}\n"
    )
    with pytest.raises(ValueError, match=f"model_card.*'{recipe.name}'"):
        zoo.evaluate(recipe.name, update_card=True)


@pytest.mark.slow
@BOOKKEEPING
def test_a_recipe_continues_a_saved_preset(tmp_path):
    recipe = _tiny("mst_two_sample")
    tiny = dict(batch_size=4, verbose=0)
    recipe.train(output_dir=tmp_path / "run1", steps=2, **tiny)
    first = preset_io.read_metadata(tmp_path / "run1")["metrics"]
    # Shift the saved weights far from any initialisation: the continued
    # run must start from them (a few tiny steps move them by ~1e-4).
    weights = tmp_path / "run1" / preset_io.WEIGHTS_FILE
    model = recipe.build_model()
    model([np.zeros((1, 4, 8), "float32")] * 2)
    model.load_weights(weights)
    shifted = [w + 0.5 for w in model.get_weights()]
    model.set_weights(shifted)
    model.save_weights(weights)
    recipe.train(
        output_dir=tmp_path / "run2",
        steps=3,
        continue_from=tmp_path / "run1",
        **tiny,
    )
    second = preset_io.read_metadata(tmp_path / "run2")["metrics"]
    model.load_weights(tmp_path / "run2" / preset_io.WEIGHTS_FILE)
    for before, after in zip(shifted, model.get_weights(), strict=True):
        np.testing.assert_allclose(after, before, atol=1e-2)
    assert any(
        not np.array_equal(a, b)
        for a, b in zip(shifted, model.get_weights(), strict=True)
    )
    assert second["earlier_fits"] == [first["fit"]]
    assert [first["fit"]["seed"], second["fit"]["seed"]] == [0, 1]
    assert total_steps(second) == 5
    card = " ".join((tmp_path / "run2" / "README.md").read_text().split())
    assert "in 2 runs" in card and "5 batches in all" in card
    assert (
        "--steps 2 --batch-size 4 --learning-rate 0.0001 --output-dir run1"
        in card
    )
    assert (
        "--steps 3 --batch-size 4 --learning-rate 0.0001 --continue-from"
        in card
    )
    assert "after 5 training batches" in card
    with pytest.raises(FileNotFoundError, match="continue_from"):
        recipe.train(
            output_dir=tmp_path / "run3",
            steps=2,
            continue_from=tmp_path / "nowhere",
            **tiny,
        )


@pytest.mark.slow
@BOOKKEEPING
def test_a_model_for_every_d_records_no_d_and_its_card_every_rate(
    tmp_path, monkeypatch
):
    # The MI recipe trains one dimension-equivariant model on d = 2..20:
    # neither the first run nor a continued one may save a build_config
    # with one particular d.
    recipe = _tiny("mst_mutual_information", test_size=4)
    first, second = (tmp_path / run / recipe.name for run in ("a", "b"))
    recipe.train(output_dir=first, steps=2, batch_size=4, verbose=0)
    recipe.train(
        output_dir=second,
        steps=2,
        batch_size=4,
        verbose=0,
        continue_from=first,
        learning_rate=1e-4,
    )
    # The card's commands repeat both runs, though the second one's rate
    # is App. B's and the recipe's default (1e-3) is not.
    card = (second / "README.md").read_text()
    assert (
        "--steps 2 --batch-size 4 --learning-rate 0.001 --output-dir run1"
        in card
    )
    assert (
        "--steps 2 --batch-size 4 --learning-rate 0.0001 --continue-from "
        "run1 --output-dir run2" in card
    )
    assert "each run's rate is below" in " ".join(card.split())
    for folder in (first, second):
        config = json.loads((folder / preset_io.CONFIG_FILE).read_text())
        assert config["build_config"] == {
            "set_shapes": [[None, None, None], [None, None, None]]
        }, folder
        monkeypatch.setenv(registry.ZOO_DIR_ENV, str(folder.parent))
        model = zoo.load(recipe.name)
        for d in (3, 11):
            sets = [np.random.default_rng(d).normal(size=(2, 5, d))] * 2
            out = model.predict_on_batch(sets)
            assert out.shape == (2, 1) and np.all(np.isfinite(out))
        example = zoo.info(recipe.name)["example"]
        np.testing.assert_allclose(
            model.predict_on_batch(preset_io.example_input(example)),
            example["output"],
            atol=1e-5,
        )


@pytest.fixture(scope="module")
def kl_weights():
    """The KL preset's weights, loaded once for the module."""
    return zoo.load("mst_kl_divergence").get_weights()


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        "mst_mutual_information_joint",
        "mst_kl_divergence_low_d",
        "mst_kl_divergence_mid_d",
    ],
)
def test_fine_tuned_recipes_start_from_the_kl_preset(name, kl_weights):
    recipe = _recipe(name)
    assert recipe.start_from == "mst_kl_divergence"
    model = recipe.build_model()
    model.build([(None, None, None)] * 2)
    # The same architecture as the KL preset: its weights fit one to one.
    recipe.load_start(model)
    for mine, theirs in zip(model.get_weights(), kl_weights, strict=True):
        np.testing.assert_array_equal(mine, theirs)


@BOOKKEEPING
@pytest.mark.slow
@pytest.mark.parametrize(
    "name, dims",
    [
        ("mst_mutual_information_joint", list(range(1, 9))),
        ("mst_kl_divergence_low_d", [1, 2, 3]),
    ],
)
def test_tiny_runs_of_the_fine_tuned_recipes(tmp_path, name, dims):
    # A tiny run from random weights (its card records no KL start), then
    # one that continues it: the second keeps the first's weights and
    # lists both runs.
    recipe = _tiny(name, test_size=4, reference=None, split=None)
    first, second = tmp_path / "run1", tmp_path / "run2"
    recipe.train(output_dir=first, steps=3, batch_size=4, verbose=0)
    info = preset_io.read_metadata(first)
    assert info["task"] == recipe.task.name and info["dims"] == dims
    assert info["preprocessing"] == recipe.task.preprocessing
    assert "starts from" not in (first / "README.md").read_text()
    recipe.train(
        output_dir=second,
        steps=3,
        batch_size=4,
        verbose=0,
        continue_from=first,
    )
    metrics = preset_io.read_metadata(second)["metrics"]
    assert "pretrain_from" not in metrics
    assert len(metrics["earlier_fits"]) == 1
    card = (second / "README.md").read_text()
    assert "--continue-from run1 --output-dir run2" in card


@BOOKKEEPING
def test_recipe_command_line(tmp_path, monkeypatch):
    recipe = _tiny("mst_two_sample")
    parser = recipe.argument_parser()
    args = parser.parse_args(
        ["--steps", "3", "--continue-from", "run1", "--checkpoint-dir", "c"]
    )
    assert (args.steps, args.continue_from, args.checkpoint_dir) == (
        3,
        "run1",
        "c",
    )
    assert args.data_parallel is False
    # A checkpointed run keeps its pieces outside the preset folder.
    monkeypatch.chdir(tmp_path)
    path = recipe.main(
        [
            "--steps",
            "2",
            "--batch-size",
            "4",
            "--verbose",
            "0",
            "--checkpoint-dir",
            str(tmp_path / "pieces"),
            "--checkpoint-steps",
            "1",
        ]
    )
    assert Path(path).parent.parent == tmp_path / "runs"
    assert (tmp_path / "pieces" / "progress.json").is_file()
    assert not (Path(path) / "progress.json").exists()
    fit = preset_io.read_metadata(path)["metrics"]["fit"]
    assert fit["checkpoint_steps"] == 1 and fit["resumed_chunks"] == 0
    shutil.rmtree(path)
