"""Set alignment on English-Spanish verses (Selby et al., Table 3).

Selby et al. ("Learning Functions on Multiple Sets using Multi-Set
Transformers", UAI 2022, Sec. 5.2.2) show a model a set of English
fastText word vectors and a set of French ones and ask whether the two
sets are translations of each other (Table 3, "FastText": Multi-Set
Transformer 0.822, Single-Set Transformer 0.770, Union Transformer
0.732). Neither the crawl vectors nor MUSE can be had offline; this script
asks the same question of sentences, with the offline English-Spanish
Bible (`keras_msets.data.bible`):

- An example is a set of `k` English verses and a set of `k` Spanish
  verses. Positive (aligned): the English and Spanish of the same passage
  (`k` consecutive verses of one book). Negative: the Spanish of another
  passage ("disjoint", the paper's negatives: no element in common) or
  the passage's Spanish with `ceil(k / 2)` of its verses replaced by
  verses of another passage ("half", harder: half the elements do
  match). Training draws fresh examples every batch, half positive, the
  negatives half disjoint and half "half"; each test set (one per kind of
  negative, `test_pairs` pairs) is fixed, balanced and drawn from the
  held-out test books, those of the translation study (Ruth, 1 Samuel,
  Mark, Philippians), dev sets likewise from its dev books (Joshua,
  Ephesians); the other 60 books train.
- Set sizes follow the paper's curriculum (App. B): `k` uniform in
  `[1, 5]`, then larger ranges; the test sets use the last range.
- Each verse is encoded from scratch: its words and the character
  3-grams of `<word>` are hashed (CRC-32) into `--buckets` ids, embedded,
  averaged and passed through a two-layer MLP (`VerseEncoder`). One
  encoder, shared by both languages (names and cognates share n-grams),
  is trained end to end with the set model; it is the same for every
  row. No pretrained vectors, unlike the paper's fastText.
- The set models are `keras_msets.models.build_multiset_model`'s, with
  the App. B layout (PMA pooling, one-layer decoder, sigmoid output,
  binary cross-entropy), as `benchmarks/mst_tables.py` builds them:
  `multiset_transformer` (ours), `single_set_transformer` and
  `union_transformer` (the baselines of Table 3; the union marks each
  element with its set), optionally `cross_only`, `sum_merge`,
  `single_set_deepsets`, `single_set_rn` and `multiset_rn`.
- Accuracy (threshold 0.5) on the test sets; dev accuracy is stored
  beside it. The settings were fixed before any test number was read.
- `--overlap-reference` trains nothing: it scores each pair by the
  cosine between the two sets' binary bags of hashed ids and thresholds
  it (threshold chosen on dev), to show how much the shared words and
  3-grams (names, cognates) alone decide.

Deviations from the paper, forced by 2 CPU cores: by default latent size
64 (hidden 128), 2 blocks, batch 32, learning rate 1e-3 and 1,000 steps
(400 with sets of 1-5 verses, then 600 with 3-10; test sets of 3-10),
instead of latent 512 (hidden 1024),
4 blocks, batch 128, learning rate 1e-5 and 3,125 steps with sets up to
10-30. `--paper-config` sets the paper's model, budget and curriculum
(`[1, 5]` for 1,250 batches, `[3, 10]`, `[8, 15]` and `[10, 30]` for 625
each; test sets of 10-30 verses).

    KERAS_BACKEND=torch python benchmarks/alignment.py
    KERAS_BACKEND=torch python benchmarks/alignment.py --seeds 1 2
    KERAS_BACKEND=torch python benchmarks/alignment.py --summary
    KERAS_BACKEND=torch python benchmarks/alignment.py --paper-config
    KERAS_BACKEND=torch python benchmarks/alignment.py --variant projection \
        --dev-only   # a change tried on the dev books only (VARIANTS)
    KERAS_BACKEND=torch python benchmarks/alignment.py \
        --variant shared_ngrams   # the variant that learns (RESULTS.md)

The default encoder learns nothing at this budget (every model gives
every pair the same answer). The `shared_ngrams` variant (`VARIANTS`)
weights each hashed id by how much the two languages share it
(`ngram_weights`), projects the verses once with a frozen random
projection, puts a LayerNorm after the verse MLP and draws batches of
128 pairs; chosen on the dev books, it is the one that learns.

Each run (model, seed) writes its own JSON under `--output-dir` (default
`benchmarks/results/alignment/`), named by the configuration, model and
seed; a rerun skips the runs whose file holds the same settings and
stops on a file with other settings (`--restart` overwrites it). Runs go
seed by seed across the models, so an interrupted run leaves complete
tables with fewer seeds; two processes can share the work (`--rows` or
`--seeds`). `--summary` trains nothing and prints the markdown table of
every stored run.
"""

