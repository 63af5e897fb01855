"""A preset's files as they were at an earlier git revision.

Shared by the benchmark scripts that compare a shipped preset with one it
replaced (`units_digit_seeds.py`, `mst_dev_selection.py`). Needs the
repository's git history.
"""

import subprocess
import tempfile
from pathlib import Path

PRESET_FILES = ("config.json", "model.weights.h5")


def preset_at_revision(name, revision, repository):
    """Copies `zoo/<name>/{config.json, model.weights.h5}` at `revision`.

    Args:
        name: the preset's folder name under `zoo/`.
        revision: any git revision (`"633d104^"`, a branch, a tag).
        repository: the git checkout to read the history of.

    Returns:
        A new temporary folder holding the two files.
    """
    folder = Path(tempfile.mkdtemp())
    for file in PRESET_FILES:
        blob = subprocess.run(
            ["git", "show", f"{revision}:zoo/{name}/{file}"],
            cwd=repository,
            capture_output=True,
            check=True,
        ).stdout
        (folder / file).write_bytes(blob)
    return folder
