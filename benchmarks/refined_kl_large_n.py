"""An untrained rule for `knn_refined_kl_divergence` at small and large
n, chosen on the development seeds.

The rule (`kl_excess.excess_estimate`): the base `plugin_corrected`
plus the excess of the copula k-NN estimate at one k over its mean on
`draws` Gaussian reference pairs, where that excess is above `threshold`
times its noise (`soft`: shrunk by that much); its interval `value +- z
scale sd`, `sd` from the spread over the reference draws. The terms of
every development pair (seeds 0-1, every KL problem and n of the
benchmark) are computed once at k in `NEIGHBOURS` with 6 draws, on whole
sets (`whole`) and, at n = 10,000 in d > 4, on the model's blocks
(`blocked`: `kl_statistics.block_size`), cached in
`results/refined_kl_design/large_n_terms.json` (a re-run computes only
what is missing). Then, without training, the preset's model with its
base gate is compared with the rule answering from a size up, or below
one size and from another (the model between), per n: cells below the
best classical, above 1.5x, mean error, 90 % coverage, as
`refined_kl_design.score` counts them; the interval scale of each
candidate is the one whose development coverage over the rule's pairs is
closest to 0.9. The preset as served (`serves["size_rule"]`, if any) is
scored too. Held-out seeds are not read here.

    KERAS_BACKEND=torch nice -n 10 python benchmarks/refined_kl_large_n.py

`--interval-scales` writes only the served rule's development coverage
per n at interval scales 0.8-2 and at the Student-t scale of its
reference draws (`large_n_interval_scales.json`).

Writes `results/refined_kl_design/large_n.json` (`--output`: another
file; `$KERAS_MSETS_ZOO_DIR` selects the presets folder, e.g. one
holding an earlier version of the preset); prints the 20
candidates with the most development wins, the preset as served, and
the development cells more than 1.5x worse than the best classical.
"""

import argparse
import json
import os
import pathlib
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import refined_kl_design as design  # noqa: E402
import refined_kl_gate as gate_bench  # noqa: E402
from estimator_bench import runner  # noqa: E402

from keras_msets.stats import kl_excess  # noqa: E402
from keras_msets.stats import kl_statistics  # noqa: E402

TERMS = design.OUT / "large_n_terms.json"
# k of the cached terms, and the reference draws.
NEIGHBOURS = (1, 2, 3, 5, 10, 20, 40)
OUT = design.OUT / "large_n.json"
DRAWS = 6
MODES = ("whole", "blocked")
SCALES = (0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0, 2.5, 3.0)
# `--interval-scales`: the served rule's interval scales, and its file.
FINE_SCALES = (0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.8, 2.0)
SCALES_OUT = design.OUT / "large_n_interval_scales.json"
THRESHOLDS = (0.0, 1.0, 1.5, 2.0, 3.0)
# Where the rule answers: from n up, or below the first n of a pair and
# from its second (the model between).
REGIONS = (50, 150, 1000, 10000, (50, 10000), (150, 10000))
Z90 = 1.6448536269514722


def _points(mode, d):
    return 10**9 if mode == "whole" else kl_statistics.block_size(d)


def compute_terms(seeds, modes):
    """`excess_terms` of every development pair (cached, resumable)."""
    cache = json.loads(TERMS.read_text()) if TERMS.exists() else {}
    for problem, n in design._cells():
        for mode in modes:
            if mode == "blocked" and n <= kl_statistics.block_size(
                problem.dim_x
            ):
                continue  # the same as whole sets
            for seed in seeds:
                key = f"{problem.name}/{n}/{seed}/{mode}"
                if key in cache:
                    continue
                x, y = problem.sample(n, seed)
                terms = kl_excess.excess_terms(
                    x,
                    y,
                    NEIGHBOURS,
                    DRAWS,
                    points=_points(mode, x.shape[1]),
                )
                cache[key] = {
                    k: np.asarray(v).tolist() for k, v in terms.items()
                }
                TERMS.write_text(json.dumps(cache) + "\n")
                print(key, flush=True)
    return cache


