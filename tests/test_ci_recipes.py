"""The CI recipes in ``examples/ci/``: valid for their CI (check-jsonschema's vendored schemas,
no network), pinned to this release, included verbatim in ``docs/ci.md``, and their commands,
run literally (bm25 for the hosted model), gate the bundled benchmark against a baseline made
the documented way."""

from __future__ import annotations

import glob
import re
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

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
    assert "reports/javascript/summary.md" in text


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


def test_the_recipe_gates_the_bundled_benchmark_against_its_documented_baseline(tmp_path):
    ini = (RECIPES / "pyproject-snippet.toml").read_text().replace("minilm", "bm25")
    (tmp_path / "pyproject.toml").write_text(ini)
    baseline = re.search(r"^(execretrieval baseline .*)$", DOC, re.M)
    assert baseline is not None
    make = baseline.group(1).replace("minilm", "bm25").split()
    env_bin = [str(BIN / make[0]), *make[1:]]
    assert subprocess.run(env_bin, cwd=tmp_path).returncode == 0
    assert (tmp_path / "benchmarks/bm25.json").is_file()
    assert (tmp_path / "benchmarks/javascript/bm25.json").is_file()
    gitlab, github = (recipe_commands((RECIPES / n).read_text()) for n in sorted(SCHEMAS))
    assert gitlab == github and len(github) == 1
    command = github[0].replace("gemini-2", "bm25").split()
    gate = subprocess.run([str(BIN / command[0]), *command[1:]], cwd=tmp_path)
    assert gate.returncode == 0
    junit_glob = re.search(r"junit: (\S+)", (RECIPES / "gitlab-ci.yml").read_text())
    assert junit_glob is not None
    found = glob.glob(junit_glob.group(1), root_dir=tmp_path, recursive=True)
    assert sorted(found) == ["reports/bm25.xml", "reports/javascript/bm25.xml"]
    cases = [
        case.get("name")
        for path in found
        for case in ET.parse(tmp_path / path).iter("testcase")
        if case.get("name", "").startswith("gate[")
    ]
    assert sorted(cases) == ["gate[bm25]", "gate[javascript/bm25]"]
