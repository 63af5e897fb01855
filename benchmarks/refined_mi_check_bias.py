"""Bands of the refined MI whole-sample check that allow for the rule's own
bias, on the development seeds.

The check (`keras_msets.estimators.whole_sample_check`) replaces the
preset's answer by the whole-sample rule `base + KSG_3(sample) -
KSG_3(reference)` where the two differ by more than `band x sd`. The rule
is biased where KSG is: the rule's excess is a difference of two KSG
estimates, and where KSG misses much of the information of the Gaussian
reference (its bias `B = base - KSG_3(reference)` is large) a real excess
of the sample is compressed too (`mi_uniform_noise_d5` at n = 1,000: an
excess of 0.13 nats for a true 1.28). Candidates add a term `bias` to
the band (and to the half-width of the rule's interval where it answers):

- `+c`: a constant (nats);
- `B x f`: `f max(B, 0)`;
- `B*excess x f`: `f max(B, 0) max(|excess| - 1.645 sd, 0)`, the
  reference's bias times the part of the excess beyond its noise (zero
  where the copula looks Gaussian: the rule is then trusted).

Reads the per-sample records of `refined_mi_large_n.py`
(`refined_mi_large_n_dev.json`) and the preset's answers without the
check as committed at `--preset-rev`; counts wins / cells over 1.5x /
mean error against the best classical estimator per cell and the
coverage of the 90 % intervals, per n (the check acts from n = 1,000)
and over all cells, into
`results/estimator_benchmark/refined_mi_check_bias_dev.json`.

    python benchmarks/refined_mi_check_bias.py --preset-rev 01c020d
"""

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import refined_mi_large_n as large_n  # noqa: E402
from estimator_bench import problems as problem_sets  # noqa: E402
from estimator_bench import runner  # noqa: E402

ROOT = large_n.ROOT
OUT = ROOT / "refined_mi_check_bias_dev.json"
Z = 1.645
# The shipped check: band 3 x 1.645 spreads, interval x3.
BAND, SCALE = 3 * Z, 3.0
FROM_POINTS = 1000


def rule_terms(record):
    """`(value, sd, B, excess)` of the k = 3 rule of one record."""
    base = record["base"]
    excess = record["ksg"][1] - record["reference"][1]
    parts = np.array(record["parts"])
    sd = np.std(parts[:, 1], ddof=1) / np.sqrt(large_n.PARTS)
    return base + excess, sd, base - record["reference"][1], excess


def bias_term(kind, f, sd, bias, excess):
    if kind == "none":
        return 0.0
    if kind == "const":
        return f
    if kind == "B":
        return f * max(bias, 0.0)
    if kind == "B*excess":
        return f * max(bias, 0.0) * max(abs(excess) - Z * sd, 0.0)
    raise ValueError(kind)


def evaluate(records, load, kind, f, sizes):
    def rule_for(problem, n, seed):
        if kind == "off" or n < FROM_POINTS:
            return None
        rule, sd, bias, excess = rule_terms(
            records[f"{problem.name}/{n}/{seed}"]
        )
        return rule, sd, bias_term(kind, f, sd, bias, excess), None

    return evaluate_check(load, sizes, rule_for)


def evaluate_check(load, sizes, rule_for, timed=False):
    """The preset's development-seed answers with a check, per n and over
    all cells: wins, cells over 1.5x and mean error against the best
    classical estimator per cell, coverage of the 90 % intervals.

    `rule_for(problem, n, seed)` gives `(rule, sd, extra, cpu seconds)`
    where the check acts (the rule replaces the answer where the two
    differ by more than `BAND * sd + extra`), else None; with `timed`,
    the rule's CPU seconds are summarised too.
    """
    out = {}
    for n in sizes:
        cells, seconds = [], []
        for problem in problem_sets.mi_problems():
            if not runner.cell_path(ROOT, problem, n).exists():
                continue
            cell = load(problem, n)
            classical = runner.summarize_cell(
                cell, held=runner.DEV_SEEDS, dev=runner.DEV_SEEDS
            )["errors"]
            best = min(
                classical[k] for k in large_n.CLASSICAL if k in classical
            )
            errors, hits = [], []
            for seed in runner.DEV_SEEDS:
                preset = cell["seeds"][str(seed)]["refined"]
                value, low, high = (preset[k] for k in ("value", "low", "high"))
                terms = rule_for(problem, n, seed)
                if terms is not None:
                    rule, sd, extra, cpu = terms
                    seconds.append(cpu)
                    if abs(value - rule) > BAND * sd + extra:
                        half = Z * SCALE * sd + extra
                        value = max(rule, 0.0)
                        low = max(rule - half, 0.0)
                        high = max(rule + half, 0.0)
                errors.append(abs(value - cell["truth"]))
                hits.append(low <= cell["truth"] <= high)
            ratio = np.mean(errors) / max(best, 1e-12)
            cells.append((problem.name, np.mean(errors), best, ratio, hits))
        out[str(n)] = {
            **large_n.summarise_cells(cells),
            "errors": [float(c[1]) for c in cells],
            "hits": [int(h) for c in cells for h in c[4]],
        }
        if timed:
            out[str(n)]["rule_cpu_seconds_max"] = float(
                max(seconds, default=0.0)
            )
            out[str(n)]["rule_cpu_seconds_mean"] = float(
                np.mean(seconds or [0.0])
            )
    every = list(out.values())
    out["all"] = {
        "cells": sum(v["cells"] for v in every),
        "wins": sum(v["wins"] for v in every),
        "over_1_5": sum(v["over_1_5"] for v in every),
        "mean_ours": float(np.mean([e for v in every for e in v["errors"]])),
        "coverage": float(np.mean([h for v in every for h in v["hits"]])),
    }
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=large_n.SIZES)
    parser.add_argument("--preset-rev", default="01c020d")
    args = parser.parse_args(argv)
    records = json.loads(large_n.OUT.read_text())
    load = large_n.cell_loader(args.preset_rev)
    candidates = [("off", 0.0), ("none", 0.0)]
    candidates += [("const", c) for c in (0.05, 0.1, 0.2, 0.5)]
    candidates += [("B", f) for f in (0.1, 0.2, 0.3, 0.5, 1.0)]
    candidates += [("B*excess", f) for f in (1, 2, 5, 10, 20, 50)]
    results = {}
    for kind, f in candidates:
        label = {"off": "no check", "none": "shipped check"}.get(
            kind, f"{kind} x {f:g}"
        )
        results[label] = evaluate(records, load, kind, f, args.sizes)
        line = "; ".join(
            f"n={n}: {v['wins']}/{v['cells']} wins, {v['over_1_5']} >1.5x, "
            f"{v['mean_ours']:.3f}, cov {v['coverage']:.3f}"
            for n, v in results[label].items()
        )
        print(f"{label}: {line}", flush=True)
    OUT.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
