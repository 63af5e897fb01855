"""The training layer: tasks, recipes, the fit wrapper and model cards.

- `Task` (`keras_msets.training.task`): one training task as a small
  object (batches, fixed test set, loss, metrics, defaults).
- `Recipe` (`keras_msets.training.recipe`): a preset declared as model,
  task, budget and starting point; trains, evaluates and writes the
  preset folder and its card (`keras_msets.training.card`).
- `keras_msets.training.tasks`: the tasks of the shipped presets.

Imports go one way: this package uses `utils`, `ops`, `data`, `stats`,
`layers` and `models`, never `zoo`, `estimators`, `cli` or `testing`.
"""

from keras_msets.training.recipe import Recipe
from keras_msets.training.task import Task

__all__ = ["Recipe", "Task"]
