"""`keras_msets.stats`: the preprocessing by name and the layering."""

import ast
from pathlib import Path

import numpy as np
import pytest

from keras_msets import estimators
from keras_msets import stats
from keras_msets.estimators import pretrained
from keras_msets.stats import preprocessing


def _pairs(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2, 12, 3)) @ rng.normal(size=(3, 3)) + 1.0
    y = rng.normal(size=(2, 15, 3)) + 0.5
    return x, y


@pytest.mark.parametrize(
    "name, function, options",
    [
        ("whiten", preprocessing.whiten_pairs, {}),
        (
            "whiten_third_moment",
            preprocessing.whiten_pairs,
            {"sign": "third_moment"},
        ),
        ("standardize", preprocessing.standardize_pairs, {}),
    ],
)
def test_preprocess_by_name(name, function, options):
    x, y = _pairs()
    got_x, got_y = stats.preprocess(name, x, y)
    want_x, want_y = function(x, y, **options)
    assert got_x.dtype == np.float32 and got_y.dtype == np.float32
    np.testing.assert_allclose(got_x, want_x, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got_y, want_y, rtol=1e-6, atol=1e-6)
    # An estimator's spec is read by its `preprocessing` attribute.
    spec = type("Spec", (), {"preprocessing": name})()
    np.testing.assert_array_equal(stats.preprocess(spec, x, y)[0], got_x)


def test_preprocess_refuses_an_unknown_name():
    x, y = _pairs()
    with pytest.raises(ValueError, match="`preprocessing` must be one of"):
        stats.preprocess("scale", x, y)


def test_the_estimators_reexport_the_moved_names():
    assert pretrained.whiten_pairs is stats.whiten_pairs
    assert pretrained.standardize_pairs is stats.standardize_pairs
    assert pretrained.joint_and_product_sets is stats.joint_and_product_sets
    assert estimators.knn_kl_divergence is stats.knn_kl_divergence
    assert estimators.ksg_mutual_information is stats.ksg_mutual_information


# The parts below the estimators (imports go one way only).
LOWER_PARTS = ("zoo", "training", "models", "layers", "data", "stats", "ops")
PACKAGE = Path(__file__).resolve().parents[2] / "keras_msets"


def _imported_modules(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            for alias in node.names:
                yield f"{node.module}.{alias.name}"


def test_no_lower_layer_imports_the_estimators():
    """Nothing in zoo, training, models, layers, data, stats, ops or utils
    imports the estimators, the command line or the demo, and no product
    code imports `keras_msets.testing` (every import statement, also
    those inside functions)."""
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        part = path.relative_to(PACKAGE).parts[0]
        for module in _imported_modules(path):
            upward = part in (*LOWER_PARTS, "utils") and module.startswith(
                (
                    "keras_msets.estimators",
                    "keras_msets.cli",
                    "keras_msets.demo",
                )
            )
            testing = part != "testing" and module.startswith(
                "keras_msets.testing"
            )
            if upward or testing:
                wrong.append(f"{path.relative_to(PACKAGE)}: {module}")
    assert wrong == []
    assert (PACKAGE / "zoo" / "registry.py").is_file()  # the walk saw files
