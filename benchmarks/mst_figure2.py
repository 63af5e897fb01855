"""Figure 2 of Selby et al. (UAI 2022): mutual-information error against rho.

The paper plots the absolute error of estimated mutual information for
correlated Gaussians with 2-, 10- and 20-dimensional marginals against the
componentwise correlation `rho`, for its Multi-Set Transformer and the
baselines (Sec. 5.1.2, Fig. 2). This script redraws it for the pretrained
estimator `keras_msets.estimators.pretrained.mutual_information` (the
`mst_mutual_information` preset, called exactly as a user calls it) and
the KSG estimator of Kraskov et al. (2004, estimator 1, k = 3) on the
very same fresh pairs.

Data (as in the paper): for each `d` in `--dims` and each `rho` of the
grid (default 21 values evenly spaced in [-0.95, 0.95]), `--pairs`
(default 20) fresh pairs of `N` joint samples, `N` uniform in 100..150,
`x ~ N(0, I_d)`, `y = rho x + sqrt(1 - rho^2) e` (standard normal
marginals, `corr(x_j, y_j) = rho`), from
`keras_msets.data.mixtures.mutual_information_sets` with a seed of its
own (`SEED + d`, above every training and recipe test seed). The truth is
`I(X; Y) = -(d/2) log(1 - rho^2)` nats. The model reads the set of `x_i`
and the set of `y_i` (the paper's set-up); KSG reads the paired rows.

Beside them, where the zoo has it, the curve of our
`mst_mutual_information_joint` preset (d = 1..8): the joint samples
`[x_j, y_j]` against `[x_j, y_pi(j)]` read as `KL(P_XY || P_X P_Y)`,
which uses the pairing as KSG does (`--joint-model none` leaves it out).

Not reproduced: the MINE baseline of the figure (it needs its own network
trained on every data set).

    KERAS_BACKEND=tensorflow python benchmarks/mst_figure2.py
    KERAS_BACKEND=tensorflow python benchmarks/mst_figure2.py \
        --model path/to/model.keras --pairs 50 --dims 2 10 20

Writes `benchmarks/figure2_mst_mutual_information.png` and
`benchmarks/results/figure2_mst_mutual_information.json` (or both under
`--output`) and prints a markdown table for `benchmarks/RESULTS.md`.
"""

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import keras
import numpy as np

from keras_msets.data import mixtures
from keras_msets.estimators import classical
from keras_msets.estimators import pretrained
from keras_msets.training.tasks import mst

HERE = Path(__file__).resolve().parent
NAME = "figure2_mst_mutual_information"
PRESET = pretrained.SPECS["mutual_information"].preset
JOINT_PRESET = pretrained.SPECS["mutual_information_joint"].preset
JOINT_DIMS = pretrained.SPECS["mutual_information_joint"].dims
DIMS = (2, 10, 20)
RHOS = tuple(np.round(np.linspace(-0.95, 0.95, 21), 4).tolist())
PAIRS = 20
SET_SIZE = mst.defaults("mutual_information")["set_size"]
KSG_K = 3
# Above the recipe's test seeds (TEST_SEED + d, TEST_SEED + 1000 + d) and
# every training seed (below 2**32).
SEED = mst.TEST_SEED + 2000
PAPER_CLAIM = (
    "the model is somewhat worse than KSG and MINE in d = 2 but almost "
    "indistinguishable from the ground truth in d = 10 and 20 (Fig. 2, "
    "qualitative; no numbers are given)"
)


def resolve_model(value):
    """`--model`: None (the preset), a `.keras` file, or a preset name.

    Returns what `mutual_information(model=...)` takes and a description
    for the JSON.
    """
    if value is None:
        # By name: `mutual_information(model=None)` would send d <= 8 to
        # the joint preset (ours), and this figure is the paper's model.
        return PRESET, f"preset {PRESET}"
    if isinstance(value, keras.Model):
        return value, f"keras.Model {value.name!r} (passed in)"
    path = Path(value)
    if path.suffix == ".keras" or path.exists():
        if not path.exists():
            raise FileNotFoundError(f"`--model` file not found: {path}")
        model = keras.saving.load_model(path, compile=False)
        return model, f"file {path}"
    return str(value), f"preset {value}"


