"""The two-sample task over statistics: same distribution or not.

Rows are random pairs of sets (`keras_msets.data.two_sample_problems.
sample_pair`, half from one distribution, half from two), each turned
into the vector of `keras_msets.stats.two_sample_statistics.
two_sample_features` (permutation z-scores of nine affine-invariant
two-sample statistics, and the set sizes and dimension). A model reads
the vector and answers the probability that both sets come from one
distribution; it is trained with binary cross-entropy on logits.

The tables are computed once, in chunks of `CHUNK_PAIRS` rows, and kept
in a cache folder (`feature_table(split, cache_dir)`; default
`<keras_msets data home>/two_sample_statistics`, see
`keras_msets.data.fetch.data_home`), so an interrupted computation
resumes at its last finished chunk. Chunk `c` of a split draws its pairs
from `np.random.default_rng([TRAINING_SEED, SPLIT_OFFSETS[split] + c,
i])`.
"""

import json
import os

import keras
import numpy as np

from keras_msets.data import two_sample_problems
from keras_msets.data.fetch import data_home
from keras_msets.stats import two_sample_statistics as statistics
from keras_msets.training.task import Task

CHUNK_PAIRS = 250
SPLIT_OFFSETS = {"train": 0, "validation": 100_000, "test": 200_000}
SPLIT_CHUNKS = {"train": 40, "validation": 4, "test": 4}
CACHE_FOLDER = "two_sample_statistics"
# Probabilities of the reliability table: bins of width 0.1.
RELIABILITY_BINS = np.linspace(0.0, 1.0, 11)


def default_cache_dir():
    return os.path.join(data_home(), CACHE_FOLDER)


def _chunk(split, index):
    """The rows of chunk `index` of `split`: a dict of arrays."""
    rows = {"features": [], "same": [], "n": [], "m": [], "dim": []}
    rows["perturbation"] = []
    for i in range(CHUNK_PAIRS):
        rng = np.random.default_rng(
            [two_sample_problems.TRAINING_SEED, SPLIT_OFFSETS[split] + index, i]
        )
        x, y, same, info = two_sample_problems.sample_pair(rng)
        rows["features"].append(statistics.two_sample_features(x, y, seed=i))
        rows["same"].append(same)
        rows["n"].append(len(x))
        rows["m"].append(len(y))
        rows["dim"].append(x.shape[1])
        rows["perturbation"].append(info["perturbation"] or "none")
    return {key: np.asarray(value) for key, value in rows.items()}


def feature_table(split, cache_dir=None, chunks=None, log=None):
    """The rows of `split` (`"train"`, `"validation"` or `"test"`).

    Returns a dict: `features` float32 `[rows, len(FEATURE_NAMES)]`,
    `same` bool `[rows]`, `n`, `m`, `dim` and `perturbation` (`"none"`
    for pairs from one distribution). Missing chunks are computed and
    written to `cache_dir` first.
    """
    if split not in SPLIT_OFFSETS:
        raise ValueError(
            f"`split` must be one of {tuple(SPLIT_OFFSETS)}. Received: "
            f"split={split!r}"
        )
    folder = cache_dir or default_cache_dir()
    os.makedirs(folder, exist_ok=True)
    parts = []
    for index in range(SPLIT_CHUNKS[split] if chunks is None else chunks):
        path = os.path.join(folder, f"{split}_{index:04d}.npz")
        if not os.path.exists(path):
            rows = _chunk(split, index)
            temporary = path + ".tmp.npz"
            np.savez(temporary, **rows)
            os.replace(temporary, path)
            if log is not None:
                log(f"{split} chunk {index} written")
        with np.load(path) as stored:
            parts.append({key: stored[key] for key in stored.files})
    table = {
        key: np.concatenate([part[key] for part in parts]) for key in parts[0]
    }
    # The size features from the stored sizes (`size_features`' cap).
    table["features"][:, -3:] = statistics.size_features(
        table["n"], table["m"], table["dim"]
    )
    return table


def size_offset(rule, n, m):
    """The logit offset of `rule` (a `serves["size_offset"]` record, or
    None: 0) for sets of `n` and `m` points (numbers or arrays):
    `per_log_points * log(clip(min(n, m), from_points, to_points) /
    from_points)`."""
    smaller = np.minimum(np.asarray(n, "float64"), np.asarray(m, "float64"))
    if rule is None:
        return np.zeros_like(smaller)
    low, high = float(rule["from_points"]), float(rule["to_points"])
    if not 1 <= low <= high:
        raise ValueError(
            '`serves["size_offset"]` needs 1 <= from_points <= to_points. '
            f"Received: size_offset={rule!r}"
        )
    return float(rule["per_log_points"]) * np.log(
        np.clip(smaller, low, high) / low
    )


