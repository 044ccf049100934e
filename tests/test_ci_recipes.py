"""The CI recipes in ``examples/ci/``: valid for their CI (check-jsonschema's vendored schemas,
no network), pinned to this release, included verbatim in ``docs/ci.md``, and their shell steps,
run literally (bm25 for the hosted model, a stand-in ``gh`` for GitHub's API), gate the bundled
benchmark, a Python-only and a JavaScript-only items directory against a baseline made the
documented way: a step summary and one pull-request comment, edited in place, that carry every
pool's verdict first, whatever pools ran."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from pytest_execretrieval import cli
from pytest_execretrieval.corpus.items import bundled_items_dir

ROOT = Path(__file__).parent.parent
RECIPES = ROOT / "examples" / "ci"
DOC = (ROOT / "docs" / "ci.md").read_text()
SCHEMAS = {"github-actions.yml": "vendor.github-workflows", "gitlab-ci.yml": "vendor.gitlab-ci"}
BIN = Path(sys.executable).parent


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_the_workflow_is_valid_for_its_ci(name):
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "check_jsonschema",
            "--builtin-schema",
            SCHEMAS[name],
            str(RECIPES / name),
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_the_workflow_pins_this_release_and_shares_the_cache_key(name):
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    text = (RECIPES / name).read_text()
    pins = re.findall(r"pytest-execretrieval(?:\[\w+\])?==([\w.]+)", text)
    assert pins == [version]
    assert "EXECRETRIEVAL_CACHE_KEY" in text and ".execretrieval_cache" in text
    # every pool that ran, whichever: never a fixed list of summary files (a missing one fails)
    assert "execretrieval summary reports" in text and "cat reports/" not in text


@pytest.mark.parametrize("name", sorted(p.name for p in RECIPES.iterdir()))
def test_the_docs_include_each_recipe_verbatim(name):
    marked = re.search(
        rf"<!-- begin examples/ci/{re.escape(name)} -->\n```\w+\n(.*?)```\n"
        rf"<!-- end examples/ci/{re.escape(name)} -->",
        DOC,
        re.S,
    )
    assert marked is not None, f"docs/ci.md does not include examples/ci/{name}"
    assert marked.group(1).encode() == (RECIPES / name).read_bytes()


def recipe_commands(text: str) -> list[str]:
    """The ``pytest`` lines of a recipe's ``run:`` steps or ``script:``."""
    return re.findall(r"^\s*(?:- run: |- )(pytest .*)$", text, re.M)


REPO, PR = "team/search", "7"
# What the recipes' ``${{ ... }}`` expressions are in this test.
EXPRESSIONS = {
    "secrets.EXECRETRIEVAL_CACHE_KEY": "ci-cache-key",
    "secrets.GEMINI_API_KEY": "",
    "github.token": "test-token",
    "github.event.pull_request.number": PR,
}
MARKER = "<!-- execretrieval-summary -->"  # the first line of `execretrieval summary`

# A stand-in for the GitHub CLI: ``gh api`` on one pull request's comments, kept in a JSON file
# beside it, with the recipe's own ``--jq`` expression evaluated by jq.
FAKE_GH = """#!{python}
import json, shutil, subprocess, sys
from pathlib import Path

state = Path(__file__).with_name("comments.json")
args = sys.argv[1:]
assert args[0] == "api", args
method, fields, jq, path, i = None, {{}}, None, None, 1
while i < len(args):
    if args[i] in ("--method", "-X", "-F", "--jq"):
        flag, value = args[i], args[i + 1]
        if flag == "-F":
            key, _, text = value.partition("=")
            fields[key] = Path(text[1:]).read_text() if text.startswith("@") else text
        elif flag == "--jq":
            jq = value
        else:
            method = value
        i += 2
    elif args[i] in ("--paginate", "--silent"):
        i += 1
    else:
        assert path is None, args
        path, i = args[i], i + 1
comments = json.loads(state.read_text())
method = method or ("POST" if fields else "GET")
if method == "PATCH":
    assert path.startswith("repos/{repo}/issues/comments/"), path
    [found] = [c for c in comments if c["id"] == int(path.rsplit("/", 1)[1])]
    found["body"] = fields["body"]
else:
    assert path == "repos/{repo}/issues/{pr}/comments", path
    if method == "POST":
        new = max(c["id"] for c in comments) + 1
        bot = {{"login": "github-actions[bot]"}}
        comments.append({{"id": new, "user": bot, "body": fields["body"]}})
    else:
        out = json.dumps(comments)
        if jq is not None and shutil.which("jq"):
            jq = subprocess.run(["jq", "-r", jq], input=out, text=True, capture_output=True)
            assert jq.returncode == 0, jq.stderr
            out = jq.stdout
        elif jq is not None:  # no jq here: what the recipe's expression selects
            bot = "github-actions[bot]"
            ours = [c for c in comments if c["user"]["login"] == bot and c["body"].startswith(
                {marker!r})]
            out = "".join(f"{{c['id']}}\\n" for c in ours)
        sys.stdout.write(out)
state.write_text(json.dumps(comments))
"""

