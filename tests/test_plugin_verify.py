"""`pytest --execretrieval-verify` / `execretrieval verify`: the gates, with and without xdist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path


def outcomes(result) -> dict[str, str]:
    """nodeid -> outcome from `-rA` short summary lines."""
    found = {}
    for line in result.outlines:
        m = re.match(r"(PASSED|FAILED|ERROR) (\S+)", line)
        if m:
            found[m.group(2)] = m.group(1)
    return found


def verify(pytester, items: Path, *args: str):
    return pytester.runpytest_subprocess(
        "--execretrieval-verify",
        "--execretrieval-items",
        str(items),
        "-rA",
        "-p",
        "no:randomly",
        *args,
    )


def test_verification_passes_and_names_items_readably(pytester, items):
    result = verify(pytester, items)
    assert result.ret == 0, result.stdout.str()
    found = outcomes(result)
    assert found["strings/count_vowels::canonical"] == "PASSED"
    assert found["strings/count_vowels::alternative[0]"] == "PASSED"
    assert any(n.startswith("arrays_lists/window_sums::distractor[") for n in found)
    assert "name-collision" in " ".join(found)
    assert "corpus-freshness" in " ".join(found)
    assert set(found.values()) == {"PASSED"}


def test_same_outcomes_with_and_without_xdist(pytester, items):
    serial = outcomes(verify(pytester, items, "-n", "0"))
    parallel = outcomes(verify(pytester, items, "-n", "2"))
    assert serial and serial == parallel


def test_broken_canonical_fails_with_a_readable_message(pytester, items):
    path = items / "strings" / "count_vowels.toml"
    path.write_text(path.read_text().replace('in "aeiou"', 'in "aeio"'))
    result = verify(pytester, items)
    assert result.ret == 1
    out = result.stdout.str()
    assert "strings/count_vowels: canonical must pass every test but does not" in out
    assert "assert count_vowels('AEIOU') == 5\n      -> fail: returned 4" in out
    assert "corpus is stale" in out and "item strings/count_vowels changed" in out
    found = outcomes(result)
    assert found["arrays_lists/window_sums::canonical"] == "PASSED"  # the rest still runs


def test_each_case_gets_its_own_result_when_the_one_before_is_rerun(pytester, items):
    # A case's suite starts the next case's; a rerun (pytest-rerunfailures) asks for its own
    # suite again in between, and every case still gets its own result.
    path = items / "strings" / "count_vowels.toml"
    path.write_text(path.read_text().replace('in "aeiou"', 'in "aeio"'))
    plain = outcomes(verify(pytester, items, "-n", "0"))
    rerun = verify(pytester, items, "-n", "0", "--reruns", "1")
    assert rerun.ret == 1
    assert "3 failed" in rerun.stdout.str() and "3 rerun" in rerun.stdout.str()
    assert outcomes(rerun) == plain
    assert plain["strings/count_vowels::canonical"] == "FAILED"
    assert plain["arrays_lists/window_sums::canonical"] == "PASSED"
    assert list(plain.values()).count("FAILED") == 3  # both count_vowels cases and freshness


def test_distractor_that_passes_is_reported(pytester, items):
    # Rewrite the corpus so a "distractor" row carries the canonical's behaviour.
    import json

    corpus = items / "corpus.jsonl"
    rows = [json.loads(line) for line in corpus.read_text().splitlines()]
    victim = next(r for r in rows if r["kind"] == "distractor")
    canonical = next(
        r for r in rows if r["kind"] == "canonical" and r["query_id"] == victim["query_id"]
    )
    victim["code"] = canonical["code"] + "\n"
    from pytest_execretrieval.corpus.store import sha256

    victim["snippet_id"] = sha256(victim["code"])
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = verify(pytester, items)
    assert result.ret == 1
    assert "passes every test, so it is not a distractor" in result.stdout.str()
    assert "corpus.jsonl differs from the manifest" in result.stdout.str()


def test_name_collision_gate(pytester, items):
    twin = items / "strings" / "count_vowels_again.toml"
    twin.write_text((items / "strings" / "count_vowels.toml").read_text())
    result = verify(pytester, items)
    assert result.ret == 1
    assert (
        "strings/count_vowels's canonical passes every test of strings/count_vowels_again"
        in result.stdout.str()
    )


def test_malformed_item_is_one_collection_error(pytester, items):
    (items / "strings" / "bad.toml").write_text('domain = "strings"\nquery = 3\n')
    result = verify(pytester, items)
    out = result.stdout.str()
    assert "bad.toml: query: must be a str, got int" in out
    assert outcomes(result)["strings/count_vowels::canonical"] == "PASSED"
    assert result.ret != 0


def test_cli_verify_wraps_pytest(items):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_execretrieval.cli",
            "verify",
            str(items),
            "-n",
            "2",
            "-q",
            "-p",
            "no:randomly",
        ],
        cwd=items.parent,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout
    assert "passed" in done.stdout


def test_changed_items_follow_the_reasons_records_not_their_wording(pytester, items, monkeypatch):
    from dataclasses import replace

    from pytest_execretrieval import orchestration

    def reworded(*args, **kwargs):
        return [replace(r, message=f"reworded {r.kind}") for r in stale_reasons(*args, **kwargs)]

    stale_reasons = orchestration.stale_reasons
    monkeypatch.setattr(orchestration, "stale_reasons", reworded)
    path = items / "strings" / "count_vowels.toml"
    path.write_text(path.read_text().replace("Count the vowels", "Count vowels"))
    result = pytester.runpytest_inprocess(
        "--execretrieval-verify",
        "--execretrieval-items",
        str(items),
        "-rA",
        "-p",
        "no:randomly",
        "-n",
        "0",
        "-p",
        "no:cacheprovider",
    )
    found = outcomes(result)
    assert "reworded item-changed" in result.stdout.str()
    assert found["strings/count_vowels::canonical"] == "PASSED"
    assert not [n for n in found if n.startswith("strings/count_vowels::distractor")]
    assert any(n.startswith("arrays_lists/window_sums::distractor[") for n in found)
    assert [n for n, o in found.items() if o == "FAILED"] == ["items::corpus-freshness"]
