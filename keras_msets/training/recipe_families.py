"""Recipes that differ only in constants: one function per family.

A preset of a family declares its constants and calls the family's
function, which returns the preset's `RECIPE`:

- `digit_sum_recipe`: DeepSets or Complex DeepSets on a digit-sum task
  (DeBenedetto & Chiang, ICML 2020, Sec. 5.1);
- `kl_range_recipe`: the `mst_kl_divergence` model fine-tuned on one
  range of d (Selby et al., UAI 2022, App. B).

```python
RECIPE = digit_sum_recipe("deepsets_digit_sum", "deepsets", "sum", __file__)

if __name__ == "__main__":
    RECIPE.main()
```
"""

import functools

from keras_msets.models import ComplexDeepSets
from keras_msets.models import DeepSets
from keras_msets.training.recipe import Recipe
from keras_msets.training.set_recipe import SetRecipe
from keras_msets.training.set_recipe import installed_model
from keras_msets.training.tasks import DigitSumTask
from keras_msets.training.tasks import KLDivergence
from keras_msets.training.tasks.set_task import dims_text
from keras_msets.utils.validation import check_choice

# What the cards' first line says of each model family and each target.
DIGIT_SUM_MODELS = {
    "deepsets": "DeepSets (Zaheer et al. 2017; the baseline of DeBenedetto & "
    "Chiang, ICML 2020, Sec. 5.1)",
    "complex_deepsets": 'ComplexDeepSets (DeBenedetto & Chiang, "Representing '
    'Unordered Data Using Complex-Weighted Multiset Automata", ICML 2020, '
    "Sec. 5)",
}
DIGIT_SUM_TARGETS = {
    "sum": "the sum of a multiset of digits 1-9 (task 1)",
    "units_digit": "the units digit of the sum of a multiset of digits 1-9 "
    "(task 2)",
}
# The preset that the KL range presets are fine-tuned from.
KL_GENERAL_PRESET = "mst_kl_divergence"


def _digit_sum_model(model, name, unit_modulus, paper_readout=False):
    if model == "deepsets":
        return DeepSets(vocabulary_size=10, name=name)
    return ComplexDeepSets(
        vocabulary_size=10,
        num_states=50,
        unit_modulus=unit_modulus and not paper_readout,
        name=name,
    )


def digit_sum_recipe(
    name, model, target, source, unit_modulus=False, seed=None, text=""
):
    """The recipe of a digit-sum preset (`DigitSumTask(target)`).

    Args:
        name: the preset name (and the model's).
        model: `"deepsets"` (`DeepSets(vocabulary_size=10)`) or
            `"complex_deepsets"` (`ComplexDeepSets(vocabulary_size=10,
            num_states=50)`).
        target: `"sum"` or `"units_digit"`.
        source: the recipe file (`__file__`).
        unit_modulus: Complex DeepSets only: transition weights on the
            unit circle; the recipe then takes `--paper-readout`, which
            trains the paper's readout instead.
        seed: the run's seed (None: the task's).
        text: the card's own text.
    """
    check_choice("model", model, tuple(DIGIT_SUM_MODELS))
    check_choice("target", target, tuple(DIGIT_SUM_TARGETS))
    flags = ()
    if unit_modulus:
        flags = (("--paper-readout", "train the paper's readout instead"),)
    return Recipe(
        name=name,
        task=DigitSumTask(target),
        build_model=functools.partial(
            _digit_sum_model, model, name, unit_modulus
        ),
        budget={} if seed is None else {"seed": seed},
        flags=flags,
        summary=f"{DIGIT_SUM_MODELS[model]} trained to predict "
        f"{DIGIT_SUM_TARGETS[target]}.",
        text=text,
        source=source,
    )


def kl_range_recipe(
    name, dims, gaussian_dims, default_dims, text, source, steps=1500
):
    """The recipe of a KL preset for one range of d (App. B).

    The `mst_kl_divergence` model fine-tuned on `dims` only, measured on
    them beside the general model.

    Args:
        name: the preset name.
        dims: the training and test dimensions.
        gaussian_dims: the dimensions of the card's shifted-Gaussian table.
        default_dims: `(lo, hi)`, the `d` the default estimator sends to
            the preset, or None.
        text: the card's own text.
        source: the recipe file (`__file__`).
        steps: training batches.
    """
    dims = tuple(dims)
    return SetRecipe(
        name=name,
        task=KLDivergence(
            dims=dims,
            test_dims=dims,
            gaussian_dims=gaussian_dims,
            default_dims=default_dims,
            reference=(KL_GENERAL_PRESET, installed_model(KL_GENERAL_PRESET)),
        ),
        budget={"steps": steps},
        start_from=KL_GENERAL_PRESET,
        summary="The KL divergence `KL(P || Q)` from a set of samples of `P` "
        f"and one of `Q` in {dims_text(dims)}: the `{KL_GENERAL_PRESET}` "
        f"model fine-tuned on {dims_text(dims)} only.",
        text=text,
        source=source,
    )
