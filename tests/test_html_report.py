"""``execretrieval report DIR --html``: the page of a real run, opened in a headless browser,
and untrusted item text rendered as text."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from plugin_runs import bench
from test_language_pools import built_js, pools  # noqa: F401 - the JavaScript pool's fixtures

from pytest_execretrieval.cli import main
from pytest_execretrieval.corpus.items import load_items
from pytest_execretrieval.corpus.store import corpus_dir, read_corpus
from pytest_execretrieval.records import Flip, Rank1
from pytest_execretrieval.reporting.html import HTML_FILE, PoolPage, html_page
from pytest_execretrieval.reporting.plots import load_reports

HOSTILE = 'x</td></tr></table><script>alert("owned")</script>\u202eevil <b>bold</b>'


def dump_dom(page: Path) -> str:
    """The DOM chromium builds from ``page``; skips without chromium, except in CI."""
    chromium = shutil.which("chromium")
    if chromium is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed (.ci/run installs it)")
        pytest.skip("chromium is not installed: apt-get install -y chromium")
    done = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--dump-dom", page.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout


class Tags(HTMLParser):
    """The start tags and the text of a page, as a browser's tokenizer sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parsed(page: str) -> Tags:
    tags = Tags()
    tags.feed(page)
    return tags


@pytest.fixture
def report_dir(pytester, items: Path) -> Path:
    """A real run's report directory: bm25 on the small items, gated (exec@1 >= 0)."""
    result = bench(
        pytester, items, "--execretrieval-min", "exec@1=0.0", "--execretrieval-report-dir=r"
    )
    assert result.ret == 0, result.stdout.str()
    return pytester.path / "r"


def pool_page(report_dir: Path, items_dir: Path, query: str | None = None) -> PoolPage:
    """The page's section of the run, optionally with every query's text replaced."""
    items, _ = load_items(items_dir)
    if query is not None:
        items = [dataclasses.replace(item, query=query) for item in items]
    corpus = read_corpus(items_dir, where=corpus_dir(items_dir))
    return PoolPage(
        title="Python pool",
        reports=load_reports(report_dir)[0],
        items={item.id: item for item in items},
        snippets={s.snippet_id: s for s in corpus.snippets},
    )


def test_report_html_writes_one_self_contained_page(report_dir: Path, items: Path) -> None:
    assert main(["report", str(report_dir), "--html", "--items", str(items)]) == 0
    page = (report_dir / HTML_FILE).read_text()
    tags = parsed(page)
    assert "script" not in tags.tags and "link" not in tags.tags  # nothing loads, nothing runs
    assert "http://" not in page and "https://" not in page
    assert 'src="data:image/png;base64,' in page  # the plots are inline
    assert {"details", "pre", "table"} <= set(tags.tags)


def test_page_renders_metrics_gate_queries_and_diffs_in_a_browser(
    report_dir: Path, items: Path
) -> None:
    assert main(["report", str(report_dir), "--html", "--items", str(items)]) == 0
    dom = dump_dom(report_dir / HTML_FILE)
    cells = parsed(dom).text
    report = load_reports(report_dir)[0][0]
    exec1 = f"{report['metrics']['exec@1']:.3f}"
    assert any(c.startswith(exec1 + " [") for c in cells), exec1  # exec@1 with its CI
    assert "PASS" in cells  # the gate's decision
    assert any(c.startswith("PASS: ") for c in (c.lstrip("\u2014 ") for c in cells))
    vowels = "Count the vowels (a, e, i, o, u, either case) in a string."
    assert vowels in cells  # a query's text
    failing = next(r for r in report["per_query"] if not r["passed"])
    assert any(c.startswith("rank 1: ") for c in cells), failing["query_id"]
    assert any(c.startswith("@@ ") for c in dom.split("\n")) or "@@ -" in dom  # a diff hunk
    assert any(c.startswith(("+", "-")) and not c.startswith(("+++", "---")) for c in cells)
    assert "\u2192 fail" in "".join(cells)  # a failing test's outcome (from the corpus)


def test_a_hostile_query_renders_as_text(report_dir: Path, items: Path, tmp_path: Path) -> None:
    page = html_page([pool_page(report_dir, items, query=HOSTILE)])
    tags = parsed(page)
    assert "script" not in tags.tags and "<script>" not in page
    assert tags.tags.count("b") == 1  # the gate's model name: the item's <b> is text
    assert "\u202e" not in page  # the bidi override is escaped, not applied
    shown = 'x</td></tr></table><script>alert("owned")</script>\\u202eevil <b>bold</b>'
    assert shown in "".join(tags.text)
    (tmp_path / "hostile.html").write_text(page)
    dom = dump_dom(tmp_path / "hostile.html")
    assert "<script" not in dom
    assert shown in "".join(parsed(dom).text)


def test_the_javascript_pool_has_its_own_section(pytester, pools: Path) -> None:  # noqa: F811
    result = bench(pytester, pools, "--execretrieval-report-dir=r")
    assert result.ret in (0, 1), result.stdout.str()
    report_dir = pytester.path / "r"
    assert main(["report", str(report_dir), "--html", "--items", str(pools)]) == 0
    text = "".join(parsed(dump_dom(report_dir / HTML_FILE)).text)
    assert f"javascript pool ({report_dir / 'javascript'})" in text
    assert "Count the vowels" in text.split("javascript pool")[-1]  # a JavaScript query's text