import json
import math
import sys
import time
import zlib
from pathlib import Path

import keras
import numpy as np
from keras import ops

from keras_msets.models import build_multiset_model

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bible_runs  # noqa: E402
from mst_tables import PAPER_ROWS  # noqa: E402

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "alignment"

ROWS = (
    "single_set_transformer",
    "union_transformer",
    "multiset_transformer",
    "cross_only",
    "sum_merge",
    "single_set_deepsets",
    "single_set_rn",
    "multiset_rn",
)
DEFAULT_ROWS = (
    "single_set_transformer",
    "union_transformer",
    "multiset_transformer",
)
# The paper's row names (those of `benchmarks/mst_tables.py`).
ROW_NAMES = PAPER_ROWS
# Table 3 of Selby et al., "FastText" column (English-French word vectors;
# mean and std of 3 runs).
PAPER_TABLE3 = {
    "single_set_deepsets": (0.4974, 0.0028),
    "single_set_rn": (0.7858, 0.0134),
    "single_set_transformer": (0.7698, 0.0114),
    "union_transformer": (0.7319, 0.0163),
    "multiset_transformer": (0.8221, 0.0018),
    "multiset_rn": (0.7625, 0.0090),
    "cross_only": (0.8097, 0.0070),
    "sum_merge": (0.8160, 0.0092),
}
NEGATIVES = ("disjoint", "half")

SMALL = {
    "latent_dim": 64,
    "num_blocks": 2,
    "num_heads": 4,
    "batch_size": 32,
    "learning_rate": 1e-3,
    # (low, high, steps) of the set-size curriculum.
    "curriculum": [[1, 5, 400], [3, 10, 600]],
    "buckets": 2**15,
    "max_ngrams": 160,
    "embedding_dim": 32,
    "verse_dim": 64,
    "test_pairs": 1000,
}
# App. B's FastText settings.
PAPER = dict(
    SMALL,
    latent_dim=512,
    num_blocks=4,
    batch_size=128,
    learning_rate=1e-5,
    curriculum=[[1, 5, 1250], [3, 10, 625], [8, 15, 625], [10, 30, 625]],
    embedding_dim=128,
    verse_dim=512,
)
# Hidden `--tiny`: compiles and runs in seconds (the smoke test).
TINY = dict(
    SMALL,
    latent_dim=4,
    num_blocks=1,
    num_heads=1,
    batch_size=4,
    curriculum=[[1, 3, 4]],
    buckets=64,
    max_ngrams=16,
    embedding_dim=4,
    verse_dim=4,
    test_pairs=8,
)
CONFIGS = {"small": SMALL, "paper": PAPER, "tiny": TINY}
# `--variant`: changes of the configuration tried on the dev books when
# the default learned nothing (`--dev-only`), with the same budget; the
# configuration is then named `<config>_<variant>`. "projection": the
# verse encoder's embeddings are a frozen random projection (256-d) of
# the hashed bags (`VerseEncoder(fixed_projection=True)`), so the
# overlap of two verses' ids shows in their vectors from the first step.
# "shared_ngrams": the same frozen projection, but each id weighted by
# its inverse document frequency times how evenly the two languages use
# it (`ngram_weights`, counted on the training books: names, numbers and
# cognates weigh most, words of one language least), and a LayerNorm
# after the MLP; the weighted projections are computed once per verse
# (`Passages.project`), so the models read 256-d verse vectors; batches
# of 128 pairs (App. B's), as many steps.
VARIANTS = {
    "projection": {"encoder": "fixed_projection", "embedding_dim": 256},
    "shared_ngrams": {
        "encoder": "shared_ngrams",
        "embedding_dim": 256,
        "batch_size": 128,
    },
    "lr_3e-3": {"learning_rate": 3e-3},
    "projection_lr_3e-3": {
        "encoder": "fixed_projection",
        "embedding_dim": 256,
        "learning_rate": 3e-3,
    },
}
# The test and dev sets are drawn with their own seeds, whatever the
# training seed: every run is scored on the same pairs.
EVAL_SEEDS = {"dev": 1001, "test": 2002}


