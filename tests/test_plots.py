"""Tests for pytest_execretrieval.reporting.plots: ``execretrieval report DIR``."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from pytest_execretrieval.cli import main
from pytest_execretrieval.reporting.plots import (
    DECEPTION_PNG,
    DENSITY_PNG,
    EXEC_AT_K_PNG,
    SUMMARY_MD,
    deception_figure,
    similarity_notes,
    similarity_png,
)
from pytest_execretrieval.scoring.metrics import (
    METRIC_NAMES,
    mean_metrics,
    metric_matrix,
    query_metrics,
)


def main_report(argv: list[str]) -> int:
    return main(["report", *argv])


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SHA = "cd" * 32
OPS = ("off_by_one", "wrong_comparison", "swap_min_max")


def make_report(name: str, shift: int, similarity: bool, sha: str = SHA) -> dict:
    """12 queries; query i has own distractors of OPS[:1 + i % 3], the first ranked first
    when ``(i + shift) % 3 == 0``; with ``similarity`` items carry code_similarity data."""
    per_query = []
    for i in range(12):
        qid = f"q{i:02d}"
        own = [
            {
                "snippet_id": f"{qid}-d{j}",
                "operator": op,
                "score": 0.6 + 0.1 * ((i + j) % 4),
                "edit_lines": 1,
                "edit_chars": 1 + 3 * j + i % 5,
                "kill": "assertion",
            }
            for j, op in enumerate(OPS[: 1 + i % 3])
        ]
        canonical = {
            "snippet_id": f"{qid}-c",
            "kind": "canonical",
            "operator": None,
            "query_id": qid,
            "score": 0.75,
            "passes": True,
        }
        distractors = [
            {
                "snippet_id": d["snippet_id"],
                "kind": "distractor",
                "operator": d["operator"],
                "query_id": qid,
                "score": d["score"],
                "passes": False,
            }
            for d in own
        ]
        others = [
            {
                "snippet_id": f"x{k}",
                "kind": "canonical",
                "operator": None,
                "query_id": "x",
                "score": 0.3 - k / 100,
                "passes": False,
            }
            for k in range(10)
        ]
        first = [distractors[0], canonical] if (i + shift) % 3 == 0 else [canonical, distractors[0]]
        ranked = (first + distractors[1:] + others)[:10]
        top = [dict(h, rank=r) for r, h in enumerate(ranked, 1)]
        sim = {
            "alternatives": [0.8 + 0.01 * i, 0.7],
            "distractors": [0.75 + 0.02 * j for j in range(len(own))],
        }
        per_query.append(
            {
                "query_id": qid,
                "domain": "math" if i % 2 else "text",
                "passed": top[0]["passes"],
                "canonical_rank": 1 + (top[0] is not canonical),
                "canonical_score": 0.75,
                "top": top,
                "own_distractors": own,
                "code_similarity": sim if similarity else {"alternatives": [], "distractors": []},
            }
        )
    rows = [query_metrics([h["passes"] for h in q["top"]], q["canonical_rank"]) for q in per_query]
    metrics = mean_metrics(metric_matrix(rows))
    return {
        "schema_version": 1,
        "embedder": {"name": name, "similarity": "cosine"},
        "corpus": {"sha256": sha, "n_queries": 12, "n_snippets": 60},
        "tie_policy": "score desc, then snippet_id asc",
        "metrics": metrics,
        "ci95": {m: [max(0.0, metrics[m] - 0.1), min(1.0, metrics[m] + 0.1)] for m in METRIC_NAMES},
        "per_query": per_query,
    }


def _populate(directory: Path) -> None:
    (directory / "hf_mini.json").write_text(json.dumps(make_report("hf:mini", 0, True)))
    (directory / "bm25.json").write_text(json.dumps(make_report("bm25", 1, False)))
    (directory / "manifest.json").write_text(json.dumps({"items": 3}))
    (directory / "notes.txt").write_text("not a report")


def test_report_writes_pngs_and_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _populate(tmp_path)
    assert main_report([str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "skipping" in captured.err and "manifest.json" in captured.err
    images = [EXEC_AT_K_PNG, DECEPTION_PNG, DENSITY_PNG, similarity_png("hf:mini")]
    assert similarity_png("hf:mini") == "similarity_hf_mini.png"
    for name in images:
        assert (tmp_path / name).read_bytes().startswith(PNG_SIGNATURE), name
    assert not (tmp_path / similarity_png("bm25")).exists()  # no code_similarity data
    assert sorted(p.name for p in tmp_path.glob("*.png")) == sorted(images)

    # the missing histogram is explained, in the output and in summary.md
    why = "no similarity histogram for bm25: the report lacks code-similarity data; run with "
    assert why + "--execretrieval-code-similarity" in captured.out
    summary = (tmp_path / SUMMARY_MD).read_text()
    assert "N" + why[1:] + "--execretrieval-code-similarity." in summary
    assert set(re.findall(r"!\[[^\]]*\]\(([^)]+)\)", summary)) == set(images)
    assert "| exec@1" in summary and "### hf:mini - bm25" in summary
    assert "## Analyses highlights" in summary and "| bm25 |" in summary

    # deterministic: a second run writes the same files, byte for byte
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert main_report([str(tmp_path)]) == 0
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_missing_matplotlib(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _populate(tmp_path)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    assert main_report([str(tmp_path)]) == 2
    assert "pip install 'pytest-execretrieval[plots]'" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.png"))


def test_no_reports_or_mismatch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main_report([str(tmp_path / "absent")]) == 2
    assert "not a directory" in capsys.readouterr().err
    assert main_report([str(tmp_path)]) == 2
    assert "no schema_version 1 report" in capsys.readouterr().err
    (tmp_path / "a.json").write_text(json.dumps(make_report("a", 0, True)))
    (tmp_path / "b.json").write_text(json.dumps(make_report("b", 0, True, sha="ef" * 32)))
    assert main_report([str(tmp_path)]) == 2
    assert "different corpora" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.png")) and not (tmp_path / SUMMARY_MD).exists()


def test_without_similarity_data_the_report_says_why_there_are_no_histograms(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.json").write_text(json.dumps(make_report("a", 0, False)))
    (tmp_path / "b.json").write_text(json.dumps(make_report("b", 1, False)))
    assert main_report([str(tmp_path)]) == 0
    why = (
        "no similarity histograms: the reports lack code-similarity data; run with "
        "--execretrieval-code-similarity"
    )
    assert why in capsys.readouterr().out
    assert not list(tmp_path.glob("similarity_*.png"))
    assert "N" + why[1:] + "." in (tmp_path / SUMMARY_MD).read_text()


def test_similarity_notes_name_the_reason_per_model() -> None:
    with_data = make_report("dense", 0, True)
    assert similarity_notes([with_data]) == []
    lexical = make_report("bm25", 0, False)
    lexical["embedder"]["similarity"] = "bm25"
    no_alternatives = make_report("mini", 0, True)
    for q in no_alternatives["per_query"]:
        q["code_similarity"]["alternatives"] = []
    assert similarity_notes([with_data, lexical, no_alternatives]) == [
        "no similarity histogram for bm25: a lexical scorer compares no code with code",
        "no similarity histogram for mini: no item of the corpus has both an alternative and a "
        "distractor",
    ]


def test_deception_bars_show_how_many_pairs_stand_behind_each() -> None:
    from pytest_execretrieval.scoring.analyses import deception

    reports = [make_report("a", 0, True), make_report("b", 1, True)]
    analyses = [{"deception": deception(r)} for r in reports]
    ax = deception_figure(["a", "b"], analyses).axes[0]
    labels = [t.get_text() for t in ax.texts]
    # 12 queries: off_by_one in all 12, wrong_comparison in 8, swap_min_max in 4; 24 overall
    assert labels == ["n=12", "n=8", "n=4", "n=24"] * 2
    assert [round(b.get_height(), 3) for b in ax.patches[:4]] == [
        round(analyses[0]["deception"]["by_operator"][c]["pair_rate"], 3)
        for c in ("off_by_one", "wrong_comparison", "swap_min_max")
    ] + [round(analyses[0]["deception"]["overall"]["pair_rate"], 3)]
