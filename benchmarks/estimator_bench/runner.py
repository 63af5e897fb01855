"""Runs the cells of the benchmark into a JSON cache and summarizes it.

The cache holds one file per (problem, n), `<results>/<problem>/n<n>.json`,
with every (seed, estimator) record computed so far; a run computes only
what is missing and writes the file after each estimator, so it can be
stopped and resumed at any point.

Seeds `DEV_SEEDS` are the development split: they serve the choices
(here, the "best k" of the k-NN and KSG estimators, per problem and n)
and run the cheap estimators only. The reported table uses the held-out
seeds `HELD_OUT_SEEDS` only.
"""

import fcntl
import json
import os
import pathlib
import tempfile
import time

import numpy as np

from estimator_bench import estimators as est

DEV_SEEDS = (0, 1)
HELD_OUT_SEEDS = (2, 3, 4)
PHASES = ("cheap", "ours", "neural")


def cell_path(root, problem, n):
    return pathlib.Path(root) / problem.name / f"n{n}.json"


def load_cell(root, problem, n):
    path = cell_path(root, problem, n)
    if path.exists():
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    return {
        "problem": problem.name,
        "task": problem.task,
        "family": problem.family,
        "dim_x": problem.dim_x,
        "dim_y": problem.dim_y,
        "truth": problem.truth,
        "n": n,
        "seeds": {},
    }


