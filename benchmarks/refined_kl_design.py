"""Design choices of `knn_refined_kl_divergence`, on development seeds.

Trains candidate models on the cached training statistics of
`keras_msets.data.kl_problems` (the recipe's model and budget, with more
training pairs or fewer inputs) and compares them on the development
seeds (0 and 1) of the estimator benchmark's KL problems at n = 50, 150,
1,000 and 10,000 (where the classical baselines are cached): cells where
the model beats the best classical estimator (k-NN KL with k = 1, k = 3,
the best k, the Gaussian plug-in; errors from the benchmark cache),
cells more than 1.5x worse, mean error, and the coverage of the 90 %
intervals, before and after scaling the intervals by the factor that
makes the development coverage closest to 0.9 (`interval_scale`). The
base the models correct (`plugin_corrected`) is scored alone as
`base_plugin_corrected`, and each candidate with its correction scaled
by 0, 0.25, 0.5, 0.75, 1 (`correction_scales`: pulled towards the
base). The benchmark pairs' statistics are cached in
`results/refined_kl_design/statistics_dev_v2.npz`
(`refined_kl_table_upgrade.py` writes it from the previous statistics).
Held-out seeds are not read here.

    KERAS_BACKEND=torch python benchmarks/refined_kl_design.py
    KERAS_BACKEND=torch python benchmarks/refined_kl_design.py \\
        --candidates corrected_8000 corrected_nostandard_8000
    python benchmarks/refined_kl_design.py --base-bias

Writes `results/refined_kl_design/design.json` (one entry per candidate,
kept across runs; the entries `base_*`, `diff_*` and `wide_*` were
measured with the previous statistics, whose base was the copula k-NN
estimate at k = 3).
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
# The columns of the cached statistics these candidates were trained on
# (`kl_statistics_v2`: the k-NN estimates on standardized coordinates
# included; `refined_kl_table_upgrade.py --with-standardized` writes it).
V2_STATISTICS = (
    *(f"knn_copula_k{k}" for k in kl_statistics.NEIGHBOURS),
    *kl_statistics.STANDARDIZED_KNN,
    *(f"knn_reference_k{k}" for k in kl_statistics.NEIGHBOURS),
    "plugin_copula",
    "plugin_standard",
    "plugin_corrected",
    "mean_abs_skew",
    "mean_log_kurtosis",
    "max_log_kurtosis",
    "dim",
    "log_n",
    "log_m",
    "log_block",
)
_ORDER = [
    V2_STATISTICS.index(name)
    for name in (*kl_statistics.STATISTICS, *kl_statistics.STANDARDIZED_KNN)
]
# name: (training pairs, hidden units, epochs, features left out)
STANDARD = kl_statistics.STANDARDIZED_KNN
# The statistics of raw (standardized) coordinates: they change under a
# monotone map of both sets, the copula-normal ones do not.
RAW = (
    *STANDARD,
    "plugin_standard",
    "mean_abs_skew",
    "mean_log_kurtosis",
    "max_log_kurtosis",
)
CANDIDATES = {
    "corrected_4000": (4000, (128, 128), 60, ()),
    "corrected_8000": (8000, (128, 128), 60, ()),
    "corrected_nostandard_8000": (8000, (128, 128), 60, STANDARD),
    "corrected_copula_only_8000": (8000, (128, 128), 60, RAW),
    "corrected_copula_only_4000": (4000, (128, 128), 60, RAW),
}


def current(statistics):
    """`V2_STATISTICS` rows as `kl_statistics(..., standardized_knn=True)`
    rows."""
    return np.asarray(statistics)[:, _ORDER]


def inputs(statistics, dropped):
    """`kl_statistics.model_inputs`, with the standardized k-NN estimates
    (signed log) after the copula ones, without the features `dropped`
    (`statistics`: rows of `kl_statistics(..., standardized_knn=True)`)."""
    features = kl_statistics.model_inputs(statistics)
    names = list(kl_statistics.FEATURES)
    if not set(STANDARD) <= set(dropped):
        extra = np.asarray(statistics)[:, len(kl_statistics.STATISTICS) :]
        at = len(kl_statistics.NEIGHBOURS)
        features = np.concatenate(
            [
                features[:, :at],
                kl_statistics._signed_log(extra),
                features[:, at:],
            ],
            axis=1,
        )
        names[at:at] = STANDARD
    kept = [i for i, name in enumerate(names) if name not in dropped]
    return features[:, kept]


def _base(statistics):
    features = kl_statistics.model_inputs(statistics)
    return features[:, kl_statistics.FEATURES.index(kl_statistics.BASE_FEATURE)]


SCALES = np.round(np.arange(0.3, 1.51, 0.05), 2)


def _cells():
    for n in SIZES:
        for problem in problem_sets.kl_problems():
            path = runner.cell_path(BENCH, problem, n)
            if path.exists():
                yield problem, n


def benchmark_statistics(seeds, path):
    """`kl_statistics` rows (`V2_STATISTICS`) of the benchmark pairs of
    `seeds` (cached)."""
    if path.exists():
        with np.load(path) as data:
            return {k: data[k] for k in data.files}
    rows = {"statistics": [], "problem": [], "n": [], "seed": [], "truth": []}
    for problem, n in _cells():
        for seed in seeds:
            x, y = problem.sample(n, seed)
            values = kl_statistics.kl_statistics(x, y, standardized_knn=True)
            row = np.empty(len(V2_STATISTICS))
            row[_ORDER] = values
            rows["statistics"].append(row)
            rows["problem"].append(problem.name)
            rows["n"].append(n)
            rows["seed"].append(seed)
            rows["truth"].append(problem.truth)
        print(f"statistics {problem.name} n={n}", flush=True)
    rows = {k: np.asarray(v) for k, v in rows.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **rows)
    return rows


def _table(split, pairs=None, dropped=()):
    if split == "train" and pairs is not None:
        kl_problems.SPLIT_SEEDS["train"] = (0, pairs)
    cache = os.environ.get(
        "KERAS_MSETS_KL_STATISTICS",
        os.path.expanduser("~/.cache/keras_msets/kl_statistics_v2"),
    )
    rows = kl_problems.statistics_table(split, cache, compute=False)
    rows["features"] = current(rows["features"])
    features = inputs(rows["features"], dropped)
    target = sr.residual_target(rows["truth"], _base(rows["features"]))
    return features.astype("float32"), target.astype("float32"), rows


def train(pairs, hidden, epochs, dropped, seed=0):
    """The recipe's fit: pinball loss, Adam, the epoch with the lowest
    validation loss kept."""
    x, y, _ = _table("train", pairs, dropped)
    xv, yv, _ = _table("validation", dropped=dropped)
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


def quantiles_of(model, statistics, dropped):
    features = inputs(statistics, dropped)
    outputs = model.predict(features.astype("float32"), verbose=0)
    return sr.estimates_from_quantiles(outputs, _base(statistics))


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


def base_bias(seeds=range(100, 120), sizes=(50, 150, 1000)):
    """Mean signed and absolute error of `plugin_corrected` and of the
    copula k-NN estimate at k = 3 (the previous base) per KL problem and
    n, over `seeds` (seeds neither split of the benchmark uses), into
    `results/refined_kl_design/base_bias.json`."""
    out = {}
    for problem in problem_sets.kl_problems():
        for n in sizes:
            found = {"corrected": [], "knn_copula_k3": []}
            for seed in seeds:
                x, y = problem.sample(n, seed)
                cx, cy = kl_statistics.copula_normal(x, y)
                value = kl_statistics.corrected_gaussian_kl(cx, cy)
                if not np.isfinite(value):
                    value = kl_statistics.shrunk_gaussian_kl(cx, cy)
                found["corrected"].append(value - problem.truth)
                knn = kl_statistics.knn_kl_estimates(cx, cy, (3,))[0]
                found["knn_copula_k3"].append(knn - problem.truth)
            out[f"{problem.name}/n{n}"] = {
                key: {
                    "bias": float(np.mean(v)),
                    "mae": float(np.mean(np.abs(v))),
                }
                for key, v in found.items()
            }
            print(problem.name, n, json.dumps(out[f"{problem.name}/n{n}"]))
    (OUT / "base_bias.json").write_text(json.dumps(out, indent=1) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--candidates", nargs="+", default=list(CANDIDATES))
    parser.add_argument(
        "--base-bias",
        action="store_true",
        help="only the bias of the base on seeds 100-119 (base_bias.json)",
    )
    args = parser.parse_args(argv)
    if args.base_bias:
        base_bias()
        return
    seeds = list(runner.DEV_SEEDS)
    rows = benchmark_statistics(seeds, OUT / "statistics_dev_v2.npz")
    rows["statistics"] = current(rows["statistics"])
    out_path = OUT / "design.json"
    report = json.loads(out_path.read_text()) if out_path.exists() else {}
    base = np.repeat(_base(rows["statistics"])[:, None], len(QUANTILES), 1)
    report["base_plugin_corrected"] = {"dev": score(rows, base, seeds)}
    print("base", json.dumps(report["base_plugin_corrected"]["dev"]))
    for name in args.candidates:
        pairs, hidden, epochs, dropped = CANDIDATES[name]
        start = time.time()
        model = train(pairs, hidden, epochs, dropped)
        seconds = time.time() - start
        quantiles = quantiles_of(model, rows["statistics"], dropped)
        _, _, validation = _table("validation")
        vq = quantiles_of(model, validation["features"], dropped)
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
            "features_left_out": list(dropped),
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
        report[name]["correction_scales"] = correction_scales(
            model, rows, validation, dropped, seeds
        )
        out_path.write_text(json.dumps(report, indent=1) + "\n")


def correction_scales(model, rows, validation, dropped, seeds):
    """Every quantile moved by `-(1 - scale)` times the median correction
    (in log(1 + KL)): the model's answer pulled towards the base by
    `scale`; dev scores and validation MAE / 90 % coverage per scale."""
    out = {}
    for scale in (0.0, 0.25, 0.5, 0.75, 1.0):
        found = {}
        for key, statistics in (
            ("dev", rows["statistics"]),
            ("validation", validation["features"]),
        ):
            features = inputs(statistics, dropped).astype("float32")
            raw = np.asarray(model.predict(features, verbose=0), "float64")
            raw = raw - (1 - scale) * raw[:, [len(QUANTILES) // 2]]
            found[key] = sr.estimates_from_quantiles(raw, _base(statistics))
        truth = validation["truth"]
        low, high = scaled_interval(found["validation"], 1.0)
        out[f"{scale:.2f}"] = {
            "dev": score(rows, found["dev"], seeds)["all"],
            "validation_mae": float(
                np.mean(np.abs(found["validation"][:, 4] - truth))
            ),
            "validation_coverage": float(
                np.mean((low <= truth) & (truth <= high))
            ),
        }
        print(f"  correction x {scale}", json.dumps(out[f"{scale:.2f}"]))
    return out


if __name__ == "__main__":
    main()
