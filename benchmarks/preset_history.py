"""A preset's files as they were at an earlier git revision.

Shared by the benchmark scripts that compare a shipped preset or module
with an earlier one (`units_digit_seeds.py`, `mst_dev_selection.py`,
`refined_mi_large_n.py`, `refined_mi_statistics_speed.py`). Needs the
repository's git history.
"""

import subprocess
import tempfile
from pathlib import Path

PRESET_FILES = ("config.json", "model.weights.h5")


def file_at_revision(path, revision, repository):
    """The bytes of `path` (relative to the checkout's top) at `revision`."""
    return subprocess.run(
        ["git", "show", f"{revision}:{path}"],
        cwd=repository,
        capture_output=True,
        check=True,
    ).stdout


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
        blob = file_at_revision(f"zoo/{name}/{file}", revision, repository)
        (folder / file).write_bytes(blob)
    return folder
