"""The records every layer passes: a query's ranking and outcomes, a report row, an invocation,
a lift, a flip against a baseline. Types and their one JSON form, no behaviour; this module
imports nothing of the package (it sits below every layer, see docs/architecture.md).

Two kinds, each for a reason:

- **Frozen dataclasses** for what a run produces and hands on (:class:`Hit`, :class:`QueryResult`,
  :class:`BenchmarkRun`, a gate's :class:`Flip`): built once by the ranking (a flip by the
  scoring), read by scoring, reporting and the pytest items, never changed.
- **TypedDicts** for what is JSON already (a report's ``per_query`` rows, its ``embedder``
  record, its ``lift``): a report read back from disk (schema version 1 or 2) is these rows,
  not objects, and ``execretrieval compare`` reads reports it did not write.

The dataclasses' JSON is the report's: :meth:`QueryResult.to_json` writes exactly a
:class:`ReportRow` (plus, for the run's own round trip, the rank-1 outcomes), and
:meth:`QueryResult.from_json` reads it back.

A snippet's kind is typed here once (:data:`Kind`, :data:`KINDS` and a constant per kind); no
other module spells one as a string (tests/test_records_kinds.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal, NotRequired, TypedDict

__all__ = [
    "ALTERNATIVE",
    "BACKGROUND",
    "CANONICAL",
    "DISTRACTOR",
    "FLIP_DIRECTIONS",
    "KINDS",
    "PASS",
    "REAL_BUG",
    "BenchmarkRun",
    "CodeSimilarity",
    "Flip",
    "FlipRow",
    "GroupLift",
    "Hit",
    "HitRow",
    "Invocation",
    "Kind",
    "Lift",
    "LiftMetric",
    "McNemarLift",
    "Outcomes",
    "OwnDistractorRow",
    "QueryResult",
    "Rank1",
    "Rank1Row",
    "ReportRow",
    "TieGroup",
    "TieSpan",
    "passes_all",
]

# A snippet's kind: what it is to the query it belongs to (its ``query_id``). The first three
# make a committed corpus's pool (corpus.jsonl), a run may add a background, the alternatives
# stay out of it.
Kind = Literal["canonical", "distractor", "real_bug", "background", "alternative"]
# The item's own implementation: it passes every test of the query, the right answer.
CANONICAL: Final[Kind] = "canonical"
# An execution-proven mutant of the canonical: a test of the query kills it.
DISTRACTOR: Final[Kind] = "distractor"
# The pre-fix version of a fix mined from a repository's history (the item's ``real_bug``),
# killed by the fix's tests; its ``operator`` is the fix's pattern (corpus/real_bugs.py).
REAL_BUG: Final[Kind] = "real_bug"
# A code base's function added to every query's pool by ``--execretrieval-background``
# (corpus/background.py); no query's own, never in a committed corpus.
BACKGROUND: Final[Kind] = "background"
# Another correct implementation of an item (its ``alternatives``), listed in
# alternatives.jsonl and never in the pool.
ALTERNATIVE: Final[Kind] = "alternative"
KINDS: Final[tuple[Kind, ...]] = (CANONICAL, DISTRACTOR, REAL_BUG, BACKGROUND, ALTERNATIVE)

# A snippet's outcome per test of a query, in the query's test order: "pass", "fail",
# "timeout" or "error:<kind>" (the runner's verdicts, execution/_grammar.py).
Outcomes = tuple[str, ...]
PASS = "pass"


def passes_all(outcomes: Outcomes) -> bool:
    """Whether a snippet passes every test of the query (items have at least one test)."""
    return all(o == PASS for o in outcomes)


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
    kind: Kind
    operator: str | None  # a distractor's operator class
    query_id: str  # the item the snippet belongs to
    score: float
    passes: bool
    # Pipelines only: the ordering key whose equality makes a tie (absent: the score is the key).
    tie_key: NotRequired[list[float]]


class OwnDistractorRow(TypedDict):
    """One of the query's own distractors with its score for the query."""

    snippet_id: str
    operator: str | None
    score: float
    edit_lines: int
    edit_chars: int
    kill: str | None  # how the tests kill it: "assertion" | "exception" | "timeout"
    kind: NotRequired[Kind]  # REAL_BUG for a pre-fix version; absent for a mutant


