import json

import pytest

from tests import cpu_times


@pytest.mark.backend_independent
def test_summary_sums_per_file_and_ranks_tests(tmp_path):
    path = tmp_path / "times.jsonl"
    rows = [
        {"id": "tests/a.py::t1", "cpu": 1.5},
        {"id": "tests/b.py::t2", "cpu": 4.0, "children": 1.0},
        {"id": "tests/a.py::t3[x]", "cpu": 2.0},
        {"id": "__session__", "cpu": 9.0},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    lines = cpu_times.summary(path, top=2).splitlines()
    assert lines[0] == (
        "3 tests, 8 CPU-s in tests; test processes 10 CPU-s in all"
    )
    files = lines[lines.index("CPU-s  tests  file") + 1 :][:2]
    assert [f.split() for f in files] == [
        ["4.0", "1", "tests/b.py"],
        ["3.5", "2", "tests/a.py"],
    ]
    assert [t.split()[-1] for t in lines[-2:]] == [
        "tests/b.py::t2",
        "tests/a.py::t3[x]",
    ]