# Verses ----------------------------------------------------------------------


def verse_ngrams(text, buckets, max_ngrams):
    """Hashed ids (1..buckets) of the words and character 3-grams."""
    ids = []
    for word in text.lower().split():
        word = "".join(c for c in word if c.isalnum())
        if not word:
            continue
        marked = f"<{word}>"
        pieces = [marked] + [
            marked[i : i + 3] for i in range(max(1, len(marked) - 2))
        ]
        for piece in pieces:
            ids.append(zlib.crc32(piece.encode("utf-8")) % buckets + 1)
    ids = ids[:max_ngrams]
    return ids + [0] * (max_ngrams - len(ids))


class Passages:
    """The verses of some books, in order, hashed, ready to draw sets."""

    def __init__(self, rows, books, buckets, max_ngrams):
        wanted = set(books)
        rows = sorted(
            (r for r in rows if r[0] in wanted),
            key=lambda r: (books.index(r[0]), r[1], r[2]),
        )
        if not rows:
            raise ValueError(f"No verse in books {books}.")
        self.book = np.array([books.index(r[0]) for r in rows])
        self.english = np.array(
            [verse_ngrams(r[3], buckets, max_ngrams) for r in rows],
            dtype="int32",
        )
        self.spanish = np.array(
            [verse_ngrams(r[4], buckets, max_ngrams) for r in rows],
            dtype="int32",
        )

    def project(self, projection, weights):
        """Replaces each verse's ids by their weighted mean projection.

        `projection`: `[buckets + 1, dim]`; `weights`: `[buckets + 1]`
        (id 0, the padding, weighs nothing). Sets are then drawn as
        `[batch, high, dim]` float vectors (padding: zero vectors).
        """
        weights = np.asarray(weights, dtype="float64").copy()
        weights[0] = 0.0
        for language in ("english", "spanish"):
            ids = getattr(self, language)
            vectors = np.zeros((len(ids), projection.shape[1]), "float32")
            for start in range(0, len(ids), 512):
                part = ids[start : start + 512]
                w = weights[part]
                total = np.maximum(w.sum(-1, keepdims=True), 1e-12)
                vectors[start : start + 512] = (
                    np.einsum("vt,vtd->vd", w, projection[part]) / total
                )
            setattr(self, language, vectors)

    def _start(self, rng, k, avoid=None):
        """A passage of `k` consecutive verses of one book (not `avoid`)."""
        for _ in range(1000):
            start = int(rng.integers(0, len(self.book) - k + 1))
            if self.book[start] != self.book[start + k - 1]:
                continue
            if avoid is not None and abs(start - avoid) < k:
                continue
            return start
        raise ValueError(f"No passage of {k} verses in these books.")

    def draw(self, rng, batch_size, low, high, negatives=NEGATIVES):
        """`({"english", "spanish"}: [batch, high, T] ids, labels)`.

        Half the pairs are aligned (label 1); the others take their
        negative kind uniformly from `negatives`. Sets smaller than
        `high` are padded with all-zero verses (masked).
        """
        shape = (batch_size, high, self.english.shape[1])
        english = np.zeros(shape, dtype=self.english.dtype)
        spanish = np.zeros(shape, dtype=self.spanish.dtype)
        labels = np.zeros((batch_size, 1), dtype="float32")
        for i in range(batch_size):
            k = int(rng.integers(low, high + 1))
            start = self._start(rng, k)
            verses = np.arange(start, start + k)
            other = verses
            if rng.random() < 0.5:
                labels[i] = 1.0
            else:
                kind = negatives[int(rng.integers(len(negatives)))]
                foreign = np.arange(k) + self._start(rng, k, avoid=start)
                if kind == "disjoint":
                    other = foreign
                else:
                    replaced = rng.permutation(k)[: (k + 1) // 2]
                    other = verses.copy()
                    other[replaced] = foreign[replaced]
            english[i, :k] = self.english[rng.permutation(verses)]
            spanish[i, :k] = self.spanish[rng.permutation(other)]
        return {"english": english, "spanish": spanish}, labels


def ngram_weights(passages, buckets):
    """`[buckets + 1]`: how much each hashed id says about alignment.

    `log(2 n / (1 + df_en + df_es)) * (1 + min(df_en, df_es)) /
    (1 + max(df_en, df_es))`, with `df_*` the number of the `n` verses
    of `passages` (the training books) holding the id in each language:
    the inverse document frequency times how evenly the two languages use
    the id. Names, numbers and cognates weigh most, the common words of
    one language least. Counted on each language alone; the pairing of
    the verses is not used.
    """
    counts = []
    for ids in (passages.english, passages.spanish):
        df = np.zeros(buckets + 1)
        for row in ids:
            df[np.unique(row[row > 0])] += 1.0
        counts.append(df)
    english, spanish = counts
    idf = np.log(2.0 * len(passages.english) / (1.0 + english + spanish))
    balance = (1.0 + np.minimum(english, spanish)) / (
        1.0 + np.maximum(english, spanish)
    )
    weights = idf * balance
    weights[0] = 0.0
    return weights


def random_projection(buckets, dim):
    """The frozen standard normal projection of the hashed ids (seed 0)."""
    projection = np.random.default_rng(0).normal(size=(buckets + 1, dim))
    projection[0] = 0.0
    return projection


# Model -----------------------------------------------------------------------


@keras.saving.register_keras_serializable(package="keras_msets_benchmarks")
class VerseEncoder(keras.layers.Layer):
    """Bag of hashed n-grams -> verse vector: `[..., T]` -> `[..., dim]`.

    The mean of the embeddings of the nonzero ids, then
    `Dense(dim, relu)` and `Dense(dim)`. A verse with no id (padding)
    gives the encoding of the zero vector; the set mask hides it. With
    `fixed_projection=True` the embeddings are frozen standard normal
    vectors: the mean is a fixed random projection of the verse's bag of
    ids, shared by both languages, whose inner products approximate the
    bags' overlap from the first step; only the MLP is trained.
    """

    def __init__(
        self, buckets, embedding_dim, dim, fixed_projection=False, **kwargs
    ):
        super().__init__(**kwargs)
        self.buckets = buckets
        self.embedding_dim = embedding_dim
        self.dim = dim
        self.fixed_projection = fixed_projection
        if fixed_projection:
            self.embedding = keras.layers.Embedding(
                buckets + 1,
                embedding_dim,
                embeddings_initializer=keras.initializers.RandomNormal(
                    stddev=1.0
                ),
                trainable=False,
                name="ngrams",
            )
        else:
            self.embedding = keras.layers.Embedding(
                buckets + 1, embedding_dim, name="ngrams"
            )
        self.hidden = keras.layers.Dense(dim, "relu", name="hidden")
        self.output_layer = keras.layers.Dense(dim, name="output")

    def call(self, ids):
        present = ops.cast(ops.greater(ids, 0), self.compute_dtype)
        vectors = self.embedding(ids) * ops.expand_dims(present, -1)
        count = ops.maximum(ops.sum(present, axis=-1, keepdims=True), 1.0)
        mean = ops.sum(vectors, axis=-2) / count
        return self.output_layer(self.hidden(mean))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            buckets=self.buckets,
            embedding_dim=self.embedding_dim,
            dim=self.dim,
            fixed_projection=self.fixed_projection,
        )
        return config


