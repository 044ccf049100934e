"""``exec-consensus``: rerank by agreement of behaviour (minimum-Bayes-risk by execution).

As in MBR-exec (Shi et al., 2022) and CodeT (Chen et al., 2022): run each candidate that can be
called as the query's function on a set of inputs, and score it by how many (other candidate,
input) pairs produce the same output; no expected value is ever read. The score is

    agreement(c) = #{(d, x) : d != c callable, x input, out(c, x) == out(d, x)}
                   / (#inputs * (#callable - 1))

in [0, 1]; the pipeline breaks equal scores by the first stage's order
(:mod:`.pipeline`). A candidate that does not define the entry point (another query's snippet)
cannot be called: it scores -1, after every callable one (it fails every test of the query, and
knowing the function's name needs no label). When a query has no inputs from the chosen source,
or fewer than two callable candidates, every candidate scores 0 (the first-stage order) and the
query is counted as a fallback with its reason.

**Input sources** (``exec-consensus:SOURCE``):

* ``tests`` (the default): the argument expressions of every call of the entry point in the
  query's tests (``f(ARGS)``, and ``raises(E, f, ARGS)``), parsed from the test AST; the rest of
  each test (the expected values, the comparison, the exception type) is never read. Calls whose
  arguments use a name bound around them in the test (a comprehension or lambda variable) are
  skipped; a lambda passed as an argument is kept.
  A real user has this when they hold example *inputs* for the function they search for (a
  call site, a fixture) but not its outputs.
* ``hypothesis``: :data:`HYPOTHESIS_INPUTS` argument tuples drawn (derandomized) by
  :func:`..mutation.equivalence.draw_inputs` from the parameter annotations of the first
  candidate, in first-stage order, whose annotations are all supported
  (:func:`..mutation.equivalence.annotations`); draws whose ``repr`` does not read back as an
  equal literal are dropped; nothing of the tests is used. A real user has
  this when they know the typed signature of the function they search for. Items whose
  candidates carry no supported annotations fall back.

**Outputs** come back through the public sandbox API only: each input is a probe test
(``f(ARGS)``, :attr:`..execution.sandbox.SuiteResult.values`), called in the snippet's process;
its value reaches this process through the sandbox's typed codec as plain data (an iterator or an
object of the snippet's own class arrives as unsupported, which reads as raising
``UnsupportedValue``, so such candidates all look alike). Its output is a :data:`BITS`-bit
fingerprint: sha256 of a canonical text (``value:`` + a repr with sets and dict items sorted,
floats to 9 significant digits, memory addresses removed; or ``raises:`` + the exception's type
name), computed here. An input that gives no value (the module failed to load, the suite timed
out, the candidate exited, an exception that is not an ``Exception``) gives no output, which
agrees with nothing. Suites run through :class:`..execution.SuiteRunner`, so results are cached
like every suite's.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import re
from collections.abc import Sequence

from ...corpus.items import BenchmarkItem
from .base import Reranked, RerankerContext, RerankerError, RerankQuery

SOURCES = ("tests", "hypothesis")
BITS = 32  # of a fingerprint
HYPOTHESIS_INPUTS = 25
# The scores are what they were with version 1's in-sandbox harness (the same fingerprints of
# the same decoded values): the version stays.
HARNESS_VERSION = 1


def canonical_text(value: object, depth: int = 0) -> str:
    """The canonical text of a decoded value (module docstring): order-free for sets and
    dicts, floats to 9 significant digits."""
    if depth > 40:
        return "..."
    if isinstance(value, float):
        return "float:" + format(value, ".9g")
    if isinstance(value, set | frozenset):
        return (
            type(value).__name__
            + "{"
            + ",".join(sorted(canonical_text(x, depth + 1) for x in value))
            + "}"
        )
    if isinstance(value, dict):
        return (
            type(value).__name__
            + "{"
            + ",".join(
                sorted(
                    canonical_text(k, depth + 1) + ":" + canonical_text(v, depth + 1)
                    for k, v in value.items()
                )
            )
            + "}"
        )
    if isinstance(value, list | tuple):
        inner = ",".join(canonical_text(x, depth + 1) for x in value)
        return type(value).__name__ + "[" + inner + "]"
    return re.sub(" at 0x[0-9a-fA-F]+", "", repr(value))


def _bound_names(tree: ast.AST) -> set[str]:
    """Names a test binds itself (comprehension and lambda variables, walrus targets)."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.comprehension):
            bound |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Lambda):
            bound |= {
                a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)
            }
        elif isinstance(node, ast.NamedExpr):
            bound.add(node.target.id)
    return bound


