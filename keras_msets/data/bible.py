"""English-Spanish Bible verse pairs, read from installed SWORD modules.

The translation experiments of DeBenedetto & Chiang (2020, Table 1) and
Wang et al. (2020, Table 5) need parallel sentences. Offline, the closest
public-domain substitute is the Bible: the World English Bible (SWORD
module `engWEB2015eb`, Debian package `sword-text-web`) and the Reina-Valera
1909 (`spaRV1909eb`, Debian package `sword-text-sparv`), read with the PyPI
package `pysword` (`pip install keras-msets[text]`). Nothing is downloaded.

`load_verse_pairs()` aligns the two modules verse by verse (book, chapter,
verse), strips the OSIS markup (`<note>...</note>` with its content, every
other tag without it: Strong's numbers, poetry lines, paragraph markers),
and skips verses that are empty on either side (verses a translation
omits). The two modules number some verses differently (the Spanish
Numbers 13:1 is the English Numbers 12:16, the Spanish 1 Chronicles 21:25
the English 21:24, for instance), and a few verses carry more than their
verse (the English Romans 14:23 has the doxology of 16:25-27). Such
places are found with two signs, and dropped (`align_verses()`): a
chapter with an empty verse on either side goes, and so does the next
chapter of the same book when that verse is the chapter's last (its
verses are shifted by one); a chapter goes where two or more verses differ
in length by more than 1.8 times (in characters) between the languages;
and a single verse goes where the lengths differ by more than 2 times.
This removes about 1,000 of the 31,102 verses of the Spanish module; a
few misaligned pairs may remain. The Spanish module keeps the colophons
at the end of some epistles ("Fué escrita á los Hebreos desde Italia
..."), the English does not. Extracting takes a minute or more; the pairs
are then cached as a tab-separated file in `data_home()`
(`KERAS_MSETS_DATA`, else `~/.cache/keras_msets`).

`split_by_book()` holds out whole books for development and test, so that
no verse of a held-out book, nor its neighbours, is seen in training.
"""

import os
import re

from keras_msets.data.fetch import data_home
from keras_msets.utils.optional import import_optional

__all__ = [
    "BIBLE_MODULES",
    "CACHE_FILE_NAME",
    "CHAPTER_RATIO",
    "SWORD_PATH",
    "VERSE_RATIO",
    "align_verses",
    "clean_osis",
    "load_verse_pairs",
    "read_verse_pairs",
    "split_by_book",
]

SWORD_PATH = "/usr/share/sword"
BIBLE_MODULES = {
    "english": ("engWEB2015eb", "sword-text-web"),
    "spanish": ("spaRV1909eb", "sword-text-sparv"),
}
CACHE_FILE_NAME = "bible_engWEB2015eb_spaRV1909eb.tsv"

# Tags that separate words (poetry lines, paragraphs, headings markers):
# replaced by a space. Every other tag (`<w>`, `<transChange>`, `<q>`...)
# sits inside or around words and is removed without a space.
_NOTE = re.compile(r"<note\b[^>]*>.*?</note>", re.DOTALL)
_SPEAKER = re.compile(r"<speaker\b[^>]*>.*?</speaker>", re.DOTALL)
_SEPARATING_TAG = re.compile(
    r"</?(?:l|lb|lg|div|p|chapter|milestone|item|list|title)\b[^>]*>"
)
_TAG = re.compile(r"<[^>]+>")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([,.;:!?])")
# What follows a chapter's end marker belongs to no verse (the glossary
# after the last verse of the English Revelation, for instance).
_CHAPTER_END = "<chapter eID="
# Length ratios (characters, English / Spanish, either way) that mark a
# misaligned chapter (two verses or more above it) or verse.
CHAPTER_RATIO = 1.8
VERSE_RATIO = 2.0


