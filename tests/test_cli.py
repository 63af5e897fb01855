"""The `keras-msets` command line: readable zoo listings, one-line user
errors, a quiet Ctrl-C, tracebacks only for bugs or with `--debug`.

Commands run in-process through `keras_msets.cli.main`; one test runs the
installed entry point.
"""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from keras_msets import cli
from keras_msets import zoo
from keras_msets.zoo import describe
from keras_msets.zoo import registry

PRESETS = zoo.list()
NAME = "complex_deepsets_units_digit"


def _run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _one_error_line(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("keras-msets: error: "), err
    assert "Traceback" not in err
    return lines[0]


def test_zoo_list_prints_what_each_preset_does_and_its_metric(capsys):
    code, out, err = _run(capsys, "zoo", "list")
    assert code == 0 and err == ""
    lines = out.strip().splitlines()
    assert [line.split()[0] for line in lines] == PRESETS
    for name, line in zip(PRESETS, lines, strict=True):
        metadata = zoo.info(name)
        assert describe.description(metadata["card"]) in line
        assert "parameters" not in line
        assert "broken" not in line
    by_name = dict(zip(PRESETS, lines, strict=True))
    # The headline metric, with the card's own number.
    accuracy = zoo.info("fen_mr_polarity")["metrics"]["test_accuracy"]
    assert f"test accuracy {accuracy:.3f}" in by_name["fen_mr_polarity"]
    assert "accuracy 0.751" in by_name["mst_two_sample"]
    assert "0.094 at every length 5-95" in by_name["deepsets_units_digit"]
    assert "0.106 (d = 2)" in by_name["mst_kl_divergence"]
    assert "counts how many digit classes" in by_name["mst_count_shared_digits"]


MR_PRESETS = [
    name for name in PRESETS if zoo.info(name)["task"] == "mr_polarity"
]


def test_zoo_list_and_info_say_the_mr_presets_read_raw_sentences(capsys):
    assert len(MR_PRESETS) == 3, MR_PRESETS
    _, out, _ = _run(capsys, "zoo", "list")
    by_name = {line.split()[0]: line for line in out.strip().splitlines()}
    for name in PRESETS:
        note = "Takes a list of raw sentences (strings)"
        assert (note in by_name[name]) == (name in MR_PRESETS), name
    for name in MR_PRESETS:
        assert "returns [batch, 2] class probabilities" in by_name[name]
        code, out, _ = _run(capsys, "zoo", "info", name)
        fields = dict(
            line.strip().split(":", 1) for line in out.splitlines()[1:]
        )
        assert code == 0
        assert (
            fields["input"]
            .strip()
            .startswith(
                "a list of raw sentences (strings), or the int32 [batch, "
            )
        )
        assert fields["output"].strip() == (
            "[batch, 2] class probabilities (1 = positive)"
        )


def test_zoo_list_survives_a_broken_preset(tmp_path, monkeypatch, capsys):
    for name in (NAME, "deepsets_units_digit"):
        shutil.copytree(registry.presets_root() / name, tmp_path / name)
    monkeypatch.setenv(registry.ZOO_DIR_ENV, str(tmp_path))
    (tmp_path / NAME / "metadata.json").write_text("{")
    code, out, _ = _run(capsys, "zoo", "list")
    assert code == 0
    broken, fine = out.strip().splitlines()
    assert broken.startswith(NAME) and "broken:" in broken
    assert "metadata.json" in broken
    assert fine.startswith("deepsets_units_digit ")
    assert "DeepSets trained to predict the units digit" in fine
    code, _, err = _run(capsys, "zoo", "info", NAME)
    line = _one_error_line(err)
    assert code == cli.USER_ERROR and NAME in line and "metadata.json" in line


def test_zoo_info_is_a_short_summary(capsys):
    code, out, err = _run(capsys, "zoo", "info", "mst_kl_divergence")
    assert code == 0 and err == ""
    lines = out.strip().splitlines()
    assert len(lines) <= 16, out
    assert lines[0].startswith("mst_kl_divergence: A dimension-equivariant")
    fields = dict(
        line.strip().split(":", 1) for line in lines[1:] if ":" in line
    )
    fields = {key: value.strip() for key, value in fields.items()}
    assert fields["task"] == "kl_divergence"
    assert fields["input"] == (
        "{'sets': 2 x float32 [batch, 150, 2], 'masks': 2 x bool [batch, 150]}"
    )
    assert fields["output"] == "[batch, 1]"
    assert fields["metric"].startswith("mean absolute error 0.106 (d = 2)")
    assert fields["trained"].startswith("600 steps (batches of 64), 27 min")
    assert "d = 2..16" in fields["serves"]
    assert fields["loading needs"] == (
        "nothing beyond keras-msets and a backend"
    )
    assert fields["re-measure with"] == (
        "keras-msets zoo evaluate mst_kl_divergence"
    )


@pytest.mark.parametrize("name", PRESETS)
def test_zoo_info_of_every_preset(name, capsys):
    code, out, err = _run(capsys, "zoo", "info", name)
    assert code == 0 and err == ""
    assert len(out.splitlines()) <= 16
    for field in ("task:", "input:", "output:", "metric:", "trained:"):
        assert field in out, (name, field)
    assert f"keras-msets zoo evaluate {name}" in out


def test_zoo_info_names_the_extras_and_data_a_preset_needs(capsys):
    _, out, _ = _run(capsys, "zoo", "info", "fen_mr_polarity")
    assert "pip install keras-msets[data]" in out
    assert "keras-msets data fetch mr" in out
    _, out, _ = _run(capsys, "zoo", "info", "mst_count_shared_digits")
    assert "pip install keras-msets[data]" in out


def test_zoo_info_json_is_the_full_metadata(capsys):
    code, out, err = _run(capsys, "zoo", "info", NAME, "--json")
    assert code == 0 and err == ""
    metadata = zoo.info(NAME)
    del metadata["card"]
    assert json.loads(out) == metadata
    # Arrays (the stored example) take one line each, not one per number.
    assert len(out.splitlines()) < 120, len(out.splitlines())


def test_zoo_info_takes_a_preset_folder(tmp_path, capsys):
    folder = tmp_path / "mine"
    shutil.copytree(registry.presets_root() / NAME, folder)
    code, out, _ = _run(capsys, "zoo", "info", str(folder))
    assert code == 0 and out.startswith(f"{NAME}: ComplexDeepSets")
    assert f"keras-msets zoo evaluate {folder}" in out
    assert f"keras-msets zoo info {folder} --json" in out


def test_unknown_preset_is_one_line(capsys):
    code, out, err = _run(capsys, "zoo", "info", "nope")
    line = _one_error_line(err)
    assert code == cli.USER_ERROR and out == ""
    assert "name='nope'" in line and "Available presets" in line


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["zoo", "list", "--nope"], "unrecognized arguments: --nope"),
        (["zoo", "bogus"], "invalid choice: 'bogus'"),
        (["zoo", "info"], "the following arguments are required: name"),
        (["zoo", "train", NAME, "--epochs", "0"], "positive integer"),
        (["data", "fetch", "imagenet"], "invalid choice: 'imagenet'"),
        ([], "required"),
    ],
)
def test_a_bad_command_line_is_one_line(argv, expected, capsys):
    code, out, err = _run(capsys, *argv)
    line = _one_error_line(err)
    assert code == cli.USER_ERROR and out == ""
    assert expected in line and "--help" in line


