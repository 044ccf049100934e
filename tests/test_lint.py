"""``execretrieval lint``: the bundled items' checks on any items directory, as findings (item,
check, severity, message), one escaped line each; exit 0 without errors, 1 with one (with a
warning too under ``--strict``), 2 without an items directory. Nothing of an item runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomli_w

from pytest_execretrieval import cli
from pytest_execretrieval.corpus import lint as lint_module
from pytest_execretrieval.corpus.build import engine
from pytest_execretrieval.corpus.items import bundled_items_dir, item_paths, load_items
from pytest_execretrieval.corpus.lint import CHECKS, ERROR, WARNING, Finding, LintResult, lint
from pytest_execretrieval.corpus.store import Corpus, make_snippet, write_corpus

CLAMP = {
    "domain": "numbers",
    "query": "Clamp an integer into an inclusive range; raises ValueError when the lower bound "
    "exceeds the upper.",
    "entry_point": "clamp_value",
    "canonical": "def clamp_value(n: int, lo: int, hi: int) -> int:\n    if lo > hi:\n"
    "        raise ValueError(lo)\n    return max(lo, min(n, hi))\n",
    "tests": [
        "assert clamp_value(5, 0, 10) == 5",
        "assert clamp_value(-1, 0, 10) == 0",
        "assert clamp_value(11, 0, 10) == 10",
        "assert clamp_value(0, 0, 10) == 0",
        "assert clamp_value(10, 0, 10) == 10",
        "assert clamp_value(3, 3, 3) == 3",
        "assert raises(ValueError, clamp_value, 1, 2, 1)",
    ],
}
# Too few tests (a warning), and (in the corpus written below) one distractor (a warning).
HALVE = {
    "domain": "numbers",
    "query": "Half of an even integer.",
    "entry_point": "halve_even",
    "canonical": "def halve_even(n: int) -> int:\n    return n // 2\n",
    "tests": [f"assert halve_even({n}) == {n // 2}" for n in (4, 0, -2)],
}
# A float compared with == (an error: an equally correct implementation can fail it).
MEAN = {
    "domain": "numbers",
    "query": "The arithmetic mean of a non-empty list of integers.",
    "entry_point": "mean_of",
    "canonical": "def mean_of(xs: list[int]) -> float:\n    return sum(xs) / len(xs)\n",
    "tests": [
        "assert mean_of([1, 2]) == 1.5",
        *(f"assert math.isclose(mean_of({xs}), {v})" for xs, v in (
            ([1, 2, 3], 2.0), ([4], 4.0), ([-1, 1], 0.0), ([0, 0, 3], 1.0), ([5, 6], 5.5),
            ([10, 20, 30, 40], 25.0))),
    ],
}  # fmt: skip
# A raises test of an exception the query does not name (an error: the query does not state
# the tested behaviour).
FIRST = {
    "domain": "strings",
    "query": "The first character of a string.",
    "entry_point": "first_char",
    "canonical": "def first_char(s: str) -> str:\n    return s[0]\n",
    "tests": [
        *(f"assert first_char({s!r}) == {s[0]!r}" for s in ("abc", "x", "Zq", "01", "!?", "ba")),
        "assert raises(IndexError, first_char, '')",
    ],
}
# A test passing text with repeated whitespace the query says nothing of (a warning).
WORDS = {
    "domain": "strings",
    "query": "Count the words in a text.",
    "entry_point": "word_count",
    "canonical": "def word_count(text: str) -> int:\n    return len(text.split())\n",
    "tests": [
        *(f"assert word_count({t!r}) == {n}" for t, n in (
            ("a b", 2), ("", 0), ("one", 1), ("a b c", 3), ("  a  b ", 2), ("x y z w", 4),
            ("hello world", 2))),
    ],
}  # fmt: skip


def write(root: Path, data: dict, stem: str | None = None) -> Path:
    path = root / data["domain"] / f"{stem or data['entry_point']}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(tomli_w.dumps(data))
    return path


def build(root: Path, distractors: dict[str, int]) -> None:
    """The corpus a build would commit, written as recorded (no execution): each item's
    canonical and ``distractors[id]`` (default 4) killed mutants."""
    items, _ = load_items(root)
    snippets = []
    for item in items:
        passes = ("pass",) * len(item.tests)
        snippets.append(make_snippet(item, "canonical", item.canonical, passes))
        for k in range(distractors.get(item.id, 4)):
            code = item.canonical.replace("return ", f"return {k + 1} + ", 1)
            outcomes = ("fail",) + passes[1:]
            killed = {"operator": "off_by_one", "line": 2, "kill": "assertion"}
            snippets.append(make_snippet(item, "distractor", code, outcomes, **killed))
    write_corpus(root, Corpus(tuple(snippets), engine=engine(languages={"python"})))


def found(result: LintResult) -> set[tuple[str, str, str]]:
    return {(f.item_id, f.check, f.severity) for f in result.findings}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = cli.main(["lint", *argv])
    out, err = capsys.readouterr()
    return status, out, err


# --- the bundled items ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def bundled() -> LintResult:
    return lint(bundled_items_dir())


# The warnings the bundled items may give: the lexical proxies whose misreadings
# tests/test_bundled_items.py lists as reviewed (PROMISE_READINGS, WHITESPACE_ORDINARY,
# SPEED_OBSERVED), and the items short of distractors (at most 5% there).
BUNDLED_WARNINGS = {"untested-exception", "unstated-convention", "recital", "distractors"}


def test_the_bundled_items_lint_without_errors(bundled):
    root = bundled_items_dir()
    pools = (root, root / "javascript", root / "go")
    assert bundled.items == sum(len(item_paths(pool)) for pool in pools)
    assert bundled.errors == 0, "\n".join(f.line() for f in bundled.findings)
    assert {f.check for f in bundled.findings} <= BUNDLED_WARNINGS
    assert all(f.severity == WARNING for f in bundled.findings)


def test_the_command_on_the_bundled_items(bundled, capsys, monkeypatch):
    """Exit 0 (warnings printed); under ``--strict`` the reviewed warnings fail it."""
    monkeypatch.setattr(lint_module, "lint", lambda items_dir: bundled)  # linted once, above
    status, out, _ = run(capsys, str(bundled_items_dir()))
    assert status == 0
    lines = out.splitlines()
    assert lines[:-1] == [f.line() for f in bundled.findings]
    assert lines[-1].startswith(f"lint passes: 0 error(s), {bundled.warnings} warning(s) in ")
    status, out, _ = run(capsys, "--strict", str(bundled_items_dir()))
    assert status == (1 if bundled.warnings else 0)


# --- a directory with defects ----------------------------------------------------------------


def test_each_defect_is_a_finding_and_an_error_fails(tmp_path, capsys):
    for data in (CLAMP, HALVE, MEAN, FIRST, WORDS):
        write(tmp_path, data)
    build(tmp_path, {"numbers/halve_even": 1})
    result = lint(tmp_path)
    assert found(result) == {
        ("numbers/halve_even", "test-count", WARNING),
        ("numbers/halve_even", "distractors", WARNING),
        ("numbers/mean_of", "float-equality", ERROR),
        ("strings/first_char", "unnamed-exception", ERROR),
        ("strings/word_count", "unstated-convention", WARNING),
    }
    messages = {f.check: f.message for f in result.findings}
    assert messages["test-count"] == "3 test(s); an item needs at least 7 (the guide's 7-10)"
    assert messages["distractors"].startswith("1 distractor(s) in the corpus, fewer than the 4")
    assert messages["float-equality"] == (
        "tests[0] compares a float literal with ==/!=: assert mean_of([1, 2]) == 1.5"
    )
    assert messages["unnamed-exception"] == "tests[6] expects IndexError, which the query does " \
        "not name"  # fmt: skip
    assert messages["unstated-convention"].startswith("tests[4] passes text with surrounding")
    for strict in ((), ("--strict",)):
        status, out, _ = run(capsys, *strict, str(tmp_path))
        assert status == 1
        assert "error: numbers/mean_of: float-equality: tests[0] compares" in out
        assert out.splitlines()[-1].startswith("lint fails")
        assert "2 error(s), 3 warning(s) in 5 item file(s)" in out


def test_warnings_fail_only_under_strict(tmp_path, capsys):
    for data in (CLAMP, HALVE, WORDS):
        write(tmp_path, data)
    build(tmp_path, {"numbers/halve_even": 1})
    status, out, _ = run(capsys, str(tmp_path))
    assert status == 0
    assert out.splitlines() == [
        "warning: numbers/halve_even: test-count: 3 test(s); an item needs at least 7 (the "
        "guide's 7-10)",
        "warning: numbers/halve_even: distractors: 1 distractor(s) in the corpus, fewer than "
        "the 4 an item needs: strengthen its tests so more mutants are killed",
        "warning: strings/word_count: unstated-convention: tests[4] passes text with surrounding "
        "or repeated whitespace and the query says nothing of it",
        "lint passes: 0 error(s), 3 warning(s) in 3 item file(s)",
    ]
    status, out, _ = run(capsys, "--strict", str(tmp_path))
    assert status == 1
    assert out.splitlines()[-1] == (
        "lint fails (--strict: warnings fail too): 0 error(s), 3 warning(s) in 3 item file(s)"
    )


def test_a_clean_directory_passes_strict(tmp_path, capsys):
    write(tmp_path, CLAMP)
    build(tmp_path, {})
    status, out, _ = run(capsys, "--strict", str(tmp_path))
    assert (status, out) == (
        0,
        "lint passes (--strict: warnings fail too): 0 error(s), 0 warning(s) in 1 item file(s)\n",
    )


def test_the_corpus_unbuilt_is_a_warning_and_stale_an_error(tmp_path):
    path = write(tmp_path, CLAMP)
    assert found(lint(tmp_path)) == {(str(tmp_path), "corpus", WARNING)}
    build(tmp_path, {})
    path.write_text(path.read_text().replace("inclusive range", "closed range"))
    result = lint(tmp_path)
    assert found(result) == {("numbers/clamp_value", "corpus", ERROR)}
    assert "changed since the corpus was built" in result.findings[0].message
    assert result.status() == 1


def test_a_malformed_item_is_an_error_not_a_traceback(tmp_path, capsys):
    write(tmp_path, CLAMP)
    build(tmp_path, {})
    (tmp_path / "numbers" / "broken.toml").write_text("query = ")
    write(tmp_path, {**HALVE, "tests": "assert halve_even(4) == 2"}, stem="halve_typed")
    status, out, err = run(capsys, str(tmp_path))
    assert status == 1 and not err
    lines = out.splitlines()
    assert lines[0].startswith("error: numbers/broken: malformed: <file>: not valid TOML")
    assert lines[1] == "error: numbers/halve_typed: malformed: tests: must be a list, got str"
    assert lines[-1] == "lint fails: 2 error(s), 0 warning(s) in 3 item file(s)"  # no stale


def test_a_file_python_would_import_is_an_error(tmp_path):
    write(tmp_path, CLAMP)
    build(tmp_path, {})
    (tmp_path / "numbers" / "conftest.py").write_text("import os\n")
    assert found(lint(tmp_path)) == {(str(tmp_path / "numbers" / "conftest.py"), "foreign-file",
                                      ERROR)}  # fmt: skip


def test_a_javascript_pool_is_linted_beside(tmp_path):
    js = {
        "domain": "strings",
        "language": "javascript",
        "query": "Upper-case a word.",
        "entry_point": "shout",
        "canonical": "function shout(s) {\n  // upper-case it\n  return s.toUpperCase();\n}\n",
        "tests": [f"assert shout({w!r}) == {w.upper()!r}" for w in "a b c d e f g".split()],
    }
    write(tmp_path / "javascript", js)
    build(tmp_path / "javascript", {})
    result = lint(tmp_path)
    assert found(result) == {("javascript/strings/shout", "plain-code", WARNING),
                             (str(tmp_path / "javascript"), "corpus", ERROR)}  # fmt: skip
    assert {f.message for f in result.findings if f.check == "plain-code"} == {
        "canonical: comment on line 2"
    }


# --- hostile text, usage --------------------------------------------------------------------


def test_hostile_item_text_is_escaped(tmp_path, capsys):
    """Control characters in a query and a folder name (a terminal redraw, an OSC 52 clipboard
    write, a bidirectional override) arrive as visible escapes, one line per finding."""
    write(tmp_path, {**CLAMP, "query": "Clamp\r\x1b[2K1000 passed \x1b]52;c;aGk=\x07\u202e"})
    evil = tmp_path / "evil\x1b[31m\r"
    evil.mkdir()
    (evil / "item.toml").write_text(tomli_w.dumps({**HALVE, "domain": evil.name}))
    status, out, _ = run(capsys, str(tmp_path))
    assert status == 1
    for raw in ("\x1b", "\x07", "\r", "\u202e"):
        assert raw not in out
    assert "error: evil\\x1b[31m\\x0d/item: malformed: <folder>: 'evil\\x1b[31m\\r'" in out
    assert "\\x1b[2K1000 passed" in out
    result = lint(tmp_path)
    assert len(out.splitlines()) == len(result.findings) + 1


def test_a_finding_is_one_escaped_line():
    finding = Finding("d/x\x1b", "float-equality", ERROR, "two\nlines\t\u202e")
    assert finding.line() == "error: d/x\\x1b: float-equality: two\\x0alines\\x09\\u202e"


@pytest.mark.parametrize("make", ["missing", "file", "empty"])
def test_no_items_directory_is_a_usage_error(tmp_path, capsys, make):
    target = tmp_path / "items"
    if make == "file":
        target.write_text("")
    elif make == "empty":
        target.mkdir()
    status, out, err = run(capsys, str(target))
    assert status == 2 and not out
    assert err.startswith("execretrieval lint: ")


def test_the_items_guide_names_every_check():
    guide = (Path(__file__).resolve().parents[1] / "docs" / "items-guide.md").read_text()
    section = guide.split("## Linting your own items")[1].split("\n## ")[0]
    assert [name for name in CHECKS if f"`{name}`" not in section] == []
