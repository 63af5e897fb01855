"""Package list for setuptools; everything else is in pyproject.toml.

The presets live in the top-level `zoo/` folder and are installed as the
package `keras_msets._presets`; each preset folder (it holds `recipe.py`)
is a sub-package whose data files (config, weights, metadata, card) ship
with it. Listing them here keeps setuptools from warning about data folders
that look like packages.
"""

from pathlib import Path

from setuptools import find_packages
from setuptools import setup

HERE = Path(__file__).parent
PRESETS = sorted(
    p.name for p in (HERE / "zoo").iterdir() if (p / "config.json").is_file()
)
PACKAGES = (
    sorted(find_packages(include=["keras_msets", "keras_msets.*"]))
    + ["keras_msets._presets"]
    + [f"keras_msets._presets.{name}" for name in PRESETS]
)

setup(
    packages=PACKAGES,
    package_dir={"keras_msets._presets": "zoo"},
    package_data={
        # The model card template of keras_msets.training.card.
        "keras_msets.training": ["*.md"],
        # The tail thresholds of keras_msets.estimators.out_of_distribution.
        "keras_msets.estimators": ["*.json"],
        **{
            f"keras_msets._presets.{name}": ["*.json", "*.h5", "*.md", "*.txt"]
            for name in PRESETS
        },
    },
)
