"""`Recipe`: a preset declared as model, task, budget and starting point.

A zoo preset's `zoo/<name>/recipe.py` holds one module-level `RECIPE`:

```python
from keras_msets.models import DeepSets
from keras_msets.training import Recipe
from keras_msets.training.tasks import DigitSumTask

RECIPE = Recipe(
    name="deepsets_digit_sum",
    task=DigitSumTask("sum"),
    build_model=lambda: DeepSets(vocabulary_size=10, name="deepsets_digit_sum"),
    budget={"epochs": 300},
    summary="DeepSets trained to predict the sum of a multiset of digits.",
    source=__file__,
)

if __name__ == "__main__":
    RECIPE.main()
```

and the shared machinery does the rest: `RECIPE.train()` builds the model
(loading the weights of `start_from` if set), fits it with the task's
`fit`, measures it with the task's `evaluate` and writes a preset folder
(config, weights, metadata, card, a copy of the recipe file);
`RECIPE.evaluate(model)` re-measures the card's metrics;
`RECIPE.model_card(model, metrics)` renders the card from the template in
`keras_msets.training.card`; `RECIPE.main()` is the command line
(`python zoo/<name>/recipe.py --help`).

Training never destroys a preset: by default it writes into a new folder
`runs/<date>-<time>/<name>` under the current directory, and it refuses to
write into an existing non-empty folder, a preset folder, the repository's
`zoo/` folder or the installed presets unless `overwrite=True`
(`--overwrite`) is passed. `RECIPE.update_serves(folder)` (`--serves-only`)
writes a changed `serves` declaration into an existing preset without
training (`keras_msets.training.serves_update`).
"""

import argparse
import dataclasses
import datetime
import importlib.util
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import keras

from keras_msets.training import card as card_lib
from keras_msets.training import distribution
from keras_msets.training import preset_io
from keras_msets.training import serves_update
from keras_msets.training.task import Task

ZOO_DIR_ENV = "KERAS_MSETS_ZOO_DIR"
# A folder holding either file is a preset (or a half-written one).
_PRESET_FILES = (preset_io.CONFIG_FILE, preset_io.METADATA_FILE)
WEIGHTS_FILE = preset_io.WEIGHTS_FILE


def add_output_arguments(parser):
    """`--output-dir` and `--overwrite`, shared by every recipe's parser."""
    parser.add_argument(
        "--output-dir",
        default=None,
        help="folder to write (default: runs/<date>-<time>/<name>)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="allow writing into an existing or installed preset folder",
    )


def add_optimizer_arguments(parser, budget):
    """`--batch-size`, `--learning-rate` and `--seed`, defaults from
    `budget`, shared by every recipe's parser."""
    parser.add_argument(
        "--batch-size", type=int, help=f"default {budget['batch_size']}"
    )
    parser.add_argument(
        "--learning-rate",
        type=float,
        help=f"default {budget['learning_rate']:g}",
    )
    parser.add_argument("--seed", type=int, help=f"default {budget['seed']}")


def preset_roots():
    """Folders that hold installed presets, which training must not touch.

    `$KERAS_MSETS_ZOO_DIR` if set, the installed `keras_msets._presets`
    package, and the `zoo/` folder of a source checkout.
    """
    roots = []
    if os.environ.get(ZOO_DIR_ENV):
        roots.append(Path(os.environ[ZOO_DIR_ENV]))
    spec = importlib.util.find_spec("keras_msets._presets")
    if spec is not None and spec.submodule_search_locations:
        roots.extend(Path(p) for p in spec.submodule_search_locations)
    roots.append(Path(__file__).resolve().parents[2] / "zoo")
    return [root.resolve() for root in roots if root.is_dir()]


def preset_folder(name_or_path):
    """The folder of a preset given by name (in `preset_roots()`) or path."""
    path = Path(name_or_path)
    if path.is_dir():
        return path
    for root in preset_roots():
        if (root / str(name_or_path) / WEIGHTS_FILE).is_file():
            return root / str(name_or_path)
    raise ValueError(
        "`start_from` must be a preset name or a preset folder. "
        f"Received: start_from={name_or_path!r}"
    )


def default_output_dir(name, parent=None):
    """A new folder `runs/<YYYYmmdd-HHMMSS>/<name>` under `parent`.

    `parent` defaults to the current directory; if the folder exists (two
    runs in one second), `-2`, `-3`, ... is added to the time stamp. The
    folder carries the preset's name, which its metadata records.
    """
    parent = Path.cwd() if parent is None else Path(parent)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    candidate, number = parent / "runs" / stamp / name, 1
    while candidate.exists():
        number += 1
        candidate = parent / "runs" / f"{stamp}-{number}" / name
    return candidate


def inside_presets(path):
    """Whether `path` is (inside) one of `preset_roots()`."""
    path = Path(path).resolve()
    return any(path == root or root in path.parents for root in preset_roots())


