"""The set-alignment benchmark draws honest pairs, stores and resumes."""

import json
from pathlib import Path

import numpy as np
import pytest

from keras_msets.testing import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "alignment.py"
# TORCH_ONLY_RUNS: the script's documented runs are on torch (RESULTS);
# its tests that train (store, resume, score stored weights) check
# bookkeeping and run on one backend under `make test`; the models
# it trains are checked on every backend in tests/models.
BOOKS = {"train": ["Gen", "Exod"], "dev": ["Lev"], "test": ["Num"]}


def _rows():
    # Verse v of book b reads "bVv"; its "translation" is the reverse.
    rows = []
    for book in ("Gen", "Exod", "Lev", "Num"):
        for verse in range(1, 13):
            english = f"{book.lower()}x{verse} word{verse % 3}"
            rows.append((book, 1, verse, english, english[::-1]))
    return rows


def test_pairs_hold_what_their_labels_say():
    script = load_script(SCRIPT)
    passages = script.Passages(_rows(), ["Gen", "Exod"], 4096, 12)

    def verses(ids, table):
        rows = [r for r in ids if r.any()]
        return sorted(int(np.flatnonzero((table == r).all(1))[0]) for r in rows)

    rng = np.random.default_rng(0)
    for kind in script.NEGATIVES:
        inputs, labels = passages.draw(rng, 64, 2, 5, (kind,))
        assert 0 < labels.mean() < 1
        for english, spanish, label in zip(
            inputs["english"], inputs["spanish"], labels[:, 0], strict=True
        ):
            en = verses(english, passages.english)
            es = verses(spanish, passages.spanish)
            k = len(en)
            assert len(es) == k and 2 <= k <= 5
            # One passage: consecutive verses of one book.
            assert en == list(range(en[0], en[0] + k))
            assert len(set(passages.book[en])) == 1
            shared = len(set(en) & set(es))
            if label == 1:
                assert shared == k
            elif kind == "disjoint":
                assert shared == 0
            else:
                assert shared == k - (k + 1) // 2


@pytest.mark.slow
@pytest.mark.backend_independent  # see TORCH_ONLY_RUNS
def test_runs_are_stored_and_resumed(tmp_path, monkeypatch):
    script = load_script(SCRIPT)
    argv = [
        "--tiny",
        "--rows",
        "single_set_transformer",
        "multiset_transformer",
        "--seeds",
        "0",
        "--verbose",
        "0",
        "--output-dir",
        str(tmp_path),
    ]
    done = script.main(argv, rows=_rows(), books=BOOKS)
    assert set(done) == {
        ("single_set_transformer", 0),
        ("multiset_transformer", 0),
    }
    for (row, _), result in done.items():
        saved = json.loads((tmp_path / f"tiny_{row}_seed0.json").read_text())
        assert saved["result"] == result
        for key in ("test_accuracy_disjoint", "test_accuracy_half"):
            assert 0.0 <= result[key] <= 1.0
    # Same encoder for every model.
    encoders = {r["encoder_params"] for r in done.values()}
    assert len(encoders) == 1

    def no_training(*args, **kwargs):
        raise AssertionError("a stored run was trained again")

    monkeypatch.setattr(script, "run_one", no_training)
    assert script.main(argv, rows=_rows(), books=BOOKS) == done
    # A stored run made with other settings is never taken for this one.
    path = tmp_path / "tiny_multiset_transformer_seed0.json"
    saved = json.loads(path.read_text())
    saved["settings"]["learning_rate"] *= 2
    path.write_text(json.dumps(saved))
    with pytest.raises(ValueError, match="other settings"):
        script.main(argv, rows=_rows(), books=BOOKS)


def test_overlap_reference_separates_copied_sets(tmp_path):
    script = load_script(SCRIPT)
    # Spanish = English: an aligned pair's two bags are equal (cosine 1),
    # a negative's are not, so a threshold chosen on dev separates them.
    rows = [(b, c, v, e, e) for b, c, v, e, _ in _rows()]
    config = dict(script.TINY, buckets=4096, test_pairs=40)
    data, _ = script.load_data(config, rows=rows, books=BOOKS)
    reference = script.overlap_reference(data, config)
    for kind in script.NEGATIVES:
        assert reference[kind]["dev_accuracy"] == 1.0
        assert reference[kind]["test_accuracy"] > 0.5
        assert reference[f"projection_{kind}"]["dev_accuracy"] > 0.75
    scores, labels = script.overlap_scores(data["test_disjoint"], 4096)
    np.testing.assert_allclose(scores[labels == 1], 1.0)
    assert np.all(scores[labels == 0] < 1.0)


