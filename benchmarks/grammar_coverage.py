"""How the bundled tests use the test grammar: a count per form (and per wrapper/subscript).

Every test of every item must parse in the grammar (``tests/test_bundled_items.py`` checks it);
this prints the coverage table, e.g. for a closing note.

Usage: python benchmarks/grammar_coverage.py [ITEMS_DIR]   (default: the bundled items/)
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

from pytest_execretrieval.corpus.items import load_items
from pytest_execretrieval.execution import _grammar

ROOT = Path(__file__).resolve().parents[1]


def form(test: _grammar.Test) -> str:
    """A test's form as a short pattern, e.g. ``assert len(CALL) == LIT``."""
    hole = "CALL"
    for kind, step in test.steps:
        hole = f"{hole}[...]" if kind == "index" else f"{step}({hole})"
    if test.form == _grammar.RAISES:
        return f"assert {'not ' if test.op else ''}raises(EXC, f, ...)"
    if test.form == _grammar.ISCLOSE:
        return f"assert math.isclose({hole}, LIT, ...)"
    if test.form == _grammar.TRUTH:
        return f"assert {'not ' if test.op else ''}{hole}"
    if test.op in ("is", "is not"):
        return f"assert {hole} {test.op} {test.expected.value!r}"  # type: ignore[union-attr]
    return f"assert {hole} {test.op} LIT"


def main() -> int:
    items_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "items"
    items, problems = load_items(items_dir)
    for problem in problems:
        print(problem, file=sys.stderr)
    counts: collections.Counter[str] = collections.Counter()
    lambdas = 0
    for item in items:
        for source in item.tests:
            test = _grammar.parse_test(source)
            counts[form(test)] += 1
            lambdas += "lambda" in test.call.source
    total = sum(counts.values())
    print("| form | tests |\n|---|---|")
    for name, n in counts.most_common():
        print(f"| `{name}` | {n} |")
    print(f"| total ({len(items)} items; {lambdas} tests pass a lambda argument) | {total} |")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