def arguments_from_tests(entry_point: str, tests: Sequence[str]) -> list[str]:
    """The argument lists (source text, without parentheses) of the entry point's calls in
    ``tests``, deduplicated in order of appearance; expected values are never looked at."""

    def is_entry(node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id == entry_point

    found: dict[str, None] = {}
    for test in tests:
        try:
            tree = ast.parse(test)
        except SyntaxError:
            continue
        bound = _bound_names(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            if is_entry(node.func):
                args, keywords = node.args, node.keywords
            elif (
                isinstance(node.func, ast.Name)
                and node.func.id == "raises"
                and len(node.args) >= 2
                and is_entry(node.args[1])
            ):
                args, keywords = node.args[2:], node.keywords
            else:
                continue
            # A name the argument binds itself (a lambda's parameter) is fine; one bound
            # around the call (a comprehension variable) has no value outside the test.
            free = {
                n.id
                for a in (*args, *keywords)
                for n in ast.walk(a)
                if isinstance(n, ast.Name) and n.id not in _bound_names(a)
            }
            if free & bound:
                continue
            found[", ".join([*map(ast.unparse, args), *map(ast.unparse, keywords)])] = None
    return list(found)


def _literal(value: object) -> bool:
    """Whether ``repr(value)`` reads back as an equal value (the suite is source text)."""
    try:
        return ast.literal_eval(repr(value)) == value
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


@functools.lru_cache(maxsize=256)
def _drawn(types: tuple[str, ...], n: int) -> tuple[str, ...]:
    from ...mutation.equivalence import draw_inputs

    return tuple(
        ", ".join(map(repr, args)) for args in draw_inputs(types, n) if all(map(_literal, args))
    )


def hypothesis_arguments(entry_point: str, codes: Sequence[str]) -> list[str]:
    """Argument lists drawn for the first of ``codes`` whose ``entry_point`` has supported
    annotations; empty when none has."""
    # Renamed: ``annotations`` is the ``from __future__`` feature's name in this module.
    from ...mutation.equivalence import annotations as parameter_types

    for code in codes:
        try:
            types = parameter_types(code, entry_point)
        except SyntaxError:
            continue
        if types is not None:
            return list(_drawn(tuple(types), HYPOTHESIS_INPUTS))
    return []


def fingerprints(values: Sequence[object], n_inputs: int) -> list[int | None]:
    """Per input, the fingerprint of what its probe gave (:attr:`SuiteResult.values`), or
    ``None`` when it gave nothing usable."""
    out: list[int | None] = []
    for i in range(n_inputs):
        value = values[i] if i < len(values) else None
        if not isinstance(value, tuple) or value[0] not in ("value", "raises", "unsupported"):
            out.append(None)
            continue
        text = {
            "value": lambda v: "value:" + canonical_text(v),
            "raises": lambda v: "raises:" + v,
            "unsupported": lambda v: "raises:UnsupportedValue",
        }[value[0]](value[1])
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
        out.append(int.from_bytes(digest[: BITS // 8], "big"))
    return out


def agreement(outputs: Sequence[Sequence[int | None]]) -> list[float]:
    """The consensus score of each candidate from its per-input outputs (module docstring)."""
    m = len(outputs)
    n = len(outputs[0]) if outputs else 0
    if m < 2 or n == 0:
        return [0.0] * m
    scores = []
    for c, mine in enumerate(outputs):
        agree = sum(
            1
            for d, theirs in enumerate(outputs)
            if d != c
            for x, y in zip(mine, theirs)
            if x is not None and x == y
        )
        scores.append(agree / (n * (m - 1)))
    return scores


class ExecConsensus:
    """The ``exec-consensus:SOURCE`` reranker (module docstring)."""

    def __init__(self, source: str, context: RerankerContext):
        if source not in SOURCES:
            raise RerankerError(
                f"exec-consensus: unknown input source {source!r}; choose "
                f"{' or '.join(SOURCES)} (exec-consensus:tests)"
            )
        if context.runner is None:
            raise RerankerError("exec-consensus runs candidates: it needs a SuiteRunner")
        if source == "hypothesis":
            try:
                import hypothesis  # noqa: F401
            except ImportError:
                raise RerankerError(
                    "exec-consensus:hypothesis needs the hypothesis package: pip install hypothesis"
                ) from None
        self.source = source
        self.name = f"exec-consensus:{source}"
        self.runner = context.runner

    def invocation(self) -> dict:
        extra = {"inputs_per_query": HYPOTHESIS_INPUTS} if self.source == "hypothesis" else {}
        return {
            "name": self.name,
            "source": self.source,
            "bits": BITS,
            "harness_version": HARNESS_VERSION,
            "set_aware": True,  # a vote among the candidates
            **extra,
        }

    def inputs(self, item: BenchmarkItem, codes: Sequence[str]) -> list[str]:
        if self.source == "tests":
            return arguments_from_tests(item.entry_point, item.tests)
        return hypothesis_arguments(item.entry_point, codes)

    def rerank(self, first_stage: str, queries: Sequence[RerankQuery]) -> list[Reranked]:
        plans = []
        suites: list[tuple[str, str, Sequence[str], str]] = []
        for q in queries:
            ep = q.item.entry_point
            callable_ = [i for i, c in enumerate(q.candidates) if q.item.lang.defines(c.code, ep)]
            args = self.inputs(q.item, [q.candidates[i].code for i in callable_])
            plans.append((callable_, args, len(suites)))
            if args and len(callable_) >= 2:
                tests = [f"{ep}({a})" for a in args]
                suites += [
                    (q.candidates[i].code, q.item.setup, tests, q.item.language) for i in callable_
                ]
        results = self.runner.run_many(suites)
        answers = []
        for q, (callable_, args, start) in zip(queries, plans):
            n = len(q.candidates)
            detail = {"inputs": len(args), "callable": len(callable_)}
            if not args or len(callable_) < 2:
                reason = (
                    "no inputs"
                    + (
                        " (no call of the entry point in the tests)"
                        if self.source == "tests"
                        else " (no candidate has supported annotations)"
                    )
                    if not args
                    else "fewer than two callable candidates"
                )
                answers.append(Reranked((0.0,) * n, reason, detail))
                continue
            outputs = [
                fingerprints(results[start + j].values, len(args)) for j in range(len(callable_))
            ]
            agree = agreement(outputs)
            scores = [-1.0] * n
            for j, i in enumerate(callable_):
                scores[i] = agree[j]
            best = max(range(len(callable_)), key=lambda j: (agree[j], -j))
            detail |= {
                "behaviours": len({tuple(o) for o in outputs}),
                "top_group": sum(tuple(o) == tuple(outputs[best]) for o in outputs),
                "no_output": sum(x is None for o in outputs for x in o),
            }
            answers.append(Reranked(tuple(scores), None, detail))
        return answers

    def close(self) -> None:
        pass
