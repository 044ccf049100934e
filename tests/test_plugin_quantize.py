"""``--execretrieval-quantize`` and ``--execretrieval-dims`` through the plugin: each makes a
pipeline of its own per dense embedder, with its items, report, cost section, junit and gate;
a lexical scorer alone is refused."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np  # imported at collection: pytester's module snapshot must not drop numpy
import pytest
from plugin_runs import bench, without_timing

from pytest_execretrieval.corpus.items import load_items
from pytest_execretrieval.corpus.store import read_corpus
from pytest_execretrieval.embedders.npz import write_npz

pytest.importorskip("sentence_transformers")

DIMS = 384  # MiniLM's width: --execretrieval-dims 128 truncates it


def make_npz(pytester, items: Path) -> Path:
    """Frozen random matrices of MiniLM's width for the data items (no model needed)."""
    corpus = read_corpus(items)
    snippets = [*corpus.snippets, *corpus.alternatives]
    qs, _ = load_items(items)
    rng = np.random.default_rng(7)
    path = pytester.path / "wide.npz"
    write_npz(
        path,
        {"name": "random", "model": "random", "dim": DIMS},
        {
            "query": ([q.id for q in qs], rng.normal(size=(len(qs), DIMS))),
            "document": ([s.snippet_id for s in snippets], rng.normal(size=(len(snippets), DIMS))),
        },
    )
    return path


def _reports(directory: Path) -> dict[str, tuple[str, dict]]:
    """By embedder name: (file stem, report)."""
    out = {}
    for p in directory.glob("*.json"):
        data = json.loads(p.read_text())
        if "embedder" in data:
            out[data["embedder"]["name"]] = (p.stem, data)
    return out


def test_quantised_pipelines_get_items_reports_cost_junit_and_gate(pytester, items):
    npz = "npz:" + str(make_npz(pytester, items))
    args = (
        "--execretrieval-quantize",
        "binary",
        "--execretrieval-dims",
        "128",
        "--execretrieval-report-dir=reports",
    )
    result = bench(pytester, items, *args, embedders=("bm25", npz))
    out = result.stdout.str()
    assert result.ret in (0, 1), out
    binary, truncated = f"{npz}~binary", f"{npz}~d128"
    for name in (binary, truncated):
        assert f"strings/count_vowels[{name}]" in out
        assert f"quantize [{name}]: recall of the float32 top 10" in out
    assert "bm25~" not in out  # a lexical scorer has no vectors: no quantised pipeline
    reports = _reports(pytester.path / "reports")
    assert set(reports) == {"bm25", npz, binary, truncated}
    exact = reports[npz][1]
    for name, record in ((binary, "binary"), (truncated, "float32")):
        stem, report = reports[name]
        assert report["first_stage"] == npz
        assert report["embedder"]["quantize"]["precision"] == record
        assert report["embedder"]["model"] == exact["embedder"]["model"]
        cost = report["quantize"]
        assert cost["n"] == len(exact["per_query"]) and 0 <= cost["recall@10"] <= 1
        assert set(cost["exec@1"]) == {"before", "after", "difference", "p", "test"}
        assert cost["exec@1"]["before"] == pytest.approx(exact["metrics"]["exec@1"])
        assert cost["by_operator"] and "lift" in report
        suite = ET.parse(pytester.path / "reports" / f"{stem}.xml").getroot().find("testsuite")
        assert suite is not None and suite.get("name") == name
    assert reports[truncated][1]["embedder"]["quantize"]["dims"] == 128
    summary = (pytester.path / "reports" / "summary.md").read_text()
    assert "Embedding quantisation: what it costs against the float32 vectors" in summary

    # Deterministic: the same run again writes the same reports.
    again = bench(pytester, items, *args, "--execretrieval-report-dir=again", embedders=(npz,))
    stem = reports[binary][0]
    assert without_timing(pytester.path / "reports" / f"{stem}.json") == without_timing(
        pytester.path / "again" / f"{stem}.json"
    ), again.stdout.str()

    baseline = pytester.path / "baseline.json"
    baseline.write_text((pytester.path / "reports" / f"{reports[npz][0]}.json").read_text())
    gated = bench(
        pytester,
        items,
        *args,
        "--execretrieval-max-detectable=1",
        f"--execretrieval-baseline={baseline}",
        embedders=(npz,),
    )
    text = gated.stdout.str()
    for name in (npz, binary, truncated):
        assert f"gate [{name}]:" in text, text


def test_quantisation_needs_a_dense_embedder_and_good_values(pytester, items):
    lexical = bench(pytester, items, "--execretrieval-quantize", "int8")  # bm25 only
    assert lexical.ret == 4
    assert "bm25 is a lexical scorer" in lexical.stderr.str() + lexical.stdout.str()
    bad = bench(pytester, items, "--execretrieval-quantize", "int4")
    assert bad.ret == 4
    assert "'int4' is not a precision" in bad.stderr.str() + bad.stdout.str()
    zero = bench(pytester, items, "--execretrieval-dims", "0")
    assert zero.ret == 4 and "--execretrieval-dims: '0'" in zero.stderr.str()


def test_a_backend_is_a_pipeline_with_its_cost_against_torch(pytester, items):
    pytest.importorskip("onnxruntime")
    args = ("--execretrieval-backend", "onnx", "--execretrieval-report-dir=reports")
    result = bench(pytester, items, *args, embedders=("bm25", "minilm"))
    out = result.stdout.str()
    assert result.ret in (0, 1), out + result.stderr.str()
    assert "strings/count_vowels[minilm+onnx]" in out and "bm25+onnx" not in out
    reports = _reports(pytester.path / "reports")
    assert set(reports) == {"bm25", "minilm", "minilm+onnx"}
    served = reports["minilm+onnx"][1]
    assert served["first_stage"] == "minilm"
    assert served["embedder"]["backend"] == "onnx" and served["embedder"]["model_file_sha256"]
    assert served["backend"]["n"] == len(reports["minilm"][1]["per_query"])
    assert "backend [minilm+onnx]: recall of the float32 top 10" in out
    only_lexical = bench(pytester, items, *args)  # bm25 only
    assert only_lexical.ret == 4
    assert "no --embedder is a local sentence-transformers model" in only_lexical.stderr.str()
