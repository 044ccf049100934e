"""Small sets can be decided: ``execretrieval power --queries N`` and the UNDERPOWERED reason say
which gate decides at a team's size (the non-inferiority margin reachable, or the queries a harm
gate needs)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plugin_runs import bench

from pytest_execretrieval.scoring.gate import POWER, power_at, reachable_margin
from pytest_execretrieval.scoring.stats import queries_needed


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=3000),
    discordant=st.floats(min_value=0.0, max_value=1.0),
    alpha=st.sampled_from([0.01, 0.05, 0.1]),
)
def test_the_reachable_margin_is_the_smallest_that_decides(n, discordant, alpha):
    """A non-inferiority gate is UNDERPOWERED unless it detects twice its margin: at the
    reachable margin it is not (rounded up to 3 decimals, as the message prints it), a little
    below it is."""
    margin = reachable_margin(n, discordant, alpha)
    if margin is None:
        assert queries_needed(n, discordant, alpha, 1.0, POWER, two_sided=False) is not None
        return
    shown = math.ceil(margin * 1000 - 1e-9) / 1000
    if 2 * shown <= 1:
        assert queries_needed(n, discordant, alpha, 2 * shown, POWER, two_sided=False) is None
    below = 2 * margin * 0.97
    if below > 0:
        assert queries_needed(n, discordant, alpha, below, POWER, two_sided=False) is not None


@settings(max_examples=100, deadline=None)
@given(n=st.integers(min_value=2, max_value=2000), discordant=st.floats(0.01, 1.0))
def test_more_queries_never_decide_less(n, discordant):
    fewer, more = power_at(n - 1, discordant), power_at(n, discordant)
    for attr in ("harm_detectable", "margin"):
        a, b = getattr(fewer, attr), getattr(more, attr)
        assert a is None or (b is not None and b <= a + 1e-12)
    assert (more.harm_needed is None) or (fewer.harm_needed is not None)


def test_a_harm_gate_needs_what_queries_needed_says():
    row = power_at(60, 0.2, alpha=0.05, metrics=3, max_detectable=0.10)
    assert row.harm_needed == queries_needed(60, 0.2, 0.05 / 3, 0.10, POWER)
    assert row.harm_needed and row.harm_needed > 60 and row.margin and row.margin < 0.10
    assert power_at(5000, 0.2).harm_needed is None
    with pytest.raises(ValueError, match="discordant share"):
        power_at(10, 1.5)


def test_the_power_command_prints_one_line_per_size():
    done = subprocess.run(
        [sys.executable, "-m", "pytest_execretrieval.cli", "power", "--queries", "20",
         "--queries", "1000"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("gates at alpha 0.05 with 80% power, 3 gated metrics")
    assert lines[1].startswith("  20 queries: harm gate: smallest detectable drop")
    assert "UNDERPOWERED for a drop of 0.1 (needs" in lines[1]
    assert "non-inferiority decides from --execretrieval-margin=0." in lines[1]
    assert "decides (a drop of 0.1 is detected)" in lines[2]


def test_an_underpowered_gate_names_the_margin_that_decides(pytester, items):
    """At 4 queries no gate decides, and the reason says so; at 40 (the same report's rows,
    repeated) a non-inferiority margin does, and the reason names it, and it decides."""
    from pytest_execretrieval.reporting.gate_text import reason
    from pytest_execretrieval.scoring.gate import gate_decision

    bench(pytester, items, "--execretrieval-report-dir=base")
    gated = bench(
        pytester,
        items,
        "--execretrieval-baseline=base/bm25.json",
        "--execretrieval-report-dir=new",
    )
    assert gated.ret == 7  # UNDERPOWERED: 4 queries
    gated.stdout.fnmatch_lines(
        ["*UNDERPOWERED*; no non-inferiority margin decides at 4 queries either: add items"]
    )
    report = json.loads((pytester.path / "base" / "bm25.json").read_text())
    report["per_query"] = [
        {**row, "query_id": f"{row['query_id']}_{copy}"}
        for copy in range(10)
        for row in report["per_query"]
    ]
    harm = gate_decision(report, report, 0.05)
    assert harm.decision == "UNDERPOWERED" and harm.n_queries == 40
    margin = max(v.reachable_margin for v in harm.verdicts.values())
    assert "at 40 queries a non-inferiority gate decides with --execretrieval-margin=" in (
        reason(harm)
    )
    shown = math.ceil(margin * 1000 - 1e-9) / 1000
    decided = gate_decision(report, report, 0.05, margin=shown)
    assert decided.decision == "PASS", reason(decided)
    assert gate_decision(report, report, 0.05, margin=shown * 0.9).decision == "UNDERPOWERED"