@keras.saving.register_keras_serializable(package="keras_msets_benchmarks")
class VerseVectorEncoder(keras.layers.Layer):
    """Verse vector -> verse encoding: `[..., d]` -> `[..., dim]`.

    `Dense(dim, relu)`, `Dense(dim)`, then a LayerNorm, on vectors made
    outside the model (`Passages.project`: a frozen projection of the
    verse's hashed ids); what `VerseEncoder` does after its mean.
    """

    def __init__(self, dim, **kwargs):
        super().__init__(**kwargs)
        self.dim = dim
        self.hidden = keras.layers.Dense(dim, "relu", name="hidden")
        self.output_layer = keras.layers.Dense(dim, name="output")
        self.norm = keras.layers.LayerNormalization(name="norm")

    def call(self, vectors):
        return self.norm(self.output_layer(self.hidden(vectors)))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.dim,)

    def get_config(self):
        return dict(super().get_config(), dim=self.dim)


class AlignmentModel(keras.Model):
    """Verse encoder on both sets, then a multi-set model, `[batch, 1]`."""

    def __init__(self, encoder, set_model, **kwargs):
        super().__init__(**kwargs)
        self.encoder = encoder
        self.set_model = set_model

    def call(self, inputs, training=None):
        sets, masks = [], []
        for key in ("english", "spanish"):
            ids = inputs[key]
            # Padded verses are all zero (no id, or a zero vector).
            masks.append(ops.any(ops.not_equal(ids, 0), axis=-1))
            sets.append(self.encoder(ids))
        return self.set_model({"sets": sets, "masks": masks}, training=training)


