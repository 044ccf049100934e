"""xdist workers that share no path with their controller: everything they need arrives in
``workerinput`` (the loaded items and corpus, the runs), their counts come back in
``workeroutput``, and the reports are the ones ``-n 0`` writes.

The workers run in a directory of their own (``--tx popen//chdir=DIR``), on their own copy of
the items (``--rsyncdir``), with a relative ``--execretrieval-cache-dir``: a file the controller
wrote in its cache or its items directory is not where a worker would look for it, as on a
remote worker (``--tx ssh=...``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

TIMING = ("elapsed_s", "created_at")


def without_timing(path: Path) -> dict:
    data = json.loads(path.read_text())
    for key in TIMING:
        data.pop(key)
    return data


def elsewhere(tmp_path_factory, items: Path) -> list[str]:
    """Two workers started in another directory, with a copy of the items of their own there
    (xdist rsyncs it, and passes them the copy's path)."""
    return [
        "--dist",
        "load",
        "--tx",
        f"2*popen//chdir={tmp_path_factory.mktemp('workers')}",
        "--rsyncdir",
        str(items),
    ]


def executed(result) -> int:
    """The count of the closing line ``sandbox: N suites executed (...)``."""
    found = re.findall(r"sandbox: (\d+) suites? executed", result.stdout.str())
    assert len(found) == 1, result.stdout.str()
    return int(found[0])


def test_benchmark_workers_elsewhere_write_the_reports_of_one_process(
    pytester, items, tmp_path_factory
):
    args = [
        "--embedder",
        "bm25",
        "--execretrieval-items",
        str(items),
        "-p",
        "no:randomly",
        "--execretrieval-cache-dir=cache",
        "-v",
    ]
    serial = pytester.runpytest_subprocess(*args, "-n", "0", "--execretrieval-report-dir=n0")
    assert serial.ret == 1 and executed(serial) > 0  # the rank-1 suites the messages show
    workers = elsewhere(tmp_path_factory, items)
    cold = pytester.runpytest_subprocess(*args, *workers, "--execretrieval-report-dir=tx")
    assert cold.ret == 1, cold.stdout.str()
    assert "[gw1]" in cold.stdout.str()  # the items ran on the workers
    assert without_timing(pytester.path / "n0" / "bm25.json") == without_timing(
        pytester.path / "tx" / "bm25.json"
    )
    values = "assert last_index_of([1], 1) == 0  ->  fail: returned -1"
    assert values in serial.stdout.str() and values in cold.stdout.str()
    # The workers' outcome cache is their own (relative to their directory): they ran the
    # rank-1 suites for the values, and said so through workeroutput. Warm: nothing runs.
    assert executed(cold) > 0
    warm = pytester.runpytest_subprocess(*args, *workers)
    assert warm.ret == 1 and executed(warm) == 0
    assert values in warm.stdout.str()


def test_verification_workers_elsewhere_give_the_outcomes_of_one_process(
    pytester, items, tmp_path_factory
):
    def outcomes(result) -> dict[str, str]:
        return {
            n: o for o, n in re.findall(r"^(PASSED|FAILED|ERROR) (\S+)", result.stdout.str(), re.M)
        }

    # A changed item: the freshness gate fails and the item's recorded distractors are left
    # out, which the workers learn from their controller.
    path = items / "strings" / "count_vowels.toml"
    path.write_text(path.read_text().replace("Count the vowels", "Count vowels"))
    args = [
        "--execretrieval-verify",
        "--execretrieval-items",
        str(items),
        "-rA",
        "-p",
        "no:randomly",
    ]
    serial = pytester.runpytest_subprocess(*args, "-n", "0")
    remote = pytester.runpytest_subprocess(*args, *elsewhere(tmp_path_factory, items))
    assert serial.ret == remote.ret == 1, remote.stdout.str()
    found = outcomes(remote)
    assert found == outcomes(serial) and len(found) > 10
    assert [o for n, o in found.items() if "corpus-freshness" in n] == ["FAILED"]
    assert not [n for n in found if n.startswith("strings/count_vowels::distractor")]
    assert any(n.startswith("arrays_lists/window_sums::distractor[") for n in found)
