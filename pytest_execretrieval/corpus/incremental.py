"""Incremental builds: which committed records of an item ``execretrieval build`` may reuse.

An item's records are a deterministic function of its file's content and of the engine
(:func:`.build.engine`: runner, mutation version and fingerprint, mutant timeout, distractors per
item, stack depth, evidence version): its canonical, alternatives and chosen distractors with their
outcomes and equivalence evidence (its rows of ``corpus.jsonl`` and ``alternatives.jsonl``), and
its row of ``yields.jsonl`` (:class:`ItemRecord`: candidates, killed mutants per class, the killed
candidates the selection may choose, the chosen positions, the surviving mutants with their
evidence). :func:`plan` lets the build reuse them when

- the manifest's engine record equals the current engine (otherwise every item is rebuilt);
- the item file's sha256 equals the manifest's ``items`` entry, and for a JavaScript item
  with a Python twin the twin's signature its evidence was drawn for (the ``inputs`` entry,
  :func:`.twins.input_keys`) is the twin's now;
- the digest of the item's records (:func:`digest`) equals the manifest's ``records`` entry, so
  a hand-edited, duplicated or truncated row of that item shows;
- the rows agree with the item (:func:`mismatch`): each snippet id hashes its code, the owner is
  the item, the canonical and the alternatives are the item's own code and pass every one of its
  tests, each row's diff, failing tests and kill kind follow from its code and outcomes, and the
  distractors are the operators of the record's chosen positions.

Otherwise the item is rebuilt, with a :class:`Rebuild` reason saying why.

The one cross-item step of a build is the distractor selection: it balances operator classes over
the corpus in item-id order (:mod:`.mutation.select`), so a change of one item's choice can move a
later item's. The build therefore runs the selection over every item again, taking a reused item's
candidates from :attr:`ItemRecord.choosable`. That list keeps, per operator class and kill kind,
the first ``MAX_DISTRACTORS`` killed candidates by position, timeouts never: inside such a group
every key of the selection but the position is equal at every step, so the group's members are
taken in position order, and no more than ``MAX_DISTRACTORS`` in all. Where duplicate behaviours
count as one (:mod:`.behaviours`), the list keeps per group the first candidate of each of its
first ``MAX_DISTRACTORS`` behaviours, with each duplicate's behaviour: a later candidate of a
behaviour is never taken before the group's first of it, and each earlier behaviour of the group
passed over is one chosen already. The selection therefore
chooses from that list exactly what it would choose from all the item's killed mutants. An item
whose choice moves is rebuilt ("reselected"). Everything else that spans items (the identical-code
check, the sorted files, the manifest's counts) is recomputed over all items.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..execution.sandbox import SuiteResult
from ..mutation.operators import Mutant
from ..mutation.select import MAX_DISTRACTORS, Killed, kill_kind
from ..records import ALTERNATIVE, CANONICAL, DISTRACTOR, REAL_BUG
from .items import BenchmarkItem
from .real_bugs import pattern
from .store import (
    ALTERNATIVES,
    CORPUS,
    DISTRACTOR_KINDS,
    MANIFEST,
    YIELDS,
    Corpus,
    Snippet,
    jsonl,
    sha256,
    unified_diff,
)
from .twins import input_key

SURVIVOR_FIELDS = {"operator", "line", "diff", "equivalence"}  # build.Survivor minus item_id
REBUILD_KINDS = ("full", "no-records", "engine", "new", "changed", "records", "reselected")


@dataclass(frozen=True)
class Rebuild:
    """Why an item is rebuilt instead of reused. ``kind`` is one of :data:`REBUILD_KINDS`;
    ``item_id`` is None for the reasons that concern every item (``full``, ``no-records``,
    ``engine``). ``message`` is for people; code decides on ``kind`` and ``item_id``."""

    kind: str
    message: str
    item_id: str | None = None

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class Choosable:
    """A killed candidate the selection may choose: its position in the item's candidate order."""

    position: int
    operator: str
    kill: str  # "assertion" | "exception"
    behaviour: int | None = None  # the first candidate behaving the same (.behaviours), if not it

    def to_json(self) -> list:
        """Its row of ``choosable``: a fourth field only for a duplicate behaviour."""
        own = [self.behaviour] if self.behaviour is not None else []
        return [self.position, self.operator, self.kill, *own]

    @classmethod
    def from_json(cls, row: list) -> Choosable:
        """Raises ValueError (or TypeError) on a row of the wrong shape."""
        if len(row) not in (3, 4):
            raise ValueError(f"a choosable row of {len(row)} fields")
        behaviour = int(row[3]) if len(row) == 4 else None
        return cls(int(row[0]), str(row[1]), str(row[2]), behaviour)


