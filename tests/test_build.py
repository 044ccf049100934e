"""`execretrieval build`: killed distractors, selection, determinism, staleness, stacking."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_execretrieval import cli
from pytest_execretrieval.corpus.build import build, engine, yield_report
from pytest_execretrieval.corpus.items import load_items
from pytest_execretrieval.corpus.store import STALE_KINDS, jsonl, stale_reasons
from pytest_execretrieval.execution.runner import SuiteRunner
from pytest_execretrieval.execution.sandbox import Limits, SuiteResult
from pytest_execretrieval.mutation.equivalence import annotations, evidence
from pytest_execretrieval.mutation.operators import (
    MUTATION_VERSION,
    OPERATORS,
    Mutant,
    OperatorClass,
)
from pytest_execretrieval.mutation.select import Killed, kill_kind, select_distractors

DATA = Path(__file__).parent / "data" / "items"


@pytest.fixture
def items(tmp_path) -> Path:
    target = tmp_path / "items"
    shutil.copytree(DATA, target)
    return target


def test_distractors_are_killed_single_edits(items, runners):
    loaded, _ = load_items(items)
    result = build(loaded, *runners)
    distractors = [s for s in result.corpus.snippets if s.kind == "distractor"]
    assert distractors
    for d in distractors:
        assert d.failing_tests and any(o != "pass" for o in d.outcomes)
        assert d.kill in ("assertion", "exception", "timeout")
        assert d.diff.count("\n@@") + d.diff.startswith("@@") == 1  # one hunk
        assert d.edit_lines >= 1 and d.edit_chars >= 1 and d.line >= 1
    per_item = Counter(d.query_id for d in distractors)
    assert set(per_item.values()) == {4}
    for qid in per_item:  # distinct classes within an item where available
        ops = [d.operator for d in distractors if d.query_id == qid]
        assert len(set(ops)) == len(ops)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.nested_given])
@given(st.permutations(range(5)))
def test_build_is_independent_of_item_order(runners, order):
    loaded, _ = load_items(DATA)
    shuffled = [loaded[i] for i in order if i < len(loaded)]
    a = build(loaded, *runners).corpus
    b = build(shuffled, *runners).corpus
    assert jsonl(a.snippets) == jsonl(b.snippets)
    assert jsonl(a.alternatives) == jsonl(b.alternatives)


def test_cli_build_is_byte_identical_and_check_names_staleness(items, tmp_path, capsys):
    cache = ["--cache-dir", str(tmp_path / "c")]
    assert cli.main(["build", str(items), *cache]) == 0
    first = {p.name: p.read_bytes() for p in items.glob("*.json*")}
    assert cli.main(["build", str(items), "-j", "1", *cache]) == 0
    assert first == {p.name: p.read_bytes() for p in items.glob("*.json*")}
    assert "4/4 items have >= 4 killed mutants" in capsys.readouterr().out
    assert cli.main(["build", "--check", str(items)]) == 0

    count = items / "strings" / "count_vowels.toml"
    count.write_text(count.read_text().replace("Count the vowels", "Count vowels"))
    (items / "arrays_lists" / "last_index_of.toml").unlink()
    shutil.copy(count, items / "strings" / "count_vowels_copy.toml")
    (items / "corpus.jsonl").write_text((items / "corpus.jsonl").read_text()[:-50])
    capsys.readouterr()
    assert cli.main(["build", "--check", str(items)]) == 1
    out = capsys.readouterr().out
    assert "item strings/count_vowels changed since the corpus was built" in out
    assert "item arrays_lists/last_index_of was removed" in out
    assert "item strings/count_vowels_copy is new" in out
    assert "corpus.jsonl differs from the manifest" in out


def test_build_refuses_an_item_whose_canonical_fails(items, tmp_path, capsys):
    count = items / "strings" / "count_vowels.toml"
    count.write_text(count.read_text().replace('"aeiou"', '"aeio"'))
    assert cli.main(["build", str(items), "--cache-dir", str(tmp_path / "c")]) == 1
    err = capsys.readouterr().err
    assert "count_vowels.toml: canonical: fails its tests" in err and "nothing written" in err


def result(*outcomes: str, passed: bool | None = None) -> SuiteResult:
    ok = all(o == "pass" for o in outcomes) if passed is None else passed
    return SuiteResult(outcomes=outcomes, passed=ok, detail="", output="")


# fmt: off
@pytest.mark.parametrize("outcomes, kind", [
    (("pass", "pass"), None),
    (("pass", "fail"), "assertion"),
    (("error:ZeroDivisionError", "fail"), "assertion"),
    (("pass", "error:IndexError"), "exception"),
    (("timeout", "timeout"), "timeout"),
    (("fail", "timeout"), "timeout"),
    (("error:EarlyExit", "timeout"), "timeout"),
    (("error:SandboxLost", "error:SandboxLost"), "unusable"),
    (("error:ProtocolError", "error:ProtocolError"), "unusable"),
])
# fmt: on
def test_kill_classification(outcomes, kind):
    assert kill_kind(result(*outcomes)) == kind


def test_an_unusable_suite_is_never_chosen():
    # A lost sandbox or a broken protocol proves nothing: not a kill, however few are left.
    chosen = select_distractors([killed(0, "off_by_one", "unusable")], Counter())
    assert chosen == []


def test_left_behind_child_is_a_kill_even_with_passing_outcomes():
    assert kill_kind(result("pass", passed=False)) == "exception"


def killed(position: int, operator: str, kill: str = "assertion") -> Killed:
    mutant = Mutant(
        operator=operator,
        line=position,
        code=f"# {position}",
        description="",
        lines_changed=1,
        chars_changed=1,
    )
    return Killed(position, mutant, result("fail"), kill)


def test_selection_prefers_new_core_classes_then_wrong_outputs_then_rare_classes():
    candidates = [
        killed(0, "off_by_one"),
        killed(1, "off_by_one"),
        killed(2, "negate_condition"),
        killed(3, "wrong_operator", "timeout"),
        killed(4, "wrong_comparison"),
        killed(5, "wrong_comparison", "exception"),
    ]
    totals = Counter({"off_by_one": 10})
    chosen = select_distractors(candidates, totals)
    assert [k.position for k in chosen] == [4, 0, 2, 1]  # never the timeout (3)
    assert totals == Counter({"off_by_one": 12, "wrong_comparison": 1, "negate_condition": 1})


def test_selection_balances_classes_across_the_corpus():
    totals: Counter = Counter()
    for _ in range(6):  # each item offers three classes, one slot each
        select_distractors(
            [killed(0, "off_by_one"), killed(1, "swap_arguments"), killed(2, "wrong_operator")],
            totals,
            limit=1,
        )
    assert set(totals.values()) == {2}


def test_yield_report_lists_weak_items():
    from pytest_execretrieval.corpus.build import ItemYield

    text = yield_report(
        [
            ItemYield("a/x", 9, {"off_by_one": 2, "wrong_operator": 3}, {"off_by_one": 1}),
            ItemYield("a/y", 3, {"off_by_one": 1}, {}),
        ]
    )
    assert "a/x: 5/9 killed  off_by_one=2 wrong_operator=3" in text
    assert "items with fewer than 4 killed mutants (1):\n  a/y" in text
    assert "items with fewer than 4 distractors chosen (2; timeout kills are not chosen)" in text


def test_equivalence_evidence(runners):
    canonical = "def f(xs: list[int], k: int):\n    return [x for x in xs if x < k]\n"
    assert annotations(canonical, "f") == ["list[int]", "int"]
    assert annotations("def f(x, y: int): pass", "f") is None
    mutant = canonical.replace("x < k", "x <= k")
    equivalent = "def f(xs: list[int], k: int):\n    return list(filter(lambda v: v < k, xs))\n"
    shown, same = evidence(canonical, "f", "", [mutant, equivalent], runners[1])
    assert shown.inputs == same.inputs == 50
    assert shown.differing > 0 and same.differing == 0


def test_stacked_corpus_has_k_edits_per_distractor(items, tmp_path):
    assert cli.main(["build", str(items), "--stack", "3", "--cache-dir", str(tmp_path / "c")]) == 0
    rows = [
        json.loads(line) for line in (items / "stack-3" / "corpus.jsonl").read_text().splitlines()
    ]
    distractors = [r for r in rows if r["kind"] == "distractor"]
    assert distractors and all(len(r["operator"].split("+")) == 3 for r in distractors)
    assert all(r["failing_tests"] for r in distractors)
    assert cli.main(["build", "--check", "--stack", "3", str(items)]) == 0


def test_cli_help_is_plain_text(capsys) -> None:
    from pytest_execretrieval.cli import main

    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "usage: execretrieval" in out and "``" not in out


def test_review_lists_each_single_kill_distractor_with_its_test(items, tmp_path, capsys):
    assert cli.main(["build", str(items), "--review", "--cache-dir", str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out
    rows = [json.loads(line) for line in (items / "corpus.jsonl").read_text().splitlines()]
    single = [r for r in rows if r["kind"] == "distractor" and len(r["failing_tests"]) == 1]
    assert single and len(single) < sum(r["kind"] == "distractor" for r in rows)
    assert f"review: {len(single)} distractors killed by a single test" in out
    loaded = {i.id: i for i in load_items(items)[0]}
    review = out[out.index("review:") :]
    for r in single:
        test = loaded[r["query_id"]].tests[r["failing_tests"][0]]
        assert f"({r['snippet_id'][:12]}):" in review
        assert f"killed only by tests[{r['failing_tests'][0]}]" in review and test in review
    assert review.count("killed only by tests[") == len(single)
    assert "      -    if k <= 0:\n      +    if k < 0:\n" in review  # the edited lines


def test_survivors_are_written_with_their_evidence(items, tmp_path, capsys):
    out_file = tmp_path / "survivors.jsonl"
    args = ["build", str(items), "--survivors", str(out_file), "--cache-dir", str(tmp_path / "c")]
    assert cli.main(args) == 0
    rows = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert rows and {"item_id", "operator", "line", "diff", "equivalence"} <= set(rows[0])
    annotated = [r for r in rows if r["equivalence"] is not None]
    assert annotated and all(r["equivalence"]["inputs"] > 0 for r in annotated)
    assert "mutation score = killed / (killed + surviving mutants shown different)" in (
        capsys.readouterr().out
    )


def test_mutation_score_counts_only_survivors_shown_different():
    from pytest_execretrieval.corpus.build import ItemYield, Survivor, mutation_score_report

    yields = [
        ItemYield("a/x", 9, {"off_by_one": 6}, {}),
        ItemYield("b/y", 5, {"off_by_one": 2, "wrong_operator": 1}, {}),
    ]
    differs = {"inputs": 50, "differing": 3, "out_of_domain": 0, "witness": "(1,)"}
    agrees = {"inputs": 50, "differing": 0, "out_of_domain": 0}
    survivors = [
        Survivor("a/x", "off_by_one", 1, "", differs),
        Survivor("a/x", "off_by_one", 2, "", differs),
        Survivor("a/x", "wrong_operator", 3, "", agrees),
        Survivor("b/y", "wrong_operator", 1, "", None),
    ]
    text = mutation_score_report(yields, survivors)
    assert "  all                       81.82%  killed     9  shown different    2" in text
    assert "  a/x" not in text and "  a                         75.00%  killed     6" in text
    assert "  b                        100.00%  killed     3  shown different    0" in text
    assert "  off_by_one                80.00%  killed     8  shown different    2" in text
    assert "  wrong_operator           100.00%  killed     1  shown different    0" in text
    assert "(1 survivors agree with the canonical on every drawn input; 1 survivors" in text


def test_stale_reasons_are_records_naming_their_item(items):
    assert stale_reasons(items, engine()) == []
    count = items / "strings" / "count_vowels.toml"
    count.write_text(count.read_text().replace("Count the vowels", "Count vowels"))
    (items / "arrays_lists" / "last_index_of.toml").unlink()
    shutil.copy(count, items / "strings" / "count_vowels_copy.toml")
    (items / "corpus.jsonl").write_text((items / "corpus.jsonl").read_text()[:-50])
    reasons = stale_reasons(items, {**engine(), "runner": "0"})
    assert [(r.kind, r.item_id) for r in reasons] == [
        ("file-changed", None),
        ("engine", None),
        ("item-removed", "arrays_lists/last_index_of"),
        ("item-changed", "strings/count_vowels"),
        ("item-new", "strings/count_vowels_copy"),
    ]
    assert all(str(r) == r.message and r.kind in STALE_KINDS for r in reasons)
    assert str(reasons[3]).startswith("item strings/count_vowels changed since the corpus")
    (items / "manifest.json").unlink()
    assert [(r.kind, r.item_id) for r in stale_reasons(items, engine())] == [
        ("manifest-missing", None)
    ]


def test_an_operator_change_makes_the_corpus_stale(items, monkeypatch):
    def no_edits(node, ctx):
        yield from ()

    assert stale_reasons(items, engine()) == []
    monkeypatch.setitem(OPERATORS, "off_by_one", OperatorClass((no_edits,), core=True))
    (reason,) = stale_reasons(items, engine())
    assert reason.kind == "engine" and reason.item_id is None
    assert f"'mutation': '{MUTATION_VERSION}+unrecorded-" in reason.message


def test_cli_build_streams_its_progress_into_a_pipe(items, tmp_path):
    """A CI log (stdout is a pipe) gets each line when it is printed, not all at the end."""
    import subprocess
    import sys
    import time

    command = [
        sys.executable,
        "-m",
        "pytest_execretrieval.cli",
        "build",
        str(items),
        "--full",
        "-j",
        "1",
        "--cache-dir",
        str(tmp_path / "cold"),
    ]
    started = time.monotonic()
    with subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    ) as build_process:
        arrivals = [(time.monotonic() - started, line) for line in build_process.stderr]
    assert build_process.returncode == 0
    progress = [(t, line) for t, line in arrivals if line.startswith("  build ")]
    assert progress[0][1].startswith("  build mutants: 4/4 items"), arrivals
    assert any(line.startswith("  build running: 4/4 items") for _, line in progress)
    # the first line came while the build still ran (the cold run takes seconds)
    assert arrivals[-1][0] - progress[0][0] > 0.5, arrivals


def test_build_strict_refuses_items_below_the_distractor_minimum(tmp_path, capsys):
    """Items whose tests kill fewer than 4 mutants: named in the summary; an error under
    ``--strict``, with nothing written."""
    from test_hosted_embedders import write_items  # three short string items

    items = write_items(tmp_path)
    cache = str(tmp_path / "cache")
    assert cli.main(["build", str(items), "--cache-dir", cache, "--strict"]) == 1
    err = capsys.readouterr().err
    assert "--strict: 3 item(s) below the minimum of 4 distractors" in err
    assert "strings/reverse_words" in err and "nothing written" in err
    assert not (items / "corpus.jsonl").exists()
    assert cli.main(["build", str(items), "--cache-dir", cache]) == 0
    assert "items with fewer than 4 distractors chosen (3" in capsys.readouterr().out


def test_the_evidence_report_names_each_differing_alternative_with_its_witness():
    from pytest_execretrieval.corpus.build import evidence_report
    from pytest_execretrieval.corpus.store import Corpus, Snippet

    def alternative(sid: str, qid: str, differing: int, witness: str | None) -> Snippet:
        found = {"inputs": 50, "differing": differing, "out_of_domain": 0}
        found |= {"witness": witness} if witness else {}
        return Snippet(sid * 8, qid, "alternative", None, None, "", "", equivalence=found)

    text = evidence_report(
        Corpus(
            snippets=(),
            alternatives=(
                alternative("b", "strings/agree", 0, None),
                alternative("a", "strings/apart", 3, "('x\x1b[31m', 2)"),
            ),
        )
    )
    lines = text.splitlines()
    assert "1/2 alternatives agree on every drawn input" in lines[0]
    assert lines[1:] == [
        "  differs: strings/apart alternative aaaaaaaa on 3/50 drawn inputs, e.g. on the "
        "arguments ('x\\x1b[31m', 2)"
    ]


# A fix that returns at once, or one that sleeps past a tenth of the limit; its real bug loops
# on negative inputs. The sleep is 0.6 s of a 2 s limit (the quick share is 0.2 s): both far
# from the boundary on a loaded machine.
HANG_ITEM = """domain = "d"
query = "The absolute value of an integer."
entry_point = "magnitude"
canonical = '''
def magnitude(n):
    {pause}
    return -n if n < 0 else n
'''
real_bug = '''
def magnitude(n):
    {pause}
    while n < 0:
        pass
    return n
'''
tests = [
  "assert magnitude(3) == 3",
  "assert magnitude(0) == 0",
  "assert magnitude(-4) == 4",
]

