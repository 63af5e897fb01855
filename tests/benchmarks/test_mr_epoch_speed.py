"""The MR epoch benchmark runs end to end in smoke mode."""

import json
import math
from pathlib import Path

import keras
import pytest

from keras_msets.testing import load_script

SCRIPT = (
    Path(__file__).resolve().parents[2] / "benchmarks" / "mr_epoch_speed.py"
)


@pytest.mark.skipif(
    keras.backend.backend() != "torch",
    reason="a check of the script, not of a backend (torch is the fastest)",
)
def test_mr_epoch_speed_smoke(tmp_path):
    script = load_script(SCRIPT)
    output = tmp_path / "epochs.json"
    script.main(["--smoke", "--architectures", "cnn", "--output", str(output)])
    saved = json.loads(output.read_text())
    assert saved["backend"] == keras.backend.backend()
    assert saved["command"].endswith(
        "benchmarks/mr_epoch_speed.py --smoke --architectures cnn "
        f"--output {output}"
    )
    assert len(saved["load_average_start"]) == 3
    assert len(saved["load_average_rounds"]) == saved["settings"]["repeats"]
    (row,) = saved["rows"]
    assert row["architecture"] == "cnn"
    # Two real tables (amplitudes, frequencies) against one of PE: the
    # complex-order classifier has more parameters.
    assert row["params_complex_order"] > row["params_pe"]
    for name in ("complex_order", "pe"):
        assert all(
            math.isfinite(t) and t > 0 for t in row[f"seconds_{name}_rounds"]
        )
    assert math.isclose(
        row["ratio"], row["seconds_complex_order"] / row["seconds_pe"]
    )


def test_bad_arguments_name_the_option():
    script = load_script(SCRIPT)
    with pytest.raises(SystemExit):
        script.parse_args(["--repeats", "0"])
    args = script.parse_args(["--smoke"])
    assert (args.repeats, args.batch_size, args.sequence_length) == (1, 4, 6)
    backend = keras.backend.backend()
    assert args.output.name == f"mr_epoch_speed_smoke_{backend}.json"