@dataclass(frozen=True)
class ItemRecord:
    """One row of ``yields.jsonl``: what an item's build yielded besides its snippets."""

    item_id: str
    candidates: int
    killed: dict[str, int]  # per operator class (timeouts included), as in ItemYield
    choosable: tuple[Choosable, ...]  # see the module docstring; in position order
    selected: tuple[int, ...]  # positions of the chosen distractors, in choice order
    survivors: tuple[dict, ...]  # per surviving mutant: operator, line, diff, equivalence

    def to_json(self) -> dict:
        return {
            "item_id": self.item_id,
            "candidates": self.candidates,
            "killed": self.killed,
            "choosable": [c.to_json() for c in self.choosable],
            "selected": list(self.selected),
            "survivors": list(self.survivors),
        }

    @classmethod
    def from_json(cls, row: dict) -> ItemRecord:
        """Raises ValueError (or TypeError, KeyError) on a row of the wrong shape."""
        if set(row) != {"item_id", "candidates", "killed", "choosable", "selected", "survivors"}:
            raise ValueError(f"unexpected fields {sorted(row)}")
        choosable = tuple(Choosable.from_json(list(c)) for c in row["choosable"])
        killed = {str(op): int(n) for op, n in dict(row["killed"]).items()}
        survivors = tuple(dict(s) for s in row["survivors"])
        if any(set(s) != SURVIVOR_FIELDS for s in survivors):
            raise ValueError(f"a survivor without exactly the fields {sorted(SURVIVOR_FIELDS)}")
        return cls(
            str(row["item_id"]),
            int(row["candidates"]),
            killed,
            choosable,
            tuple(int(p) for p in row["selected"]),
            survivors,
        )


@dataclass(frozen=True)
class Reusable:
    """An unchanged item's committed records, checked against the item."""

    record: ItemRecord
    canonical: Snippet
    alternatives: tuple[Snippet, ...]
    distractors: tuple[Snippet, ...]


@dataclass(frozen=True)
class Plan:
    reusable: dict[str, Reusable]  # by item id
    reasons: tuple[Rebuild, ...]  # why the other items are rebuilt (one reason per item, or one
    # for all)


def choosable(
    killed: Iterable[Killed], same: Mapping[int, int] | None = None
) -> tuple[Choosable, ...]:
    """The killed candidates an item's record keeps for the selection (module docstring);
    ``same``: the behaviours of duplicates (:func:`.behaviours.same_behaviour`), recorded."""
    same = same or {}
    taken: dict[tuple[str, str], set[int]] = {}
    out = []
    for k in sorted(killed, key=lambda k: k.position):
        behaviours = taken.setdefault((k.mutant.operator, k.kill), set())
        behaviour = same.get(k.position, k.position)
        if (
            k.kill != "timeout"
            and behaviour not in behaviours
            and len(behaviours) < MAX_DISTRACTORS
        ):
            behaviours.add(behaviour)
            out.append(Choosable(k.position, k.mutant.operator, k.kill, same.get(k.position)))
    return tuple(out)


def recorded_same(record: ItemRecord) -> dict[int, int]:
    """The behaviours of the record's duplicate candidates, as the selection takes them."""
    return {c.position: c.behaviour for c in record.choosable if c.behaviour is not None}


_RECORDED = SuiteResult((), False, "recorded in yields.jsonl", "")


def recorded_killed(record: ItemRecord) -> list[Killed]:
    """The record's choosable candidates in the form the selection takes (it reads the
    position, the operator and the kill kind only)."""
    return [
        Killed(c.position, Mutant(c.operator, 0, "", "", 0, 0), _RECORDED, c.kill)
        for c in record.choosable
    ]


def yields_jsonl(records: Iterable[ItemRecord]) -> bytes:
    rows = sorted(records, key=lambda r: r.item_id)
    return "".join(json.dumps(r.to_json(), ensure_ascii=False) + "\n" for r in rows).encode()


