"""Query-blind controls: how often a pool names its canonical without anyone reading the query.

A family is one query's canonical and its own distractors (mutants and real bugs). Built as a
star (a canonical with single-edit mutants around it), a family gives its canonical away by its
shape, and its mutants by their operators' fingerprint; a stage that sees the candidates
together (a set-aware reranker) is rewarded for that without reading the query. Three controls
measure it, none reads a query, each with the rate a blind guess gets (``chance``):

* ``family_medoid``: the family's medoid (the member with the fewest token edits,
  :func:`..mutation.tokens.trimmed_edits`, to the others, summed) is the canonical; tie-aware, as
  the metrics are: with ``t`` tied medoids one of them the canonical, the family scores ``1/t``.
  Chance: ``1/|family|``.
* ``pair_classifier``: a logistic regression over the token edit between two members (each
  differing run, each side, the token before it, the length difference; names an author chose
  folded to one token; antisymmetric, no intercept) names the canonical of each (canonical,
  distractor) pair, shown in a seeded random order; a margin of exactly 0 scores 0.5.
  Chance: 0.5.
* ``single_classifier``: a logistic regression over one snippet alone (its token unigrams and
  bigrams, names folded to one token) scores each member; the member it scores highest is
  called the canonical, tie-aware as the medoid. Chance: ``1/|family|``.

Both classifiers are scored on held-out domains: each domain is predicted by a model trained on
the others' families only (leave one domain out); a pool of a single domain (a mined package)
is split into :data:`QUERY_FOLDS` seeded folds of families instead (``folds: "queries"``). The
vocabulary of a model is its training families' (the :data:`MAX_FEATURES` most frequent
features), so a held-out family contributes neither labels nor features. Each control reports
its ``rate``, ``chance``, the percentile bootstrap 95% CI of the rate over its units
(:func:`.stats.bootstrap_ci`) and ``above_chance`` (rate - chance). Everything is seeded.

:func:`controls_table` is the entry point for a pool (any snippets with ``snippet_id``,
``query_id``, ``kind`` and ``code``, as :class:`..corpus.store.Snippet`);
:func:`beside_controls` puts a rerank pipeline's exec@1 beside the best control.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

import numpy as np

from ..mutation.tokens import trimmed_edits, trimmed_opcodes, words
from ..records import CANONICAL, DISTRACTOR, REAL_BUG
from .stats import bootstrap_ci

__all__ = [
    "CONTROLS",
    "MAX_FEATURES",
    "QUERY_FOLDS",
    "Control",
    "ControlsError",
    "Family",
    "PoolSnippet",
    "beside_controls",
    "controls_table",
    "families",
    "fit_logistic",
    "held_out_folds",
    "measure",
    "medoid_values",
    "pair_features",
    "pair_values",
    "single_features",
    "single_values",
]

CONTROLS = ("family_medoid", "pair_classifier", "single_classifier")
MAX_FEATURES = 256  # per model: its training families' most frequent features
QUERY_FOLDS = 5  # folds of families when the pool has a single domain
L2 = 1.0  # the logistic regressions' ridge penalty
NEWTON_STEPS = 25
MEMBER_KINDS = (DISTRACTOR, REAL_BUG)
# Names a snippet's author chose say nothing about canonical vs mutant; these words do.
KEPT_WORDS = frozenset(
    "and or not in is if elif else for while return break continue None True False len range "
    "min max abs sum all any sorted reversed enumerate zip lambda del pass yield try except "
    "raise function const let var null undefined true false typeof instanceof new this of "
    "Math length slice push pop".split()
)


class ControlsError(ValueError):
    """The controls cannot be computed from what was given (the message says why)."""


class PoolSnippet(Protocol):
    """What the controls read of a pool's snippet."""

    @property
    def snippet_id(self) -> str: ...

    @property
    def query_id(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def code(self) -> str: ...


@dataclass(frozen=True)
class Family:
    """One query's canonical (``codes[0]``) and its own distractors (``codes[1:]``)."""

    query_id: str
    domain: str
    codes: tuple[str, ...]


@dataclass(frozen=True)
class Control:
    """One control's figures: ``values`` per unit (family or pair), their mean ``rate``, the
    ``chance`` rate, the 95% CI; ``folds``: how the classifiers were held out ("" for the
    medoid)."""

    name: str
    unit: str
    values: tuple[float, ...]
    chance: float
    folds: str = ""

    @property
    def rate(self) -> float:
        return float(np.mean(self.values))

    def ci95(self, seed: int) -> tuple[float, float]:
        low, high = bootstrap_ci(np.array(self.values), seed=seed)
        return float(low), float(high)

    def to_json(self, seed: int) -> dict:
        low, high = self.ci95(seed)
        return {
            "rate": _r(self.rate),
            "chance": _r(self.chance),
            "ci95": [_r(low), _r(high)],
            "above_chance": _r(self.rate - self.chance),
            "n": len(self.values),
            "unit": self.unit,
            **({"folds": self.folds} if self.folds else {}),
        }


def _r(x: float) -> float:
    return round(float(x), 6)


# --- families ------------------------------------------------------------------------------


def families(pool: Iterable[PoolSnippet], query_ids: Iterable[str] | None = None) -> list[Family]:
    """Each query's family in ``pool`` (of the queries ``query_ids``, default all), by query
    id; a family's distractors in snippet-id order. A query without a distractor has no choice
    to make and no family; a query with two canonicals is a :class:`ControlsError`."""
    wanted = None if query_ids is None else set(query_ids)
    canonical: dict[str, PoolSnippet] = {}
    members: dict[str, list[PoolSnippet]] = {}
    for s in pool:
        if wanted is not None and s.query_id not in wanted:
            continue
        if s.kind == CANONICAL:
            if s.query_id in canonical:
                raise ControlsError(f"query {s.query_id} has two canonicals in the pool")
            canonical[s.query_id] = s
        elif s.kind in MEMBER_KINDS:
            members.setdefault(s.query_id, []).append(s)
    return [
        Family(
            q,
            q.partition("/")[0],
            (canonical[q].code, *(s.code for s in sorted(own, key=lambda s: s.snippet_id))),
        )
        for q, own in sorted(members.items())
        if q in canonical
    ]


def _first(scores: Sequence[float]) -> float:
    """Tie-aware: ``1/t`` when member 0 (the canonical) is among the ``t`` best, else 0."""
    best = max(scores)
    top = [j for j, s in enumerate(scores) if s == best]
    return (0 in top) / len(top)


def _chance(found: Sequence[Family]) -> float:
    return float(np.mean([1 / len(f.codes) for f in found]))


# --- the family medoid ---------------------------------------------------------------------


def medoid_values(found: Sequence[Family]) -> list[float]:
    """Per family: 1/t when the canonical is one of its ``t`` medoids, else 0 (the medoid:
    the fewest token edits to the other members, summed over them; the edits of a pair are
    counted once, from the member listed first)."""
    out = []
    for f in found:
        tokens = [words(c) for c in f.codes]
        totals = [0] * len(tokens)
        for i in range(len(tokens)):
            for j in range(i + 1, len(tokens)):
                edits = trimmed_edits(tokens[i], tokens[j])
                totals[i] += edits
                totals[j] += edits
        out.append(_first([-t for t in totals]))
    return out


# --- the classifiers -----------------------------------------------------------------------


def held_out_folds(found: Sequence[Family], seed: int = 0) -> tuple[str, list[list[int]]]:
    """How the classifiers hold families out, and the held-out families' positions per fold:
    one fold per domain (``"domains"``, sorted) when there are two domains or more, else
    :data:`QUERY_FOLDS` seeded folds of families (``"queries"``; fewer with fewer families)."""
    domains = sorted({f.domain for f in found})
    if len(domains) >= 2:
        return "domains", [[i for i, f in enumerate(found) if f.domain == d] for d in domains]
    k = min(QUERY_FOLDS, len(found))
    order = np.random.default_rng(seed).permutation(len(found))
    return "queries", [sorted(int(i) for i in order[fold::k]) for fold in range(k)]


def _category(token: str) -> str:
    """A token as the classifiers see it: a name its author chose becomes ``NAME``, a string
    ``STR``, a number other than 0, 1 and 2 ``NUM``; keywords, operators and punctuation stay."""
    if token[0] in "\"'`":
        return "STR"
    if token[0].isdigit():
        return token if token in ("0", "1", "2") else "NUM"
    if token[0].isalpha() or token[0] in "_$":
        return token if token in KEPT_WORDS else "NAME"
    return token


@lru_cache(maxsize=16384)
def _categorised(code: str) -> tuple[str, ...]:
    return tuple(_category(t) for t in words(code))


def _runs_features(mine: Sequence[str], other: Sequence[str]) -> Counter:
    """The edit of ``mine`` against ``other``, one side: each differing run as ``this|that``,
    each side alone, the token before it, the length difference."""
    found: Counter = Counter()
    for _, i1, i2, j1, j2 in trimmed_opcodes(mine, other):
        a, b = " ".join(mine[i1:i2]), " ".join(other[j1:j2])
        before = mine[i1 - 1] if i1 else "^"
        found[f"run:{a}|{b}"] += 1
        found[f"mine:{a}"] += 1
        found[f"theirs:{b}"] += 1
        found[f"after:{before}|{a}|{b}"] += 1
        found["longer_by"] += (i2 - i1) - (j2 - j1)
    return found


def pair_features(x: str, y: str) -> Counter:
    """The features of ``x`` beside ``y``, antisymmetric: ``pair_features(y, x)`` is their
    negation, so a model without intercept calls one of the two the canonical, whatever the
    order shown."""
    mine, theirs = _categorised(x), _categorised(y)
    out = _runs_features(mine, theirs)
    out.subtract(_runs_features(theirs, mine))
    return Counter({k: v / 2 for k, v in out.items() if v})


def single_features(code: str) -> Counter:
    """One snippet's features: its categorised tokens and their bigrams, counted."""
    seen = _categorised(code)
    return Counter([*seen, *(f"{a} {b}" for a, b in zip(seen, seen[1:]))])


@dataclass(frozen=True)
class _Rows:
    """Feature rows as one sparse table: ``names`` sorted, and per row its columns and values
    (a classifier's vocabulary is chosen per fold from its training rows)."""

    names: tuple[str, ...]
    columns: tuple[np.ndarray, ...]
    values: tuple[np.ndarray, ...]

    @classmethod
    def of(cls, rows: Sequence[Counter], log: bool) -> _Rows:
        names = tuple(sorted({name for row in rows for name in row}))
        index = {name: i for i, name in enumerate(names)}
        columns, values = [], []
        for row in rows:
            keys = sorted(row, key=index.__getitem__)
            columns.append(np.array([index[k] for k in keys], dtype=np.int64))
            raw = np.array([row[k] for k in keys], dtype=float)
            values.append(np.sign(raw) * np.log1p(np.abs(raw)) if log else raw)
        return cls(names, tuple(columns), tuple(values))

    def vocabulary(self, rows: Sequence[int]) -> np.ndarray:
        """The :data:`MAX_FEATURES` columns present in the most of ``rows`` (ties: by name)."""
        used = [self.columns[r] for r in rows]
        present = np.bincount(np.concatenate(used), minlength=len(self.names)) if used else None
        if present is None:
            return np.zeros(0, dtype=np.int64)
        order = np.lexsort((np.arange(len(present)), -present))  # by count desc, then name
        return np.sort(order[: min(MAX_FEATURES, int(np.count_nonzero(present)))])

    def matrix(self, rows: Sequence[int], vocabulary: np.ndarray) -> np.ndarray:
        """``rows`` as a dense matrix over the columns ``vocabulary``."""
        where = np.full(len(self.names), -1, dtype=np.int64)
        where[vocabulary] = np.arange(len(vocabulary))
        out = np.zeros((len(rows), len(vocabulary)))
        for i, r in enumerate(rows):
            kept = where[self.columns[r]]
            out[i, kept[kept >= 0]] = self.values[r][kept >= 0]
        return out


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = L2) -> np.ndarray:
    """Ridge-penalised logistic regression by Newton's method (deterministic, no randomness):
    the weights minimising the mean log loss plus ``l2 / (2n) * |w|^2``."""
    n, d = x.shape
    w = np.zeros(d)
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -30, 30)))
        gradient = x.T @ (p - y) + l2 * w
        hessian = (x * (p * (1 - p))[:, None]).T @ x + l2 * np.eye(d)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if float(np.max(np.abs(step), initial=0.0)) < 1e-8:
            break
    return w


