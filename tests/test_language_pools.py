"""Both language pools in one run: the items directory's own (Python) pool and its
``javascript/`` pool, each ranked against its own corpus; ids, markers, reports and junit per
language, the gate per language, and the paired cross-language analysis.

Real components: bm25, the JavaScript pool built by ``execretrieval build`` (the real Node
runner), the session plugin in a subprocess. ``tests/data/js_items`` holds JavaScript twins of
three of the four test-data items (``arrays_lists/window_sums`` has none: an untwinned query).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from plugin_runs import bench, without_timing

from pytest_execretrieval import cli
from pytest_execretrieval.corpus.store import read_corpus
from pytest_execretrieval.reporting.cross_language_text import (
    cross_language_lines,
    cross_language_markdown,
)
from pytest_execretrieval.scoring.compare import ComparisonError
from pytest_execretrieval.scoring.cross_language import cross_language

DATA = Path(__file__).parent / "data"
TWINS = ("arrays_lists/last_index_of", "math_number_theory/clamp_add", "strings/count_vowels")


@pytest.fixture(scope="module")
def built_js(tmp_path_factory) -> Path:
    """The JavaScript twins with their corpus, built once per module beside their Python twins
    (their evidence draws from the twins' annotations, and the manifest records them)."""
    root = tmp_path_factory.mktemp("js")
    for twin in (DATA / "items").glob("*/*.toml"):
        (root / twin.parent.name).mkdir(exist_ok=True)
        shutil.copy(twin, root / twin.parent.name / twin.name)
    target = root / "javascript"
    shutil.copytree(DATA / "js_items", target)
    cache = ["--cache-dir", str(target.parent / "build-cache")]
    assert cli.main(["build", str(target), "-j", "1", *cache]) == 0
    return target


@pytest.fixture
def pools(items: Path, built_js: Path) -> Path:
    """The test-data items with a built JavaScript pool in ``javascript/``."""
    shutil.copytree(built_js, items / "javascript")
    return items


def test_both_pools_in_one_run_ids_reports_and_the_paired_analysis(pytester, pools):
    result = bench(pytester, pools, "-v", "--execretrieval-report-dir=reports")
    out = result.stdout.str()
    assert result.ret in (0, 1)
    for qid in TWINS:
        assert f"{qid}[bm25]" in out
        assert f"javascript/{qid}[bm25]" in out
    assert "arrays_lists/window_sums[bm25]" in out
    assert "javascript/arrays_lists/window_sums" not in out
    reports = pytester.path / "reports"
    python, js = (
        json.loads((reports / p).read_text()) for p in ("bm25.json", "javascript/bm25.json")
    )
    assert "language" not in python and js["language"] == "javascript"
    assert python["corpus"]["n_queries"] == 4 and js["corpus"]["n_queries"] == 3
    assert sorted(q["query_id"] for q in js["per_query"]) == list(TWINS)
    # each language's queries ranked against its own pool only
    for report, where in ((python, pools), (js, pools / "javascript")):
        own = {s.snippet_id for s in read_corpus(where).snippets}
        assert report["corpus"]["n_snippets"] == len(own)
        assert {h["snippet_id"] for q in report["per_query"] for h in q["top"]} <= own
    for folder in (reports, reports / "javascript"):
        assert (folder / "bm25.xml").is_file() and (folder / "summary.md").is_file()
    assert 'name="javascript/' not in (reports / "javascript/bm25.xml").read_text()
    pairs = json.loads((reports / "cross-language.json").read_text())["pairs"]
    assert list(pairs) == ["python vs javascript"]
    cross = pairs["python vs javascript"]["bm25"]
    assert cross["n_twins"] == 3 and cross["untwinned"] == {"python": 1, "javascript": 0}
    assert cross["languages"] == ["python", "javascript"]
    assert "## bm25: python vs javascript" in (reports / "cross-language.md").read_text()
    assert "cross-language [bm25]: exec@1 on 3 twin queries" in out


def test_python_reports_do_not_change_when_a_javascript_pool_is_present(pytester, items, built_js):
    alone = bench(pytester, items, "--execretrieval-report-dir=alone")
    assert alone.ret in (0, 1)
    shutil.copytree(built_js, items / "javascript")
    both = bench(pytester, items, "--execretrieval-report-dir=both")
    assert both.ret == alone.ret
    a, b = pytester.path / "alone", pytester.path / "both"
    assert (b / "javascript" / "bm25.json").is_file()  # the pool was benchmarked beside
    assert without_timing(a / "bm25.json") == without_timing(b / "bm25.json")
    assert (a / "summary.md").read_bytes() == (b / "summary.md").read_bytes()
    untimed = lambda path: re.sub(r'time="[0-9.]+"', "", path.read_text())  # noqa: E731
    assert untimed(a / "bm25.xml") == untimed(b / "bm25.xml")
    # without the pool, nothing is written for one
    assert sorted(p.name for p in a.iterdir()) == ["bm25.json", "bm25.xml", "summary.md"]


def test_markers_select_a_language(pytester, pools):
    only_js = bench(pytester, pools, "--co", "-q", "-m", "javascript").stdout.lines
    ids = [line for line in only_js if "[bm25]" in line]
    assert ids == [f"javascript/{q}[bm25]" for q in TWINS]
    no_js = bench(pytester, pools, "--co", "-q", "-m", "not javascript").stdout.lines
    ids = [line for line in no_js if "[bm25]" in line]
    assert len(ids) == 4 and not any(i.startswith("javascript/") for i in ids)


def test_the_gate_decides_per_language_and_the_exit_status_names_the_failing_one(pytester, pools):
    first = bench(pytester, pools, "--execretrieval-report-dir=base")
    assert first.ret in (0, 1)
    base = pytester.path / "base"
    # the same model against its own baselines (under xdist: each pool handed off): both pass
    # (a handful of queries cannot detect a 0.10 drop: the power check is off, this test is
    # about which language's gate decides)
    powered = "--execretrieval-max-detectable=1"
    again = bench(
        pytester,
        pools,
        f"--execretrieval-baseline={base / 'bm25.json'}",
        powered,
        "--execretrieval-report-dir=again",
        "-n",
        "2",
    )
    out = again.stdout.str()
    assert "gate [bm25]: PASS" in out and "gate [javascript/bm25]: PASS" in out
    assert again.ret == 0
    # every pool's verdict opens the block, before any pool's metrics
    lines = again.stdout.lines
    block = lines[
        next(i for i, x in enumerate(lines) if x.startswith("=") and " ExecRetrieval " in x) + 1 :
    ]
    assert block[0].startswith("verdict [bm25]: PASS")
    assert block[1].startswith("verdict [javascript/bm25]: PASS")
    # each pool's junit and summary name its gate once, so a CI report merging them does too
    for folder, gate in (("again", "bm25"), ("again/javascript", "javascript/bm25")):
        junit = (pytester.path / folder / "bm25.xml").read_text()
        assert f'name="gate[{gate}]"' in junit and junit.count('name="gate[') == 1
        assert f"- **{gate}**: PASS" in (pytester.path / folder / "summary.md").read_text()
    # a minimum between the two languages' exec@1: one language's gate fails, and says which
    py = json.loads((base / "bm25.json").read_text())["metrics"]["exec@1"]
    js = json.loads((base / "javascript" / "bm25.json").read_text())["metrics"]["exec@1"]
    assert py != js
    floor = (py + js) / 2
    low = "javascript" if js < py else "python"
    split = bench(pytester, pools, f"--execretrieval-min=exec@1={floor}")
    assert split.ret == 1
    assert f"exit 1: the gate fails for {low}" in split.stdout.str()
    # a baseline of one language only: the other's gate fails, never a vacuous pass
    lone = pytester.path / "lone"
    lone.mkdir()
    shutil.copy(base / "bm25.json", lone / "bm25.json")
    missing = bench(pytester, pools, f"--execretrieval-baseline={lone / 'bm25.json'}", powered)
    assert missing.ret == 1
    assert "gate [bm25]: PASS" in missing.stdout.str()
    assert "no baseline for the javascript pool" in missing.stdout.str()
    # a Python baseline offered for the JavaScript pool's namesake is refused
    swapped = pytester.path / "swapped"
    (swapped / "javascript").mkdir(parents=True)
    shutil.copy(base / "bm25.json", swapped / "bm25.json")
    shutil.copy(base / "bm25.json", swapped / "javascript" / "bm25.json")
    refused = bench(pytester, pools, f"--execretrieval-baseline={swapped / 'bm25.json'}")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert "a baseline is per language" in refused.stderr.str()


def test_a_javascript_pool_without_its_corpus_or_items_is_a_usage_error(pytester, items):
    shutil.copytree(DATA / "js_items", items / "javascript")  # never built
    result = bench(pytester, items)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "is stale" in err and f"execretrieval build {items / 'javascript'}" in err
    shutil.rmtree(items / "javascript")
    (items / "javascript").mkdir()  # a pool folder with no items
    result = bench(pytester, items)
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_verification_covers_both_pools_with_their_own_gates(pytester, pools):
    result = pytester.runpytest_subprocess(
        "--execretrieval-verify",
        "--execretrieval-items",
        str(pools),
        "-p",
        "no:randomly",
        "-v",
    )
    out = result.stdout.str()
    assert result.ret == 0, out
    for qid in TWINS:
        assert f"javascript/{qid}::canonical PASSED" in out
        assert f"{qid}::canonical PASSED" in out
    assert "javascript/strings/count_vowels::distractor" in out
    assert out.count("corpus-freshness PASSED") == 2
    assert out.count("name-collision PASSED") == 2


# --- the paired analysis on constructed runs with a known answer ---------------------------


def row(query_id: str, right: bool, deceived: bool, operator: str) -> dict:
    """A report row: the canonical (score 0.9) at rank 1 (``right``) or below another query's
    snippet; one own distractor of class ``operator`` scoring at or above the canonical
    (``deceived``) or below it (deception reads the own distractors' scores only)."""
    scores = [0.9, *(0.4 - k / 100 for k in range(9))] if right else [0.95, 0.9]
    scores += [0.3 - k / 100 for k in range(10 - len(scores))]
    top = [
        {
            "rank": k,
            "snippet_id": f"s{k}",
            "kind": "canonical" if s == 0.9 else "distractor",
            "operator": None,
            "query_id": query_id if s == 0.9 else "other",
            "score": s,
            "passes": s == 0.9,
        }
        for k, s in enumerate(scores, 1)
    ]
    return {
        "query_id": query_id,
        "domain": "d",
        "passed": right,
        "canonical_rank": 1 if right else 2,
        "canonical_score": 0.9,
        "top": top,
        "own_distractors": [
            {"operator": operator, "score": 0.9 if deceived else 0.5, "edit_chars": 1}
        ],
    }


def run(name: str, rows: list[dict], language: str | None) -> dict:
    report = {"embedder": {"name": name}, "per_query": rows}
    return report | ({"language": language} if language else {})


def test_the_paired_analysis_has_the_known_answer():
    # ten twins: Python right on q0..q7, JavaScript on q0..q2; each has one query of its own
    python = run(
        "m",
        [row(f"q{i}", i < 8, i < 2, "off_by_one") for i in range(10)]
        + [row("p_only", True, False, "off_by_one")],
        None,
    )
    js = run(
        "m",
        [row(f"q{i}", i < 3, i < 6, "strict_equality") for i in range(10)]
        + [row("j_only", False, True, "strict_equality")],
        "javascript",
    )
    c = cross_language(python, js, seed=0)
    assert c.languages == ("python", "javascript") and c.n_twins == 10
    assert c.untwinned == {"python": 1, "javascript": 1}
    assert c.exec1["python"]["mean"] == pytest.approx(0.8)
    assert c.exec1["javascript"]["mean"] == pytest.approx(0.3)
    lo, hi = c.exec1["python"]["ci95"]
    assert lo <= 0.8 <= hi and lo < hi
    p = c.paired
    assert p["test"] == "mcnemar" and (p["only_a"], p["only_b"]) == (5, 0)
    assert p["p_value"] == pytest.approx(2 * 0.5**5)  # exact two-sided binomial, 5 discordant
    assert p["difference"] == pytest.approx(-0.5)
    by = c.deception["by_operator"]
    assert by["off_by_one"]["python"]["pair_rate"] == pytest.approx(0.2)
    assert by["off_by_one"]["javascript"] is None
    assert by["strict_equality"]["javascript"]["pair_rate"] == pytest.approx(0.6)
    assert by["strict_equality"]["python"] is None
    assert c.deception["overall"]["javascript"]["n_queries"] == 10
    text = "\n".join(cross_language_lines(c))
    assert "javascript - python: -0.500" in text and "exact McNemar p = 0.0625" in text
    md = cross_language_markdown([c])
    assert "| off_by_one | 0.200 (10) | n/a |" in md
    assert "| strict_equality | n/a | 0.600 (10) |" in md
    assert json.loads(json.dumps(c.to_json()))["paired"]["only_a"] == 5


def test_a_rank1_tie_makes_the_paired_test_a_sign_flip():
    python = run("m", [row(f"q{i}", i < 6, False, "off_by_one") for i in range(8)], None)
    js_rows = [row(f"q{i}", i < 2, False, "off_by_one") for i in range(8)]
    js_rows[0]["top"][1]["score"] = js_rows[0]["top"][0]["score"]  # a tie of two at rank 1
    js_rows[0]["rank1_tie"] = {"size": 2, "passing": 1}
    js_rows[0]["tail_tie"] = {"size": 1, "passing": 0}
    js_rows[0]["canonical_tie"] = {"first": 1, "last": 2}
    c = cross_language(python, run("m", js_rows, "javascript"))
    assert c.paired["test"] == "sign-flip"
    assert c.exec1["javascript"]["mean"] == pytest.approx((0.5 + 1) / 8)


def test_the_paired_analysis_refuses_what_cannot_be_paired():
    a = run("m", [row("q0", True, False, "off_by_one")], None)
    with pytest.raises(ComparisonError, match="both reports are of the python pool"):
        cross_language(a, a)
    with pytest.raises(ComparisonError, match="different embedders"):
        cross_language(a, run("other", a["per_query"], "javascript"))
    with pytest.raises(ComparisonError, match="no twins"):
        cross_language(a, run("m", [row("q9", True, False, "x")], "javascript"))


def test_the_cross_language_command_prints_the_analysis(tmp_path, capsys):
    python = run("m", [row(f"q{i}", i < 8, False, "off_by_one") for i in range(10)], None)
    js = run("m", [row(f"q{i}", i < 3, False, "off_by_one") for i in range(10)], "javascript")
    paths = []
    for name, report in (("py.json", python), ("js.json", js)):
        report |= {"schema_version": 2, "corpus": {"sha256": name}, "metrics": {}, "ci95": {}}
        (tmp_path / name).write_text(json.dumps(report))
        paths.append(str(tmp_path / name))
    assert cli.main(["cross-language", *paths]) == 0
    out = capsys.readouterr().out
    assert out.startswith("cross-language [m]: exec@1 on 10 twin queries: python 0.800")
    assert "exact McNemar p = 0.0625 (only python right: 5, only javascript right: 0)" in out
    assert cli.main(["cross-language", paths[0], paths[0]]) == 2
    assert "both reports are of the python pool" in capsys.readouterr().err


def test_report_directories_read_the_cross_language_file_as_no_report(tmp_path):
    from pytest_execretrieval.reporting.cross_language_text import write_cross_language
    from pytest_execretrieval.reporting.plots import load_reports

    python = run("m", [row("q0", True, False, "off_by_one")], None)
    js = run("m", [row("q0", False, True, "off_by_one")], "javascript")
    written = write_cross_language(tmp_path, {"m": cross_language(python, js)})
    assert [p.name for p in written] == ["cross-language.json", "cross-language.md"]
    assert load_reports(tmp_path) == ([], [])  # no "skipping ..." note for it


def test_the_baseline_command_ignores_the_configured_gate_and_writes_every_pool(
    pytester, pools, monkeypatch
):
    """With the CI's gate in the ini (a baseline not yet there, a margin, metrics, a minimum no
    model meets), ``execretrieval baseline`` writes both pools' reports where the ini looks."""
    pytester.makeini(
        f"""
        [pytest]
        execretrieval_items = {pools}
        execretrieval_baseline = benchmarks/bm25.json
        execretrieval_gate_metric = exec@1
        execretrieval_margin = 0.02
        execretrieval_min = exec@1=1.5
        """
    )
    monkeypatch.chdir(pytester.path)
    assert cli.main(["baseline", "--embedder", "bm25", "--out", "benchmarks", "-q"]) == 0
    python, js = (
        json.loads((pytester.path / "benchmarks" / p).read_text())
        for p in ("bm25.json", "javascript/bm25.json")
    )
    assert "gate" not in python and js["language"] == "javascript"
    gated = bench(pytester, pools).stdout.str()  # the ini's gate finds both baselines
    assert "gate [javascript/bm25]: " in gated and "no baseline" not in gated


@pytest.fixture(scope="module")
def built_go(tmp_path_factory) -> Path:
    """The Go twins (``tests/data/go_items``, the same three queries) with their corpus, built
    beside their Python twins by the real Go runner."""
    if shutil.which("go") is None:
        pytest.skip("no Go toolchain")
    root = tmp_path_factory.mktemp("go")
    for twin in (DATA / "items").glob("*/*.toml"):
        (root / twin.parent.name).mkdir(exist_ok=True)
        shutil.copy(twin, root / twin.parent.name / twin.name)
    target = root / "go"
    shutil.copytree(DATA / "go_items", target)
    cache = ["--cache-dir", str(root / "build-cache")]
    assert cli.main(["build", str(target), "-j", "1", *cache]) == 0
    return target


def test_three_pools_in_one_run_each_with_its_reports_gate_and_pairs(pytester, pools, built_go):
    shutil.copytree(built_go, pools / "go")
    gate = "--execretrieval-min=exec@1=0"  # a gate every pool passes: its case in each junit
    result = bench(pytester, pools, "-v", "--execretrieval-report-dir=reports", gate)
    out = result.stdout.str()
    assert result.ret == 0
    for qid in TWINS:
        assert f"go/{qid}[bm25]" in out and f"javascript/{qid}[bm25]" in out
    reports = pytester.path / "reports"
    go = json.loads((reports / "go" / "bm25.json").read_text())
    assert go["language"] == "go" and go["corpus"]["n_queries"] == 3
    own = {s.snippet_id for s in read_corpus(pools / "go").snippets}
    assert {h["snippet_id"] for q in go["per_query"] for h in q["top"]} <= own
    assert 'name="gate[go/bm25]"' in (reports / "go" / "bm25.xml").read_text()
    assert "verdict [go/bm25]: PASS" in out
    pairs = json.loads((reports / "cross-language.json").read_text())["pairs"]
    assert sorted(pairs) == ["go vs javascript", "python vs go", "python vs javascript"]
    assert pairs["go vs javascript"]["bm25"]["n_twins"] == 3
    assert pairs["python vs go"]["bm25"]["untwinned"] == {"python": 1, "go": 0}