def digest(pool: Sequence[Snippet], alternatives: Sequence[Snippet], record: ItemRecord) -> str:
    """The digest of one item's records: its pool rows, its alternatives' rows, its yields row,
    each as written."""
    return sha256(jsonl(pool) + b"\0" + jsonl(alternatives) + b"\0" + yields_jsonl([record]))


def digests(corpus: Corpus, records: Iterable[ItemRecord]) -> dict[str, str]:
    """The manifest's ``records`` entry: per item id, in id order, :func:`digest`."""
    pool, alternatives = _by_query(corpus.snippets), _by_query(corpus.alternatives)
    return {
        r.item_id: digest(pool.get(r.item_id, []), alternatives.get(r.item_id, []), r)
        for r in sorted(records, key=lambda r: r.item_id)
    }


def _by_query(snippets: Iterable[Snippet]) -> dict[str, list[Snippet]]:
    out: dict[str, list[Snippet]] = {}
    for s in snippets:
        out.setdefault(s.query_id, []).append(s)
    return out


def _read_rows(path: Path) -> list[dict]:
    """The JSON objects of a JSONL file; a line that is not one is left out (the digest of the
    item it belonged to then differs, so that item is rebuilt)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    rows = []
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def _snippets(path: Path) -> dict[str, list[Snippet]]:
    out: dict[str, list[Snippet]] = {}
    for row in _read_rows(path):
        try:
            snippet = Snippet.from_json(row)
        except TypeError:
            continue
        out.setdefault(str(snippet.query_id), []).append(snippet)
    return out


def read_records(where: Path) -> dict[str, ItemRecord]:
    """The rows of ``where/yields.jsonl`` by item id; rows of the wrong shape are left out."""
    out = {}
    for row in _read_rows(Path(where) / YIELDS):
        try:
            record = ItemRecord.from_json(row)
        except (ValueError, TypeError, KeyError):
            continue
        out[record.item_id] = record
    return out


def plan(items: Sequence[BenchmarkItem], where: Path, engine: dict) -> Plan:
    """Which items' committed records in ``where`` (a corpus directory) a build with ``engine``
    reuses, and why each other item is rebuilt. Reads hashes and records only, runs nothing."""
    where = Path(where)
    try:
        meta = json.loads((where / MANIFEST).read_text())
        if not isinstance(meta, dict):
            raise ValueError("not a JSON object")
    except FileNotFoundError:
        return Plan(
            {}, (Rebuild("no-records", f"{where / MANIFEST} does not exist: every item is built"),)
        )
    except (OSError, ValueError) as exc:
        return Plan(
            {},
            (
                Rebuild(
                    "no-records", f"{where / MANIFEST} is unreadable ({exc}): every item is rebuilt"
                ),
            ),
        )
    if meta.get("engine") != engine:
        message = (
            f"the corpus was generated by engine {meta.get('engine')}, the current engine "
            f"is {engine}: every item is rebuilt"
        )
        return Plan({}, (Rebuild("engine", message),))
    recorded, hashes = meta.get("records"), meta.get("items")
    if not isinstance(recorded, dict) or not isinstance(hashes, dict):
        message = (
            f"{where / MANIFEST} records no per-item build records (written before "
            "incremental builds): every item is rebuilt"
        )
        return Plan({}, (Rebuild("no-records", message),))
    pool, alternatives = _snippets(where / CORPUS), _snippets(where / ALTERNATIVES)
    records = read_records(where)
    inputs = meta.get("inputs")
    built_for: dict = inputs if isinstance(inputs, dict) else {}
    reusable, reasons = {}, []
    for item in sorted(items, key=lambda item: item.id):
        iid = item.id
        if iid not in hashes:
            reasons.append(Rebuild("new", f"item {iid} is new", iid))
            continue
        if sha256(item.path.read_bytes()) != hashes[iid]:
            reasons.append(Rebuild("changed", f"item {iid} changed ({item.path})", iid))
            continue
        if input_key(item.path) != built_for.get(iid):
            message = f"the signature of item {iid}'s Python twin changed"
            reasons.append(Rebuild("changed", message, iid))
            continue
        own, alts, record = pool.get(iid, []), alternatives.get(iid, []), records.get(iid)
        try:
            problem = (
                "it has no row in yields.jsonl"
                if record is None
                else "its rows differ from the manifest's digest (edited, duplicated or truncated)"
                if digest(own, alts, record) != recorded.get(iid)
                else mismatch(item, own, alts, record)
            )
        except (TypeError, ValueError, AttributeError) as exc:  # a field of the wrong type
            problem = f"a malformed row ({exc})"
        if problem or record is None:  # no record: a problem
            message = f"the committed records of item {iid} are not reusable: {problem}"
            reasons.append(Rebuild("records", message, iid))
            continue
        canonical = next(s for s in own if s.kind == CANONICAL)
        distractors = tuple(s for s in own if s.kind in DISTRACTOR_KINDS)
        reusable[iid] = Reusable(record, canonical, tuple(alts), distractors)
    return Plan(reusable, tuple(reasons))


def mismatch(
    item: BenchmarkItem,
    pool: Sequence[Snippet],
    alternatives: Sequence[Snippet],
    record: ItemRecord,
) -> str | None:
    """What in an item's committed records disagrees with the item (None: nothing found)."""
    if record.item_id != item.id:
        return f"its yields row names {record.item_id}"
    canonicals = [s for s in pool if s.kind == CANONICAL]
    distractors = [s for s in pool if s.kind == DISTRACTOR]
    real_bugs = [s for s in pool if s.kind == REAL_BUG]
    if len(canonicals) != 1 or canonicals[0].code != item.canonical:
        return "corpus.jsonl does not hold its canonical exactly once"
    if len(canonicals) + len(distractors) + len(real_bugs) != len(pool):
        return "corpus.jsonl holds a row of another kind"
    if any(s.code != item.real_bug for s in real_bugs) or len(real_bugs) > 1:
        return "corpus.jsonl holds a real_bug that is not the item's"
    if sorted(s.code for s in alternatives) != sorted(item.alternatives):
        return "alternatives.jsonl does not hold its alternatives"
    if any(s.kind != ALTERNATIVE for s in alternatives):
        return "alternatives.jsonl holds a row of another kind"
    for s in (*pool, *alternatives):
        problem = _row_problem(item, s)
        if problem:
            return f"snippet {s.snippet_id[:12]}: {problem}"
    by_position = {c.position: c for c in record.choosable}
    if len(set(record.selected)) != len(record.selected) or not set(record.selected) <= set(
        by_position
    ):
        return "its yields row selects positions it does not list as choosable"
    if any(c.position >= record.candidates for c in record.choosable):
        return "its yields row lists a position beyond its candidates"
    chosen = Counter((by_position[p].operator, by_position[p].kill) for p in record.selected)
    if chosen != Counter((s.operator, s.kill) for s in distractors):
        return "its distractors are not the operators its yields row selects"
    return None


