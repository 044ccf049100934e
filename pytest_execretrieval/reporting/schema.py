"""The rows of a report JSON's ``per_query`` list, as types (no behaviour here).

:func:`.report.report_row` writes a :class:`ReportRow` per query (schema
version 2); readers (:mod:`.metrics`, :mod:`.compare`, :mod:`.analyses`) also accept schema
version 1 rows, which lack the keys marked ``NotRequired``.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

__all__ = ["CodeSimilarity", "HitRow", "OwnDistractorRow", "ReportRow", "TieGroup", "TieSpan"]


class TieGroup(TypedDict):
    """A tie group over the whole pool: its size and how many of its snippets pass."""

    size: int
    passing: int


class TieSpan(TypedDict):
    """The 1-based rank span of the canonical's tie group."""

    first: int
    last: int


class HitRow(TypedDict):
    """One ``top`` entry: a ranked snippet and whether it passes the query's tests."""

    rank: int
    snippet_id: str
    kind: str  # "canonical" | "distractor"
    operator: str | None  # a distractor's operator class
    query_id: str  # the item the snippet belongs to
    score: float
    passes: bool
    # Pipelines only: the ordering key whose equality makes a tie (absent: the score is the key).
    tie_key: NotRequired[list]


class OwnDistractorRow(TypedDict):
    """One of the query's own distractors with its score for the query."""

    snippet_id: str
    operator: str | None
    score: float
    edit_lines: int
    edit_chars: int
    kill: str | None  # how the tests kill it: "assertion" | "exception" | "timeout"


class CodeSimilarity(TypedDict, total=False):
    """Cosine similarities canonical -> alternatives and canonical -> own distractors."""

    alternatives: list[float]
    distractors: list[float]


class ReportRow(TypedDict):
    """One ``per_query`` row: the query's ranking, its tie structure and its own distractors."""

    query_id: str
    domain: str
    passed: bool  # every snippet of the rank-1 tie group passes
    canonical_rank: int | None
    top: list[HitRow]  # ranks 1..10
    canonical_score: NotRequired[float]
    rank1_tie: NotRequired[TieGroup]
    tail_tie: NotRequired[TieGroup | None]
    canonical_tie: NotRequired[TieSpan | None]
    own_distractors: NotRequired[list[OwnDistractorRow]]
    code_similarity: NotRequired[CodeSimilarity]