def rule(terms, k, draws, threshold=0.0, soft=False):
    """Value, sd of the estimate and sd of the excess from cached terms:
    `excess_estimate` with the excess set to 0 where it is within
    `threshold` times its sd of 0 (`soft`: moved that much towards 0)."""
    j = NEIGHBOURS.index(k)
    reference = np.asarray(terms["reference"])[:draws, j]
    excess = terms["copula"][j] - reference.mean()
    noise = np.sqrt(np.var(reference, ddof=1) * (1 + 1 / draws))
    if soft:
        excess = np.sign(excess) * max(abs(excess) - threshold * noise, 0.0)
    elif abs(excess) < threshold * noise:
        excess = 0.0
    spread = np.var(
        np.asarray(terms["reference_base"])[:draws] + reference, ddof=1
    )
    sd = np.sqrt(spread + np.var(reference, ddof=1) / draws)
    return terms["base"] + excess, sd


def as_quantiles(value, low, high):
    """Rows of the nine trained quantile levels that `design.score` reads
    as this median and 90 % interval."""
    levels = np.asarray(design.QUANTILES)
    out = np.repeat(value[:, None], len(levels), axis=1)
    out[:, levels < 0.5] = low[:, None]
    out[:, levels > 0.5] = high[:, None]
    return out


def rule_answers(rows, cache, k, draws, threshold, soft=False, mode="whole"):
    """Values and sds of the rule on every row of `rows`."""
    values, sds = [], []
    for problem, n, seed in zip(
        rows["problem"], rows["n"], rows["seed"], strict=True
    ):
        key = f"{problem}/{n}/{seed}/{mode}"
        if key not in cache:
            key = f"{problem}/{n}/{seed}/whole"
        value, sd = rule(cache[key], k, draws, threshold, soft)
        values.append(value)
        sds.append(sd)
    return np.array(values), np.array(sds)


def rule_quantiles(values, sds, scale):
    half = Z90 * scale * sds
    return as_quantiles(
        np.maximum(values, 0.0),
        np.maximum(values - half, 0.0),
        np.maximum(values + half, 0.0),
    )


def shipped_quantiles(rows):
    """The shipped preset's quantiles on the development pairs, gated as
    it serves them (`refined_kl_gate._quantiles`)."""
    from keras_msets.estimators.inputs import load_estimator
    from keras_msets.estimators.refined import _serves_of

    features = kl_statistics.model_inputs(rows["statistics"])
    model = load_estimator(gate_bench.PRESET)
    raw = np.asarray(model.predict(features.astype("float32"), verbose=0), "f8")
    gate = _serves_of(gate_bench.PRESET).get("base_gate")
    return gate_bench._quantiles(raw, features, gate)


class Scorer:
    """`refined_kl_design.score` on fixed rows, from values and 90 %
    intervals, with the best classical error of each cell read once."""

    def __init__(self, rows, seeds):
        self.rows = rows
        self.cells = []
        for problem, n in design._cells():
            pick = (rows["problem"] == problem.name) & (rows["n"] == n)
            pick &= np.isin(rows["seed"], seeds)
            if not pick.any():
                continue
            summary = runner.summarize_cell(
                runner.load_cell(design.BENCH, problem, n),
                held=seeds,
                dev=seeds,
            )
            best = min(
                summary["errors"][k]
                for k in design.CLASSICAL
                if k in summary["errors"]
            )
            self.cells.append((problem.name, n, pick, best))

    def __call__(self, value, low, high, where=None):
        truth = self.rows["truth"]
        hits = (low <= truth) & (truth <= high)
        out = {}
        for _, n, pick, best in self.cells:
            if where is not None and not where[pick].all():
                continue
            ours = float(np.mean(np.abs(value[pick] - truth[pick])))
            for key in (str(n), "all"):
                part = out.setdefault(
                    key,
                    {
                        "cells": 0,
                        "wins": 0,
                        "over_1_5": 0,
                        "ours": [],
                        "best": [],
                        "hits": [],
                    },
                )
                part["cells"] += 1
                part["wins"] += int(ours < best)
                part["over_1_5"] += int(ours > 1.5 * best)
                part["ours"].append(ours)
                part["best"].append(best)
                part["hits"].extend(hits[pick].tolist())
        for part in out.values():
            part["mean_ours"] = float(np.mean(part.pop("ours")))
            part["mean_best"] = float(np.mean(part.pop("best")))
            part["coverage"] = float(np.mean(part.pop("hits")))
        return out

    def cells_over(self, value, ratio=1.5):
        truth = self.rows["truth"]
        found = []
        for name, n, pick, best in self.cells:
            ours = float(np.mean(np.abs(value[pick] - truth[pick])))
            if ours > ratio * best:
                found.append(f"{name}/{n}: {ours / best:.2f}x")
        return found