def build_model(row, config):
    if config.get("encoder") == "shared_ngrams":
        encoder = VerseVectorEncoder(config["verse_dim"], name="verse_encoder")
    else:
        encoder = VerseEncoder(
            config["buckets"],
            config["embedding_dim"],
            config["verse_dim"],
            fixed_projection=config.get("encoder") == "fixed_projection",
            name="verse_encoder",
        )
    latent = config["latent_dim"]
    set_model = build_multiset_model(
        row,
        latent_dim=latent,
        ff_dim=2 * latent,
        num_blocks=config["num_blocks"],
        num_heads=config["num_heads"],
        output_activation="sigmoid",
    )
    return AlignmentModel(encoder, set_model, name=f"alignment_{row}")


# Runs ------------------------------------------------------------------------


def fixed_pairs(passages, config, kind, seed):
    """A balanced, fixed evaluation set with one kind of negative."""
    low, high, _ = config["curriculum"][-1]
    rng = np.random.default_rng(seed)
    return passages.draw(rng, config["test_pairs"], low, high, (kind,))


def accuracy(model, pairs, batch_size=64):
    inputs, labels = pairs
    hits = 0
    for start in range(0, len(labels), batch_size):
        batch = {k: v[start : start + batch_size] for k, v in inputs.items()}
        # Whole batches only (one input shape, one compiled graph); the
        # padding rows' predictions are dropped.
        size = len(batch["english"])
        batch = {
            k: np.pad(v, ((0, batch_size - size),) + ((0, 0),) * (v.ndim - 1))
            for k, v in batch.items()
        }
        p = np.asarray(model.predict_on_batch(batch))[:size]
        hits += int(
            np.sum((p > 0.5) == (labels[start : start + batch_size] > 0.5))
        )
    return hits / len(labels)


def training_batches(passages, config, seed):
    rng = np.random.default_rng(seed)
    for low, high, steps in config["curriculum"]:
        for _ in range(steps):
            yield passages.draw(rng, config["batch_size"], low, high)


def _dev_only_run(args, row, seed):
    """(JSON, weights) paths of the `--dev-only` run of this model."""
    name = args.config if args.dev_only else f"dev_{args.config}"
    weights = f"{name}_{row}_seed{seed}.weights.h5"
    return (
        bible_runs.run_path(args.output_dir, name, row, seed),
        Path(args.output_dir) / "checkpoints" / weights,
    )


