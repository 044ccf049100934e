"""The paired cross-language analysis (:mod:`..scoring.cross_language`) as text: the lines a
session and ``execretrieval cross-language`` print, and the report directory's
``cross-language.md`` and ``cross-language.json`` (a section per embedder and pair of languages)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..safe_write import check_target, write_atomic
from ..sanitize import escape
from ..scoring.cross_language import CrossLanguage

__all__ = ["FILE_STEM", "cross_language_lines", "cross_language_markdown", "write_cross_language"]

FILE_STEM = "cross-language"  # cross-language.json and cross-language.md in the report dir


def _na(x: float | None, spec: str = ".3f") -> str:
    return "n/a" if x is None else format(x, spec)


def _exec1(c: CrossLanguage, lang: str) -> str:
    e = c.exec1[lang]
    return f"{lang} {e['mean']:.3f} [{e['ci95'][0]:.3f}, {e['ci95'][1]:.3f}]"


def cross_language_lines(c: CrossLanguage) -> list[str]:
    """One embedder's analysis in a few lines, in ``execretrieval compare``'s words."""
    a, b = c.languages
    p = c.paired
    test = "exact McNemar" if p["test"] == "mcnemar" else "paired sign-flip"
    lines = [
        f"cross-language [{c.embedder}]: exec@1 on {c.n_twins} twin queries: {_exec1(c, a)}, "
        f"{_exec1(c, b)}",
        f"  {b} - {a}: {p['difference']:+.3f} [{p['ci95'][0]:+.3f}, {p['ci95'][1]:+.3f}], "
        f"{test} p = {p['p_value']:.4g} (only {a} right: {p['only_a']}, only {b} right: "
        f"{p['only_b']})",
    ]
    over = c.deception["overall"]
    lines.append(
        "  deceived pairs: "
        + ", ".join(f"{lang} {_na(over[lang]['pair_rate'])}" for lang in c.languages)
    )
    return lines


def cross_language_markdown(results: Sequence[CrossLanguage]) -> str:
    """``cross-language.md``: per embedder, exec@1 per language on the twins, the paired test
    and the deception per operator class per language."""
    lines = [
        "# ExecRetrieval cross-language analysis",
        "",
        "The same queries in two languages (twins: the same item id in both pools), each ranked "
        "against its own language's pool. exec@1: tie-aware expected values with 95% bootstrap "
        "CIs; the paired test is the exact McNemar test on the twins' rank-1 correctness, or the "
        "sign-flip test where a rank-1 tie makes a value fractional. Deceived pairs: an own "
        "distractor scoring >= the canonical (pair rate, over the twins; queries in brackets).",
    ]
    for c in results:
        a, b = c.languages
        p = c.paired
        lines += [
            "",
            f"## {c.embedder}: {a} vs {b}",
            "",
            f"{c.n_twins} twin queries"
            + "".join(
                f"; {n} {lang} queries without a twin" for lang, n in c.untwinned.items() if n
            )
            + ".",
            "",
            f"| | {a} | {b} | {b} - {a} | test | p | only {a} | only {b} |",
            "|---|---|---|---|---|---|---|---|",
            f"| exec@1 | {_exec1(c, a).split(' ', 1)[1]} | {_exec1(c, b).split(' ', 1)[1]} | "
            f"{p['difference']:+.3f} [{p['ci95'][0]:+.3f}, {p['ci95'][1]:+.3f}] | {p['test']} | "
            f"{p['p_value']:.4g} | {p['only_a']} | {p['only_b']} |",
            "",
            f"| operator class | {a} | {b} |",
            "|---|---|---|",
        ]
        rows = [("overall", c.deception["overall"]), *c.deception["by_operator"].items()]
        for name, by_lang in rows:
            cells = [
                "n/a"
                if by_lang.get(lang) is None
                else f"{_na(by_lang[lang]['pair_rate'])} ({by_lang[lang]['n_queries']})"
                for lang in c.languages
            ]
            lines.append(f"| {name} | {' | '.join(cells)} |")
    return "\n".join(lines) + "\n"


def write_cross_language(report_dir: Path, results: Mapping[str, CrossLanguage]) -> list[Path]:
    """Write ``cross-language.json`` (``{"cross_language_version": 2, "pairs": {"python vs
    go": {name: analysis}}}``: no report's ``schema_version``, so no report reader takes it
    for one)
    and ``cross-language.md`` into ``report_dir``; returns the paths (none without results)."""
    if not results:
        return []
    paths = [Path(report_dir) / f"{FILE_STEM}{ext}" for ext in (".json", ".md")]
    for path in paths:
        check_target(path)
    pairs: dict[str, dict[str, dict]] = {}
    for c in results.values():
        pairs.setdefault(" vs ".join(c.languages), {})[c.embedder] = c.to_json()
    data = {"cross_language_version": 2, "pairs": pairs}
    write_atomic(paths[0], json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    write_atomic(paths[1], escape(cross_language_markdown(list(results.values()))))
    return paths
