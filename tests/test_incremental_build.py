"""The incremental build: unchanged items' committed records are reused, verified, and the result
is byte for byte the full build's; the progress line of long builds."""

from __future__ import annotations

import io
import json
import shutil
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest
from corpus_builds import corpus_files

from pytest_execretrieval import cli
from pytest_execretrieval.corpus.build import BuildProgress, build, engine
from pytest_execretrieval.corpus.incremental import ItemRecord, digest, plan
from pytest_execretrieval.corpus.items import load_items
from pytest_execretrieval.corpus.store import MANIFEST, YIELDS, Snippet, sha256
from pytest_execretrieval.execution.runner import SuiteRunner
from pytest_execretrieval.execution.sandbox import Limits
from pytest_execretrieval.reporting.progress import ProgressLine

DATA = Path(__file__).parent / "data" / "items"
EDITED = "arrays_lists/last_index_of"
# Dropping this test changes the item's distractors, and through the corpus-wide class balance
# the choice of a later item, arrays_lists/window_sums, whose own records are unchanged.
DROPPED = '  "assert last_index_of([5, 6, 7], 6) == 1",\n'


@contextmanager
def runners(cache: Path):
    with (
        SuiteRunner(cache_dir=cache) as runner,
        SuiteRunner(Limits(timeout_s=1.0), cache_dir=cache) as mutant_runner,
    ):
        yield runner, mutant_runner


@pytest.fixture
def built(tmp_path, cache_args) -> Path:
    """A copy of the test items, fully built (so its corpus carries build records)."""
    target = tmp_path / "items"
    shutil.copytree(DATA, target)
    assert cli.main(["build", str(target), "--full", *cache_args]) == 0
    return target


def edit(items: Path) -> None:
    path = items / f"{EDITED}.toml"
    text = path.read_text()
    assert DROPPED in text
    path.write_text(text.replace(DROPPED, ""))


@pytest.mark.parametrize("stack", [1, 2])
def test_incremental_build_is_byte_identical_to_a_full_build(
    built, tmp_path, cache_args, capsys, stack
):
    stack_args = ["--stack", str(stack)]
    where = lambda items: items if stack == 1 else items / f"stack-{stack}"  # noqa: E731
    if stack > 1:
        assert cli.main(["build", str(built), "--full", *stack_args, *cache_args]) == 0
    other = tmp_path / "other"
    shutil.copytree(built, other)
    edit(built)
    edit(other)
    capsys.readouterr()
    assert cli.main(["build", str(built), *stack_args, *cache_args]) == 0
    out = capsys.readouterr().out
    assert cli.main(["build", str(other), "--full", *stack_args, *cache_args]) == 0
    assert "reused 0 items, rebuilt 4" in capsys.readouterr().out
    assert corpus_files(where(built)) == corpus_files(where(other))
    assert "yields.jsonl" in corpus_files(where(built))
    # stacked candidates draw on a different balance: there the edit moves no other item
    expected = {
        1: "reused 2 items, rebuilt 2 (1 of them because the class balance moved",
        2: "reused 3 items, rebuilt 1;",
    }
    assert expected[stack] in out


def test_reused_items_run_nothing_and_moved_choices_are_rebuilt(built, tmp_path):
    edit(built)
    items, _ = load_items(built)
    planned = plan(items, built, engine())
    assert sorted(planned.reusable) == sorted(i.id for i in items if i.id != EDITED)
    assert [(r.kind, r.item_id) for r in planned.reasons] == [("changed", EDITED)]
    # a fresh outcome cache: whatever the build needs to run, it runs
    with runners(tmp_path / "c") as (runner, mutant_runner):
        result = build(items, runner, mutant_runner, reuse=planned.reusable)
        executed = runner.executed + mutant_runner.executed
    assert result.rebuilt == (EDITED, "arrays_lists/window_sums")
    assert result.reselected == ("arrays_lists/window_sums",)
    fresh = [i for i in items if i.id in result.rebuilt]
    suites = sum(1 + len(i.alternatives) for i in fresh)
    assert suites < executed  # their mutants and evidence ran; nothing of the two reused items


def test_a_moved_item_whose_fresh_run_kills_otherwise_is_chosen_from_its_run(built, tmp_path):
    """A moved item's record may list kills its fresh run does not repeat (a mutant that timed
    out under load and is killed on a quiet machine, or the reverse): its distractors are then
    chosen again from the run, and the corpus is the one its run gives."""
    edit(built)
    items, _ = load_items(built)
    planned = plan(items, built, engine())
    mover = "arrays_lists/window_sums"
    with runners(tmp_path / "c") as (runner, mutant_runner):
        honest = build(items, runner, mutant_runner, reuse=planned.reusable)
        record = planned.reusable[mover].record
        shifted = tuple(replace(c, position=c.position + 1000) for c in record.choosable)
        reuse = dict(planned.reusable)
        reuse[mover] = replace(reuse[mover], record=replace(record, choosable=shifted))
        result = build(items, runner, mutant_runner, reuse=reuse)
    assert result.reselected == (mover,)
    assert result.corpus == honest.corpus and result.records == honest.records


