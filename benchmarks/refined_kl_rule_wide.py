"""The parameters of `knn_refined_kl_divergence`'s untrained size rule,
re-chosen on the wide development seeds.

The rule (`serves["size_rule"]`, `kl_excess.excess_estimate`) answers
pairs whose smaller set has fewer than 400 or at least 3,000 rows: the
base `plugin_corrected` plus the excess of the copula k-NN estimate at
`k` over its mean on `draws` Gaussian reference pairs where that excess
is at least `threshold` times its noise; its 90 % interval `value +-
1.645 scale sd`. This script computes the rule's terms once for every KL
cell of the estimator benchmark at n = 50, 150 and 10,000 (the sizes the
rule answers; cells whose `n<n>.json` exists) on the wide development
seeds (`estimator_fresh_seeds.split_seeds("development", n)`: 30-49,
30-39 at n = 10,000), as the preset computes them (`excess_terms` with
seed 0 and blocks of `whole_points(d)` rows) at k in `NEIGHBOURS` with
`DRAWS` reference draws (the first `draws` of them are the draws of a
rule with fewer), cached in `results/refined_kl_design/rule_wide_terms.
json` (a re-run computes only what is missing). It then checks that the
terms reproduce the preset's served answers ("refined" in the benchmark
cache) and scores the grid `GRID` separately on the small region (n =
50, 150) and the large one (n = 10,000).

Scores per candidate and region: the cells whose mean absolute error is
below the best classical estimator's (`estimator_fresh_seeds.
summarize_cell`: the smallest of k-NN k = 1, k = 3, the best k and the
Gaussian plug-in on the same seeds), the cells more than 1.5 times
worse, the mean of the cells' mean errors, and the coverage of the 90 %
intervals. Pairs the preset flags as outside its training ranges are
answered by the benchmark's fallback (k-NN, k = 1, no interval) as in
`estimator_fresh_seeds`, whatever the rule.

Choice rule, per region (fixed before any score was read): the most
wins, then the fewest cells > 1.5x, then the lowest mean error, over
(k, draws, threshold); its interval scale is the one of `SCALES` whose
coverage over the region is closest to 0.9 (the smaller one on a tie).
The choice replaces the earlier rule (`EARLIER`: k = 20, 3 draws,
threshold 1.5, scale 1.0, chosen on seeds 0-1) in a region only where
it ranks strictly above it by the same key. The preset as served now
is scored beside both.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/refined_kl_rule_wide.py

Writes `results/refined_kl_design/rule_wide.json` (every candidate's
scores, the served rule's, the check and the choice) and prints the top
candidates per region. The fresh seeds 5-24 are not read.

`--cost` times `excess_estimate` with the rule's earlier large-set
parameters (k = 20, 3 draws) and with `COST_RULE` on one n = 10,000 pair
of four problems (the fastest of three calls, one thread), into
`rule_wide_cost.json`.
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

import estimator_fresh_seeds as fresh  # noqa: E402
import refined_kl_benchmark  # noqa: E402
from estimator_bench import problems as problem_sets  # noqa: E402
from estimator_bench import runner  # noqa: E402

from keras_msets.stats import kl_excess  # noqa: E402

BENCH = fresh.ROOT
OUT = pathlib.Path(__file__).parent / "results" / "refined_kl_design"
TERMS = OUT / "rule_wide_terms.json"
REPORT = OUT / "rule_wide.json"
SIZES = (50, 150, 10000)
REGIONS = {"small": (50, 150), "large": (10000,)}
NEIGHBOURS = (5, 10, 20, 40)
DRAWS = 6
THRESHOLDS = (0.0, 1.0, 1.5, 2.0, 3.0)
SCALES = (0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.8, 2.0)
GRID = [
    (k, draws, threshold)
    for k in NEIGHBOURS
    for draws in (3, 6)
    for threshold in THRESHOLDS
]
Z90 = 1.6448536269514722
# The rule as served before this choice (chosen on seeds 0-1).
EARLIER = {
    "arguments": {"k": 20, "draws": 3, "threshold": 1.5},
    "interval_scale": 1.0,
}
PRESET = "knn_refined_kl_divergence"


def cells():
    """(problem, n) of every KL cell the rule answers, with a cache file."""
    for n in SIZES:
        for problem in problem_sets.all_problems():
            if problem.task != "kl":
                continue
            if runner.cell_path(BENCH, problem, n).exists():
                yield problem, n


def compute_terms(log=print):
    """`excess_terms` of every development pair (cached, resumable)."""
    cache = json.loads(TERMS.read_text()) if TERMS.exists() else {}
    pending = 0
    for problem, n in cells():
        for seed in fresh.split_seeds("development", n):
            key = f"{problem.name}/{n}/{seed}"
            if key in cache:
                continue
            x, y = problem.sample(n, seed)
            start = time.perf_counter()
            terms = kl_excess.excess_terms(x, y, NEIGHBOURS, DRAWS, seed=0)
            entry = {k: np.asarray(v).tolist() for k, v in terms.items()}
            entry["seconds"] = time.perf_counter() - start
            cache[key] = entry
            pending += 1
            if n >= 1000 or pending >= 50:
                TERMS.write_text(json.dumps(cache) + "\n")
                pending = 0
            log(f"{key}: {entry['seconds']:.2f} s")
    TERMS.write_text(json.dumps(cache) + "\n")
    return cache


def rule(terms, k, draws, threshold):
    """`excess_estimate`'s value and sd from cached terms."""
    j = NEIGHBOURS.index(k)
    reference = np.asarray(terms["reference"])[:draws, j]
    excess = terms["copula"][j] - reference.mean()
    noise = np.sqrt(np.var(reference, ddof=1) * (1 + 1 / draws))
    if abs(excess) < threshold * noise:
        excess = 0.0
    spread = np.var(
        np.asarray(terms["reference_base"])[:draws] + reference, ddof=1
    )
    sd = np.sqrt(spread + np.var(reference, ddof=1) / draws)
    return terms["base"] + excess, sd


