"""The user-facing docs stay true to the code: every option is documented, every relative link
resolves inside the repository, nothing points outside it."""

from __future__ import annotations

import re
from pathlib import Path

from pytest_execretrieval.corpus.build import evidence_report
from pytest_execretrieval.corpus.store import Corpus
from pytest_execretrieval.settings import OPTIONS

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_every_option_is_in_the_readme_options_table():
    rows = [line for line in (ROOT / "README.md").read_text().splitlines()
            if line.startswith("| `")]  # fmt: skip
    documented = {m.group(1) for row in rows for m in re.finditer(r"--(execretrieval-[\w-]+)", row)}
    assert "execretrieval-code-similarity" in documented
    missing = [o.name for o in OPTIONS if f"execretrieval-{o.name}" not in documented]
    assert missing == []


def test_relative_links_resolve_inside_the_repository():
    broken = []
    for doc in DOCS:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text()):
            if re.match(r"[a-z]+://", target):
                continue
            path = (doc.parent / target).resolve()
            if ROOT not in path.parents or not path.exists():
                broken.append(f"{doc.name}: {target}")
    assert broken == []


def test_no_doc_points_outside_the_repository():
    outside = [f"{doc.name}: {m.group(0)}" for doc in DOCS
               for m in re.finditer(r"\.\./shared\b|/work/\w+", doc.read_text())]  # fmt: skip
    assert outside == []


def test_missing_equivalence_evidence_is_explained():
    text = evidence_report(Corpus(snippets=(), alternatives=()))
    assert "no item's entry point is fully annotated" in text and "items-guide.md" in text