class CodeSimilarity(TypedDict, total=False):
    """Cosine similarities canonical -> alternatives and canonical -> own distractors."""

    alternatives: list[float]
    distractors: list[float]


class ReportRow(TypedDict):
    """One ``per_query`` row: the query's ranking, its tie structure and its own distractors.

    Schema version 2 rows carry every key but ``rank1_outcomes``; version 1 rows lack the
    ``NotRequired`` ones. ``rank1_outcomes`` is in a run's own JSON only (not in reports)."""

    query_id: str
    domain: str
    passed: bool  # every snippet of the rank-1 tie group passes
    canonical_rank: int | None
    canonical_score: NotRequired[float]
    rank1_tie: NotRequired[TieGroup]
    tail_tie: NotRequired[TieGroup | None]
    canonical_tie: NotRequired[TieSpan | None]
    top: list[HitRow]  # ranks 1..10
    own_distractors: NotRequired[list[OwnDistractorRow]]
    code_similarity: NotRequired[CodeSimilarity]
    # A mined item's provenance (its [source] table: distribution, version, file, line, ...).
    source: NotRequired[dict]
    # With a background pool only: how many background functions score above the canonical,
    # and (dense embedders) the cosine of the canonical and its nearest background function.
    background_above: NotRequired[int]
    background_nearest: NotRequired[float]
    rank1_outcomes: NotRequired[list[str]]


class Invocation(TypedDict, total=False):
    """The report's ``embedder`` record: everything needed to run the same invocation again.

    An embedder's ``invocation()`` gives the fixed keys first (``embedders.describe``) and may add
    its own (a revision, a weights hash); a pipeline's adds ``first_stage``, and ``reranker``
    and ``rerank_k``, ``index`` or ``quantize`` (``ranking/pipelines.py``). Every key that
    changes the scores is here: it keys the embedding cache."""

    name: str
    model: str
    dim: int | None
    similarity: str
    query_prefix: str
    document_prefix: str
    normalize: bool
    batch_size: int
    package_versions: dict[str, str]
    first_stage: str
    reranker: dict[str, object]
    rerank_k: int
    index: dict[str, object]  # an indexed pipeline's (ranking/index.py)
    quantize: dict[str, object]  # stored codes' (ranking/quantize.py)
    # a runtime backend's (embedders/backends.py): the served model's own record
    backend: str
    runtime: str
    model_file_sha256: str


@dataclass(frozen=True)
class Hit:
    """One listed snippet of a query's ranking."""

    rank: int
    snippet_id: str
    kind: Kind  # from the pool's snippet; read back only from the run's own JSON (the handoff)
    operator: str | None
    query_id: str
    score: float
    passes: bool
    # Pipelines only (see ranking/rerank/pipeline.py): the ordering key whose equality makes a
    # tie, e.g. (1, reranker score, first-stage score) for a reranked hit; None: the score is it.
    tie_key: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if self.tie_key is not None:  # JSON gives a list
            object.__setattr__(self, "tie_key", tuple(self.tie_key))

    def to_json(self) -> HitRow:
        """The ``top`` entry (``tie_key`` only where it is not the score)."""
        row = HitRow(
            rank=self.rank,
            snippet_id=self.snippet_id,
            kind=self.kind,
            operator=self.operator,
            query_id=self.query_id,
            score=self.score,
            passes=self.passes,
        )
        if self.tie_key is not None:
            row["tie_key"] = list(self.tie_key)
        return row

    @classmethod
    def from_json(cls, row: HitRow) -> Hit:
        tie_key = row.get("tie_key")
        return cls(
            row["rank"],
            row["snippet_id"],
            row["kind"],
            row["operator"],
            row["query_id"],
            row["score"],
            row["passes"],
            None if tie_key is None else tuple(tie_key),
        )


def _untied() -> TieGroup:
    return TieGroup(size=1, passing=0)