def test_html_without_the_run_corpus_is_a_message(
    report_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    assert main(["report", str(report_dir), "--html", "--items", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"queries of the reports in {report_dir} are not items of {tmp_path}" in err
    assert "--items DIR" in err and not (report_dir / HTML_FILE).exists()
    # without --items (and no items/ here): the bundled items, not what these reports ran on
    monkeypatch.chdir(tmp_path)
    assert main(["report", str(report_dir), "--html"]) == 2
    assert "--items DIR" in capsys.readouterr().err and not (report_dir / HTML_FILE).exists()


def passing(row: dict) -> None:
    """Make a report row's rank 1 pass (the whole rank-1 tie group)."""
    row["passed"] = True
    for hit in row["top"][: row["rank1_tie"]["size"]]:
        hit["passes"] = True
    row["rank1_tie"]["passing"] = row["rank1_tie"]["size"]


def test_the_query_table_puts_regressions_first_beside_the_baseline(
    report_dir: Path, items: Path, tmp_path: Path
) -> None:
    """BM25 fails all 4 queries: against a baseline that passes count_vowels, and with the
    candidate made to pass clamp_add, the table lists the regression, then the fix, then the
    rest, each with the baseline's rank 1; summary.md is not touched."""
    candidate = json.loads((report_dir / "bm25.json").read_text())
    baseline = json.loads(json.dumps(candidate))
    passing(next(q for q in baseline["per_query"] if q["query_id"] == "strings/count_vowels"))
    passing(
        next(q for q in candidate["per_query"] if q["query_id"] == "math_number_theory/clamp_add")
    )
    (report_dir / "bm25.json").write_text(json.dumps(candidate))
    (tmp_path / "base.json").write_text(json.dumps(baseline))
    summary = (report_dir / "summary.md").read_bytes()
    args = ["report", str(report_dir), "--html", "--items", str(items)]
    assert main([*args, "--baseline", str(tmp_path / "base.json")]) == 0
    assert (report_dir / "summary.md").read_bytes() == summary
    page = (report_dir / HTML_FILE).read_text()
    rows = re.findall(r'<tr id="q-bm25-2f-([a-z_]+)-2f-([a-z_]+)">(.*?)</tr>', page, re.S)
    assert [f"{d}/{q}" for d, q, _ in rows] == [
        "strings/count_vowels",  # pass -> fail
        "math_number_theory/clamp_add",  # fail -> pass
        "arrays_lists/last_index_of",  # failing in both, by id
        "arrays_lists/window_sums",
    ]
    cells = [re.findall(r"<td>(.*?)</td>", row, re.S) for _, _, row in rows]
    flip, rank1, base = (2, 3, 4)  # columns: query, domain, flip, rank 1, baseline rank 1
    assert "pass -&gt; fail" in cells[0][flip] and "fail -&gt; pass" in cells[1][flip]
    assert cells[0][rank1].startswith('<span class="fail">fails</span>: distractor (off_by_one)')
    assert cells[0][base].startswith('<span class="pass">passes</span>: distractor (off_by_one)')
    assert cells[1][rank1].startswith('<span class="pass">passes</span>')
    assert cells[1][base].startswith('<span class="fail">fails</span>')
    assert "baseline: bm25" in page  # the baseline's metrics beside the candidate's
    flips = page[page.index('id="flips"') : page.index("</section>", page.index('id="flips"'))]
    assert "bm25: 1 pass -&gt; fail, 1 fail -&gt; pass" in flips
    assert flips.index("strings/count_vowels") < flips.index("math_number_theory/clamp_add")


def test_the_page_is_written_without_matplotlib(report_dir: Path, items: Path) -> None:
    """The page needs no ``plots`` extra: with matplotlib unimportable it is written without
    plots and says why; the plots and summary.md of plain ``report`` still need it."""
    summary = (report_dir / "summary.md").read_bytes()

    def report(*extra: str) -> subprocess.CompletedProcess:
        code = (
            "import sys; sys.modules['matplotlib'] = None\n"
            "from pytest_execretrieval.cli import main\n"
            f"sys.exit(main({['report', str(report_dir), *extra]!r}))"
        )
        return subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
        )

    done = report("--html", "--items", str(items))
    assert done.returncode == 0, done.stderr
    assert "no plots on the page: they need the `plots` extra" in done.stdout
    page = (report_dir / HTML_FILE).read_text()
    assert "<img" not in page and "they need the `plots` extra (matplotlib)" in page
    assert "Count the vowels (a, e, i, o, u, either case) in a string." in page
    assert (report_dir / "summary.md").read_bytes() == summary
    assert not list(report_dir.glob("*.png"))
    plain = report()
    assert plain.returncode == 2 and "matplotlib is not installed" in plain.stderr


def test_a_hostile_query_id_in_the_flips_renders_as_text(report_dir: Path, items: Path) -> None:
    """A flip's query id and rank 1 are report data: escaped like a query's text, and the row's
    anchor is made of letters, digits, ``_`` and ``-`` only."""
    hostile_id = 'strings/x"><script>alert(1)</script>\u202e'
    rank1 = Rank1("s", "distractor", "<b>op</b>", hostile_id)
    flip = Flip(hostile_id, "strings", "pass->fail", rank1, None)
    page = html_page([dataclasses.replace(pool_page(report_dir, items), flips=[[flip]])])
    tags = parsed(page)
    assert "script" not in tags.tags and "<script>" not in page and "\u202e" not in page
    assert tags.tags.count("b") == 1  # the gate's model name only
    [href] = re.findall(r'<a href="#([^"]*)">', page)
    assert re.fullmatch(r"q-[A-Za-z0-9_-]+", href)
    assert "distractor (&lt;b&gt;op&lt;/b&gt;)" in page
