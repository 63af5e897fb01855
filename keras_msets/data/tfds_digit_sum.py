"""TensorFlow Datasets builder for the digit-sum tasks.

`DigitSum` is a `tfds.core.GeneratorBasedBuilder` whose splits are written
from the numpy generators of `keras_msets.data.digit_sum`: nothing is
downloaded, so `download_and_prepare()` works offline, and the examples
are exactly those of `digit_sum_train_dev` and `digit_sum_test_sets` with
the config's seeds, in the same order.

Configs: `"sum"` (task 1) and `"units_digit"` (task 2) at the paper's size
(99,000 train / 1,000 dev examples of lengths 1-50, and 10,000 test
examples of each length 5, 10, ..., 95), plus `"sum_tiny"` and
`"units_digit_tiny"` (a few hundred examples, for tests and smoke runs).
Splits: `"train"`, `"dev"` and `"test_len_5"`, ..., `"test_len_95"`.
Features: `"digits"` (int32, variable length, no padding stored) and
`"label"` (float32 scalar).

Importing this module does not import TensorFlow or TFDS; the classes are
defined on first use (`digit_sum_builder()`, `load_digit_sum_tfds()`, or
attribute access `tfds_digit_sum.DigitSum` / `.DigitSumConfig`), and the
builder is registered in TFDS under the name `"digit_sum"` at that moment.

How a new synthetic task follows this pattern:

1. Write the numpy generator first (`keras_msets/data/<task>.py`): explicit
   `seed`, `np.random.default_rng`, ValueError on bad arguments, padded
   numpy arrays out. Models and tests use it without TensorFlow.
2. Write `keras_msets/data/tfds_<task>.py` like this file: a cached
   `_define()` that imports TFDS through `keras_msets.data._tf`, subclasses
   `tfds.core.BuilderConfig` (a dataclass holding every size and seed) and
   `tfds.core.GeneratorBasedBuilder`, with `disable_shuffling=True` in
   `_info()` so the order matches the generator, a `_split_generators()`
   that ignores `dl_manager` and calls the numpy generator, and
   `_generate_examples()` yielding unpadded examples under integer keys.
   Expose the classes through a module `__getattr__`, plus a
   `<task>_builder()` and a `load_<task>_tfds()` that pads and batches
   back to the numpy format.
3. Test it with a tiny config: `download_and_prepare()` into pytest's
   `tmp_path`, read it back and compare with the numpy generator.

A config is identified on disk by its name only (`data_dir/digit_sum/
<name>/<version>`): give a custom `DigitSumConfig` a new name.
"""

import functools
import re

import numpy as np

from keras_msets.data import _tf
from keras_msets.data.digit_sum import digit_sum_test_sets
from keras_msets.data.digit_sum import digit_sum_train_dev
from keras_msets.utils.validation import check_positive_int

_PAPER_TEST_LENGTHS = tuple(range(5, 100, 5))

# Arguments of the predefined configs (the DigitSumConfig fields).
_CONFIGS = {
    "sum": dict(task="sum"),
    "units_digit": dict(task="units_digit"),
    "sum_tiny": dict(
        task="sum", num_samples=200, dev_fraction=0.1, max_length=10,
        num_per_length=5,
    ),
    "units_digit_tiny": dict(
        task="units_digit", num_samples=200, dev_fraction=0.1, max_length=10,
        num_per_length=5,
    ),
}  # fmt: skip

CONFIG_NAMES = tuple(_CONFIGS)


@functools.cache
def _define():
    """Defines (once per process) and returns the config and builder."""
    import dataclasses

    tfds = _tf.import_tfds()

    @dataclasses.dataclass(eq=False)
    class DigitSumConfig(tfds.core.BuilderConfig):
        """Sizes and seeds of one digit-sum data set.

        Args:
            name: Config name; it names the folder the data is written to.
            task: `"sum"` or `"units_digit"`.
            num_samples: Train + dev examples.
            dev_fraction: Fraction of them in the dev split.
            max_length: Longest training sequence (lengths 1..max_length).
            test_lengths: Lengths of the `test_len_<L>` splits.
            num_per_length: Examples in each test split.
            train_seed: Seed of `digit_sum_train_dev`.
            test_seed: Seed of `digit_sum_test_sets`.
        """

        task: str = "sum"
        num_samples: int = 100_000
        dev_fraction: float = 0.01
        max_length: int = 50
        test_lengths: tuple = _PAPER_TEST_LENGTHS
        num_per_length: int = 10_000
        train_seed: int = 0
        test_seed: int = 1

    class DigitSum(tfds.core.GeneratorBasedBuilder):
        """Digit sum (task 1) and units digit of the sum (task 2)."""

        name = "digit_sum"
        VERSION = tfds.core.Version("1.0.0")
        RELEASE_NOTES = {"1.0.0": "Initial release."}
        BUILDER_CONFIGS = [
            DigitSumConfig(name=config_name, **kwargs)
            for config_name, kwargs in _CONFIGS.items()
        ]
        DEFAULT_CONFIG_NAME = "units_digit"
        # TFDS only uses `code_path` to find a checksums file next to the
        # code, and nothing is downloaded here. Computing it needs the
        # `importlib_resources` backport on TFDS 4.9.x, which pip does not
        # install on Python >= 3.9, so skip it.
        code_path = None

        def _info(self):
            return self.dataset_info_from_configs(
                description=(
                    "Multisets of digits 1-9 labelled with their sum or the "
                    "units digit of their sum, generated offline by "
                    "keras_msets.data.digit_sum."
                ),
                features=tfds.features.FeaturesDict(
                    {
                        "digits": tfds.features.Tensor(
                            shape=(None,), dtype=np.int32
                        ),
                        "label": tfds.features.Scalar(dtype=np.float32),
                    }
                ),
                supervised_keys=("digits", "label"),
                disable_shuffling=True,
                citation=_CITATION,
            )

        def _split_generators(self, dl_manager):
            del dl_manager  # Nothing to download.
            config = self.builder_config
            train, dev = digit_sum_train_dev(
                task=config.task,
                num_samples=config.num_samples,
                dev_fraction=config.dev_fraction,
                max_length=config.max_length,
                seed=config.train_seed,
            )
            splits = {
                "train": self._generate_examples(*train),
                "dev": self._generate_examples(*dev),
            }
            tests = digit_sum_test_sets(
                task=config.task,
                lengths=config.test_lengths,
                num_per_length=config.num_per_length,
                seed=config.test_seed,
            )
            for length, (x, y) in tests.items():
                splits[f"test_len_{length}"] = self._generate_examples(x, y)
            return splits

        def _generate_examples(self, x, y):
            lengths = np.count_nonzero(x, axis=1)
            for i in range(len(x)):
                yield i, {"digits": x[i, : lengths[i]], "label": y[i, 0]}

    return DigitSumConfig, DigitSum


