"""English-Spanish Bible verse pairs: markup, alignment, cache, split.

Every test but `test_real_*` runs on rows written for these tests: OSIS
strings here, and `tests/data/fixtures/bible_sample.tsv` (25 made-up pairs
in the cache's format). `test_real_*` reads two verses from the installed
SWORD modules and is skipped, with the reason, when `pysword` or the
modules are not on this machine.
"""

import os
import shutil

import pytest

from keras_msets.data import bible

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
BIBLE_SAMPLE = os.path.join(FIXTURES, "bible_sample.tsv")


@pytest.fixture(autouse=True)
def _seed_everything():
    """Replaces the suite-wide fixture: no Keras state is used here."""
    yield


def test_clean_osis_strips_notes_and_tags():
    raw = (
        '<w lemma="strong:H0430">In</w> <w lemma="strong:H0853">the</w> '
        '<w lemma="strong:H7225">beginning</w>, <w lemma="x">God</w>'
        '<note placement="foot"><reference type="annotateRef">1:1 '
        "</reference>A footnote.</note><w>created</w> the earth"
        '<note n="b">Another.</note>. <div eID="gen25" type="x-p"/>'
    )
    assert bible.clean_osis(raw) == "In the beginning, God created the earth."


def test_clean_osis_stops_at_the_chapter_end():
    raw = (
        '<w>Amen</w>. <chapter eID="Rev.22"/> <div type="glossary"/>'
        "<title>Glossary</title> abba means father."
    )
    assert bible.clean_osis(raw) == "Amen."


def test_clean_osis_separates_lines_and_drops_speakers():
    raw = (
        '<lg sID="a"/><l level="1" sID="b"/>Yahweh, how many!<l eID="b"/>'
        '<l level="2" sID="c"/>Many <transChange type="added">are</transChange>'
        ' they.<l eID="c"/><speaker>Beloved</speaker>'
        '<title canonical="true" type="psalm">A Psalm.</title>'
    )
    assert bible.clean_osis(raw) == "Yahweh, how many! Many are they. A Psalm."
    assert bible.clean_osis('<div type="x-p"/> <note>only</note>') == ""


def test_align_verses_drops_empty_and_renumbered_chapters():
    order = [
        ("Num", 12, 1),
        ("Num", 12, 2),
        ("Num", 13, 1),
        ("Num", 13, 2),
        ("Num", 14, 1),
        ("Acts", 8, 1),
        ("Acts", 8, 2),
        ("Acts", 9, 1),
    ]
    english = {key: f"e{i}" for i, key in enumerate(order)}
    spanish = {key: f"s{i}" for i, key in enumerate(order)}
    english[("Num", 12, 2)] = ""  # last verse: Num 13 is shifted too
    spanish[("Acts", 8, 1)] = ""  # not the last: Acts 9 stays
    del spanish[("Num", 14, 1)]
    pairs = bible.align_verses(english, spanish, order)
    assert pairs == [
        ("Acts", 9, 1, "e7", "s7"),
    ]


def test_align_verses_drops_length_mismatches():
    order = [("Gen", 1, v) for v in (1, 2, 3)] + [
        ("Gen", 2, v) for v in (1, 2, 3)
    ]
    english = {key: "a" * 10 for key in order}
    spanish = {key: "b" * 10 for key in order}
    spanish[("Gen", 1, 2)] = "b" * 21  # more than 2 times: the verse goes
    spanish[("Gen", 1, 3)] = "b" * 15  # within 1.8 times: stays
    english[("Gen", 2, 1)] = "a" * 19  # two verses above 1.8 times:
    english[("Gen", 2, 3)] = "a" * 19  # the chapter goes
    pairs = bible.align_verses(english, spanish, order)
    assert [p[:3] for p in pairs] == [("Gen", 1, 1), ("Gen", 1, 3)]


def test_load_verse_pairs_reads_the_cache(tmp_path):
    shutil.copy(BIBLE_SAMPLE, tmp_path / bible.CACHE_FILE_NAME)
    pairs = bible.load_verse_pairs(cache_dir=str(tmp_path))
    assert len(pairs) == 25
    assert pairs[0] == (
        "Gen",
        1,
        1,
        "The man walks to the house.",
        "El hombre camina a la casa.",
    )
    assert all(isinstance(p[1], int) and isinstance(p[2], int) for p in pairs)


def test_load_verse_pairs_names_the_apt_packages(tmp_path):
    pytest.importorskip("pysword", reason="pysword is not installed")
    with pytest.raises(FileNotFoundError, match="sword-text-sparv"):
        bible.load_verse_pairs(
            cache_dir=str(tmp_path), sword_path=str(tmp_path)
        )


def test_split_by_book():
    pairs = bible.read_verse_pairs(BIBLE_SAMPLE)
    train, dev, test = bible.split_by_book(pairs, ["Ruth"], ("John", "Matt"))
    assert {p[0] for p in train} == {"Gen", "Exod"}
    assert [p[:3] for p in dev] == [("Ruth", 1, v) for v in range(1, 5)]
    assert {p[0] for p in test} == {"Matt", "John"}
    assert len(train) + len(dev) + len(test) == len(pairs)
    assert test[0] == pairs[17]  # canonical order kept


@pytest.mark.parametrize(
    "dev, test, message",
    [
        (["Ruth"], ["Ruth"], "disjoint"),
        (["Ruth"], ["Jude"], "test_books"),
        (["Tob"], ["John"], "dev_books"),
    ],
)
def test_split_by_book_rejects_bad_books(dev, test, message):
    pairs = bible.read_verse_pairs(BIBLE_SAMPLE)
    with pytest.raises(ValueError, match=message):
        bible.split_by_book(pairs, dev, test)


def test_real_first_verses():
    pysword = pytest.importorskip(
        "pysword.modules", reason="pysword is not installed"
    )
    if not os.path.isdir(os.path.join(bible.SWORD_PATH, "mods.d")):
        pytest.skip(f"no SWORD library in {bible.SWORD_PATH}")
    modules = pysword.SwordModules(bible.SWORD_PATH)
    found = modules.parse_modules()
    names = [bible.BIBLE_MODULES[s][0] for s in ("english", "spanish")]
    if any(name not in found for name in names):
        pytest.skip("sword-text-web / sword-text-sparv are not installed")
    verses = []
    for name in names:
        raw = modules.get_bible_from_module(name).get(
            books=["Gen"], chapters=[1], verses=[1], clean=False
        )
        verses.append(bible.clean_osis(raw))
    assert verses == [
        "In the beginning, God created the heavens and the earth.",
        "EN el principio crió Dios los cielos y la tierra.",
    ]