def save_cell(root, problem, n, cell):
    """Writes `cell`, merged with what the file holds now (under a lock),
    so that several runs may fill one cell at once."""
    path = cell_path(root, problem, n)
    path.parent.mkdir(parents=True, exist_ok=True)
    locks = pathlib.Path(tempfile.gettempdir()) / "estimator_benchmark_locks"
    locks.mkdir(exist_ok=True)
    with open(locks / f"{problem.name}_n{n}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        on_disk = load_cell(root, problem, n)["seeds"]
        for seed, records in on_disk.items():
            mine = cell["seeds"].setdefault(seed, {})
            for name, record in records.items():
                mine.setdefault(name, record)
        temporary = path.with_suffix(".tmp")
        with open(temporary, "w", encoding="utf-8") as file:
            json.dump(cell, file, indent=1, sort_keys=True)
        os.replace(temporary, path)


def schedule(phases, sizes):
    """`(phase, n)` in the order they run: each phase at every `n`,
    smallest first, before the next phase (cheap, then the pretrained
    estimators, then the neural ones), so that stopping early leaves
    whole phases done."""
    return [(p, n) for p in PHASES if p in phases for n in sizes]


def run(problems, sizes, seeds, phases, root, log=print, max_seconds=None):
    """Computes the missing records in the order of `schedule`; returns
    how many it computed."""
    start = time.time()
    done = 0
    warm = set()
    for phase, n in schedule(phases, sizes):
        for problem in problems:
            cell = load_cell(root, problem, n)
            for seed in seeds:
                if seed in DEV_SEEDS and phase != "cheap":
                    continue
                if max_seconds and time.time() - start > max_seconds:
                    log(f"stopped after {max_seconds} s")
                    return done
                records = cell["seeds"].setdefault(str(seed), {})
                todo = {
                    name: function
                    for name, (where, function) in est.estimators_for(
                        problem.task, seed
                    ).items()
                    if where == phase and name not in records
                }
                if not todo:
                    continue
                if phase == "ours" and problem.task not in warm:
                    est.warm_up(problem.task)
                    warm.add(problem.task)
                sample = problem.sample(n, seed)
                for name, function in todo.items():
                    if problem.task == "two_sample":
                        records[name] = function(sample)
                    else:
                        records[name] = function(*sample)
                    done += 1
                    log(
                        f"{phase} {problem.name} n={n} seed={seed} "
                        f"{name}: {_short(records[name])}"
                    )
                    save_cell(root, problem, n, cell)
    return done


def _short(record):
    if "error" in record:
        return "refused: " + record["error"][:80]
    keys = ("value", "same", "different", "seconds")
    return ", ".join(f"{k}={record[k]:.4g}" for k in keys if k in record)


# ---------------------------------------------------------------------------
# Summary.
# ---------------------------------------------------------------------------


def _mae(cell, name, seeds, value=None):
    """Mean absolute error of `name` over `seeds`, or None when a seed
    lacks it or was refused."""
    errors = []
    for seed in seeds:
        record = cell["seeds"].get(str(seed), {}).get(name)
        if record is None or "error" in record:
            return None
        estimate = record["value"] if value is None else value(seed, record)
        errors.append(abs(estimate - cell["truth"]))
    return float(np.mean(errors)) if errors else None


def _mean_seconds(cell, name, seeds):
    times = [
        cell["seeds"][str(s)][name]["seconds"]
        for s in seeds
        if "seconds" in cell["seeds"].get(str(s), {}).get(name, {})
    ]
    return float(np.mean(times)) if times else None


def summarize_cell(cell, held=HELD_OUT_SEEDS, dev=DEV_SEEDS):
    """The held-out row of one (problem, n) cell."""
    task = cell["task"]
    row_seeds = {"held_out_seeds": list(held), "dev_seeds": list(dev)}
    row = {
        "problem": cell["problem"],
        "task": task,
        "family": cell["family"],
        "dim_x": cell["dim_x"],
        "dim_y": cell["dim_y"],
        "n": cell["n"],
        "truth": cell["truth"],
        **row_seeds,
    }
    if task == "two_sample":
        return _summarize_two_sample(cell, row, held)
    prefix = "ksg_k" if task == "mi" else "knn_k"
    fallback = f"{prefix}3" if task == "mi" else f"{prefix}1"
    # The "best k": the configuration (k; raw coordinates, or each one
    # standardized) with the smallest error on the development seeds.
    base = prefix.removesuffix("_k")
    configs = [f"{base}_k{k}" for k in est.NEIGHBOURS] + [
        f"{base}_std_k{k}" for k in est.NEIGHBOURS
    ]
    dev_errors = {c: _mae(cell, c, dev) for c in configs}
    dev_errors = {c: v for c, v in dev_errors.items() if v is not None}
    errors = {
        name: _mae(cell, name, held)
        for name in configs + ["gaussian_plugin", "mine", "infonce", "ours"]
    }
    if dev_errors:
        best_k = min(dev_errors, key=dev_errors.get)
        row["best_k"] = best_k.removeprefix(base + "_")
        errors[f"{prefix}_best"] = errors[best_k]
    classical = [f"{prefix}1", f"{prefix}3", f"{prefix}_best"]
    classical = [c for c in classical if c in errors] + ["gaussian_plugin"]
    # MINE and InfoNCE are reported beside, not among the classical ones.
    shown = classical + ["mine", "infonce", "ours"]
    row["errors"] = {
        k: v for k, v in errors.items() if v is not None and k in shown
    }
    baselines = {k: errors.get(k) for k in classical}
    baselines = {k: v for k, v in baselines.items() if v is not None}
    row["missing"] = sorted(k for k in classical if k not in baselines)
    records = [cell["seeds"].get(str(s), {}).get("ours") for s in held]
    if any(r is None for r in records):
        row["ours"] = "missing"
    elif any("error" in r for r in records):
        row["ours"] = "refused"
        row["ours_reason"] = next(r for r in records if "error" in r)["error"]
    else:
        row["ours"] = "ran"
        row["heavy_tail_seeds"] = sum(bool(r["heavy_tails"]) for r in records)
        row["size_warning_seeds"] = sum(
            any("trained on sets of" in m for m in r["warnings"])
            for r in records
        )

        def shipped(seed, record):
            if record["heavy_tails"]:
                return cell["seeds"][str(seed)][fallback]["value"]
            return record["value"]

        row["errors"]["ours_shipped"] = _mae(cell, "ours", held, shipped)
    if baselines:
        best = min(baselines, key=baselines.get)
        row["best_classical"] = best
        if row["ours"] == "ran":
            row["ratio_ours_to_best"] = row["errors"]["ours"] / max(
                baselines[best], 1e-12
            )
            row["ratio_shipped_to_best"] = row["errors"]["ours_shipped"] / max(
                baselines[best], 1e-12
            )
    row["seconds"] = {
        name: _mean_seconds(cell, name, held)
        for name in row["errors"]
        if name != "ours_shipped" and not name.endswith("_best")
    }
    return row


def _summarize_two_sample(cell, row, held):
    accuracy, seconds = {}, {}
    for name in ("mmd", "c2st", "ours", "statistics"):
        records = [cell["seeds"].get(str(s), {}).get(name) for s in held]
        if any(r is None for r in records):
            continue
        if any("error" in r for r in records):
            accuracy[name] = "refused"
            continue
        right = sum(est.two_sample_correct(name, r) for r in records)
        accuracy[name] = right / (2 * len(records))
        seconds[name] = float(np.mean([r["seconds"] for r in records]))
    row["accuracy"] = accuracy
    row["seconds"] = seconds
    return row


def summarize(problems, sizes, root, held=HELD_OUT_SEEDS, dev=DEV_SEEDS):
    rows = []
    for n in sizes:
        for problem in problems:
            path = cell_path(root, problem, n)
            if path.exists():
                cell = load_cell(root, problem, n)
                rows.append(summarize_cell(cell, held, dev))
    return rows