def figure_data(d, rhos, pairs, seed):
    """`pairs` fresh pairs per `rho`: `(x_sets, y_sets, rho, raw)`.

    `x_sets`, `y_sets` are lists of `[N, d]` arrays (the rows of one pair
    are paired), `rho` float64 `[len(rhos) * pairs]`, `raw` the padded
    `(x, y, mask)` for the KSG estimator.
    """
    rho = np.repeat(np.asarray(rhos, dtype=np.float64), pairs)
    (x, y, x_mask, _), _ = mixtures.mutual_information_sets(
        len(rho), d, seed=seed, set_size=SET_SIZE, rho=rho, mode="split"
    )
    x_sets = [a[m].astype(np.float64) for a, m in zip(x, x_mask, strict=True)]
    y_sets = [a[m].astype(np.float64) for a, m in zip(y, x_mask, strict=True)]
    return x_sets, y_sets, rho, (x, y, x_mask)


def closed_form(rho, d):
    """`-(d/2) log(1 - rho^2)` nats."""
    return mixtures.gaussian_mutual_information(rho, d)


def _stats(values, groups):
    """Mean and std of `values` over each group of equal `groups`."""
    keys = np.unique(groups)
    mean = [float(np.mean(values[groups == k])) for k in keys]
    std = [float(np.std(values[groups == k])) for k in keys]
    return mean, std


def run_dim(
    d,
    rhos,
    pairs,
    model,
    batch_size,
    seed,
    joint_model=None,
    joint_permutations=None,
):
    """Estimates and errors of the estimators in dimension `d`.

    `joint_model` (what `mutual_information(model=..., mode="joint")`
    takes, or None) adds the joint curve where `d` is in `JOINT_DIMS`,
    each answer the mean over `joint_permutations` permutations (None:
    the estimator's default, `pretrained.JOINT_PERMUTATIONS`).
    """
    x_sets, y_sets, rho, (x, y, mask) = figure_data(d, rhos, pairs, seed)
    truth = closed_form(rho, d)
    start = time.time()
    model_estimate = pretrained.mutual_information(
        x_sets, y_sets, model=model, batch_size=batch_size
    )
    model_seconds = time.time() - start
    start = time.time()
    ksg_estimate = classical.ksg_mutual_information_sets(x, y, mask, k=KSG_K)
    ksg_seconds = time.time() - start
    model_error = model_estimate - truth
    ksg_error = ksg_estimate - truth
    model_abs_mean, model_abs_std = _stats(np.abs(model_error), rho)
    ksg_abs_mean, ksg_abs_std = _stats(np.abs(ksg_error), rho)
    row = {
        "d": d,
        "rho": rho.tolist(),
        "set_size": [len(s) for s in x_sets],
        "true_mi": truth.tolist(),
        "model_mi": model_estimate.tolist(),
        "ksg_mi": ksg_estimate.tolist(),
        "per_rho": {
            "rho": [float(r) for r in np.unique(rho)],
            "true_mi": [float(v) for v in closed_form(np.unique(rho), d)],
            "model_abs_error_mean": model_abs_mean,
            "model_abs_error_std": model_abs_std,
            "ksg_abs_error_mean": ksg_abs_mean,
            "ksg_abs_error_std": ksg_abs_std,
            "model_error_mean": _stats(model_error, rho)[0],
            "ksg_error_mean": _stats(ksg_error, rho)[0],
        },
        "summary": {
            "model_mae": float(np.mean(np.abs(model_error))),
            "ksg_mae": float(np.mean(np.abs(ksg_error))),
            "model_bias": float(np.mean(model_error)),
            "ksg_bias": float(np.mean(ksg_error)),
            "mean_true_mi": float(np.mean(truth)),
            "model_seconds": round(model_seconds, 2),
            "ksg_seconds": round(ksg_seconds, 2),
        },
    }
    if joint_model is not None and JOINT_DIMS[0] <= d <= JOINT_DIMS[1]:
        joint = pretrained.mutual_information(
            x_sets,
            y_sets,
            model=joint_model,
            mode="joint",
            batch_size=batch_size,
            permutations=joint_permutations,
        )
        joint_error = joint - truth
        mean, std = _stats(np.abs(joint_error), rho)
        row["joint_mi"] = joint.tolist()
        row["per_rho"]["joint_abs_error_mean"] = mean
        row["per_rho"]["joint_abs_error_std"] = std
        row["per_rho"]["joint_error_mean"] = _stats(joint_error, rho)[0]
        row["summary"]["joint_mae"] = float(np.mean(np.abs(joint_error)))
        row["summary"]["joint_bias"] = float(np.mean(joint_error))
    return row


