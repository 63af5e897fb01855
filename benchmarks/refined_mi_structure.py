"""Candidate refined MI models compared on the development seeds.

Trains `QuantileRegressor` candidates on the statistics tables of
`keras_msets.data.mi_problems` and measures each, with the installed
preset beside them, on:

- the validation rows (mean absolute error of the median, coverage of
  the 90 % interval);
- the estimator benchmark's DEVELOPMENT seeds 0-1 (never the held-out
  seeds 2-4): the statistics of every MI problem's development samples
  at n = 50, 150, 1,000, 10,000 (computed once with `seed=0`, as the
  estimator does, and cached), answered as the estimator answers them
  (sizes clipped to the trained range; statistics outside the trained
  range by more than `RANGE_MARGIN` answered by KSG, k = 3), against
  the best classical estimator of each cell (KSG k = 1, 3, the best k,
  the plug-in; cached in `results/estimator_benchmark`).

Candidates (`CANDIDATES`): `free` (the median correction of either
sign, as the preset before), `excess` (the middle quantile through a
softplus, `QuantileRegressor(nonnegative_middle=True)`, so the estimate
is never below the base), each on the training rows of before and, as
`*_more`, with the rows of larger samples (`train_large`); and a gate
on each (`+gate<t>`: the base where the KSG excess over the Gaussian
reference at k = 3 is within `t` nats of 0, the interval widened to hold
it), `t` in `GATES`. `preset` is the installed preset.

    KERAS_BACKEND=torch nice -n 10 python benchmarks/refined_mi_structure.py

Results: `results/refined_mi_structure.json` (per candidate, per n);
trained candidates are cached under the statistics cache
(`mi_problems.default_cache_dir() / "candidates"`).
"""

import argparse
import json
import os
import pathlib
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from estimator_bench import problems as problem_sets  # noqa: E402
from estimator_bench import runner  # noqa: E402

from keras_msets.data import mi_problems  # noqa: E402
from keras_msets.stats import mi_statistics as stats  # noqa: E402

RESULTS = pathlib.Path(__file__).parent / "results"
BENCH = RESULTS / "estimator_benchmark"
SIZES = (50, 150, 1000, 10000)
CLASSICAL = ("ksg_k1", "ksg_k3", "ksg_k_best", "gaussian_plugin")
QUANTILES = (0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.975)
RANGE_MARGIN = 0.1
CLIPPED = ("log_n", "log_block")
# Candidate name -> (middle through a softplus, training splits, epochs).
MORE = ("train", "train_gaussian", "train_large")
CANDIDATES = {
    "free": (False, ("train", "train_gaussian"), 100),
    "excess": (True, ("train", "train_gaussian"), 100),
    "free_more": (False, MORE, 100),
    "excess_more": (True, MORE, 100),
}
# Nats of |ksg_excess_k3| under which a gate answers the base.
GATES = (0.02, 0.05)


def dev_features(cache):
    """Statistics of every development sample of the benchmark (cached)."""
    path = pathlib.Path(cache) / "benchmark_dev_features.npz"
    if path.exists():
        with np.load(path) as data:
            return {k: data[k] for k in data.files}
    rows = {"features": [], "problem": [], "n": [], "seed": []}
    for n in SIZES:
        for problem in problem_sets.mi_problems():
            if not runner.cell_path(BENCH, problem, n).exists():
                continue
            for seed in runner.DEV_SEEDS:
                x, y = problem.sample(n, seed)
                rows["features"].append(stats.mi_statistics(x, y, seed=0))
                rows["problem"].append(problem.name)
                rows["n"].append(n)
                rows["seed"].append(seed)
            print(f"dev features: {problem.name} n={n}", flush=True)
    rows = {k: np.array(v) for k, v in rows.items()}
    np.savez(path, **rows)
    return rows


def table(splits, cache):
    tables = [
        mi_problems.statistics_table(s, mi_problems.DEFAULT_ROWS[s], cache)
        for s in splits
    ]
    return {k: np.concatenate([t[k] for t in tables]) for k in tables[0]}