def _line(name, dev):
    parts = [f"{name:50s}"]
    for key in ("50", "150", "1000", "10000", "all"):
        if key not in dev:
            continue
        p = dev[key]
        parts.append(
            f"{key}: {p['wins']:2d}/{p['over_1_5']:2d} "
            f"{p['mean_ours']:.3f} {p['coverage']:.2f}"
        )
    return " | ".join(parts)


def _rule_grid():
    for k in (3, 5, 10, 20, 40):
        for draws in (3, 4, 6):
            for threshold in THRESHOLDS:
                for soft in (False, True):
                    if soft and threshold == 0:
                        continue
                    yield k, draws, threshold, soft


def _region(n, where):
    """Rows answered by the rule: from `where` up (an int), or (a pair)
    below its first and from its second entry."""
    if isinstance(where, tuple):
        return (n <= where[0]) | (n >= where[1])
    return n >= where


def _label(where):
    if isinstance(where, tuple):
        return f"from_{where[1]}_and_below_{where[0]}"
    return f"from_{where}"


def served_rule(rows, cache, rule):
    """Where `serves["size_rule"]` `rule` answers the development pairs
    (a boolean per row), its values and spreads there, from the cached
    terms computed as served (blocks of `whole_points(d)` rows), and which
    rows take its small-set parameters (`size_rule.rule_parameters`: the
    rest take `large_arguments` where the rule has them)."""
    n = rows["n"]
    small = n < rule["below_points"]
    region = small | (n >= rule["from_points"])
    answers = []
    for arguments in (
        rule["arguments"],
        rule.get("large_arguments", rule["arguments"]),
    ):
        answers.append(
            rule_answers(
                rows,
                cache,
                arguments["k"],
                arguments["draws"],
                arguments["threshold"],
                mode="blocked",
            )
        )
    values = np.where(small, answers[0][0], answers[1][0])
    sds = np.where(small, answers[0][1], answers[1][1])
    return region, values, sds, small


def served(rows, cache, model, score, rule):
    """The preset as it serves the development pairs: `model` (value,
    low, high) where `serves["size_rule"]` `rule` does not answer, the
    rule from the cached terms (`k` among `NEIGHBOURS`; the blocked terms
    where the sets are cut into blocks) where it does."""
    region, values, sds, small = served_rule(rows, cache, rule)
    large_scale = rule.get("large_interval_scale", rule["interval_scale"])
    q = np.where(
        small[:, None],
        rule_quantiles(values, sds, rule["interval_scale"]),
        rule_quantiles(values, sds, large_scale),
    )
    mixed = [
        np.where(region, a, b)
        for a, b in zip((q[:, 4], q[:, 0], q[:, -1]), model, strict=True)
    ]
    return {"dev": score(*mixed), "cells_over_1_5": score.cells_over(mixed[0])}