def test_help_exits_zero(capsys):
    code, out, _ = _run(capsys, "zoo", "--help")
    assert code == 0 and "list" in out


def test_a_broken_preset_folder_is_one_line(tmp_path, capsys):
    folder = tmp_path / "broken"
    shutil.copytree(registry.presets_root() / NAME, folder)
    (folder / "config.json").write_text("{}")
    (folder / "metadata.json").unlink()
    code, _, err = _run(capsys, "zoo", "info", str(folder))
    line = _one_error_line(err)
    assert code == cli.USER_ERROR and "metadata.json" in line
    code, _, err = _run(capsys, "zoo", "info", str(tmp_path / "absent"))
    line = _one_error_line(err)
    assert code == cli.USER_ERROR and "no preset folder" in line


def _evaluate_raising(monkeypatch, error):
    def evaluate(*args, **kwargs):
        raise error

    monkeypatch.setattr(zoo, "evaluate", evaluate)


def test_a_missing_optional_package_names_the_extra(monkeypatch, capsys):
    error = ModuleNotFoundError("No module named 'sklearn'", name="sklearn")
    _evaluate_raising(monkeypatch, error)
    code, _, err = _run(capsys, "zoo", "evaluate", "mst_count_shared_digits")
    line = _one_error_line(err)
    assert code == cli.USER_ERROR
    assert "sklearn" in line and "pip install keras-msets[data]" in line


