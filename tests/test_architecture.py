"""The package's shape: every import follows the allowed-edges table of docs/architecture.md
("Layers: the allowed imports"), every module imports on its own, and no two modules import
each other (directly or around a loop), counting imports inside functions too, so a lazy
import can neither cross a layer nor hide a cycle. Only ``if TYPE_CHECKING:`` imports are left
out (they never run)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import pytest_execretrieval

PACKAGE = Path(pytest_execretrieval.__file__).parent
NAME = PACKAGE.name
ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def module_files() -> dict[str, Path]:
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if "bundled_items" in parts:
            continue
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def imported_modules(module: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that ``module`` imports anywhere outside ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text())
    typing_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for node in ast.walk(block)
    }
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            found |= {target} & known
            found |= {f"{target}.{a.name}" for a in node.names} & known
    return found - {module}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def layer_table(text: str) -> tuple[dict[str, str], dict[str, set[str]]]:
    """The table under "Layers: the allowed imports": module prefix -> layer (``__init__`` is
    the package itself) and layer -> the layers it may import."""
    section = text.split("## Layers: the allowed imports", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]  # past the head
    owner: dict[str, str] = {}
    allowed: dict[str, set[str]] = {}
    for row in rows:
        layer, modules, may = (cell.strip() for cell in row.strip("|").split("|"))
        for module in re.findall(r"`([^`]+)`", modules):
            owner[NAME if module == "__init__" else f"{NAME}.{module}"] = layer
        allowed[layer] = {x.strip() for x in may.split(",")} if not may.startswith("(") else set()
    unknown = set().union(*allowed.values()) - set(allowed)
    assert not unknown, f"the table names layers it does not define: {sorted(unknown)}"
    return owner, allowed


def layer_of(module: str, owner: dict[str, str]) -> str | None:
    """The layer of the longest table entry that is ``module`` or a package above it."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in owner:
            return owner[prefix]
    return None


def layer_violations(
    graph: dict[str, set[str]], owner: dict[str, str], allowed: dict[str, set[str]]
) -> list[str]:
    """Every module no layer holds, and every import that leaves its layer for one its row
    does not name, as ``a (layer) -> b (layer)``."""
    found = [f"{m}: in no layer of the table" for m in sorted(graph) if layer_of(m, owner) is None]
    for module in sorted(graph):
        here = layer_of(module, owner)
        for target in sorted(graph[module]):
            there = layer_of(target, owner)
            if here and there and there != here and there not in allowed[here]:
                found.append(f"{module} ({here}) -> {target} ({there})")
    return found


def test_imports_follow_the_allowed_edges_table():
    modules = module_files()
    graph = {m: imported_modules(m, p, set(modules)) for m, p in modules.items()}
    owner, allowed = layer_table(ARCHITECTURE.read_text())
    assert {"base", "scoring", "reporting", "execution"} <= set(allowed)  # the table was read
    assert layer_violations(graph, owner, allowed) == []


def test_the_rules_the_issue_names_are_in_the_table():
    """Reporting executes nothing (no execution import), scoring reads no report schema of
    reporting's, and the records sit at the bottom."""
    owner, allowed = layer_table(ARCHITECTURE.read_text())
    assert "execution" not in allowed["reporting"] and "reporting" not in allowed["scoring"]
    assert owner[f"{NAME}.records"] == "base" and allowed["base"] == set()
    assert "ranking" not in allowed["scoring"] and "ranking" not in allowed["embedders"]


def test_the_layer_check_finds_wrong_way_and_unplaced_imports():
    text = (
        "## Layers: the allowed imports\n\n| layer | modules | may import |\n|---|---|---|\n"
        "| base | `records` | (nothing of the package) |\n| low | `low` | base |\n"
        "| high | `high`, `glue` | low, base |\n| card | `high.card` | base |\n\n## Next\n"
    )
    owner, allowed = layer_table(text)
    p = NAME
    graph = {
        f"{p}.high.x": {f"{p}.low.y", f"{p}.high.card"},  # down, and to a layer not allowed
        f"{p}.low.y": {f"{p}.high.x"},  # the wrong way (a lazy import counts the same)
        f"{p}.high.card": {f"{p}.records"},  # the longest prefix decides: card, not high
        f"{p}.records": set(),
        f"{p}.stray": {f"{p}.records"},
    }
    assert layer_violations(graph, owner, allowed) == [
        f"{p}.stray: in no layer of the table",
        f"{p}.high.x (high) -> {p}.high.card (card)",
        f"{p}.low.y (low) -> {p}.high.x (high)",
    ]


def test_no_import_cycles():
    modules = module_files()
    graph = {m: imported_modules(m, p, set(modules)) for m, p in modules.items()}
    assert len(graph) > 30 and graph[f"{NAME}.plugin"]  # the walk found the package
    assert import_cycles(graph) == []


def test_every_subpackage_ships_in_the_wheel():
    """pyproject.toml lists the packages explicitly (the bundled items are mapped in): every
    package of the source tree these tests belong to is listed, and where they run against an
    installed copy (tox installs the wheel), that copy holds every one of them."""
    import tomllib

    root = Path(__file__).resolve().parents[1]  # the checkout, wherever the package imports from
    listed = set(
        tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )

    def packages(top: Path) -> set[str]:
        return {".".join(p.parent.relative_to(top.parent).parts) for p in top.rglob("__init__.py")}

    source = packages(root / NAME)
    assert len(source) > 5 and source <= listed
    if PACKAGE != root / NAME:
        assert source <= packages(PACKAGE), f"the installed {PACKAGE} lacks subpackages"


def test_the_cycle_finder_finds_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"} - {"e"}}
    assert import_cycles(graph) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_lazy_and_typing_only_imports_are_told_apart(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import X\n"
        "def f():\n    from .c import Y\n    from . import d\n"
    )
    known = {"p.m", "p.b", "p.c", "p.d"}
    assert imported_modules("p.m", path, known) == {"p.c", "p.d"}


@pytest.mark.parametrize("chunk", range(2))
def test_every_module_imports_in_a_fresh_interpreter(chunk):
    """Each module first in its own interpreter, so no module works only thanks to import order."""
    modules = sorted(module_files())[chunk::2]

    def load(module: str) -> tuple[str, int, str]:
        done = subprocess.run(
            [sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=300
        )
        return module, done.returncode, done.stderr[-2000:]

    with ThreadPoolExecutor(2) as pool:
        failed = [r for r in pool.map(load, modules) if r[1] != 0]
    assert failed == []