def _folds(found: Sequence[Family], seed: int) -> tuple[str, list[tuple[list[int], list[int]]]]:
    """How the classifiers hold out, and per fold (training positions, held-out positions)."""
    how, held = held_out_folds(found, seed)
    every = set(range(len(found)))
    return how, [(sorted(every - set(h)), h) for h in held]


def _positions(of: Sequence[int], size: Sequence[int]) -> list[int]:
    """The row positions of the families ``of`` in a table of ``size[i]`` rows per family."""
    starts = np.cumsum([0, *size])
    return [r for i in of for r in range(int(starts[i]), int(starts[i + 1]))]


def pair_values(found: Sequence[Family], seed: int = 0) -> tuple[str, list[float]]:
    """Per (canonical, distractor) pair of the held-out families, in family order: 1 when the
    pair classifier names the canonical, 0.5 on a zero margin, else 0; with how it held out.
    Each pair is shown in a seeded random order; the features being antisymmetric, a pair shown
    mutant first has its canonical-first features negated."""
    how, folds = _folds(found, seed)
    size = [len(f.codes) - 1 for f in found]
    table = _Rows.of([pair_features(f.codes[0], m) for f in found for m in f.codes[1:]], False)
    margins = np.zeros(sum(size))
    for train, held in folds:
        vocabulary = table.vocabulary(_positions(train, size))
        x = table.matrix(_positions(train, size), vocabulary)
        # Trained on every pair both ways round, (x, canonical first) and (-x, canonical
        # second), whose log loss is twice that of (x, 1) alone: the same weights, half the work.
        w = fit_logistic(x, np.ones(len(x)), L2 / 2)
        rows = _positions(held, size)
        margins[rows] = table.matrix(rows, vocabulary) @ w
    rng = np.random.default_rng(seed)
    values = []
    for margin in margins:
        canonical_first = bool(rng.integers(2))
        shown = margin if canonical_first else -margin
        says_first = 0.5 if shown == 0 else float(shown > 0)
        values.append(says_first if canonical_first else 1 - says_first)
    return how, values