def check_checkpoint_dir(checkpoint_dir):
    """Raise a `ValueError` if `checkpoint_dir` is inside the installed
    presets or is a preset folder; returns the resolved path.

    A resumable training checkpoint never goes into a preset (the folder
    may exist: a run resumes from it).
    """
    path = Path(checkpoint_dir).resolve()
    if inside_presets(path) or any((path / f).exists() for f in _PRESET_FILES):
        raise ValueError(
            "`checkpoint_dir` must be outside the installed presets and not "
            "a preset folder. Received: "
            f"checkpoint_dir={str(checkpoint_dir)!r}"
        )
    return path


def check_output_dir(output_dir, overwrite=False):
    """Raise a `ValueError` where writing into `output_dir` could destroy
    something, unless `overwrite` is True; returns the resolved path.

    Refused: a folder inside (or equal to) one of `preset_roots()`, a
    preset folder (one holding config.json or metadata.json) and any
    existing non-empty folder.
    """
    path = Path(output_dir).resolve()
    if overwrite:
        return path
    if inside_presets(path):
        raise ValueError(
            f"Refusing to write into {path}: it is inside the installed "
            "presets. Choose another `output_dir`, or pass "
            "`overwrite=True` (`--overwrite`) to replace a shipped preset. "
            f"Received: output_dir={str(output_dir)!r}"
        )
    if path.exists() and (
        any((path / f).exists() for f in _PRESET_FILES)
        or not path.is_dir()
        or any(path.iterdir())
    ):
        raise ValueError(
            f"Refusing to write into {path}: it exists and is not an empty "
            "folder (it may hold a preset). Choose a new `output_dir`, or "
            "pass `overwrite=True` (`--overwrite`). "
            f"Received: output_dir={str(output_dir)!r}"
        )
    return path


def _installed_folder(name):
    for root in preset_roots():
        if (root / name / WEIGHTS_FILE).is_file():
            return root / name
    raise ValueError(
        f"No installed preset {name!r} to update: pass the preset folder "
        f"as `output_dir`. Received: output_dir=None"
    )


def check_serves_only_options(options):
    """Raise a `ValueError` if a serves update is asked for together with
    training options (`options`: names to values, None or False unset)."""
    given = {k: v for k, v in options.items() if v not in (None, False)}
    if given:
        raise ValueError(
            "A serves update does not train: training options cannot be "
            "combined with it. Received: serves_only=True, "
            + ", ".join(f"{k}={v!r}" for k, v in sorted(given.items()))
        )


