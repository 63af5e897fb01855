"""The KL size rule between the sizes it answers, in low d, chosen on the
wide development seeds.

`knn_refined_kl_divergence` answers pairs whose smaller set has 400 to
2,999 points with its model, every other pair with the untrained rule
(`kl_excess.excess_estimate`). At n = 1,000 the rule won more
development cells than the model (13 against 11 of 17,
`refined_kl_rule_small_k.py`) but cost about 60 ms per pair against the
50 ms target, so the model kept the middle sizes. The rule's `draws + 1`
k-NN jobs now run on two threads in `d <= 4` (`kl_excess._parallel`),
and the cells the model loses at n = 1,000 are the low-d ones. This
script scores, on the rule's cached terms at n = 1,000 (`rule_small_k_
terms.json`: k = 1, 2, 3, 5, 10, six reference draws, development seeds
30-49), the preset whose rule also answers the middle sizes in `d <= D`
(`serves["size_rule"]["middle_max_dim"]`), the model answering the
others, for every `D` among the benchmark's dimensions (0: the model
everywhere between the sizes). The model's answers are computed here,
through `kl_divergence` with the preset's middle rule switched off
(`without_middle_rule`), so the script reproduces its choice after the
rule was written into the preset (the benchmark's "refined" records
then hold the rule's answers).

For each `D` the rule's parameters (k, draws, threshold; the interval
scale whose coverage over the region's intervals is closest to 0.9) are
ranked as in `refined_kl_rule_wide.py` (the most wins, then the fewest
cells over 1.5x, then the lowest mean error); then the `D`s by the same
key, the smaller `D` on a tie (fewer pairs change). Fixed before any
score was read. Pairs the model's preset flags (out of its training
ranges: no interval) are answered by its fallback under every
candidate, as in the other rule scripts (in the preset a pair the rule
answers is never checked against the model's training ranges;
`estimator_fresh_seeds.py --rerun-preset` measures that).
The fresh seeds 5-24 are not read.

    OMP_NUM_THREADS=1 python benchmarks/refined_kl_rule_middle.py

Writes `results/refined_kl_design/rule_middle.json`. `--cost` also times
`kl_divergence(x, y, interval=0.9)` with the model and with the chosen
rule at n = 1,000 in d = 1-4 (`N(0, I)` against a shifted copy, the fastest of
`--repeats` calls after a first one, the process's threads).
"""

import argparse
import contextlib
import json
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import refined_kl_rule_small_k as small_k  # noqa: E402

wide = small_k.wide
REPORT = wide.OUT / "rule_middle.json"
N = 1000


def dimension(name):
    """`d` of a KL problem, from its name (`kl_<family>_d<d>[_...]`)."""
    return int(name.rsplit("_d", 1)[1].split("_")[0])


@contextlib.contextmanager
def middle_rule(change):
    """The preset's `serves["size_rule"]` without its middle rule, plus
    `change` (a dict of middle keys, or None), while the block runs."""
    from keras_msets.estimators import refined

    serves = refined._serves_of(wide.PRESET)
    original = serves["size_rule"]
    rule = {k: v for k, v in original.items() if not k.startswith("middle_")}
    serves["size_rule"] = {**rule, **(change or {})}
    try:
        yield
    finally:
        serves["size_rule"] = original


def model_answers(problem, cell):
    """The model's answers on the cell's pairs (the middle rule off):
    value and 90 % interval per seed, None where the preset flags the pair
    and its fallback answers."""
    from keras_msets import estimators

    out = []
    with middle_rule(None), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in cell.seeds:
            answer = estimators.kl_divergence(
                *problem.sample(N, seed), interval=0.9
            )
            flagged = np.isnan(answer.low)
            out.append(
                (answer.value, None if flagged else (answer.low, answer.high))
            )
    return out


def rule_answer(cache, cell, seed, k, draws, threshold, scale):
    """The rule's value and 90 % interval for one pair (as `wide.Cell`)."""
    value, sd = wide.rule(cache[f"{cell.name}/{N}/{seed}"], k, draws, threshold)
    half = wide.Z90 * scale * sd
    return max(value, 0.0), (max(value - half, 0.0), max(value + half, 0.0))


