"""Candidate mutants from mutmut's own operators (``execretrieval build --source mutmut``).

The default corpus's operators (:mod:`.operators`) are written in the style of mutmut; this
module takes the candidates from mutmut itself, so the two sources can be compared on the same
items through the same kill, selection and evidence pipeline. Pinned: mutmut
:data:`MUTMUT_VERSION` (the ``mutmut`` extra), whose node mutations are libcst trees.

mutmut's library API, all in memory (its command line writes a ``mutants/`` tree and reads
the project's configuration, neither of which an item has):

- ``mutmut.mutation.mutators.mutation_operators``: the operator table, ``(node type,
  operator function)`` pairs; each function maps a libcst node to its mutated replacements;
- ``mutmut.mutation.file_mutation.MutationVisitor``: the walk that applies the table to
  every node mutmut would mutate (its own exclusions: annotations, decorated functions,
  non-trivial parameter defaults, calls of ``len``/``isinstance``, ...), run through a
  ``libcst.metadata.MetadataWrapper`` as ``mutmut.mutation.file_mutation.create_mutations``
  does, with an empty ``mutmut.mutation.pragma_handling.IgnoredCode`` instead of the
  ignored lines ``create_mutations`` reads from the project's configuration and pragmas (an
  item's code is the subject, not a project: nothing in it can exempt code from mutation);
- ``mutmut.mutation.file_mutation.deep_replace``: one occurrence of the original node
  replaced by its mutation, in the whole module.

mutmut itself only keeps the mutations inside a top-level function or a method
(``Mutation.contained_by_top_level_function``); so does this module. Each kept mutation is
rendered as the whole mutated module (libcst keeps every other character) and becomes a
:class:`~.operators.Mutant` whose class is ``mutmut:<name>``, the operator function's name
without its ``operator_`` prefix (``operator_swap_op`` -> ``mutmut:swap_op``). Its
:class:`~.operators.Edit` is the one character span where the rendered module differs from
the source (common prefix and suffix trimmed), so size, line and diff are measured as for the
default operators. Validity is the default operators' rule
(:func:`~.operators.generate_mutants`): the mutant compiles, defines the entry point, its AST
differs from the canonical's and from every earlier candidate's, and its line diff is one
hunk; at most :data:`~.operators.MAX_CANDIDATES` mutations are tried. Candidates come in
mutmut's order (nodes in pre-order, operators in table order), which depends on the source
alone: same items, same candidates.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator

import libcst as cst
from mutmut.mutation.file_mutation import MutationVisitor, deep_replace
from mutmut.mutation.mutators import mutation_operators
from mutmut.mutation.pragma_handling import IgnoredCode

from .operators import (
    MAX_CANDIDATES,
    Edit,
    Mutant,
    build_mutant,
    defines_name,
    diff_blocks,
    validated_dump,
)

MUTMUT_VERSION = "3.8.1"  # pyproject.toml's `mutmut` extra pins the same
# Bump when this adapter changes the candidates it makes from the same mutmut: it is recorded
# in the corpus's engine, so a committed mutmut corpus reads as stale.
ADAPTER_VERSION = "1"
PREFIX = "mutmut:"


def class_name(operator: Callable) -> str:
    """``mutmut:<operator function's name without "operator_">``."""
    return PREFIX + operator.__name__.removeprefix("operator_")


# Every class this source can report, in mutmut's table order (a function listed for several
# node types counts once).
MUTMUT_CLASSES: tuple[str, ...] = tuple(
    dict.fromkeys(class_name(op) for _, op in mutation_operators)
)


def engine_source() -> dict:
    """What the corpus's engine records for this source (a change makes the corpus stale)."""
    import mutmut

    return {
        "name": "mutmut",
        "mutmut": mutmut.__version__,
        "libcst": _libcst_version(),
        "adapter": ADAPTER_VERSION,
    }


def _libcst_version() -> str:
    from importlib.metadata import version

    return version("libcst")


def mutmut_mutations(source: str) -> Iterator[tuple[str, str]]:
    """``(class, mutated module source)`` for every mutation mutmut makes inside a function or
    method of ``source``, in mutmut's order (unvalidated)."""
    classes: dict[int, str] = {}

    def tagged(operator: Callable) -> Callable[[cst.CSTNode], Iterable[cst.CSTNode]]:
        def run(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
            for mutated in operator(node):
                # The visitor keeps every mutated node alive in its Mutation, so the id stays
                # unique while `classes` is read.
                classes[id(mutated)] = class_name(operator)
                yield mutated

        return run

    wrapper = cst.MetadataWrapper(cst.parse_module(source))
    visitor = MutationVisitor(
        [(t, tagged(op)) for t, op in mutation_operators], IgnoredCode(set(), set(), set())
    )
    wrapper.visit(visitor)
    for mutation in visitor.mutations:
        if mutation.contained_by_top_level_function is None:
            continue  # mutmut mutates functions and methods only
        mutated = deep_replace(wrapper.module, mutation.original_node, mutation.mutated_node)
        yield classes[id(mutation.mutated_node)], mutated.code  # type: ignore[union-attr]


def span_edit(source: str, code: str, operator: str) -> Edit:
    """The single edit that turns ``source`` into ``code``: the span between their common
    prefix and common suffix."""
    limit = min(len(source), len(code))
    start = 0
    while start < limit and source[start] == code[start]:
        start += 1
    tail = 0
    while tail < limit - start and source[-1 - tail] == code[-1 - tail]:
        tail += 1
    end, new_end = len(source) - tail, len(code) - tail
    old, new = source[start:end], code[start:new_end]
    return Edit(start, end, new, f"`{_short(old)}` -> `{_short(new)}`", operator)


def _short(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def generate_mutmut_mutants(source: str, entry_point: str) -> list[Mutant]:
    """Every valid mutmut mutant of ``source`` among its first
    :data:`~.operators.MAX_CANDIDATES` mutations (the module docstring gives the rule)."""
    canonical = ast.parse(source)
    if not defines_name(canonical, entry_point):
        raise ValueError(f"source does not define {entry_point!r} at module level")
    seen = {ast.dump(canonical)}
    mutants = []
    for _, (operator, code) in zip(range(MAX_CANDIDATES), mutmut_mutations(source)):
        dump = validated_dump(code, entry_point)
        if dump is None or dump in seen or diff_blocks(source, code)[0] != 1:
            continue
        seen.add(dump)
        mutants.append(build_mutant(source, [span_edit(source, code, operator)]))
    return mutants
