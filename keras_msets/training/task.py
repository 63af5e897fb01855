"""The `Task` base class: what one training task is, in one small object.

A task knows how to make its training data, its fixed test set, its loss
and metrics, its preprocessing and its default budget. A `Recipe`
(`keras_msets.training.recipe`) pairs a task with a model and a budget;
the shared machinery calls the task's methods in this order:

1. `fit(model, budget, output_dir, verbose)` compiles the model with
   `compile_arguments(budget)`, fits it on `training_data(budget)` (with
   `callbacks(budget, output_dir)`) and returns a "fit" record for the
   preset's metadata. Subclasses usually override only `training_data`,
   and `callbacks` where they need more than the default. `output_dir` is
   where the run may keep files while it trains (a resumable checkpoint,
   unless the budget names a `checkpoint_dir`): the run's output folder,
   or a new folder under `runs/` when that is an installed preset.
2. `evaluate(model, verbose)` measures the card's metrics on the task's
   fixed test set (never seen in training).
3. `example_input()`, `serves()`, `data_description(budget)` fill the
   preset's metadata; `use_text`, `training_text` and `card_sections`
   fill the model card.

The budget is a plain dict; `Task.defaults` holds the task's defaults and a
recipe's `budget` overrides them. Keys every task understands:

- `epochs`: passes over the training data (default 1).
- `steps`: batches per epoch; `None` means the whole training set
  (arrays) or the data set's own length (a `keras.utils.PyDataset`).
- `batch_size`, `learning_rate`, `seed`.
- `optimizer`: `"adam"` or `"adamw"`; `epsilon`, `weight_decay`,
  `clipnorm` go to the optimizer when given.

A task may add its own keys (`checkpoint_dir`, curriculum stages, ...); a
key unknown to the task is simply carried to its methods.
"""

import time

import keras

# Budget keys every task understands, with their defaults.
BUDGET_DEFAULTS = {
    "epochs": 1,
    "steps": None,
    "batch_size": 32,
    "learning_rate": 1e-3,
    "seed": 0,
    "optimizer": "adam",
}


class Task:
    """One training task: data, test set, loss, metrics and defaults.

    Subclasses set `name` (the preset metadata's `"task"`), `loss`,
    `metrics` and `defaults`, and implement `training_data`, `evaluate`
    and `example_input`; everything else has a working default.
    """

    name = None
    loss = "mse"
    metrics = ()
    defaults = {}

    # -- budget and compilation -------------------------------------------

    def budget(self, overrides=None):
        """The full budget: shared defaults, the task's, then `overrides`."""
        budget = dict(BUDGET_DEFAULTS)
        budget.update(self.defaults)
        budget.update(
            {k: v for k, v in (overrides or {}).items() if v is not None}
        )
        return budget

    def optimizer(self, budget):
        """The optimizer the budget names (Adam by default)."""
        options = {
            key: budget[key]
            for key in ("epsilon", "clipnorm")
            if budget.get(key) is not None
        }
        name = budget.get("optimizer", "adam")
        if name == "adamw":
            return keras.optimizers.AdamW(
                budget["learning_rate"],
                weight_decay=budget.get("weight_decay") or 0.004,
                **options,
            )
        if name != "adam":
            raise ValueError(
                "`optimizer` must be one of ('adam', 'adamw'). "
                f"Received: optimizer={name!r}"
            )
        return keras.optimizers.Adam(budget["learning_rate"], **options)

    def compile_arguments(self, budget):
        """`model.compile` keywords: optimizer, loss and metrics."""
        return {
            "optimizer": self.optimizer(budget),
            "loss": self.loss,
            "metrics": list(self.metrics) or None,
        }

    # -- training ---------------------------------------------------------

    def training_data(self, budget):
        """`(train, validation)` for `model.fit`.

        `train` is `(x, y)` arrays or a `keras.utils.PyDataset`;
        `validation` the same or `None`.
        """
        raise NotImplementedError(
            f"{type(self).__name__} must implement `training_data(budget)`."
        )

    def callbacks(self, budget, output_dir):
        """Callbacks for `model.fit` (none by default)."""
        return []

    def fit(self, model, budget, output_dir, verbose=2):
        """Compile and fit `model`; returns the "fit" record for metadata.

        The record holds the backend, the budget that ran, the epochs run,
        the wall time in seconds, the last training loss and, with
        validation data, the best validation loss.
        """
        keras.utils.set_random_seed(budget["seed"])
        model.compile(**self.compile_arguments(budget))
        train, validation = self.training_data(budget)
        if isinstance(train, tuple):
            x, y = train
            data = {"x": x, "y": y, "batch_size": budget["batch_size"]}
        else:
            data = {"x": train}
        start = time.time()
        history = model.fit(
            **data,
            validation_data=validation,
            epochs=budget["epochs"],
            steps_per_epoch=budget.get("steps"),
            callbacks=self.callbacks(budget, output_dir),
            verbose=verbose,
        )
        seconds = time.time() - start
        record = {
            "backend": keras.backend.backend(),
            "epochs": budget["epochs"],
            "steps": budget.get("steps"),
            "batch_size": budget["batch_size"],
            "learning_rate": budget["learning_rate"],
            "seed": budget["seed"],
            "epochs_run": len(history.history.get("loss", [])),
            "seconds": round(seconds, 1),
        }
        if history.history.get("loss"):
            record["final_loss"] = float(history.history["loss"][-1])
        if history.history.get("val_loss"):
            record["best_val_loss"] = float(min(history.history["val_loss"]))
        return record

    # -- evaluation and metadata -----------------------------------------

    def evaluate(self, model, verbose=1):
        """The card's metrics on the task's fixed test set, as a dict."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement `evaluate(model)`."
        )

    def example_input(self):
        """A small model input stored (with its output) in the metadata."""
        return None

    def serves(self):
        """Estimator routing information for metadata, or `None`.

        Estimator tasks return `{"estimator", "dims", "set_size",
        "preprocessing", "paired", "symmetric", "joint", "default_dims"}`
        (see `keras_msets.training.preset_io`).
        """
        return None

    def serves_update(self, stored):
        """The `serves` record a serves update writes over `stored` (the
        preset's current one); by default `serves()`."""
        return self.serves()

    def data_description(self, budget):
        """One line: what the preset was trained and measured on."""
        return self.name or type(self).__name__

    # -- model card -------------------------------------------------------

    def use_text(self, recipe):
        """Markdown: how to call the model, its input and output."""
        return (
            "```python\nimport keras_msets\n\n"
            f'model = keras_msets.zoo.load("{recipe.name}")\n```'
        )

    def training_text(self, recipe, metrics):
        """Markdown: the data, loss, optimizer and the run that happened."""
        budget = self.budget(recipe.budget)
        fit = metrics.get("fit") or {}
        text = (
            f"{self.data_description(budget)}. Loss {self.loss!r}, "
            f"{budget.get('optimizer', 'adam')} (learning rate "
            f"{budget['learning_rate']}), batch {budget['batch_size']}, "
            f"seed {budget['seed']}."
        )
        if fit:
            text += (
                f" It ran {fit.get('epochs_run')} epoch(s) in "
                f"{fit.get('seconds', 0):.0f} s on {fit.get('backend')}."
            )
        return text

    def card_sections(self, recipe, metrics):
        """Markdown: the task's results (by default, a table of metrics)."""
        lines = ["| metric | value |", "|---|---:|"]
        for key, value in metrics.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                lines.append(f"| {key} | {value:.4g} |")
        return "\n".join(lines)
