"""Recipe of the `complex_deepsets_units_digit` preset.

Complex DeepSets (DeBenedetto & Chiang, Sec. 5.1; 50 stored states) trained
on task 2 (units digit of a sum of digits 1-9) by the paper's recipe in
`keras_msets.zoo.digit_sum_recipe`, with unit-modulus transition weights
(`unit_modulus=True`, see `ComplexDeepSets`): the paper's readout, which
also sees the sum of log-moduli, reached 100% only up to length 70.
Re-run it end to end with

    KERAS_BACKEND=jax python zoo/complex_deepsets_units_digit/recipe.py

or `keras-msets zoo train complex_deepsets_units_digit`; it writes the
preset folder (default: next to this file, replacing the shipped preset).
`--paper-readout --output-dir DIR` trains the paper's readout instead (the
run reported in benchmarks/RESULTS.md used seed 0).
"""

from pathlib import Path

from keras_msets.models import ComplexDeepSets
from keras_msets.zoo import digit_sum_recipe

NAME = "complex_deepsets_units_digit"
TASK = "units_digit"


def build_model(paper_readout=False):
    return ComplexDeepSets(
        vocabulary_size=10,
        num_states=50,
        unit_modulus=not paper_readout,
        name=NAME,
    )


# Seed 1: with seed 0 the same recipe was exact up to length 95 but learned
# a pair of size-measuring states that break it from length 300 on (0% at
# 500); seed 1 is exact up to 1000 (benchmarks/RESULTS.md).
SEED = 1

evaluate, train = digit_sum_recipe.recipe_functions(
    NAME, TASK, build_model, Path(__file__).parent, seed=SEED
)


if __name__ == "__main__":
    digit_sum_recipe.run_from_command_line(
        train,
        __doc__.splitlines()[0],
        flags=[("--paper-readout", "train the paper's readout instead")],
    )