def clean_osis(text):
    """Plain text of one verse in OSIS markup.

    Everything after a chapter's end marker (`<chapter eID=...>`) goes;
    footnotes (`<note>...</note>`) and the speaker headings of the Song of
    Songs go with their content; the canonical psalm titles stay (the
    Spanish module has them in the text of verse 1 too); every other tag
    goes, leaving its content. Whitespace is collapsed, and a space left
    before punctuation by a removed footnote is removed.

    Args:
        text: the verse as `pysword` returns it with `clean=False`.

    Returns:
        The verse as a string, `""` when nothing is left.
    """
    end = text.find(_CHAPTER_END)
    if end >= 0:
        text = text[:end]
    text = _NOTE.sub(" ", text)
    text = _SPEAKER.sub(" ", text)
    text = _SEPARATING_TAG.sub(" ", text)
    text = _TAG.sub("", text)
    text = " ".join(text.split())
    return _SPACE_BEFORE_PUNCTUATION.sub(r"\1", text)


def _missing_module_message(sword_path, missing):
    packages = " ".join(BIBLE_MODULES[side][1] for side in BIBLE_MODULES)
    return (
        f"load_verse_pairs() reads the SWORD modules "
        f"{', '.join(missing)} from `sword_path`, which does not have them. "
        f"Received: sword_path={sword_path!r}. On Debian or Ubuntu install "
        f"them with `apt-get install {packages}`, or pass the folder that "
        f"holds `mods.d/` and `modules/`."
    )


def _read_module(modules, name):
    """{(book, chapter, verse): clean text} and the canonical key order."""
    bible = modules.get_bible_from_module(name)
    books = bible.get_structure().get_books()
    texts, order = {}, []
    for testament in ("ot", "nt"):
        for book in books.get(testament, []):
            for chapter, length in enumerate(book.chapter_lengths, 1):
                for verse in range(1, length + 1):
                    raw = bible.get(
                        books=[book.osis_name],
                        chapters=[chapter],
                        verses=[verse],
                        clean=False,
                    )
                    key = (book.osis_name, chapter, verse)
                    texts[key] = clean_osis(raw)
                    order.append(key)
    return texts, order


def align_verses(english, spanish, order):
    """Aligned, non-empty verse pairs, dropping renumbered chapters.

    Args:
        english: dict `(book, chapter, verse) -> text`.
        spanish: dict `(book, chapter, verse) -> text`.
        order: the canonical order of the keys (of either module).

    Returns:
        A list of `(book, chapter, verse, english, spanish)` tuples,
        without: a chapter with a verse that is empty (or absent) on either
        side, and the next chapter of the same book when that verse is the
        chapter's last; a chapter with two verses or more whose lengths
        differ by more than `CHAPTER_RATIO` times; a verse whose lengths
        differ by more than `VERSE_RATIO` times.
    """
    chapters = {}
    for key in order:
        if key in english and key in spanish:
            chapters.setdefault(key[:2], []).append(key)
    chapter_keys = list(chapters)
    dropped = set()
    for index, chapter in enumerate(chapter_keys):
        keys = chapters[chapter]
        empty = [k for k in keys if not english[k] or not spanish[k]]
        if not empty:
            continue
        dropped.add(chapter)
        following = chapter_keys[index + 1 : index + 2]
        if empty[-1] == keys[-1] and following:
            if following[0][0] == chapter[0]:
                dropped.add(following[0])
    pairs = []
    for chapter in chapter_keys:
        if chapter in dropped:
            continue
        ratios = [
            _length_ratio(english[key], spanish[key])
            for key in chapters[chapter]
        ]
        if sum(ratio > CHAPTER_RATIO for ratio in ratios) >= 2:
            continue
        pairs.extend(
            (*key, english[key], spanish[key])
            for key, ratio in zip(chapters[chapter], ratios, strict=True)
            if ratio <= VERSE_RATIO
        )
    return pairs


def _length_ratio(first, second):
    """The longer length over the shorter (characters)."""
    return max(len(first), len(second)) / min(len(first), len(second))


def _write_pairs(path, pairs):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = path + ".partial"
    with open(partial, "w", encoding="utf-8") as file:
        for book, chapter, verse, english, spanish in pairs:
            file.write(f"{book}\t{chapter}\t{verse}\t{english}\t{spanish}\n")
    os.replace(partial, path)


