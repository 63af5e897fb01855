"""Recipe of the `complex_deepsets_units_digit` preset: re-run it with

    KERAS_BACKEND=jax python zoo/complex_deepsets_units_digit/recipe.py

(a new folder under runs/; `--paper-readout` trains the paper's readout).
"""

from keras_msets.models import ComplexDeepSets
from keras_msets.training import Recipe
from keras_msets.training.tasks import DigitSumTask

NAME = "complex_deepsets_units_digit"

RECIPE = Recipe(
    name=NAME,
    task=DigitSumTask("units_digit"),
    build_model=lambda paper_readout=False: ComplexDeepSets(
        vocabulary_size=10,
        num_states=50,
        unit_modulus=not paper_readout,
        name=NAME,
    ),
    # Seed 0 broke from length 300 on (0% at 500); seed 1 is exact up to
    # 1000 (benchmarks/RESULTS.md).
    budget={"seed": 1},
    flags=(("--paper-readout", "train the paper's readout instead"),),
    summary='ComplexDeepSets (DeBenedetto & Chiang, "Representing Unordered '
    'Data Using Complex-Weighted Multiset Automata", ICML 2020, Sec. 5) '
    "trained to predict the units digit of the sum of a multiset of digits "
    "1-9 (task 2).",
    text="Variant: `unit_modulus=True`, transition weights on the unit "
    "circle, read out as `[cos, sin]` only (not the paper's readout, which "
    "also sees the sum of log-moduli and, trained by this recipe, was right "
    "only up to length 70; see the `ComplexDeepSets` docstring and "
    "benchmarks/RESULTS.md).",
    source=__file__,
)

if __name__ == "__main__":
    RECIPE.main()