def score(cells, cache, limit, k, draws, threshold, scale):
    """Wins, cells > 1.5x, mean error and 90 % coverage of the preset whose
    rule answers the cells in `d <= limit`."""
    wins = over = 0
    means, hits, failing = [], [], []
    for cell in cells:
        answers = cell.model
        if dimension(cell.name) <= limit:
            answers = [
                model
                if model[1] is None
                else rule_answer(cache, cell, seed, k, draws, threshold, scale)
                for seed, model in zip(cell.seeds, cell.model, strict=True)
            ]
        mean = float(np.mean([abs(v - cell.truth) for v, _ in answers]))
        means.append(mean)
        wins += mean < cell.best
        over += mean > 1.5 * cell.best
        if mean > 1.5 * cell.best:
            failing.append(f"{cell.name}: {mean / cell.best:.2f}x")
        hits += [lo <= cell.truth <= hi for _, (lo, hi) in wide._kept(answers)]
    return {
        "wins": int(wins),
        "over_1_5": int(over),
        "mean_error": float(np.mean(means)),
        "coverage": float(np.mean(hits)),
        "cells_over_1_5": failing,
    }


def best_rule(cells, cache, limit):
    """The rule's parameters ranked first for `middle_max_dim = limit`
    (`refined_kl_rule_wide.choose` with this script's `score`)."""

    def scorer(cells, cache, k, draws, threshold, scale):
        return score(cells, cache, limit, k, draws, threshold, scale)

    return wide.choose(cells, cache, scorer)[0]


def timing(rule, repeats):
    """Seconds of `kl_divergence(..., interval=0.9)` at n = 1,000 in d =
    1-4, with the model and with `rule` as the middle rule."""
    from keras_msets import estimators

    out = {}
    for label, change in (("model", None), ("middle rule", rule)):
        with middle_rule(change):
            times_of = _times(estimators.kl_divergence, repeats)
        for d, seconds in times_of.items():
            out[f"{label}, d = {d}"] = seconds
            print(f"{label}, d = {d}: {1000 * seconds:.1f} ms", flush=True)
    return out


def _times(estimate, repeats):
    """The fastest of `repeats` calls after a first one, per d = 1-4."""
    out = {}
    for d in (1, 2, 3, 4):
        rng = np.random.default_rng(d)
        x = rng.normal(size=(N, d))
        y = rng.normal(size=(N, d)) + d**-0.5
        estimate(x, y, interval=0.9)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            estimate(x, y, interval=0.9)
            times.append(time.perf_counter() - start)
        out[d] = min(times)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cost", action="store_true")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    cache = json.loads(small_k.TERMS.read_text())
    cells = []
    for problem, n in wide.cells():
        if n == N:
            cell = wide.Cell(problem, n)
            cell.model = model_answers(problem, cell)
            cells.append(cell)
    missing = [
        f"{c.name}/{N}/{s}"
        for c in cells
        for s in c.seeds
        if f"{c.name}/{N}/{s}" not in cache
    ]
    if missing:
        raise SystemExit(
            f"{len(missing)} pairs lack their terms (first: {missing[0]}); "
            "run benchmarks/refined_kl_rule_small_k.py --terms-only"
        )
    limits = [0, *sorted({dimension(c.name) for c in cells})]
    rows = []
    for limit in limits:
        entry = {"middle_max_dim": limit, **best_rule(cells, cache, limit)}
        if limit == 0:  # no pair is the rule's: its parameters are moot
            entry.update(k=None, draws=None, threshold=None)
            entry["interval_scale"] = None
        rows.append(entry)
        print(
            f"d <= {limit:2d}: k={entry['k']} draws={entry['draws']} "
            f"t={entry['threshold']} x{entry['interval_scale']}: "
            f"{entry['wins']}/{len(cells)} wins, {entry['over_1_5']} > 1.5x, "
            f"mean {entry['mean_error']:.4f}, coverage "
            f"{entry['coverage']:.3f}; > 1.5x: "
            + ", ".join(entry["cells_over_1_5"]),
            flush=True,
        )
    chosen = min(rows, key=lambda e: (wide._key(e), e["middle_max_dim"]))
    report = {
        "n": N,
        "seeds": list(cells[0].seeds),
        "cells": len(cells),
        "model_only": rows[0],
        "candidates": rows,
        "chosen": chosen,
    }
    print(f"chosen: d <= {chosen['middle_max_dim']}", flush=True)
    if args.cost and chosen["middle_max_dim"] > 0:
        report["cost_seconds"] = timing(
            {
                "middle_max_dim": chosen["middle_max_dim"],
                "middle_arguments": {
                    "k": chosen["k"],
                    "draws": chosen["draws"],
                    "threshold": chosen["threshold"],
                },
                "middle_interval_scale": chosen["interval_scale"],
            },
            args.repeats,
        )
        report["cost_threads"] = os.environ.get("OMP_NUM_THREADS")
    REPORT.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