[source]
origin = "hand"
"""


@pytest.mark.parametrize(
    ("pause", "kept"),
    [("pass", True), ("__import__('time').sleep(0.6)", False)],
    ids=["quick-fix", "slow-fix"],
)
def test_a_real_bug_that_hangs_is_killed_only_beside_a_quick_fix(tmp_path, pause, kept):
    folder = tmp_path / "items" / "d"
    folder.mkdir(parents=True)
    (folder / "magnitude.toml").write_text(HANG_ITEM.format(pause=pause))
    loaded, problems = load_items(tmp_path / "items")
    assert not problems
    with (
        SuiteRunner(Limits(timeout_s=2.0)) as runner,
        SuiteRunner(Limits(timeout_s=1.0)) as mutant_runner,
    ):
        result = build(loaded, runner, mutant_runner)
    real = [s for s in result.corpus.snippets if s.kind == "real_bug"]
    if kept:
        (bug,) = real
        assert bug.kill == "timeout" and bug.outcomes[2] == "timeout"
        assert not result.unusable
    else:
        assert real == []
        (line,) = result.unusable
        assert "ran out of time, and its fix does not pass within a tenth" in line


def test_a_hang_kill_survives_the_incremental_check(tmp_path, capsys):
    """The committed record of a real bug killed by its hang is reusable: ``build --check``
    (the default 5 s limit) finds the corpus up to date."""
    folder = tmp_path / "items" / "d"
    folder.mkdir(parents=True)
    (folder / "magnitude.toml").write_text(HANG_ITEM.format(pause="pass"))
    cache = str(tmp_path / "cache")
    assert cli.main(["build", str(tmp_path / "items"), "-j", "1", "--cache-dir", cache]) == 0
    assert "real bugs: 1/1 killed" in capsys.readouterr().out
    assert cli.main(["build", str(tmp_path / "items"), "--check", "--cache-dir", cache]) == 0
