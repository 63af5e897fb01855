"""`OptionsRecipe`: a `Recipe` whose command line takes typed options.

`Recipe.flags` are on/off switches. Some recipes also take numbers or
names: the model's (`--rate-power 1`, passed to `build_model`) or the
budget's (`--last-learning-rate 1e-3`, `--folds 0 1`, read by the task).
Each option is `(flag, argparse keywords)`:

```python
RECIPE = OptionsRecipe(
    ...,
    model_options=(("--rate-power", {"type": float, "help": "..."}),),
    budget_options=(("--folds", {"type": int, "nargs": "+"}),),
)
RECIPE.train(rate_power=1.0, folds=[0])  # the same from Python
```

An option left out keeps `build_model`'s default (model options) or the
task's (budget options).
"""

import dataclasses
import functools

from keras_msets.training.recipe import Recipe


def _keyword(flag):
    return flag.lstrip("-").replace("-", "_")


@dataclasses.dataclass(frozen=True)
class OptionsRecipe(Recipe):
    """A `Recipe` with typed command line options.

    Args:
        model_options: `(flag, argparse keywords)` pairs; each value given
            is passed to `build_model` as a keyword argument.
        budget_options: `(flag, argparse keywords)` pairs; each value
            given overrides the budget key of the same name.
        (the other arguments are `Recipe`'s.)
    """

    model_options: tuple = ()
    budget_options: tuple = ()

    def train(self, output_dir=None, overwrite=False, verbose=2, **options):
        """`Recipe.train`, with the model options bound to `build_model`."""
        names = {_keyword(flag) for flag, _ in self.model_options}
        chosen = {
            key: options.pop(key)
            for key in list(options)
            if key in names and options[key] is not None
        }
        for key in names:
            options.pop(key, None)
        recipe = self
        if chosen:
            recipe = dataclasses.replace(
                self, build_model=functools.partial(self.build_model, **chosen)
            )
        return Recipe.train(
            recipe,
            output_dir=output_dir,
            overwrite=overwrite,
            verbose=verbose,
            **options,
        )

    def argument_parser(self):
        """`Recipe.argument_parser` plus the typed options."""
        parser = super().argument_parser()
        for flag, keywords in self.model_options + self.budget_options:
            parser.add_argument(flag, default=None, **keywords)
        return parser