def test_an_import_error_with_its_own_hint_is_kept(monkeypatch, capsys):
    hint = "needs TensorFlow. Install it with `pip install tensorflow`."
    _evaluate_raising(monkeypatch, ImportError(hint, name="tensorflow"))
    code, _, err = _run(capsys, "zoo", "evaluate", NAME)
    assert _one_error_line(err) == f"keras-msets: error: {hint}"
    assert code == cli.USER_ERROR


def test_missing_data_is_one_line(monkeypatch, capsys):
    error = FileNotFoundError(
        "The MR sentences are not here; run `keras-msets data fetch mr`."
    )
    _evaluate_raising(monkeypatch, error)
    code, _, err = _run(capsys, "zoo", "evaluate", "fen_mr_polarity")
    line = _one_error_line(err)
    assert code == cli.USER_ERROR and "keras-msets data fetch mr" in line


def test_a_preset_without_metrics_evaluates(monkeypatch, capsys):
    monkeypatch.setattr(zoo, "info", lambda name: {"name": name})
    monkeypatch.setattr(zoo, "evaluate", lambda *a, **k: {"accuracy": 0.5})
    code, out, err = _run(capsys, "zoo", "evaluate", NAME)
    assert code == 0 and err == "" and '"accuracy": 0.5' in out


def test_ctrl_c_exits_quietly_with_130(monkeypatch, capsys):
    _evaluate_raising(monkeypatch, KeyboardInterrupt())
    code, out, err = _run(capsys, "zoo", "evaluate", NAME)
    assert code == cli.INTERRUPTED == 130
    assert err == "" and "Traceback" not in out


def test_debug_shows_the_traceback(monkeypatch, capsys):
    with pytest.raises(ValueError, match="Unknown zoo preset"):
        cli.main(["--debug", "zoo", "info", "nope"])
    with pytest.raises(ValueError, match="Unknown zoo preset"):
        cli.main(["zoo", "info", "nope", "--debug"])
    _evaluate_raising(monkeypatch, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        cli.main(["zoo", "evaluate", NAME, "--debug"])


def test_a_bug_keeps_its_traceback(monkeypatch):
    _evaluate_raising(monkeypatch, TypeError("a bug"))
    with pytest.raises(TypeError, match="a bug"):
        cli.main(["zoo", "evaluate", NAME])


@pytest.mark.slow
def test_the_entry_point(tmp_path):
    env = dict(os.environ, KERAS_BACKEND=os.environ["KERAS_BACKEND"])
    result = subprocess.run(
        [sys.executable, "-m", "keras_msets.cli", "zoo", "info", "nope"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == cli.USER_ERROR
    # TensorFlow's C++ start-up logging (absl, before Python can silence
    # it) shares stderr; it is not the command line's.
    ours = [
        line
        for line in result.stderr.splitlines()
        if not re.match(r"(WARNING: All log messages|[IWE]\d{4} )", line)
    ]
    _one_error_line("\n".join(ours))
    assert result.stdout == ""
