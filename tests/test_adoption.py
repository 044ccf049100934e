"""What a new user tripped over (issue 54): a plain install that can run ``verify -n``, the
baseline command under the ini's gate, option help that says what each value is, a warning
where the identifier-free view does not reach, grammar errors that name the call refused,
mining one's own unlicensed code, and ``--json`` for ``build --check`` and ``doctor``."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from mining_fixtures import CORE, INIT
from plugin_runs import bench

from pytest_execretrieval import cli, settings
from pytest_execretrieval.corpus.store import DEFAULT_VARIANT
from pytest_execretrieval.execution import _grammar
from pytest_execretrieval.reporting.ci_summary import MAX_SUMMARY, SUMMARY_MARKER
from pytest_execretrieval.settings import OPTIONS

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
BIN = Path(sys.executable).parent


def _requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0].lower() for r in requirements}


def test_the_plain_install_can_spread_verification_over_workers():
    """``execretrieval verify -n 2`` (the README's own-items steps) needs pytest-xdist: it is a
    dependency of the plain install, so ``[local]`` (and every other extra) has it."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "pytest-xdist" in _requirement_names(project["dependencies"])


def test_a_baseline_ignores_the_gate_the_ini_configures_and_says_it_wrote_the_baseline(
    tmp_path,
):
    """Every gate option in the ini (``max_detectable`` too: it used to refuse the run), and
    failing queries: exit 0, and the last line names the baseline written, never ``exit 1``."""
    shutil.copytree(DATA / "items", tmp_path / "items")
    (tmp_path / "pyproject.toml").write_text(
        "[tool.pytest.ini_options]\n"
        'execretrieval_items = "items"\n'
        'execretrieval_baseline = "benchmarks/bm25.json"\n'
        'execretrieval_gate_metric = ["exec@1"]\n'
        'execretrieval_margin = ["0.02"]\n'
        'execretrieval_alpha = "0.1"\n'
        'execretrieval_max_detectable = "0.5"\n'
    )
    made = subprocess.run(
        [str(BIN / "execretrieval"), "baseline", "--embedder", "bm25", "--out", "benchmarks"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    assert "without --execretrieval-baseline" not in made.stderr
    assert "exit 1" not in made.stdout
    last = made.stdout.strip().splitlines()[-1]
    assert last == (
        "baseline written: benchmarks/bm25.json; exit 0 (4 of 4 queries failed at rank 1: "
        "recorded in the baseline, not an error)"
    )
    report = json.loads((tmp_path / "benchmarks" / "bm25.json").read_text())
    assert "gate" not in report


def test_baseline_closing_lines():
    written = [Path("b/bm25.json"), Path("b/javascript/bm25.json")]
    lines = ["table", "reports: b/bm25.json", "exit 1: 2 of 9 queries failed at rank 1 and ..."]
    assert cli.baseline_closing(lines, written) == [
        "table",
        "reports: b/bm25.json",
        "baseline written: b/bm25.json, b/javascript/bm25.json; exit 0 (2 of 9 queries failed "
        "at rank 1: recorded in the baseline, not an error)",
    ]
    assert cli.baseline_closing(["table"], written)[-1] == (
        "baseline written: b/bm25.json, b/javascript/bm25.json; exit 0"
    )
    cut = ["INCOMPLETE: 3 of 9 selected queries ran"]
    assert cli.baseline_closing(cut, written) == cut  # not a baseline: no claim it was written
    assert cli.baseline_closing(lines, []) == lines[:2]


def _option_help(text: str) -> dict[str, str]:
    """``pytest --help``'s text of each ``--execretrieval-X`` option: its flag line and help."""
    found: dict[str, str] = {}
    for block in re.split(r"\n(?=  --)", text):
        m = re.match(r"  --execretrieval-([\w-]+)", block)
        if m:  # up to the end of the options' section
            found[m.group(1)] = " ".join(block.split("\n\n")[0].split())
    return found


def test_option_help_names_each_value_and_shows_a_default_once(pytester):
    result = pytester.runpytest_subprocess("--help")
    assert result.ret == 0
    shown = _option_help(result.stdout.str())
    assert sorted(shown) == sorted(o.name for o in OPTIONS)
    for option in OPTIONS:
        text = shown[option.name]
        assert not text.split()[0].endswith("=VALUE"), text
        assert text.count("default") <= 1, text
        if option.type is not bool:
            assert text.startswith(f"--execretrieval-{option.name}={option.metavar} "), text
    assert shown["items"].startswith("--execretrieval-items=DIR ")
    assert shown["baseline"].startswith("--execretrieval-baseline=FILE ")
    assert "(default: the bundled benchmark)" in shown["items"]
    assert "(default: per embedder)" in shown["batch-size"] and "None" not in shown["batch-size"]
    assert "(default: 0.05)" in shown["alpha"]


@pytest.fixture(scope="module")
def javascript_items(tmp_path_factory) -> Path:
    """The JavaScript test-data items as an items directory of their own, built."""
    root = tmp_path_factory.mktemp("javascript-only") / "items"
    shutil.copytree(DATA / "js_items", root)
    cache = ["--cache-dir", str(root.parent / "build-cache")]
    assert cli.main(["build", str(root), "-j", "1", *cache]) == 0
    return root


def test_the_neutral_view_says_it_leaves_javascript_identifiers_alone(pytester, javascript_items):
    own = pytester.path / "items"
    shutil.copytree(javascript_items, own)
    result = bench(pytester, own, "--execretrieval-identifiers=neutral")
    assert result.ret in (0, 1)
    out = " ".join(result.stdout.str().split())
    assert "another language than Python are not neutralised" in out
    assert f"the javascript items of {own}" in out
    # a Python-only directory: nothing to say
    python = bench(pytester, DATA / "items", "--execretrieval-identifiers=neutral")
    assert "neutralised" not in python.stdout.str()
    # the bundled benchmark's javascript/ pool, and a directory's own JavaScript items
    assert settings.unneutralised_pools(DATA / "items", DEFAULT_VARIANT) == []
    bundled = settings.unneutralised_pools(ROOT / "items", DEFAULT_VARIANT)
    pools = ("go", "javascript")
    assert bundled == [f"the {name} pool ({ROOT / 'items' / name})" for name in pools]


@pytest.mark.parametrize(
    ("test", "refused", "blamed"),
    [
        ("assert isinstance(f(3), int)", "isinstance() around the call f(3)", "a call of f"),
        ("assert hasattr(f(3), 'real')", "hasattr() around the call f(3)", "a call of f"),
    ],
)
def test_a_grammar_error_names_the_call_it_refuses(test, refused, blamed):
    with pytest.raises(_grammar.GrammarError) as caught:
        _grammar.parse_test(test)
    message = str(caught.value)
    assert message.startswith(refused) and blamed not in message
    assert "len/sorted" in message  # what may take the call instead


def test_a_grammar_error_cuts_code_at_a_word_boundary():
    name = "module_name.a_rather_long_function_name_that_goes_on_and_on_and_on"
    with pytest.raises(_grammar.GrammarError) as caught:
        _grammar.parse_test(f"assert raises(ValueError, {name}, 1)")
    assert name in str(caught.value)  # a name is never cut in two
    long_list = "[" + ", ".join(str(n) for n in range(100, 140)) + "]"
    with pytest.raises(_grammar.GrammarError) as caught:
        _grammar.parse_test(f"assert isinstance(f({long_list}), int)")
    shown = re.search(r"the call (.*?) is not", str(caught.value)).group(1)
    assert shown.endswith("…") and re.search(r"\b1[0-3]\d,?…$", shown), shown
    assert _grammar._clip("alpha beta gamma", 12) == "alpha beta…"
    assert _grammar._clip("alpha beta", 12) == "alpha beta"


def _private_source(root: Path) -> Path:
    """A team's own code: a package with no licence anywhere."""
    (root / "tinypkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "tinypkg"\nversion = "0.1"\n')
    (root / "tinypkg" / "__init__.py").write_text(INIT)
    (root / "tinypkg" / "core.py").write_text(CORE)
    return root


@pytest.mark.parametrize("flags", [["--private"], ["--allow-licence", "none"]])
def test_own_unlicensed_code_is_mined_with_private(tmp_path, capsys, flags):
    source = _private_source(tmp_path / "src")
    assert cli.main(["mine", str(source), "--out", str(tmp_path / "no")]) == 4
    assert "licence none is not one mined by default" in capsys.readouterr().err
    out = tmp_path / "mine"
    assert cli.main(["mine", str(source), "--out", str(out), *flags]) == 0
    assert list(out.glob("*/*.toml"))


def test_private_with_a_licence_is_a_usage_error(tmp_path, capsys):
    source = _private_source(tmp_path / "src")
    argv = ["mine", str(source), "--out", str(tmp_path / "o"), "--private"]
    assert cli.main([*argv, "--allow-licence", "GPL-3.0-only"]) == 4
    assert "choose one" in capsys.readouterr().err
    help_text = cli.parser()._subparsers._group_actions[0].choices["mine"].format_help()
    assert "not redistributed" in " ".join(help_text.split())


def test_build_check_json(tmp_path, capsys):
    items = tmp_path / "items"
    shutil.copytree(DATA / "items", items)
    assert cli.main(["build", str(items), "--check", "--json"]) == 0
    fresh = json.loads(capsys.readouterr().out)
    keys = ["command", "corpus_dir", "differences", "items", "rebuild", "reuse", "stale"]
    assert sorted(fresh) == sorted([*keys, "up_to_date"])
    assert fresh["up_to_date"] and fresh["differences"] == 0 and fresh["stale"] == []
    assert fresh["items"] == 4 and fresh["reuse"] == 4 and fresh["rebuild"]["items"] == []
    edited = items / "strings" / "count_vowels.toml"
    edited.write_text(edited.read_text().replace("Count the vowels", "Count vowels"))
    assert cli.main(["build", str(items), "--check", "--json"]) == 1
    stale = json.loads(capsys.readouterr().out)
    assert not stale["up_to_date"] and stale["differences"] == len(stale["stale"]) >= 1
    assert stale["rebuild"]["items"] == ["strings/count_vowels"] and stale["reuse"] == 3
    assert stale["command"].startswith("execretrieval build")
    assert cli.main(["build", str(items), "--json"]) == 2  # --json goes with --check


def test_doctor_json_lists_the_embedders(capsys):
    status = cli.main(["doctor", "--json"])
    found = json.loads(capsys.readouterr().out)
    assert status == (1 if found.get("missing") or "error" in found else 0)
    if "error" in found:
        pytest.skip(found["error"])
    assert {"layers", "missing", "javascript", "go", "embedders"} <= set(found)
    if shutil.which("go"):
        assert found["go"]["missing"] == found["missing"] and found["go"]["version"]
    assert found["embedders"]["bm25"] == {"usable": True, "why": None}
    assert all(set(e) == {"usable", "why"} for e in found["embedders"].values())


def test_the_ci_summary_of_a_run_that_wrote_nothing_says_so(tmp_path, capsys):
    """The recipe's summary and comment steps run ``if: always()``: a benchmark that never
    started still gets a summary (exit 0), never a missing-file error."""
    assert cli.main(["summary", str(tmp_path / "reports")]) == 0
    out = capsys.readouterr().out
    assert out.startswith(SUMMARY_MARKER + "\n")
    assert "No ExecRetrieval reports in" in out


def test_the_ci_summary_puts_every_verdict_first(tmp_path, capsys):
    reports = tmp_path / "reports"
    (reports / "javascript").mkdir(parents=True)
    base = {"schema_version": 2, "corpus": {}, "metrics": {"exec@1": 0.5}, "ci95": {}}
    gate = {"passed": False, "decision": "FAIL", "reason": "FAIL: harm test; failed: exec@1"}
    own = base | {"embedder": {"name": "bm25"}, "per_query": [], "gate": gate}
    js = base | {"embedder": {"name": "bm25"}, "per_query": [], "language": "javascript"}
    (reports / "bm25.json").write_text(json.dumps(own))
    (reports / "javascript" / "bm25.json").write_text(json.dumps(js))
    (reports / "cross-language.json").write_text("{}")
    (reports / "summary.md").write_text("# Python pool\n")
    (reports / "javascript" / "summary.md").write_text("x" * (MAX_SUMMARY + 1))
    assert cli.main(["summary", str(reports)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[3:5] == [
        "- **FAIL** `gate[bm25]`: harm test; failed: exec@1",
        "- `javascript/bm25`: no gate ran; exec@1 0.500",
    ]
    # too long for a comment: the summaries are named, not included
    assert "<details>" not in out and f"`{reports / 'javascript' / 'summary.md'}`" in out