def test_check_names_the_items_a_build_rebuilds(built, capsys):
    assert cli.main(["build", "--check", str(built)]) == 0
    assert "a build would reuse 4 items and rebuild 0" in capsys.readouterr().out
    edit(built)
    assert cli.main(["build", "--check", str(built)]) == 1
    out = capsys.readouterr().out
    assert f"a build would reuse 3 items and rebuild 1\n  {EDITED}\n" in out


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def write_rows(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def test_a_hand_edited_record_of_an_unchanged_item_is_rebuilt_and_said(built, cache_args, capsys):
    expected = corpus_files(built)
    corpus = rows(built / "corpus.jsonl")
    victim = next(r for r in corpus if r["kind"] == "distractor")
    victim["outcomes"] = ["pass"] * len(victim["outcomes"])  # claims a distractor passes
    write_rows(built / "corpus.jsonl", corpus)
    capsys.readouterr()
    assert cli.main(["build", "--check", str(built)]) == 1
    out = capsys.readouterr().out
    assert f"stale: the committed records of item {victim['query_id']} are not reusable" in out
    assert cli.main(["build", str(built), *cache_args]) == 0
    captured = capsys.readouterr()
    assert f"rebuilding: the committed records of item {victim['query_id']}" in captured.err
    assert "reused 3 items, rebuilt 1" in captured.out
    assert corpus_files(built) == expected


def test_a_record_consistent_with_the_manifest_is_still_checked_against_its_item(built):
    """An edit that also rewrites the manifest's digest passes the hash check; the rows must
    still agree with the item (here: a distractor's code no longer hashes to its id)."""
    corpus = rows(built / "corpus.jsonl")
    victim = next(r for r in corpus if r["kind"] == "distractor")
    victim["code"] += "# edited\n"
    write_rows(built / "corpus.jsonl", corpus)
    iid = victim["query_id"]
    own = [Snippet.from_json(r) for r in corpus if r["query_id"] == iid]
    alternatives = [
        Snippet.from_json(r) for r in rows(built / "alternatives.jsonl") if r["query_id"] == iid
    ]
    record = ItemRecord.from_json(next(r for r in rows(built / YIELDS) if r["item_id"] == iid))
    meta = json.loads((built / MANIFEST).read_text())
    meta["records"][iid] = digest(own, alternatives, record)
    (built / MANIFEST).write_text(json.dumps(meta, indent=2) + "\n")
    items, _ = load_items(built)
    planned = plan(items, built, engine())
    assert iid not in planned.reusable and len(planned.reusable) == 3
    (reason,) = planned.reasons
    assert (reason.kind, reason.item_id) == ("records", iid)
    assert "snippet_id does not hash its code" in reason.message


def test_engine_change_or_records_missing_rebuild_everything(built):
    items, _ = load_items(built)
    other = dict(engine(), evidence="0")
    assert [r.kind for r in plan(items, built, other).reasons] == ["engine"]
    meta = json.loads((built / MANIFEST).read_text())
    del meta["records"]
    (built / MANIFEST).write_text(json.dumps(meta, indent=2) + "\n")
    planned = plan(items, built, engine())
    assert not planned.reusable and [r.kind for r in planned.reasons] == ["no-records"]
    assert sha256((built / "corpus.jsonl").read_bytes()) == meta["corpus_sha256"]


def test_build_reports_progress_per_item_and_phase(tmp_path):
    items, _ = load_items(DATA)
    seen: list[BuildProgress] = []
    with runners(tmp_path / "c") as (runner, mutant_runner):
        build(items, runner, mutant_runner, progress=seen.append)
    running = [p for p in seen if p.phase == "running"]
    assert [p.done for p in running] == list(range(len(items) + 1))
    assert all(p.total == len(items) for p in running)
    assert running[-1].executed > running[0].executed >= 0
    assert {p.phase for p in seen} >= {"mutants", "running", "evidence", "survivor evidence"}


def test_progress_line_rewrites_on_a_terminal_and_prints_lines_in_a_log():
    steps = [BuildProgress("running", d, 4, 10 * d, 0.5 * d) for d in range(5)]
    tty = io.StringIO()
    line = ProgressLine(tty, tty=True)
    for p in steps:
        line(p)
    text = tty.getvalue()
    assert text.count("\r") == 5 and text.endswith("\n") and text.count("\n") == 1
    assert "build running: 2/4 items, 20 suites executed, 2.0 items/s, ETA 1s" in text
    lines = lambda log: [ln.split(":")[1].split()[0] for ln in log.getvalue().splitlines()]  # noqa: E731
    for interval, printed in ((3600, ["4/4"]), (0, ["1/4", "2/4", "3/4", "4/4"])):
        log = io.StringIO()
        line = ProgressLine(log, interval_s=interval, tty=False)
        for p in steps:
            line(p)
        # a line when the phase ends, and one whenever the interval has passed
        assert "\r" not in log.getvalue() and lines(log) == printed
