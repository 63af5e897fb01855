"""Benchmark of the estimators against classical and neural baselines.

Problems with known answers (`estimator_bench/problems.py`: mutual
information, KL divergence, two-sample), sample sizes `--sizes`, seeds
0-1 (development: the choice of k for "best k") and 2-4 (held out: the
reported table). Every (problem, n, seed, estimator) result is cached in
`benchmarks/results/estimator_benchmark/<problem>/n<n>.json`; a re-run
computes only what is missing. Estimators run in phases: `cheap`
(k-NN KL and KSG with k = 1, 2, 3, 5, 10, Gaussian plug-ins, the MMD and
classifier two-sample tests), `ours` (the pretrained
`keras_msets.estimators`), `neural` (MINE and InfoNCE trained per
sample).

    KERAS_BACKEND=torch nice -n 15 python benchmarks/estimator_benchmark.py

Every backend library runs on one thread (`--threads`): on a machine whose
cores are busy, torch with two threads was measured 300 times slower per
training step of MINE than with one (0.48 s against 1.5 ms).
    python benchmarks/estimator_benchmark.py --quick  # a few minutes
    python benchmarks/estimator_benchmark.py --summary-only

The summary (`summary.json`, `summary.md` in the results folder) is
written from whatever the cache holds.
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

ROOT = pathlib.Path(__file__).parent / "results" / "estimator_benchmark"
SIZES = (50, 150, 1000)
QUICK_PROBLEMS = (
    "mi_gauss_d3",
    "mi_student_nu2_d3",
    "mi_spiral_d2",
    "kl_shift_d4",
    "kl_cube_d2",
    "ts_shift_d8",
)
QUICK_SEEDS = (0, 2)  # one development seed, one held-out seed


def _limit_threads(threads):
    """Runs torch, TensorFlow, JAX (XLA) and BLAS on `threads` threads."""
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(threads)
    if threads == 1:
        os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false"
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    if backend == "torch":
        import torch

        torch.set_num_threads(threads)
    elif backend == "tensorflow":
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)


def _fmt(value, digits=3):
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    return f"{value:.{digits}f}"


def _table(rows, task):
    rows = [r for r in rows if r["task"] == task]
    lines = []
    if task == "two_sample":
        lines.append(
            "| problem | d | n | MMD | C2ST | statistics | mst_two_sample | "
            "time MMD / C2ST / statistics / mst_two_sample (s) |"
        )
        lines.append("|---|---:|---:|---:|---:|---:|---:|---|")
        for r in rows:
            a, s = r["accuracy"], r["seconds"]
            lines.append(
                f"| {r['problem']} | {r['dim_x']} | {r['n']} | "
                f"{_fmt(a.get('mmd'), 2)} | {_fmt(a.get('c2st'), 2)} | "
                f"{_fmt(a.get('statistics'), 2)} | {_fmt(a.get('ours'), 2)} | "
                + " / ".join(
                    _fmt(s.get(k), 3)
                    for k in ("mmd", "c2st", "statistics", "ours")
                )
                + " |"
            )
        return lines
    prefix = "ksg_k" if task == "mi" else "knn_k"
    neural = task == "mi"
    header = (
        f"| problem | dims | n | truth | {prefix}1 | {prefix}3 | best k | "
        "plug-in | "
        + ("MINE | InfoNCE | " if neural else "")
        + "ours | ours shipped | best classical | ours/best | "
        "shipped/best | flagged |"
    )
    lines.append(header)
    lines.append("|---" * (header.count("|") - 1) + "|")
    for r in rows:
        e = r.get("errors", {})
        best_k = r.get("best_k")
        ours = e.get("ours") if r.get("ours") == "ran" else r.get("ours")
        cells = [
            r["problem"],
            f"{r['dim_x']}x{r['dim_y']}",
            str(r["n"]),
            _fmt(r["truth"]),
            _fmt(e.get(f"{prefix}1")),
            _fmt(e.get(f"{prefix}3")),
            f"{_fmt(e.get(f'{prefix}_best'))} ({best_k})",
            _fmt(e.get("gaussian_plugin")),
        ]
        if neural:
            cells += [_fmt(e.get("mine")), _fmt(e.get("infonce"))]
        cells += [
            _fmt(ours),
            _fmt(e.get("ours_shipped")),
            f"{r.get('best_classical', '-')}",
            _fmt(r.get("ratio_ours_to_best"), 2),
            _fmt(r.get("ratio_shipped_to_best"), 2),
            f"{r.get('heavy_tail_seeds', '-')}/{len(r['held_out_seeds'])}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


ESTIMATOR_ORDER = {
    "mi": (
        "ours",
        "ours_shipped",
        "best_classical",
        "ksg_k1",
        "ksg_k3",
        "ksg_k_best",
        "gaussian_plugin",
        "mine",
        "infonce",
    ),
    "kl": (
        "ours",
        "ours_shipped",
        "best_classical",
        "knn_k1",
        "knn_k3",
        "knn_k_best",
        "gaussian_plugin",
    ),
}


def aggregate(rows):
    """Per task and n: cells where ours beats the best classical estimator
    (and where it is over 1.5 times worse), each estimator's mean error
    over the cells where ours ran and it has a value (with their count),
    mean seconds per pair; for two-sample, mean accuracies."""
    out = {}
    for n in sorted({r["n"] for r in rows}):
        for task in ("mi", "kl"):
            part = [r for r in rows if r["task"] == task and r["n"] == n]
            if not part:
                continue
            ran = [r for r in part if "ratio_ours_to_best" in r]
            for r in ran:
                r["errors"]["best_classical"] = r["errors"][r["best_classical"]]
            summary = {
                "cells": len(part),
                "cells_ours_ran": len(ran),
                "cells_ours_refused": sum(
                    r.get("ours") == "refused" for r in part
                ),
                "ours_beats_best": sum(
                    r["ratio_ours_to_best"] < 1 for r in ran
                ),
                "shipped_beats_best": sum(
                    r["ratio_shipped_to_best"] < 1 for r in ran
                ),
                "ours_over_1_5x": sum(
                    r["ratio_ours_to_best"] > 1.5 for r in ran
                ),
                "shipped_over_1_5x": sum(
                    r["ratio_shipped_to_best"] > 1.5 for r in ran
                ),
                "mean_error": {},
                "mean_seconds_per_pair": {},
            }
            for name in ESTIMATOR_ORDER[task]:
                values = [r["errors"][name] for r in ran if name in r["errors"]]
                if values:
                    summary["mean_error"][name] = {
                        "mean": float(np.mean(values)),
                        "cells": len(values),
                    }
                times = [
                    r["seconds"][name]
                    for r in part
                    if r["seconds"].get(name) is not None
                ]
                if times:
                    summary["mean_seconds_per_pair"][name] = float(
                        np.mean(times)
                    )
            out[f"{task}_n{n}"] = summary
        part = [r for r in rows if r["task"] == "two_sample" and r["n"] == n]
        if part:
            summary = {"cells": len(part), "mean_accuracy": {}}
            for name in ("mmd", "c2st", "ours", "statistics"):
                got = [
                    r["accuracy"][name]
                    for r in part
                    if isinstance(r["accuracy"].get(name), float)
                ]
                mmd_there = [
                    r["accuracy"]["mmd"]
                    for r in part
                    if isinstance(r["accuracy"].get(name), float)
                    and isinstance(r["accuracy"].get("mmd"), float)
                ]
                if got:
                    summary["mean_accuracy"][name] = {
                        "mean": float(np.mean(got)),
                        "cells": len(got),
                        "mmd_on_same_cells": float(np.mean(mmd_there))
                        if mmd_there
                        else None,
                    }
            out[f"two_sample_n{n}"] = summary
    return out


def _aggregate_table(totals):
    lines = [
        "| task, n | cells (ours ran) | ours < best classical | shipped < "
        "best | ours > 1.5x best | mean error: ours / shipped / best "
        "classical / k=3 / best k / plug-in / MINE / InfoNCE | seconds "
        "per pair: ours / k=3 / MINE |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for key, t in totals.items():
        if key.startswith("two_sample"):
            continue
        task = key.split("_n")[0]
        prefix = "ksg_k" if task == "mi" else "knn_k"
        errors = t["mean_error"]
        names = [
            "ours",
            "ours_shipped",
            "best_classical",
            f"{prefix}3",
            f"{prefix}_best",
            "gaussian_plugin",
            "mine",
            "infonce",
        ]
        shown = []
        for name in names:
            if name in errors:
                value = errors[name]
                extra = (
                    ""
                    if value["cells"] == t["cells_ours_ran"]
                    else f" ({value['cells']} cells)"
                )
                shown.append(f"{value['mean']:.3f}{extra}")
            elif name in ("mine", "infonce") and task == "kl":
                continue
            else:
                shown.append("-")
        seconds = t["mean_seconds_per_pair"]
        times = " / ".join(
            _fmt(seconds.get(name), 3)
            for name in ("ours", f"{prefix}3", "mine")
            if task == "mi" or name != "mine"
        )
        lines.append(
            f"| {key.replace('_n', ', n = ')} | {t['cells']} "
            f"({t['cells_ours_ran']}) | {t['ours_beats_best']} | "
            f"{t['shipped_beats_best']} | {t['ours_over_1_5x']} | "
            + " / ".join(shown)
            + f" | {times} |"
        )
    lines += [
        "",
        "| two-sample, n | cells | mean accuracy MMD | C2ST | statistics "
        "(default) | mst_two_sample (cells; MMD on those cells) |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for key, t in totals.items():
        if not key.startswith("two_sample"):
            continue
        acc = t["mean_accuracy"]

        def show(name, acc=acc):
            return _fmt(acc[name]["mean"], 3) if name in acc else "-"

        ours = "-"
        if "ours" in acc:
            ours = (
                f"{acc['ours']['mean']:.3f} ({acc['ours']['cells']}; "
                f"{_fmt(acc['ours']['mmd_on_same_cells'])})"
            )
        lines.append(
            f"| {key.split('_n')[1]} | {t['cells']} | {show('mmd')} | "
            f"{show('c2st')} | {show('statistics')} | {ours} |"
        )
    return lines


def write_summary(problems, sizes, root, quick=False):
    held, dev = runner.HELD_OUT_SEEDS, runner.DEV_SEEDS
    if quick:
        held, dev = QUICK_SEEDS[1:], QUICK_SEEDS[:1]
    rows = runner.summarize(problems, sizes, root, held, dev)
    totals = aggregate(rows)
    name = "summary_quick" if quick else "summary"
    with open(root / f"{name}.json", "w", encoding="utf-8") as file:
        json.dump({"rows": rows, "aggregate": totals}, file, indent=1)
    lines = ["### Totals", ""] + _aggregate_table(totals) + [""]
    for task, title in (
        ("mi", "Mutual information: mean absolute error (nats)"),
        ("kl", "KL divergence: mean absolute error (nats)"),
        ("two_sample", "Two-sample: accuracy (same and different pairs)"),
    ):
        lines += [f"### {title}", ""] + _table(rows, task) + [""]
    with open(root / f"{name}.md", "w", encoding="utf-8") as file:
        file.write("\n".join(lines))
    return rows, totals


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=runner.DEV_SEEDS + runner.HELD_OUT_SEEDS,
    )
    parser.add_argument(
        "--phases", nargs="+", choices=runner.PHASES, default=runner.PHASES
    )
    parser.add_argument(
        "--problems",
        nargs="+",
        default=None,
        help="problem names (default: all)",
    )
    parser.add_argument(
        "--tasks",
        nargs="+",
        choices=("mi", "kl", "two_sample"),
        default=("mi", "kl", "two_sample"),
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a few problems, n = 50 and 150, seeds 0 and 2",
    )
    parser.add_argument("--summary-only", action="store_true")
    parser.add_argument(
        "--check-truths",
        action="store_true",
        help="Monte Carlo checks of the Student-t answers (truth_checks.json)",
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="threads per backend library"
    )
    parser.add_argument("--max-seconds", type=float, default=None)
    parser.add_argument("--results", type=pathlib.Path, default=ROOT)
    args = parser.parse_args(argv)
    _limit_threads(args.threads)
    problems = [p for p in problem_sets.all_problems() if p.task in args.tasks]
    sizes, seeds = args.sizes, args.seeds
    if args.quick:
        problems = [p for p in problems if p.name in QUICK_PROBLEMS]
        sizes, seeds = [50, 150], list(QUICK_SEEDS)
    if args.problems:
        known = {p.name for p in problems}
        unknown = sorted(set(args.problems) - known)
        if unknown:
            parser.error(f"unknown problems: {unknown}")
        problems = [p for p in problems if p.name in args.problems]
    args.results.mkdir(parents=True, exist_ok=True)
    if args.check_truths:
        from estimator_bench import truth_checks

        rows = truth_checks.student_t_checks()
        with open(args.results / "truth_checks.json", "w") as file:
            json.dump(rows, file, indent=1)
        print(json.dumps(rows, indent=1))
        return
    if not args.summary_only:
        runner.run(
            problems,
            sizes,
            seeds,
            args.phases,
            args.results,
            log=lambda text: print(text, flush=True),
            max_seconds=args.max_seconds,
        )
    all_sizes = sorted(set(sizes) | {10000, *SIZES})
    _, totals = write_summary(
        problems if args.quick else problem_sets.all_problems(),
        sizes if args.quick else all_sizes,
        args.results,
        quick=args.quick,
    )
    print(json.dumps(totals, indent=1))


if __name__ == "__main__":
    main()