def run_one(args, config, data, row, seed):
    """Trains one model and scores it.

    A `--dev-only` run keeps its weights (under `checkpoints/`, not
    committed); the full run of the same configuration, model and seed
    then scores those weights instead of training them again (the same
    model: chosen on dev, then scored once on test).
    """
    keras.utils.set_random_seed(seed)
    model = build_model(row, config)
    model.compile(
        optimizer=keras.optimizers.Adam(config["learning_rate"]),
        loss="binary_crossentropy",
        metrics=["accuracy"],
    )
    steps = sum(s for _, _, s in config["curriculum"])
    dev_json, weights = _dev_only_run(args, row, seed)
    start, cpu = time.perf_counter(), time.process_time()
    if not args.dev_only and dev_json.exists() and weights.exists():
        trained = json.loads(dev_json.read_text())
        expected = bible_runs.settings_of(args, config, None)
        if any(
            trained["settings"].get(key) != value
            for key, value in expected.items()
            if key not in ("config", "data")
        ):
            raise ValueError(
                f"{dev_json} was trained with other settings: "
                f"{trained['settings']}"
            )
        model.predict_on_batch(
            {k: v[:1] for k, v in data["dev_disjoint"][0].items()}
        )
        model.load_weights(weights)
        result = {
            key: trained["result"][key]
            for key in ("row", "seed", "steps")
            + ("final_train_loss", "final_train_accuracy")
        }
        result["trained_in"] = dev_json.name
        train_seconds = trained["result"]["train_seconds"]
        cpu = time.process_time() - trained["result"]["cpu_seconds"]
    else:
        history = model.fit(
            training_batches(data["train"], config, seed),
            steps_per_epoch=steps,
            epochs=1,
            verbose=args.verbose,
        )
        train_seconds = time.perf_counter() - start
        result = {
            "row": row,
            "seed": seed,
            "steps": steps,
            "final_train_loss": history.history["loss"][-1],
            "final_train_accuracy": history.history["accuracy"][-1],
        }
        if args.dev_only:
            weights.parent.mkdir(parents=True, exist_ok=True)
            model.save_weights(weights)
    for split in ("dev",) if args.dev_only else ("dev", "test"):
        for kind in NEGATIVES:
            result[f"{split}_accuracy_{kind}"] = accuracy(
                model, data[f"{split}_{kind}"]
            )
    result.update(
        {
            "train_seconds": round(train_seconds, 1),
            "cpu_seconds": round(time.process_time() - cpu, 1),
            "params": int(model.count_params()),
            "encoder_params": int(model.encoder.count_params()),
            "encoder_trainable_params": int(
                sum(math.prod(w.shape) for w in model.encoder.trainable_weights)
            ),
            "paper_fasttext": list(PAPER_TABLE3[row]),
        }
    )
    return result


def load_data(config, rows=None, books=None):
    rows = bible_runs.load_rows(rows)
    books = books or bible_runs.split_books(rows)
    passages = {
        split: Passages(rows, names, config["buckets"], config["max_ngrams"])
        for split, names in books.items()
    }
    if config.get("encoder") == "shared_ngrams":
        weights = ngram_weights(passages["train"], config["buckets"])
        projection = random_projection(
            config["buckets"], config["embedding_dim"]
        )
        for part in passages.values():
            part.project(projection, weights)
    data = {"train": passages["train"]}
    for split in ("dev", "test"):
        for kind in NEGATIVES:
            data[f"{split}_{kind}"] = fixed_pairs(
                passages[split], config, kind, EVAL_SEEDS[split]
            )
    info = {
        "books": books,
        "verses": {k: int(len(v.book)) for k, v in passages.items()},
    }
    return data, info


def _set_bags(ids, buckets):
    """`[pairs, buckets + 1]`: 1 where an id occurs in the set's verses."""
    bags = np.zeros((ids.shape[0], buckets + 1))
    for i, verses in enumerate(ids):
        bags[i, verses[verses > 0]] = 1.0
    return bags


def overlap_scores(pairs, buckets):
    """Cosine of the two sets' binary bags of hashed ids, and the labels."""
    inputs, labels = pairs
    english = _set_bags(inputs["english"], buckets)
    spanish = _set_bags(inputs["spanish"], buckets)
    norms = np.sqrt(english.sum(1) * spanish.sum(1))
    return (english * spanish).sum(1) / np.maximum(norms, 1.0), labels[:, 0]


def _projected_sets(ids, projection, weights=None, chunk=100):
    """`[pairs, dim]`: mean over a set's verses of the mean projected id
    (weighted by `weights[id]` when given)."""
    out = []
    for start in range(0, len(ids), chunk):
        part = ids[start : start + chunk]
        valid = (part > 0).any(-1)
        w = (part > 0) * (1.0 if weights is None else weights[part])
        count = np.maximum(w.sum(-1, keepdims=True), 1e-12)
        verses = (projection[part] * w[..., None]).sum(-2) / count
        total = (verses * valid[..., None]).sum(1)
        out.append(total / np.maximum(valid.sum(1, keepdims=True), 1))
    return np.concatenate(out)


