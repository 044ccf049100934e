"""A pool change does not force a paid re-run: when the committed baseline was made on another
pool (an item added), the gate re-ranks the baseline's model on this run's pool, embedding only
the texts the embedding cache lacks, and says so; ``execretrieval baseline --refresh`` does the
same on demand. Two models are never compared across two pools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import fake_embedders
import pytest

NEW_ITEM = '''domain = "strings"
query = "Count the consonants (letters a-z other than a, e, i, o, u, either case) in a string."
entry_point = "count_consonants"
canonical = """
def count_consonants(text: str) -> int:
    count = 0
    for ch in text:
        if ch.isascii() and ch.isalpha() and ch.lower() not in "aeiou":
            count += 1
    return count
"""
tests = [
  "assert count_consonants('') == 0",
  "assert count_consonants('aeiou') == 0",
  "assert count_consonants('b') == 1",
  "assert count_consonants('BCD') == 3",
  "assert count_consonants('Hello World') == 7",
  "assert count_consonants('a1b2') == 1",
  "assert count_consonants('xyz') == 3",
]
'''


@pytest.fixture
def dense(tmp_path, monkeypatch) -> None:
    """The fake dense embedder installed for the pytest subprocesses."""
    site = fake_embedders.install(tmp_path / "site")
    path = [str(site), str(Path(fake_embedders.__file__).parent), os.environ.get("PYTHONPATH")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in path if p))


def run(pytester, items: Path, *args: str):
    return pytester.runpytest_subprocess(
        "--embedder=fake-dense",
        f"--execretrieval-items={items}",
        "--execretrieval-cache-dir=cache",
        "-p",
        "no:randomly",
        *args,
    )


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest_execretrieval.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


def add_item(items: Path) -> int:
    """Add one item and build its corpus; returns how many texts it adds (its query and its
    snippets)."""
    (items / "strings" / "count_consonants.toml").write_text(NEW_ITEM)
    built = cli("build", str(items), cwd=items.parent)
    assert built.returncode == 0, built.stderr
    rows = [json.loads(x) for x in (items / "corpus.jsonl").read_text().splitlines() if x]
    return 1 + sum(row.get("query_id") == "strings/count_consonants" for row in rows)


def test_a_gate_after_an_item_is_added_re_ranks_the_baseline_from_the_cache(pytester, items, dense):
    made = run(pytester, items, "--execretrieval-report-dir=base")
    assert made.ret == 1  # ungated, some queries fail: a baseline all the same
    baseline = json.loads((pytester.path / "base" / "fake-dense.json").read_text())
    new_texts = add_item(items)
    gated = run(
        pytester,
        items,
        "--execretrieval-baseline=base/fake-dense.json",
        "--execretrieval-report-dir=new",
    )
    assert gated.ret in (0, 1, 7), gated.stderr.str()  # the gate decided: no usage error
    gated.stdout.fnmatch_lines(
        [f"baseline fake-dense: re-ranked on this pool (*); {new_texts} of * texts embedded*"]
    )
    report = json.loads((pytester.path / "new" / "fake-dense.json").read_text())
    assert report["corpus"]["sha256"] != baseline["corpus"]["sha256"]
    assert report["gate"]["n_queries"] == 5 == report["corpus"]["n_queries"]
    # the committed baseline itself is untouched: the refreshed one lives in the run
    assert json.loads((pytester.path / "base" / "fake-dense.json").read_text()) == baseline


def test_baseline_refresh_rewrites_the_baseline_on_the_current_pool(pytester, items, dense):
    assert run(pytester, items, "--execretrieval-report-dir=base").ret == 1
    add_item(items)
    refreshed = cli("baseline", "--refresh", "base/fake-dense.json", "-p", "no:randomly",
                    f"--execretrieval-items={items}", "--execretrieval-cache-dir=cache",
                    cwd=pytester.path)  # fmt: skip
    assert refreshed.returncode == 0, refreshed.stdout + refreshed.stderr
    baseline = json.loads((pytester.path / "base" / "fake-dense.json").read_text())
    assert baseline["corpus"]["n_queries"] == 5
    gated = run(pytester, items, "--execretrieval-baseline=base/fake-dense.json")
    assert gated.ret in (0, 1, 7) and "re-ranked on this pool" not in gated.stdout.str()
    wrong = cli("baseline", "--refresh", "base/fake-dense.json", "--embedder", "bm25",
                cwd=pytester.path)  # fmt: skip
    assert wrong.returncode == 2 and "'fake-dense''s baseline" in wrong.stderr


def test_a_baseline_of_another_model_than_the_one_installed_is_not_refreshed(
    pytester, items, dense
):
    assert run(pytester, items, "--execretrieval-report-dir=base").ret == 1
    path = pytester.path / "base" / "fake-dense.json"
    report = json.loads(path.read_text())
    report["embedder"]["dim"] = 999  # made by another build of the model
    path.write_text(json.dumps(report))
    add_item(items)
    gated = run(pytester, items, f"--execretrieval-baseline={path}")
    assert gated.ret == pytest.ExitCode.USAGE_ERROR
    gated.stderr.fnmatch_lines(["*fake-dense here is not the model that made it (dim differ)*"])
