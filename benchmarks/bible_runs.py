"""What the studies on the Bible verse pairs share: held-out books, runs.

`benchmarks/char_lm.py` and `benchmarks/alignment.py` hold out the same
whole books (`DEV_BOOKS`, `TEST_BOOKS`) and store one JSON per (model,
seed) run, named by the configuration, model and seed; `run_missing`
trains the runs that are not stored yet, seed by seed across the models,
and refuses to mix a stored run made with other settings.
"""

import argparse
import json
import sys
from pathlib import Path

import keras

# Whole books, never seen in training (the dev books are those of
# `benchmarks/translation.py`).
DEV_BOOKS = ("Josh", "Eph")
TEST_BOOKS = ("Ruth", "1Sam", "Mark", "Phil")


def load_rows(rows=None):
    """`rows`, or the Bible's `(book, chapter, verse, english, spanish)`."""
    if rows is not None:
        return rows
    from keras_msets.data import bible

    return bible.load_verse_pairs()


def split_books(rows):
    """`{"train"|"dev"|"test": [book, ...]}`: `DEV_BOOKS` and
    `TEST_BOOKS` held out (`keras_msets.data.bible.split_by_book`)."""
    from keras_msets.data import bible

    parts = bible.split_by_book(rows, DEV_BOOKS, TEST_BOOKS)
    return {
        split: list(dict.fromkeys(r[0] for r in part))
        for split, part in zip(("train", "dev", "test"), parts, strict=True)
    }


def run_parser(doc, rows, output_dir, paper_help):
    """The arguments every study takes: models, seeds, configuration, runs.

    `--paper-config` selects the paper's configuration ("paper"), the
    hidden `--tiny` the tests' ("tiny"), otherwise "small"; `config_name`
    reads it back.
    """
    parser = argparse.ArgumentParser(
        description=doc.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--rows", nargs="+", choices=rows, default=None)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--paper-config", action="store_true", help=paper_help)
    parser.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--output-dir", type=Path, default=output_dir)
    parser.add_argument("--restart", action="store_true")
    parser.add_argument("--summary", action="store_true")
    parser.add_argument("--verbose", type=int, default=2)
    return parser


def config_name(args):
    """ "tiny", "paper" or "small", as `run_parser`'s flags say."""
    if args.tiny:
        return "tiny"
    return "paper" if args.paper_config else "small"


def settings_of(args, config, rows):
    """What a stored run must match: configuration, backend and data."""
    return {
        "config": args.config,
        **config,
        "backend": keras.backend.backend(),
        "data": "bible" if rows is None else "rows given",
    }


def run_path(output_dir, config_name, row, seed):
    return Path(output_dir) / f"{config_name}_{row}_seed{seed}.json"


def load_runs(output_dir, config_name):
    """The stored runs of one configuration (not those of a configuration
    whose name extends it, e.g. `small_projection` for `small`)."""
    runs = [
        json.loads(path.read_text())
        for path in sorted(Path(output_dir).glob(f"{config_name}_*_seed*.json"))
    ]
    return [run for run in runs if run["settings"]["config"] == config_name]


def run_missing(args, settings, script, argv, load_data, run_one, describe):
    """Trains and stores the runs of `args.rows` x `args.seeds` not stored.

    `load_data()` returns `(data, info)` and is called once, only when a
    run is missing; `run_one(data, row, seed)` returns the run's result
    dict and `describe(result)` its one-line summary. Returns
    `{(row, seed): result}` for every run, stored or new.
    """
    done, data, info = {}, None, None
    command = f"python benchmarks/{script} " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    for seed in args.seeds:
        for row in args.rows:
            path = run_path(args.output_dir, args.config, row, seed)
            if path.exists() and not args.restart:
                saved = json.loads(path.read_text())
                if saved["settings"] != settings:
                    raise ValueError(
                        f"{path} holds a run with other settings "
                        f"({saved['settings']}); use --restart to "
                        "overwrite it or --output-dir for another folder."
                    )
                done[(row, seed)] = saved["result"]
                continue
            if data is None:
                data, info = load_data()
            print(f"run {row} seed {seed}", flush=True)
            result = run_one(data, row, seed)
            record = {
                "command": command,
                "settings": settings,
                "data": info,
                "result": result,
            }
            path.write_text(json.dumps(record, indent=1) + "\n")
            done[(row, seed)] = result
            print(f"{row} seed {seed}: {describe(result)}", flush=True)
    return done
