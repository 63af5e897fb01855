"""The base gates (and the MI correction shrink) of the refined estimators,
re-chosen together on the wide development seeds.

`serves["base_gate"]` (`keras_msets.estimators.refined.apply_base_gate`)
answers with the base (the bias-corrected Gaussian-copula plug-in) where
the model's k-NN / KSG excess statistic `feature` is within `below *
exp(scale_power * log_n)` of 0. Before this choice the KL preset
shipped `knn_excess_k2 < 0.03` and the MI preset `ksg_excess_k3 <
0.05` (chosen on seeds 0-1) with the shrink `below_points` 500, power
0.5; now `knn_excess_k3 < 0.03` and `ksg_excess_k3 < 0.12` with
`below_points` 300, this script's choices ("shipped" in its output is
what the presets serve when it runs).
This script records, once per sample of the wide development split of
`estimator_fresh_seeds.py` (seeds 30-49), the preset's answer before the
gate and the shrink, its statistics and the whole-sample check's rule
(MI from 1,000 rows), for every problem at the sizes the model answers
(MI: 50, 150, 1,000, 10,000; KL: 1,000, where the KL size rule does
not answer), then
scores every candidate gate (feature, bound at n = 150, power of n; off)
with every MI shrink candidate (`refined_mi_correction_shrink.py`'s grid)
against the classical estimators on the same samples: cells below the
best classical error, cells over 1.5x, mean error, coverage of the 90 %
intervals. The order of the preset is kept: gate, shrink, outside-range
handling, whole-sample check. The choice per task: the most wins, then
the fewest cells over 1.5x, then the lowest mean error. Records
(resumable): `results/estimator_benchmark/refined_base_gates_records.json`;
scores (the served choice's and the first 25 of the ranking):
`refined_base_gates.json`.

    KERAS_BACKEND=torch OMP_NUM_THREADS=1 \\
        python benchmarks/refined_base_gates_wide.py
"""

import argparse
import functools
import hashlib
import json
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import estimator_fresh_seeds as splits  # noqa: E402
import refined_kl_benchmark  # noqa: E402
from estimator_bench import problems as problem_sets  # noqa: E402
from estimator_bench import runner  # noqa: E402

ROOT = splits.ROOT
RECORDS = ROOT / "refined_base_gates_records.json"
OUT = ROOT / "refined_base_gates.json"
LEVEL = 0.9
PRESETS = {
    "kl": "knn_refined_kl_divergence",
    "mi": "knn_refined_mutual_information",
}
SIZES = {"kl": (1000,), "mi": (50, 150, 1000, 10000)}
GATE_FEATURES = {
    "kl": ("knn_excess_k1", "knn_excess_k2", "knn_excess_k3", "knn_excess_k5"),
    "mi": ("ksg_excess_k1", "ksg_excess_k3", "ksg_excess_k10"),
}
BOUNDS_AT_150 = (0.01, 0.02, 0.03, 0.05, 0.08, 0.12, 0.2, 0.3)
POWERS = (0.0, -0.25, -0.5)
SHRINK_BELOW = (300, 500, 1000, 2000)
SHRINK_POWERS = (0.1, 0.2, 0.33, 0.5, 0.75)
TOP = 25
FALLBACK = {"kl": refined_kl_benchmark.FALLBACK, "mi": "ksg_k3"}


def _weights_sha256(task):
    from keras_msets.zoo import registry

    path = registry.preset_dir(PRESETS[task])
    return hashlib.sha256((path / "model.weights.h5").read_bytes()).hexdigest()


@functools.cache
def _serves(task):
    from keras_msets.estimators import refined

    return refined._serves(PRESETS[task])[0]


def _problems(task):
    if task == "kl":
        return problem_sets.kl_problems()
    return problem_sets.mi_problems()