def probabilities(model, features):
    """The model's probabilities that the pairs come from one
    distribution: `sigmoid` of its logit output, float64 `[rows]`."""
    logits = keras.ops.convert_to_numpy(
        model(np.asarray(features, dtype="float32"))
    )
    return 1.0 / (1.0 + np.exp(-np.asarray(logits, "float64")[:, 0]))


def reliability(probability, same):
    """`[(low, high, pairs, observed share of same pairs, mean
    probability)]` over the bins of `RELIABILITY_BINS`."""
    rows = []
    for low, high in zip(
        RELIABILITY_BINS[:-1], RELIABILITY_BINS[1:], strict=True
    ):
        inside = (probability >= low) & (
            (probability < high) if high < 1 else (probability <= high)
        )
        if inside.any():
            rows.append(
                (
                    float(low),
                    float(high),
                    int(inside.sum()),
                    float(np.mean(same[inside])),
                    float(np.mean(probability[inside])),
                )
            )
    return rows


def benchmark_table(summary_path):
    """Markdown: held-out accuracies of the estimator benchmark's two-sample
    problems by `n` (a JSON file with the `aggregate` record of
    `benchmarks/estimator_benchmark.py`'s summary at `summary_path`, as
    `benchmarks/two_sample_heldout.py` writes it), the statistics preset
    beside the MMD and classifier tests; the command alone when the file
    is missing."""
    command = (
        "KERAS_BACKEND=torch python benchmarks/estimator_benchmark.py "
        "--tasks two_sample --phases cheap --sizes 50 150 1000` (the tests), "
        "then `KERAS_BACKEND=torch python benchmarks/two_sample_heldout.py "
        "--refresh"
    )
    if not os.path.exists(summary_path):
        return f"Benchmark: `{command}`."
    with open(summary_path, encoding="utf-8") as file:
        aggregate = json.load(file)["aggregate"]
    lines = [
        "Estimator benchmark, nine two-sample problems (d = 1-16), held-out "
        "seeds 2-4 (each seed one pair from one distribution and one from "
        "two; tests reject at p < 0.05, this preset says different below "
        "probability 0.5). Mean accuracy:",
        "",
        "| n | MMD (median heuristic) | C2ST (k-NN) | this preset |",
        "|---:|---:|---:|---:|",
    ]
    for key, value in aggregate.items():
        accuracy = value.get("mean_accuracy", {})
        if key.startswith("two_sample_n") and "statistics" in accuracy:
            cells = [
                f"{accuracy[name]['mean']:.3f}" if name in accuracy else "-"
                for name in ("mmd", "c2st", "statistics")
            ]
            row = " | ".join([key.split("_n")[1], *cells])
            lines.append(f"| {row} |")
    lines += [
        "",
        f"Commands: `{command}`; details, the "
        "design choices on the development seeds and timings in "
        "benchmarks/RESULTS.md.",
    ]
    return "\n".join(lines)


def served_reliability_text(design_path):
    """Markdown: accuracy, log loss and reliability of the generated test
    pairs under the chosen size offset (the `served_test` and `chosen`
    records of `benchmarks/two_sample_design.py --size-offset`'s file at
    `design_path`); the command alone when the file is missing."""
    command = (
        "KERAS_BACKEND=torch python benchmarks/two_sample_design.py "
        "--size-offset"
    )
    if not os.path.exists(design_path):
        return f"Size offset: {command}."
    with open(design_path, encoding="utf-8") as file:
        design = json.load(file)
    rule, served = design["chosen"], design["served_test"]
    lines = [
        "The served probabilities (the logit moved by `serves"
        f'["size_offset"]`: {rule["per_log_points"]:g} x log(min(n, m) / '
        f"{rule['from_points']}) from {rule['from_points']:,} to "
        f"{rule['to_points']:,} points in the smaller set) on the same "
        f"{served['test_pairs']:,} generated test pairs: accuracy "
        f"{served['accuracy']:.3f}, log loss {served['log_loss']:.3f}.",
        "",
        "| probability | pairs | share same | mean probability |",
        "|---|---:|---:|---:|",
    ]
    for low, high, count, share, mean in served["reliability"]:
        lines.append(
            f"| {low:.1f}-{high:.1f} | {count} | {share:.3f} | {mean:.3f} |"
        )
    lines += ["", f"Command: `{command}`."]
    return "\n".join(lines)


