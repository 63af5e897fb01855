"""Figure 2 of DeBenedetto & Chiang (ICML 2020): task 0, recovering automata.

A random multiset automaton with `d` states gives every training string a
weight; a learned complex diagonal automaton is fitted to those weights by
minimising the mean squared error, and its final training MSE is compared
with a baseline that predicts the mean string weight for every string
(whose MSE is the variance of the targets). Two panels, as in the paper
(Sec. 5.2):

- (a) unary automata, transition drawn from the Haar distribution on
  orthogonal matrices (`keras_msets.data.random_unary_automaton`); training
  strings: every unary string of length 0 to 20 (21 strings);
- (b) complex diagonal automata over 5 symbols with spectral radius 1
  (`keras_msets.data.random_diagonal_automaton`); training strings: every
  string of length 5 (3125 strings); the target is the real part of the
  complex string weight (`diagonal_automaton_strings`).

    KERAS_BACKEND=jax python benchmarks/figure2_task0.py [--seed 0]
    KERAS_BACKEND=jax python benchmarks/figure2_task0.py --smoke

Writes `benchmarks/figure2_task0.png` and
`benchmarks/results/figure2_task0.json` (or both under `--output-dir`)
and prints a markdown table for `benchmarks/RESULTS.md`.

The model. The paper drops the final dense layer for this task and sums
the forward weights over states. The prediction for a string `w` is

    sum_j Re(fw_j(w)),   fw(w) = lambda * prod_k mu(w_k)   (complex, diagonal)

from `keras_msets.layers.DiagonalMultisetAutomaton(alphabet_size,
num_states, use_initial_weights=True, output_format="complex")`, whose
first `num_states` outputs are the real parts of `fw`. Summing is the
automaton's weight with all final weights 1: any final weights `rho_j` can
be multiplied into the learned initial weights `lambda_j` (Sec. 5.2), so
nothing is lost. Taking the real part is how the layer's conjugate-pair
storage (Sec. 4.1, 5.1) is read: a real-weighted automaton's complex states
come in conjugate pairs `z, conj(z)` whose contributions
`c z^n + conj(c z^n) = 2 Re(c z^n)` add up to a real weight, so one stored
state stands for a pair, and the factor 2 is absorbed by the learned
`lambda`. The output is therefore exactly the weight of a real automaton
with (up to) `2 * num_states` states and final weights 1.

How many stored states. "The embedding dimension is set to match the
number of states in the generated multiset automaton" (Sec. 5.2): we set
`num_states = d`, the embedding size of the layer, as in the paper.
- (b) The target is `Re(sum_{q=1..d} lambda_q rho_q prod_k mu(w_k)_q)`,
  i.e. exactly `sum_q Re(c_q prod_k mu_q)`: `d` stored states can represent
  it exactly (`c_q = lambda_q rho_q`), no fewer can in general. This is the
  "same number of states" of the paper, with no slack.
- (a) A real orthogonal `d x d` transition has conjugate-pair eigenvalues
  (plus real ones, +-1), so about `d/2 + 1` stored states would already
  represent it exactly; `d` stored states are twice what is needed. With
  `--unary-states half` the unary panel uses `ceil(d/2) + 1` stored states
  (the exact requirement for an orthogonal transition: `d/2 + 1` when `d`
  is even and the transition has a `+1` and a `-1` eigenvalue,
  `(d + 1)/2` when `d` is odd).

Training (scaled down from the paper to fit ~15 minutes on 2 shared CPU
cores). The paper trains each of 10 models on each of 10 automata per
size, Adam, up to 30k epochs, early stopping after 100 epochs without
improvement, and keeps the best model. Here:
- all `num_automata x restarts` models of one size are trained *at once*,
  as independent blocks of states of one `DiagonalMultisetAutomaton`
  whose output is summed block by block; the loss is the *sum* over blocks
  of each block's MSE. Blocks share no parameter and Adam is per
  parameter, so every block follows exactly the gradient steps it would
  follow alone; this only saves one compilation and one Python loop per
  model. The difference from separate training is early stopping, which
  watches the summed loss (so every block runs as long as the slowest);
- Adam with learning rate `--learning-rate` (default 0.01, ten times
  Keras' default, because the step budget is 3x smaller than the paper's)
  and full-batch steps. The weight of a string depends only on its
  multiset, for the target and for the model alike, so the 3125 strings of
  length 5 are trained on as their 126 distinct multisets with sample
  weights proportional to their number of orderings: the loss and its
  gradient are exactly those of the MSE over all 3125 strings, at 1/25 of
  the cost (the final MSE is then measured on all 3125 strings, in their
  original order). Each Keras epoch repeats the (21- or 126-row) data set
  `steps_per_epoch = 20` times, unshuffled, with `batch_size` = its number
  of rows, so every step is one full-batch step and `model.fit` pays its
  per-epoch overhead once per 20 steps;
- at most `--steps` full-batch steps (default 10000, paper 30k epochs),
  early stopping on the training loss after 100 steps without improvement
  (`min_delta` 0; the best weights are restored), as in the paper;
- 10 automata per size (as the paper) and the best of 4 restarts per
  automaton (paper 10), sizes d = 2, 4, 8, 16.
Reported per size: mean +- std over automata of the best restart's final
training MSE, of the baseline's MSE, and of their ratio (relative MSE;
the baseline's relative MSE is 1 by definition).
"""

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

