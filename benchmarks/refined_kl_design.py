"""Design choices of `knn_refined_kl_divergence`, on development seeds.

Trains candidate models on the cached training statistics of
`keras_msets.data.kl_problems` (the recipe's model and budget, or a
variant) and compares them on the development seeds (0 and 1) of the
estimator benchmark's KL problems at n = 50, 150, 1,000 and 10,000
(where the classical baselines are cached): cells where the model beats
the best classical estimator (k-NN KL with k = 1, k = 3, the best k, the
Gaussian plug-in; errors from the benchmark cache), cells more than 1.5x
worse, mean error, and the coverage of the 90 % intervals, before and
after scaling the intervals by the factor that makes the development
coverage closest to 0.9 (`interval_scale`). The benchmark pairs'
statistics are cached in `results/refined_kl_design/statistics_dev.npz`.
Held-out seeds are not read here.

    KERAS_BACKEND=torch python benchmarks/refined_kl_design.py
    KERAS_BACKEND=torch python benchmarks/refined_kl_design.py \\
        --candidates base_8000 diff_8000

Writes `results/refined_kl_design/design.json` (one entry per candidate,
kept across runs).
"""

import argparse
import json
import os
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import keras  # noqa: E402
from estimator_bench import problems as problem_sets  # noqa: E402
from estimator_bench import runner  # noqa: E402

from keras_msets.data import kl_problems  # noqa: E402
from keras_msets.models import QuantileRegressor  # noqa: E402
from keras_msets.stats import kl_statistics  # noqa: E402
from keras_msets.training.tasks import statistics_regression as sr  # noqa: E402

RESULTS = pathlib.Path(__file__).parent / "results"
BENCH = RESULTS / "estimator_benchmark"
OUT = RESULTS / "refined_kl_design"
SIZES = (50, 150, 1000, 10000)
CLASSICAL = ("knn_k1", "knn_k3", "knn_k_best", "gaussian_plugin")
QUANTILES = (0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.975)
# name: (training pairs, hidden units, epochs, extra features)
CANDIDATES = {
    "base_4000": (4000, (128, 128), 60, False),
    "diff_4000": (4000, (128, 128), 60, True),
    "base_8000": (8000, (128, 128), 60, False),
    "diff_8000": (8000, (128, 128), 60, True),
    "wide_8000": (8000, (256, 256), 60, False),
}
_ESTIMATES = [
    i
    for i, name in enumerate(kl_statistics.STATISTICS)
    if name.startswith(("knn", "plugin"))
]
_BASE = kl_statistics.STATISTICS.index("knn_copula_k3")


def differences(statistics):
    """Each KL estimate minus the base, in log(1 + KL) (estimates clipped
    to [0, 20] as the base is)."""
    statistics = np.array(statistics, dtype=np.float64, ndmin=2)
    log = np.log1p(np.clip(statistics, 0.0, 20.0))
    return log[:, _ESTIMATES] - log[:, [_BASE]]


def inputs(statistics, extra):
    features = kl_statistics.model_inputs(statistics)
    if extra:
        features = np.concatenate([features, differences(statistics)], axis=1)
    return features


SCALES = np.round(np.arange(0.3, 1.51, 0.05), 2)


def _cells():
    for n in SIZES:
        for problem in problem_sets.kl_problems():
            path = runner.cell_path(BENCH, problem, n)
            if path.exists():
                yield problem, n


def benchmark_statistics(seeds, path):
    """`kl_statistics` rows of the benchmark pairs of `seeds` (cached)."""
    if path.exists():
        with np.load(path) as data:
            return {k: data[k] for k in data.files}
    rows = {"statistics": [], "problem": [], "n": [], "seed": [], "truth": []}
    for problem, n in _cells():
        for seed in seeds:
            x, y = problem.sample(n, seed)
            rows["statistics"].append(kl_statistics.kl_statistics(x, y))
            rows["problem"].append(problem.name)
            rows["n"].append(n)
            rows["seed"].append(seed)
            rows["truth"].append(problem.truth)
        print(f"statistics {problem.name} n={n}", flush=True)
    rows = {k: np.asarray(v) for k, v in rows.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **rows)
    return rows


def _table(split, pairs=None, extra=False):
    if split == "train" and pairs is not None:
        kl_problems.SPLIT_SEEDS["train"] = (0, pairs)
    cache = os.environ.get(
        "KERAS_MSETS_KL_STATISTICS",
        os.path.expanduser("~/.cache/keras_msets/kl_statistics_v1"),
    )
    rows = kl_problems.statistics_table(split, cache)
    features = inputs(rows["features"], extra)
    base = features[:, kl_statistics.FEATURES.index(kl_statistics.BASE_FEATURE)]
    target = sr.residual_target(rows["truth"], base)
    return features.astype("float32"), target.astype("float32"), rows


