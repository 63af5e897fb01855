"""A small-n shrink of the refined MI model's correction, chosen on the
wide development seeds.

At n = 50 and 150 the `knn_refined_mutual_information` model's answer is
further from the truth than the Gaussian plug-in on many problems of the
estimator benchmark (its correction of the bias-corrected Gaussian-copula
base is noisy there). `serves["correction_shrink"]` (`{"below_points":
m0, "power": a}`, `keras_msets.estimators.refined.
apply_correction_shrink`) scales the correction by `(n / m0) ** a` below
`m0` rows. This script computes the preset's answers without the shrink
(and its base) on the wide development seeds of `estimator_fresh_seeds.py`
(30-49) at n = 50, 150 and 1,000, for every MI problem, then scores every
candidate (m0 in 300, 500, 1,000, 2,000; a in 0.1-0.5; and none) against
the classical estimators of the benchmark's cache on the same samples:
cells below the best classical error, cells over 1.5x, mean error,
coverage of the 90 % intervals, per n and in all. The choice: the most
wins, then the fewest cells over 1.5x, then the lowest mean error.
Records (resumable): `results/estimator_benchmark/
refined_mi_correction_shrink_records.json`; scores:
`refined_mi_correction_shrink.json`.

    KERAS_BACKEND=torch OMP_NUM_THREADS=1 \\
        python benchmarks/refined_mi_correction_shrink.py
"""

import argparse
import hashlib
import json
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import estimator_fresh_seeds as splits  # noqa: E402
from estimator_bench import problems as problem_sets  # noqa: E402
from estimator_bench import runner  # noqa: E402

ROOT = splits.ROOT
RECORDS = ROOT / "refined_mi_correction_shrink_records.json"
OUT = ROOT / "refined_mi_correction_shrink.json"
SIZES = (50, 150, 1000)
LEVEL = 0.9
BELOW = (300, 500, 1000, 2000)
POWERS = (0.1, 0.15, 0.2, 0.25, 0.33, 0.5)


def _weights_sha256():
    from keras_msets.zoo import registry

    path = registry.preset_dir("knn_refined_mutual_information")
    return hashlib.sha256((path / "model.weights.h5").read_bytes()).hexdigest()


def _unshrunk(x, y):
    """The preset's `(value, low, high, base)` with the shrink off."""
    from keras_msets import estimators
    from keras_msets.estimators import refined

    captured = {}
    real = refined.apply_correction_shrink

    def capture(shrink, x_sets, y_sets, base, target, answers):
        captured["base"] = float(
            refined.estimates_from_quantiles(
                np.zeros((1, 1)), base[:1], target
            )[0, 0]
        )
        return answers

    refined.apply_correction_shrink = capture
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            answer = estimators.mutual_information(x, y, interval=LEVEL)
    finally:
        refined.apply_correction_shrink = real
    return [answer.value, answer.low, answer.high, captured["base"]]


def compute(log=print):
    records = json.loads(RECORDS.read_text()) if RECORDS.exists() else {}
    sha = _weights_sha256()
    if records.get("weights_sha256", sha) != sha:
        raise SystemExit(
            f"{RECORDS} holds answers of other weights; move it away to "
            "recompute"
        )
    records["weights_sha256"] = sha
    answers = records.setdefault("answers", {})
    for n in SIZES:
        for problem in problem_sets.mi_problems():
            todo = [
                seed
                for seed in splits.split_seeds("development", n)
                if f"{problem.name}/{n}/{seed}" not in answers
            ]
            for seed in todo:
                x, y = problem.sample(n, seed)
                answers[f"{problem.name}/{n}/{seed}"] = _unshrunk(x, y)
            if todo:
                log(f"{problem.name} n={n}: {len(todo)} samples")
                RECORDS.write_text(json.dumps(records, indent=0))
    return answers


def _shrunk(record, n, shrink):
    from keras_msets.estimators import refined

    value, low, high, base = record
    if shrink is None or not np.isfinite(value):
        return value, low, high
    out = refined.apply_correction_shrink(
        shrink,
        [np.zeros((n, 1))],
        [np.zeros((n, 1))],
        np.array([base]),
        "identity",
        tuple(np.array([v]) for v in (value, low, high)),
    )
    return tuple(float(a[0]) for a in out)


def score(answers, shrink):
    out = {}
    for n in SIZES:
        seeds = splits.split_seeds("development", n)
        cells, hits = [], []
        for problem in problem_sets.mi_problems():
            if not runner.cell_path(ROOT, problem, n).exists():
                continue
            cell = runner.load_cell(ROOT, problem, n)
            row = splits.summarize_cell(cell, seeds)
            if row is None:
                continue
            errors = []
            for seed in seeds:
                record = cell["seeds"][str(seed)]["refined"]
                if record.get("flagged"):
                    value = cell["seeds"][str(seed)]["ksg_k3"]["value"]
                else:
                    value, low, high = _shrunk(
                        answers[f"{problem.name}/{n}/{seed}"], n, shrink
                    )
                    hits.append(low <= cell["truth"] <= high)
                errors.append(abs(value - cell["truth"]))
            best = row["classical"][row["best"]]
            cells.append((float(np.mean(errors)), best))
        out[str(n)] = {
            "cells": len(cells),
            "wins": sum(e < b for e, b in cells),
            "over_1_5": sum(e > 1.5 * b for e, b in cells),
            "mean_error": float(np.mean([e for e, _ in cells])),
            "coverage": float(np.mean(hits)),
        }
    out["all"] = {
        key: sum(v[key] for v in out.values())
        for key in ("cells", "wins", "over_1_5")
    }
    out["all"]["mean_error"] = float(
        np.mean([v["mean_error"] for k, v in out.items() if k != "all"])
    )
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.parse_args(argv)
    answers = compute(log=lambda text: print(text, flush=True))
    candidates = {"none": None}
    for below in BELOW:
        for power in POWERS:
            candidates[f"below {below}, power {power}"] = {
                "below_points": below,
                "power": power,
            }
    scores = {name: score(answers, c) for name, c in candidates.items()}
    chosen = max(
        scores,
        key=lambda k: (
            scores[k]["all"]["wins"],
            -scores[k]["all"]["over_1_5"],
            -scores[k]["all"]["mean_error"],
        ),
    )
    OUT.write_text(
        json.dumps(
            {
                "seeds": "30-49",
                "weights_sha256": _weights_sha256(),
                "chosen": chosen,
                "scores": scores,
            },
            indent=1,
        ),
        encoding="utf-8",
    )
    for name, s in scores.items():
        print(
            f"{name}: "
            + "; ".join(
                f"n={n} {v['wins']}/{v['cells']} wins, {v['over_1_5']} "
                f">1.5x, {v['mean_error']:.3f}"
                + (f", cov {v['coverage']:.2f}" if "coverage" in v else "")
                for n, v in s.items()
            )
        )
    print("chosen:", chosen)


if __name__ == "__main__":
    main()