def test_variants_are_named_and_stored_apart(tmp_path):
    script = load_script(SCRIPT)
    args, config = script.parse_args(["--variant", "projection", "--dev-only"])
    assert args.config == "dev_small_projection"
    assert config == dict(script.SMALL, **script.VARIANTS["projection"])
    encoder = script.VerseEncoder(64, 8, 4, fixed_projection=True)
    encoder(np.array([[1, 2, 0]]))
    # Only the MLP learns; the random projection stays as drawn.
    assert encoder.embedding.trainable_weights == []
    assert len(encoder.trainable_weights) == 4
    # The runs of "small" never include those of "small_projection".
    for name in ("small", "small_projection"):
        path = tmp_path / f"{name}_multiset_transformer_seed0.json"
        path.write_text(json.dumps({"settings": {"config": name}}))
    for name in ("small", "small_projection"):
        runs = script.bible_runs.load_runs(tmp_path, name)
        assert [r["settings"]["config"] for r in runs] == [name]


def test_shared_ngrams_weigh_what_both_languages_share():
    script = load_script(SCRIPT)
    rows = [
        ("Gen", 1, v, f"abram{v} went out", f"abram{v} salio fuera")
        for v in range(1, 13)
    ]
    passages = script.Passages(rows, ["Gen"], 4096, 16)
    weights = script.ngram_weights(passages, 4096)

    def weight(word):
        return weights[script.verse_ngrams(word, 4096, 1)[0]]

    # A name in one verse of each language outweighs a word of one
    # language, however rare or common.
    assert weight("abram3") > 10 * max(weight("went"), weight("salio"))
    assert weights[0] == 0.0
    ids = {key: getattr(passages, key).copy() for key in ("english", "spanish")}
    projection = script.random_projection(4096, 8)
    passages.project(projection, weights)
    # A verse's vector: its ids' projections, averaged with the weights.
    w = weights[ids["spanish"][4]]
    expected = (w[:, None] * projection[ids["spanish"][4]]).sum(0) / w.sum()
    np.testing.assert_allclose(passages.spanish[4], expected, rtol=1e-5)
    inputs, _ = passages.draw(np.random.default_rng(0), 16, 1, 4)
    assert inputs["english"].shape == (16, 4, 8)
    # Padded verses are zero vectors, and the model's masks say so.
    model = script.AlignmentModel(
        script.VerseVectorEncoder(4),
        lambda sets, training=None: sets["masks"],
    )
    masks = [np.asarray(m) for m in model(inputs)]
    sizes = masks[0].sum(1)
    assert set(sizes) == {1, 2, 3, 4}
    for mask in masks:
        np.testing.assert_array_equal(mask, np.arange(4) < sizes[:, None])


@pytest.mark.slow
@pytest.mark.backend_independent  # see TORCH_ONLY_RUNS
def test_full_run_scores_the_dev_only_run_weights(tmp_path, monkeypatch):
    script = load_script(SCRIPT)
    argv = ["--tiny", "--variant", "projection", "--rows"]
    argv += ["multiset_transformer", "--seeds", "0", "--verbose", "0"]
    argv += ["--output-dir", str(tmp_path)]
    run = ("multiset_transformer", 0)
    dev = script.main(argv + ["--dev-only"], rows=_rows(), books=BOOKS)[run]
    assert "test_accuracy_disjoint" not in dev
    # The full run trains nothing: it scores the dev-only run's weights.
    monkeypatch.setattr(
        script.keras.Model, "fit", lambda *a, **k: pytest.fail("trained")
    )
    full = script.main(argv, rows=_rows(), books=BOOKS)[run]
    name = "dev_tiny_projection_multiset_transformer_seed0.json"
    assert full["trained_in"] == name
    for kind in script.NEGATIVES:
        assert full[f"dev_accuracy_{kind}"] == dev[f"dev_accuracy_{kind}"]
        assert 0.0 <= full[f"test_accuracy_{kind}"] <= 1.0