def _row_problem(item: BenchmarkItem, s: Snippet) -> str | None:
    if s.snippet_id != sha256(s.code):
        return "snippet_id does not hash its code"
    if s.query_id != item.id:
        return f"owned by {s.query_id}"
    if len(s.outcomes) != len(item.tests):
        return f"{len(s.outcomes)} outcomes for {len(item.tests)} tests"
    if s.failing_tests != tuple(i for i, o in enumerate(s.outcomes) if o != "pass"):
        return "failing_tests do not follow from its outcomes"
    if s.diff != unified_diff(item.canonical, s.code):
        return "its diff is not the diff of its code against the canonical"
    passed = not s.failing_tests
    if s.kind == REAL_BUG and s.operator != pattern(item):
        return "a real_bug's operator must be its item's source.pattern"
    if s.kind in DISTRACTOR_KINDS:
        kill = kill_kind(SuiteResult(s.outcomes, passed, "", ""))
        # Only a real bug's hang is a kill (beside a quick fix: .real_bugs.judged).
        timed_out = kill == "timeout" and s.kind != REAL_BUG
        if not s.operator or kill is None or timed_out or s.kill != kill:
            return f"a {s.kind} must be killed, not by a timeout unless a real bug, and say how"
    elif not passed or s.operator is not None or s.kill is not None:
        return f"a {s.kind} must pass every test and name no operator or kill"
    return None