@dataclasses.dataclass(frozen=True)
class Recipe:
    """A zoo preset declared: which model, task, budget, starting point.

    Args:
        name: the preset name (its `zoo/<name>/` folder).
        task: a `keras_msets.training.Task`.
        build_model: a callable returning a new `keras.Model`; keyword
            arguments named by `flags` are passed to it.
        budget: overrides of the task's default budget (`epochs`, `steps`,
            `batch_size`, `learning_rate`, `seed`, ...; see
            `keras_msets.training.task`).
        start_from: a preset name or folder whose weights the model
            starts from, or `None` (random initialisation).
        summary: one line: what the preset does (the card's first line).
        text: the preset's own card text (markdown), shown under the
            summary.
        flags: extra command line switches `(flag, help)`; each is passed
            to `build_model` as a boolean keyword (`--paper-readout` ->
            `paper_readout=True`).
        source: the recipe file (`__file__`), copied into each training
            run's output folder so that the folder is a complete preset.
    """

    name: str
    task: Task
    build_model: Callable[..., Any]
    budget: dict = dataclasses.field(default_factory=dict)
    start_from: Any = None
    summary: str = ""
    text: str = ""
    flags: tuple = ()
    source: Any = None

    def full_budget(self, **overrides):
        """The task's defaults, this recipe's budget, then `overrides`."""
        budget = dict(self.budget)
        budget.update({k: v for k, v in overrides.items() if v is not None})
        return self.task.budget(budget)

    def evaluate(self, model, verbose=1):
        """The card's metrics of `model`, measured on the task's test set."""
        return self.task.evaluate(model, verbose=verbose)

    def model_card(self, model, metrics):
        """The preset's README.md (markdown) for `model` and `metrics`."""
        return card_lib.render(self, model, metrics)

    def _model_options(self):
        return {flag.lstrip("-").replace("-", "_") for flag, _ in self.flags}

    def _load_start(self, model, folder):
        if not model.built:
            example = self.task.example_input()
            if example is not None:
                model(example)
        model.load_weights(folder / WEIGHTS_FILE)

    def train(self, output_dir=None, overwrite=False, verbose=2, **options):
        """Train, evaluate and write a preset folder; returns its path.

        Args:
            output_dir: the folder to write (default:
                `runs/<date>-<time>/<name>` under the current directory).
            overwrite: allow writing into an existing folder, a preset
                folder or the installed presets.
            verbose: Keras verbosity of `fit` and `evaluate`.
            **options: budget overrides (`epochs=`, `steps=`,
                `data_parallel=`, ...), and the `flags` keywords passed
                to `build_model`.
        """
        names = self._model_options()
        model_options = {k: v for k, v in options.items() if k in names}
        budget = self.full_budget(
            **{k: v for k, v in options.items() if k not in names}
        )
        path = self.output_folder(output_dir, overwrite, budget)
        start = None
        if self.start_from is not None:
            start = preset_folder(self.start_from)
        path.mkdir(parents=True, exist_ok=True)
        # The task may keep a resumable checkpoint in the folder it is
        # given: the output folder, unless that is an installed preset.
        work_dir = path
        if inside_presets(path):
            work_dir = default_output_dir(f"{self.name}-checkpoint")
        parallel = bool(budget.get("data_parallel"))
        with distribution.data_parallel(parallel) as scope:
            if scope is not None:
                distribution.check_batch_size(budget["batch_size"], scope)
            # The seed before the model: its layers draw their
            # initializers' and dropout's seeds when they are created.
            keras.utils.set_random_seed(budget["seed"])
            model = self.build_model(**model_options)
            if start is not None:
                self._load_start(model, start)
            fit = self.task.fit(model, budget, work_dir, verbose)
        if parallel:
            fit["data_parallel_devices"] = distribution.device_count(scope)
        if self.start_from is not None:
            fit["start_from"] = str(self.start_from)
        metrics = self.task.evaluate(model, verbose=verbose)
        metrics["fit"] = fit
        self.write_preset(model, path, budget, metrics)
        return path

    def update_serves(self, output_dir=None, overwrite=False):
        """Writes this recipe's current `serves` into an existing preset
        folder, weights untouched (`keras_msets.training.serves_update`);
        returns the folder.

        `output_dir` defaults to the installed preset of this name (which
        needs `overwrite=True`).
        """
        if output_dir is None:
            output_dir = _installed_folder(self.name)
        serves_update.update_serves(
            self, output_dir, inside_presets, overwrite=overwrite
        )
        return Path(output_dir).resolve()

    def output_folder(self, output_dir, overwrite, budget):
        """The checked output folder of a run (`check_output_dir`; the
        budget's `checkpoint_dir` by `check_checkpoint_dir`)."""
        path = check_output_dir(
            output_dir or default_output_dir(self.name), overwrite
        )
        if budget.get("checkpoint_dir") is not None:
            check_checkpoint_dir(budget["checkpoint_dir"])
        return path

    def write_preset(self, model, path, budget, metrics, **extra):
        """Writes the trained `model` as a preset into `path`.

        Config, weights, metadata (with `extra` and the run's seed), the
        card rendered from `metrics`, and a copy of the recipe file.
        """
        preset_io.save_preset(
            model,
            path,
            data=self.task.data_description(budget),
            metrics=metrics,
            card=self.model_card(model, metrics),
            example_input=self.task.example_input(),
            extra={**extra, "recipe_seed": budget["seed"]},
            serves=self.task.serves(),
            task=self.task.name,
            overwrite=True,  # `check_output_dir` decided before training
        )
        recipe_file = path / preset_io.RECIPE_FILE
        if self.source is not None and not (
            recipe_file.exists() and recipe_file.samefile(self.source)
        ):
            shutil.copyfile(self.source, recipe_file)

    def argument_parser(self):
        """The command line of `main`."""
        parser = argparse.ArgumentParser(
            description=f"Train the `{self.name}` preset. {self.summary}"
        )
        add_output_arguments(parser)
        budget = self.full_budget()
        parser.add_argument(
            "--epochs", type=int, help=f"default {budget['epochs']}"
        )
        parser.add_argument(
            "--steps",
            type=int,
            help="batches per epoch (default: "
            + (
                "the whole training set"
                if budget["steps"] is None
                else str(budget["steps"])
            )
            + ")",
        )
        add_optimizer_arguments(parser, budget)
        parser.add_argument(
            "--checkpoint-dir",
            default=None,
            help="where a resumable training checkpoint goes (default: the "
            "output folder), never into an installed preset",
        )
        distribution.add_distribution_arguments(parser)
        parser.add_argument(
            "--serves-only",
            action="store_true",
            help="no training: write the recipe's current `serves` into "
            "the existing preset in --output-dir (default: the installed "
            "one, which needs --overwrite), weights untouched",
        )
        parser.add_argument("--verbose", type=int, default=2)
        for flag, text in self.flags:
            parser.add_argument(flag, action="store_true", help=text)
        return parser

    def main(self, argv=None):
        """`python zoo/<name>/recipe.py [--steps N] [--output-dir D] ...`."""
        args = vars(self.argument_parser().parse_args(argv))
        if args.pop("serves_only", False):
            args.pop("verbose")
            output_dir, overwrite = (
                args.pop("output_dir"),
                args.pop("overwrite"),
            )
            check_serves_only_options(args)
            path = self.update_serves(output_dir, overwrite)
            print(path)
            return path
        path = self.train(
            output_dir=args.pop("output_dir"),
            overwrite=args.pop("overwrite"),
            verbose=args.pop("verbose"),
            **args,
        )
        print(path)
        return path