class Cell:
    """One (problem, n) cell: truth, seeds, the best classical mean error
    and the fallback answers of flagged pairs."""

    def __init__(self, problem, n):
        data = runner.load_cell(BENCH, problem, n)
        self.name, self.n = problem.name, n
        self.seeds = fresh.split_seeds("development", n)
        self.truth = data["truth"]
        summary = fresh.summarize_cell(data, self.seeds)
        self.best = summary["classical"][summary["best"]]
        self.served_summary = summary
        self.records = [data["seeds"][str(s)]["refined"] for s in self.seeds]
        self.fallback = [
            data["seeds"][str(s)][refined_kl_benchmark.FALLBACK]["value"]
            if r.get("flagged")
            else None
            for s, r in zip(self.seeds, self.records, strict=True)
        ]

    def answers(self, cache, k, draws, threshold, scale):
        """Values and 90 % intervals (None where flagged) per seed."""
        out = []
        for seed, fallback in zip(self.seeds, self.fallback, strict=True):
            if fallback is not None:
                out.append((fallback, None))
                continue
            terms = cache[f"{self.name}/{self.n}/{seed}"]
            value, sd = rule(terms, k, draws, threshold)
            half = Z90 * scale * sd
            out.append(
                (
                    max(value, 0.0),
                    (max(value - half, 0.0), max(value + half, 0.0)),
                )
            )
        return out


def score(region_cells, cache, k, draws, threshold, scale):
    """Wins, cells > 1.5x, mean error and 90 % coverage over the cells."""
    wins = over = 0
    means, hits, failing = [], [], []
    for cell in region_cells:
        answers = cell.answers(cache, k, draws, threshold, scale)
        mean = float(np.mean([abs(v - cell.truth) for v, _ in answers]))
        means.append(mean)
        wins += mean < cell.best
        over += mean > 1.5 * cell.best
        if mean > 1.5 * cell.best:
            failing.append(f"{cell.name}/{cell.n}: {mean / cell.best:.2f}x")
        hits += [lo <= cell.truth <= hi for _, (lo, hi) in _kept(answers)]
    return {
        "cells": len(region_cells),
        "wins": int(wins),
        "over_1_5": int(over),
        "mean_error": float(np.mean(means)),
        "mean_best": float(np.mean([c.best for c in region_cells])),
        "coverage": float(np.mean(hits)) if hits else None,
        "cells_over_1_5": failing,
    }


def _kept(answers):
    return [(v, i) for v, i in answers if i is not None]


def region_parameters(rule, region):
    """`(k, draws, threshold, interval_scale)` of a `serves["size_rule"]`
    record in `region` ("large": `large_arguments` / `large_interval_scale`
    where present, as `size_rule.rule_parameters` reads them)."""
    arguments, scale = rule["arguments"], rule["interval_scale"]
    if region == "large":
        arguments = rule.get("large_arguments", arguments)
        scale = rule.get("large_interval_scale", scale)
    return (
        arguments["k"],
        arguments["draws"],
        arguments["threshold"],
        float(scale),
    )


def check_served(all_cells, cache, served):
    """Largest differences between the recomputed served rule and the
    "refined" records of the cache (value, low, high), non-flagged."""
    worst = {"value": 0.0, "low": 0.0, "high": 0.0}
    for cell in all_cells:
        region = next(r for r, sizes in REGIONS.items() if cell.n in sizes)
        answers = cell.answers(cache, *region_parameters(served, region))
        for record, (value, interval) in zip(
            cell.records, answers, strict=True
        ):
            if interval is None:
                continue
            for key, ours in zip(
                ("value", "low", "high"), (value, *interval), strict=True
            ):
                worst[key] = max(worst[key], abs(ours - record[key]))
    return worst