def _raw(task, x, y):
    """The preset's answer before its gate and shrink: a dict of the
    statistics, the base, the model's (value, low, high), the check
    rule's output where it ran, and whether the pair was flagged."""
    from keras_msets import estimators
    from keras_msets.estimators import refined
    from keras_msets.stats import mi_statistics

    captured = {}
    real_gate = refined.apply_base_gate
    real_shrink = refined.apply_correction_shrink
    real_rule = mi_statistics.whole_sample_estimate

    def gate(gate, features, names, base, target, answers):
        captured["features"] = dict(
            zip(names, [float(v) for v in features[0]], strict=True)
        )
        captured["base"] = float(base[0])
        captured["model"] = [float(a[0]) for a in answers]
        return answers

    def shrink(shrink, x_sets, y_sets, base, target, answers):
        return answers

    def rule(*args, **kwargs):
        out = real_rule(*args, **kwargs)
        captured["rule"] = None if out is None else [float(v) for v in out]
        return out

    refined.apply_base_gate = gate
    refined.apply_correction_shrink = shrink
    mi_statistics.whole_sample_estimate = rule
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            function = (
                estimators.kl_divergence
                if task == "kl"
                else estimators.mutual_information
            )
            answer = function(x, y, interval=LEVEL)
    finally:
        refined.apply_base_gate = real_gate
        refined.apply_correction_shrink = real_shrink
        mi_statistics.whole_sample_estimate = real_rule
    captured["flagged"] = any(
        "outside what preset" in str(w.message) for w in caught
    )
    captured["final"] = [answer.value, answer.low, answer.high]
    return captured


def compute(tasks, log=print):
    records = json.loads(RECORDS.read_text()) if RECORDS.exists() else {}
    for task in tasks:
        sha = _weights_sha256(task)
        stored = records.setdefault(task, {"weights_sha256": sha})
        if stored["weights_sha256"] != sha:
            raise SystemExit(
                f"{RECORDS} holds {task} answers of other weights; move it "
                "away to recompute"
            )
        answers = stored.setdefault("answers", {})
        for n in SIZES[task]:
            for problem in _problems(task):
                if not runner.cell_path(ROOT, problem, n).exists():
                    continue
                todo = [
                    seed
                    for seed in splits.split_seeds("development", n)
                    if f"{problem.name}/{n}/{seed}" not in answers
                ]
                for seed in todo:
                    x, y = problem.sample(n, seed)
                    answers[f"{problem.name}/{n}/{seed}"] = _raw(task, x, y)
                if todo:
                    log(f"{task} {problem.name} n={n}: {len(todo)} samples")
                    RECORDS.write_text(json.dumps(records, indent=0))
    return records


def _check_again(task, record, answers):
    """The whole-sample check of the MI preset on `answers` (arrays of
    one row), as `refined` applies it, from the recorded rule output."""

    check = _serves(task).get("whole_sample_check")
    rule = record.get("rule")
    if check is None or rule is None or record["flagged"]:
        return answers
    if not np.isfinite(rule[1]):
        return answers
    from statistics import NormalDist

    value, sd, *rest = rule
    bias = float(rest[0]) if rest else 0.0
    estimate, low, high = (float(a[0]) for a in answers)
    if abs(estimate - value) <= float(check["band"]) * sd + bias:
        return answers
    half = NormalDist().inv_cdf((1 + LEVEL) / 2) * float(
        check["interval_scale"]
    )
    return (
        np.array([max(value, 0.0)]),
        np.array([max(value - half * sd - bias, 0.0)]),
        np.array([max(value + half * sd + bias, 0.0)]),
    )


def answer(task, record, n, gate, shrink):
    """The preset's (value, low, high) for one recorded sample under
    `gate` and `shrink` (None: off)."""
    from keras_msets.estimators import refined

    serves = _serves(task)
    names = list(record["features"])
    features = np.array([[record["features"][k] for k in names]])
    base = np.array([record["base"]])
    answers = tuple(np.array([v]) for v in record["model"])
    answers = refined.apply_base_gate(
        gate, features, names, base, serves["target"], answers
    )
    answers = refined.apply_correction_shrink(
        shrink,
        [np.zeros((n, 1))],
        [np.zeros((n, 1))],
        base,
        serves["target"],
        answers,
    )
    answers = _check_again(task, record, answers)
    return tuple(float(a[0]) for a in answers)


