"""The estimators warn once per process per preset, and only where the
warning applies: set sizes where the preset's measured error grows, and
dimensions where its card shows no skill."""

import json
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest

import keras_msets
from keras_msets import estimators
from keras_msets import zoo
from keras_msets.estimators import out_of_distribution
from keras_msets.estimators import routing
from keras_msets.zoo import registry

RANGES = json.loads(out_of_distribution.SET_SIZE_RANGES_PATH.read_text())


def _set_size_warnings(caught):
    return [w for w in caught if "trained on sets" in str(w.message)]


def _call(function, n, d, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = 0.6 * x + 0.8 * rng.normal(size=(n, d))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        function(x, y)
    return caught


def test_the_measured_ranges_belong_to_the_shipped_weights():
    assert set(RANGES["presets"]) <= set(zoo.list())
    for name, entry in RANGES["presets"].items():
        sha = zoo.info(name)["files_sha256"]["model.weights.h5"]
        assert entry["weights_sha256"] == sha, name
        low, high = entry["trained"]
        assert entry["low"] <= low and entry["high"] >= high, name
        assert out_of_distribution.measured_set_sizes(name) == (
            entry["low"],
            entry["high"],
        )
        # Every size outside the range was measured to grow, or lies
        # beyond the measured sizes.
        for by_size in entry["measured"].values():
            for n, row in by_size.items():
                inside = entry["low"] <= int(n) <= entry["high"]
                assert inside or row["grows"] or int(n) < low, (name, n)


def test_other_weights_have_no_measured_range(tmp_path):
    name = "mst_kl_divergence"
    folder = tmp_path / name
    shutil.copytree(registry.presets_root() / name, folder)
    metadata = json.loads((folder / "metadata.json").read_text())
    metadata["files_sha256"]["model.weights.h5"] = "0" * 64
    (folder / "metadata.json").write_text(json.dumps(metadata))
    assert out_of_distribution.measured_set_sizes(folder) is None
    assert out_of_distribution.measured_set_sizes("nope") is None


# Whether a call warns depends on its set sizes only, not on the
# backend's outputs (checked per backend by tests/zoo/test_registry.py).
@pytest.mark.backend_independent
@pytest.mark.parametrize("name", sorted(RANGES["presets"]))
def test_no_warning_at_sizes_where_the_error_does_not_grow(name):
    entry = RANGES["presets"][name]
    spec = routing.preset_spec(name)
    d = int(sorted(entry["measured"])[0][1:])
    low, high = entry["low"], entry["high"]
    trained_low, trained_high = entry["trained"]

    def function(x, y):
        return getattr(estimators, spec.estimator)(x, y, model=name)

    assert not _set_size_warnings(_call(function, trained_high, d))
    if high > trained_high:
        # Outside the trained sizes, inside the measured ones: silent
        # (at most 300 points, to stay fast).
        n = min(high, 300)
        assert not _set_size_warnings(_call(function, n, d))
    if low < trained_low:
        assert not _set_size_warnings(_call(function, low, d))
    if high < 1000:
        caught = _set_size_warnings(_call(function, high + 50, d))
        assert len(caught) == 1
        message = str(caught[0].message)
        assert f"grows outside {low}-{high} points" in message
        assert f"trained on sets of {trained_low}-{trained_high}" in message
        # Once per process and preset.
        assert not _set_size_warnings(_call(function, high + 50, d))


def test_small_sets_warn_where_the_error_grows():
    low, _ = out_of_distribution.measured_set_sizes("mst_kl_divergence")
    caught = _set_size_warnings(
        _call(
            lambda x, y: estimators.kl_divergence(
                x, y, model="mst_kl_divergence"
            ),
            low - 1,
            8,
        )
    )
    assert len(caught) == 1 and f"these have {low - 1}-{low - 1}" in str(
        caught[0].message
    )


def test_mutual_information_at_d_10_warns_about_nothing():
    caught = _call(estimators.mutual_information, 130, 10)
    assert not [w for w in caught if issubclass(w.category, UserWarning)]


def test_far_outside_the_training_data_still_warns():
    rng = np.random.default_rng(3)
    x = rng.standard_t(1, size=(130, 4))
    y = rng.standard_t(1, size=(130, 4))
    with pytest.warns(UserWarning, match="heavier tails"):
        estimators.kl_divergence(x, y, model="mst_kl_divergence")
    # Every call, not once: it is about the data, not the preset.
    with pytest.warns(UserWarning, match="heavier tails"):
        estimators.kl_divergence(x, y, model="mst_kl_divergence")


@pytest.mark.slow
def test_import_keras_msets_reaches_the_estimators_lazily(tmp_path):
    code = (
        "import sys, keras\n"
        "before = set(sys.modules)\n"
        "import keras_msets\n"
        "assert 'keras_msets.estimators' not in sys.modules\n"
        "new = set(sys.modules) - before\n"
        "heavy = ('sklearn', 'matplotlib', 'keras_hub', "
        "'tensorflow_datasets', 'pyarrow')\n"
        "print(sorted(m for m in new if m.split('.')[0] in heavy))\n"
        "print(keras_msets.estimators.kl_divergence.__name__)\n"
        "print('estimators' in dir(keras_msets))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["[]", "kl_divergence", "True"]
    assert keras_msets.estimators is estimators
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        keras_msets.nope  # noqa: B018