def train(pairs, hidden, epochs, extra, seed=0):
    """The recipe's fit: pinball loss, Adam, the epoch with the lowest
    validation loss kept."""
    x, y, _ = _table("train", pairs, extra)
    xv, yv, _ = _table("validation", extra=extra)
    keras.utils.set_random_seed(seed)
    model = QuantileRegressor(
        x.shape[1], QUANTILES, hidden_units=hidden, dropout=0.1
    )
    model.adapt(x)
    model.compile(
        optimizer=keras.optimizers.Adam(2e-3), loss=sr.PinballLoss(QUANTILES)
    )
    best = sr._KeepBest()
    model.fit(
        x,
        y,
        validation_data=(xv, yv),
        epochs=epochs,
        batch_size=64,
        verbose=0,
        callbacks=[best],
    )
    best.restore(model)
    return model


def quantiles_of(model, statistics, extra):
    features = inputs(statistics, extra)
    base = features[:, kl_statistics.FEATURES.index(kl_statistics.BASE_FEATURE)]
    outputs = model.predict(features.astype("float32"), verbose=0)
    return sr.estimates_from_quantiles(outputs, base)


def scaled_interval(quantiles, scale, level=0.9):
    """The `level` interval with its two half-widths scaled by `scale`
    around the median (in log(1 + KL), floored at 0)."""
    levels = np.asarray(QUANTILES)
    logq = np.log1p(quantiles)
    low = np.array([np.interp((1 - level) / 2, levels, r) for r in logq])
    high = np.array([np.interp((1 + level) / 2, levels, r) for r in logq])
    mid = logq[:, len(QUANTILES) // 2]
    return (
        np.expm1(np.maximum(mid - scale * (mid - low), 0.0)),
        np.expm1(mid + scale * (high - mid)),
    )


def score(rows, quantiles, seeds, scale=1.0):
    """Wins, cells > 1.5x, mean errors and coverage over the cells."""
    value = quantiles[:, len(QUANTILES) // 2]
    low, high = scaled_interval(quantiles, scale)
    per_n = {}
    for problem, n in _cells():
        pick = (rows["problem"] == problem.name) & (rows["n"] == n)
        pick &= np.isin(rows["seed"], seeds)
        if not pick.any():
            continue
        truth = rows["truth"][pick]
        summary = runner.summarize_cell(
            runner.load_cell(BENCH, problem, n), held=seeds, dev=seeds
        )
        classical = [
            summary["errors"][k] for k in CLASSICAL if k in summary["errors"]
        ]
        ours = float(np.mean(np.abs(value[pick] - truth)))
        best = min(classical)
        hits = (low[pick] <= truth) & (truth <= high[pick])
        for key in (n, "all"):
            part = per_n.setdefault(
                str(key), {"cells": 0, "wins": 0, "over_1_5": 0, "ours": []}
            )
            part["cells"] += 1
            part["wins"] += int(ours < best)
            part["over_1_5"] += int(ours > 1.5 * best)
            part["ours"].append(ours)
            part.setdefault("best", []).append(best)
            part.setdefault("hits", []).extend(hits.tolist())
    for part in per_n.values():
        part["mean_ours"] = float(np.mean(part.pop("ours")))
        part["mean_best"] = float(np.mean(part.pop("best")))
        part["coverage"] = float(np.mean(part.pop("hits")))
    return per_n


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--candidates", nargs="+", default=list(CANDIDATES))
    args = parser.parse_args(argv)
    seeds = list(runner.DEV_SEEDS)
    rows = benchmark_statistics(seeds, OUT / "statistics_dev.npz")
    out_path = OUT / "design.json"
    report = json.loads(out_path.read_text()) if out_path.exists() else {}
    for name in args.candidates:
        pairs, hidden, epochs, extra = CANDIDATES[name]
        start = time.time()
        model = train(pairs, hidden, epochs, extra)
        seconds = time.time() - start
        quantiles = quantiles_of(model, rows["statistics"], extra)
        _, _, validation = _table("validation")
        vq = quantiles_of(model, validation["features"], extra)
        coverage = {}
        for scale in SCALES:
            part = score(rows, quantiles, seeds, scale)["all"]
            coverage[f"{scale:.2f}"] = part["coverage"]
        chosen = min(coverage, key=lambda s: abs(coverage[s] - 0.9))
        vlow, vhigh = scaled_interval(vq, float(chosen))
        vtruth = validation["truth"]
        report[name] = {
            "pairs": pairs,
            "hidden": list(hidden),
            "epochs": epochs,
            "difference_features": extra,
            "train_seconds": round(seconds, 1),
            "validation_mae": float(
                np.mean(np.abs(vq[:, len(QUANTILES) // 2] - vtruth))
            ),
            "dev": score(rows, quantiles, seeds),
            "dev_coverage_by_scale": coverage,
            "interval_scale": float(chosen),
            "validation_coverage_scaled": float(
                np.mean((vlow <= vtruth) & (vtruth <= vhigh))
            ),
        }
        print(name, json.dumps(report[name]["dev"]), flush=True)
        print(
            f"  validation MAE {report[name]['validation_mae']:.3f}, "
            f"interval scale {chosen} (dev coverage {coverage[chosen]:.2f}, "
            "validation coverage "
            f"{report[name]['validation_coverage_scaled']:.2f})",
            flush=True,
        )
        out_path.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