def single_values(found: Sequence[Family], seed: int = 0) -> tuple[str, list[float]]:
    """Per held-out family, in family order: 1/t when the canonical is one of the ``t`` members
    the single-snippet classifier scores highest, else 0; with how it held out."""
    how, folds = _folds(found, seed)
    size = [len(f.codes) for f in found]
    table = _Rows.of([single_features(c) for f in found for c in f.codes], True)
    labels = np.array([float(j == 0) for f in found for j in range(len(f.codes))])
    scores = np.zeros(len(labels))
    for train, held in folds:
        rows = _positions(train, size)
        vocabulary = table.vocabulary(rows)
        x = table.matrix(rows, vocabulary)
        w = fit_logistic(np.c_[x, np.ones(len(x))], labels[rows])
        rows = _positions(held, size)
        scores[rows] = np.c_[table.matrix(rows, vocabulary), np.ones(len(rows))] @ w
    scores = np.round(scores, 9)  # a tie is a tie, not a rounding error's order
    starts = np.cumsum([0, *size])
    values = [_first(list(scores[starts[i] : starts[i + 1]])) for i in range(len(found))]
    return how, values


# --- the table -----------------------------------------------------------------------------


def measure(found: Sequence[Family], seed: int = 0) -> list[Control]:
    """The three controls over ``found`` (:data:`CONTROLS` order); the classifiers need at
    least two families (:class:`ControlsError` with none)."""
    if not found:
        raise ControlsError("no family (a canonical with a distractor) to compute controls on")
    chance = _chance(found)
    out = [Control("family_medoid", "families", tuple(medoid_values(found)), chance)]
    if len(found) >= 2:
        how, pairs = pair_values(found, seed)
        out.append(Control("pair_classifier", "pairs", tuple(pairs), 0.5, how))
        how, singles = single_values(found, seed)
        out.append(Control("single_classifier", "families", tuple(singles), chance, how))
    return out


