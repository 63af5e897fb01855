"""Tests of the golden-output machinery, and of the checked-in goldens."""

import json
import os
import textwrap

import keras
import numpy as np
import pytest

from keras_msets.testing import TestCase
from keras_msets.testing import golden

BACKEND = keras.backend.backend()
REPO_CASES = os.path.join(
    os.path.dirname(__file__), os.pardir, "golden", "cases.py"
)
# Every case of tests/golden/cases.py, so a new case cannot be forgotten.
REPO_NAMES = tuple(sorted(golden.load_cases(REPO_CASES)))


def tiny_case():
    rng = np.random.default_rng(3)
    inputs = rng.normal(size=(2, 3, 4)).astype("float32")
    return lambda: keras.layers.Dense(2, name="tiny"), inputs


CASES = {"tiny": tiny_case}


def _corrupt_outputs(path):
    with np.load(path) as data:
        contents = {k: data[k] for k in data.files}
    template = json.loads(str(contents["metadata"]))["template"]
    key = f"array_{template['outputs']['array']}"
    contents[key] = contents[key] + 1e-3
    with open(path, "wb") as f:
        np.savez(f, **contents)


class GoldenMachineryTest(TestCase):
    def test_write_then_check(self):
        directory = self.get_temp_dir()
        written = golden.write_golden("tiny", cases=CASES, directory=directory)
        self.assertEqual(written, [os.path.join(directory, "tiny.npz")])
        golden.check_golden("tiny", cases=CASES, directory=directory)
        self.assert_golden("tiny", cases=CASES, directory=directory)
        stored = golden.load_golden("tiny", directory)
        self.assertEqual(stored["metadata"]["backend"], BACKEND)
        self.assertEqual(len(stored["weights"]), 2)
        self.assertEqual(stored["weight_paths"], ["tiny/kernel", "tiny/bias"])
        self.assertAllEqual(stored["inputs"], tiny_case()[1])

    def test_weights_do_not_depend_on_backend_rng(self):
        directory = self.get_temp_dir()
        golden.write_golden("tiny", cases=CASES, directory=directory)
        first = golden.load_golden("tiny", directory)["weights"]
        keras.utils.set_random_seed(99)
        golden.write_golden(
            "tiny", cases=CASES, directory=directory, overwrite=True
        )
        second = golden.load_golden("tiny", directory)["weights"]
        self.assertAllEqual(first, second)

    def test_corrupted_output_fails(self):
        directory = self.get_temp_dir()
        golden.write_golden("tiny", cases=CASES, directory=directory)
        _corrupt_outputs(os.path.join(directory, "tiny.npz"))
        with self.assertRaisesRegex(AssertionError, "does not reproduce"):
            golden.check_golden("tiny", cases=CASES, directory=directory)

    def test_missing_file_fails_with_command(self):
        directory = self.get_temp_dir()
        with self.assertRaises(AssertionError) as raised:
            golden.check_golden("tiny", cases=CASES, directory=directory)
        message = str(raised.exception)
        self.assertIn(
            "python -m keras_msets.testing.golden write tiny", message
        )
        self.assertIn(f"--dir {directory}", message)
        self.assertFalse(os.listdir(directory))  # the check never writes

    def test_refuses_to_overwrite(self):
        directory = self.get_temp_dir()
        golden.write_golden("tiny", cases=CASES, directory=directory)
        with pytest.raises(FileExistsError, match="--overwrite"):
            golden.write_golden("tiny", cases=CASES, directory=directory)

    def test_changed_case_inputs_fail(self):
        directory = self.get_temp_dir()
        golden.write_golden("tiny", cases=CASES, directory=directory)

        def changed():
            build, inputs = tiny_case()
            return build, inputs + 1.0

        with self.assertRaisesRegex(AssertionError, "no longer match"):
            golden.check_golden(
                "tiny", cases={"tiny": changed}, directory=directory
            )

    def test_changed_weights_fail(self):
        directory = self.get_temp_dir()
        golden.write_golden("tiny", cases=CASES, directory=directory)

        def no_bias():
            _, inputs = tiny_case()
            return lambda: keras.layers.Dense(2, use_bias=False), inputs

        with self.assertRaisesRegex(AssertionError, "1 weights"):
            golden.check_golden(
                "tiny", cases={"tiny": no_bias}, directory=directory
            )

    def test_cross_backend_requires_every_backend(self):
        directory = self.get_temp_dir()
        written = golden.write_golden(
            "tiny", cases=CASES, directory=directory, saved=True
        )
        self.assertEqual(len(written), 2)  # the .npz, then this backend's file
        self.assertTrue(written[1].endswith(f"saved/{BACKEND}/tiny.keras"))
        golden.check_cross_backend_load(
            "tiny", cases=CASES, directory=directory, backends=(BACKEND,)
        )
        with self.assertRaises(AssertionError) as raised:
            self.assert_cross_backend_load(
                "tiny", cases=CASES, directory=directory
            )
        for other in set(golden.BACKENDS) - {BACKEND}:
            self.assertIn(
                f"KERAS_BACKEND={other} python -m", str(raised.exception)
            )
        # --saved again refuses to replace the .keras file.
        with pytest.raises(FileExistsError):
            golden.write_golden(
                "tiny", cases=CASES, directory=directory, saved=True
            )

    def test_cross_backend_detects_wrong_file(self):
        directory = self.get_temp_dir()
        golden.write_golden(
            "tiny", cases=CASES, directory=directory, saved=True
        )
        _corrupt_outputs(os.path.join(directory, "tiny.npz"))
        with self.assertRaisesRegex(AssertionError, "gives different"):
            golden.check_cross_backend_load(
                "tiny", cases=CASES, directory=directory, backends=(BACKEND,)
            )

    def test_command_line_with_cases_file(self):
        directory = self.get_temp_dir()
        cases_path = os.path.join(directory, "my_cases.py")
        with open(cases_path, "w") as f:
            f.write(
                textwrap.dedent(
                    """
                    import keras
                    import numpy as np

                    from keras_msets.testing import golden_case


                    @golden_case("cli_case")
                    def cli_case():
                        x = np.random.default_rng(0).normal(size=(2, 3))
                        x = x.astype("float32")
                        return lambda: keras.layers.Dense(4), x
                    """
                )
            )
        out = os.path.join(directory, "out")
        argv = ["write", "--cases", cases_path, "--dir", out]
        self.assertEqual(golden.main(argv), 0)
        self.assertTrue(os.path.exists(os.path.join(out, "cli_case.npz")))
        self.assertEqual(golden.main(argv), 1)  # refuses to overwrite
        self.assertEqual(golden.main(argv + ["--overwrite"]), 0)
        golden.check_golden("cli_case", cases=cases_path, directory=out)


# The goldens in tests/golden: every backend reproduces them, and loads the
# `.keras` files saved on every backend. One test per case, so that the test
# processes share them out.


@pytest.mark.parametrize("name", REPO_NAMES)
def test_checked_in_golden_outputs(name):
    golden.check_golden(name, cases=REPO_CASES)


# Slow: three `.keras` loads per case; in `make test-fast` the golden
# outputs above show that the backends agree, and each layer's saving test
# loads the `.keras` file of its own backend.
@pytest.mark.slow
@pytest.mark.parametrize("name", REPO_NAMES)
def test_checked_in_cross_backend_load(name):
    golden.check_cross_backend_load(name, cases=REPO_CASES)
