"""The identifier-free view: every snippet with its entry point and local identifiers renamed to
neutral names, so an embedder can match only what the code does, not what it is called.

:func:`neutral_names` alpha-renames a snippet: the entry point becomes ``f``, every other name
the snippet binds (functions, classes, parameters, variables, loop and comprehension targets,
``except ... as`` names) becomes ``v0``, ``v1``, ... in order of first appearance. Every occurrence
of a renamed identifier is renamed with one injective mapping onto names the snippet does not
use, so scoping, and with it the program, is unchanged (only introspection such as
``f.__name__`` would differ). Left alone: imported names, builtins and other free names,
attribute names, and any identifier that is also used as an attribute (``obj.x``), a keyword
argument of a callee the snippet does not define, a class-body name (methods and class attributes
are reached as attributes) or a pattern-matching capture. Formatting and comments are kept:
identifiers are replaced in place at the positions the AST gives.

Renamed code is only embedded, never executed: the pass/fail of every snippet still comes from
the outcomes recorded for the original code (and the sandbox runs the original), so the view
changes what the embedder sees and nothing else. :class:`NeutralDense` and :class:`NeutralLexical`
wrap an embedder so that its documents are renamed (queries are untouched: the entry point's name
is renamed in the code and in nothing else); their invocation adds ``identifiers: neutral``, which
keys the embedding cache apart from the original view.
"""

from __future__ import annotations

import ast
import io
import itertools
import re
import symtable
import tokenize
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from ..embedders import Work, guard_cost, usage_fields

IDENTIFIER_VIEWS = ("original", "neutral")
ENTRY = "f"


class _Bindings:
    """The walk of :func:`_bound`: ``bound`` collects (line, column, name) of every binding
    outside class bodies, ``keep`` the names that must stay (class members, imported modules,
    attributes, match captures)."""

    def __init__(self) -> None:
        self.bound: list[tuple[int, int, str]] = []
        self.keep: set[str] = set()

    def bind(self, node: ast.stmt | ast.expr, name: str, in_class: bool) -> None:
        """A binding of ``name`` at ``node``: a class member keeps its name."""
        if in_class:
            self.keep.add(name)
        else:
            self.bound.append((node.lineno, node.col_offset, name))

    def visit(self, node: ast.AST, in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                self.bind(child, child.name, in_class)
                self.visit(child, True)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                self.function(child, in_class)
            else:
                self.leaf(child, in_class)
                self.visit(child, in_class)

    def function(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, in_class: bool
    ) -> None:
        """A function binds its name (a lambda none) and its parameters, in a scope that is
        not a class body."""
        if not isinstance(node, ast.Lambda):
            self.bind(node, node.name, in_class)
        args = node.args
        for a in (
            *args.posonlyargs,
            *args.args,
            *args.kwonlyargs,
            *(x for x in (args.vararg, args.kwarg) if x),
        ):
            self.bound.append((a.lineno, a.col_offset, a.arg))
        self.visit(node, False)

    def leaf(self, child: ast.AST, in_class: bool) -> None:
        """What one node other than a class or function binds or keeps."""
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store | ast.Del):
            self.bind(child, child.id, in_class)
        elif isinstance(child, ast.ExceptHandler) and child.name:
            self.bound.append((child.lineno, child.col_offset, child.name))
        elif isinstance(child, ast.alias):
            self.keep.add((child.asname or child.name).split(".")[0])
        elif isinstance(child, ast.Attribute):
            self.keep.add(child.attr)
        elif isinstance(child, ast.MatchAs | ast.MatchStar) and child.name:
            self.keep.add(child.name)
        elif isinstance(child, ast.MatchMapping) and child.rest:
            self.keep.add(child.rest)
        elif isinstance(child, ast.MatchClass):
            self.keep.update(child.kwd_attrs)


