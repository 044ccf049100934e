"""Hostile item files and items directories, one per class of attack on the host side (issue 24,
parts 5-9): the host's own parsers and mutation engine, pytest's conftest discovery, the writes,
what reaches the terminal and the junit, and the outcome cache's key.

Each asserts what the issue asks: the hostile item is not recorded as passing, nothing is written
outside the test's directory, the other items still load, build or run, the terminal shows no raw
control character and the junit parses.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from plugin_runs import bench

from pytest_execretrieval.cli import main as cli
from pytest_execretrieval.corpus.build import BuildError, build
from pytest_execretrieval.corpus.items import BenchmarkItem, load_items
from pytest_execretrieval.corpus.store import Corpus, write_corpus
from pytest_execretrieval.embedders.cache import EmbeddingCache
from pytest_execretrieval.embedders.npz import write_npz
from pytest_execretrieval.execution.outcome_cache import OutcomeCache
from pytest_execretrieval.execution.runner import SuiteRunner, limits_key
from pytest_execretrieval.execution.sandbox import Limits, SuiteResult
from pytest_execretrieval.mutation.operators import diff_blocks, generate_mutants
from pytest_execretrieval.reporting.report import RecordedTest, junit_xml
from pytest_execretrieval.safe_write import UnsafeTargetError

RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # what a terminal would interpret
BANNER = "\r\x1b[2K\x1b[32m======== 1000 passed in 0.01s ========\x1b[0m"
OSC52 = "\x1b]52;c;ZXZpbA==\x07"
GOOD = '''domain = "strings"
query = "Count the vowels in a string."
entry_point = "count_vowels"
canonical = """
def count_vowels(s):
    return sum(ch in "aeiou" for ch in s.lower())
