"""`execretrieval build --source mutmut`: candidates from mutmut's own operators, through the same
kill / selection / evidence pipeline, in a separate corpus (DIR/mutmut/)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from plugin_runs import bench

from pytest_execretrieval import cli
from pytest_execretrieval.corpus.build import build, engine
from pytest_execretrieval.corpus.items import load_items
from pytest_execretrieval.corpus.store import CorpusVariant, corpus_dir, read_corpus
from pytest_execretrieval.execution.runner import SuiteRunner
from pytest_execretrieval.execution.sandbox import Limits
from pytest_execretrieval.mutation.mutmut_source import (
    MUTMUT_CLASSES,
    MUTMUT_VERSION,
    generate_mutmut_mutants,
)
from pytest_execretrieval.mutation.operators import apply_edits, diff_blocks, validated_dump

DATA = Path(__file__).parent / "data" / "items"

MUTMUT = CorpusVariant(source="mutmut")
SOURCES = {
    "arithmetic": """\
def f(a, b):
    total = a + b * 2
    total += 1
    return total % 7
""",
    "strings": """\
def f(s):
    if s.lower() in ('yes', 'y'):
        return s.strip().split(',', 1)
    return not s
""",
    "calls_and_branches": """\
import math

LIMIT = 10


def helper(x):
    return max(x, 0)


def f(xs):
    out = []
    for x in xs:
        if x is None:
            continue
        out.append(helper(x) if x > LIMIT else math.floor(x))
    return out
""",
    "method": """\
class Box:
    def __init__(self, v):
        self.v = v

    def get(self):
        return self.v - 1


def f(v):
    return Box(v).get() >= 0 and True