@dataclass(frozen=True)
class QueryResult:
    """A query's ranking: its top 10 with pass flags, the canonical's place and the tie groups
    (over the whole pool) that the tie-aware metrics read (``scoring.metrics.row_metrics``)."""

    query_id: str
    domain: str
    passed: bool  # every snippet of the rank-1 tie group passes the query's tests
    canonical_rank: int
    canonical_score: float
    top: tuple[Hit, ...]
    rank1_outcomes: Outcomes  # the rank-1 snippet's outcome per test
    # The query's own distractors with their score for this query, and cosine similarities
    # canonical -> alternatives and canonical -> own distractors (dense embedders only).
    own_distractors: tuple[OwnDistractorRow, ...] = ()
    code_similarity: CodeSimilarity = field(default_factory=lambda: CodeSimilarity())
    # The tie group at rank 1 (default: a lone failing snippet), at the last listed rank and the
    # canonical's rank span (None: not known, as in a row written without them).
    rank1_tie: TieGroup = field(default_factory=_untied)
    tail_tie: TieGroup | None = None
    canonical_tie: TieSpan | None = None
    background_above: int | None = None  # None: the pool has no background
    source: dict | None = None  # a mined item's provenance (its [source] table); None: none
    background_nearest: float | None = None  # cosine to the nearest background function

    def to_json(self, rank1_outcomes: bool = True) -> ReportRow:
        """The report's ``per_query`` row (key order as written since schema version 2), with
        ``rank1_outcomes`` at the end unless ``rank1_outcomes=False`` (the report's row)."""
        row = ReportRow(
            query_id=self.query_id,
            domain=self.domain,
            passed=self.passed,
            canonical_rank=self.canonical_rank,
            canonical_score=self.canonical_score,
            rank1_tie=self.rank1_tie,
            tail_tie=self.tail_tie,
            canonical_tie=self.canonical_tie,
            top=[h.to_json() for h in self.top],
            own_distractors=list(self.own_distractors),
            code_similarity=self.code_similarity,
        )
        if self.source is not None:
            row["source"] = self.source
        if self.background_above is not None:
            row["background_above"] = self.background_above
        if self.background_nearest is not None:
            row["background_nearest"] = self.background_nearest
        if rank1_outcomes:
            row["rank1_outcomes"] = list(self.rank1_outcomes)
        return row

    @classmethod
    def from_json(cls, row: ReportRow) -> QueryResult:
        """A row of :meth:`to_json` (a report row reads back with no rank-1 outcomes)."""
        rank = row["canonical_rank"]
        if rank is None:
            raise ValueError(f"{row['query_id']}: a row without the canonical's rank")
        return cls(
            row["query_id"],
            row["domain"],
            row["passed"],
            rank,
            row.get("canonical_score", 0.0),
            tuple(Hit.from_json(h) for h in row["top"]),
            tuple(row.get("rank1_outcomes", ())),
            tuple(row.get("own_distractors", ())),
            row.get("code_similarity", CodeSimilarity()),
            row.get("rank1_tie", _untied()),
            row.get("tail_tie"),
            row.get("canonical_tie"),
            row.get("background_above"),
            row.get("source"),
            row.get("background_nearest"),
        )


@dataclass(frozen=True)
class BenchmarkRun:
    """One embedder's (or pipeline's) rankings of every query, with what produced them."""

    embedder: Invocation
    corpus_sha256: str
    n_snippets: int
    results: dict[str, QueryResult]  # by query id
    encode_s: float
    # The pool's background (corpus/background.py), the report's ``corpus.background``:
    # {"sources": [...], "n_snippets": N}; None without one.
    background: dict | None = None
    tests: str = "all"  # which tests decide: all, or the authors' (corpus/authors.py)

    def to_json(self) -> dict[str, object]:
        return {
            "embedder": self.embedder,
            "corpus_sha256": self.corpus_sha256,
            "n_snippets": self.n_snippets,
            "encode_s": self.encode_s,
            "results": {q: r.to_json() for q, r in self.results.items()},
            "background": self.background,
            "tests": self.tests,
        }

    @classmethod
    def from_json(cls, data: dict) -> BenchmarkRun:
        results = {q: QueryResult.from_json(r) for q, r in data["results"].items()}
        return cls(
            data["embedder"],
            data["corpus_sha256"],
            data["n_snippets"],
            results,
            data["encode_s"],
            data.get("background"),
            data.get("tests", "all"),
        )


class LiftMetric(TypedDict):
    """One metric of a lift: pipeline minus first stage, its paired CI and test."""

    difference: float
    ci95: list[float]
    p: float
    test: str
    before: float
    after: float


