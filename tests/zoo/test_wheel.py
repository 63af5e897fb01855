"""The presets ship in the wheel and load offline from a non-editable
install in a fresh virtual environment.

Backend-independent: the wheel's files are the same whatever the backend,
and tests/zoo/test_registry.py checks on every backend that those files
(in the repository) reproduce each preset's stored outputs.
"""

import json
import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_msets import zoo

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.backend_independent

# Runs inside the fresh environment: blocks the network first, then checks
# that keras_msets comes from that environment and every preset loads.
CHECK = textwrap.dedent(
    """
    import json, pathlib, socket, sys

    def _blocked(*args, **kwargs):
        raise OSError("network blocked by the wheel test")

    socket.socket.connect = _blocked
    socket.create_connection = _blocked
    socket.getaddrinfo = _blocked

    import numpy as np
    import keras_msets
    from keras_msets import zoo
    from keras_msets.zoo import registry

    from keras_msets.estimators import out_of_distribution
    from keras_msets.training import card

    out = {"file": keras_msets.__file__, "presets": zoo.list(), "outputs": {}}
    # Package data beside the modules: the tail thresholds, the card
    # template.
    thresholds = out_of_distribution.TAIL_THRESHOLDS_PATH
    out["tail_thresholds"] = thresholds.is_file()
    training_dir = pathlib.Path(card.__file__).parent
    out["card_templates"] = sorted(p.name for p in training_dir.glob("*.md"))
    for name in zoo.list():
        example = zoo.info(name)["example"]
        x = registry.example_input(example)
        model = zoo.load(name)
        out["outputs"][name] = np.asarray(
            model.predict_on_batch(x)
        ).tolist()
    print("RESULT" + json.dumps(out))
    """
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(REPO),
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--wheel-dir",
            str(out),
            "--quiet",
        ],
        check=True,
        cwd=out,
    )
    (path,) = out.glob("keras_msets-*.whl")
    return path


@pytest.mark.slow
def test_wheel_ships_presets_and_loads_offline(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True
    )
    python = venv / "bin" / "python"
    site = subprocess.run(
        [
            str(python),
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # Not editable: pip installs the wheel's files into the new environment.
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "--target",
            site,
            str(wheel),
            "--quiet",
        ],
        check=True,
    )
    # The dependencies (keras, numpy, the backends) come from the test
    # environment; its .pth files are not processed, so the editable
    # keras_msets install there is invisible.
    deps = sysconfig.get_paths()["purelib"]
    Path(site, "_test_deps.pth").write_text(deps + "\n")

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["KERAS_BACKEND"] = keras.backend.backend()
    result = subprocess.run(
        [str(python), "-c", CHECK],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    line = [s for s in result.stdout.splitlines() if s.startswith("RESULT")]
    out = json.loads(line[-1][len("RESULT") :])
    assert out["file"].startswith(str(venv)), out["file"]
    assert out["presets"] == zoo.list()
    assert out["tail_thresholds"]
    assert out["card_templates"] == ["card_template.md"]
    # The outputs stored when each preset was saved (on its training
    # backend): test_registry checks that every backend reproduces them
    # from the repository's files; here the installed wheel's must too.
    for name in zoo.list():
        expected = zoo.info(name)["example"]["output"]
        np.testing.assert_allclose(
            out["outputs"][name], expected, atol=1e-5, rtol=1e-5
        )