def _bound(tree: ast.AST) -> tuple[list[tuple[int, int, str]], set[str]]:
    """(position, name) of every binding outside class bodies, and the names that must stay."""
    walk = _Bindings()
    walk.visit(tree, False)
    return walk.bound, walk.keep


def _unbound_globals(code: str) -> set[str]:
    """Names some scope reads as a global (or builtin) that the module itself never binds:
    renaming them would cut them off from what they refer to (``len``, a setup name)."""
    module = symtable.symtable(code, "<snippet>", "exec")
    bound = {
        s.get_name()
        for s in module.get_symbols()
        if s.is_assigned() or s.is_imported() or s.is_namespace()
    }
    unbound: set[str] = set()
    stack = [module]
    while stack:
        table = stack.pop()
        stack.extend(table.get_children())
        for symbol in table.get_symbols():
            is_global = symbol.is_global() or (table is module and symbol.is_referenced())
            if is_global and symbol.get_name() not in bound:
                unbound.add(symbol.get_name())
    return unbound


def _local_callees(tree: ast.AST) -> set[str]:
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def _keyword_names(tree: ast.AST) -> set[str]:
    """Keyword argument names of calls to functions the code does not define: renaming them
    would break the call."""
    callees = _local_callees(tree)
    keep: set[str] = set()
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        if not (isinstance(call.func, ast.Name) and call.func.id in callees):
            keep.update(k.arg for k in call.keywords if k.arg)
    return keep


def _fresh_names(
    candidates: Sequence[str], used: set[str], entry_point: str | None
) -> dict[str, str]:
    """``entry_point`` -> ``f`` (or ``f0``, ``f1``, ... where taken), every other candidate ->
    ``v0``, ``v1``, ... in order, skipping the names in ``used``."""
    mapping: dict[str, str] = {}
    if entry_point is not None and entry_point in candidates:
        spellings = itertools.chain([ENTRY], (f"{ENTRY}{i}" for i in itertools.count()))
        mapping[entry_point] = next(n for n in spellings if n not in used)
    fresh = (f"v{i}" for i in itertools.count())
    for name in candidates:
        if name not in mapping:
            mapping[name] = next(
                n for n in fresh if n not in used and n != mapping.get(entry_point or "")
            )
    return mapping