# Comments on the pull request before the first run: someone quoting the marker, and another
# workflow's comment. Neither is ever edited.
OTHER_COMMENTS = [
    {"id": 1, "user": {"login": "a-reviewer"}, "body": f"why does {MARKER} start the comment?"},
    {"id": 2, "user": {"login": "github-actions[bot]"}, "body": "coverage: 91%"},
]


@pytest.fixture(scope="module")
def javascript_items(tmp_path_factory) -> Path:
    """The JavaScript test-data items as an items directory of their own, built."""
    root = tmp_path_factory.mktemp("javascript-only") / "items"
    shutil.copytree(ROOT / "tests" / "data" / "js_items", root)
    cache = ["--cache-dir", str(root.parent / "build-cache")]
    assert cli.main(["build", str(root), "-j", "1", *cache]) == 0
    return root


def _expand(text: str) -> str:
    return re.sub(r"\$\{\{\s*([\w.]+)\s*\}\}", lambda m: EXPRESSIONS[m.group(1)], str(text))


def _run(script: str, where: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """One ``run:`` (or a ``script:`` line) as the runner runs it: ``bash -e``."""
    return subprocess.run(
        ["bash", "-e", "-c", script], cwd=where, env=env, capture_output=True, text=True
    )


@pytest.mark.parametrize("variant", ["bundled", "python-only", "javascript-only"])
def test_the_recipe_runs_literally_on_any_items_directory(tmp_path, variant, request):
    """The documented first baseline, then the GitHub job's shell steps (twice: a second push)
    and GitLab's, on the bundled benchmark (both pools), a Python-only items directory and a
    JavaScript-only one: every step exits 0, the step summary and the one pull-request comment
    open with every pool's verdict, and the comment is edited in place. Then (bundled and
    Python-only) one item is added and the gate step decides against the baseline re-ranked on
    the new pool, with no baseline re-run."""
    ini = (RECIPES / "pyproject-snippet.toml").read_text().replace("minilm", "bm25")
    pools = ["bm25", "go/bm25", "javascript/bm25"]
    if variant != "bundled":
        source = (
            ROOT / "tests" / "data" / "items"
            if variant == "python-only"
            else request.getfixturevalue("javascript_items")
        )
        shutil.copytree(source, tmp_path / "items", ignore=shutil.ignore_patterns("build-cache"))
        # a handful of queries cannot detect a 0.10 drop: harm mode with the power check off
        # (this test is about the recipe running; a baseline run must ignore this gate option)
        ini = re.sub(r"^execretrieval_margin .*\n", "", ini, flags=re.M)
        ini += 'execretrieval_items = "items"\nexecretrieval_max_detectable = "1"\n'
        pools = ["bm25"]
    (tmp_path / "pyproject.toml").write_text(ini)
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    gh = bin_dir / "gh"
    gh.write_text(FAKE_GH.format(python=sys.executable, repo=REPO, pr=PR, marker=MARKER))
    gh.chmod(0o755)
    (bin_dir / "comments.json").write_text(json.dumps(OTHER_COMMENTS))
    (tmp_path / "runner-temp").mkdir()
    yaml = YAML(typ="safe").load((RECIPES / "github-actions.yml").read_text())
    [job] = yaml["jobs"].values()
    env = {
        **os.environ,
        **{k: _expand(v) for k, v in job.get("env", {}).items()},
        "PATH": f"{bin_dir}{os.pathsep}{BIN}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_STEP_SUMMARY": str(tmp_path / "step-summary.md"),
        "GITHUB_REPOSITORY": REPO,
        "RUNNER_TEMP": str(tmp_path / "runner-temp"),
    }

    # the first baseline, the documented way (with the ini's gate in place)
    baseline = re.search(r"^(execretrieval baseline .*)$", DOC, re.M)
    assert baseline is not None
    made = _run(baseline.group(1).replace("minilm", "bm25"), tmp_path, env)
    assert made.returncode == 0, made.stdout + made.stderr
    last = made.stdout.strip().splitlines()[-1]
    assert last.startswith("baseline written: benchmarks/bm25.json"), made.stdout
    assert "exit 0" in last and "exit 1" not in made.stdout
    for pool in pools:
        assert (tmp_path / "benchmarks" / f"{pool}.json").is_file()

    # the GitHub job's shell steps, as written (the install is this environment's)
    steps = [s for s in job["steps"] if "run" in s and "pip install" not in s["run"]]
    gitlab, github = (recipe_commands((RECIPES / n).read_text()) for n in sorted(SCHEMAS))
    assert gitlab == github and len(github) == 1
    assert [s["run"] for s in steps][0] == github[0]
    comments = bin_dir / "comments.json"
    for push in (1, 2):  # a second push: its reports (the same here) summarised again
        for step in steps if push == 1 else steps[1:]:
            step_env = env | {k: _expand(v) for k, v in step.get("env", {}).items()}
            ran = _run(step["run"].replace("gemini-2", "bm25"), tmp_path, step_env)
            assert ran.returncode == 0, (push, step["run"], ran.stdout + ran.stderr)
        ours = [c for c in json.loads(comments.read_text()) if c not in OTHER_COMMENTS]
        assert len(ours) == 1, ours  # the second push edited the first push's comment
        assert [c["id"] for c in ours] == [3]
    summary = (tmp_path / "step-summary.md").read_text()
    assert summary.count(MARKER) == 2  # one per push
    for text in (summary.split(MARKER)[1], ours[0]["body"]):
        head = text.split("<details>")[0]  # every pool's verdict before any pool's details
        assert [re.search(r"`gate\[(.*?)\]`", line).group(1) for line in _verdicts(head)] == pools
        assert all(line.startswith("- **PASS** ") for line in _verdicts(head))
        assert text.count("<details>") == len(pools)
    assert json.loads(comments.read_text())[:2] == OTHER_COMMENTS

    # GitLab's after_script, and the junit files its test report reads
    lab = YAML(typ="safe").load((RECIPES / "gitlab-ci.yml").read_text())["embedding-gate"]
    for line in lab["after_script"]:
        ran = _run(line, tmp_path, env)
        assert ran.returncode == 0, ran.stderr
        assert [v.split("`")[1] for v in _verdicts(ran.stdout)] == [f"gate[{p}]" for p in pools]
    found = glob.glob(lab["artifacts"]["reports"]["junit"], root_dir=tmp_path, recursive=True)
    assert sorted(found) == [f"reports/{p}.xml" for p in pools]
    cases = [
        case.get("name")
        for path in found
        for case in ET.parse(tmp_path / path).iter("testcase")
        if case.get("name", "").startswith("gate[")
    ]
    assert sorted(cases) == [f"gate[{p}]" for p in pools]

    if variant == "javascript-only":
        return
    # one item added: the gate step decides against the baseline re-ranked on the new pool,
    # with no baseline re-run (the bundled variant: a copy of the bundled items, in the ini)
    from test_baseline_refresh import add_item

    if variant == "bundled":
        shutil.copytree(bundled_items_dir(), tmp_path / "items")
        with (tmp_path / "pyproject.toml").open("a") as ini_file:
            ini_file.write('execretrieval_items = "items"\n')
    n_queries = len(json.loads((tmp_path / "reports" / "bm25.json").read_text())["per_query"])
    add_item(tmp_path / "items")
    ran = _run(steps[0]["run"].replace("gemini-2", "bm25"), tmp_path, env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "baseline bm25: re-ranked on this pool" in ran.stdout
    report = json.loads((tmp_path / "reports" / "bm25.json").read_text())
    assert report["gate"]["n_queries"] == n_queries + 1 and report["gate"]["passed"]


def _verdicts(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("- ") and "`gate[" in line]