def projection_scores(pairs, projection, center, weights=None):
    """Cosine of the two sets' projected means, less `center` (the dev
    pairs' means): what `VerseEncoder(fixed_projection=True)` (or, with
    `weights`, the "shared_ngrams" variant) hands the set models, read
    without learning."""
    inputs, labels = pairs
    sets = [
        _projected_sets(inputs[key], projection, weights) - center[key]
        for key in ("english", "spanish")
    ]
    norms = np.linalg.norm(sets[0], axis=1) * np.linalg.norm(sets[1], axis=1)
    return (sets[0] * sets[1]).sum(1) / np.maximum(norms, 1e-12), labels[:, 0]


def overlap_reference(data, config, projection_dim=256):
    """Accuracy of thresholding the n-gram overlap of the two sets.

    Nothing is learned but the threshold, chosen on the dev pairs (the
    best dev accuracy) and applied to the test pairs: how much of the
    task the shared hashed words and 3-grams (names, cognates) alone
    decide. `projection_<kind>`: the same with the cosine of the two
    sets' mean fixed random projections (`projection_dim`, centred by
    the dev pairs' means), the input of the "projection" variant;
    `weighted_projection_<kind>`: the same with the ids weighted by
    `ngram_weights` (counted on the training books), the input of the
    "shared_ngrams" variant.
    """
    projection = random_projection(config["buckets"], projection_dim)
    weights = ngram_weights(data["train"], config["buckets"])
    reference = {}
    for kind in NEGATIVES:
        dev_pairs = data[f"dev_{kind}"]
        test_pairs = data[f"test_{kind}"]
        reference[kind] = _thresholded(
            overlap_scores(dev_pairs, config["buckets"]),
            overlap_scores(test_pairs, config["buckets"]),
        )
        for name, w in (("projection", None), ("weighted_projection", weights)):
            center = {
                key: _projected_sets(dev_pairs[0][key], projection, w).mean(0)
                for key in ("english", "spanish")
            }
            reference[f"{name}_{kind}"] = _thresholded(
                projection_scores(dev_pairs, projection, center, w),
                projection_scores(test_pairs, projection, center, w),
            )
    return reference


def _thresholded(dev_scores, test_scores):
    """The dev-best threshold and its dev and test accuracy."""
    (dev, dev_labels), (test, test_labels) = dev_scores, test_scores
    candidates = np.unique(dev)
    dev_accuracy = [
        float(np.mean((dev > c) == (dev_labels > 0.5))) for c in candidates
    ]
    best = int(np.argmax(dev_accuracy))
    threshold = float(candidates[best])
    return {
        "threshold": threshold,
        "dev_accuracy": dev_accuracy[best],
        "test_accuracy": float(
            np.mean((test > threshold) == (test_labels > 0.5))
        ),
    }


def _mean_std(results, key):
    """ "mean ± std" of `key` over the runs, "-" for dev-only runs."""
    if any(key not in r for r in results):
        return "-"
    values = np.asarray([r[key] for r in results])
    return f"{values.mean():.3f} ± {values.std():.3f}"


def _parameters(result):
    """ "all (encoder)", and how many of the encoder's are frozen."""
    text = f"{result['params']:,} ({result['encoder_params']:,}"
    frozen = result["encoder_params"] - result.get(
        "encoder_trainable_params", result["encoder_params"]
    )
    return text + (f", {frozen:,} frozen)" if frozen else ")")