def renaming(code: str, entry_point: str | None) -> dict[str, str]:
    """The old -> new name mapping :func:`neutral_names` applies (``{}`` for code that does not
    parse)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return {}
    bound, keep = _bound(tree)
    keep |= _unbound_globals(code) | _keyword_names(tree)
    candidates = [name for *_, name in sorted(bound)]
    candidates = list(dict.fromkeys(n for n in candidates if n not in keep))
    used = {tok.string for tok in _tokens(code) if tok.type == tokenize.NAME} - set(candidates)
    return _fresh_names(candidates, used, entry_point)


def _tokens(code: str) -> list[tokenize.TokenInfo]:
    return list(tokenize.generate_tokens(io.StringIO(code).readline))


def _sites(tree: ast.AST, lines: Sequence[str], mapping: Mapping[str, str]) -> Iterable[tuple]:
    """(line, character column, old name) of every occurrence to rename."""
    callees = _local_callees(tree)

    def col(line: int, byte_col: int) -> int:
        return len(lines[line - 1].encode()[:byte_col].decode())

    def after(line: int, byte_col: int, pattern: str, name: str):
        text = lines[line - 1]
        m = re.compile(pattern + r"(" + re.escape(name) + r")\b").search(text, col(line, byte_col))
        if m is None:
            raise ValueError(f"cannot find {name!r} on line {line}")
        return line, m.start(1), name

    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in mapping:
            yield node.lineno, col(node.lineno, node.col_offset), node.id
        elif isinstance(node, ast.arg) and node.arg in mapping:
            yield node.lineno, col(node.lineno, node.col_offset), node.arg
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name in mapping:
                keyword = "class" if isinstance(node, ast.ClassDef) else "def"
                yield after(node.lineno, node.col_offset, rf"\b{keyword}\s+", node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name and node.name in mapping:
            yield after(node.lineno, node.col_offset, r"\bas\s+", node.name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            for name in node.names:
                if name in mapping:
                    yield after(node.lineno, node.col_offset, r"[\s,]", name)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in callees
        ):
            for k in node.keywords:
                if k.arg in mapping:
                    yield k.lineno, col(k.lineno, k.col_offset), k.arg


def neutral_names(code: str, entry_point: str | None) -> str:
    """``code`` with the entry point renamed to ``f`` and its other bound identifiers to
    ``v0, v1, ...`` (see the module docstring); code that does not parse is returned as is."""
    mapping = renaming(code, entry_point)
    if not mapping:
        return code
    tree = ast.parse(code)
    lines = code.splitlines(keepends=True)
    by_line: dict[int, dict[int, str]] = {}
    for line, column, name in _sites(tree, lines, mapping):
        by_line.setdefault(line, {})[column] = name
    out = list(lines)
    for line, columns in by_line.items():
        text = out[line - 1]
        for column in sorted(columns, reverse=True):
            name = columns[column]
            if text[column : column + len(name)] != name:
                raise ValueError(f"line {line}: expected {name!r} at column {column}")
            text = text[:column] + mapping[name] + text[column + len(name) :]
        out[line - 1] = text
    return "".join(out)


class _Neutral:
    """What both wrappers share: the wrapped embedder and each snippet's entry point."""

    def __init__(self, inner, entry_points: Mapping[str, str | None]):
        self.inner = inner
        self.name = inner.name
        self._entry_points = dict(entry_points)  # snippet id -> its query's entry point

    def invocation(self) -> dict:
        return {**self.inner.invocation(), "identifiers": "neutral"}

    def check_usable(self) -> None:
        self.inner.check_usable()

    def close(self) -> None:
        self.inner.close()

    def guard_cost(self, work: Work, cache: object) -> None:
        """A view of a metered embedder is metered (:class:`..embedders.Metered`)."""
        guard_cost(self.inner, work, cache)

    def usage_fields(self) -> dict:
        return usage_fields(self.inner)

    def rename(self, texts: Sequence[str], ids: Sequence[str]) -> list[str]:
        return [neutral_names(t, self._entry_points.get(i)) for t, i in zip(texts, ids)]


class NeutralDense(_Neutral):
    def encode(self, texts: Sequence[str], role: str, ids: Sequence[str]) -> np.ndarray:
        if role == "document":
            texts = self.rename(texts, ids)
        return self.inner.encode(texts, role, ids)


class NeutralLexical(_Neutral):
    """A lexical scorer sees only texts (no ids): the documents are renamed up front instead,
    by :func:`neutral_view` giving it the renamed pool through ``documents``."""

    def __init__(self, inner, entry_points: Mapping[str, str | None], documents: Mapping[str, str]):
        super().__init__(inner, entry_points)
        self._renamed = dict(documents)  # original text -> renamed text

    def score(self, queries: Sequence[str], documents: Sequence[str]):
        return self.inner.score(queries, [self._renamed.get(d, d) for d in documents])


def neutral_view(embedder, snippets: Iterable, entry_points: Mapping[str, str]):
    """``embedder`` seeing the identifier-free view of ``snippets`` (corpus snippets, with
    ``query_id``; ``entry_points``: query id -> entry point)."""
    from ..embedders import DenseEncoder, contract

    snippets = list(snippets)
    by_snippet = {s.snippet_id: entry_points.get(s.query_id) for s in snippets}
    if contract(embedder) is DenseEncoder:
        return NeutralDense(embedder, by_snippet)
    renamed = {s.code: neutral_names(s.code, by_snippet[s.snippet_id]) for s in snippets}
    return NeutralLexical(embedder, by_snippet, renamed)