def train(name, cache, seed=0):
    """The candidate `name` (trained once, then loaded)."""
    import keras

    from keras_msets.models import QuantileRegressor
    from keras_msets.training.tasks import PinballLoss
    from keras_msets.training.tasks.statistics_regression import residual_target

    nonnegative, splits, epochs = CANDIDATES[name]
    folder = pathlib.Path(cache) / "candidates"
    folder.mkdir(exist_ok=True)
    weights = folder / f"{name}_s{seed}.weights.h5"
    rows = table(splits, cache)
    x = rows["features"].astype("float32")
    keras.utils.set_random_seed(seed)
    model = QuantileRegressor(
        len(stats.FEATURES),
        QUANTILES,
        hidden_units=(64, 64),
        nonnegative_middle=nonnegative,
    )
    ranges = np.stack([x.min(axis=0), x.max(axis=0)], axis=1)
    columns = list(range(len(stats.FEATURES)))
    if weights.exists():
        model.build((None, x.shape[1]))
        model.load_weights(weights)
        return model, ranges, columns
    model.adapt(x)
    y = residual_target(rows["truth"], rows["base"]).astype("float32")
    val = table(("validation",), cache)
    yv = residual_target(val["truth"], val["base"]).astype("float32")
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3), loss=PinballLoss(QUANTILES)
    )
    best = {"loss": np.inf, "weights": None}

    class Keep(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if logs["val_loss"] < best["loss"]:
                best["loss"] = logs["val_loss"]
                best["epoch"] = epoch
                best["weights"] = [np.array(w) for w in model.get_weights()]

    model.fit(
        x,
        y,
        batch_size=64,
        epochs=epochs,
        validation_data=(val["features"].astype("float32"), yv),
        callbacks=[Keep()],
        verbose=0,
    )
    model.set_weights(best["weights"])
    model.save_weights(weights)
    print(f"{name}: best epoch {best['epoch']}", flush=True)
    return model, ranges, columns


def preset_model():
    from keras_msets import zoo

    serves = zoo.info("knn_refined_mutual_information")["serves"]
    model = zoo.load("knn_refined_mutual_information")
    columns = [stats.FEATURES.index(f) for f in serves["features"]]
    return model, np.asarray(serves["feature_ranges"]), columns


def answers(model, ranges, columns, features, gate=None):
    """Estimates, 90 % intervals and out-of-range flags, as the estimator
    answers (`keras_msets.estimators.refined`), from the feature
    `columns` the model reads."""
    from keras_msets.training.tasks.statistics_regression import (
        estimates_from_quantiles,
    )

    features = np.array(features, dtype=np.float64)[:, columns]
    names = [stats.FEATURES[j] for j in columns]
    for name in CLIPPED:
        j = names.index(name)
        features[:, j] = np.clip(features[:, j], *ranges[j])
    margin = RANGE_MARGIN * (ranges[:, 1] - ranges[:, 0])
    flagged = np.any(
        (features < ranges[:, 0] - margin) | (features > ranges[:, 1] + margin),
        axis=1,
    )
    outputs = np.asarray(model.predict(features.astype("float32"), verbose=0))
    base = features[:, names.index(stats.BASE_FEATURE)]
    values = estimates_from_quantiles(outputs, base)
    middle = values[:, len(QUANTILES) // 2].copy()
    low = np.array([np.interp(0.05, QUANTILES, r) for r in values])
    high = np.array([np.interp(0.95, QUANTILES, r) for r in values])
    if gate is not None:
        excess = features[:, names.index("ksg_excess_k3")]
        quiet = np.abs(excess) < gate
        middle[quiet] = np.maximum(base[quiet], 0.0)
        low = np.where(quiet, np.minimum(low, middle), low)
        high = np.where(quiet, np.maximum(high, middle), high)
    return middle, low, high, flagged


def dev_summary(model, ranges, columns, dev, gate=None):
    value, low, high, flagged = answers(
        model, ranges, columns, dev["features"], gate
    )
    per_n = {}
    problems = {p.name: p for p in problem_sets.mi_problems()}
    worst = []
    for n in SIZES:
        cells = []
        for name in sorted(set(dev["problem"][dev["n"] == n])):
            cell = runner.load_cell(BENCH, problems[name], n)
            classical = runner.summarize_cell(
                cell, held=runner.DEV_SEEDS, dev=runner.DEV_SEEDS
            )["errors"]
            classical = {k: classical[k] for k in CLASSICAL if k in classical}
            errors, hits = [], []
            for i in np.nonzero((dev["problem"] == name) & (dev["n"] == n))[0]:
                seed = str(dev["seed"][i])
                answer = value[i]
                if flagged[i]:
                    answer = cell["seeds"][seed]["ksg_k3"]["value"]
                else:
                    hits.append(low[i] <= cell["truth"] <= high[i])
                errors.append(abs(answer - cell["truth"]))
            best = min(classical.values())
            ratio = np.mean(errors) / max(best, 1e-12)
            cells.append((np.mean(errors), best, ratio, hits))
            if ratio > 1.5:
                worst.append(f"{name} n={n} {ratio:.2f}")
        hits = [h for c in cells for h in c[3]]
        per_n[n] = {
            "cells": len(cells),
            "wins": int(sum(c[2] < 1 for c in cells)),
            "over_1_5": int(sum(c[2] > 1.5 for c in cells)),
            "mean_ours": float(np.mean([c[0] for c in cells])),
            "mean_best": float(np.mean([c[1] for c in cells])),
            "coverage": float(np.mean(hits)) if hits else None,
            "flagged": int(flagged[dev["n"] == n].sum()),
        }
    total = {
        key: int(sum(v[key] for v in per_n.values()))
        for key in ("cells", "wins", "over_1_5", "flagged")
    }
    weights = [v["cells"] for v in per_n.values()]
    for key in ("mean_ours", "mean_best"):
        total[key] = float(
            np.average([v[key] for v in per_n.values()], weights=weights)
        )
    return {"by_n": per_n, "all": total, "over_1_5_cells": worst}


def validation_summary(model, ranges, columns, cache):
    val = table(("validation",), cache)
    value, low, high, _ = answers(model, ranges, columns, val["features"])
    truth = val["truth"]
    return {
        "mae": float(np.mean(np.abs(value - truth))),
        "coverage_90": float(np.mean((low <= truth) & (truth <= high))),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--candidates", nargs="*", default=["excess"])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    cache = mi_problems.default_cache_dir()
    dev = dev_features(cache)
    out_path = RESULTS / "refined_mi_structure.json"
    results = {}
    if out_path.exists():
        results = json.loads(out_path.read_text(encoding="utf-8"))
    todo = [("preset", None)] + [(c, args.seed) for c in args.candidates]
    for name, seed in todo:
        if name == "preset":
            model, ranges, columns = preset_model()
        else:
            model, ranges, columns = train(name, cache, seed)
        key = name if seed is None else f"{name}_s{seed}"
        for gate in (None, *GATES):
            label = key if gate is None else f"{key}+gate{gate:g}"
            results[label] = {
                "validation": validation_summary(model, ranges, columns, cache),
                "dev": dev_summary(model, ranges, columns, dev, gate),
            }
            a = results[label]["dev"]["all"]
            by_n = results[label]["dev"]["by_n"]
            print(
                f"{label}: dev wins {a['wins']}/{a['cells']}, >1.5x "
                f"{a['over_1_5']}, mean {a['mean_ours']:.3f} / "
                f"{a['mean_best']:.3f}; by n wins "
                + " ".join(f"{v['wins']}/{v['cells']}" for v in by_n.values())
                + "; coverage "
                + " ".join(f"{v['coverage']:.2f}" for v in by_n.values())
                + f"; validation {results[label]['validation']}",
                flush=True,
            )
        out_path.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