def controls_table(
    pool: Iterable[PoolSnippet], query_ids: Iterable[str] | None = None, seed: int = 0
) -> dict:
    """The controls of a pool as JSON (``{"n_families", "controls": {name: figures}, "best"}``),
    over the families of ``query_ids`` (default every query); ``best``: the control with the
    highest rate (the first of equals). ``{"n_families": 0}`` when the pool has no family."""
    found = families(pool, query_ids)
    if not found:
        return {"n_families": 0, "controls": {}, "best": None}
    measured = measure(found, seed)
    best = max(measured, key=lambda c: c.rate)  # max keeps the first of equals
    return {
        "n_families": len(found),
        "controls": {c.name: c.to_json(seed) for c in measured},
        "best": best.name,
    }


def beside_controls(report: dict, table: dict) -> dict | None:
    """A rerank pipeline's exec@1 beside the best control of ``table`` (:func:`controls_table`
    of its pool): ``beats_controls`` when its exec@1 is above the upper end of that control's
    95% CI; ``set_aware``: whether its reranker sees the candidates together (its invocation's
    ``set_aware``; a reranker that does not say so is taken to, as every reranker is handed a
    query's candidates together). ``None`` for a report that is no rerank pipeline, or without
    controls."""
    reranker = report.get("embedder", {}).get("reranker")
    best = table.get("best")
    if reranker is None or best is None:
        return None
    control = table["controls"][best]
    exec1 = report["metrics"]["exec@1"]
    return {
        "reranker": reranker.get("name"),
        "set_aware": bool(reranker.get("set_aware", True)),
        "exec@1": _r(exec1),
        "ci95": [_r(x) for x in report["ci95"]["exec@1"]],
        "best_control": best,
        "best_control_rate": control["rate"],
        "best_control_ci95": control["ci95"],
        "beats_controls": exec1 > control["ci95"][1],
    }