class McNemarLift(TypedDict):
    """The exact McNemar test on the pytest items' pass/fail (a tie at rank 1 fails)."""

    only_first_stage: int
    only_pipeline: int
    p: float


class GroupLift(TypedDict):
    """The exec@1 lift over one domain's or operator class's queries."""

    n: int
    before: float
    after: float
    difference: float
    ci95: list[float]
    p: float
    test: str
    mcnemar_passed: McNemarLift


# A pipeline report's ``lift`` (scoring/lift.py computes it); functional form: a key holds "@".
Lift = TypedDict(
    "Lift",
    {
        "first_stage": str,
        "n_queries": int,
        "metrics": dict[str, LiftMetric],
        "exec@1_mcnemar": McNemarLift,
        "by_domain": dict[str, GroupLift],
        "by_operator": dict[str, GroupLift],
    },
)


# The two ways a query can change at rank 1 against a baseline: the regression first.
FLIP_DIRECTIONS = ("pass->fail", "fail->pass")


class Rank1Row(TypedDict):
    """What a report put at rank 1 for a query: the snippet, its kind and operator class, the
    query it belongs to (another query's snippet can rank first) and the rank-1 tie group."""

    snippet_id: str
    # A Kind where this version wrote it; kept a str: it is read from reports and gates this
    # version may not have written (``execretrieval compare``), shown as read, never decided on.
    kind: str
    operator: str | None
    query_id: str
    tie: TieGroup


class FlipRow(TypedDict):
    """One entry of a gate's ``flips``: a query whose rank 1 passes in one of the baseline and
    the candidate and fails in the other, with what each put at rank 1 (either absent where its
    report's row lists no ranking)."""

    query_id: str
    domain: str
    direction: str  # one of FLIP_DIRECTIONS
    candidate: NotRequired[Rank1Row]
    baseline: NotRequired[Rank1Row]


@dataclass(frozen=True)
class Rank1:
    """A report row's rank 1 (:class:`Rank1Row`)."""

    snippet_id: str
    kind: str  # as read from a report: see Rank1Row
    operator: str | None
    query_id: str
    tie: TieGroup = field(default_factory=_untied)

    @classmethod
    def of_row(cls, row: ReportRow) -> Rank1 | None:
        """The rank 1 of a ``per_query`` row; ``None`` for a row that lists no ranking."""
        if not row.get("top"):
            return None
        hit = min(row["top"], key=lambda h: h["rank"])
        tie = row.get("rank1_tie") or _untied()
        return cls(hit["snippet_id"], hit["kind"], hit.get("operator"), hit["query_id"], tie)

    def to_json(self) -> Rank1Row:
        return Rank1Row(
            snippet_id=self.snippet_id,
            kind=self.kind,
            operator=self.operator,
            query_id=self.query_id,
            tie=TieGroup(size=self.tie["size"], passing=self.tie["passing"]),
        )

    @classmethod
    def from_json(cls, row: Rank1Row) -> Rank1:
        return cls(row["snippet_id"], row["kind"], row.get("operator"), row["query_id"], row["tie"])


@dataclass(frozen=True)
class Flip:
    """A query that changed at rank 1 against the baseline (:class:`FlipRow`)."""

    query_id: str
    domain: str
    direction: str  # one of FLIP_DIRECTIONS
    candidate: Rank1 | None
    baseline: Rank1 | None = None

    def __post_init__(self) -> None:
        if self.direction not in FLIP_DIRECTIONS:
            raise ValueError(f"a flip's direction is one of {FLIP_DIRECTIONS}: {self.direction!r}")

    @property
    def regressed(self) -> bool:
        """The baseline passed the query and the candidate fails it."""
        return self.direction == FLIP_DIRECTIONS[0]

    def to_json(self) -> FlipRow:
        row = FlipRow(query_id=self.query_id, domain=self.domain, direction=self.direction)
        if self.candidate is not None:
            row["candidate"] = self.candidate.to_json()
        if self.baseline is not None:
            row["baseline"] = self.baseline.to_json()
        return row

    @classmethod
    def from_json(cls, row: FlipRow) -> Flip:
        cand, base = row.get("candidate"), row.get("baseline")
        return cls(
            row["query_id"],
            row["domain"],
            row["direction"],
            None if cand is None else Rank1.from_json(cand),
            None if base is None else Rank1.from_json(base),
        )
