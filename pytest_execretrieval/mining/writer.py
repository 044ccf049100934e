"""What mining writes: one item file per mined function (the item format plus its ``[source]``
table), ``MINED.md`` and ``NOTICE``. Byte-identical for the same SOURCE: everything is sorted,
and nothing of the machine (a path, a time) is written.

Every field that comes from the SOURCE (its metadata, its licence files' copyright lines, its
file and module names, skip reasons that quote it) is untrusted text: each is written on one
line with its control characters as visible escapes (:func:`..sanitize.one_line`: no raw ESC,
BEL or OSC sequence, no line break that would start a markdown line of its own), and a table
cell's ``|`` escaped, so ``MINED.md`` and ``NOTICE`` hold no byte under 0x20 but their own
line breaks."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ..corpus.items import HISTORY, WRONG_VALUE_FIRST, WRONG_VALUE_ONLY
from ..safe_write import write_atomic
from ..sanitize import one_line
from .density import MAX_EDITS, NearestNeighbour, density_shares
from .functions import MinedFunction
from .history import FixPair
from .sources import SourceTree, copyright_lines

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .carve import Carved
    from .context import WrittenContext

NO_TEST = "no test"  # a mined function's skip reason: no test from anywhere
# Characters a TOML multi-line literal string cannot hold (control characters but tab and \n).
_NOT_LITERAL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]|'''")


@dataclass(frozen=True)
class MinedItem:
    """A function that became an item: its file stem, query, tests and their provenance."""

    stem: str
    function: MinedFunction
    query: str
    tests: tuple[str, ...]
    provenance: tuple[str, ...]  # per test: "doctest FILE:LINE", "test FILE:LINE", "recorded"
    fix: FixPair | None = None  # mined from history: the fix whose pre-fix version is the bug
    real_bug: str = ""  # that pre-fix version, shaped as the canonical (imports, helpers)
    version: str | None = None  # the version the fix commit declares (else the tree's)
    # Every FILE:LINE the same code was mined from, where several modules define it (one item)
    locations: tuple[str, ...] = ()
    context: WrittenContext | None = None  # its own context (a fix commit's), else the SOURCE's


def toml_string(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's, DEL and the C1 range escaped as well)."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif code < 0x20 or 0x7F <= code < 0xA0:
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    return "".join(out) + '"'


def toml_code(code: str) -> str:
    """Code as a multi-line literal string where it can be one (readable), else a basic string."""
    if _NOT_LITERAL.search(code) or code.endswith("'"):
        return toml_string(code)
    return f"'''\n{code}'''"


def _array(values: tuple[str, ...]) -> str:
    return "[\n" + "".join(f"  {toml_string(v)},\n" for v in values) + "]"


def _cell(text: str) -> str:
    """Untrusted text as one markdown table cell: on one line, control characters escaped,
    ``|`` escaped."""
    return one_line(text).replace("|", "\\|")


def item_text(
    item: MinedItem, domain: str, tree: SourceTree, package: WrittenContext | None = None
) -> str:
    """The item file of ``item``: the interface's fields, then the ``[source]`` table (the
    SOURCE's metadata on one line, control characters escaped) and, mined in a repository
    context, the ``[context]`` table (the archive ``package``, the module, a method's class)."""
    fn = item.function
    package = item.context or package
    version = tree.version if item.version is None else item.version
    source = {
        "distribution": toml_string(one_line(tree.distribution)),
        "version": toml_string(one_line(version)),
        "file": toml_string(one_line(fn.file)),
        "line": str(fn.line),
        **({"locations": _array(tuple(map(one_line, item.locations)))} if item.locations else {}),
        "sha256": toml_string(fn.sha256),
        "license": toml_string(one_line(tree.license_expression)),
        "url": toml_string(one_line(tree.url)),
        "tests": _array(item.provenance),
        **(_fix_source(item.fix) if item.fix else {}),
        # the build's choice (corpus/build.py): in a context, never a mutant that only crashed
        "distractors": toml_string(WRONG_VALUE_ONLY if package else WRONG_VALUE_FIRST),
    }
    real_bug = [f"real_bug = {toml_code(item.real_bug)}"] if item.real_bug else []
    lines = [
        f"domain = {toml_string(domain)}",
        f"query = {toml_string(item.query)}",
        f"entry_point = {toml_string(fn.name)}",
        f"canonical = {toml_code(fn.code)}",
        *real_bug,
        f"tests = {_array(item.tests)}",
        "",
        "[source]",
        *(f"{key} = {value}" for key, value in source.items()),
    ]
    if package is not None:
        context = {"package": package.package, "sha256": package.sha256, "module": fn.module}
        context |= {"class": fn.owner} if fn.owner else {}
        lines += ["", "[context]", *(f"{k} = {toml_string(v)}" for k, v in context.items())]
    return "\n".join(lines) + "\n"


def _fix_source(fix: FixPair) -> dict[str, str]:
    """A real bug's provenance in the ``[source]`` table."""
    return {
        "origin": toml_string(HISTORY),
        "repository": toml_string(one_line(fix.repository)),
        "commit": toml_string(fix.commit),
        "parent": toml_string(fix.parent),
        "subject": toml_string(one_line(fix.subject)),  # a commit message is untrusted text
        "author_date": toml_string(fix.author_date),
        "files": _array(tuple(sorted({fix.file, *fix.tests}))),
        "fixing_tests": _array(fix.added_tests),
        "pattern": toml_string(fix.pattern),
        "admitted": _array(fix.admitted),
        "statements": str(fix.statements),
    }


def write_items(
    out: Path,
    domain: str,
    items: list[MinedItem],
    tree: SourceTree,
    package: WrittenContext | None = None,
) -> list[Path]:
    """Write ``out/domain/<stem>.toml`` for each item, replacing the domain's earlier item files."""
    folder = Path(out) / domain
    folder.mkdir(parents=True, exist_ok=True)
    keep = {f"{item.stem}.toml" for item in items}
    for old in folder.glob("*.toml"):
        if old.name not in keep:
            old.unlink()
    return [
        write_atomic(
            folder / f"{item.stem}.toml", item_text(item, domain, tree, package), root=Path(out)
        )
        for item in items
    ]


# MINED.md's licence of a SOURCE that declares none: mining refuses it unless --private (or its
# equal, --allow-licence none) says it is the team's own code.
PRIVATE = "none: private code (mined with --private), not redistributed"


def notice_text(tree: SourceTree, package: WrittenContext | None = None) -> str:
    """``NOTICE``: whose code the items hold, and the copyright lines of its licence files
    (every field on one line, control characters escaped); with a context archive that holds
    wheels, each wheel's licence and copyright lines too."""
    name, version = one_line(tree.distribution), one_line(tree.version)
    licence, url = one_line(tree.license_expression), one_line(tree.url)
    if not licence:  # mined only with --private (--allow-licence none): a team's own code
        lines = [
            f"The items in this directory hold private code from {name} {version}".rstrip()
            + (f" ({url})" if url else "")
            + ", which declares no licence: mined with --private for its owners' own "
            "benchmark. It is not redistributed: keep these items out of public repositories.",
            "",
        ]
    else:
        lines = [
            f"The items in this directory hold code from {name} {version}".rstrip()
            + f", licensed {licence}"
            + (f" ({url})." if url else "."),
            "",
        ]
    found = [one_line(line) for line in copyright_lines(tree)]
    lines += found or ["(its licence files carry no copyright line)"]
    if tree.licence_texts:
        lines += [
            "",
            "Licence files: " + ", ".join(one_line(n) for n in sorted(tree.licence_texts)),
        ]
    if package is not None:
        for wheel in package.wheels:
            lines += [
                "",
                f"{package.package} also holds the Python files of {one_line(wheel.name)}, "
                f"licensed {one_line(wheel.licence) or 'as its files say'}:",
                *(one_line(line) for line in wheel.copyright),
            ]
    return "\n".join(lines) + "\n"


def untested_table(carved: Carved, untested: list[MinedFunction]) -> list[str]:
    """Each function's :meth:`.carve.Carved.cause`, counted; a cause that names the type of
    a value lists the three types it names most."""
    causes: dict[str, Counter[str]] = {}
    for fn in untested:
        cause, _, type_name = carved.cause((fn.module, fn.owner, fn.name)).partition(": ")
        causes.setdefault(cause, Counter())[type_name] += 1
    rows = ["| why | functions | types, by functions |", "|---|---:|---|"]
    for cause, named in sorted(causes.items(), key=lambda c: (-c[1].total(), c[0])):
        top = sorted(((n, t) for t, n in named.items() if t), key=lambda c: (-c[0], c[1]))[:3]
        types = ", ".join(f"`{_cell(t)}` {n}" for n, t in top)
        rows.append(f"| {_cell(cause)} | {named.total()} | {types} |")
    return rows if causes else ["(none)"]


def density_markdown(records: list[NearestNeighbour]) -> list[str]:
    """The near-clone density table, and the functions that have a neighbour that near."""
    shares = density_shares(records)
    lines = [
        f"{len(records)} self-contained functions; the share with another one of the same "
        "source within k token edits (Levenshtein over Python tokens):",
        "",
        "| within | functions | share |",
        "|---:|---:|---:|",
    ]
    for k, share in shares.items():
        count = sum(1 for r in records if r.edits is not None and r.edits <= k)
        lines.append(f"| {k} edit{'s' if k > 1 else ''} | {count} | {share:.1%} |")
    near = sorted((r for r in records if r.edits is not None), key=lambda r: (r.edits, r.function))
    if near:
        lines += ["", f"| function | nearest within {MAX_EDITS} edits | edits |", "|---|---|---:|"]
        lines += [
            f"| `{_cell(r.function)}` | `{_cell(str(r.neighbour))}` | {r.edits} |" for r in near
        ]
    return lines


def count_table(header: tuple[str, str], counts: Counter[str]) -> list[str]:
    rows = [f"| {header[0]} | {header[1]} |", "|---|---:|"]
    rows += [
        f"| {_cell(reason)} | {n} |"
        for reason, n in sorted(counts.items(), key=lambda r: (-r[1], r[0]))
    ]
    return rows if counts else ["(none)"]


def mined_markdown(
    tree: SourceTree,
    domain: str,
    items: list[MinedItem],
    decided: list[tuple[MinedFunction, str | None]],
    dropped: Counter[str],
    density: list[NearestNeighbour],
    queries: Counter[str] | None = None,
    carved: Carved | None = None,
    package: WrittenContext | None = None,
) -> str:
    """``MINED.md``: the source, what became an item, what was skipped (by reason, per module;
    ``decided`` pairs each function with its skip reason, None for an item), the doctest
    examples dropped (by reason), with ``--queries`` its lines that became no item (by
    reason), with ``--context`` what carving ran and what stopped it, the tests per item by
    provenance, and the near-clone density table."""
    per_module: dict[str, Counter[str]] = {}
    for fn, reason in decided:
        per_module.setdefault(fn.module, Counter())["skipped" if reason else "mined"] += 1
    skipped = Counter(reason for _, reason in decided if reason)
    mined_tests = Counter(p.split(" ")[0] for item in items for p in item.provenance)
    lines = [
        f"# Mined: {one_line(tree.distribution)} {one_line(tree.version)}".rstrip(),
        "",
        f"- licence: {one_line(tree.license_expression) or PRIVATE}",
        f"- project URL: {one_line(tree.url) or 'unknown'}",
        f"- source sha256: `{tree.sha256}`",
        f"- domain: `{domain}`",
        f"- public functions: {len(decided)}; items written: {len(items)}; "
        f"tests: {sum(len(i.tests) for i in items)} "
        f"({', '.join(f'{k} {v}' for k, v in sorted(mined_tests.items())) or 'none'})",
        "",
        "## Files left out when reading",
        "",
        *count_table(("reason", "files"), tree.skipped),
        "",
        "## Functions skipped, by reason",
        "",
        *count_table(("reason", "functions"), skipped),
        "",
        "## Per module",
        "",
        "| module | mined | skipped |",
        "|---|---:|---:|",
        *(
            f"| `{_cell(m)}` | {c['mined']} | {c['skipped']} |"
            for m, c in sorted(per_module.items())
        ),
        "",
        "## Doctest examples dropped, by reason",
        "",
        *count_table(("reason", "examples"), dropped),
    ]
    if queries is not None:
        lines += ["", "## --queries lines skipped, by reason", ""]
        lines += count_table(("reason", "lines"), queries)
    if package is not None:
        lines += ["", *context_markdown(package)]
    if carved is not None:
        untested = [fn for fn, reason in decided if reason == NO_TEST]
        lines += ["", *carving_markdown(carved, items, untested)]
    if density:
        lines += ["", "## Near-clone density (token edit distance)", "", *density_markdown(density)]
    return "\n".join(lines) + "\n"


def context_markdown(package: WrittenContext) -> list[str]:
    """The context section: the archive, the wheels it holds, each declared dependency."""
    lines = [
        "## Repository context",
        "",
        f"- archive: `{package.package}`, sha256 `{package.sha256}`, "
        f"{len(package.files)} Python files",
        *(
            f"- wheel: `{_cell(w.name)}` ({_cell(w.licence)}), sha256 `{w.sha256}`"
            for w in package.wheels
        ),
        "",
        "| declared dependency | where the sandbox has it |",
        "|---|---|",
        *(f"| `{_cell(name)}` | {_cell(where)} |" for name, where in package.requires),
    ]
    return lines if package.requires else [*lines[:-2], "(no dependency declared)"]


def carving_markdown(
    carved: Carved, items: list[MinedItem], untested: list[MinedFunction]
) -> list[str]:
    """The carving section: the test files run and those whose suite stopped (by outcome),
    the calls recorded, why the ``untested`` functions (skipped for no test) have none, and
    per item its tests by provenance."""
    recorded = sum(len(tests) for tests in carved.tests.values())
    rows = [
        "| item | tests | doctest | test file | carved | recorded |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for item in items:
        kinds = Counter(p.split(" ")[0] for p in item.provenance)
        rows.append(
            f"| `{item.stem}` | {len(item.tests)} | {kinds['doctest']} | {kinds['test']} "
            f"| {kinds['carved']} | {kinds['recorded']} |"
        )
    return [
        "## Carved from the package's test suite",
        "",
        f"- test files run: {carved.files}; functions and methods with a recorded call: "
        f"{len(carved.tests)}; calls stated as tests: {recorded}",
        "",
        "How pytest ended in each test file's suite:",
        "",
        *count_table(("pytest", "files"), carved.status),
        "",
        "Test files the sandbox stopped (no answer), by outcome:",
        "",
        *count_table(("outcome", "files"), carved.stopped),
        "",
        "### Functions with no test, by what carving saw",
        "",
        *untested_table(carved, untested),
        "",
        "### Tests per item, by provenance",
        "",
        *rows,
    ]