"""
tests = ["assert count_vowels('abc') == 1", "assert count_vowels('') == 0"]
'''


def item_text(**fields: str) -> str:
    """GOOD with some fields replaced (values given as TOML source)."""
    text = GOOD
    for key, value in fields.items():
        text = re.sub(
            rf'(?ms)^{key} = (""".*?"""|\[.*?\]|".*?")$',
            lambda _, key=key, value=value: f"{key} = {value}",
            text,
        )
    return text


def toml_string(text: str) -> str:
    return json.dumps(text)  # a JSON string is a TOML basic string


# --- part 5: bounds on the host's parsers ------------------------------------------------------


def _symlink_to_dev_zero(folder: Path) -> Path:
    (folder / "zero.toml").symlink_to("/dev/zero")
    return folder / "zero.toml"


def _fifo(folder: Path) -> Path:
    os.mkfifo(folder / "pipe.toml")
    return folder / "pipe.toml"


def _oversized(folder: Path) -> Path:
    path = folder / "huge.toml"
    path.write_text(GOOD + "#" * (300 * 1024) + "\n")
    return path


def _escape_sequence_name(folder: Path) -> Path:
    path = folder / f"x{OSC52}{BANNER}.toml"
    path.write_text(GOOD)
    return path


def _nested_toml(folder: Path) -> Path:
    path = folder / "nested.toml"
    path.write_text(GOOD + "alternatives = " + "[" * 50_000 + "]" * 50_000 + "\n")
    return path


def _long_expression(folder: Path) -> Path:
    path = folder / "long.toml"
    canonical = "def count_vowels(s):\n    return " + " + ".join(["len(s)"] * 5000) + "\n"
    path.write_text(item_text(canonical=toml_string(canonical)))
    return path


def _deep_expression(folder: Path) -> Path:  # few tokens, but a deep tree
    path = folder / "deep.toml"
    canonical = "def count_vowels(s):\n    return " + "-" * 400 + "len(s)\n"
    path.write_text(item_text(canonical=toml_string(canonical)))
    return path


def _banner_query(folder: Path) -> Path:
    path = folder / "banner.toml"
    path.write_text(item_text(query=toml_string(BANNER)))
    return path


def _osc52_test(folder: Path) -> Path:
    path = folder / "clipboard.toml"
    path.write_text(item_text(tests=toml_string([f"assert count_vowels('{OSC52}') == 0"])))
    return path


HOSTILE_FILES = {
    "symlink to /dev/zero": (_symlink_to_dev_zero, "symlink"),
    "FIFO": (_fifo, "not a regular file"),
    "300 KiB file": (_oversized, "larger than the limit of 256 KiB"),
    "escape sequences in the file name": (_escape_sequence_name, "is not a valid name"),
    "deeply nested TOML array": (_nested_toml, "nests arrays or tables"),
    "expression of 5,000 terms": (_long_expression, "nests too deeply to parse"),
    "expression 400 levels deep": (_deep_expression, "levels deep (the limit)"),
    "fake '1000 passed' banner in the query": (_banner_query, "control character"),
    "OSC 52 clipboard write in a test": (_osc52_test, "control character"),
}


def good_items(root: Path) -> Path:
    (root / "strings").mkdir(parents=True)
    (root / "strings" / "count_vowels.toml").write_text(GOOD)
    return root


@pytest.mark.timeout(60)  # today's main reads /dev/zero and the FIFO forever
@pytest.mark.parametrize("kind", HOSTILE_FILES)
def test_a_hostile_item_file_is_a_problem_naming_it(tmp_path, kind):
    make, reason = HOSTILE_FILES[kind]
    root = good_items(tmp_path / "items")
    hostile = make(root / "strings")
    before = time.perf_counter()
    items, problems = load_items(root)
    assert time.perf_counter() - before < 20
    assert [i.id for i in items] == ["strings/count_vowels"]  # the innocent item still loads
    assert len(problems) >= 1 and all(p.path == hostile for p in problems)
    text = "\n".join(map(str, problems))
    assert reason in text
    assert not RAW.search(text), text  # the file name and the reason are shown escaped


@pytest.mark.timeout(300)  # today's main blocks on the FIFO
def test_hostile_item_files_in_a_verification_run(pytester, items):
    """Every load-time class at once in a real verification run: each hostile file is one
    collection error, shown escaped; the other items verify as before; the junit parses."""
    for kind, (make, _) in HOSTILE_FILES.items():
        if kind != "symlink to /dev/zero":  # today's main would read it until memory runs out
            make(items / "strings")
    result, junit = verify_run(pytester, items)
    out = result.stdout.str() + result.stderr.str()
    found = {m.group(2): m.group(1) for m in re.finditer(r"(PASSED|FAILED|ERROR) (\S+)", out)}
    assert found["strings/count_vowels::canonical"] == "PASSED"
    assert found["arrays_lists/window_sums::canonical"] == "PASSED"
    errors = sorted(k for k, v in found.items() if v == "ERROR" and k.startswith("items/"))
    assert len(errors) == len(HOSTILE_FILES) - 2, errors  # pytest never collects the FIFO
    good = ("strings/count_vowels", "arrays_lists/", "math_number_theory/", "items::")
    assert all(k.startswith(good) for k, v in found.items() if v == "PASSED")
    assert not RAW.search(out), [m.group() for m in RAW.finditer(out)][:5]
    ET.parse(junit)


def test_a_long_expression_is_an_item_problem_of_the_build_and_the_build_goes_on(tmp_path):
    """The mutation engine itself, fed an item that bypassed the load-time bounds (built in
    Python): whatever fails on one item is that item's problem, and the other items are still
    built (here: a second item's broken canonical is still found and reported)."""
    root = good_items(tmp_path / "items")
    innocent = load_items(root)[0][0]
    code = "def count_vowels(s):\n    return " + " + ".join(["len(s)"] * 1200) + "\n"
    hostile = BenchmarkItem(
        **{
            **innocent.__dict__,
            "id": "strings/long",
            "canonical": code,
            "path": root / "strings" / "long.toml",
        }
    )
    broken = BenchmarkItem(
        **{
            **innocent.__dict__,
            "id": "strings/zzz_broken",
            "canonical": innocent.canonical.replace("aeiou", "aeio") + "\n",
            "tests": ("assert count_vowels('u') == 1",),
            "path": root / "strings" / "zzz_broken.toml",
        }
    )
    with SuiteRunner(jobs=1) as runner, pytest.raises(BuildError) as raised:
        build([innocent, hostile, broken], runner, runner)
    message = str(raised.value)
    assert f"{hostile.path}: mutants: RecursionError" in message
    assert f"{broken.path}: canonical: fails its tests" in message  # built after the hostile one
    assert "count_vowels.toml" not in message


@pytest.mark.timeout(120)  # today's main spends minutes in difflib on this
def test_repeated_lines_do_not_make_the_mutant_diffs_quadratic():
    canonical = "def f(n):\n" + "    n = n\n" * 10_000 + "    return n + 1\n"
    mutated = canonical.replace("n + 1", "n + 2")
    before = time.perf_counter()
    assert diff_blocks(canonical, mutated) == (1, 1)
    mutants = generate_mutants(canonical, "f")
    assert time.perf_counter() - before < 30
    assert {m.code.rsplit("\n", 2)[-2] for m in mutants} >= {"    return n + 2", "    return n"}


# --- part 6: the items directory is data --------------------------------------------------------

CONFTEST = "import pathlib\npathlib.Path({marker!r}).write_text('imported')\n"


def verify_run(pytester, items: Path, *args: str):
    junit = pytester.path / "pytest-junit.xml"
    # `--execretrieval-items=DIR`, one argument: pytest looks for its ini file next to every
    # argument that names a path, and would take the items' own pytest.ini (see the README).
    result = pytester.runpytest_subprocess(
        "--execretrieval-verify",
        f"--execretrieval-items={items}",
        "-rA",
        "-p",
        "no:randomly",
        f"--junitxml={junit}",
        *args,
    )
    return result, junit


@pytest.mark.parametrize("where", ["items", "domain", "between"])
def test_no_conftest_near_the_items_is_imported(pytester, items, tmp_path, where):
    marker = tmp_path / "conftest-ran"
    if where == "between":  # a folder between the rootdir and the items directory
        nested = pytester.path / "bench" / "items"
        nested.parent.mkdir()
        shutil.move(items, nested)
        items, folder = nested, nested.parent
    else:
        folder = items if where == "items" else items / "strings"
    (folder / "conftest.py").write_text(CONFTEST.format(marker=str(marker)))
    result, _ = verify_run(pytester, items)
    assert not marker.exists(), "a conftest.py next to the items was imported"
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "conftest.py" in result.stderr.str()


def test_a_conftest_in_the_items_is_not_imported_from_inside_either(
    pytester, items, tmp_path, monkeypatch
):
    """Run from inside the items directory: pytest loads a conftest.py next to the current
    directory before any plugin's pytest_configure."""
    marker = tmp_path / "conftest-ran"
    (items / "conftest.py").write_text(CONFTEST.format(marker=str(marker)))
    monkeypatch.chdir(items)
    result = pytester.run(
        sys.executable,
        "-m",
        "pytest",
        "--execretrieval-verify",
        "-p",
        "no:randomly",
        f"--execretrieval-items={items}",
    )
    assert not marker.exists()
    assert result.ret == pytest.ExitCode.USAGE_ERROR


# fmt: off
@pytest.mark.parametrize("name", ["pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml",
                                  "helper.py", "evil.pth"])
# fmt: on
def test_code_or_configuration_in_the_items_directory_is_refused(pytester, items, name):
    (items / name).write_text("[pytest]\n")
    result, _ = verify_run(pytester, items)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert name in result.stderr.str() and "items directory" in result.stderr.str()


# --- part 7: writes cannot be redirected ---------------------------------------------------------


@pytest.fixture
def outside(tmp_path) -> Path:
    """A file outside the tree a planted symlink points at; it must stay as it is."""
    target = tmp_path / "outside" / "precious.txt"
    target.parent.mkdir()
    target.write_text("precious")
    yield target
    assert target.read_text() == "precious"
    assert sorted(p.name for p in target.parent.iterdir()) == ["precious.txt"]


def test_corpus_writes_are_not_redirected(tmp_path, outside):
    root = good_items(tmp_path / "items")
    (root / ".corpus.jsonl.tmp").symlink_to(outside)  # today's temporary name
    write_corpus(root, Corpus(()))
    assert (root / "corpus.jsonl").read_bytes() == b""
    (root / "corpus.jsonl").unlink()
    (root / "corpus.jsonl").symlink_to(outside)
    with pytest.raises(UnsafeTargetError):
        write_corpus(root, Corpus(()))
    (root / "stack-2").symlink_to(outside.parent, target_is_directory=True)
    with pytest.raises(UnsafeTargetError):
        write_corpus(root, Corpus(()), root / "stack-2")


def bench_reports(pytester, items: Path, reports: Path):
    return bench(pytester, items, f"--execretrieval-report-dir={reports}")


@pytest.mark.parametrize("planted", ["bm25.json.tmp", "bm25.xml", "summary.md"])
def test_report_writes_are_not_redirected(pytester, items, outside, planted):
    """A report directory in the checkout with a committed symlink in it, at a temporary or a
    report's own name: refused before any write, never written through."""
    reports = pytester.path / "reports"
    reports.mkdir()
    (reports / planted).symlink_to(outside)
    result = bench_reports(pytester, items, reports)
    # a report directory with a link in it is refused as a usage error before any work
    # (settings.check_own_directory); nothing is written through the link
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert "symbolic link inside the checkout" in result.stderr.str()
    assert (reports / planted).is_symlink()
    assert sorted(p.name for p in reports.iterdir()) == [planted]  # refused before any write


def test_the_rerank_score_log_is_not_appended_through_a_symlink(tmp_path, outside):
    from pytest_execretrieval.ranking.rerank.hosted import ScoreCache

    log = tmp_path / "cache" / "rerank.jsonl"
    log.parent.mkdir()
    log.symlink_to(outside)
    with pytest.raises(UnsafeTargetError):
        ScoreCache(log).put({"k": 0.5})


def test_plots_are_not_redirected(pytester, items, outside):
    pytest.importorskip("matplotlib")
    from pytest_execretrieval.reporting.plots import EXEC_AT_K_PNG

    reports = pytester.path / "reports"
    assert bench_reports(pytester, items, reports).ret in (0, 1)
    (reports / EXEC_AT_K_PNG).unlink(missing_ok=True)
    (reports / EXEC_AT_K_PNG).symlink_to(outside)
    with pytest.raises(UnsafeTargetError):
        cli(["report", str(reports)])
    assert (reports / EXEC_AT_K_PNG).is_symlink()


def test_cache_plot_and_npz_writes_are_not_redirected(tmp_path, outside):
    import numpy as np

    cache = EmbeddingCache(tmp_path / "cache", {"name": "x"})
    cache.dir.mkdir(parents=True)
    (cache.dir / "invocation.json").symlink_to(outside.parent / "planted.json")  # dangling
    with pytest.raises(UnsafeTargetError):
        cache.store("document", ["k"], np.zeros((1, 2), np.float32))
    (cache.dir / "invocation.json").unlink()
    (cache.dir / "document").symlink_to(outside.parent, target_is_directory=True)
    with pytest.raises(UnsafeTargetError):
        cache.store("document", ["k"], np.zeros((1, 2), np.float32))
    out = tmp_path / "vectors.npz"
    (tmp_path / "vectors.npz.tmp.npz").symlink_to(outside)  # today's temporary name
    vectors = {"query": (["q"], np.zeros((1, 2))), "document": (["d"], np.zeros((1, 2)))}
    write_npz(out, {"name": "x"}, vectors)
    assert np.load(out)["query_ids"].tolist() == ["q"]
    out.unlink()
    out.symlink_to(outside)
    with pytest.raises(UnsafeTargetError):
        write_npz(out, {"name": "x"}, vectors)
    runner = SuiteRunner(cache_dir=tmp_path / "checkout-cache")
    entries = runner.cache
    passed = SuiteResult(("pass",), True, "", "")
    path = entries.path_for(entries.key("code", "", ("assert 1",)))
    path.parent.mkdir(parents=True)
    path.symlink_to(outside)
    with pytest.raises(UnsafeTargetError):
        entries.put("code", "", ("assert 1",), passed)
    shutil.rmtree(tmp_path / "checkout-cache")
    (tmp_path / "checkout-cache").mkdir()
    (tmp_path / "checkout-cache" / "outcomes").symlink_to(outside.parent)  # a committed link
    with pytest.raises(UnsafeTargetError):
        entries.put("code", "", ("assert 1",), passed)


# --- part 8: outputs are sanitised ---------------------------------------------------------------

HOSTILE_CLASS = f"class R:\n    pass\nR.__name__ = R.__qualname__ = {BANNER + OSC52!r}\n"


def test_returned_type_names_never_reach_the_terminal_raw(pytester, items):
    """A canonical whose return value's type name is a fake banner plus an OSC 52 write, and a
    test that fails on it: the failure shows the name escaped; the junit parses."""
    path = items / "strings" / "count_vowels.toml"
    text = path.read_text()
    canonical = f"canonical = '''\n{HOSTILE_CLASS}def count_vowels(text):\n    return R()\n'''"
    text = re.sub(r"(?ms)^canonical = '''.*?'''", lambda _: canonical, text, count=1)
    path.write_text(text)
    result, junit = verify_run(pytester, items)
    out = result.stdout.str() + result.stderr.str()
    found = {m.group(2): m.group(1) for m in re.finditer(r"(PASSED|FAILED|ERROR) (\S+)", out)}
    assert found["strings/count_vowels::canonical"] == "FAILED"
    assert found["arrays_lists/window_sums::canonical"] == "PASSED"  # the rest still runs
    assert not RAW.search(out), [m.group() for m in RAW.finditer(out)][:5]
    assert "1000 passed in 0.01s" in out and "\\x1b" in out  # shown, escaped
    ET.parse(junit)


def test_the_junit_writer_never_sees_a_control_character():
    record = RecordedTest(
        "strings/x[bm25]",
        "strings/x",
        "failed",
        0.1,
        f"rank 1 fails: returned <{BANNER}{OSC52}>\n\x00\ufffe\ud800",
        [("rank1_operator", OSC52)],
    )
    xml = junit_xml(f"bm25{OSC52}", [record])
    root = ET.fromstring(xml)
    failure = root.find("testsuite/testcase/failure")
    assert "1000 passed" in failure.text and "\\x1b" in failure.text
    assert not RAW.search(xml.decode())


# --- part 9: the cache key never comes from the checkout ----------------------------------------


def test_a_committed_key_and_signed_entry_do_not_forge_a_pass(tmp_path, capsys):
    """The checkout commits `.execretrieval_cache/.hmac-key` and a pass signed with it for an
    item whose canonical fails its test: `build` runs the canonical and reports the failure."""
    import hmac

    items_root = good_items(tmp_path / "items")
    path = items_root / "strings" / "count_vowels.toml"
    path.write_text(GOOD.replace("== 1", "== 7"))  # the canonical fails this test
    item = load_items(items_root)[0][0]
    cache_dir = tmp_path / ".execretrieval_cache"
    root = cache_dir / "outcomes" / limits_key(Limits())  # where `build` keeps canonicals' outcomes
    root.mkdir(parents=True)
    committed = b"k" * 32
    (root / ".hmac-key").write_bytes(committed)  # where today's main keeps the key
    entries = OutcomeCache(root)
    key = entries.key(item.canonical, item.setup, item.tests)
    body = json.dumps(
        SuiteResult(("pass", "pass"), True, "", "").to_json(), sort_keys=True
    ).encode()
    tag = hmac.new(committed, key.encode() + b"\n" + body, "sha256").hexdigest()
    entry = entries.path_for(key)
    entry.parent.mkdir()
    entry.write_bytes(
        b"execretrieval-outcome2 " + key.encode() + b" " + tag.encode() + b"\n" + body
    )
    with pytest.warns(UserWarning, match="hmac-key"):
        code = cli(["build", str(items_root), "--cache-dir", str(cache_dir), "-j", "1"])
    err = capsys.readouterr().err
    assert code == 1 and "canonical: fails its tests" in err
    assert not (items_root / "corpus.jsonl").exists()