def read_verse_pairs(path):
    """Verse pairs from a tab-separated file in the cache's format.

    One pair a line: book, chapter, verse, English, Spanish, separated by
    tabs (the file `load_verse_pairs()` writes, or a fixture of the same
    format).

    Args:
        path: the file.

    Returns:
        A list of `(book, chapter, verse, english, spanish)` tuples.
    """
    pairs = []
    with open(path, encoding="utf-8") as file:
        for line in file:
            book, chapter, verse, english, spanish = line.rstrip("\n").split(
                "\t"
            )
            pairs.append((book, int(chapter), int(verse), english, spanish))
    return pairs


def load_verse_pairs(cache_dir=None, sword_path=None):
    """English-Spanish Bible verse pairs, in canonical order.

    About 30,100 pairs of the World English Bible and the Reina-Valera
    1909, from the SWORD modules of the Debian packages `sword-text-web`
    and `sword-text-sparv`, read with `pysword` (module docstring). The
    first call extracts them (a minute or more) and caches them in
    `cache_dir`; later calls read the cache.

    Args:
        cache_dir: folder of the cache file; defaults to `data_home()`.
        sword_path: the SWORD library folder (with `mods.d/` and
            `modules/`); defaults to `/usr/share/sword`.

    Returns:
        A list of `(book, chapter, verse, english, spanish)` tuples: `book`
        is the OSIS abbreviation (`"Gen"`, `"Matt"`), `chapter` and
        `verse` are integers, the texts are non-empty strings.

    Raises:
        ImportError: `pysword` is not installed (the message names the
            extra).
        FileNotFoundError: the SWORD modules are not in `sword_path` (the
            message names the apt packages).
    """
    folder = data_home() if cache_dir is None else cache_dir
    folder = os.path.abspath(os.path.expanduser(folder))
    cache = os.path.join(folder, CACHE_FILE_NAME)
    if os.path.isfile(cache):
        return read_verse_pairs(cache)
    sword_path = SWORD_PATH if sword_path is None else sword_path
    sword = import_optional(
        "pysword.modules", "text", "load_verse_pairs() (the SWORD reader)"
    )
    names = [BIBLE_MODULES[side][0] for side in ("english", "spanish")]
    found = {}
    if os.path.isdir(os.path.join(sword_path, "mods.d")):
        modules = sword.SwordModules(sword_path)
        found = modules.parse_modules()
    missing = [name for name in names if name not in found]
    if missing:
        raise FileNotFoundError(_missing_module_message(sword_path, missing))
    english, order = _read_module(modules, names[0])
    spanish, _ = _read_module(modules, names[1])
    pairs = align_verses(english, spanish, order)
    _write_pairs(cache, pairs)
    return pairs


def split_by_book(pairs, dev_books, test_books):
    """Splits verse pairs into train, dev and test by whole books.

    Deterministic: the order of `pairs` is kept inside each part.

    Args:
        pairs: `(book, chapter, verse, english, spanish)` tuples, as
            `load_verse_pairs()` returns them.
        dev_books: OSIS book names held out for development.
        test_books: OSIS book names held out for test; disjoint from
            `dev_books`.

    Returns:
        `(train, dev, test)`, three lists of the same tuples.

    Raises:
        ValueError: a book is in both lists, or names no pair.
    """
    dev_books, test_books = tuple(dev_books), tuple(test_books)
    both = sorted(set(dev_books) & set(test_books))
    if both:
        raise ValueError(
            "`dev_books` and `test_books` must be disjoint. "
            f"Received: dev_books={dev_books}, test_books={test_books} "
            f"(both have {both})"
        )
    present = {pair[0] for pair in pairs}
    for name, books in (("dev_books", dev_books), ("test_books", test_books)):
        absent = [book for book in books if book not in present]
        if absent:
            raise ValueError(
                f"`{name}` must name books that have pairs. Received: "
                f"{name}={books} ({absent} not among the "
                f"{len(present)} books of `pairs`)"
            )
    train, dev, test = [], [], []
    for pair in pairs:
        if pair[0] in dev_books:
            dev.append(pair)
        elif pair[0] in test_books:
            test.append(pair)
        else:
            train.append(pair)
    return train, dev, test