def _key(entry):
    return (-entry["wins"], entry["over_1_5"], entry["mean_error"])


def choose(region_cells, cache, scorer=None):
    """Every candidate's scores at every scale, ranked by the choice rule
    (its scale: coverage closest to 0.9). `scorer` replaces `score` (same
    arguments)."""
    scorer = score if scorer is None else scorer
    rows = []
    for k, draws, threshold in GRID:
        by_scale = {
            scale: scorer(region_cells, cache, k, draws, threshold, scale)
            for scale in SCALES
        }
        scale = min(
            SCALES,
            key=lambda s: (round(abs(by_scale[s]["coverage"] - 0.9), 9), s),
        )
        rows.append(
            {
                "k": k,
                "draws": draws,
                "threshold": threshold,
                "interval_scale": scale,
                **by_scale[scale],
                "coverage_by_scale": {
                    str(s): by_scale[s]["coverage"] for s in SCALES
                },
            }
        )
    rows.sort(key=_key)
    return rows


def _line(entry):
    return (
        f"k={entry['k']:2d} draws={entry['draws']} "
        f"t={entry['threshold']:.1f} x{entry['interval_scale']:.1f}: "
        f"{entry['wins']:2d}/{entry['cells']} wins, "
        f"{entry['over_1_5']} > 1.5x, mean {entry['mean_error']:.4f} "
        f"(best classical {entry['mean_best']:.4f}), "
        f"coverage {entry['coverage']:.3f}"
    )


COST_PROBLEMS = ("kl_spiral_d2", "kl_shift_d4", "kl_dense_d8", "kl_gamma_d10")
COST_RULE = {
    "earlier": {"k": 20, "draws": 3, "threshold": 1.5},
    "chosen_large": {"k": 10, "draws": 6, "threshold": 1.5},
}


def cost(repeats=3):
    """Seconds of `excess_estimate` per n = 10,000 pair and rule."""
    problems = {p.name: p for p in problem_sets.all_problems()}
    out = {}
    for name in COST_PROBLEMS:
        x, y = problems[name].sample(10000, 30)
        for label, arguments in COST_RULE.items():
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                kl_excess.excess_estimate(x, y, **arguments)
                times.append(time.perf_counter() - start)
            out[f"{name}/{label}"] = min(times)
            print(f"{name} {label}: {min(times):.2f} s", flush=True)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--terms-only", action="store_true")
    parser.add_argument("--top", type=int, default=8)
    parser.add_argument("--cost", action="store_true")
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    if args.cost:
        report = {"threads": os.environ.get("OMP_NUM_THREADS"), **cost()}
        path = OUT / "rule_wide_cost.json"
        path.write_text(json.dumps(report, indent=1) + "\n")
        return
    start = time.perf_counter()
    cache = compute_terms()
    print(f"terms: {time.perf_counter() - start:.0f} s this run", flush=True)
    if args.terms_only:
        return
    from keras_msets.estimators.refined import _serves_of

    served = _serves_of(PRESET)["size_rule"]
    all_cells = [Cell(problem, n) for problem, n in cells()]
    report = {
        "size_rule_earlier": EARLIER,
        "size_rule_served": served,
        "seeds": {
            str(n): list(fresh.split_seeds("development", n)) for n in SIZES
        },
        "terms_seconds": {
            str(n): float(
                sum(
                    v["seconds"]
                    for key, v in cache.items()
                    if key.split("/")[1] == str(n)
                )
            )
            for n in SIZES
        },
        "check_served_max_abs_difference": check_served(
            all_cells, cache, served
        ),
        "regions": {},
    }
    print("served rule recomputed vs the cache's records, max |difference|:")
    print(report["check_served_max_abs_difference"])
    for region, sizes in REGIONS.items():
        part = [c for c in all_cells if c.n in sizes]
        ranked = choose(part, cache)
        found = {}
        for label, rule in (("earlier", EARLIER), ("served", served)):
            k, draws, threshold, scale = region_parameters(rule, region)
            found[label] = {
                "k": k,
                "draws": draws,
                "threshold": threshold,
                "interval_scale": scale,
                **score(part, cache, k, draws, threshold, scale),
            }
        best = ranked[0]
        replace = _key(best) < _key(found["earlier"])
        report["regions"][region] = {
            "sizes": list(sizes),
            **found,
            "chosen": best if replace else found["earlier"],
            "replaces_earlier": bool(replace),
            "candidates": ranked,
        }
        print(f"\n{region} (n = {', '.join(map(str, sizes))}):")
        for entry in ranked[: args.top]:
            print("  " + _line(entry))
        for label, entry in found.items():
            print(f"  {label}: " + _line(entry))
        print("  replaces the earlier rule: " + str(replace))
        print("  chosen cells > 1.5x: " + ", ".join(best["cells_over_1_5"]))
    REPORT.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