def markdown_table(runs):
    by_row = {}
    for run in runs:
        by_row.setdefault(run["result"]["row"], []).append(run["result"])
    lines = [
        "| model | seeds | dev accuracy (disjoint / half) | test accuracy, "
        "disjoint negatives | test accuracy, half replaced | parameters "
        "(encoder) | paper, FastText (Table 3) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in ROWS:
        results = by_row.get(row)
        if not results:
            continue
        dev = [
            np.mean([r[f"dev_accuracy_{k}"] for r in results])
            for k in NEGATIVES
        ]
        paper_mean, paper_std = PAPER_TABLE3[row]
        lines.append(
            f"| {ROW_NAMES[row]} | {len(results)} | {dev[0]:.3f} / "
            f"{dev[1]:.3f} | "
            f"{_mean_std(results, 'test_accuracy_disjoint')} | "
            f"{_mean_std(results, 'test_accuracy_half')} | "
            f"{_parameters(results[0])} | "
            f"{paper_mean:.3f} ± {paper_std:.3f} |"
        )
    return "\n".join(lines)


def reference_line(output_dir, config_name):
    """The table row of the stored n-gram overlap reference (or None)."""
    path = Path(output_dir) / f"{config_name}_overlap_reference.json"
    if not path.exists():
        return None
    result = json.loads(path.read_text())["result"]
    lines = []
    for prefix, name in (
        ("", "n-gram overlap"),
        ("projection_", "cosine of the sets' mean random projections"),
        (
            "weighted_projection_",
            "the same, ids weighted as in `shared_ngrams`",
        ),
    ):
        if f"{prefix}disjoint" not in result:
            continue
        disjoint, half = result[f"{prefix}disjoint"], result[f"{prefix}half"]
        lines.append(
            f"| {name}, thresholded (no learning) | — | "
            f"{disjoint['dev_accuracy']:.3f} / {half['dev_accuracy']:.3f} | "
            f"{disjoint['test_accuracy']:.3f} | "
            f"{half['test_accuracy']:.3f} | 0 | — |"
        )
    return "\n".join(lines)


def parse_args(argv):
    parser = bible_runs.run_parser(
        __doc__, ROWS, RESULTS, "App. B's FastText model, budget and set sizes."
    )
    parser.add_argument(
        "--overlap-reference",
        action="store_true",
        help="Trains nothing: the accuracy of thresholding the n-gram "
        "overlap of the two sets (threshold chosen on dev).",
    )
    parser.add_argument(
        "--variant",
        choices=list(VARIANTS),
        help="a change of the configuration (VARIANTS); the runs are "
        "named `<config>_<variant>`",
    )
    parser.add_argument(
        "--dev-only",
        action="store_true",
        help="score the dev pairs only (choosing a variant); the runs are "
        "named `dev_<config>`",
    )
    args = parser.parse_args(argv)
    base = bible_runs.config_name(args)
    config = dict(CONFIGS[base], **VARIANTS.get(args.variant, {}))
    args.config = base if args.variant is None else f"{base}_{args.variant}"
    if args.dev_only:
        args.config = f"dev_{args.config}"
    args.rows = args.rows or list(DEFAULT_ROWS)
    return args, config


def main(argv=None, rows=None, books=None):
    """Trains the missing runs; returns `{(row, seed): result}`.

    `rows`, when given, replaces the Bible by these `(book, chapter,
    verse, english, spanish)` tuples and `books` its split (the tests'
    made-up verses).
    """
    args, config = parse_args(argv)
    settings = bible_runs.settings_of(args, config, rows)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    done = {}
    if args.overlap_reference:
        data, info = load_data(config, rows, books)
        reference = overlap_reference(data, config)
        path = Path(args.output_dir) / f"{args.config}_overlap_reference.json"
        record = {"settings": settings, "data": info, "result": reference}
        path.write_text(json.dumps(record, indent=1) + "\n")
        print(json.dumps(reference, indent=1))
        return reference
    if not args.summary:
        done = bible_runs.run_missing(
            args,
            settings,
            "alignment.py",
            argv,
            lambda: load_data(config, rows, books),
            lambda data, row, seed: run_one(args, config, data, row, seed),
            lambda result: (
                ("dev" if args.dev_only else "test")
                + " accuracy "
                + ", ".join(
                    f"{result[f'{split}_accuracy_{kind}']:.3f} ({kind})"
                    for split in ("dev" if args.dev_only else "test",)
                    for kind in NEGATIVES
                )
            ),
        )
    table = markdown_table(bible_runs.load_runs(args.output_dir, args.config))
    # A variant's runs share the references of their configuration.
    reference = reference_line(args.output_dir, args.config) or (
        reference_line(args.output_dir, bible_runs.config_name(args))
    )
    print(table if reference is None else f"{table}\n{reference}")
    return done


if __name__ == "__main__":
    main()
