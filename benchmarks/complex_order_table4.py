"""Table 4 of Wang et al. (ICLR 2020): the Transformer ablation, run on MR.

The paper's Table 4 varies, for its Transformer, (i) the definition
of the embedding f_d(j, pos): the full complex-order embedding
r_{j,d} exp(i w_{j,d} pos), with initial phases added, with the frequency
(period) shared across dimensions (w_{j,.}) or across words (w_{.,d}),
with the amplitude shared across dimensions (r_{j,.}) or across words
(r_{.,d}), and without positions (complex-vanilla); and (ii) whether the
real and imaginary parts of W^{Q/K/V} share their weights
(Re W = Im W), and reports parameters and accuracy of each row. Its
caption names no data set, but the ablation is on SST: its full model
(0.813) and vanilla Transformer (0.761) are Table 2's SST column, not its
MR column (0.746 and 0.731). We run the ablation on MR, the corpus we
have, so the paper's Table 4 numbers are printed as SST numbers, and the
three rows that are also Table 2 rows are compared with Table 2's MR
column (`PAPER_MR_TABLE2`), like with like.

This script runs those rows with `keras_msets.training.text_classification.
cross_validate` and the Transformer settings of our Table 2 run
(`benchmarks/complex_order_table2.py`: d = 64, 4 heads, inner size 128,
random initial vectors, Adam 1e-3, batch 64, at most 8 epochs, early
stopping with patience 2, texts cut to 40 tokens, 10,000 words per fold).
The three rows that are Table 2 rows (complex-order and complex-vanilla
without sharing, and the vanilla Transformer WE + PE, our "TPE") are read
from `benchmarks/results/complex_order_table2_mr.json` when it holds them
with the same settings; the others are trained here. Default: the first 5
of the 10 folds (`--folds`), to fit 2 CPU cores.

    KERAS_BACKEND=jax python benchmarks/complex_order_table4.py
    KERAS_BACKEND=jax python benchmarks/complex_order_table4.py --smoke

Writes `benchmarks/results/complex_order_table4_mr.json` after every row
(a rerun with the same settings skips the rows already there) and prints a
markdown table for `benchmarks/RESULTS.md`.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import keras

from keras_msets.testing import load_script
from keras_msets.training import text_classification as recipe

HERE = Path(__file__).parent


table2 = load_script(HERE / "complex_order_table2.py")

# (key, row label, f_d(j, pos), embedding, embedding options, shared W^QKV,
#  paper parameters and accuracy (Table 4, SST), Table 2 row it equals or
#  None).
ROWS = (
    ("complex_order", "Transformer-complex-order",
     "r_{j,d} e^{i w_{j,d} pos}", "complex_order", {}, False,
     "8.33M", 0.813, "complex_order"),
    ("initial_phase", "adding initial phases",
     "r_{j,d} e^{i (w_{j,d} pos + θ_{j,d})}", "complex_order",
     {"use_initial_phase": True}, False, "11.89M", 0.785, None),
    ("frequency_dimension", "dimension-sharing period",
     "r_{j,d} e^{i w_{j,.} pos}", "complex_order",
     {"frequency_sharing": "dimension"}, False, "5.82M", 0.797, None),
    ("frequency_word", "word-sharing period",
     "r_{j,d} e^{i w_{.,d} pos}", "complex_order",
     {"frequency_sharing": "word"}, False, "5.81M", 0.805, None),
    ("amplitude_dimension", "dimension-sharing amplitude",
     "r_{j,.} e^{i w_{j,d} pos}", "complex_order",
     {"amplitude_sharing": "dimension"}, False, "5.82M", 0.798, None),
    ("amplitude_word", "word-sharing amplitude",
     "r_{.,d} e^{i w_{j,d} pos}", "complex_order",
     {"amplitude_sharing": "word"}, False, "5.81M", 0.804, None),
    ("complex_vanilla", "w/o positions (complex-vanilla)",
     "r_{j,d} e^{i w_{j,d}}", "complex_vanilla", {}, False,
     "9.38M", 0.764, "complex_vanilla"),
    ("frequency_dimension_shared", "dimension-sharing period",
     "r_{j,d} e^{i w_{j,.} pos}", "complex_order",
     {"frequency_sharing": "dimension"}, True, "4.77M", 0.794, None),
    ("frequency_word_shared", "word-sharing period",
     "r_{j,d} e^{i w_{.,d} pos}", "complex_order",
     {"frequency_sharing": "word"}, True, "4.76M", 0.797, None),
    ("amplitude_dimension_shared", "dimension-sharing amplitude",
     "r_{j,.} e^{i w_{j,d} pos}", "complex_order",
     {"amplitude_sharing": "dimension"}, True, "4.77M", 0.792, None),
    ("amplitude_word_shared", "word-sharing amplitude",
     "r_{.,d} e^{i w_{j,d} pos}", "complex_order",
     {"amplitude_sharing": "word"}, True, "4.76M", 0.801, None),
    ("complex_vanilla_shared", "w/o positions (complex-vanilla)",
     "r_{j,d} e^{i w_{j,d}}", "complex_vanilla", {}, True,
     "8.33M", 0.743, None),
    ("vanilla", "vanilla Transformer", "WE_{j,d} + PE_d", "tpe", {}, False,
     "4.1M", 0.761, "tpe"),
)  # fmt: skip
ROW_KEYS = tuple(row[0] for row in ROWS)
# Table 2 of the paper, MR column, Transformer: the Table 4 rows that are
# Table 2 rows (complex-order, complex-vanilla, and TPE, the vanilla
# Transformer of Vaswani et al.). The other rows have no MR number.
PAPER_MR_TABLE2 = {
    "complex_order": 0.746,
    "complex_vanilla": 0.715,
    "vanilla": 0.731,
}


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", choices=ROW_KEYS, default=None)
    parser.add_argument("--n-folds", type=int, default=10)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument(
        "--table2",
        type=Path,
        default=HERE / "results" / "complex_order_table2_mr.json",
        help="Table 2 results to read the rows it shares with Table 4 from",
    )
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--restart", action="store_true")
    parser.add_argument("--smoke", action="store_true")
    args, rest = parser.parse_known_args(argv)
    # Every Table 2 setting (epochs, sizes, seed, ...) with its default.
    base = table2.parse_args(
        rest + (["--smoke"] if args.smoke else []) + ["--folds", "1"]
    )
    for name, value in vars(base).items():
        if name not in ("folds", "n_folds", "output", "restart", "smoke"):
            setattr(args, name, value)
    if args.smoke:
        args.n_folds, args.folds = 2, 1
    args.folds = min(args.folds, args.n_folds)
    args.rows = args.rows or list(ROW_KEYS)
    if args.output is None:
        name = "complex_order_table4_" + ("smoke" if args.smoke else "mr")
        args.output = HERE / "results" / f"{name}.json"
    return args


def _settings(args):
    settings = table2.settings_of(args)
    settings.pop("fasttext_epochs")
    settings.pop("trainable_phase")
    settings.pop("dataset")
    return settings


def _table2_rows(args, folds):
    """Table 2 Transformer results usable as Table 4 rows (or {})."""
    if not args.table2.is_file():
        return {}
    saved = json.loads(args.table2.read_text())
    theirs = dict(saved["settings"]["numbers"])
    ours = _settings(args)
    same = (
        all(
            theirs.get(name) == value
            for name, value in ours.items()
            if name not in ("folds", "n_folds")
        )
        and theirs.get("n_folds") == args.n_folds
    )
    if not same or theirs.get("trainable_phase") or theirs["dataset"] != "mr":
        return {}
    rows = {}
    for r in saved["results"]:
        if r["architecture"] != "transformer":
            continue
        if not set(folds) <= set(r["folds"]):
            continue
        rows[r["embedding"]] = table2.merge_folds(r, None, folds)
    return rows


def markdown_table(results, args):
    folds = min(args.folds, args.n_folds)
    lines = [
        "| row | f_d(j, pos) | Re W^QKV = Im W^QKV | parameters | "
        f"accuracy, mean ± std over {folds} of {args.n_folds} folds | Δ | "
        "source | paper, SST (Table 4): parameters | accuracy | Δ | "
        "paper, MR (Table 2): accuracy | Δ |",
        "|---|---|:-:|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    base = results.get("complex_order")
    for key, label, formula, _, _, shared, p_params, p_acc, _ in ROWS:
        if key not in results:
            continue
        r = results[key]
        delta = (
            "-"
            if base is None or key == "complex_order"
            else (f"{r['mean'] - base['mean']:+.3f}")
        )
        p_delta = "-" if key == "complex_order" else f"{p_acc - 0.813:+.3f}"
        mr = PAPER_MR_TABLE2.get(key)
        mr_acc = "" if mr is None else f"{mr:.3f}"
        mr_delta = (
            ""
            if mr is None
            else "-"
            if key == "complex_order"
            else f"{mr - PAPER_MR_TABLE2['complex_order']:+.3f}"
        )
        lines.append(
            f"| {label} | {formula} | {'x' if shared else ''} | "
            f"{r['params']:,} | {r['mean']:.3f} ± {r['std']:.3f} | {delta} "
            f"| {r['source']} | {p_params} | {p_acc:.3f} | {p_delta} "
            f"| {mr_acc} | {mr_delta} |"
        )
    return "\n".join(lines)


def _write(path, settings, command, results, seconds):
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "settings": {"command": command, "numbers": settings},
        "results": list(results.values()),
        "seconds": seconds,
    }
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(payload, indent=2) + "\n")
    temporary.replace(path)


def main(argv=None):
    args = parse_args(argv)
    if args.compile_cache and not args.smoke:
        table2.enable_compile_cache()
    settings = _settings(args)
    command = "KERAS_BACKEND={} python benchmarks/complex_order_table4.py {}"
    command = command.format(
        keras.backend.backend(),
        " ".join(sys.argv[1:] if argv is None else argv),
    ).strip()
    folds = list(range(args.folds))
    previous = {}
    if not args.restart:
        previous = table2._load_previous(
            args.output, settings, key=lambda r: r["row"]
        )
    from_table2 = {} if args.smoke else _table2_rows(args, folds)
    texts, labels = table2.load_dataset(args)
    hyper = table2.architecture_hyper("transformer", args)
    start = time.perf_counter()
    results = {}
    for row in ROWS:
        key, _, _, embedding, options, shared, _, _, table2_row = row
        if key not in args.rows:
            continue
        saved = previous.get(key)
        if saved is not None and set(folds) <= set(saved["folds"]):
            result = dict(table2.merge_folds(saved, None, folds))
        elif table2_row is not None and table2_row in from_table2:
            result = dict(from_table2[table2_row], source="Table 2 run")
        else:
            extra = {"shared_weights": True} if shared else {}
            if options:
                extra["embedding_options"] = dict(options)
            result = recipe.cross_validate(
                "transformer",
                embedding,
                texts,
                labels,
                n_folds=args.n_folds,
                folds=folds,
                epochs=args.epochs,
                batch_size=args.batch_size,
                learning_rate=args.learning_rate,
                patience=args.patience,
                sequence_length=args.sequence_length,
                max_tokens=args.max_tokens,
                seed=args.seed,
                run_eagerly=args.smoke and keras.backend.backend() != "jax",
                **hyper,
                **extra,
            )
            result.pop("settings", None)
            result["source"] = "this run"
        result.update(row=key, shared_weights=shared, options=options)
        results[key] = result
        print(
            f"{key}: {result['mean']:.3f} ± {result['std']:.3f} "
            f"({result['params']:,} parameters, {result['source']})",
            flush=True,
        )
        _write(
            args.output,
            settings,
            command,
            results,
            time.perf_counter() - start,
        )
    print()
    print(markdown_table(results, args))
    return {"settings": settings, "results": results}


if __name__ == "__main__":
    main()