import keras
import numpy as np
from keras import ops

from keras_msets import data
from keras_msets import layers

HERE = Path(__file__).resolve().parent

PANELS = {
    "unary": "(a) unary, Haar orthogonal, lengths 0-20",
    "diagonal": "(b) complex diagonal, 5 symbols, length 5",
}
ALPHABET_SIZE = 5
UNARY_MAX_LENGTH = 20
DIAGONAL_LENGTH = 5
PATIENCE_STEPS = 100
PAPER_CLAIM = (
    "the learned complex diagonal automaton approximates a unary or "
    "diagonal multiset automaton using the same number of states; its "
    "training loss is far below the mean-prediction baseline (Fig. 2)"
)

FULL = {
    "sizes": (2, 4, 8, 16),
    "num_automata": 10,
    "restarts": 4,
    "steps": 10000,
    "steps_per_epoch": 20,
}
SMOKE = {
    "sizes": (2, 3),
    "num_automata": 2,
    "restarts": 2,
    "steps": 40,
    "steps_per_epoch": 10,
}


def stored_states(panel, d, unary_states):
    """Number of stored (conjugate-pair) states fitted to a `d`-state target."""
    if panel == "unary" and unary_states == "half":
        return math.ceil(d / 2) + 1
    return d


def task_data(panel, d, num_automata, seed):
    """Strings `x` [n, length] and targets `y` [n, num_automata]."""
    targets = []
    for a in range(num_automata):
        automaton_seed = seed * 1_000_003 + d * 1000 + a
        if panel == "unary":
            automaton = data.random_unary_automaton(d, seed=automaton_seed)
            lengths, weights = data.unary_automaton_strings(
                automaton, max_length=UNARY_MAX_LENGTH
            )
            positions = np.arange(UNARY_MAX_LENGTH)
            x = (positions < lengths[:, None]).astype("int32")
        else:
            automaton = data.random_diagonal_automaton(
                d, alphabet_size=ALPHABET_SIZE, seed=automaton_seed
            )
            x, weights = data.diagonal_automaton_strings(
                automaton, length=DIAGONAL_LENGTH
            )
        targets.append(weights)
    return x, np.stack(targets, axis=-1).astype("float32")


def build_model(panel, num_states, num_blocks, length):
    """`num_blocks` independent automata, each summed over its states.

    Output `[batch, num_blocks]`: block `b` is `sum_j Re(fw_j)` over its own
    `num_states` stored states (see the module docstring).
    """
    alphabet_size = 2 if panel == "unary" else ALPHABET_SIZE + 1
    inputs = keras.Input((length,), dtype="int32", name="tokens")
    forward = layers.DiagonalMultisetAutomaton(
        alphabet_size,
        num_blocks * num_states,
        use_initial_weights=True,
        output_format="complex",
        name="automaton",
    )(inputs)

    def sum_real_parts(forward):
        real = forward[:, : num_blocks * num_states]
        return ops.sum(ops.reshape(real, (-1, num_blocks, num_states)), -1)

    outputs = keras.layers.Lambda(
        sum_real_parts,
        output_shape=(num_blocks,),
        name="sum_over_states",
    )(forward)
    return keras.Model(inputs, outputs, name=f"task0_{panel}")


