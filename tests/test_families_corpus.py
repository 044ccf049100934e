"""The families corpus (`execretrieval build --families`, `--execretrieval-families`): its own
folder, distractors drawn across every class, incremental like the default corpus, and the
default corpus left as it was."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from corpus_builds import corpus_files
from plugin_runs import bench

from pytest_execretrieval import cli
from pytest_execretrieval.corpus.build import engine
from pytest_execretrieval.corpus.store import CorpusVariant, corpus_dir, read_corpus
from pytest_execretrieval.mutation.families import ALL_CLASSES, FAMILY_CLASSES

DATA = Path(__file__).parent / "data" / "items"
EDITED = "arrays_lists/last_index_of"
DROPPED = '  "assert last_index_of([5, 6, 7], 6) == 1",\n'
FAMILIES = CorpusVariant(families=True)


@pytest.fixture(scope="module")
def built(tmp_path_factory, cache_args) -> Path:
    """A copy of the test items with a fully built families corpus (the default one as
    committed)."""
    target = tmp_path_factory.mktemp("built") / "items"
    shutil.copytree(DATA, target)
    assert cli.main(["build", str(target), "--families", "--full", *cache_args]) == 0
    return target


def test_families_corpus_has_its_own_folder_and_engine(built) -> None:
    where = corpus_dir(built, FAMILIES)
    assert where == built / "families"
    assert corpus_files(built) == corpus_files(DATA)  # the default corpus is left as committed
    meta = json.loads((where / "manifest.json").read_text())
    assert meta["engine"] == engine(FAMILIES)
    assert {"families", "candidates_per_class"} <= set(meta["engine"]) - set(engine())
    corpus = read_corpus(built, engine(FAMILIES), where)
    distractors = [s for s in corpus.snippets if s.kind == "distractor"]
    assert {s.operator for s in distractors} <= set(ALL_CLASSES)
    assert {s.operator for s in distractors} & set(FAMILY_CLASSES)
    # never an equivalent mutant without evidence: every distractor failed a test, not a timeout
    assert all(s.failing_tests and s.kill in ("assertion", "exception") for s in distractors)


def test_families_check_and_incremental_build(built, tmp_path, cache_args, capsys) -> None:
    capsys.readouterr()
    assert cli.main(["build", str(built), "--families", "--check"]) == 0
    assert cli.main(["build", str(built), "--check"]) == 0  # the default corpus is still fresh
    edited, full = tmp_path / "edited", tmp_path / "full"
    for target in (edited, full):
        shutil.copytree(built, target)
        path = target / f"{EDITED}.toml"
        path.write_text(path.read_text().replace(DROPPED, ""))
    capsys.readouterr()
    assert cli.main(["build", str(edited), "--families", "--check"]) == 1
    assert f"  {EDITED}" in capsys.readouterr().out
    assert cli.main(["build", str(edited), "--families", *cache_args]) == 0
    out = capsys.readouterr().out
    assert "reused 3 items" in out or "reused 2 items" in out  # the balance may move one more
    assert cli.main(["build", str(full), "--families", "--full", *cache_args]) == 0
    assert corpus_files(edited / "families") == corpus_files(full / "families")


def test_families_and_stack_exclude_each_other(tmp_path, capsys) -> None:
    assert cli.main(["build", str(tmp_path), "--families", "--stack", "2"]) == 2
    assert "--families" in capsys.readouterr().err


ITEM = """domain = "math_number_theory"
query = "Add one to an integer."
entry_point = "succ"
canonical = '''
def succ(n: int) -> int:
    return int(n) + 1
'''
tests = [
  "assert succ(1) == 2",
  "assert succ(-5) == -4",
  "assert succ(0) == 1",
]
"""


def test_an_equivalent_family_mutant_is_a_survivor_never_a_distractor(tmp_path, cache_args) -> None:
    """Dropping `int()` around an int is equivalent (type_confusion): the tests cannot kill it,
    so it is no distractor; it is listed as a survivor with evidence that it agrees."""
    (tmp_path / "math_number_theory").mkdir()
    (tmp_path / "math_number_theory" / "succ.toml").write_text(ITEM)
    survivors = tmp_path / "survivors.jsonl"
    assert (
        cli.main(["build", str(tmp_path), "--families", "--survivors", str(survivors), *cache_args])
        == 0
    )
    corpus = read_corpus(tmp_path, where=tmp_path / "families")
    dropped = "    return (n) + 1\n", "    return n + 1\n"
    assert not any(s.code.endswith(dropped) for s in corpus.snippets)
    rows = [json.loads(line) for line in survivors.read_text().splitlines()]
    same = [r for r in rows if r["operator"] == "type_confusion"]
    assert same and all(r["equivalence"]["differing"] == 0 for r in same)


def test_benchmark_option_selects_the_families_corpus(pytester, items, cache_args) -> None:
    missing = bench(pytester, items, "--execretrieval-families")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    assert "execretrieval build" in missing.stderr.str() and "--families" in missing.stderr.str()
    both = bench(pytester, items, "--execretrieval-families", "--execretrieval-stack", "2")
    assert both.ret == pytest.ExitCode.USAGE_ERROR
    assert "--execretrieval-families" in both.stderr.str()
    assert cli.main(["build", str(items), "--families", *cache_args]) == 0
    result = bench(
        pytester, items, "--execretrieval-families", "--execretrieval-report-dir", "reports"
    )
    assert result.ret in (0, 1)
    report = json.loads((pytester.path / "reports" / "bm25.json").read_text())
    meta = json.loads((items / "families" / "manifest.json").read_text())
    assert report["corpus"]["sha256"] == meta["corpus_sha256"]
    per_class = report["analyses"]["per_class"]
    assert set(per_class["by_class"]) & set(FAMILY_CLASSES)
    assert per_class["realistic_mix"]["classes"]
    summary = (pytester.path / "reports" / "summary.md").read_text()
    assert "| realistic mix |" in summary
    verify = bench(
        pytester, items, "--execretrieval-verify", "--execretrieval-families", embedders=()
    )
    assert verify.ret == 0
    n_snippets = meta["counts"]["snippets"] + meta["counts"]["alternatives"]
    outcomes = verify.parseoutcomes()
    assert outcomes["passed"] > n_snippets and "failed" not in outcomes  # every snippet, gates
