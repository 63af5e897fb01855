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


def test_tail_statistic_matches_scipy_kurtosis_and_ignores_padding():
    from scipy import stats

    from keras_msets.stats.preprocessing import tail_statistic

    rng = np.random.default_rng(11)
    x = rng.standard_t(2, size=(3, 40, 4))
    y = rng.normal(size=(3, 30, 4))
    x_mask = np.arange(40) < np.array([40, 25, 33])[:, None]
    y_mask = np.arange(30) < np.array([30, 30, 12])[:, None]
    padded_x = np.where(x_mask[..., None], x, 1e6)
    padded_y = np.where(y_mask[..., None], y, -1e6)
    got = tail_statistic(padded_x, padded_y, x_mask, y_mask)
    expected = [
        max(
            stats.kurtosis(x[b][x_mask[b]], fisher=False).max(),
            stats.kurtosis(y[b][y_mask[b]], fisher=False).max(),
        )
        for b in range(3)
    ]
    np.testing.assert_allclose(got, expected, rtol=1e-10)


def test_orient_to_x_flips_the_negatively_correlated_coordinates():
    from keras_msets.stats.preprocessing import orient_to_x

    rng = np.random.default_rng(12)
    x = rng.normal(size=(50, 3))
    y = x * np.array([0.8, -0.8, 0.5]) + rng.normal(size=(50, 3))
    oriented = orient_to_x(x, y)
    for k in range(3):
        corr = np.corrcoef(x[:, k], y[:, k])[0, 1]
        np.testing.assert_array_equal(oriented[:, k], np.sign(corr) * y[:, k])
        assert np.corrcoef(x[:, k], oriented[:, k])[0, 1] >= 0
    np.testing.assert_array_equal(orient_to_x(x, -y), oriented)