def markdown_table(results):
    """The block for `benchmarks/RESULTS.md`."""
    s = results["settings"]
    lines = [
        "### Figure 2 (Selby et al.): mutual information against rho",
        "",
        f"`{s['command']}` — backend {s['backend']}, {s['date']}, "
        f"{s['machine']}, {s['wall_seconds']:.0f} s. Model: {s['model']}; "
        f"joint: {s.get('joint_model')} (mean of "
        f"{s.get('joint_permutations', 1)} permutations).",
        f"{len(s['rhos'])} values of rho in [{min(s['rhos'])}, "
        f"{max(s['rhos'])}], {s['pairs']} fresh pairs each, "
        f"{SET_SIZE[0]}-{SET_SIZE[1]} paired points; mean absolute error "
        "(and mean signed error) in nats over all pairs.",
        "",
        "| d | mean true MI | MST MAE | joint MAE | KSG (k=3) MAE | MST bias "
        "| joint bias | KSG bias |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results["dims"]:
        m = row["summary"]
        joint = (
            (f"{m['joint_mae']:.4f}", f"{m['joint_bias']:+.4f}")
            if "joint_mae" in m
            else ("", "")
        )
        lines.append(
            f"| {row['d']} | {m['mean_true_mi']:.3f} | {m['model_mae']:.4f} "
            f"| {joint[0]} | {m['ksg_mae']:.4f} | {m['model_bias']:+.4f} "
            f"| {joint[1]} | {m['ksg_bias']:+.4f} |"
        )
    lines += ["", f"Paper: {PAPER_CLAIM}."]
    return "\n".join(lines)


def plot(results, path):
    """One panel per `d`: mean |error| (+- one std) against rho."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = results["dims"]
    figure, axes = plt.subplots(
        1, len(rows), figsize=(4 * len(rows), 3.6), squeeze=False
    )
    for axis, row in zip(axes[0], rows, strict=True):
        per_rho = row["per_rho"]
        rho = np.asarray(per_rho["rho"])
        for key, label, color in (
            ("model", "Multi-Set Transformer (paper's sets)", "C0"),
            ("joint", "joint vs product (ours)", "C2"),
            ("ksg", f"KSG (k={KSG_K})", "C1"),
        ):
            if f"{key}_abs_error_mean" not in per_rho:
                continue
            mean = np.asarray(per_rho[f"{key}_abs_error_mean"])
            std = np.asarray(per_rho[f"{key}_abs_error_std"])
            axis.plot(rho, mean, marker="o", ms=3, color=color, label=label)
            axis.fill_between(
                rho,
                np.maximum(mean - std, 0.0),
                mean + std,
                color=color,
                alpha=0.2,
            )
        axis.set_title(f"d = {row['d']}")
        axis.set_xlabel("correlation rho")
        axis.set_ylim(bottom=0)
    axes[0][0].set_ylabel("absolute error of MI (nats)")
    # Every panel its own legend: the joint curve is in d <= 8 only.
    for axis in axes[0]:
        axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model",
        default=None,
        help=f"a .keras file or a preset name (default: the {PRESET} preset)",
    )
    parser.add_argument(
        "--joint-model",
        default=None,
        help=f"a .keras file, a preset name or 'none' (default: the "
        f"{JOINT_PRESET} preset where the zoo has it)",
    )
    parser.add_argument(
        "--joint-permutations",
        type=int,
        default=pretrained.JOINT_PERMUTATIONS,
        help="permutations the joint curve averages over (default: the "
        f"estimator's, {pretrained.JOINT_PERMUTATIONS})",
    )
    parser.add_argument("--pairs", type=int, default=PAIRS)
    parser.add_argument("--dims", type=int, nargs="+", default=list(DIMS))
    parser.add_argument("--rhos", type=float, nargs="+", default=list(RHOS))
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument(
        "--output",
        "--output-dir",
        dest="output",
        default=None,
        help="folder for the PNG and the JSON (default: benchmarks/ and "
        "benchmarks/results/)",
    )
    args = parser.parse_args(argv)
    if args.pairs < 1:
        parser.error(f"--pairs must be positive. Received: {args.pairs}")
    if args.joint_permutations < 1:
        parser.error(
            "--joint-permutations must be positive. Received: "
            f"{args.joint_permutations}"
        )
    if any(not -1 < r < 1 for r in args.rhos):
        parser.error(f"--rhos must lie in (-1, 1). Received: {args.rhos}")
    return args


def resolve_joint_model(value):
    """`--joint-model`: None (the joint preset if the zoo has it), 'none',
    a `.keras` file or a preset name; `(model or None, description)`."""
    from keras_msets import zoo

    if isinstance(value, str) and value.lower() == "none":
        return None, None
    if value is None:
        if JOINT_PRESET not in zoo.list():
            return None, None
        value = JOINT_PRESET
    return resolve_model(value)


def main(argv=None, model=None, joint_model=None):
    """Runs the benchmark; `model` and `joint_model` (keras.Models)
    override `--model` and `--joint-model`."""
    args = parse_args(argv)
    estimator, description = resolve_model(
        model if model is not None else args.model
    )
    joint, joint_description = resolve_joint_model(
        joint_model if joint_model is not None else args.joint_model
    )
    rhos = sorted(set(args.rhos))
    start = time.time()
    rows = []
    for d in args.dims:
        row = run_dim(
            d,
            rhos,
            args.pairs,
            estimator,
            args.batch_size,
            args.seed + d,
            joint_model=joint,
            joint_permutations=args.joint_permutations,
        )
        rows.append(row)
        print(
            f"d={d}: MST MAE {row['summary']['model_mae']:.4f}, "
            f"KSG MAE {row['summary']['ksg_mae']:.4f}",
            flush=True,
        )
    command = " ".join(
        ["KERAS_BACKEND=" + keras.backend.backend(), "python"]
        + ["benchmarks/mst_figure2.py"]
        + (sys.argv[1:] if argv is None else list(argv))
    )
    results = {
        "dims": rows,
        "settings": {
            "model": description,
            "joint_model": joint_description,
            "joint_permutations": args.joint_permutations,
            "dims": list(args.dims),
            "rhos": rhos,
            "pairs": args.pairs,
            "set_size": list(SET_SIZE),
            "ksg_k": KSG_K,
            "seed": args.seed,
            "batch_size": args.batch_size,
            "command": command,
            "backend": keras.backend.backend(),
            "keras": keras.__version__,
            "date": time.strftime("%Y-%m-%d"),
            "machine": f"{os.cpu_count()} CPU cores ({platform.machine()})",
            "wall_seconds": round(time.time() - start, 1),
            "paper_claim": PAPER_CLAIM,
        },
    }
    if args.output is None:
        png = HERE / f"{NAME}.png"
        json_path = HERE / "results" / f"{NAME}.json"
    else:
        png = Path(args.output) / f"{NAME}.png"
        json_path = Path(args.output) / f"{NAME}.json"
    json_path.parent.mkdir(parents=True, exist_ok=True)
    png.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(results, indent=2))
    plot(results, png)
    print()
    print(markdown_table(results))
    return results


if __name__ == "__main__":
    main()