@functools.cache
def _cell(task, name, n):
    """The benchmark cell and its development-seed summary (or None)."""
    problem = next(p for p in _problems(task) if p.name == name)
    if not runner.cell_path(ROOT, problem, n).exists():
        return None, None
    cell = runner.load_cell(ROOT, problem, n)
    return cell, splits.summarize_cell(
        cell, splits.split_seeds("development", n)
    )


def score(task, records, gate, shrink):
    answers = records[task]["answers"]
    out = {}
    for n in SIZES[task]:
        seeds = splits.split_seeds("development", n)
        cells, hits = [], []
        for problem in _problems(task):
            cell, row = _cell(task, problem.name, n)
            if row is None:
                continue
            errors = []
            for seed in seeds:
                record = answers[f"{problem.name}/{n}/{seed}"]
                if record["flagged"]:
                    fallback = cell["seeds"][str(seed)][FALLBACK[task]]
                    value = fallback["value"]
                else:
                    value, low, high = answer(task, record, n, gate, shrink)
                    hits.append(low <= cell["truth"] <= high)
                errors.append(abs(value - cell["truth"]))
            best = row["classical"][row["best"]]
            cells.append((problem.name, float(np.mean(errors)), best))
        out[str(n)] = {
            "cells": len(cells),
            "wins": sum(e < b for _, e, b in cells),
            "over_1_5": sum(e > 1.5 * b for _, e, b in cells),
            "over_cells": [p for p, e, b in cells if e > 1.5 * b],
            "mean_error": float(np.mean([e for _, e, _ in cells])),
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


def candidates(task):

    serves = _serves(task)
    gates = {"off": None, "shipped": serves.get("base_gate")}
    for feature in GATE_FEATURES[task]:
        for bound in BOUNDS_AT_150:
            for power in POWERS:
                gate = {
                    "feature": feature,
                    "below": round(bound * 150.0 ** (-power), 6),
                }
                if power:
                    gate["scale_feature"] = "log_n"
                    gate["scale_power"] = power
                gates[f"{feature} < {bound} at n=150, n^{power}"] = gate
    shrinks = {"shipped": serves.get("correction_shrink")}
    if task == "mi":
        shrinks["off"] = None
        for below in SHRINK_BELOW:
            for power in SHRINK_POWERS:
                shrinks[f"below {below}, power {power}"] = {
                    "below_points": below,
                    "power": power,
                }
    return gates, shrinks


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["kl", "mi"])
    parser.add_argument(
        "--records-only",
        action="store_true",
        help="record the samples' answers and stop",
    )
    args = parser.parse_args(argv)
    records = compute(args.tasks, log=lambda text: print(text, flush=True))
    if args.records_only:
        return
    results = json.loads(OUT.read_text()) if OUT.exists() else {}
    for task in args.tasks:
        gates, shrinks = candidates(task)
        scores = {}
        for gate_name, gate in gates.items():
            for shrink_name, shrink in shrinks.items():
                key = f"gate {gate_name}; shrink {shrink_name}"
                scores[key] = {
                    "gate": gate,
                    "shrink": shrink,
                    "score": score(task, records, gate, shrink),
                }
        order = sorted(
            scores,
            key=lambda k: (
                -scores[k]["score"]["all"]["wins"],
                scores[k]["score"]["all"]["over_1_5"],
                scores[k]["score"]["all"]["mean_error"],
            ),
        )
        shipped = "gate shipped; shrink shipped"
        results[task] = {
            "seeds": "30-49",
            "sizes": list(SIZES[task]),
            "weights_sha256": records[task]["weights_sha256"],
            "shipped": scores[shipped],
            "chosen": order[0],
            "candidates": len(scores),
            # The first TOP candidates of the ranking (the file stays small).
            "top": {k: scores[k] for k in order[:TOP]},
        }
        for key in [shipped] + order[:8]:
            s = scores[key]["score"]
            print(
                f"{task} {key}: "
                + "; ".join(
                    f"n={n} {v['wins']}/{v['cells']} wins, {v['over_1_5']} "
                    f">1.5x, {v['mean_error']:.4f}"
                    + (f", cov {v['coverage']:.2f}" if "coverage" in v else "")
                    for n, v in s.items()
                )
            )
        print(f"{task} chosen: {order[0]}")
    OUT.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
