"""`SetRecipe`: a `Recipe` whose task trains on fresh batches of set pairs.

What it adds to `keras_msets.training.Recipe`:

- `steps` is the number of training batches in all (one fresh batch per
  step, `keras_msets.training.set_batches`), not batches per epoch;
- `continue_from`: a preset folder written by a set recipe (e.g. the
  shipped one) whose weights the run continues; its runs are kept in
  `metrics["earlier_fits"]` (the card lists them) and the batches are
  drawn with seed `seed + k` for the k-th continuation, new but
  reproducible;
- `start_from` is recorded as `metrics["pretrain_from"]`, and a task with
  a `pretrain(model, budget)` step (the counting task's encoder) runs it
  before the first run;
- `checkpoint_dir`: a resumable run (`set_batches.fit_sets`), saved in
  pieces into that folder (never the preset folder).
"""

import argparse
import dataclasses
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import keras

from keras_msets.training import distribution
from keras_msets.training import preset_io
from keras_msets.training import recipe as recipe_lib
from keras_msets.training.tasks import set_models


def earlier_fits(continue_from):
    """`(fits, carried metrics, example)` of preset folder `continue_from`.

    The fits oldest first; the carried metrics are the pretraining ones
    (`pretrain*`); evaluations are redone. The example is the metadata's.
    """
    if continue_from is None:
        return [], {}, None
    path = Path(continue_from) / preset_io.METADATA_FILE
    if not path.is_file():
        raise FileNotFoundError(
            "`continue_from` must be a preset folder with "
            f"{preset_io.METADATA_FILE} and {preset_io.WEIGHTS_FILE}. "
            f"Received: continue_from={str(continue_from)!r}"
        )
    metadata = json.loads(path.read_text())
    metrics = metadata["metrics"]
    if "fit" not in metrics or "example" not in metadata:
        raise ValueError(
            f"The preset in {str(continue_from)!r} records no training run "
            "(`metrics['fit']`) or example; only presets written by a set "
            "recipe can be continued."
        )
    fits = [dict(f) for f in metrics.get("earlier_fits", [])]
    fits.append(dict(metrics["fit"]))
    carried = {k: v for k, v in metrics.items() if k.startswith("pretrain")}
    return fits, carried, metadata["example"]


@dataclasses.dataclass(frozen=True)
class SetRecipe(recipe_lib.Recipe):
    """A preset of a set task (`keras_msets.training.tasks.SetTask`).

    The arguments are `Recipe`'s; `budget["steps"]` is the number of
    training batches of a run. `build_model` defaults to the App. B model
    of the task named by the preset (`set_models.build_model(task.name,
    name=name)`).
    """

    build_model: Callable[..., Any] = None

    def __post_init__(self):
        if self.build_model is None:
            object.__setattr__(
                self,
                "build_model",
                functools.partial(
                    set_models.build_model, self.task.name, name=self.name
                ),
            )

    def train(
        self,
        output_dir=None,
        overwrite=False,
        verbose=2,
        continue_from=None,
        **options,
    ):
        """Train, evaluate and write a preset folder; returns its path.

        `options`: budget overrides (`steps`, `batch_size`,
        `learning_rate`, `seed`, `workers`, `checkpoint_dir`,
        `checkpoint_steps`, `data_parallel`, `bucket_multiple`); `epochs`
        is refused (a ValueError): a set recipe counts training batches.
        """
        if options.get("epochs") is not None:
            raise ValueError(
                "A set recipe trains `steps` fresh batches and has no "
                "epochs: pass `steps` (`--steps`) instead. Received: "
                f"epochs={options['epochs']!r}"
            )
        budget = self.full_budget(**options)
        path = self.output_folder(output_dir, overwrite, budget)
        fits, carried, example = earlier_fits(continue_from)
        path.mkdir(parents=True, exist_ok=True)
        metrics = {}
        parallel = bool(budget.get("data_parallel"))
        with distribution.data_parallel(parallel) as scope:
            if scope is not None:
                distribution.check_batch_size(budget["batch_size"], scope)
            keras.utils.set_random_seed(budget["seed"])
            model = self.build_model()
            self.task.build(
                model,
                None if example is None else preset_io.example_input(example),
            )
            if fits:
                model.load_weights(Path(continue_from) / preset_io.WEIGHTS_FILE)
                metrics.update(carried)
                metrics["earlier_fits"] = fits
                budget["seed"] += len(fits)
            elif self.start_from is not None:
                self.load_start(model)
                metrics["pretrain_from"] = str(self.start_from)
            elif getattr(self.task, "pretrain_steps", 0):
                metrics.update(self.task.pretrain(model, budget))
            fit = self.task.fit(model, budget, path, verbose)
        if parallel:
            fit["data_parallel_devices"] = distribution.device_count(scope)
        metrics.update(self.task.evaluate(model, verbose=verbose))
        metrics["fit"] = fit
        self.write_preset(
            model,
            path,
            budget,
            metrics,
            dims=None if self.task.dims is None else list(self.task.dims),
            set_size=list(self.task.set_size),
            preprocessing=self.task.preprocessing,
        )
        return path

    def load_start(self, model):
        """Loads the weights of `start_from` (a preset name or folder)
        into the built `model`."""
        folder = recipe_lib.preset_folder(self.start_from)
        model.load_weights(folder / preset_io.WEIGHTS_FILE)

    def argument_parser(self):
        budget = self.full_budget()
        parser = argparse.ArgumentParser(
            description=f"Train the `{self.name}` preset. {self.summary}"
        )
        recipe_lib.add_output_arguments(parser)
        parser.add_argument(
            "--steps",
            type=int,
            help=f"training batches (default {budget['steps']})",
        )
        recipe_lib.add_optimizer_arguments(parser, budget)
        parser.add_argument("--workers", type=int, default=None)
        parser.add_argument(
            "--continue-from",
            default=None,
            help="a preset folder whose weights to train further",
        )
        parser.add_argument(
            "--checkpoint-dir",
            default=None,
            help="train in pieces, saving a resumable checkpoint in this "
            "folder after each (never a preset folder); run the same "
            "command again to resume",
        )
        parser.add_argument(
            "--checkpoint-steps",
            type=int,
            default=None,
            help="batches between checkpoints (default: 500)",
        )
        distribution.add_distribution_arguments(parser)
        parser.add_argument("--verbose", type=int, default=2)
        return parser


def installed_model(name):
    """A loader of the installed preset `name`: a zero-argument callable
    returning the model, or None when the preset (or its weights) is not
    installed. For a task's `reference` model."""

    def load():
        try:
            folder = recipe_lib.preset_folder(name)
        except ValueError:
            return None
        model = keras.saving.deserialize_keras_object(
            preset_io.read_config(folder)
        )
        model.load_weights(folder / preset_io.WEIGHTS_FILE)
        return model

    return load