_CITATION = """\
@inproceedings{debenedetto2020representing,
  title={Representing Unordered Data Using Complex-Weighted Multiset
         Automata},
  author={DeBenedetto, Justin and Chiang, David},
  booktitle={Proceedings of the 37th International Conference on Machine
             Learning},
  year={2020}
}"""


def __getattr__(name):
    if name == "DigitSumConfig":
        return _define()[0]
    if name == "DigitSum":
        return _define()[1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def digit_sum_builder(data_dir=None, config="units_digit"):
    """Returns the TFDS `DigitSum` builder for one config.

    Call `download_and_prepare()` on it to write the data (offline; it only
    runs the numpy generators), then `as_dataset(split=...)`.

    Args:
        data_dir: Folder of the TFDS data; `None` is TFDS's default
            (`~/tensorflow_datasets`).
        config: One of `CONFIG_NAMES` (`"sum"`, `"units_digit"`,
            `"sum_tiny"`, `"units_digit_tiny"`) or a `DigitSumConfig`.

    Returns:
        A `tfds.core.GeneratorBasedBuilder`.

    Example:

    ```python
    builder = digit_sum_builder("/tmp/tfds", config="units_digit_tiny")
    builder.download_and_prepare()  # offline, under a second
    ds = builder.as_dataset(split="test_len_5")  # {"digits", "label"}
    ```
    """
    config_cls, builder_cls = _define()
    if not isinstance(config, config_cls) and config not in _CONFIGS:
        raise ValueError(
            f"`config` must be one of {CONFIG_NAMES} or a DigitSumConfig. "
            f"Received: config={config!r}"
        )
    return builder_cls(data_dir=data_dir, config=config)


def _split_width(split, config):
    """Padded width implied by a split string, or None if unknown."""
    widths = []
    for part in split.split("+"):
        name = part.split("[")[0].strip()
        match = re.fullmatch(r"test_len_(\d+)", name)
        if match:
            widths.append(int(match.group(1)))
        elif name in ("train", "dev"):
            widths.append(config.max_length)
        else:
            return None
    return max(widths) if widths else None


def load_digit_sum_tfds(
    split,
    task="units_digit",
    data_dir=None,
    batch_size=128,
    pad_to=None,
):
    """Loads a digit-sum split as padded batches `(x, y)`.

    Prepares the data first if it is not in `data_dir` yet (offline). The
    batches have the format of `make_digit_sum`: `x` int32
    `[batch, width]` right-padded with 0 and `y` float32 `[batch, 1]`. The
    width is `pad_to` if given, else the config's `max_length` for
    `"train"` / `"dev"` and `L` for `"test_len_L"`.

    Args:
        split: TFDS split string, e.g. `"train"`, `"dev"`, `"test_len_95"`,
            `"train[:10%]"`.
        task: A config name (`"sum"`, `"units_digit"`, `"sum_tiny"`,
            `"units_digit_tiny"`) or a `DigitSumConfig`.
        data_dir: Folder of the TFDS data (`None`: TFDS's default).
        batch_size: Positive integer; the last batch may be smaller.
        pad_to: Optional width of `x`, at least the longest sequence.

    Returns:
        A `tf.data.Dataset` of `(x, y)` batches, in generation order.
    """
    if not isinstance(split, str) or not split:
        raise ValueError(
            f"`split` must be a non-empty string. Received: split={split!r}"
        )
    batch_size = check_positive_int("batch_size", batch_size)
    builder = digit_sum_builder(data_dir=data_dir, config=task)
    width = _split_width(split, builder.builder_config)
    if pad_to is not None:
        pad_to = check_positive_int("pad_to", pad_to)
        if width is not None and pad_to < width:
            raise ValueError(
                f"`pad_to` must be >= the longest sequence of split "
                f"{split!r} ({width}). Received: pad_to={pad_to}"
            )
        width = pad_to
    tf = _tf.import_tensorflow()
    builder.download_and_prepare()
    dataset = builder.as_dataset(split=split, shuffle_files=False)
    dataset = dataset.map(
        lambda ex: (ex["digits"], tf.reshape(ex["label"], [1])),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    dataset = dataset.padded_batch(
        batch_size,
        padded_shapes=([width], [1]),
        padding_values=(np.int32(0), np.float32(0)),
    )
    return dataset.prefetch(tf.data.AUTOTUNE)
