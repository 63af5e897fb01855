"""The Fig. 2 (mutual information) benchmark runs end to end on a tiny model.

The `mst_mutual_information` preset may not exist where this runs, so an
untrained tiny model is passed in; what is checked does not depend on
training: the files, the true-MI column against the closed form, and
finite KSG errors.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from keras_msets.testing import load_script
from keras_msets.training.tasks import mst

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "mst_figure2.py"
TINY = {
    "latent_dim": 4,
    "ff_dim": 4,
    "num_blocks": 1,
    "num_heads": 1,
    "pooling": "mean",
    "decoder_units": [],
}
# ONE_BACKEND_RUNS: the script runs and trains (through Keras's `fit`)
# only the package's models, each checked on every backend in
# tests/layers, tests/models and tests/training; its runs here check what
# it writes, measures and resumes, so `make test` runs them on one backend.


def _load_script():
    return load_script(SCRIPT)


@pytest.mark.slow
@pytest.mark.backend_independent  # ONE_BACKEND_RUNS
def test_mst_figure2_runs_on_an_injected_tiny_model(tmp_path):
    script = _load_script()
    model = mst.build_model("mutual_information", **TINY)
    rhos, pairs, dims = (-0.6, 0.3), 2, (2, 3)
    argv = ["--output", str(tmp_path), "--pairs", str(pairs)]
    argv += ["--dims", *map(str, dims), "--rhos", *map(str, rhos)]
    argv += ["--joint-permutations", "2"]
    joint = mst.build_model("mutual_information_joint", **TINY)
    results = script.main(argv, model=model, joint_model=joint)

    assert (tmp_path / f"{script.NAME}.png").stat().st_size > 0
    saved = json.loads((tmp_path / f"{script.NAME}.json").read_text())
    assert [row["d"] for row in saved["dims"]] == list(dims)
    for row in saved["dims"]:
        d = row["d"]
        rho = np.asarray(row["rho"])
        np.testing.assert_array_equal(np.sort(rho), np.repeat(rhos, pairs))
        np.testing.assert_allclose(
            row["true_mi"], -0.5 * d * np.log(1.0 - rho**2), rtol=1e-12
        )
        assert all(100 <= n <= 150 for n in row["set_size"])
        ksg = np.asarray(row["ksg_mi"])
        assert ksg.shape == (len(rhos) * pairs,)
        assert np.all(np.isfinite(ksg - np.asarray(row["true_mi"])))
        model_mi = np.asarray(row["model_mi"])
        assert np.all(np.isfinite(model_mi)) and np.all(model_mi >= 0)
        per_rho = row["per_rho"]
        assert per_rho["rho"] == sorted(rhos)
        for key in ("ksg_abs_error_mean", "model_abs_error_mean"):
            assert len(per_rho[key]) == len(rhos)
            assert np.all(np.isfinite(per_rho[key]))
        expected = np.mean(np.abs(ksg - np.asarray(row["true_mi"])))
        np.testing.assert_allclose(row["summary"]["ksg_mae"], expected)
        # The joint curve is what the public function returns in its
        # joint mode, averaged over the permutations asked for.
        from keras_msets.estimators.pretrained import mutual_information

        x_sets, y_sets, _, _ = script.figure_data(
            d, sorted(rhos), pairs, script.SEED + d
        )
        np.testing.assert_allclose(
            row["joint_mi"],
            mutual_information(
                x_sets, y_sets, model=joint, mode="joint", permutations=2
            ),
            rtol=1e-5,
            atol=1e-6,
        )
        assert len(per_rho["joint_abs_error_mean"]) == len(rhos)
    assert "passed in" in saved["settings"]["model"]
    assert "passed in" in saved["settings"]["joint_model"]
    assert saved["settings"]["joint_permutations"] == 2
    assert "mean of 2 permutations" in script.markdown_table(saved)
    assert "joint MAE" in script.markdown_table(saved)
    # Left out on request, and outside the joint preset's d = 1..8.
    assert script.resolve_joint_model("none") == (None, None)
    row = script.run_dim(9, (0.5,), 1, model, 64, seed=1, joint_model=joint)
    assert "joint_mi" not in row and "joint_mae" not in row["summary"]
    assert results["settings"]["backend"] == saved["settings"]["backend"]


@pytest.mark.slow
@pytest.mark.backend_independent  # ONE_BACKEND_RUNS
def test_model_estimates_are_what_the_public_function_returns(tmp_path):
    """The figure shows `mutual_information(x, y, model=...)` itself."""
    from keras_msets.estimators.pretrained import mutual_information

    script = _load_script()
    model = mst.build_model("mutual_information", **TINY)
    row = script.run_dim(2, (0.5,), 2, model, 64, seed=script.SEED + 2)
    x_sets, y_sets, _, _ = script.figure_data(2, (0.5,), 2, script.SEED + 2)
    for i, (x, y) in enumerate(zip(x_sets, y_sets, strict=True)):
        # Same numbers up to float32 rounding (the figure runs the pairs in
        # one padded batch, the function one pair at a time).
        np.testing.assert_allclose(
            row["model_mi"][i],
            mutual_information(x, y, model=model),
            rtol=1e-5,
            atol=1e-6,
        )


def test_the_default_model_is_the_papers_split_preset():
    # `mutual_information(model=None)` sends d <= 8 to the joint preset
    # (ours); the figure names the paper's preset so that it stays the
    # paper's model at every d.
    script = _load_script()
    assert script.resolve_model(None) == (
        "mst_mutual_information",
        "preset mst_mutual_information",
    )
