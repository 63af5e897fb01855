"""Where a tutorial writes its figures, and its smoke mode."""

import argparse
import io
import os

SMOKE_ENV = "KERAS_MSETS_SMOKE"


class TutorialOutputs:
    """The output folder of a tutorial script, read from its command line.

    `--output-dir DIR` (default `tutorial_outputs/<name>`) is where figures
    go; a folder that already holds files is refused unless `--overwrite`
    is given, so a run never replaces earlier results silently. With
    `KERAS_MSETS_SMOKE=1` (a tiny run, how the test suite runs every
    tutorial) figures are drawn but nothing is written.

    Args:
        name: the tutorial's name, the default folder's last part.
        description: the `--help` text (the tutorial's docstring).
        argv: the arguments to read; None reads `sys.argv` (unknown
            arguments are left alone).
    """

    def __init__(self, name, description=None, argv=None):
        self.smoke = os.environ.get(SMOKE_ENV) == "1"
        parser = argparse.ArgumentParser(description=description)
        parser.add_argument(
            "--output-dir", default=os.path.join("tutorial_outputs", name)
        )
        parser.add_argument("--overwrite", action="store_true")
        args, _ = parser.parse_known_args(argv)
        self.directory = args.output_dir
        if (
            os.path.isdir(self.directory)
            and os.listdir(self.directory)
            and not args.overwrite
        ):
            raise SystemExit(
                f"{self.directory} already holds files: pass --overwrite to "
                "replace them, or --output-dir DIR to write elsewhere."
            )
        print(
            "Figures go to",
            "nowhere (smoke mode)" if self.smoke else self.directory,
        )

    def save_figure(self, name, figure=None):
        """Writes a matplotlib figure (default: the current one) into the
        folder (in smoke mode: nowhere) and closes it."""
        import matplotlib.pyplot as plt

        figure = plt.gcf() if figure is None else figure
        if self.smoke:  # a smoke run's numbers mean nothing: draw only
            figure.savefig(io.BytesIO(), format="png")
        else:
            os.makedirs(self.directory, exist_ok=True)
            figure.savefig(os.path.join(self.directory, name), dpi=120)
        plt.close(figure)