def interval_scales(rows, cache, model, score, rule):
    """Development coverage of the served rule's 90 % intervals per n at
    every scale of `FINE_SCALES` (the model's answers elsewhere), and the
    same with `sd` from the reference draws read as a Student t with
    `draws - 1` degrees of freedom (the scale `t / z`)."""
    from scipy import stats

    # One scale for both regions here (the small-set rule's draws).
    region, values, sds, _ = served_rule(rows, cache, rule)
    arguments = rule["arguments"]
    student = stats.t.ppf(0.95, arguments["draws"] - 1) / Z90
    out = {"size_rule": rule, "student_scale": float(student), "rows": []}
    for scale in (*FINE_SCALES, float(student)):
        q = rule_quantiles(values, sds, scale)
        mixed = [
            np.where(region, a, b)
            for a, b in zip((q[:, 4], q[:, 0], q[:, -1]), model, strict=True)
        ]
        dev = score(*mixed)
        row = {"scale": scale}
        row.update({key: dev[key]["coverage"] for key in dev})
        out["rows"].append(row)
        print(
            f"scale {scale:.2f}: "
            + ", ".join(f"{k} {v:.3f}" for k, v in row.items() if k != "scale"),
            flush=True,
        )
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--modes", nargs="+", default=list(MODES))
    parser.add_argument("--terms-only", action="store_true")
    parser.add_argument("--output", type=pathlib.Path, default=OUT)
    parser.add_argument(
        "--interval-scales",
        action="store_true",
        help="only the served rule's development coverage per n and "
        f"interval scale, into {SCALES_OUT.name}",
    )
    args = parser.parse_args(argv)
    seeds = list(runner.DEV_SEEDS)
    cache = compute_terms(seeds, args.modes)
    if args.terms_only:
        return
    rows = design.benchmark_statistics(
        seeds, design.OUT / "statistics_dev_v2.npz"
    )
    rows["statistics"] = design.current(rows["statistics"])
    score = Scorer(rows, seeds)
    model = shipped_quantiles(rows)
    low, high = design.scaled_interval(model, 1.0)
    model = (model[:, len(design.QUANTILES) // 2], low, high)
    if args.interval_scales:
        from keras_msets.estimators.refined import _serves_of

        rule = _serves_of(gate_bench.PRESET)["size_rule"]
        report = interval_scales(rows, cache, model, score, rule)
        report["preset_sha256"] = _weights_sha256()
        SCALES_OUT.write_text(json.dumps(report, indent=1) + "\n")
        return
    report = {
        "model_and_gate": {
            "dev": score(*model),
            "cells_over_1_5": score.cells_over(model[0]),
        }
    }
    print("per n: wins / cells > 1.5x, mean error, 90 % coverage")
    print(_line("model and gate", report["model_and_gate"]["dev"]))
    ranked = []
    for mode in args.modes:
        for k, draws, threshold, soft in _rule_grid():
            if mode == "blocked" and (draws != DRAWS or soft):
                continue
            values, sds = rule_answers(
                rows, cache, k, draws, threshold, soft, mode
            )
            name = f"rule_{mode}_k{k}_draws{draws}_t{threshold}" + (
                "_soft" if soft else ""
            )
            entry = {}
            for where in REGIONS:
                region = _region(rows["n"], where)
                found = {}
                for scale in SCALES:
                    q = rule_quantiles(values, sds, scale)
                    found[scale] = (q[:, 4], q[:, 0], q[:, -1])
                # The interval scale whose coverage over the rule's
                # region is closest to 0.9.
                cover = {
                    scale: score(*found[scale], where=region)["all"]["coverage"]
                    for scale in SCALES
                }
                scale = min(SCALES, key=lambda s: abs(cover[s] - 0.9))
                mixed = [
                    np.where(region, a, b)
                    for a, b in zip(found[scale], model, strict=True)
                ]
                dev = score(*mixed)
                entry[_label(where)] = {"interval_scale": scale, "dev": dev}
                ranked.append(
                    (dev["all"]["wins"], -dev["all"]["over_1_5"], name, where)
                )
            report[name] = entry
    ranked.sort(key=lambda r: r[:2], reverse=True)
    print("the 20 with the most wins (then the fewest cells > 1.5x):")
    for _, _, name, where in ranked[:20]:
        e = report[name][_label(where)]
        label = f"{name} {_label(where)} x{e['interval_scale']}"
        print(_line(label, e["dev"]))
    from keras_msets.estimators.refined import _serves_of

    rule = _serves_of(gate_bench.PRESET).get("size_rule")
    if rule is not None:
        report["served"] = {"size_rule": rule}
        report["served"].update(served(rows, cache, model, score, rule))
        print(_line("served (size rule)", report["served"]["dev"]))
        print("cells > 1.5x:", ", ".join(report["served"]["cells_over_1_5"]))
    print(
        "model and gate, cells > 1.5x:",
        ", ".join(report["model_and_gate"]["cells_over_1_5"]),
    )
    report["preset_sha256"] = _weights_sha256()
    args.output.write_text(json.dumps(report, separators=(",", ":")) + "\n")


_weights_sha256 = gate_bench._weights_sha256

if __name__ == "__main__":
    main()
