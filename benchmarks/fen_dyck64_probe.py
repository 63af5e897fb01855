"""Do a Dyck-1 FEN's encodings carry the bracket counts? Linear probes.

Dyck-1's semantic monoid (Sec. 4 of Pasteris et al.; see
`keras_msets.data.dyck1`) is the bicyclic monoid: a segment is summed up by
`c`, its unmatched ")", and `o`, its unmatched "(", and a string is
balanced exactly when its product is `(0, 0)`. A FEN that has learned the
task exactly can hold these integers in its segment encodings. This
benchmark asks whether it does: for every segment length 1, 2, 4, ..., N it
fits a least-squares linear map from the encodings `eps_ij` of up to 8
segments of that length to `c`, `o` and the net count `o - c` on half of
the strings and reports, on the other half, the mean absolute error and
the fraction of segments whose rounded prediction is exact.

A low exact fraction at some length means that the counts are not (or not
linearly) held there: a decoder reading those encodings cannot tell a
string from one with a single bracket flipped (net count off by 2), the
failure of `fen_dyck_64` (benchmarks/RESULTS.md). A linear probe can miss
a nonlinear code, so a low number is evidence, not proof. At segment
lengths up to 4 there are at most 16 distinct segments, fewer than the
probe's coefficients (encoding size + 1), so exactness there is automatic;
from length 8 on it is not.

    KERAS_BACKEND=jax python benchmarks/fen_dyck64_probe.py
    KERAS_BACKEND=jax python benchmarks/fen_dyck64_probe.py \\
        --weights run/model.weights.h5 --encoding-activation linear

Without `--weights` it probes the shipped preset `fen_dyck_64`. Writes
`benchmarks/results/fen_dyck64_probe.json` (`--output`).
"""

import argparse
import json
import sys
from pathlib import Path

import keras
import numpy as np

from keras_msets import data
from keras_msets import zoo
from keras_msets.testing import load_script

HERE = Path(__file__).resolve().parent
RECIPE = HERE.parent / "zoo" / "fen_dyck_64" / "recipe.py"
SEGMENTS_PER_LENGTH = 8


def bicyclic_counts(x, start, stop):
    """`(c, o)` of `x[:, start:stop]` (1 = "(", 2 = ")"), int arrays."""
    steps = np.where(x[:, start:stop] == 1, 1, -1)
    heights = np.cumsum(steps, axis=1)
    closing = np.maximum(0, -heights.min(axis=1))
    return closing, heights[:, -1] + closing


def probe(model, num=3000, seed=778):
    """Per segment length: probe error and exact fraction for c, o, o - c."""
    length = model.segments.length
    x, _ = data.dyck1(num, length, seed=seed)
    table = keras.ops.convert_to_numpy(model.encodings(x))[:, 1:]
    spans = model.segments.segments
    rows = []
    width = 1
    while width <= length:
        chosen = [k for k, (i, j) in enumerate(spans) if j - i + 1 == width]
        chosen = chosen[:SEGMENTS_PER_LENGTH]
        features, targets = [], []
        for k in chosen:
            i, j = spans[k]
            closing, opening = bicyclic_counts(x, i - 1, j)
            features.append(table[:, k])
            targets.append(np.stack([closing, opening, opening - closing], 1))
        # Split by string, so that no string is in both halves.
        half = num // 2
        fit = np.concatenate([f[:half] for f in features])
        held = np.concatenate([f[half:] for f in features])
        fit_y = np.concatenate([t[:half] for t in targets])
        held_y = np.concatenate([t[half:] for t in targets])
        fit = np.concatenate([fit, np.ones((len(fit), 1))], axis=1)
        held = np.concatenate([held, np.ones((len(held), 1))], axis=1)
        coef, *_ = np.linalg.lstsq(fit, fit_y.astype("float64"), rcond=None)
        predicted = held @ coef
        row = {"segment_length": width, "segments": len(chosen)}
        for column, name in enumerate(("closing", "opening", "net")):
            error = predicted[:, column] - held_y[:, column]
            row[f"{name}_mae"] = float(np.abs(error).mean())
            row[f"{name}_exact"] = float(
                np.mean(np.round(predicted[:, column]) == held_y[:, column])
            )
        rows.append(row)
        width *= 2
    return rows


def load_model(weights=None, encoding_activation="tanh", count_weight=0.0):
    if weights is None:
        return zoo.load("fen_dyck_64")
    recipe = load_script(RECIPE)
    model = recipe.build_model(
        encoding_activation=encoding_activation,
        token_count_loss_weight=count_weight,
    )
    model(np.ones((1, recipe.LENGTH), "int32"))
    model.load_weights(weights)
    return model


def markdown(rows):
    lines = [
        "| segment length | c exact | o exact | o - c exact | o - c MAE |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['segment_length']} | {r['closing_exact']:.3f} | "
            f"{r['opening_exact']:.3f} | {r['net_exact']:.3f} | "
            f"{r['net_mae']:.3f} |"
        )
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", default=None)
    parser.add_argument(
        "--encoding-activation",
        default="tanh",
        help='of the model the --weights belong to: "tanh" or "linear"',
    )
    parser.add_argument(
        "--token-count-loss-weight",
        type=float,
        default=0.0,
        help="of the model the --weights belong to (> 0: it has a readout)",
    )
    parser.add_argument("--num", type=int, default=3000)
    parser.add_argument(
        "--output", default=str(HERE / "results" / "fen_dyck64_probe.json")
    )
    args = parser.parse_args(argv)
    if args.num < 4:
        raise ValueError(f"`--num` must be at least 4. Received: {args.num}")
    activation = args.encoding_activation
    model = load_model(
        args.weights,
        None if activation == "linear" else activation,
        args.token_count_loss_weight,
    )
    rows = probe(model, num=args.num)
    result = {
        "weights": args.weights or "preset fen_dyck_64",
        "encoding_activation": activation,
        "num_strings": args.num,
        "rows": rows,
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
    print(markdown(rows))
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
