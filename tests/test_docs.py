"""The user-facing docs stay true to the code: every option is documented, every relative link
resolves inside the repository, nothing points outside it, and the README's example ids and
figures of the bundled corpus are the bundled corpus's."""

from __future__ import annotations

import json
import re
from pathlib import Path

from pytest_execretrieval.corpus.build import evidence_report
from pytest_execretrieval.corpus.items import bundled_items_dir, item_id, item_paths, load_items
from pytest_execretrieval.corpus.store import Corpus, read_corpus
from pytest_execretrieval.settings import OPTIONS

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_every_option_is_in_the_readme_options_table():
    rows = [
        line for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("| `")
    ]
    documented = {m.group(1) for row in rows for m in re.finditer(r"--(execretrieval-[\w-]+)", row)}
    assert "execretrieval-code-similarity" in documented
    missing = [o.name for o in OPTIONS if f"execretrieval-{o.name}" not in documented]
    assert missing == []


def test_pytest_help_shows_every_option(pytester):
    """argparse %-formats help texts: an unescaped "80% power" broke ``pytest --help``."""
    result = pytester.runpytest_subprocess("--help")
    assert result.ret == 0, result.stderr.str()
    shown = result.stdout.str()
    assert "80% power" in shown
    assert [o.name for o in OPTIONS if f"--execretrieval-{o.name}" not in shown] == []


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
    outside = [
        f"{doc.name}: {m.group(0)}"
        for doc in DOCS
        for m in re.finditer(r"\.\./shared\b|/work/\w+", doc.read_text())
    ]
    assert outside == []


def test_missing_equivalence_evidence_is_explained():
    text = evidence_report(Corpus(snippets=(), alternatives=()))
    assert "no item's entry point is fully annotated" in text and "items-guide.md" in text


def readme_words() -> str:
    """The README and the docs it links, with line breaks and runs of spaces folded (figures wrap
    across lines): the README is the user's page, the figures behind it live in docs/."""
    return " ".join(" ".join(doc.read_text().split()) for doc in DOCS)


def test_readme_item_ids_are_bundled_items():
    """Every `<domain>/<stem>` the README names (an example id, a query it discusses) exists."""
    bundled = bundled_items_dir()
    ids = {item_id(p) for p in item_paths(bundled)}
    domains = sorted({i.split("/")[0] for i in ids})
    named = set(re.findall(rf"(?<![\w/<])((?:{'|'.join(domains)})/\w+)", readme_words()))
    assert len(named) >= 5  # the README's examples were found
    assert sorted(named - ids) == []
    verify_ids = re.findall(r"`(\w+/\w+)::canonical`", readme_words())
    assert verify_ids and set(verify_ids) <= ids


def test_readme_pool_figures_are_the_bundled_corpus():
    manifest = json.loads((bundled_items_dir() / "manifest.json").read_text())
    counts = manifest["counts"]
    per_domain = {d: c["canonical"] for d, c in counts["per_domain"].items()}
    sha = manifest["corpus_sha256"][:16]
    assert f"corpus `{sha}`, after the items' fifth pass" in readme_words()
    text = re.sub(r"(\d),(\d{3})\b", r"\1\2", readme_words())  # 4,997 -> 4997
    assert (
        f"pool of {counts['snippets']} snippets: {counts['queries']} canonicals + "
        f"{counts['distractors']} killed single-edit distractors"
    ) in text
    assert (
        f"Bundled set: {counts['queries']} queries, {counts['snippets']} pool snippets, "
        f"{counts['alternatives']} alternatives"
    ) in text
    small = sorted(d for d, n in per_domain.items() if n == 85)
    large = sorted(d for d, n in per_domain.items() if n == 110)
    assert len(small) + len(large) == len(per_domain)
    layout = re.search(
        r"The bundled benchmark \(`items/`, shipped in the wheel\): (\d+) items, "
        r"85 each in ([\w, ]+) and 110 each in ([\w, ]+); (\d+) alternatives; "
        r"(\d+) distractors",
        text,
    )
    assert layout, "the Layout section's figures"
    listed = [sorted(x.strip() for x in layout.group(i).split(",")) for i in (2, 3)]
    assert listed == [small, large]
    assert [int(layout.group(i)) for i in (1, 4, 5)] == [
        counts["queries"],
        counts["alternatives"],
        counts["distractors"],
    ]


def test_readme_cost_guard_figures_are_the_bundled_benchmarks(monkeypatch):
    """The cost guard's line for a cold run, computed as the session computes it (no request)."""
    from pytest_execretrieval.embedders import EmbedderOptions, get_embedder
    from pytest_execretrieval.embedders.hosted import plan_run
    from pytest_execretrieval.ranking.benchmark import document_text

    monkeypatch.setenv("GEMINI_API_KEY", "unused")
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    bundled = bundled_items_dir()
    pool = sorted(read_corpus(bundled).snippets, key=lambda s: s.snippet_id)
    items = sorted(load_items(bundled)[0], key=lambda i: i.id)
    work = [
        ("document", [document_text(s) for s in pool], [s.snippet_id for s in pool]),
        ("query", [i.query for i in items], [i.id for i in items]),
    ]
    options = EmbedderOptions(cache_dir="unused")
    gemini = plan_run(get_embedder("gemini-2", options), work, None)
    openai = plan_run(get_embedder("openai-3-small", options), work, None)
    text = readme_words()
    assert f"`{gemini.summary()}`" in text
    assert (
        f"(`openai-3-small`: {openai.requests} requests, ~{openai.estimated_tokens:,} "
        "tokens by cl100k_base)" in text
    )
    utf8 = sum(len(t.encode()) for _, texts, _ in work for t in texts)
    assert (
        f"on the bundled corpus it counts {utf8:,} where cl100k_base counts "
        f"{openai.estimated_tokens:,} tokens, {utf8 / openai.estimated_tokens:.1f}x"
    ) in text
    longest = max(len(document_text(s).encode()) for s in pool)
    assert f"the longest is {longest:,} bytes" in text