class TwoSampleStatisticsTask(Task):
    """Same distribution or not, from a vector of two-sample statistics.

    Args:
        serves: the preset's `serves` record.
        cache_dir: where the feature tables are kept (None: the default
            cache folder).
        results_text: a callable returning markdown appended to the
            card's results (the benchmark table), or None.
    """

    name = "two_sample_statistics"
    loss = keras.losses.BinaryCrossentropy(from_logits=True)
    defaults = {"epochs": 60, "batch_size": 128, "learning_rate": 1e-3}

    def __init__(self, serves, cache_dir=None, results_text=None):
        self._serves = serves
        self.cache_dir = cache_dir
        self.results_text = results_text

    def table(self, split):
        return feature_table(split, self.cache_dir, log=print)

    def training_data(self, budget):
        train = self.table("train")
        validation = self.table("validation")
        return (
            (train["features"], train["same"].astype("float32")),
            (validation["features"], validation["same"].astype("float32")),
        )

    def callbacks(self, budget, output_dir):
        """Early stopping on the validation loss, keeping the best
        epoch's weights."""
        return [
            keras.callbacks.EarlyStopping(
                patience=budget.get("patience", 8), restore_best_weights=True
            )
        ]

    def fit(self, model, budget, output_dir, verbose=2):
        model.adapt(self.table("train")["features"])
        return super().fit(model, budget, output_dir, verbose)

    def evaluate(self, model, verbose=1):
        test = self.table("test")
        probability = probabilities(model, test["features"])
        same = test["same"]
        clipped = np.clip(probability, 1e-7, 1 - 1e-7)
        metrics = {
            "test_pairs": int(len(same)),
            "accuracy": float(np.mean((probability >= 0.5) == same)),
            "log_loss": float(
                -np.mean(same * np.log(clipped) + (~same) * np.log(1 - clipped))
            ),
            "reliability": reliability(probability, same),
        }
        if verbose:
            print(json.dumps({k: v for k, v in metrics.items()}, indent=1))
        return metrics

    def example_input(self):
        return np.zeros((2, len(statistics.FEATURE_NAMES)), "float32")

    def serves(self):
        return self._serves

    def data_description(self, budget=None):
        rows = CHUNK_PAIRS * SPLIT_CHUNKS["train"]
        return (
            f"{rows:,} random pairs of sets (`keras_msets.data."
            "two_sample_problems`, d = 1-16, 10-2,000 points per set, half "
            "from one distribution), each turned into the vector of "
            "`keras_msets.stats.two_sample_statistics.two_sample_features`"
        )

    def training_text(self, recipe, metrics):
        text = super().training_text(recipe, metrics)
        return text.replace(
            f"Loss {self.loss!r}", "Loss: binary cross-entropy on the logit"
        )

    def use_text(self, recipe):
        return (
            "```python\nimport keras_msets\n\n"
            "p = keras_msets.estimators.same_distribution_probability(x, y)"
            "\n```\n\nThe model itself reads the feature vector of "
            "`two_sample_features(x, y)` and returns a logit."
        )

    def card_sections(self, recipe, metrics):
        own = (
            "; the model's own probabilities, before the size offset"
            if self._serves.get("size_offset")
            else ""
        )
        lines = [
            f"Generated test pairs ({metrics['test_pairs']:,}, chunks no "
            f"training pair comes from{own}): accuracy "
            f"{metrics['accuracy']:.3f}, log loss {metrics['log_loss']:.3f}."
            "",
            "",
            "Reliability on the same pairs (among pairs given a probability "
            "in the bin, the share that came from one distribution):",
            "",
            "| probability | pairs | share same | mean probability |",
            "|---|---:|---:|---:|",
        ]
        for low, high, count, share, mean in metrics["reliability"]:
            lines.append(
                f"| {low:.1f}-{high:.1f} | {count} | {share:.3f} | {mean:.3f} |"
            )
        if self.results_text is not None:
            lines += ["", self.results_text()]
        return "\n".join(lines)
