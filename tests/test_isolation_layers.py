"""The sandbox's isolation layers: probed at start, reported, enforced by strict mode."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from pytest_execretrieval.execution import sandbox as sandbox_module
from pytest_execretrieval.execution.sandbox import (
    LAYERS,
    Limits,
    Sandbox,
    SandboxError,
    isolation_in_force,
)

ROOT = Path(__file__).resolve().parents[1]


def test_every_layer_is_in_force_here():
    # CI (and this project's machines) offer them all; a missing one names its reason.
    with Sandbox(Limits(timeout_s=2), isolation="strict") as sandbox:
        record = sandbox.isolation
    assert set(record["layers"]) == set(LAYERS)
    assert record["missing"] == {}, record["missing"]
    assert record["landlock_abi"] >= 1
    assert record["checker"] == "confined"


def test_seccomp_programs_are_compiled_in_a_helper_process():
    # pyseccomp imports threading and random, whose at-fork handlers every child would run.
    from pytest_execretrieval.execution import _confine

    before = set(sys.modules)
    programs = _confine.seccomp_programs()
    assert len(set(programs)) == len(_confine.ROLES) == 3  # server, child, checker
    assert all(p and len(p) % 8 == 0 for p in programs)  # struct sock_filter is 8 bytes
    assert "pyseccomp" not in set(sys.modules) - before


def test_seccomp_programs_name_the_helpers_failure(monkeypatch):
    from pytest_execretrieval.execution import _confine

    def unavailable(role: str) -> bytes:
        raise _confine.LayerUnavailable(38, "libseccomp not found (test)")

    monkeypatch.setattr(_confine, "seccomp_filter", unavailable)  # the forked helper sees it
    with pytest.raises(_confine.LayerUnavailable, match="libseccomp not found"):
        _confine.seccomp_programs()


def test_isolation_in_force_is_json_for_reports():
    record = isolation_in_force()
    assert json.loads(json.dumps(record)) == record
    assert set(record["layers"]) == set(LAYERS)


def _fake_missing(raw):
    record = real_record(raw)
    record["layers"]["seccomp"] = False
    record["missing"] = {"seccomp": "pyseccomp not installed"}
    return record


real_record = sandbox_module._isolation_record


def test_strict_refuses_to_run_without_a_layer(monkeypatch):
    monkeypatch.setattr(sandbox_module, "_isolation_record", _fake_missing)
    monkeypatch.setattr(sandbox_module, "_SEEN", [])  # keep the fake out of later reports
    with pytest.raises(SandboxError, match="strict: missing sandbox layers: seccomp: pyseccomp"):
        Sandbox(Limits(timeout_s=2), isolation="strict")


def test_best_warns_once_naming_what_is_missing(monkeypatch):
    monkeypatch.setattr(sandbox_module, "_isolation_record", _fake_missing)
    monkeypatch.setattr(sandbox_module, "_WARNED", set())
    monkeypatch.setattr(sandbox_module, "_SEEN", [])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            with Sandbox(Limits(timeout_s=2)) as sandbox:
                assert sandbox.run("def f():\n    return 1\n", "", ["assert f() == 1"]).passed
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(messages) == 1 and "seccomp (pyseccomp not installed)" in messages[0]


def test_bad_isolation_mode_is_rejected():
    with pytest.raises(ValueError, match="best"):
        Sandbox(isolation="paranoid")


def test_doctor_lists_the_layers():
    done = subprocess.run(
        [sys.executable, "-m", "pytest_execretrieval.cli", "doctor", "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    record = json.loads(done.stdout)
    assert set(record["layers"]) == set(LAYERS)
    assert done.returncode == (1 if record["missing"] else 0)
    text = subprocess.run(
        [sys.executable, "-m", "pytest_execretrieval.cli", "doctor"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    ).stdout
    for layer in LAYERS:
        assert layer in text
    assert "embedders:" in text and "bm25" in text


def test_the_pytest_option_rejects_unknown_modes():
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--execretrieval-verify",
            "--execretrieval-isolation",
            "paranoid",
            "-p",
            "no:cacheprovider",
            "--co",
            "-q",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 4, done.stdout + done.stderr  # pytest's usage error
    assert "--execretrieval-isolation" in done.stderr