""",
}


@pytest.mark.parametrize("source", SOURCES.values(), ids=SOURCES)
def test_each_mutant_parses_and_is_one_attributable_edit(source):
    mutants = generate_mutmut_mutants(source, "f")
    assert mutants
    dumps = set()
    for m in mutants:
        assert m.operator in MUTMUT_CLASSES and m.operator.startswith("mutmut:")
        (edit,) = m.edits  # one edit, attributed to the class that made it
        assert edit.operator == m.operator
        assert apply_edits(source, m.edits) == m.code  # the edit alone gives the mutant
        assert diff_blocks(source, m.code)[0] == 1  # one hunk
        dump = validated_dump(m.code, "f")
        assert dump is not None and dump not in dumps  # compiles, defines f, no duplicate
        dumps.add(dump)
        assert m.line == source.count("\n", 0, edit.start) + 1 and m.chars_changed >= 1


def test_mutants_are_mutmuts_own_operators_inside_functions_only():
    source = SOURCES["calls_and_branches"]
    by_class: dict[str, list[str]] = {}
    for m in generate_mutmut_mutants(source, "f"):
        by_class.setdefault(m.operator, []).append(m.code)
    assert "LIMIT = 10" in "".join(c for codes in by_class.values() for c in codes)
    assert all("LIMIT = 10\n" in c for codes in by_class.values() for c in codes)  # module level
    assert source.replace("x is None", "x is not None") in by_class["mutmut:keywords"]
    assert source.replace("continue", "break") in by_class["mutmut:keywords"]
    assert source.replace("x > LIMIT", "x >= LIMIT") in by_class["mutmut:swap_op"]
    assert source.replace("max(x, 0)", "max(x, 1)") in by_class["mutmut:number"]
    assert source.replace("max(x, 0)", "max(0)") in by_class["mutmut:arg_removal"]
    assert source.replace("out = []", "out = None") in by_class["mutmut:assignment"]
    strings = generate_mutmut_mutants(SOURCES["strings"], "f")
    swapped = SOURCES["strings"].replace("s.lower()", "s.upper()")
    assert [m.operator for m in strings if m.code == swapped] == [
        "mutmut:symmetric_string_methods_swap"
    ]
    assert any("'XXyesXX'" in m.code and m.operator == "mutmut:string" for m in strings)


def test_mutants_are_deterministic_across_interpreters():
    source = SOURCES["calls_and_branches"]
    script = (
        "import sys; from pytest_execretrieval.mutation.mutmut_source import "
        "generate_mutmut_mutants\nprint(repr(generate_mutmut_mutants(sys.stdin.read(), "
        "'f')))\n"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script],
            input=source,
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PYTHONPATH": str(Path(__file__).parents[1])},
        ).stdout
        for seed in ("0", "1", "2")
    }
    assert outputs == {repr(generate_mutmut_mutants(source, "f")) + "\n"}


def test_version_is_pinned_and_recorded_in_the_engine():
    import mutmut

    assert mutmut.__version__ == MUTMUT_VERSION
    pyproject = (Path(__file__).parents[1] / "pyproject.toml").read_text()
    assert f'mutmut = ["mutmut=={MUTMUT_VERSION}"]' in pyproject
    assert engine(MUTMUT)["source"]["mutmut"] == MUTMUT_VERSION
    assert "source" not in engine()  # the default corpus's engine is unchanged


@pytest.fixture(scope="module")
def mutmut_build(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    loaded, _ = load_items(DATA)
    with (
        SuiteRunner(cache_dir=cache) as runner,
        SuiteRunner(Limits(timeout_s=1.0), cache_dir=cache) as mutant_runner,
    ):
        return loaded, build(loaded, runner, mutant_runner, MUTMUT)


def test_pipeline_keeps_killed_mutants_and_rejects_survivors(mutmut_build):
    loaded, result = mutmut_build
    distractors = [s for s in result.corpus.snippets if s.kind == "distractor"]
    assert distractors and result.survivors
    for d in distractors:
        assert d.operator in MUTMUT_CLASSES
        assert d.failing_tests and d.kill in ("assertion", "exception")
        assert d.diff.count("\n@@") + d.diff.startswith("@@") == 1
    pool_diffs = {(d.query_id, d.diff) for d in distractors}
    for s in result.survivors:  # passed every test: reported with evidence, never in the pool
        assert s.operator in MUTMUT_CLASSES
        assert (s.item_id, s.diff) not in pool_diffs
    assert result.corpus.engine == engine(MUTMUT)
    for y in result.yields:  # the same report fields as the default source
        assert set(y.killed) <= set(MUTMUT_CLASSES) and sum(y.selected.values()) <= 4


def test_cli_builds_a_separate_byte_identical_corpus(tmp_path, capsys):
    items = tmp_path / "items"
    shutil.copytree(DATA, items)
    default = {p.name: p.read_bytes() for p in items.glob("*.json*")}
    cache = ["--cache-dir", str(tmp_path / "c")]
    assert cli.main(["build", str(items), "--source", "mutmut", *cache]) == 0
    where = corpus_dir(items, MUTMUT)
    assert where == items / "mutmut"
    first = {p.name: p.read_bytes() for p in where.iterdir()}
    assert set(first) == {"corpus.jsonl", "alternatives.jsonl", "yields.jsonl", "manifest.json"}
    assert cli.main(["build", str(items), "--source", "mutmut", "--full", "-j", "1", *cache]) == 0
    assert first == {p.name: p.read_bytes() for p in where.iterdir()}
    assert default == {p.name: p.read_bytes() for p in items.glob("*.json*")}  # untouched
    assert "mutmut:" in capsys.readouterr().out  # yields per class, as for the default source
    assert cli.main(["build", "--check", "--source", "mutmut", str(items)]) == 0
    assert cli.main(["build", "--check", str(items)]) == 0
    rows = [json.loads(line) for line in first["corpus.jsonl"].decode().splitlines()]
    assert {r["operator"] for r in rows if r["kind"] == "distractor"} <= set(MUTMUT_CLASSES)
    assert read_corpus(items, engine(MUTMUT), where=where).snippets


@pytest.mark.parametrize(
    "args, message",
    [
        (["--source", "mutmutt"], "invalid choice: 'mutmutt'"),
        (["--source", "mutmut", "--stack", "2"], "single edits only"),
    ],
)
def test_bad_source_is_a_usage_error(tmp_path, capsys, args, message):
    with pytest.raises(SystemExit) as raised:
        status = cli.main(["build", str(tmp_path), *args])
        raise SystemExit(status)
    assert raised.value.code == 2
    assert message in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_benchmark_option_selects_the_mutmut_corpus(pytester, items):
    assert (
        cli.main(
            ["build", str(items), "--source", "mutmut", "--cache-dir", str(pytester.path / "c")]
        )
        == 0
    )
    result = bench(
        pytester, items, "--execretrieval-source", "mutmut", "--execretrieval-report-dir=reports"
    )
    assert result.ret in (0, 1)
    report = json.loads((pytester.path / "reports" / "bm25.json").read_text())
    manifest = json.loads((items / "mutmut" / "manifest.json").read_text())
    assert report["corpus"]["sha256"] == manifest["corpus_sha256"]
    tops = {h["operator"] for q in report["per_query"] for h in q["top"]} - {None}
    assert tops and tops <= set(MUTMUT_CLASSES)
    bad = bench(pytester, items, "--execretrieval-source", "mutmutt")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "--execretrieval-source: 'mutmutt' is not one of" in bad.stderr.str()