def summed_block_mse(y_true, y_pred):
    """Per string: the squared errors summed over blocks.

    Keras averages this over the batch, so the loss is the sum over blocks
    of each block's MSE and each block gets the gradient of its own MSE.
    """
    return ops.sum(ops.square(y_true - y_pred), axis=-1)


def distinct_multisets(x, y):
    """The distinct multisets among the strings `x`, and their multiplicity.

    Returns `(x_unique, y_unique, weights)`: one sorted representative per
    multiset, its targets, and sample weights `count * n_unique / n` with
    which Keras' batch-mean loss on the distinct multisets equals the plain
    MSE over all `n` strings.
    """
    x_sorted = np.sort(x, axis=1)
    x_unique, first, counts = np.unique(
        x_sorted, axis=0, return_index=True, return_counts=True
    )
    weights = counts * (len(x_unique) / len(x))
    return x_unique, y[first], weights.astype("float32")


def fit_size(panel, d, settings, seed):
    """Trains all automata x restarts of one size; returns the metrics."""
    num_automata = settings["num_automata"]
    restarts = settings["restarts"]
    num_states = stored_states(panel, d, settings["unary_states"])
    x, y = task_data(panel, d, num_automata, seed)
    # Block b = automaton b // restarts, restart b % restarts.
    y_blocks = np.repeat(y, restarts, axis=1)
    num_blocks = num_automata * restarts
    x_train, y_train, weights = distinct_multisets(x, y_blocks)
    steps_per_epoch = settings["steps_per_epoch"]
    epochs = max(1, settings["steps"] // steps_per_epoch)
    patience = max(1, math.ceil(PATIENCE_STEPS / steps_per_epoch))

    keras.utils.set_random_seed(seed * 1000 + d)
    model = build_model(panel, num_states, num_blocks, x.shape[1])
    model.compile(
        optimizer=keras.optimizers.Adam(settings["learning_rate"]),
        loss=summed_block_mse,
    )
    early_stopping = keras.callbacks.EarlyStopping(
        monitor="loss", patience=patience, restore_best_weights=True
    )
    start = time.time()
    history = model.fit(
        np.tile(x_train, (steps_per_epoch, 1)),
        np.tile(y_train, (steps_per_epoch, 1)),
        sample_weight=np.tile(weights, steps_per_epoch),
        batch_size=len(x_train),
        epochs=epochs,
        shuffle=False,
        callbacks=[early_stopping, keras.callbacks.TerminateOnNaN()],
        verbose=0,
    )
    seconds = time.time() - start

    # Evaluated on every training string, in its original order.
    prediction = model.predict(x, batch_size=len(x_train), verbose=0)
    block_mse = np.mean((prediction - y_blocks) ** 2, axis=0)
    # A diverged block (NaN / inf) counts as the worst possible restart.
    block_mse = np.where(np.isfinite(block_mse), block_mse, np.nan)
    block_mse = block_mse.reshape(num_automata, restarts)
    learned = np.nanmin(block_mse, axis=1)
    baseline = np.var(y.astype("float64"), axis=0)
    relative = learned / baseline
    epochs_run = len(history.history["loss"])
    return {
        "d": d,
        "stored_states": num_states,
        "num_strings": len(x),
        "num_distinct_multisets": len(x_train),
        "learned_mse": learned.tolist(),
        "all_restarts_mse": block_mse.tolist(),
        "baseline_mse": baseline.tolist(),
        "relative_mse": relative.tolist(),
        "summary": {
            "learned_mse": _mean_std(learned),
            "baseline_mse": _mean_std(baseline),
            "relative_mse": _mean_std(relative),
        },
        "steps_run": epochs_run * steps_per_epoch,
        "seconds": round(seconds, 1),
    }


def _mean_std(values):
    values = np.asarray(values, dtype="float64")
    return {"mean": float(np.mean(values)), "std": float(np.std(values))}


def _fmt(stats):
    return f"{stats['mean']:.2e} ± {stats['std']:.1e}"


def markdown_table(results):
    """The block for `benchmarks/RESULTS.md`."""
    s = results["settings"]
    lines = [
        "### Figure 2 (task 0): recovering multiset automata",
        "",
        f"`{s['command']}` — backend {s['backend']}, {s['date']}, "
        f"{s['machine']}, {s['wall_seconds']:.0f} s.",
        f"{s['num_automata']} automata per size, best of {s['restarts']} "
        f"restarts, Adam lr {s['learning_rate']}, ≤ {s['steps']} full-batch "
        f"steps, early stopping after {PATIENCE_STEPS} steps "
        f"(paper: 10 automata, best of 10, ≤ 30k epochs, patience 100).",
        "MSE = final training MSE (mean ± std over automata); relative = "
        "learned MSE / baseline MSE (baseline = predict the mean weight, "
        "relative 1).",
        "",
        "| panel | d (target) | stored states | learned MSE | baseline MSE "
        "| relative MSE | steps run |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for panel in PANELS:
        for row in results[panel]:
            summary = row["summary"]
            lines.append(
                f"| {panel} | {row['d']} | {row['stored_states']} | "
                f"{_fmt(summary['learned_mse'])} | "
                f"{_fmt(summary['baseline_mse'])} | "
                f"{_fmt(summary['relative_mse'])} | {row['steps_run']} |"
            )
    lines += ["", f"Paper (Fig. 2, qualitative): {PAPER_CLAIM}."]
    return "\n".join(lines)


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for axis, (panel, title) in zip(axes, PANELS.items(), strict=True):
        rows = results[panel]
        sizes = [row["d"] for row in rows]
        for key, label, color in (
            ("learned_mse", "learned complex diagonal", "C0"),
            ("baseline_mse", "baseline (mean weight)", "C1"),
        ):
            mean = np.array([r["summary"][key]["mean"] for r in rows])
            std = np.array([r["summary"][key]["std"] for r in rows])
            axis.plot(sizes, mean, marker="o", color=color, label=label)
            low = np.maximum(mean - std, mean * 1e-3)
            axis.fill_between(sizes, low, mean + std, color=color, alpha=0.2)
        axis.set_yscale("log")
        axis.set_xscale("log", base=2)
        axis.set_xticks(sizes, [str(s) for s in sizes])
        axis.set_title(title, fontsize=10)
        axis.set_xlabel("number of states d")
    axes[0].set_ylabel("training MSE")
    axes[1].legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    parser.add_argument("--num-automata", type=int, default=None)
    parser.add_argument("--restarts", type=int, default=None)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument(
        "--unary-states", choices=("same", "half"), default="same"
    )
    parser.add_argument("--output-dir", default=None)
    args = parser.parse_args(argv)

    settings = dict(SMOKE if args.smoke else FULL)
    for key in ("sizes", "num_automata", "restarts", "steps"):
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    settings["sizes"] = tuple(settings["sizes"])
    settings["learning_rate"] = args.learning_rate
    settings["unary_states"] = args.unary_states

    start = time.time()
    results = {}
    for panel in PANELS:
        results[panel] = []
        for d in settings["sizes"]:
            row = fit_size(panel, d, settings, args.seed)
            results[panel].append(row)
            print(
                f"{panel} d={d}: relative MSE "
                f"{_fmt(row['summary']['relative_mse'])}, "
                f"{row['steps_run']} steps, {row['seconds']} s",
                flush=True,
            )
    results["settings"] = {
        **settings,
        "seed": args.seed,
        "smoke": args.smoke,
        "patience_steps": PATIENCE_STEPS,
        "command": "KERAS_BACKEND="
        + keras.backend.backend()
        + " python benchmarks/figure2_task0.py "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "backend": keras.backend.backend(),
        "keras": keras.__version__,
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"2 CPU cores ({platform.machine()})",
        "wall_seconds": round(time.time() - start, 1),
        "paper_claim": PAPER_CLAIM,
    }
    results["settings"]["command"] = results["settings"]["command"].strip()

    if args.output_dir is None:
        png = HERE / "figure2_task0.png"
        json_path = HERE / "results" / "figure2_task0.json"
    else:
        png = Path(args.output_dir) / "figure2_task0.png"
        json_path = Path(args.output_dir) / "figure2_task0.json"
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(results, indent=2))
    plot(results, png)
    print()
    print(markdown_table(results))
    return results


if __name__ == "__main__":
    main()
